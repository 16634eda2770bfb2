#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# --gpumem-policy=advised (issue 34) on a real local Slurm with a real
# slurmdbd on a private MariaDB, gpumem-acct in the nodes' Epilog and the
# real sampler over the stand-in NVML (tests/fake-nvml): a job gets the
# policy its name's last profiled job was advised, with one line saying
# which job and rule; no history, a forged or oversized AdminComment, a
# name full of shell and terminal metacharacters, accounting down: one
# clear line, the site's defaults, the job runs.  A label forged in a
# policy's name changes nothing (the record's fields decide).  The loop: a policy that
# gained is kept, one that lost is on probation, and `gpumem advise`
# shows the history (and as --json fields).  Several GPUs, or several nodes of one
# job (2 nodes, each its own stand-in figures), disagreeing: the documented rule.  The
# hint on a named policy.  The judge (judge.h): the .batch step's time, comparable
# runs only (`true`, another GPU count: not judged), one loss on probation, a second
# in a row or a failed run dropped.  One cluster for every case (CI's time).
. "$top_srcdir/tests/lib.sh"
slurm_test advised
advised_setup
# The sampler with per-GPU figures too: $B/sample.values1 is GPU 1's (fake-nvml's FAKE_NVML_VALUES_1).
sed -i '/^export LD_LIBRARY_PATH/a export FAKE_NVML_GPUS=2; [ -f "'"$B"'/sample.values1" ] \&\& export FAKE_NVML_VALUES_1="$(cat "'"$B"'/sample.values1")"' "$B/gpumem-sample"
# ... and per node: $B/sample.values.NODE where present (the sampler's stdout is
# the state directory's prof.JOB.NODE; the nodes share one hostname here).
sed -i '/^export LD_LIBRARY_PATH/a n=$(readlink /proc/$$/fd/1); n=${n##*.}; [ -f "'"$B"'/sample.values.$n" ] \&\& export FAKE_NVML_VALUES="$(cat "'"$B"'/sample.values.$n")"' "$B/gpumem-sample"
grep -q FAKE_NVML_VALUES_1 "$B/gpumem-sample" && grep -q 'sample.values.$n' "$B/gpumem-sample" ||
	{ fail "the sampler wrapper was not extended"; done_testing; }
site() {   # site [EXTRA YAML LINES]
	cat >"$t/site.yaml" <<YAML
version: 1
policy_dir: $t/policies
report:
  dir: $t/reports
check:
  timeout: 5
profile:
  interval_ms: 100
${1:-}
YAML
	chmod 644 "$t/site.yaml"
}
site
chmod 755 "$t/policies"; chmod 644 "$t"/policies/*.yaml
plugstack "$t/plug.conf" site=$t/site.yaml libexecdir=$B check=$t/standin-check nvidia_dev=$t/nvidiactl
printf '#!/bin/sh\nexec %s epilog --site %s 2>>%s\n' "$ACCT" "$t/site.yaml" "$t/acct.log" >"$t/epilog"
chmod 755 "$t/epilog"
values() { echo "$1" >"$B/sample.values"; rm -f "$B/sample.values1" "$B"/sample.values.gpumem*; [ -z "${2:-}" ] || echo "$2" >"$B/sample.values1"; }
# node_values NODE1 NODE2: GPU 0's figures on gpumem1 and on gpumem2 (GPU 1: none).
node_values() { values "$1"; echo "$1" >"$B/sample.values.gpumem1"; echo "$2" >"$B/sample.values.gpumem2"; chmod 644 "$B"/sample.values.gpumem*; }
FAULT="dram=5,sm=20,occ=10,pcie_rx=5.4,pcie_tx=4,mem=7.5"       # faulting -> zerocopy.yaml
LINK="dram=5,sm=20,occ=10,pcie_rx=45,pcie_tx=0.1,mem=7.5"       # link-bound (no more faults)
HBM="dram=90,sm=50,occ=30,pcie_rx=0.1,pcie_tx=0.1,mem=7.5"      # hbm-bound -> stream.yaml
IDLE="dram=0,sm=0,occ=0,pcie_rx=0,pcie_tx=0,mem=0.5"            # idle (no policy under advised)

t0=$(date +%s%N)
if ! "$CL" start --nodes 2 --gpus 2 --accounting --epilog "$t/epilog" --plugstack "$t/plug.conf" >"$t/start.log" 2>&1; then
	why=$(grep -m1 'MariaDB cannot start here' "$t/start.log")
	[ -n "$why" ] && skip_all "${why#cluster: error: --accounting: }"
	cat "$t/start.log" >&2
	fail "the local Slurm with accounting did not start"
	done_testing
fi
diag "start --accounting took $((($(date +%s%N) - t0) / 1000000)) ms"
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
# job NAME SECONDS [SBATCH OPTIONS...]: a batch job of that name as the test
# user on gpumem1 (NODES=... -N2: on gpumem1 and gpumem2, with a WRAP whose
# step reaches both: the prolog runs where a step does), waited for (its
# records); its id in $jid, sbatch's stderr and the job's output in $out.
# The job's duration and exit status come from files of its name (RC=N:
# exit N), so the runs of a name run one command, as the judge wants.
job() {
	local name=$1 secs=$2 nds d
	d=$GPUMEM_CLUSTER_TMP/job.$(printf '%s' "$1" | md5sum | cut -c1-16)
	shift 2
	echo "$secs" >"$d.secs"
	echo "${RC:-0}" >"$d.rc"
	chmod 644 "$d.secs" "$d.rc"
	run asuser sbatch -N1 -w "${NODES:-gpumem1}" -J "$name" --gres=gpu:1 -o "$GPUMEM_CLUSTER_TMP/out.%j" "$@" \
		--wrap "${WRAP:-echo \"policy=\$GPUMEM_POLICY\"; sleep \$(cat $d.secs); exit \$(cat $d.rc)}"
	jid=$(printf '%s\n' "$out" | sed -n 's/^Submitted batch job \([0-9][0-9]*\).*/\1/p')
	[ -n "$jid" ] || { fail "sbatch -J $name gave no job: $out"; return 1; }
	IFS=, read -ra nds <<<"${NODES:-gpumem1}"
	acct_wait_record "$jid" "${nds[@]}"
	out="$out
$(cat "$GPUMEM_CLUSTER_TMP/out.$jid" 2>/dev/null)"
}

# --- no history: one line, the site's defaults, the job runs ---------------------------
values "$FAULT"
job train 12 --gpumem-policy=advised
is "$rc" 0 "advised with no history: the job runs"
like "$out" "gpumem: advised: no profiled job named train in the last 30 days: site defaults" "... and one line says why it got the site's defaults"
like "$out" "^policy=(site defaults)?$" "... the site's defaults"
j1=$jid

# --- history: job 2 gets job 1's advice, the line names job 1 ------------------------------
values "$LINK"
job train 5 --gpumem-policy=advised
is "$rc" 0 "advised with history: the job runs"
like "$out" "gpumem: advised: zerocopy.yaml, from job $j1 on gpumem1 \(faulting: managed memory moved page by page" "... zerocopy.yaml, from job $j1, rule faulting"
like "$out" "policy=zerocopy.yaml \(advised from job $j1: faulting\)" "... the job runs with it (GPUMEM_POLICY)"
j2=$jid
run asuser "$GM" job "$j2"
like "$out" "policy zerocopy.yaml \(advised from job $j1: faulting\)" "the job's record says it ran advised, from which job and rule"

# --- the loop: job 2 gained (12 s -> 5 s of work, no more faults): kept ----------------------
job train 2 --gpumem-policy=advised
like "$out" "gpumem: advised: zerocopy.yaml, from job $j1 on gpumem1 \(faulting: .*; kept: zerocopy.yaml tried in job $j2 .*x faster: work [0-9]+ s against [0-9]+ s .*: kept" "a run that gained: kept, still from job $j1"
run asuser "$GM" advise "$j2"
like "$out" "zerocopy.yaml tried in job $j2 \(advised from job $j1, faulting\): [0-9.]+x faster: work .*gpumem's own time .*: kept" "gpumem advise shows the history: kept, gpumem's own time apart"

# --- the loop: a run that lost is on probation -----------------------------------------------
values "$FAULT"
job lose 6
l1=$jid
values "$LINK"
job lose 14 --gpumem-policy=advised
like "$out" "zerocopy.yaml, from job $l1" "job 2 of 'lose' is advised zerocopy.yaml"
l2=$jid
values "$FAULT"
job lose 1 --gpumem-policy=advised
like "$out" "gpumem: advised: zerocopy.yaml, from job $l1 .*; on probation: zerocopy.yaml tried in job $l2 \(advised from job $l1, faulting\): 0\.[0-9]+x \(slower\): work .*: on probation \(one loss; another in a row drops it\)" \
	"a run that lost: on probation, the line says so"
like "$out" "policy=zerocopy.yaml \(advised from job $l1: faulting\)" "... the policy still applies"
run asuser "$GM" advise "$l2"
like "$out" "zerocopy.yaml tried in job $l2 .*: on probation" "gpumem advise shows the history: on probation"
# The same history as fields: gpumem advise JOBID --json, and --mine --json per name.
run asuser "$GM" advise "$l2" --json
is "$rc" 0 "gpumem advise JOBID --json: exit 0" || diag "$out"
is "$(printf '%s' "$out" | json_in '(d[0]["history"]["name"], d[0]["history"]["days"], [(r["job"], r["policy"], r["from_job"], r["rule"], r["verdict"], r["outcome"], r["ratio"] < 0.97, r["elapsed_s"] > r["from_elapsed_s"]) for r in d[0]["history"]["runs"] if r["job"] == '"$l2"'])')" \
	"('lose', 30, [($l2, 'zerocopy.yaml', $l1, 'faulting', 'probation', 'slower', True, True)])" \
	"... --json: the history as fields (job, policy, from_job, rule, verdict, outcome, ratio, elapsed)"
like "$(printf '%s' "$out" | json_in '[r["text"] for r in d[0]["history"]["runs"] if r["job"] == '"$l2"'][0]')" "^zerocopy.yaml tried in job $l2 \(advised from job $l1, faulting\): 0\.[0-9]+x \(slower\)" "... and its sentence"
run asuser "$GM" advise "$j2" --json
is "$(printf '%s' "$out" | json_in '[(r["job"], r["from_job"], r["verdict"], r["outcome"], r["ratio"] >= 1) for r in d[0]["history"]["runs"] if r["job"] == '"$j2"']')" \
	"[($j2, $j1, 'kept', 'gained', True)]" "... a run that gained: kept, gained"
run asuser "$GM" advise --mine --json
is "$(printf '%s' "$out" | json_in '[(r["job"], r["verdict"], r["outcome"]) for n in d["names"] if n["name"] == "lose" for r in n["history"] if r["job"] == '"$l2"']')" \
	"[($l2, 'probation', 'slower')]" "advise --mine --json: each name's history"
run asuser "$GM" advise --mine
like "$out" "tried: zerocopy.yaml tried in job $l2 \(advised from job $l1, faulting\): .*: on probation" "advise --mine: the history under the name"
# A run that stays faulting with the policy is a loss, however fast.
values "$FAULT"
job still 6
s1=$jid
job still 6 --gpumem-policy=advised
s2=$jid
run asuser srun -N1 -J still --gpumem-policy=advised true
like "$out" "zerocopy.yaml tried in job $s2 .*; still faulting; .*: on probation" "a run still faulting under the policy: a loss, on probation"

# --- the judge: comparable runs only, a noise floor, two losses in a row -----------------------
# stream.yaml (hbm-bound) promises no speed-up: judged on "not slower than the noise".
values "$HBM"
job noisy 10
nz1=$jid
diag "sacct SubmitLine|WorkDir of job $nz1: $(sacct -X -n -P -j "$nz1" -o SubmitLine,WorkDir)"
job noisy 10
nz2=$jid
job noisy 15 --gpumem-policy=advised
like "$out" "gpumem: advised: stream.yaml, from job $nz2" "noisy: advised stream.yaml from the newest default run"
a1=$jid
WRAP=true job noisy 0 --gpumem-policy=advised
t1=$jid
like "$out" "; on probation: stream.yaml tried in job $a1 \(advised from job $nz2, hbm-bound\): 0\.[0-9]+x \(slower\): work 1[5-9] s against 1[0-2] s \(median of 2, noise 2 s\).*: on probation \(one loss; another in a row drops it\)" \
	"one loss (10 s -> 15 s of work, the same profile): still advised, on probation, the line says so"
unlike "$out" "x faster" "... a rule that promises no speed-up never says N times faster"
run asuser "$GM" advise "$t1" --json
is "$(printf '%s' "$out" | json_in '[(r["verdict"], r["ratio"], "not judged: " in r["text"] or "not counted: another command" in r["text"]) for r in d[0]["history"]["runs"] if r["job"] == '"$t1"']')" \
	"[('not judged', None, True)]" "\`true\` under an advised name: not judged (another command), no ratio"
job noisy 15 --gpumem-policy=advised
a2=$jid
run asuser srun -N1 -J noisy --gres=gpu:1 --gpumem-policy=advised true
like "$out" "gpumem: advised: job $nz2 advises stream.yaml \(hbm-bound\), but stream.yaml tried in job $a2 .*: a second loss in a row: not advised again: site defaults" \
	"a second comparable loss in a row (the \`true\` between was not judged): dropped"
# A failed advised run where the default runs completed: dropped at once.
values "$HBM"
job failx 6
fx1=$jid
RC=3 job failx 6 --gpumem-policy=advised
fx2=$jid
run asuser srun -N1 -J failx --gres=gpu:1 --gpumem-policy=advised true
like "$out" "but stream.yaml tried in job $fx2 \(advised from job $fx1, hbm-bound\): it failed where the runs under the site's defaults completed: clear harm: not advised again: site defaults" \
	"an advised run that failed: dropped at once"
# Another GPU count: not judged.
values "$HBM" "$HBM"
job gcount 6
g1=$jid
job gcount 6 --gres=gpu:2 --gpumem-policy=advised
g2=$jid
run asuser "$GM" advise "$g2" --json
is "$(printf '%s' "$out" | json_in '[(r["verdict"], r["ratio"]) for r in d[0]["history"]["runs"] if r["job"] == '"$g2"']')" \
	"[('not judged', None)]" "a run on another GPU count: not judged"
like "$(printf '%s' "$out" | json_in '[r["text"] for r in d[0]["history"]["runs"] if r["job"] == '"$g2"'][0]')" "not judged: no comparable run under the site's defaults \(another GPU count\)" "... and why"
values "$FAULT"

# --- several GPUs disagreeing: a used GPU's advice wins over an idle one's ------------------
values "$IDLE" "$HBM"
job multi 2 --gres=gpu:2
m1=$jid
run asuser srun -N1 -J multi --gres=gpu:2 --gpumem-policy=advised sh -c 'echo "policy=$GPUMEM_POLICY"'
like "$out" "gpumem: advised: stream.yaml, from job $m1 on gpumem1 \(hbm-bound:" "GPU 0 idle, GPU 1 HBM-bound: stream.yaml (idle never wins over a used GPU)"
values "$HBM" "$FAULT"
job multi2 2 --gres=gpu:2
m2=$jid
run asuser srun -N1 -J multi2 --gres=gpu:2 --gpumem-policy=advised true
like "$out" "gpumem: advised: zerocopy.yaml, from job $m2 on gpumem1 \(faulting:" "GPU 0 HBM-bound, GPU 1 faulting: zerocopy.yaml (the rule earliest in the order)"

# --- several nodes disagreeing: the same rule over every node's record ----------------------
node_values "$IDLE" "$HBM"
NODES=gpumem1,gpumem2 WRAP="srun -N2 sleep 3" job nodes 2 -N2
n1=$jid
run asuser "$GM" job "$n1"
like "$out" "2 node records" "a 2-node job: a record per node in AdminComment" || diag "$out"
run asuser srun -N1 -w gpumem1 -J nodes --gpumem-policy=advised true
like "$out" "gpumem: advised: stream.yaml, from job $n1 on gpumem2 \(hbm-bound:" "gpumem1 idle, gpumem2 HBM-bound: stream.yaml from gpumem2 (a used GPU wins over an idle node)"
node_values "$HBM" "$FAULT"
NODES=gpumem1,gpumem2 WRAP="srun -N2 sleep 3" job nodes2 2 -N2
n2=$jid
run asuser srun -N1 -w gpumem1 -J nodes2 --gpumem-policy=advised true
like "$out" "gpumem: advised: zerocopy.yaml, from job $n2 on gpumem2 \(faulting:" "gpumem1 HBM-bound, gpumem2 faulting: zerocopy.yaml from gpumem2 (the rule earliest in the order, not the first node)"
node_values "$HBM" "$HBM"
NODES=gpumem1,gpumem2 WRAP="srun -N2 sleep 3" job nodes3 2 -N2
n3=$jid
run asuser srun -N1 -w gpumem1 -J nodes3 --gpumem-policy=advised true
like "$out" "gpumem: advised: stream.yaml, from job $n3 on gpumem[12] \(hbm-bound:" "both nodes HBM-bound: stream.yaml"
first=$(asuser "$GM" job "$n3" --json | json_in 'd[0]["nodes"][0]["node"]')
like "$out" "from job $n3 on $first \(" "... a tie: the first node in AdminComment ($first)"
values "$FAULT"

# --- a job name with shell and terminal metacharacters --------------------------------------
evil=$(printf 'x;$(touch %s/pwned)`id`|&>\033]0;T\007\033[31m%%s"'"'" "$t")
values "$FAULT"
job "$evil" 2
e1=$jid
job "$evil" 2 --gpumem-policy=advised
is "$rc" 0 "a job name with shell and terminal metacharacters: the job runs"
like "$out" "gpumem: advised: zerocopy.yaml, from job $e1 on gpumem1" "... its own history is found (the name is matched exactly)"
[ -e "$t/pwned" ] && fail "... the name reached a shell" || pass "... the name never reaches a shell"
unlike "$out" "$(printf '\033')|$(printf '\007')" "... no control character reaches the terminal"
job "$evil 2" 1 --gpumem-policy=advised
like "$out" "gpumem: advised: no profiled job named x;\\\$\(touch .*\?\]0;T\?\?\[31m%s.* in the last 30 days" "... and the line names it, cleaned"
# (No C1 control in a name here: a job named "c1\302\233[2J" made this host's
# MariaDB 10.11.19 crash with signal 11 on slurmdbd's select of the job, and
# the rest of the suite with it.  gpumem matches such a name itself: unit
# test test_advised.)

# --- a forged or oversized AdminComment: refused, the site's defaults --------------------
job forged 2
sacctmgr -i modify job where jobid="$jid" set AdminComment='{~!!!!!~} {~,,zz~}' >/dev/null
run asuser srun -N1 -J forged --gpumem-policy=advised true
is "$rc" 0 "forged records: the job runs"
like "$out" "gpumem: advised: no profiled job named forged in the last 30 days \(its records have no profile, or were refused\): site defaults" "... the records are refused, the site's defaults"
job forged2 2
big="{~$(head -c 9000 /dev/zero | tr '\0' '!')~}"
sacctmgr -i modify job where jobid="$jid" set AdminComment="$big" >/dev/null
run asuser srun -N1 -J forged2 --gpumem-policy=advised true
is "$rc" 0 "an oversized record: the job runs"
like "$out" "gpumem: advised: no profiled job named forged2 .*its records have no profile, or were refused\): site defaults" "... the record is refused, the site's defaults"

# --- a forged label changes nothing: the record's fields decide (advsrc.h) ------------------
# A policy file named like the label: the record's "policy" reads "z (advised
# from job N: faulting).yaml", which a reader of labels took for an advised run.
values "$FAULT"
job forge 2
f1=$jid
forged="z (advised from job $f1: faulting).yaml"
asuser cp "$t/policies/stream.yaml" "$GPUMEM_CLUSTER_TMP/$forged"
values "$LINK"
job forge 2 --gpumem-policy="$forged"
is "$rc" 0 "a policy file named like an advised label: the job runs"
f2=$jid
run asuser "$GM" job "$f2"
like "$out" "policy z \(advised from job $f1: faulting\)" "... its record carries the forged label"
run asuser "$GM" advise "$f2" --json
is "$(printf '%s' "$out" | json_in 'd[0]["history"]["runs"]')" "[]" "... but it is no advised run: no history"
run asuser srun -N1 -J forge --gpumem-policy=advised true
unlike "$out" "z tried|advised: z," "... and the lookup never takes z for an advised policy"

# --- sbatch, and the site's default ----------------------------------------------------
run asuser sbatch -J train --gpumem-policy=advised -o /dev/null --wrap true
like "$out" "gpumem: advised: zerocopy.yaml, from job $j1" "sbatch: the same lookup, the same line"
run asuser salloc -N1 -J train --gpumem-policy=advised true
like "$out" "gpumem: advised: zerocopy.yaml, from job $j1" "salloc: the same lookup, the same line"
site "$(printf 'advised:\n  by_default: true')"
run asuser srun -N1 -J train --gres=gpu:1 sh -c 'echo "policy=$GPUMEM_POLICY"'
like "$out" "gpumem: advised by default: zerocopy.yaml, from job $j1" "advised.by_default: true (all): no option is advised"
like "$out" "policy=zerocopy.yaml \(advised" "... and the job runs with it"
run asuser srun -N1 -J train --gres=gpu:1 --gpumem-policy=stream sh -c 'echo "policy=$GPUMEM_POLICY"'
unlike "$out" "gpumem: advised" "... a named policy is not advised"
site

# --- the hint: a named policy (or none) that the name's last advice differs from ----------
site "$(printf 'advised:\n  hint: true')"
mkdir -m 700 "$t/cache" && chown "$GPUMEM_TEST_USER" "$t/cache"
hint() { run asuser env XDG_CACHE_HOME="$t/cache" ${NOHINT:+GPUMEM_NO_HINT=1} srun -N1 --gres=gpu:1 "$@" true; }
hint -J train --gpumem-policy=stream
like "$out" "gpumem: hint: jobs named train were last advised zerocopy.yaml \(faulting, from job $j1\); you asked for stream; --gpumem-policy=advised follows the advice" \
	"the hint: one line on the user's own srun"
is "$(printf '%s\n' "$out" | grep -c 'gpumem: hint')" 1 "... one line"
hint -J train --gpumem-policy=stream
unlike "$out" "gpumem: hint" "... once per name"
hint -J train
unlike "$out" "gpumem: hint" "... once per name, whatever the policy"
is "$(stat -c '%a %U' "$t/cache/gpumem/hints")" "600 $GPUMEM_TEST_USER" "... remembered in the user's own cache (0600)"
unlike "$(cat "$t/cache/gpumem/hints")" "train" "... which keeps no job name"
NOHINT=1 hint -J multi2
unlike "$out" "gpumem: hint" "GPUMEM_NO_HINT=1 hides it"
hint -J multi2
like "$out" "gpumem: hint: jobs named multi2 were last advised zerocopy.yaml .*you asked for the site's defaults" "no policy asked: the hint names the site's defaults"
hint -J multi --gpumem-policy=stream
unlike "$out" "gpumem: hint" "the policy asked is the advice's: no hint"
hint -J nohistory --gpumem-policy=stream
unlike "$out" "gpumem: hint" "no history: no hint"
# ... but not for good: a name looked up before its first profiled job is
# looked up again another day (at most one query a day), then hinted.
hf=$t/cache/gpumem/hints
grep -Eqx '[0-9a-f]{16} [0-9]+' "$hf" && pass "... noted for today only (HASH DAY)" || fail "... noted for today only (HASH DAY): $(cat "$hf")"
n0=$(wc -l <"$hf")
hint -J nohistory --gpumem-policy=stream
is "$(wc -l <"$hf")" "$n0" "... not looked up again the same day"
values "$FAULT"
run asuser env XDG_CACHE_HOME="$t/cache" sbatch -N1 -w gpumem1 -J nohistory --gres=gpu:1 -o /dev/null --wrap 'sleep 5'
jid=$(printf '%s\n' "$out" | sed -n 's/^Submitted batch job \([0-9][0-9]*\).*/\1/p')
unlike "$out" "gpumem: hint" "... its first profiled job, the same day: no query, no hint"
[ -n "$jid" ] && acct_wait_record "$jid" gpumem1
awk '{ if (NF == 2) $2 = $2 - 1; print }' "$hf" >"$t/hints.prev" && cat "$t/hints.prev" >"$hf"
hint -J nohistory --gpumem-policy=stream
like "$out" "gpumem: hint: jobs named nohistory were last advised zerocopy.yaml \(faulting, from job $jid\); you asked for stream" \
	"... the next day, with that job's profile: hinted"
hint -J nohistory --gpumem-policy=stream
unlike "$out" "gpumem: hint" "... once"
site

# --- accounting down: a clear line, the site's defaults, the job is not failed ---------------
dbd=$(pgrep -f "slurmdbd.*$GPUMEM_CLUSTER_DIR" | head -1)
for p in $(pgrep -x slurmdbd); do
	grep -qzxF "GPUMEM_CLUSTER_DAEMON=$GPUMEM_CLUSTER_DIR" /proc/"$p"/environ 2>/dev/null && dbd=$p
done
if [ -n "$dbd" ]; then
	kill "$dbd"
	run asuser srun -N1 -J train --gres=gpu:1 --gpumem-policy=advised sh -c 'echo "policy=$GPUMEM_POLICY"'
	is "$rc" 0 "accounting down: the job runs"
	like "$out" "gpumem: advised: Slurm's accounting did not answer \(sacct: .*\); advised needs accounting \(slurmdbd\): site defaults" "... one clear line"
	like "$out" "^policy=(site defaults)?$" "... with the site's defaults"
else
	fail "this cluster's slurmdbd was not found"
fi
done_testing
