#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# advised.by_default on a real local Slurm with a real slurmdbd on a private
# MariaDB, gpumem-acct in the Epilog and the real sampler over the stand-in
# NVML, with the shipped site file (etc/gpumem.yaml, only its paths moved
# here): a job that names no policy is advised by the rules its mode
# allows.  gain (shipped): faulting's zerocopy.yaml is applied, hbm-bound's
# stream.yaml (no speed-up promised) is not; all: both; off: neither.  A
# user opts out with --gpumem-policy=none or any named policy.  slurmdbd
# hung (SIGSTOP) or down: srun goes on within advised.timeout and says the
# advice was skipped.  gpumem advise --mine shows what was applied unasked.
. "$top_srcdir/tests/lib.sh"
slurm_test advised_default
advised_setup
# site [SED EXPRESSION]: the shipped etc/gpumem.yaml with this cluster's
# paths (policy_dir, report.dir) and a 100 ms profile (a 5 s job gets its
# samples), then EXPRESSION on the advised: section.  Replaced at once (a
# rename): the last job's Epilog (gpumem-acct) may be reading it.
site() {
	sed -e "s|^policy_dir: .*|policy_dir: $t/policies|" \
		-e "s|^  dir: /var/lib/gpumem/reports|  dir: $t/reports|" \
		-e "s|^  interval_ms: 1000|  interval_ms: 100|" \
		-e "${1:-s|^|&|}" "$top_srcdir/etc/gpumem.yaml" >"$t/site.yaml.new"
	chmod 644 "$t/site.yaml.new"
	mv "$t/site.yaml.new" "$t/site.yaml"
}
site
is "$(sed -n 's/^  by_default: //p' "$t/site.yaml")" "gain" "the shipped site file turns advised.by_default on: gain"
plugstack "$t/plug.conf" site=$t/site.yaml libexecdir=$B check=$t/standin-check nvidia_dev=$t/nvidiactl
printf '#!/bin/sh\nexec %s epilog --site %s 2>>%s\n' "$ACCT" "$t/site.yaml" "$t/acct.log" >"$t/epilog"
chmod 755 "$t/epilog"
values() { echo "$1" >"$B/sample.values"; }
FAULT="dram=5,sm=20,occ=10,pcie_rx=5.4,pcie_tx=4,mem=7.5"       # faulting -> zerocopy.yaml (gain)
HBM="dram=90,sm=50,occ=30,pcie_rx=0.1,pcie_tx=0.1,mem=7.5"      # hbm-bound -> stream.yaml (not-slower)
LINK="dram=5,sm=20,occ=10,pcie_rx=45,pcie_tx=0.1,mem=7.5"       # link-bound: no more faults

acct_cluster_start --nodes 1 --gpus 1 --epilog "$t/epilog" --plugstack "$t/plug.conf"
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
# job NAME SECONDS [SBATCH OPTIONS...]: a batch job of that name as the test
# user, waited for; its id in $jid, sbatch's stderr and the job's output in $out.
job() {
	local name=$1 secs=$2
	shift 2
	run asuser sbatch -N1 -J "$name" --gres=gpu:1 -o "$GPUMEM_CLUSTER_TMP/out.%j" "$@" \
		--wrap "echo \"policy=\$GPUMEM_POLICY\"; sleep $secs"
	jid=$(printf '%s\n' "$out" | sed -n 's/^Submitted batch job \([0-9][0-9]*\).*/\1/p')
	[ -n "$jid" ] || { fail "sbatch -J $name gave no job: $out"; return 1; }
	acct_wait_record "$jid"
	out="$out
$(cat "$GPUMEM_CLUSTER_TMP/out.$jid" 2>/dev/null)"
}
# now_ms: the monotonic-enough wall clock, in milliseconds.
now_ms() { echo $(($(date +%s%N) / 1000000)); }
step() { run asuser srun -N1 --gres=gpu:1 "$@" sh -c 'echo "policy=$GPUMEM_POLICY"'; }

# --- the history: a faulting job and an HBM-bound one, neither asked for a policy -------
values "$FAULT"
job fault 3
f1=$jid
unlike "$out" "gpumem: advised" "no history: nothing said on a job that asked for nothing"
like "$out" "^policy=(site defaults)?$" "... the site's defaults"
values "$HBM"
job hbm 3
h1=$jid
values "$FAULT"

# --- gain (shipped): faulting's zerocopy.yaml applied, hbm-bound's stream.yaml not ------
step -J fault
is "$rc" 0 "gain: the job runs"
like "$out" "gpumem: advised by default: zerocopy.yaml, from job $f1 on gpumem1 \(faulting: " "gain: faulting's zerocopy.yaml, said on one line"
like "$out" "policy=zerocopy.yaml \(advised by default from job $f1: faulting\)" "... and the job runs with it, by default"
step -J hbm
like "$out" "^policy=(site defaults)?$" "gain: hbm-bound's stream.yaml (no speed-up promised) is not applied"
unlike "$out" "gpumem: advised" "... and nothing is said"
step -v -J hbm
like "$out" "gpumem: advised by default: job $h1 advises stream.yaml \(hbm-bound\), which promises no speed-up: not applied unasked \(advised.by_default: gain" \
	"... srun -v says why"

# --- opting out: --gpumem-policy=none, or any named policy ------------------------------
step -J fault --gpumem-policy=none
is "$rc" 0 "--gpumem-policy=none: the job runs"
unlike "$out" "gpumem: advised" "... not advised"
like "$out" "^policy=(site defaults)?$" "... the site's defaults"
step -J fault --gpumem-policy=prefetch
unlike "$out" "gpumem: advised" "a named policy: not advised"
like "$out" "^policy=.*prefetch" "... it runs with the policy it named"
run asuser sbatch -N1 -J fault --gres=gpu:1 --gpumem-policy=none -o "$GPUMEM_CLUSTER_TMP/none.%j" --wrap 'echo "policy=$GPUMEM_POLICY"'
unlike "$out" "gpumem: advised" "sbatch --gpumem-policy=none: not advised"
nj=$(printf '%s\n' "$out" | sed -n 's/^Submitted batch job \([0-9][0-9]*\).*/\1/p')
[ -n "$nj" ] && acct_wait_record "$nj"
like "$(cat "$GPUMEM_CLUSTER_TMP/none.$nj" 2>/dev/null)" "^policy=(site defaults)?$" "... its batch step runs with the site's defaults"

# --- all: both; off: neither -------------------------------------------------------------
site 's|^  by_default: gain|  by_default: all|'
grep -q '^  by_default: all' "$t/site.yaml" || fail "the site file was not switched to all"
step -J fault
like "$out" "policy=zerocopy.yaml \(advised by default from job $f1: faulting\)" "all: faulting's zerocopy.yaml"
step -J hbm
like "$out" "gpumem: advised by default: stream.yaml, from job $h1 on gpumem1 \(hbm-bound: " "all: hbm-bound's stream.yaml too"
like "$out" "policy=stream.yaml \(advised by default from job $h1: hbm-bound\)" "... the job runs with it"
site 's|^  by_default: gain|  by_default: off|'
grep -q '^  by_default: off' "$t/site.yaml" || fail "the site file was not switched to off"
step -J fault
unlike "$out" "gpumem: advised" "off: not advised"
like "$out" "^policy=(site defaults)?$" "... the site's defaults"
run asuser srun -N1 --gres=gpu:1 -J fault --gpumem-policy=advised true
like "$out" "gpumem: advised: zerocopy.yaml, from job $f1" "off: --gpumem-policy=advised still asks"
site 's|^  by_default: gain|  by_default: maybe|'
run asuser srun -N1 --gres=gpu:1 -J fault true
like "$out" "site.yaml:[0-9]+:15: error: advised.by_default: 'maybe' is not one of: gain" "by_default: maybe: an error at file:line:col"
site

# --- advise --mine: what was applied unasked, and why ------------------------------------
values "$LINK"                  # it faults no more under zerocopy.yaml: a gain, kept
job fault 2
u1=$jid
like "$out" "policy=zerocopy.yaml \(advised by default from job $f1: faulting\)" "a batch job applied by default (the record --mine reads)"
run asuser "$GM" advise --mine --site "$t/site.yaml"
is "$rc" 0 "advise --mine: exit 0"
like "$out" "applied by default: zerocopy.yaml tried in job $u1 \(advised from job $f1, faulting\)" "advise --mine: the run applied unasked, under its name"
like "$out" "by default \(advised.by_default: gain\): the next job named fault gets zerocopy.yaml \(faulting promises a gain\)" "... and why the next job would get it"
like "$out" "by default \(advised.by_default: gain\): the next job named hbm gets the site's defaults: stream.yaml \(hbm-bound\) promises no speed-up" "... and why another name's advice is not applied"
run asuser "$GM" advise --mine --json --site "$t/site.yaml"
is "$(printf '%s' "$out" | json_in '[(r["job"], r["unasked"]) for n in d["names"] if n["name"] == "fault" for r in n["history"] if r["job"] == '"$u1"']')" \
	"[($u1, True)]" "advise --mine --json: the run's unasked field"
is "$(printf '%s' "$out" | json_in '[(n["name"], n["by_default"]["mode"], n["by_default"]["policy"], n["by_default"]["promise"]) for n in d["names"] if n["name"] in ("fault", "hbm")]' | tr -d '\n')" \
	"[('fault', 'gain', 'zerocopy.yaml', 'gain'), ('hbm', 'gain', None, 'not-slower')]" "... each name's by_default: mode, the policy applied, the promise"

# --- slurmdbd hung, then down: srun goes on within advised.timeout (3 s) -----------------
dbd=
for p in $(pgrep -x slurmdbd); do
	grep -qzxF "GPUMEM_CLUSTER_DAEMON=$GPUMEM_CLUSTER_DIR" /proc/"$p"/environ 2>/dev/null && dbd=$p
done
if [ -n "$dbd" ]; then
	kill -STOP "$dbd"
	t0=$(now_ms)
	step -J fault
	ms=$(($(now_ms) - t0))
	kill -CONT "$dbd"
	is "$rc" 0 "slurmdbd hung (stopped): the job runs"
	like "$out" "gpumem: advised by default: advice skipped: Slurm's accounting did not answer \(sacct: sacct: no answer in 3 s: killed\)" \
		"... the advice skipped after advised.timeout (3 s), said"
	like "$out" "^policy=(site defaults)?$" "... the site's defaults"
	# The bound is 3 s; srun's own start on a loaded 2-core host comes on top.
	[ "$ms" -lt 30000 ] && pass "... srun done in $ms ms (sacct killed at 3 s)" || fail "... srun took $ms ms"
	kill "$dbd"
	for _ in $(seq 1 120); do kill -0 "$dbd" 2>/dev/null || break; sleep 0.5; done
	step -J fault
	is "$rc" 0 "slurmdbd down: the job runs"
	like "$out" "gpumem: advised by default: advice skipped: Slurm's accounting did not answer \(sacct: " "... the advice skipped, said"
	like "$out" "^policy=(site defaults)?$" "... the site's defaults"
else
	fail "this cluster's slurmdbd was not found"
fi
done_testing
