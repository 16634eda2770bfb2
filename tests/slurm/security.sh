#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What a hostile user can do to root's side (issue 13), on a real local
# Slurm, every attack run as the unprivileged test user:
#   1. a job variable (ENVIRONMENT=BATCH) must not switch off a check that
#      the site requires;
#   2. helpers start with an empty signal mask and default dispositions, so
#      their own alarm()-based --timeout fires;
#   3. root never writes through a directory a user made (symlink or own dir);
#   4. a forwarded policy name (and a check's reason) cannot forge log lines
#      or put terminal escapes into the log or a report;
#   6. forwarded data over the cap fails the step, saying why;
#   7. the quick start's printed stop command stops the quick start's cluster;
#   S3. a FIFO in place of the per-job MPS daemon's pid file (the user's own
#      directory, read by root at teardown) does not hang slurmstepd.
# The GPU check is played by tests/slurm/standin-check behind a wrapper that
# records its signal state (CI has no GPU); everything else is real.
. "$top_srcdir/tests/lib.sh"
slurm_test security
"$CL" adduser >/dev/null 2>&1
user=${GPUMEM_TEST_USER:-gpumemtest}
mkdir -p "$t/fail" "$t/mode" "$t/sigs" "$t/pub" "$t/victim"
chmod 777 "$t/sigs"
chmod 1777 "$t/pub"        # like /tmp: anyone may create entries
slurm_standin
cat >"$t/check" <<'PL'
#!/usr/bin/perl
# Stand-in for gpumem-check: records the signal state it was started with
# (perl, not sh: dash clears its signal mask at startup), then either
# behaves like gpumem-check's --timeout (alarm, default action) or runs
# tests/slurm/standin-check.
use File::Basename;
my $d = dirname($0);
my $node = $ENV{SLURMD_NODENAME} // 'node';
if (open(my $s, '<', '/proc/self/status') && open(my $o, '>>', "$d/sigs/$node")) {
	print $o grep { /^Sig(Blk|Ign):/ } <$s>;
}
if (-e "$d/mode/alarm") {
	my $to = 60;
	for my $i (0 .. $#ARGV - 1) { $to = $ARGV[$i + 1] if $ARGV[$i] eq '--timeout'; }
	alarm $to;
	sleep 30;
	exit 0;
}
exec "$d/standin-check", @ARGV;
PL
chmod 755 "$t/check"
# Stand-in nvidia-cuda-mps-control: -f runs the "daemon" (its pid in the pid
# file where the real one keeps one, and in mpspids for the cleanup) and
# makes its control socket's name; "quit" on stdin stops it.
mkdir -p "$t/mpspids" && chmod 777 "$t/mpspids"
cat >"$t/mpsctl" <<'SH'
#!/bin/sh
d=$(dirname "$0")
if [ "$1" = -f ]; then
	echo $$ >"$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid"
	echo $$ >"$CUDA_MPS_LOG_DIRECTORY/standin.pid"
	echo $$ >"$d/mpspids/$$"
	: >"$CUDA_MPS_PIPE_DIRECTORY/control"
	trap 'kill $! 2>/dev/null; exit 0' TERM
	while :; do sleep 60 & wait $!; done
fi
# (the real one reaches its daemon through the pipe, never the pid file)
read -r cmd
[ "$cmd" = quit ] && kill "$(cat "$CUDA_MPS_LOG_DIRECTORY/standin.pid" 2>/dev/null)" 2>/dev/null
exit 0
SH
chmod 755 "$t/mpsctl"
printf 'version: 1\nmps:\n  daemon: job\n' >"$t/mps.yaml"
chmod 644 "$t/mps.yaml"

# The site requires checks before (failing the job) and after, and keeps the check
# section closed to users: nothing the user sets may switch it off.
site_requiring_checks "$t/site.yaml" "$t/pub/reports" 2 "$t/pub/textfile"
chmod 644 "$t/site.yaml"
# No GRES on this node: gpus=all (a job may use every GPU of the node).
plugstack "$t/plugstack.conf" site=$t/site.yaml libexecdir=$(helpers_libexec) check=$t/check nvidia_dev=$t/nvidiactl mps_control=$t/mpsctl gpus=all
chmod 644 "$t/plugstack.conf"
"$CL" start --nodes 1 --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
LOG="$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log"
U() { "$CL" runas "$@"; }
newlog() { tail -c +"$(($1 + 1))" "$LOG"; }
logsize() { stat -c %s "$LOG"; }

# --- 3. root never writes through a directory a user made ---------------------
# report.dir and textfile_dir are missing under a world-writable sticky
# directory: the user plants a symlink to a root-owned directory, and a
# directory of their own.
U ln -s "$t/victim" "$t/pub/reports"
U mkdir "$t/pub/textfile"
U chmod 777 "$t/pub/textfile"
run U srun -N1 sh -c 'echo "job=$SLURM_JOB_ID"'
is "$rc" 0 "symlinked report.dir: the job still runs"
jid=$(jobid_of "$out")
sleep 1
is "$(ls -A "$t/victim")" "" "symlinked report.dir: root wrote nothing through the user's link"
is "$(ls -A "$t/pub/textfile")" "" "user-owned textfile_dir: root wrote nothing into it"
like "$(grep -a "gpumem: report" "$LOG")" "report directory $t/pub/reports.*(symbolic link|not a directory)" "... and the log says why"
like "$(grep -a "gpumem:.*textfile" "$LOG")" "$t/pub/textfile.*owned by uid" "... for the textfile directory too"
U rm -rf "$t/pub/reports" "$t/pub/textfile"
# A directory root creates itself is safe, and used.
run U srun -N1 sh -c 'echo "job=$SLURM_JOB_ID"'
jid=$(jobid_of "$out")
f="$t/pub/reports/job$jid.prolog.gpumem1.before.json"
for _ in $(seq 1 240); do [ -f "$f" ] && break; sleep 0.25; done
[ -f "$f" ] && pass "a report.dir that root creates itself is used" || fail "report $f"
is "$(stat -c '%u %a' "$t/pub/reports" 2>&1)" "0 755" "... root-owned, mode 755"

# --- 1. a job variable cannot switch off the site's check ------------------
touch "$t/fail/gpumem1"
run U srun -N1 echo ran
[ "$rc" -ne 0 ] && pass "site-required check.before fails the step" || fail "site-required check.before fails the step"
for v in ENVIRONMENT=BATCH SLURM_STEP_ID=4294967291 SLURM_SCRIPT_CONTEXT=batch; do
	run U env "$v" srun -N1 echo ran
	[ "$rc" -ne 0 ] && pass "$v srun: the check still runs and fails the step" || fail "$v srun: the step ran unchecked"
	unlike "$out" "^ran$" "... $v: the task did not run"
	like "$out" "GPU check before the job failed" "... $v: saying why"
done
run U sbatch --wait -o "$t/pub/batch.out" --wrap 'ENVIRONMENT=INTERACTIVE srun -N1 echo step-ran; echo script-ran'
[ "$rc" -ne 0 ] && pass "sbatch: the batch step's check fails the job" || fail "sbatch: the batch step's check fails the job"
unlike "$(cat "$t/pub/batch.out" 2>/dev/null)" "ran" "... nothing of the script ran"
rm -f "$t/fail/gpumem1"
jid=$(U sbatch --parsable --wait -o /dev/null --wrap 'srun -N1 true; srun -N1 true')
# Per job (issue 15): the job prolog and epilog check once, the batch step and its steps not again.
is "$(ls "$t/pub/reports" | grep "^job$jid\." | tr '\n' ' ')" "job$jid.epilog.gpumem1.after.json job$jid.prolog.gpumem1.before.json " \
	"a passing batch job: checked once, by the job prolog and epilog, its steps not again"

# --- S1. a required check the user kills counts as failed, never as a pass --
touch "$t/fail/killed"
run U srun -N1 echo ran
[ "$rc" -ne 0 ] && pass "S1: a killed site-required before-check fails the step" || fail "S1: a killed before-check let the step run"
unlike "$out" "^ran$" "... the task did not run"
like "$out" "did not finish \(counted as failed\).*killed by signal 9" "... saying why"
sleep 1
unlike "$(scontrol show node gpumem1 -o)" "State=[A-Z+]*DRAIN" "... and the node is not drained (a user must not drain nodes at will)"
rm -f "$t/fail/killed"

# --- 2. helpers start with an empty signal mask, default dispositions -------
rm -f "$t/sigs"/*
run U srun -N1 true
# The after-check runs in the job epilog, after srun has returned.
for _ in $(seq 1 240); do [ "$(grep -c Sig "$t/sigs/gpumem1" 2>/dev/null)" -ge 4 ] && break; sleep 0.25; done
is "$(grep -c Sig "$t/sigs/gpumem1" 2>&1)" 4 "the before- and after-check recorded their signal state"
is "$(grep SigBlk "$t/sigs/gpumem1" | sort -u 2>&1)" "SigBlk:	0000000000000000" "the checks start with no signal blocked"
# perl ignores SIGFPE itself (its FPU set-up), so bit 8 is perl's, not inherited.
ign=$(grep SigIgn "$t/sigs/gpumem1" | while read -r _ m; do printf '%016x\n' $(( 0x$m & ~0x80 )); done | sort -u)
is "$ign" "0000000000000000" "... and none ignored (but SIGFPE, which perl ignores itself)"
touch "$t/mode/alarm"
start=$(date +%s%N)
run U srun -N1 sh -c 'echo "job=$SLURM_JOB_ID"'
took=$(( ($(date +%s%N) - start) / 1000000 ))
# A required before-check that did not finish counts as failed (S1): the
# step fails, so the job id comes from slurmctld.
[ "$rc" -ne 0 ] && pass "a before-check killed by its own alarm fails the step (S1)" || fail "a before-check killed by its own alarm fails the step (S1)"
jid=$(scontrol -o show jobs | sed -n 's/^JobId=\([0-9]*\) .*/\1/p' | sort -n | tail -1)
# Per job (issue 15): the after-check runs in the job epilog, after srun returned.
fa="$t/pub/reports/job$jid.epilog.gpumem1.after.json"
for _ in $(seq 1 240); do [ -f "$fa" ] && break; sleep 0.25; done
rm -f "$t/mode/alarm"
for phase in before after; do
	f="$t/pub/reports/job$jid.$([ $phase = before ] && echo prolog || echo epilog).gpumem1.$phase.json"
	for _ in $(seq 1 240); do [ -f "$f" ] && break; sleep 0.25; done
	is "$(json "$f" 'd["status"] + "|" + d["reason"]' 2>&1)" "failed|gpumem-check was killed by signal 14" \
		"$phase-check: its own alarm() --timeout (2 s) fires, not the plugin's kill at 7 s"
done
diag "the step with two alarmed checks took ${took} ms"

# --- 4. user strings are escaped before they reach the log or a report -----
forged=$'x\ngpumem: check before job 1.0 node gpumem1 GPUs 0: pass FORGED\n\e[2J\e]0;owned\a'
n=$(logsize)
run U env SPANK_GPUMEM_POLICY_DATA='{"version": 1, "l2": {"persisting_limit": "10%"}}' \
	SPANK_GPUMEM_POLICY_NAME="$forged" srun -N1 sh -c 'echo "job=$SLURM_JOB_ID"'
is "$rc" 0 "a forwarded policy with a hostile name runs"
jid=$(jobid_of "$out")
sleep 1
l=$(newlog "$n")
unlike "$l" "^gpumem: check before job 1.0" "no forged line in slurmd's log"
unlike "$(printf '%s' "$l" | grep -ac $'\e')" "^[1-9]" "no ESC byte reaches slurmd's log"
like "$l" 'policy x\\ngpumem: check before job 1\.0 .* FORGED\\n\\x1b\[2J\\x1b\]0;owned\\x07 \(as forwarded\)' "the name is logged with visible escapes"
f="$t/pub/reports/job$jid.prolog.gpumem1.before.json"
for _ in $(seq 1 240); do [ -f "$f" ] && break; sleep 0.25; done
is "$(json "$f" 'any(ord(c) < 32 or ord(c) == 127 for c in d["policy"])' 2>&1)" "False" "the report's policy field holds no control character"
# The check runs as the user, who can make it print anything.
cat >"$t/output" <<'JSON'
{"schema":"gpumem-check/1","devices":[{"index":"0\ngpumem: FORGED-INDEX","uuid":"GPU-1","verdict":"fail","reasons":["bad\ngpumem: FORGED-REASON \u001b[31m"]}],"overall":{"verdict":"fail","exit_code":2,"reason":null}}
JSON
chmod 644 "$t/output"
n=$(logsize)
run U srun -N1 true
rm -f "$t/output"
l=$(newlog "$n")
unlike "$l" "^gpumem: FORGED" "a check's reason cannot forge a log line"
unlike "$(printf '%s' "$l" | grep -ac $'\e')" "^[1-9]" "... nor send ESC to the log"
like "$l" 'bad\\ngpumem: FORGED-REASON \\x1b\[31m' "... it is logged with visible escapes"

# --- 6. forwarded data over the cap fails the step, saying why ---------------
big=$(printf '{"version": 1, "l2": {"persisting_limit": "10%%"}}%70000s' "")
n=$(logsize)
run U env SPANK_GPUMEM_POLICY_DATA="$big" srun -N1 echo ran
[ "$rc" -ne 0 ] && pass "forwarded policy of 70 KB: the step fails" || fail "forwarded policy of 70 KB: the step ran"
unlike "$out" "^ran$" "... the task did not run"
like "$out" "forwarded policy .*larger than the 65536-byte limit" "... the user is told why"
like "$(newlog "$n")" "forwarded policy .*larger than the 65536-byte limit" "... and so is slurmd's log"

# --- S3. a FIFO as the MPS pid file does not hang root at teardown ---------
start=$(date +%s)
run U timeout 60 srun -N1 --gpumem-policy="$t/mps.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; p=$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid; rm -f "$p"; mkfifo "$p" && echo fifo-made'
jid=$(jobid_of "$out")
like "$out" "fifo-made" "the task replaced the MPS pid file with a FIFO"
is "$rc" 0 "... the step still ends, in $(( $(date +%s) - start )) s (root does not open the FIFO)"
for _ in $(seq 1 120); do squeue -h -j "$jid" 2>/dev/null | grep -q . || break; sleep 0.5; done
is "$(squeue -h -j "$jid" 2>/dev/null)" "" "... and the job completes"
# Per job (issues 15, 23): the job's daemon lives in mps_dir, and the job epilog stops it.
for _ in $(seq 1 120); do [ -e "$GPUMEM_CLUSTER_MPS_DIR/job$jid" ] || break; sleep 0.5; done
[ -e "$GPUMEM_CLUSTER_MPS_DIR/job$jid" ] && fail "... its MPS directory (/run/gpumem-mps/job$jid) removed by the epilog" || pass "... its MPS directory (/run/gpumem-mps/job$jid) removed by the epilog"
for p in $(ls "$t/mpspids"); do kill "$p" 2>/dev/null; done

# --- 7. the quick start's hint stops the quick start's cluster ----------------
hint=$(sed -n 's/^\[ \$keep = yes \] && echo /echo /p' "$top_srcdir/contrib/quickstart" | tail -1)
msg=$(keep=yes top=$top_srcdir GPUMEM_CLUSTER_DIR=$GPUMEM_CLUSTER_DIR bash -c "$hint")
stop=$(printf '%s' "$msg" | sed -n 's/.*stop it with: //p')
like "$stop" "cluster stop" "the quick start prints a stop command"
(cd / && env -u GPUMEM_CLUSTER_DIR bash -c "$stop") >/dev/null 2>&1
"$CL" status >/dev/null 2>&1
[ $? -ne 0 ] && pass "... which, in a fresh shell, stops the quick start's cluster" || fail "... the cluster still runs after: $stop"
qs=$(sed -n 's/.*GPUMEM_CLUSTER_DIR:-\([^}]*\)}.*/\1/p' "$top_srcdir/contrib/quickstart" | head -1)
readme=$(sed -n 's/.*\(tests\/slurm\/cluster stop[^`]*\).*/\1/p' "$top_srcdir/README.md")
like "$readme" "stop --dir $qs$" "README's stop command names the quick start's directory ($qs)"
done_testing
