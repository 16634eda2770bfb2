#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# One record per job (issue 33, item 2), on a real local Slurm: the job
# prolog decides the job's effective policy once and records it with the
# site file as it read it; the job's later steps and its epilog apply that
# record and never read the site file.  So an edit of the site file during
# a job (between its steps, before its epilog), or its removal, does not
# reach the job, and the next job gets the edit.  A job whose record is
# gone: its later steps fail and its epilog only cleans up, both saying why.
# No GPU here: the stand-ins of tests/slurm/standin*; gpumem-check's is
# wrapped to keep its arguments and what it got on standard input.
. "$top_srcdir/tests/lib.sh"
slurm_test record
B=$t/bin
mkdir -p "$t/reports" "$t/reports2"
standin_bin "$B"
: >"$B/check.args"
: >"$B/check.site"
chmod 666 "$B/check.args" "$B/check.site"
cat >"$B/check-wrap" <<SH
#!/bin/sh
echo "\$*" >>"$B/check.args"
cat >"$B/check.site"
exec "$B/standin-check" "\$@"
SH
chmod 755 "$B/check-wrap"
# site PCT AFTER DIR MAX: the site file, replaced whole: the defaults' MPS
# share, an after-check or not, the report directory, the largest share.
site() {
	cat >"$t/site.new" <<YAML
version: 1
limits:
  mps_max_active_thread_percentage: $4
defaults:
  mps:
    active_thread_percentage: $1
  check:
    after: $2
report:
  dir: $3
check:
  timeout: 20
YAML
	chmod 644 "$t/site.new"
	mv "$t/site.new" "$t/site.yaml"
}
site 30 true "$t/reports" 50
printf 'version: 1\nmps:\n  active_thread_percentage: 80\n' >"$t/own.yaml"
chmod 644 "$t/own.yaml"
plugstack "$t/plugstack.conf" site="$t/site.yaml" libexecdir="$B" check="$B/check-wrap" \
	nvidia_dev="$t/nvidiactl" mps_control="$B/nvidia-cuda-mps-control"
"$CL" start --nodes 1 --gpus 1 --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
LOG=$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log
PCT=CUDA_MPS_ACTIVE_THREAD_PERCENTAGE

# steps OUT CMD...: a job of three steps, each printing its MPS share, in
# OUT; CMD runs (as root) once the first step has ended, before the others.
# The third step has a policy of its own (share 80).
steps() {
	local out=$1 bg
	shift
	rm -f "$t/go"
	asuser salloc -N1 -w gpumem1 --gres=gpu:1 sh -c "echo job=\$SLURM_JOB_ID; srun printenv $PCT;
		while [ ! -e $t/go ]; do sleep 0.2; done; srun printenv $PCT; echo rc=\$?;
		srun --gpumem-policy=$t/own.yaml printenv $PCT" >"$out" 2>&1 &
	bg=$!
	for _ in $(seq 1 240); do grep -q '^[0-9]' "$out" && break; sleep 0.25; done
	"$@"
	touch "$t/go"
	wait "$bg"
	wait_idle gpumem1
}
# shares OUT FIRST LAST: the MPS shares the job's steps FIRST..LAST printed.
shares() { grep '^[0-9]' "$1" | sed -n "$2,$3p" | tr '\n' ' ' | sed 's/ $//'; }

# --- the site file edited between the job's steps and before its epilog ---------------
steps "$t/a.out" site 60 false "$t/reports2" 100
jid=$(jobid_of "$(cat "$t/a.out")")
is "$(shares "$t/a.out" 1 2)" "30 30" "site edited during the job: its later step keeps the share decided at the prolog"
is "$(shares "$t/a.out" 3 3)" "50" "... and a step's own policy (80) is clamped to the recorded site limit (50), not the edited one (100)"
f=$t/reports/job$jid.epilog.gpumem1.after.json
[ -f "$f" ] && pass "... its epilog still runs the after-check the prolog decided, reported in the recorded report.dir" ||
	fail "no after-check report $f ($(ls "$t/reports" "$t/reports2" | tr '\n' ' '))"
is "$(ls "$t/reports2" | grep -c "^job$jid\.")" 0 "... and nothing in the report.dir of the edited file"
is "$(json "$f" 'str(d["effective"]["mps"]["active_thread_percentage"]) + " " + str(d["effective"]["check"]["after"])' 2>&1)" \
	"30 True" "... the report's effective policy is the prolog's (share 30, after-check on)"
like "$(tail -1 "$B/check.args")" "--site -( |$)" \
	"the after-check gets the site file on standard input, never its path"
like "$(cat "$B/check.site")" "active_thread_percentage: 30" "... the file as the job prolog read it"
like "$(grep -a "job $jid\.1: policy" "$LOG")" "$PCT=30" \
	"slurmd's log: the second step set the recorded share"

# --- the next job gets the edit -----------------------------------------------------------
: >"$B/check.args"
run asuser srun -w gpumem1 --gres=gpu:1 sh -c 'echo "job=$SLURM_JOB_ID"; printenv '$PCT
jid=$(jobid_of "$out")
wait_idle gpumem1
like "$out" "^60$" "the next job gets the edited site file's share"
is "$(wc -l <"$B/check.args" | tr -d ' ')" 0 "... and no after-check (the edit switched it off)"

# --- the site file removed after the prolog ---------------------------------------------
site 30 true "$t/reports" 50
steps "$t/b.out" mv "$t/site.yaml" "$t/site.away"
jid=$(jobid_of "$(cat "$t/b.out")")
is "$(shares "$t/b.out" 1 3)" "30 30 50" "site file removed during the job: its later steps still run, with the recorded share and limit"
like "$(cat "$t/b.out")" "rc=0" "... and succeeds"
[ -f "$t/reports/job$jid.epilog.gpumem1.after.json" ] && pass "... its epilog still runs the after-check" ||
	fail "no after-check report for job $jid"
unlike "$(cat "$t/b.out"; grep -a "job $jid" "$LOG")" "site file unusable" "... and nothing of the job missed the file"
run asuser srun -w gpumem1 --gres=gpu:1 true
like "$out" "site file unusable on this node" "the next job, whose prolog has no site file, fails saying why"
wait_idle gpumem1
mv "$t/site.away" "$t/site.yaml"

# --- no record: the later steps fail, the epilog cleans up only (fail closed) -----------
: >"$B/check.args"
# As if the node had rebooted: the steps' record and the node's own, for its epilog.
# (GPUMEM_CLUSTER_STATE_DIR: where a cluster of its own /run keeps it, seen from here.)
forget() {
	local j
	j=$(jobid_of "$(cat "$t/c.out")")
	rm -f "${GPUMEM_CLUSTER_STATE_DIR:-/run/gpumem}/job$j".*.rec
}
steps "$t/c.out" forget
jid=$(jobid_of "$(cat "$t/c.out")")
like "$(cat "$t/c.out")" "the job prolog left no record of this job on this node" "record gone: the next step fails, saying why"
like "$(cat "$t/c.out")" "rc=[1-9]" "... with an error"
like "$(grep -a "job $jid: epilog" "$LOG")" "no record of job $jid .*cleanup only, no after-check" \
	"... the epilog logs that it only cleans up"
is "$(wc -l <"$B/check.args" | tr -d ' ')" 0 "... and runs no after-check"
done_testing
