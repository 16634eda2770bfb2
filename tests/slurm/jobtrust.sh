#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Trust boundaries, round three (issue 23): the per-job design's root side
# (the job prolog and epilog, the per-job MPS daemon, root's state_dir) as a
# hostile user sees it, on a real local Slurm with two stand-in GPUs (GRES),
# the plugin's defaults as installed (state_dir /run/gpumem, mps_dir
# /run/gpumem-mps, gpus=gres).  Every attack runs as the unprivileged test
# user.  Findings, numbered as in the issue:
#   1. a policy the prolog refuses (set in the job-control environment by
#      the user's own SPANK plugin) must not switch the site's checks off;
#   2. the per-job MPS daemon must not outlive the job, whatever the user
#      does to its directory;
#   3. the user must not be able to trace the daemon (and so steer it to a
#      GPU the job was not given);
#   4. a job Slurm gave no GPU on a GRES node gets no GPU work;
#   5. no scan of user-writable places: a user's 4000 look-alike
#      directories do not slow or drain the epilog;
#   6. helpers never reach a user's MPS daemon at /tmp/nvidia-mps (the node's
#      /tmp, never the host's: 5 and 6 give the node a /tmp of its own);
#   7. nothing of the user's in root's state_dir, and a state_dir root
#      cannot write fails the job, never runs it unchecked;
#   (round four, 5: the user lists and reads nothing in state_dir)
#   8. the defaults as installed (/run/gpumem: its fd would be 0 in the
#      prolog, whose stdin Slurm closes) work: every MPS job here uses them.
# Finding 9 (terminal controls) is tested where the strings are printed:
# tests/unit/test_trust.c, tests/cli/report.sh, tests/slurm/accounting.sh.
# Stand-ins for what needs a GPU (tests/slurm/standin*); Slurm is real.
. "$top_srcdir/tests/lib.sh"
slurm_test jobtrust
command -v cc >/dev/null || skip_all "no C compiler to build the user's own SPANK plugin"
U=${GPUMEM_TEST_USER:-gpumemtest}
B=$t/bin
mkdir -p "$t/reports" "$t/user"
standin_bin "$B"
site_requiring_checks "$t/site.yaml" "$t/reports"
printf 'version: 1\nmps:\n  daemon: job\n' >"$t/mps.yaml"
printf 'version: 1\nl2:\n  persisting_limit: 40%%\n  reset_at_exit: true\n' >"$t/l2.yaml"
chmod 644 "$t"/*.yaml
plug="required $so site=$t/site.yaml libexecdir=$B check=$B/standin-check nvidia_dev=$t/nvidiactl mps_control=$B/nvidia-cuda-mps-control"
echo "$plug" >"$t/plugstack.conf"
chmod 644 "$t/plugstack.conf"
GPUMEM_SLURM_CONF_EXTRA="PrologEpilogTimeout=10" "$CL" start --nodes 1 --gpus 2 --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
LOG="$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log"
# gone PID: no such process, or a zombie (it has ended; only its reaping is left).
gone() { [ ! -d "/proc/$1" ] || [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" = Z ]; }
last_job() { scontrol -o show jobs | sed -n 's/^JobId=\([0-9]*\) .*/\1/p' | sort -n | tail -1; }

# --- 1. a refused policy never switches the site's required checks off -----------
# The user's own slurm.conf loads their own SPANK plugin after gpumem in
# srun/sbatch/salloc; it puts garbage where gpumem forwarded the policy.
cc -shared -fPIC -Wall -Wextra -Werror -o "$t/user/jobenv.so" "$top_srcdir/tests/slurm/spank-jobenv.c" ||
	skip_all "the user's SPANK plugin does not build against this spank.h"
sed "s|^PlugStackConfig=.*|PlugStackConfig=$t/user/plugstack.conf|" "$SLURM_CONF" >"$t/user/slurm.conf"
printf '%s\noptional %s\n' "$plug" "$t/user/jobenv.so" >"$t/user/plugstack.conf"
chmod -R a+rX "$t/user"
touch "$B/fail/gpumem1"         # the GPU fails the site's required check
for garbage in 'garbage' '{"version": 1, "l2": {"presisting_limit": "10%"}}'; do
	run asuser env SLURM_CONF="$t/user/slurm.conf" JOBENV_GPUMEM_POLICY_DATA="$garbage" \
		SPANK_GPUMEM_POLICY_DATA='{"version": 1}' srun --gres=gpu:1 sh -c 'echo TASK-RAN'
	jid=$(last_job)
	[ "$rc" -ne 0 ] && pass "1: job-control policy '${garbage:0:20}': the step fails (exit $rc)" || fail "1: the step ran"
	unlike "$out" "TASK-RAN" "... its task does not run"
	like "$out" "policy rejected on this node" "... and srun says why"
	like "$(grep -a "job $jid: policy rejected" "$LOG")" "the site's defaults apply" "... slurmd's log: the site's defaults apply"
	wait_file "$t/reports/job$jid.epilog.gpumem1.after.json"
	is "$(json "$t/reports/job$jid.prolog.gpumem1.before.json" 'd["policy"] + "|" + d["verdict"]' 2>&1)" "site defaults|fail" "... the site's required before-check ran (and failed)"
	is "$(json "$t/reports/job$jid.epilog.gpumem1.after.json" 'd["verdict"]' 2>&1)" "fail" "... and its after-check too"
done
run asuser env SLURM_CONF="$t/user/slurm.conf" JOBENV_GPUMEM_POLICY_DATA=garbage \
	sbatch --wait --gres=gpu:1 -o "$GPUMEM_CLUSTER_TMP/batch.out" --wrap 'echo SCRIPT-RAN'
[ "$rc" -ne 0 ] && pass "1: sbatch, refused job-control policy: the batch job fails" || fail "1: the batch job ran"
like "$(cat "$GPUMEM_CLUSTER_TMP/batch.out" 2>&1)" "policy rejected on this node" "... its output says why"
unlike "$(cat "$GPUMEM_CLUSTER_TMP/batch.out" 2>/dev/null)" "SCRIPT-RAN" "... and nothing of its script ran"
rm -f "$B/fail/gpumem1"
wait_idle

# --- 2, 3, 7. the per-job MPS daemon: out of the user's reach, gone with the job --
cat >"$t/user/attack" <<'SH'
#!/bin/sh
# What the job's own task tries on its MPS daemon (run as the job's user).
d=$CUDA_MPS_PIPE_DIRECTORY
pid=$(cat "$d/nvidia-cuda-mps-control.pid")
echo "job=$SLURM_JOB_ID daemon=$pid"
mv "$d" "$d.moved" 2>/dev/null && echo RENAMED || echo RENAME-REFUSED
chmod 500 "$d" 2>/dev/null && echo CHMOD-DONE
"$(dirname "$0")/reach" "$pid"
dd if=/dev/zero of="$CUDA_MPS_LOG_DIRECTORY/fill" bs=1M count=64 2>&1 | grep -o "No space left on device" | head -1
# Round four, finding 5: root's state_dir is root's alone (the job's record,
# the MPS record, the probe cache exist while the step runs: it needs them).
ls /run/gpumem >/dev/null 2>&1 && echo STATE-LISTED || echo STATE-NOT-LISTED
for f in "/run/gpumem/job$SLURM_JOB_ID.$SLURMD_NODENAME.rec" "/run/gpumem/job$SLURM_JOB_ID.$(hostname).rec" "/run/gpumem/mps.$SLURM_JOB_ID.$(hostname)" /run/gpumem/probe.cache; do
	cat "$f" >/dev/null 2>&1 && echo "STATE-READ $f"
done
ls /run/gpumem-mps >/dev/null 2>&1 && echo MPSDIR-LISTED || echo MPSDIR-NOT-LISTED
SH
chmod 755 "$t/user/attack"
cp "$top_srcdir/tests/slurm/reach" "$t/user/reach"
run asuser srun --gres=gpu:1 --gpumem-policy="$t/mps.yaml" "$t/user/attack"
is "$rc" 0 "2: a job with a per-job MPS daemon runs (default state_dir and mps_dir: finding 8)"
jid=$(jobid_of "$out")
pid=$(printf '%s\n' "$out" | sed -n 's/.* daemon=//p')
like "$out" "RENAME-REFUSED" "2: the task cannot rename its MPS pipe directory (root's parent)"
like "$out" "PTRACE-DENIED Operation not permitted" "3: the task cannot ptrace the daemon (its real gid is not the user's)"
like "$out" "ENVIRON-DENIED" "3: ... nor read its environment"
if "$CL" exec mountpoint -q "/run/gpumem-mps/job$jid" 2>/dev/null || grep -a "job $jid: .*no tmpfs of its own" "$LOG" >/dev/null; then
	grep -aq "job $jid: .*no tmpfs of its own" "$LOG" && skip "7: the per-job tmpfs: the kernel refused the mount here ($(grep -a "job $jid: .*no tmpfs" "$LOG" | sed 's/.*mount: //'))" ||
		like "$out" "No space left on device" "7: filling the MPS log directory stops at its own tmpfs"
else
	like "$out" "No space left on device" "7: filling the MPS log directory stops at its own tmpfs"
fi
like "$out" "STATE-NOT-LISTED" "7 (round four, 5): during the job the user cannot list root's state_dir"
unlike "$out" "STATE-READ" "7 (round four, 5): ... nor read the job's record, the MPS record or the probe cache"
like "$out" "MPSDIR-NOT-LISTED" "7 (round four, 5): ... nor list mps_dir (the job's own pipe directory is reached: above)"
is "$(find "$GPUMEM_CLUSTER_STATE_DIR" ! -user root | wc -l) $(stat -c %a "$GPUMEM_CLUSTER_STATE_DIR") $(find "$GPUMEM_CLUSTER_STATE_DIR" -type f -perm /077 | wc -l)" "0 700 0" "7: nothing in root's state_dir is the user's; it is 0700 (the cluster made it 0755, as an older gpumem left it), its files 0600"
run "$CL" exec runuser -u "$U" -- sh -c 'ls /run/gpumem; cat /run/gpumem/probe.cache; ls /run/gpumem-mps'
is "$(printf '%s\n' "$out" | grep -c 'Permission denied')" 3 "7 (round four, 5): after the job, in the node's namespace, the user lists and reads nothing there"
wait_idle
[ -n "$pid" ] && gone "$pid" && pass "2: after the job the daemon ($pid) is gone, its pipe directory chmod 500 or not" ||
	fail "2: daemon $pid still there: $(ps -o pid,uid,stat,cmd -p "$pid" 2>&1 | tail -1)"
[ -e "$GPUMEM_CLUSTER_MPS_DIR/job$jid" ] && fail "2: its directory is removed" || pass "2: its directory is removed"
is "$(ls "$GPUMEM_CLUSTER_STATE_DIR" | grep -c "^\(job\|mps\.\)$jid")" 0 "2: ... and its records"
like "$(grep -a "job $jid: per-job MPS daemon $pid stopped" "$LOG")" "stopped \(" "2: the epilog stopped it by root's record (pid $pid), not through the user's files"

# --- 4. no GPU work for a job Slurm gave no GPU (gres node) ------------------------
: >"$B/runs"; : >"$B/probe.runs"; : >"$B/l2reset.runs"; : >"$B/check-l2reset.runs"
touch "$B/fail/gpumem1"
run asuser srun --gpumem-policy="$t/l2.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; echo TASK-RAN'
rm -f "$B/fail/gpumem1"
jid=$(jobid_of "$out")
wait_idle
like "$out" "TASK-RAN" "4: a job without GPUs on a GRES node runs (the failing GPUs are not its)"
is "$(cat "$B/runs" "$B/probe.runs" "$B/l2reset.runs" "$B/check-l2reset.runs" | wc -l)" 0 "4: ... and no check, probe or L2 reset ran for it"
is "$(ls "$t/reports" | grep -c "^job$jid\.")" 0 "4: ... and no report"
run asuser srun --gres=gpu:1 --gpumem-policy="$t/l2.yaml" true
wait_idle
is "$(wc -l <"$B/runs") $(cut -d' ' -f2 "$B/check-l2reset.runs" "$B/l2reset.runs")" "2 0" "4: a job with a GPU gets its checks and the L2 reset (by its after-check) on its GPU"

# --- 5, 6: the node's /tmp, never the host's ------------------------------------------
# What a user plants in /tmp for parts 5 and 6 must be in the /tmp the node
# sees (its slurmd, the job prolog and epilog, the jobs' tasks), yet never
# in the host's: another run of this test, or a real user, may be there.
# The node's slurmd runs in a mount namespace of its own (tests/slurm/cluster
# exec): there /tmp becomes this test's $NT for the while, holding this
# test's own $t (and the cluster's dir) at their paths, bound from the host.
NT=$t/nodetmp
node_tmp_private() {
	local p
	mkdir -p "$NT" && chmod 1777 "$NT" || return 1
	# What the node reads under the host's /tmp stays there: the cluster's
	# dir, and the build and source trees where a checkout lives in /tmp
	# (the plugin the node loads is the build's).
	for p in "$t" "$GPUMEM_CLUSTER_DIR" "$top_srcdir" "$top_builddir"; do
		case $p in "$t"/*) ;; /tmp/*) mkdir -p "$NT/${p#/tmp/}" && "$CL" exec mount --bind "$p" "$NT/${p#/tmp/}" || return 1 ;; esac
	done
	"$CL" exec mount --rbind "$NT" /tmp
}
# -R first; a lazy detach where something of the node holds a file under it
# (seen in tests/slurm/run's 24.11 root, whose /tmp is itself a mount).
node_tmp_host() {
	local e
	e=$("$CL" exec umount -R /tmp 2>&1) && return 0
	diag "umount -R /tmp in the node: $e; detached lazily"
	"$CL" exec umount -l /tmp
}
# nodeuser CMD...: CMD as the test user, in the node's mount namespace.
nodeuser() { "$CL" exec runuser -u "$U" -- "$@"; }
private=0
if grep -qx "HOSTRUN=1" "$GPUMEM_CLUSTER_DIR/cluster.state" 2>/dev/null; then
	skip "5, 6: the nodes run in the host's mount namespace (--tmpfs alone): no /tmp of their own to plant in"
elif node_tmp_private; then
	private=1
else
	skip "5, 6: cannot give the node a /tmp of its own (a mount in its namespace)"
fi
if [ "$private" = 1 ]; then
	[ "$("$CL" exec stat -c %d:%i /tmp)" = "$(stat -c %d:%i "$NT")" ] && [ ! -e "$NT/nvidia-mps" ] &&
		pass "5, 6: the node's /tmp is this test's own ($NT), the host's is not touched" ||
		fail "5, 6: the node's /tmp is this test's own"

	# --- 6. helpers never reach a user's MPS daemon at /tmp/nvidia-mps -----------------
	# The user's daemon at the default /tmp/nvidia-mps, as the node sees it.
	nodeuser mkdir -p /tmp/nvidia-mps
	nodeuser touch /tmp/nvidia-mps/control
	[ -e "$NT/nvidia-mps/control" ] && pass "6: the user's daemon is at /tmp/nvidia-mps on the node" || fail "6: the user's daemon is at /tmp/nvidia-mps on the node"
	: >"$B/runs"; : >"$B/probe.runs"; : >"$B/l2reset.runs"
	run asuser srun --gres=gpu:1 --gpumem-policy="$t/l2.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
	jid=$(jobid_of "$out")
	wait_idle
	is "$(cut -d' ' -f3 "$B/runs" "$B/l2reset.runs" | sort -u)" "/run/gpumem-mps/nomps" "6: the checks and the L2 reset get root's empty /run/gpumem-mps/nomps as their MPS pipe directory"
	run asuser srun --gres=gpu:1 --gpumem-policy="$t/mps.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
	jid=$(jobid_of "$out")
	wait_idle
	like "$(tail -2 "$B/runs" | cut -d' ' -f3 | tr '\n' ' ')" "^(/run/gpumem-mps/nomps ){2}$" "6: an MPS job's checks use no daemon: the job's serves its user only, the checks run as check_user (issue 32)"
	is "$(stat -c '%U %a' "$GPUMEM_CLUSTER_MPS_DIR/nomps") $(ls -A "$GPUMEM_CLUSTER_MPS_DIR/nomps" | wc -l) $(stat -c %a "$GPUMEM_CLUSTER_MPS_DIR")" "root 755 0 711" "6: ... which is root's and empty (in mps_dir, 0711: state_dir is root's alone)"
	nodeuser rm -rf /tmp/nvidia-mps

	# --- 5. a user's look-alike directories: no scan, no slow or drained epilog -----
	# Where an older gpumem looked for its daemons (/tmp/gpumem-mps.JOB.*), as the node sees /tmp.
	next=$(( $(last_job) + 1 ))
	nodeuser sh -c 'i=0; while [ $i -lt 4000 ]; do mkdir "/tmp/gpumem-mps.$1.$i"; i=$((i + 1)); done; for i in 0 1 2 3; do echo $$ >"/tmp/gpumem-mps.$1.$i/pid"; done' sh "$next"
	t0=$(date +%s%N)
	run asuser srun --gres=gpu:1 --gpumem-policy="$t/mps.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
	jid=$(jobid_of "$out")
	wait_idle
	took=$(( ($(date +%s%N) - t0) / 1000000 ))
	is "$jid" "$next" "5: the job is the one the user planted 4000 directories for"
	is "$(node_state)" "IDLE" "5: its epilog did not drain the node (PrologEpilogTimeout=10)"
	# Not a timed assert (a loaded machine is slow): the bound is PrologEpilogTimeout, above.
	diag "5: the job and its epilog took ${took} ms"
	is "$(ls "$NT" | grep -c "^gpumem-mps\.$next\.")" 4000 "5: ... all in the node's /tmp"
	nodeuser sh -c 'rm -rf /tmp/gpumem-mps.*'
	node_tmp_host || fail "5, 6: the node's /tmp given back"
fi

# --- 7. a state_dir root cannot write fails the job: never unchecked ---------------
mkdir -p "$t/ro"
mount -t tmpfs -o ro,size=1m gpumem-ro "$t/ro" || skip "7: cannot mount a read-only tmpfs here"
echo "$plug state_dir=$t/ro/state" >"$t/ro.conf"
chmod 644 "$t/ro.conf"
"$CL" restart-slurmd --plugstack "$t/ro.conf" >/dev/null 2>&1
run asuser srun --gres=gpu:1 sh -c 'echo TASK-RAN'
[ "$rc" -ne 0 ] && pass "7: root cannot write its state_dir: the step fails (exit $rc)" || fail "7: the step ran without the prolog's record"
unlike "$out" "TASK-RAN" "7: ... its task does not run"
like "$out" "the job prolog left no record of this job on this node" "7: ... and srun says why"
"$CL" restart-slurmd --plugstack "$t/plugstack.conf" >/dev/null 2>&1
umount "$t/ro"
done_testing
