#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# --gpumem-policy=advised on a GPU node (issue 34, "Proof on the lent GPU"),
# through a real sbatch, slurmdbd and MariaDB: for each program, a warm-up
# job (not counted), then three rounds of job 1 of its name with the site's
# defaults, job 2 of the same name with --gpumem-policy=advised and job 1'
# with the defaults again, then one more advised lookup.  Job 2 is measured
# against the mean of its two neighbours (runs k and l: the second job of a
# pair ran 0.89-0.98x of the first under the very same policy, so an order
# effect failed the 0.97x bar), and best job 1' / best job 1, the same
# policy twice, is printed beside it as the noise floor.  Each job is profiled (gpumem-sample, NVML GPM), gpumem-acct puts
# its record in the job's AdminComment, and the advised lookup of the next
# job reads it.  Programs nobody here wrote (or thin drivers of libraries):
#   uvm        NVIDIA's UM oversubscription benchmark, page-fault mode
#              (carried: GPUMEM_GPU_CARRIED/uvm-oversub, built with
#              tests/gpu/cuda13_um.h): managed memory that faults
#   cupyfault  CuPy summing managed memory the CPU fills before each sum
#   loop       CuPy reading managed memory many times on the GPU, the CPU
#              reading it back between rounds: it looks like faulting, and
#              zero-copy, the policy that advice names, makes it slower
#   tempting   CuPy: managed memory built once on the CPU, read many times
#              on the GPU (zero-copy would hurt; it must not be advised)
#   hbm        a PyTorch copy loop (profile_gpu.sh's): HBM-bound
#   compute    a PyTorch bf16 matmul (profile_gpu.sh's): compute-bound
#   idle       CuPy holding its GPU while the CPU works: idle
#   pinned     PyTorch copying pinned host memory to the GPU: link-bound
#   reuse      a name whose job 1 faults (cupyfault) and whose advised job 2
#              runs other work each round (true, idle, matmul)
# Each job's own figure (GB/s, TFLOP/s, steps/s: higher is better) and
# the ratio job 2 / mean(job 1, job 1') are printed; "best job 1" is the
# mean of best job 1 and best job 1' (best of 3 on each side of job 2, as
# job 2's is best of 3).  Asserted, from the advice line's
# format alone ("gpumem: advised: POLICY, from job N on NODE (RULE: ...)",
# any other "gpumem: advised: ..." line meaning the site's defaults):
#   - where a rule that promises the job a gain was followed (faulting:
#     GPUMEM_ADVISED_GAIN_RULES; every other rule promises no speed-up),
#     best of job 2 >= 2x best of job 1;
#   - everywhere else best of job 2 >= 0.97x;
#   - a policy whose job 2 held its program's own figure (>= 0.97x its
#     neighbours) is advised again in the next round: never dropped;
#   - GPUMEM_ADVISED_LOSER (loop), whose faulting advice loses: after its
#     loss the loop puts it on probation or drops it (said, not failed,
#     where its work time shows no loss beyond the noise);
#   - reuse: no verdict on its job 2 says a gain.
# Skips, saying why, without a GPU, without accounting (.debs-acct) or
# when the plugin does not know --gpumem-policy=advised.  Programs that
# would not end within GPUMEM_ADVISED_BUDGET_S (default 520; each program
# runs 11 jobs, 75-100 s) are skipped; GPUMEM_ADVISED_PROGRAMS picks and
# orders them (all nine need two calls of under 10 minutes each).
# Usage: tests/gpu/advised_gpu.sh BUILD_DIR   (tests/gpu/run, part advised)
B=$(cd "${1:?usage: advised_gpu.sh BUILD_DIR}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
export top_srcdir top_builddir=$B
. "$top_srcdir/tests/lib.sh"
SO="$B/plugin/spank/.libs/gpumem.so"
[ -e /dev/nvidiactl ] || skip_all "no GPU here: run tests/gpu/run on a GPU machine"
[ -f "$SO" ] || skip_all "gpumem.so not built"
[ -x "$B/plugin/sample/gpumem-sample" ] || skip_all "gpumem-sample not built"
[ -x "$B/plugin/acct/gpumem-acct" ] || skip_all "gpumem-acct not built"
grep -qa 'gpumem: advised: ' "$SO" ||
	skip_all "this gpumem.so does not know --gpumem-policy=advised yet (no 'gpumem: advised:' line in it)"
for p in slurmdbd mariadbd mariadb-install-db; do
	command -v "$p" >/dev/null || skip_all "advised needs Slurm's accounting: no $p (carry .debs-acct, tests/slurm/DEBS.acct; tests/gpu/run unpacks it)"
done
start=$(date +%s)
BUDGET=${GPUMEM_ADVISED_BUDGET_S:-520}
GAIN_RULES=${GPUMEM_ADVISED_GAIN_RULES:-faulting}
LOSER=${GPUMEM_ADVISED_LOSER:-loop}
CARRIED=${GPUMEM_GPU_CARRIED:-$top_srcdir/.debs-acct}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CL="$top_srcdir/tests/slurm/cluster"
t=$(mktemp -d /tmp/gpumem-adv.XXXXXX); chmod 755 "$t"
export GPUMEM_CLUSTER_DIR=$t/cluster
trap '"$CL" stop >/dev/null 2>&1; rm -rf "$t"' EXIT
PY=$(command -v python3)
export PYTHONUNBUFFERED=1

# --- the programs ------------------------------------------------------------------------
cat >"$t/managed.py" <<'PY'
# CuPy managed memory (cudaMallocManaged) and a NumPy view of it for the CPU.
import ctypes, numpy as np, cupy as cp
def managed(gib):
    nb = int(gib * 2**30); n = nb // 4
    mem = cp.cuda.malloc_managed(nb)
    a = cp.ndarray((n,), cp.float32, memptr=mem)
    h = np.ctypeslib.as_array(ctypes.cast(mem.ptr, ctypes.POINTER(ctypes.c_float)), shape=(n,))
    cp.ones(1024, cp.float32).sum(dtype=cp.float64); cp.cuda.Device().synchronize()
    return nb, n, a, h
PY
cat >"$t/cupyfault.py" <<'PY'
import sys, time, cupy as cp
from managed import managed
nb, n, a, h = managed(float(sys.argv[1])); passes = int(sys.argv[2]); gpu = 0.0
for i in range(passes):
    h[:] = i + 1                                   # filled on the CPU
    t0 = time.perf_counter(); s = float(a.sum(dtype=cp.float64)); gpu += time.perf_counter() - t0
    assert abs(s - n * (i + 1)) <= 1e-6 * n * (i + 1), s
print("cupyfault: GB/s %.2f" % (passes * nb / gpu / 1e9))
PY
cat >"$t/loop.py" <<'PY'
import sys, time, numpy as np, cupy as cp
from managed import managed
nb, n, a, h = managed(float(sys.argv[1])); outer, inner = int(sys.argv[2]), int(sys.argv[3]); gpu = 0.0
h[:] = 1
for o in range(outer):
    t0 = time.perf_counter()
    for _ in range(inner): s = a.sum(dtype=cp.float64)
    cp.cuda.Device().synchronize(); gpu += time.perf_counter() - t0
    assert float(s) == n and float(h.sum(dtype=np.float64)) == n   # the CPU checks: its pages back
print("loop: GB/s %.2f" % (outer * inner * nb / gpu / 1e9))
PY
cat >"$t/tempting.py" <<'PY'
import sys, time, cupy as cp
from managed import managed
nb, n, a, h = managed(float(sys.argv[1])); passes = int(sys.argv[2])
h[:] = 1                                           # built once on the CPU
t0 = time.perf_counter()
for _ in range(passes): s = a.sum(dtype=cp.float64)
cp.cuda.Device().synchronize(); gpu = time.perf_counter() - t0
assert float(s) == n
print("tempting: GB/s %.2f" % (passes * nb / gpu / 1e9))
PY
cat >"$t/idle.py" <<'PY'
import sys, time, numpy as np, cupy as cp
x = cp.zeros(1 << 20, cp.float32); rng = np.random.default_rng(1); steps = int(sys.argv[1])
x += 1; cp.cuda.Device().synchronize(); t0 = time.perf_counter()
for i in range(steps):
    v = np.sort(rng.random(200_000))               # the CPU's work (a data loader, say)
    if i % 20 == 0:
        x += 1; cp.cuda.Device().synchronize()     # now and then a little on the GPU
print("idle: steps/s %.2f" % (steps / (time.perf_counter() - t0)))
PY
cat >"$t/copyloop.py" <<'PY'
import sys, time, torch
n = 1 << 29; a = torch.ones(n, device="cuda"); b = torch.empty_like(a); k = int(sys.argv[1])
b.copy_(a); torch.cuda.synchronize(); t0 = time.time()
for _ in range(k): b.copy_(a)
torch.cuda.synchronize()
print("copyloop: GB/s %.1f" % (k * 2 * 4 * n / (time.time() - t0) / 1e9))
PY
cat >"$t/pinned.py" <<'PY'
import sys, time, torch
n = 1 << 28; h = torch.ones(n, pin_memory=True); d = torch.empty(n, device="cuda"); k = int(sys.argv[1])
d.copy_(h); torch.cuda.synchronize(); t0 = time.time()
for _ in range(k): d.copy_(h, non_blocking=True)
torch.cuda.synchronize()
print("pinned: GB/s %.1f" % (k * 4 * n / (time.time() - t0) / 1e9))
PY
cat >"$t/matmul.py" <<'PY'
import sys, time, torch
n = 8192; a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a); k = int(sys.argv[1])
c = a @ b; torch.cuda.synchronize(); t0 = time.time()
for _ in range(k): c = a @ b
torch.cuda.synchronize()
print("matmul: TFLOP/s %.1f" % (k * 2 * n ** 3 / (time.time() - t0) / 1e12))
PY
chmod 644 "$t"/*.py

# NAME: the command, how its figure is read (sed -n), seconds for its 11
# jobs (runs k and l: about 7 s per job for 1-5 s programs, 10-12 s for hbm
# and compute; their sizes here are about 2/3 of those runs').
progs=${GPUMEM_ADVISED_PROGRAMS:-uvm loop tempting hbm compute idle cupyfault pinned reuse}
declare -A cmd fig est
cmd[uvm]="$t/uvm_oversubs -m page_fault -a streaming -p 0.1 -lc 3"
fig[uvm]='s/.*, \([0-9.][0-9.]*\) GB\/s$/\1/p'; est[uvm]=90
cmd[cupyfault]="$PY $t/cupyfault.py 2 4"; est[cupyfault]=75
cmd[loop]="$PY $t/loop.py 1 10 30"; est[loop]=95
cmd[tempting]="$PY $t/tempting.py 2 2000"; est[tempting]=80
cmd[hbm]="$PY $t/copyloop.py 1000"; est[hbm]=85
cmd[compute]="$PY $t/matmul.py 2200"; est[compute]=95
cmd[idle]="$PY $t/idle.py 750"; est[idle]=85
cmd[pinned]="$PY $t/pinned.py 300"; est[pinned]=85
# reuse: a name whose job 1 faults (cupyfault) and whose advised job 2 runs
# other work each round (true, idle, matmul): never judged a gain.
cmd[reuse]="${cmd[cupyfault]}"; est[reuse]=75
declare -A other=([1]=true [2]="$PY $t/idle.py 300" [3]="$PY $t/matmul.py 1000")
for p in cupyfault loop tempting hbm compute idle pinned reuse; do fig[$p]='s/.* \([0-9.][0-9.]*\)$/\1/p'; done
unit() { case $1 in compute) echo TFLOP/s ;; idle) echo steps/s ;; uvm) echo GiB/s ;; *) echo GB/s ;; esac; }

uvmsrc="$CARRIED/uvm-oversub/uvm_oversubs.cu"
if [ -f "$uvmsrc" ]; then
	"$NVCC" -O3 -std=c++17 -arch=sm_90 -include "$top_srcdir/tests/gpu/cuda13_um.h" -o "$t/uvm_oversubs" "$uvmsrc" \
		>"$t/nvcc.log" 2>&1 || { cat "$t/nvcc.log"; fail "nvcc: NVIDIA's UM oversubscription benchmark did not build"; }
	diag "uvm: $uvmsrc ($(cat "$CARRIED/uvm-oversub/COMMIT" 2>/dev/null | cut -c1-12)), NVIDIA's code unchanged, tests/gpu/cuda13_um.h for CUDA 13"
fi

# --- the site, the cluster with accounting ----------------------------------------------------
gpu_profile_site
# slurmd runs the Epilog with an environment of its own: the prefix's
# sacct and sacctmgr (tests/gpu/run) named here.
{
	echo '#!/bin/sh'
	printf 'export PATH=%s LD_LIBRARY_PATH=%s\n' "'$PATH'" "'${LD_LIBRARY_PATH:-}'"
	echo "exec $B/plugin/acct/gpumem-acct epilog --site $t/site.yaml 2>>$t/acct.log"
} >"$t/epilog"
chmod 755 "$t/epilog"
chmod 644 "$t"/*.yaml "$t"/*.conf
if ! "$CL" start --gpus 1 --accounting --epilog "$t/epilog" --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1; then
	cat "$t/start.log"
	why=$(grep -m1 'MariaDB cannot start here' "$t/start.log")
	[ -n "$why" ] && skip_all "${why#cluster: error: --accounting: }"
	fail "the local Slurm with accounting did not start"
	done_testing
fi
diag "$(grep '^cluster: ' "$t/start.log")"
eval "$("$CL" env)"
echo "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

# --- one job ----------------------------------------------------------------------------------
# job PROG MODE [CMD]: a batch job named adv-PROG (MODE defaults or advised)
# running PROG's command (or CMD), waited for with its record in
# AdminComment.  Sets jid, line (its "gpumem: advised: ..." line), f (its
# figure), el (sacct's ElapsedRaw).
n=0
job() {
	local prog=$1 mode=$2 c=${3:-${cmd[$1]}} o sb i
	local -a opt=()
	[ "$mode" = advised ] && opt=(--gpumem-policy=advised)
	n=$((n + 1)); o=$t/job$n
	sb=$(sbatch --parsable -N1 -J "adv-$prog" --gres=gpu:1 -o "$o.out" "${opt[@]}" \
		--wrap "cd $t && exec timeout 90 $c" 2>"$o.err")
	jid=${sb%%;*}
	line=$(grep -o 'gpumem: advised: .*' "$o.err" | head -1)
	f="" el=""
	case $jid in '' | *[!0-9]*) fail "$prog: sbatch: $(cat "$o.err")"; jid=""; return 1 ;; esac
	# squeue -j lists a finished job too (MinJobAge): wait for its state.
	for i in $(seq 1 1200); do
		case $(squeue -h -j "$jid" -o %T 2>/dev/null) in PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED) sleep 0.1 ;; *) break ;; esac
	done
	wait_idle gpumem1
	for i in $(seq 1 100); do
		[ -n "$(sacct -X -n -P -j "$jid" -o AdminComment 2>/dev/null)" ] && break
		sleep 0.2
	done
	[ -n "$(sacct -X -n -P -j "$jid" -o AdminComment 2>/dev/null)" ] || diag "job $jid: no record in AdminComment: $(tail -2 "$t/acct.log" 2>/dev/null)"
	el=$(sacct -X -n -P -j "$jid" -o ElapsedRaw 2>/dev/null | head -1)
	f=$(sed -n "${fig[$prog]}" "$o.out" | tail -1)
	[ -n "$f" ] || [ "$c" = true ] || diag "job $jid ($prog, $mode): no figure: $(tail -3 "$o.out" | tr '\n' ' ')"
}
# POLICY and RULE of an advice line; empty for the site's defaults.
policy_of() { printf '%s\n' "$1" | sed -n 's/^gpumem: advised: \([^ ,][^ ,]*\), from job [0-9][0-9]* on [^ ]* (\([^:]*\): .*/\1/p'; }
rule_of() { printf '%s\n' "$1" | sed -n 's/^gpumem: advised: \([^ ,][^ ,]*\), from job [0-9][0-9]* on [^ ]* (\([^:]*\): .*/\2/p'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "-" && a != "" && a + 0 >= b + 0) }'; }
best() { printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g | tail -1; }
gains() { case " $GAIN_RULES " in *" $1 "*) return 0 ;; esac; return 1; }

# --- each program: a warm-up, then 3 rounds of job 1 (defaults), job 2 (advised), job 1' ---
# (defaults), then one more lookup.  Job 2's baseline is the mean of the two
# defaults jobs either side of it, so an order effect (the second job of a
# pair ran slower in runs k and l whatever its policy) falls on both sides;
# job 1' / job 1 is printed as the noise floor (the same policy twice).
# mean A B: their mean, or the one that is a figure.
mean() { awk -v a="$1" -v b="$2" 'BEGIN { n = 0; s = 0
	if (a ~ /^[0-9.]+$/) { s += a; n++ } if (b ~ /^[0-9.]+$/) { s += b; n++ }
	if (n) printf "%.6g", s / n }'; }
table=""
noise=""
exercised=""
for p in $progs; do
	left=$((BUDGET - ($(date +%s) - start)))
	if [ "$p" = uvm ] && [ ! -x "$t/uvm_oversubs" ]; then
		skip "uvm: NVIDIA's UM oversubscription benchmark not carried ($uvmsrc)"; continue
	fi
	if [ "$left" -lt "${est[$p]}" ]; then
		skip "$p: not run, ${left} s of the ${BUDGET} s budget left (GPUMEM_ADVISED_BUDGET_S)"; continue
	fi
	t0=$(date +%s)
	declare -a f1=() f1b=() base=() f2=() pol=() rul=() lines=() el1=() el1b=() el2=() ids=()
	# The warm-up: the program's first run pays for what later runs find
	# ready (CuPy's kernel cache, the page cache, the GPU's clocks; in runs
	# k and l loop's first job ran at a quarter of its later speed and was
	# profiled idle).  Profiled, not counted.
	job "$p" defaults; wf=$f
	diag "$p warm-up: $(unit "$p") ${wf:-?} (${el:-?} s), not counted"
	for k in 1 2 3; do
		job "$p" defaults; f1[k]=$f; el1[k]=$el
		if [ "$p" = reuse ]; then job "$p" advised "${other[$k]}"; else job "$p" advised; fi
		f2[k]=$f; el2[k]=$el; ids[k]=$jid
		lines[k]=$line; pol[k]=$(policy_of "$line"); rul[k]=$(rule_of "$line")
		job "$p" defaults; f1b[k]=$f; el1b[k]=$el
		base[k]=$(mean "${f1[k]}" "${f1b[k]}")
		diag "$p round $k: job 1 $(unit "$p") ${f1[k]:-?} (${el1[k]:-?} s), job 2 ${f2[k]:-?} (${el2[k]:-?} s), job 1' ${f1b[k]:-?} (${el1b[k]:-?} s): job 2 / mean(1, 1') $(ratio "${f2[k]}" "${base[k]}")x, noise 1'/1 $(ratio "${f1b[k]}" "${f1[k]}")x"
		diag "  ${lines[k]:-(no gpumem: advised: line: $(head -c 300 "$t/job$((n - 1)).err" | tr '\n' ' '))}"
	done
	job "$p" advised true; lines[4]=$line; pol[4]=$(policy_of "$line")
	diag "$p lookup after round 3: ${line:-(none)}"
	[ -n "${lines[1]}" ] || { fail "$p: job 2 printed no 'gpumem: advised:' line"; continue; }

	# Best of 3, split by whether the advice promised the job a gain.
	nr=$(ratio "$(best "${f1b[@]}")" "$(best "${f1[@]}")")
	noise="$noise $p=${nr}x"
	# Each side against its own rounds' defaults jobs: the mean of best job 1
	# and best job 1' (best of as many as job 2 has, each side of it).
	g=() e=() ga=() gc=() ea=() ec=() gp="" en=""
	for k in 1 2 3; do
		if [ -n "${pol[k]}" ] && gains "${rul[k]}"; then
			g+=("${f2[k]}"); ga+=("${f1[k]}"); gc+=("${f1b[k]}"); gp=${pol[k]}
		else
			e+=("${f2[k]}"); ea+=("${f1[k]}"); ec+=("${f1b[k]}"); en="$en${en:+, }${pol[k]:-defaults}"
		fi
	done
	# The loop (doc/admin/profile.md, "The judge"): a policy whose job 2
	# held its program's own figure (>= 0.97x its neighbours) is never
	# dropped: it is advised again in the next round (or the last lookup).
	# One whose job 2 lost goes on probation, and two losses in a row drop
	# it; the judge times the job's work, so a loss of the figure that the
	# work time does not show beyond the noise is no loss to it.
	lost=""
	for k in 1 2 3; do
		[ -n "${pol[k]}" ] && [ "$p" != reuse ] || continue
		if ge "$(ratio "${f2[k]}" "${base[k]}")" 0.97; then
			if [ "${pol[k + 1]}" = "${pol[k]}" ]; then
				pass "$p: ${pol[k]} held its figure in round $k ($(ratio "${f2[k]}" "${base[k]}")x): advised again"
			else
				fail "$p: ${pol[k]} held its figure in round $k ($(ratio "${f2[k]}" "${base[k]}")x), yet not advised again: ${lines[k + 1]}"
			fi
		else
			lost="$lost $k"
			diag "$p: ${pol[k]} made job 2 of round $k slower ($(ratio "${f2[k]}" "${base[k]}")x its neighbours); next: ${lines[k + 1]:-(none)}"
		fi
	done
	if [ -n "$lost" ] && [ "$p" = "$LOSER" ]; then
		reacted=""
		for k in $lost; do
			case ${lines[k + 1]} in *"on probation"* | *", but "*"site defaults"* | "") reacted=yes ;; esac
			[ -z "${pol[k + 1]}" ] && reacted=yes
		done
		if [ -n "$reacted" ]; then
			pass "$p: after its policy lost (rounds$lost) the loop put it on probation or dropped it"
			exercised="$exercised $p"
		else
			fail "$p: its policy lost its figure (rounds$lost), yet the loop kept it: ${lines[4]}"
		fi
	fi
	# The reused name: job 2 ran other work each round; no verdict on it is a gain.
	if [ "$p" = reuse ]; then
		adv=$("$B/plugin/cli/gpumem" advise "${ids[3]:-${ids[1]}}" 2>&1)
		diag "gpumem advise ${ids[3]}: $(printf '%s' "$adv" | tr '\n' ' ' | cut -c1-900)"
		for k in 1 2 3; do
			[ -n "${ids[k]}" ] || continue
			said=$(printf '%s\n%s\n%s\n%s\n' "${lines[2]}" "${lines[3]}" "${lines[4]}" "$adv" |
				grep -o "tried in job ${ids[k]} [^;]*" | sort -u)
			case $said in
			*"x faster"* | *gained*) fail "reuse: job ${ids[k]} (other work: ${other[$k]%% *}) judged a gain: $said" ;;
			*) pass "reuse: job ${ids[k]} (other work: ${other[$k]%% *}) not judged a gain: ${said:-(no verdict shown)}" ;;
			esac
		done
		table="$table
$(printf '%-10s %-22s %-14s %10s %10s %7s %7s  %s' "$p" "${pol[1]:-defaults}/${pol[2]:-defaults}/${pol[3]:-defaults}" "${rul[1]:--}" "-" "-" "-" "-" "job 2 ran other work, $(( $(date +%s) - t0 )) s")"
		continue
	fi
	if [ ${#g[@]} -gt 0 ]; then
		F1=$(mean "$(best "${ga[@]}")" "$(best "${gc[@]}")")
		r=$(ratio "$(best "${g[@]}")" "$F1")
		if ge "$r" 2; then
			pass "$p: ${gp} (${rul[1]:-${rul[2]}}) promised a gain: best job 2 $(best "${g[@]}") against best job 1 $F1 $(unit "$p"): ${r}x >= 2x"
		elif [ "$p" = "$LOSER" ] && [ -n "$lost" ]; then
			pass "$p: ${gp} promised a gain and lost (${r}x): the program the rules cannot tell from read-once faulting; the loop's answer above"
		else
			fail "$p: ${gp} promised a gain: best job 2 $(best "${g[@]}") against best job 1 $F1 $(unit "$p"): ${r}x < 2x"
		fi
	fi
	if [ ${#e[@]} -gt 0 ]; then
		F1=$(mean "$(best "${ea[@]}")" "$(best "${ec[@]}")")
		r=$(ratio "$(best "${e[@]}")" "$F1")
		if ge "$r" 0.97; then
			pass "$p: no gain promised ($en): best job 2 $(best "${e[@]}") against best job 1 $F1 $(unit "$p"): ${r}x >= 0.97x (noise: best job 1' / best job 1 ${nr}x)"
		else
			fail "$p: no gain promised ($en): best job 2 $(best "${e[@]}") against best job 1 $F1 $(unit "$p"): ${r}x < 0.97x (noise: best job 1' / best job 1 ${nr}x)"
		fi
	fi
	F1=$(mean "$(best "${f1[@]}")" "$(best "${f1b[@]}")")
	table="$table
$(printf '%-10s %-22s %-14s %10s %10s %7s %7s  %s' "$p" "${pol[1]:-defaults}/${pol[2]:-defaults}/${pol[3]:-defaults}" "${rul[1]:--}" "$F1" "$(best "${f2[@]}")" "$(ratio "$(best "${f2[@]}")" "$F1")" "$nr" "$(unit "$p"), $(( $(date +%s) - t0 )) s")"
	[ "$p" = "$LOSER" ] && [ -n "${ids[1]}" ] && diag "gpumem advise ${ids[1]}: $("$B/plugin/cli/gpumem" advise "${ids[1]}" 2>&1 | tr '\n' ' ' | cut -c1-600)"
done
case " $progs " in *" $LOSER "*)
	case " $exercised " in
	*" $LOSER "*) pass "the loop was exercised: $LOSER's losing advice went on probation or was dropped" ;;
	*) fail "the loop was not exercised: $LOSER's losing advice was not put on probation or dropped (see its rounds above)" ;;
	esac ;;
esac
diag "" "program    advised (rounds 1/2/3)  rule (round 1)  best job1  best job2   ratio   noise" "$table" "" \
	"best job1: the mean of best job 1 and best job 1' (defaults either side of job 2, best of 3 each);" \
	"noise: best job 1' / best job 1, the same policy twice:$noise"
diag "advised part: $(( $(date +%s) - start )) s"
done_testing
