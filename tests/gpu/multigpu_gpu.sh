#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem on a node of 4 GPUs (issue 35, point 4), through the real local
# Slurm (tests/slurm/cluster --gpus 4 over the real device files) with the
# real gpumem-check, gpumem-probe, gpumem-l2reset, gpumem-health and
# gpumem-sample:
#  - a first job leaves a measured pass on GPUs 0-1 (check.min_interval 60,
#    gpumem-health), a batch job holds them; a job with --gres=gpu:2 then lands on 2-3
#    with checks before and after, an L2 limit reset at exit, a per-job MPS
#    daemon and the profile.  Asserted from its reports, slurmd's log and
#    nvidia-smi while it runs: both checks measured GPUs 2-3 (their UUIDs),
#    the L2 reset and the MPS daemon are theirs alone (the task sees two
#    devices, GPUs 2-3; NVIDIA's MPS server runs on 2-3 only), its profile
#    and its accounting record name 2-3 only, and the held GPUs saw nothing
#    (no report, their pass files unchanged);
#  - a job on all four (check.min_interval 0 from here: measured): per-GPU figures for each of the 4 UUIDs in its
#    reports and in `gpumem job JOBID` (the record gpumem-acct builds from
#    those reports, read through a stand-in sacct: no slurmdbd needed), and
#    the size of its AdminComment segment against the 4096-byte limit, with
#    an 8-GPU record made from the same real figures (GPUs 4-7 copies of
#    0-3, figures a little lower) beside it.
# With GPUMEM_CLUSTER_ARGS="--cgroup v2" (tests/gpu/run's cgroup2 part with
# multigpu) the same on a device-confined node: the checks, the MPS daemon
# and the sampler run outside the job's cgroup, so every assertion holds.
# Skips, saying why, below 4 GPUs (the 2-GPU numbering: cgroup_gpu.sh).
# Usage: tests/gpu/multigpu_gpu.sh BUILD_DIR   (run by tests/gpu/run)
B=$(cd "${1:?usage: multigpu_gpu.sh BUILD_DIR}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
export top_srcdir top_builddir=$B
. "$top_srcdir/tests/lib.sh"
[ -e /dev/nvidiactl ] || skip_all "no GPU here: run tests/gpu/run on a GPU machine"
for f in plugin/spank/.libs/gpumem.so plugin/sample/gpumem-sample plugin/health/gpumem-health \
	plugin/acct/gpumem-acct plugin/cli/gpumem kernels/check/gpumem-check; do
	[ -e "$B/$f" ] || skip_all "$f not built"
done
NG=$(nvidia-smi -L | grep -c '^GPU ')
[ "$NG" -ge 4 ] || skip_all "needs 4 GPUs, this machine has $NG (a job on GPU 1 of 2: tests/gpu/cgroup_gpu.sh)"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CL="$top_srcdir/tests/slurm/cluster"
t=$(mktemp -d /tmp/gpumem-multi.XXXXXX); chmod 755 "$t"
export GPUMEM_CLUSTER_DIR=$t/cluster   # its own (runs at once never share one)
trap '"$CL" stop >/dev/null 2>&1; rm -rf "$t"' EXIT
uuid_of() { nvidia-smi --query-gpu=index,uuid --format=csv,noheader | awk -F', ' -v i="$1" '$1 == i {print $2}'; }
uuids_of() { local g; for g in ${1//,/ }; do uuid_of "$g"; done | sort | paste -sd' '; }   # "2,3" -> sorted UUIDs
echo "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $NG GPUs; ${GPUMEM_CLUSTER_ARGS:-no cgroup confinement}"
nvidia-smi -L | sed 's/^/# /'

"$NVCC" -O2 -o "$t/ctxhold" "$top_srcdir/tests/gpu/ctxhold.cu" || { fail "nvcc ctxhold"; done_testing; }
gpu_profile_site
ln -s "$B/plugin/health/gpumem-health" "$t/libexec/gpumem-health"
# The default check.min_interval (60) with gpumem-health: a GPU's first
# check is measured (no pass on record) and leaves a pass there.
printf 'check:\n  timeout: 60\n' >>"$t/site.yaml"
printf 'version: 1\nl2:\n  persisting_limit: 50%%\n  reset_at_exit: true\nmps:\n  active_thread_percentage: 100\n  daemon: job\ncheck:\n  before: true\n  after: true\n' >"$t/two.yaml"
printf 'version: 1\nl2:\n  persisting_limit: 50%%\n  reset_at_exit: true\ncheck:\n  before: true\n  after: true\n' >"$t/four.yaml"
cat >"$t/job" <<'SH'
#!/bin/sh
t=$(dirname "$0")
echo "job=$SLURM_JOB_ID step=$SLURM_STEP_GPUS cvd=$CUDA_VISIBLE_DEVICES"
env | grep -E '^CUDA_(MPS_PIPE|DEVICE_DEFAULT_PERSISTING)'
exec "$t/ctxhold" "${HOLD_S:-1}" "$t/ready.$SLURM_JOB_ID"
SH
chmod 755 "$t/job"
chmod 644 "$t"/*.yaml "$t"/*.conf
if ! "$CL" start --gpus 4 --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1; then
	cat "$t/start.log"; fail "the local Slurm with gpu:4 started (${GPUMEM_CLUSTER_ARGS:-})"; done_testing
fi
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
D=$GPUMEM_CLUSTER_DIR
S=${GPUMEM_CLUSTER_STATE_DIR:-/run/gpumem}/gpus
LOG=$D/log/slurmd.gpumem1.log
like "$(scontrol show node gpumem1 -o)" "Gres=gpu:4" "the node offers gpu:4 (the real /dev/nvidia0-3)"
R=$t/reports
wait_after() { wait_file "$R/job$1.epilog.gpumem1.after.json" || diag "job $1: no after report: $(ls "$R" | tail -5 | paste -sd' ')"; }
# The UUIDs of the check document's devices in job $1's PHASE report, sorted.
devs() { json "$R/job$1.$2.json" '" ".join(sorted(v["uuid"] for v in ((d["check"] or {}).get("devices") or [])))' 2>&1; }
head_of() { json "$R/job$1.$2.json" 'd["gpus"] + " " + d["status"] + " " + d["verdict"]' 2>&1; }
ACCT=$B/plugin/acct/gpumem-acct
record() { "$ACCT" record --dir "$R" --job "$1" --node gpumem1 2>"$t/record.err"; }

# --- GPUs 0-1 get a measured pass on record, then a batch job holds them ---------
run srun -N1 --gres=gpu:2 --gpumem-policy="$t/four.yaml" sh -c 'echo "job=$SLURM_JOB_ID step=$SLURM_STEP_GPUS"'
pre=$(jobid_of "$out")
wait_after "$pre"; wait_idle gpumem1
is "$(head_of "$pre" epilog.gpumem1.after)" "0,1 ran pass" "a first 2-GPU job on the idle node: GPUs 0,1 checked and passed ($out)"
hold=$(sbatch --parsable --gres=gpu:2 -o "$t/hold.out" --wrap 'echo "gpus=$SLURM_JOB_GPUS cvd=$CUDA_VISIBLE_DEVICES"; exec sleep 600' 2>&1)
for _ in $(seq 1 120); do grep -q '^gpus=' "$t/hold.out" 2>/dev/null && break; sleep 0.25; done
hg=$(sed -n 's/^gpus=\([0-9,]*\) .*/\1/p' "$t/hold.out" 2>/dev/null)
diag "holder job $hold: $(cat "$t/hold.out" 2>&1)"
is "$hg" "0,1" "a batch job with --gres=gpu:2 holds GPUs 0-1 (SLURM_JOB_GPUS)"
[ -n "$hg" ] || { diag "$(squeue 2>&1)" "$(tail -20 "$LOG")"; done_testing; }
# The next job's GPUs: the other two, whatever the holder got.
E=$(for g in 0 1 2 3; do case ",$hg," in *",$g,"*) ;; *) echo "$g" ;; esac; done | paste -sd,)
EU=$(uuids_of "$E")
state_of_held() { ls -l --time-style=+%s.%N "$S" 2>/dev/null | awk -v a="${hg%,*}" -v b="${hg#*,}" '$NF ~ "\\.gpumem1\\.(" a "|" b ")$" {print $6, $7}'; md5sum "$S"/*.gpumem1."${hg%,*}" "$S"/*.gpumem1."${hg#*,}" 2>/dev/null; }
before_state=$(state_of_held)
like "$before_state" "pass\.gpumem1\.${hg%,*}" "GPUs $hg have a pass on record (the state the next job must leave alone)"

# --- a job on the other two: checks, L2 reset, MPS daemon, profile ------------------
: >"$t/smi"
HOLD_S=8 srun -N1 --gres=gpu:2 --gpumem-policy="$t/two.yaml" "$t/job" >"$t/two.out" 2>&1 &
sp=$!
for _ in $(seq 1 240); do ls "$t"/ready.* >/dev/null 2>&1 && break; sleep 0.25; done
ls "$t"/ready.* >/dev/null 2>&1 || diag "the job never got its contexts up: $(cat "$t/two.out")"
nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name --format=csv,noheader >"$t/smi" 2>&1
mpsd=$(pgrep -f 'nvidia-cuda-mps-control -f' | head -1)
mpsenv=$(tr '\0' '\n' <"/proc/${mpsd:-0}/environ" 2>/dev/null | grep '^CUDA_VISIBLE_DEVICES=')
wait "$sp"; rc=$?
out=$(cat "$t/two.out")
diag "2-GPU job: $out"
is "$rc" 0 "a 2-GPU job beside the holder (L2 limit and reset, per-job MPS, checks before and after): exit 0"
jid=$(jobid_of "$out")
like "$out" "^job=[0-9]+ step=$E " "... Slurm gave it GPUs $E"
like "$out" "^CUDA_MPS_PIPE_DIRECTORY=/run/gpumem-mps/job$jid/pipe$" "... its tasks are clients of the job's own MPS daemon"
is "$(printf '%s\n' "$out" | sed -n 's/^ctxhold: count=//p')" 2 "the task sees 2 devices through the daemon"
is "$(printf '%s\n' "$out" | sed -n 's/^ctxhold: [0-9] //p' | sort | paste -sd' ')" "$EU" "... GPUs $E's UUIDs, not GPUs $hg's"
is "$mpsenv" "CUDA_VISIBLE_DEVICES=$E" "NVIDIA's MPS control daemon was started on GPUs $E alone"
diag "nvidia-smi while the job ran:" "$(cat "$t/smi")"
srv=$(awk -F', ' '/mps-server/ {print $1}' "$t/smi" | sort -u | paste -sd' ')
is "$srv" "$EU" "nvidia-smi: the MPS server runs on GPUs $E, each of them, and on no other"
is "$(awk -F', ' '$1 ~ /^GPU-/ {print $1}' "$t/smi" | sort -u | grep -vxF -e "${EU%% *}" -e "${EU##* }" | paste -sd' ')" "" "nvidia-smi: no compute process of the job on GPUs $hg"
wait_after "$jid"
for ph in prolog.gpumem1.before epilog.gpumem1.after; do
	is "$(head_of "$jid" "$ph")" "$E ran pass" "${ph##*.}-check: measured GPUs $E and passed"
	is "$(devs "$jid" "$ph")" "$EU" "... its devices are GPUs $E's UUIDs"
done
like "$(json "$R/job$jid.prolog.gpumem1.before.json" 'd["evidence"]["text"]' 2>&1)" "^measured: " "the before-check was measured (no pass on record for GPUs $E)"
l2=$(grep -hE "job $jid: L2 reset" "$LOG")
diag "slurmd: $l2"
like "$l2" "job $jid: L2 reset (on|by the after-check on) GPUs $E( |$)" "the L2 reset ran on GPUs $E"
is "$(printf '%s\n' "$l2" | grep -cvE "GPUs $E( |$)")" 0 "... and on no other GPUs"
grep -h "gpumem: .*job $jid" "$LOG" | tail -10 | sed 's/^/# slurmd: /'
is "$(json "$R/job$jid.epilog.gpumem1.after.json" 'd["profile"]["state"] + " " + ",".join(str(g["index"]) for g in sorted(d["profile"]["gpus"], key=lambda g: g["index"]))' 2>&1)" \
	"ran $E" "the job's profile covers GPUs $E alone"
is "$(json "$R/job$jid.epilog.gpumem1.after.json" '" ".join(sorted(g["uuid"] for g in d["profile"]["gpus"]))' 2>&1)" "$EU" "... by their UUIDs"
rec=$(record "$jid" | sed -n 1p)
is "$(printf '%s' "$rec" | json_in '[sorted(g[0] for g in c["gpus"]) for c in d["checks"]], sorted(g[0] for g in d["prof"]["g"])' 2>&1)" \
	"([[${E/,/, }], [${E/,/, }]], [${E/,/, }])" "its accounting record: both checks and the profile on GPUs $E alone"
ls "$R"/job"$hold".*.json >/dev/null 2>&1 && fail "the holder's GPUs were checked: $(ls "$R"/job"$hold".*)" ||
	pass "the holder job (GPUs $hg) has no report: nothing checked its GPUs"
is "$(state_of_held)" "$before_state" "GPUs $hg's state files (passes, evidence) are unchanged"
diag "state_dir/gpus: $(ls "$S" 2>&1 | paste -sd' ')"
ls "$S/pass.gpumem1.${E%,*}" "$S/pass.gpumem1.${E#*,}" >/dev/null 2>&1 && pass "the measured pass is kept for GPUs $E" ||
	fail "the measured pass is kept for GPUs $E"
for _ in $(seq 1 30); do left=$(ls -d "$GPUMEM_CLUSTER_MPS_DIR"/job* 2>/dev/null; pgrep -f 'nvidia-cuda-mps' 2>/dev/null); [ -z "$left" ] && break; sleep 0.5; done
is "$left" "" "the job's MPS daemon stopped by its epilog"
scancel "$hold"
wait_idle gpumem1 || diag "the node did not go idle: $(scontrol show node gpumem1 -o)"

# --- a job on all four ----------------------------------------------------------------
# Every check measured from here (GPUs 0-3 all have a pass on record now).
printf '  min_interval: 0\n' >>"$t/site.yaml"
"$CL" restart-slurmd --plugstack "$t/plugstack.conf" >/dev/null 2>&1
AU=$(uuids_of 0,1,2,3)
run srun -N1 --gres=gpu:4 --gpumem-policy="$t/four.yaml" "$t/job"
diag "4-GPU job: $out"
is "$rc" 0 "a job on all four GPUs, checks before and after, L2 reset: exit 0"
jid=$(jobid_of "$out")
is "$(printf '%s\n' "$out" | sed -n 's/^ctxhold: [0-9] //p' | sort | paste -sd' ')" "$AU" "the task sees the 4 GPUs"
wait_after "$jid"
wait_idle gpumem1
# The verdict's first word: "pass (no reference)" where neither the site's
# reference nor the GPU's own peak judged a figure (they are then shown only).
figs() {   # each device of the report: "UUID verdict read triad h2d d2h" best GB/s
	json "$R/job$1.$2.json" '"\n".join("%s %s %s" % (v["uuid"], v["verdict"].split()[0], " ".join(str(round((v["metrics"].get(k) or {}).get("best_gbps") or -1)) for k in ("read", "triad", "h2d", "d2h"))) for v in d["check"]["devices"])' 2>&1
}
for ph in prolog.gpumem1.before epilog.gpumem1.after; do
	is "$(head_of "$jid" "$ph")" "0,1,2,3 ran pass" "${ph##*.}-check on all four: measured and passed"
	f=$(figs "$jid" "$ph"); diag "$f"
	is "$(printf '%s\n' "$f" | awk '$2 == "pass" && $3 > 0 && $4 > 0 && $5 > 0 && $6 > 0 {print $1}' | sort | paste -sd' ')" "$AU" \
		"... per-GPU figures (read, triad, h2d, d2h GB/s) for each of the 4 UUIDs"
done
like "$(grep -hE "job $jid: L2 reset" "$LOG")" "GPUs 0,1,2,3( |$)" "its L2 reset on all four"
# Its record, as `gpumem job` shows it (gpumem-acct's segment in a stand-in sacct's AdminComment).
mkdir -p "$t/bin"; sacct_standin "$t/bin"
run record "$jid"
seg=$(printf '%s\n' "$out" | sed -n 2p)
is "$rc" 0 "gpumem-acct builds the 4-GPU job's record" || diag "$(cat "$t/record.err" 2>&1)"
echo "$jid|root|COMPLETED|$seg" >"$t/bin/sacct.$jid"
run env PATH="$t/bin:$PATH" "$B/plugin/cli/gpumem" job "$jid" --site "$t/site.yaml" --json
is "$(printf '%s' "$out" | json_in 'sorted((c["phase"], [(g[0], g[1].split()[0]) for g in c["gpus"] if all(x is not None and x > 0 for x in g[2:6])]) for c in d[0]["nodes"][0]["checks"])' 2>&1)" \
	"[('after', [(0, 'pass'), (1, 'pass'), (2, 'pass'), (3, 'pass')]), ('before', [(0, 'pass'), (1, 'pass'), (2, 'pass'), (3, 'pass')])]" \
	"gpumem job: both checks with read, triad, h2d and d2h for each of the 4 GPUs"
is "$(printf '%s' "$out" | json_in 'sorted(g[0] for g in d[0]["nodes"][0]["prof"]["g"])' 2>&1)" "[0, 1, 2, 3]" "gpumem job: the profile of each of the 4 GPUs"
run env PATH="$t/bin:$PATH" "$B/plugin/cli/gpumem" job "$jid" --site "$t/site.yaml"
diag "$out"
size=${#seg}
diag "4-GPU job's AdminComment segment: $size bytes of the 4096-byte segment limit ($((100 * size / 4096))%)"
[ "$size" -gt 100 ] && [ "$size" -le 4096 ] && pass "the 4-GPU record fits: $size bytes <= 4096" || fail "the 4-GPU record: $size bytes"
# An 8-GPU node's record from the same real reports: GPUs 4-7 copies of 0-3,
# their figures made a little lower so that deflate does not find them again.
mkdir -p "$t/r8"
for f in "$R"/job"$jid".*.json; do
	python3 - "$f" "$t/r8/${f##*/}" <<'PY'
import copy, json, sys
d = json.load(open(sys.argv[1]))
def other(v, k):   # another GPU's figures: every float a little lower (stays in range)
    if isinstance(v, dict):
        return {a: other(b, k) for a, b in v.items()}
    if isinstance(v, list):
        return [other(b, k) for b in v]
    return round(v * (1 - 0.0137 * (k + 1)), 4) if isinstance(v, float) else v
def twice(rows):
    more = [other(copy.deepcopy(r), k) for k, r in enumerate(rows)]
    for r in more:
        r["index"] += 4
        r["uuid"] = r["uuid"][:-1] + ("8" if r["uuid"][-1] != "8" else "9")
    return rows + more
d["gpus"] = "0,1,2,3,4,5,6,7"
if d.get("check") and d["check"].get("devices"):
    d["check"]["devices"] = twice(d["check"]["devices"])
if (d.get("profile") or {}).get("gpus"):
    d["profile"]["gpus"] = twice(d["profile"]["gpus"])
json.dump(d, open(sys.argv[2], "w"))
PY
done
seg8=$("$ACCT" record --dir "$t/r8" --job "$jid" --node gpumem1 2>"$t/record8.err" | sed -n 2p)
rec8=$("$ACCT" record --dir "$t/r8" --job "$jid" --node gpumem1 2>/dev/null | sed -n 1p)
diag "8-GPU record from these figures: ${#seg8} bytes of 4096 ($((100 * ${#seg8} / 4096))%); $(tail -1 "$t/record8.err" 2>/dev/null)"
is "$(printf '%s' "$rec8" | json_in '[len(c["gpus"]) for c in d["checks"]], len(d["prof"]["g"])' 2>&1)" "([8, 8], 8)" "an 8-GPU record of real figures holds every GPU of both checks and the profile"
[ "${#seg8}" -gt "$size" ] && [ "${#seg8}" -le 4096 ] && pass "... and fits: ${#seg8} bytes <= 4096" || fail "the 8-GPU record: ${#seg8} bytes"
done_testing
