#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem.so on a real local Slurm (tests/slurm/cluster): the option, the
# environment tasks really see, named policies, site defaults, clamps, every
# bad policy refused at submission with no job created, privilege, a
# tampered forwarded policy, bad plugstack arguments and per-job MPS.
. "$top_srcdir/tests/lib.sh"
[ "$(id -u)" = 0 ] || skip_all "needs root: the test starts slurmctld and slurmd"
[ -n "${SLURM_PREFIX:-}" ] || command -v srun >/dev/null || skip_all "Slurm is not installed"
so="$top_builddir/plugin/spank/.libs/gpumem.so"
[ -f "$so" ] || skip_all "gpumem.so was not built (no slurm/spank.h at configure time)"

CL="$top_srcdir/tests/slurm/cluster"
t=$(mktemp -d /tmp/gpumem-plugin.XXXXXX)
chmod 755 "$t"
export GPUMEM_CLUSTER_DIR=$t/cluster   # its own (runs at once never share one)
cleanup() { "$CL" stop >/dev/null 2>&1; rm -rf "$t"; }
trap cleanup EXIT
# Killed by a time bound (make check's, tests/sanitize's): tests/lib.sh.
slurm_test_guard "$t" "$CL"

cat >"$t/site.yaml" <<YAML
version: 1
defaults:
  l2:
    persisting_limit: 10%
limits:
  l2_max_percent: 50
  mps_min_active_thread_percentage: 10
policy_dir: $top_srcdir/policies
YAML
um="$top_builddir/kernels/um/.libs/libgpumem-um.so"
plug="required $so site=$t/site.yaml libexecdir=$(helpers_libexec)"
[ -f "$um" ] && plug="$plug um_library=$um"
echo "$plug" >"$t/plugstack.conf"
chmod 644 "$t"/*

if ! "$CL" start --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1; then
	cat "$t/start.log" >&2
	skip_all "the local Slurm did not start (see above)"
fi
eval "$("$CL" env)"
jobs_count() { scontrol show jobs -o 2>/dev/null | grep -c '^JobId='; }
# task_env CMD...: the gpumem-related variables a task sees, sorted.
VARS='^(CUDA_DEVICE_DEFAULT_PERSISTING|CUDA_MPS_|GPUMEM_|LD_PRELOAD=)'
task_env() { "$@" 2>&1 | grep -E "$VARS" | sort; }

# --- the option is there ---------------------------------------------------
for cmd in srun sbatch salloc; do
	run $cmd --help
	like "$out" "--gpumem-policy=FILE\|NAME" "$cmd --help lists --gpumem-policy"
done

# --- the environment tasks see, per example policy ---------------------------
P="$top_srcdir/policies"
e=$(task_env srun -N1 --gpumem-policy="$P/stream.yaml" env)
like "$e" "^CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=0$" "stream.yaml: L2 set-aside 0"
like "$e" "GPUMEM_POLICY=.*stream.yaml" "stream.yaml: GPUMEM_POLICY names it"
e=$(task_env srun -N1 --gpumem-policy="$P/persist.yaml" env)
like "$e" "^CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=18$" "persist.yaml: 18%"
e=$(task_env srun -N1 --gpumem-policy="$P/mps-half.yaml" env)
like "$e" "^CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50$" "mps-half.yaml: active thread percentage"
like "$e" "^CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=40960M$" "mps-half.yaml: pinned memory limit"
like "$e" "^CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=10$" "mps-half.yaml: site default L2 kept"
e=$(task_env srun -N1 --gpumem-policy="$P/zerocopy.yaml" env)
if [ -f "$um" ]; then
	like "$e" "^GPUMEM_UM_ADVICE=v1;preferred=cpu;accessed_by=gpu;read_mostly=0;prefetch=none;min_bytes=1048576$" "zerocopy.yaml: advice"
	like "$e" "^LD_PRELOAD=$um$" "zerocopy.yaml: the installed library preloaded"
	e=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libc.so.6 task_env srun -N1 --gpumem-policy="$P/zerocopy.yaml" env)
	like "$e" "^LD_PRELOAD=$um /lib/x86_64-linux-gnu/libc.so.6$" "zerocopy.yaml: the user's LD_PRELOAD kept after ours"
else
	unlike "$e" "LD_PRELOAD" "zerocopy.yaml: no library built, nothing preloaded"
	skip "zerocopy.yaml: libgpumem-um not built here (no CUDA), advice not checked"
	skip "zerocopy.yaml: user's LD_PRELOAD kept (needs libgpumem-um)"
fi
e=$(task_env srun -N1 --gpumem-policy="$P/checked.yaml" env)
like "$e" "^CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=10$" "checked.yaml: only the site default"

# --- sbatch and salloc carry the policy too ----------------------------------
printf '#!/bin/sh\nenv | grep -E "%s"\nsrun env | grep -E "%s" | sed s/^/step:/\n' "$VARS" "$VARS" >"$t/job.sh"
chmod 755 "$t/job.sh"
run sbatch --wait -o "$t/job.out" --gpumem-policy="$P/persist.yaml" "$t/job.sh"
is "$rc" 0 "sbatch --wait with a policy"
e=$(cat "$t/job.out")
like "$e" "^CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=18$" "sbatch: the batch step sees the policy"
like "$e" "^step:CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=18$" "sbatch: steps inside see it too"
e=$(task_env salloc -N1 --gpumem-policy="$P/mps-half.yaml" srun env)
like "$e" "^CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50$" "salloc: steps inside see the policy"

# --- named policies, site defaults ------------------------------------------
e=$(task_env srun -N1 --gpumem-policy=persist env)
like "$e" "^CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=18$" "named policy 'persist' from policy_dir"
e=$(task_env srun -N1 env)
like "$e" "^CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=10$" "no option: the site default applies"
like "$e" "^GPUMEM_POLICY=site defaults$" "no option: GPUMEM_POLICY says so"

# --- clamps are applied and said -------------------------------------------
printf 'version: 1\nl2:\n  persisting_limit: 75%%\nmps:\n  active_thread_percentage: 5\n' >"$t/greedy.yaml"
chmod 644 "$t/greedy.yaml"
run srun -N1 --gpumem-policy="$t/greedy.yaml" env
like "$out" "warning: l2.persisting_limit: 75% is above the site limit of 50%: using 50%" "clamp warning shown by srun"
like "$out" "warning: mps.active_thread_percentage: 5 is outside the site range 10..100: using 10" "MPS clamp warning shown"
like "$out" "warning: 50% of L2 on a GPU model not known here .*: capped at 18%, gpumem's cap for GPU models it has not measured" "then the node's cap on the set-aside, said to the user"
like "$out" "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=18" "clamped L2 value in the task"
like "$out" "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=10" "clamped MPS value in the task"

# --- as an unprivileged user -------------------------------------------------
"$CL" adduser >/dev/null 2>&1
e=$("$CL" runas srun -N1 --gpumem-policy="$P/persist.yaml" env 2>&1 | grep -E "$VARS")
like "$e" "^CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=18$" "unprivileged user: srun with a policy"
run "$CL" runas sbatch --wait -o /dev/null --gpumem-policy=stream "$t/job.sh"
is "$rc" 0 "unprivileged user: sbatch with a named policy"
printf 'version: 1\n' >"$t/rootonly.yaml"; chmod 600 "$t/rootonly.yaml"
ln -sf "$t/rootonly.yaml" "$t/link.yaml"
before=$(jobs_count)
run "$CL" runas srun -N1 --gpumem-policy="$t/rootonly.yaml" true
isnt_rc=$rc
like "$out" "rootonly.yaml: error: cannot open: Permission denied" "a file only root can read is refused for the user"
[ "$isnt_rc" -ne 0 ] && pass "... and srun fails" || fail "... and srun fails"
run "$CL" runas srun -N1 --gpumem-policy="$t/link.yaml" true
like "$out" "link.yaml: error: cannot open: Permission denied" "so is a symlink to it"
is "$(jobs_count)" "$before" "no job was created for them"

# --- every bad policy class is refused at submission, no job created --------
. "$top_srcdir/tests/bad-policies.sh"
mkdir -p "$t/bad"
bad_policies "$t/bad" >"$t/cases"
chmod -R a+rX "$t/bad"
before=$(jobs_count)
while IFS=$'\t' read -r name file pat; do
	out=$(timeout 20 srun -N1 --gpumem-policy="$file" true 2>&1); rc=$?
	if [ $rc -ne 0 ] && printf '%s' "$out" | grep -Eq -- "$pat"; then
		pass "srun refuses: $name"
	else
		fail "srun refuses: $name (rc $rc)"; diag "pattern: $pat" "$out"
	fi
done <"$t/cases"
for name in "unknown key" "alias bomb" "huge file" "FIFO (no hang)"; do
	file=$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$t/cases")
	pat=$(awk -F'\t' -v n="$name" '$1 == n { print $3 }' "$t/cases")
	out=$(timeout 20 sbatch --gpumem-policy="$file" "$t/job.sh" 2>&1); rc=$?
	[ $rc -ne 0 ] && printf '%s' "$out" | grep -Eq -- "$pat" && pass "sbatch refuses: $name" ||
		{ fail "sbatch refuses: $name"; diag "$out"; }
	out=$(timeout 20 salloc --gpumem-policy="$file" true 2>&1); rc=$?
	[ $rc -ne 0 ] && printf '%s' "$out" | grep -Eq -- "$pat" && pass "salloc refuses: $name" ||
		{ fail "salloc refuses: $name"; diag "$out"; }
done
is "$(jobs_count)" "$before" "no job was created for any bad policy"

# --- the node re-validates what arrives ------------------------------------
run env SPANK_GPUMEM_POLICY_DATA='{"version": 1, "mps": {"active_thread_percentage": 500}}' srun -N1 true
[ "$rc" -ne 0 ] && pass "a tampered forwarded policy fails the step" || fail "a tampered forwarded policy fails the step"
like "$out" "policy rejected on this node: .*mps.active_thread_percentage: 500 is out of range" "... with the node's reason"
run env SPANK_GPUMEM_POLICY_DATA='{"version": 1, "l2": {"persisting_limit": "99%"}}' srun -N1 env
like "$out" "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=18" "an altered forwarded limit is clamped by the node"
run env SPANK_GPUMEM_POLICY_DATA='{"version": 1, "l2": {"persisting_limit": "9%"}, "LD_PRELOAD": "/tmp/evil.so"}' srun -N1 env
[ "$rc" -ne 0 ] && pass "a forwarded policy cannot add other keys" || fail "a forwarded policy cannot add other keys"
unlike "$out" "evil.so" "... nor set LD_PRELOAD"

# --- the file need not exist on the node: the validated content travels ------
cp "$P/persist.yaml" "$t/gone.yaml"; chmod 644 "$t/gone.yaml"
jid=$(sbatch --parsable --hold -o "$t/gone.out" --gpumem-policy="$t/gone.yaml" "$t/job.sh")
rm -f "$t/gone.yaml"
scontrol release "$jid"
for _ in $(seq 1 120); do
	[ -s "$t/gone.out" ] && ! squeue -h -j "$jid" 2>/dev/null | grep -q . && break
	sleep 0.5
done
like "$(cat "$t/gone.out" 2>/dev/null)" "PERCENTAGE_LIMIT=18" "policy file deleted after submission: the job still has it"

# --- per-job MPS daemon -----------------------------------------------------
if command -v nvidia-cuda-mps-control >/dev/null && [ -e /dev/nvidiactl ]; then
	e=$(task_env srun -N1 --gpumem-policy="$P/mps-half.yaml" sh -c 'env; echo get_server_list | nvidia-cuda-mps-control; ls -d $CUDA_MPS_PIPE_DIRECTORY')
	like "$e" "^CUDA_MPS_PIPE_DIRECTORY=/run/gpumem-mps/job[0-9]+/pipe$" "MPS: the job's pipe directory (root's mps_dir) exported"
	for _ in $(seq 1 30); do
		# The cluster's own MPS daemons (its nodes' namespace), not another run's.
		out=$(ls -d "$GPUMEM_CLUSTER_MPS_DIR"/job* 2>/dev/null; for p in $(cluster_pids nvidia-cuda-mps); do ps -o stat=,args= -p "$p" | awk '$1 !~ /^Z/'; done)
		[ -z "$out" ] && break
		sleep 0.5
	done
	is "$out" "" "MPS: no daemon or directory left after the job"
else
	skip "per-job MPS daemon lifecycle: nvidia-cuda-mps-control or a GPU is missing here (tested by tests/gpu/run)"
	run srun -N1 --gpumem-policy="$P/mps-half.yaml" true
	like "$(grep -h 'mps.daemon=job skipped' "$GPUMEM_CLUSTER_DIR"/log/slurmd.*.log | tail -1)" \
		"mps.daemon=job skipped: (no GPU on this node|nvidia-cuda-mps-control not found)" "MPS: the skip is logged with its reason"
fi

# --- admin mistakes: loud, never a crash ------------------------------------
echo "$plug bogus=1" >"$t/bad-plugstack.conf"; chmod 644 "$t/bad-plugstack.conf"
"$CL" restart-slurmd --plugstack "$t/bad-plugstack.conf" >/dev/null 2>&1
run srun -N1 true
[ "$rc" -ne 0 ] && pass "unknown plugstack argument: jobs refused" || fail "unknown plugstack argument: jobs refused"
like "$out" "unknown plugstack argument 'bogus=1'" "... naming the argument"
pgrep -f "slurmd.*$GPUMEM_CLUSTER_DIR" >/dev/null && pass "slurmd still running" || fail "slurmd still running"
printf 'version: 1\nlimits:\n  l2_max_percent: lots\n' >"$t/badsite.yaml"; chmod 644 "$t/badsite.yaml"
plugstack "$t/badsite-plugstack.conf" site=$t/badsite.yaml libexecdir=$(helpers_libexec)
"$CL" restart-slurmd --plugstack "$t/badsite-plugstack.conf" >/dev/null 2>&1
run srun -N1 true
like "$out" "badsite.yaml:3:19: error: limits.l2_max_percent: 'lots' is not a number" "bad site file: the error names file, line, column"
"$CL" restart-slurmd --plugstack "$t/plugstack.conf" >/dev/null 2>&1
run srun -N1 true
is "$rc" 0 "fixed plugstack: jobs run again"
done_testing
