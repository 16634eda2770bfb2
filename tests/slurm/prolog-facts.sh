#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What Slurm's job prolog and epilog give a SPANK plugin, shown on the real
# local Slurm (doc/admin/slurm.md, "Job prolog and epilog: what Slurm gives"):
# a throw-away plugin (tests/slurm/spank-facts.c, built here) writes what it
# sees in slurm_spank_job_prolog/_epilog and fails when told to.  gpumem's
# per-job work (plugin/spank/job/job_prolog.c, job_epilog.c) is built on these facts.
. "$top_srcdir/tests/lib.sh"
slurm_test prologfacts
command -v cc >/dev/null || skip_all "no C compiler to build the test plugin"
U=${GPUMEM_TEST_USER:-gpumemtest}
mkdir -p "$t/out"
chmod 777 "$t/out"
cc -shared -fPIC -Wall -Wextra -Werror -o "$t/facts.so" "$top_srcdir/tests/slurm/spank-facts.c" ||
	skip_all "the test plugin does not build against this spank.h"
# dev=: the cluster's GPU devices (stand-ins): which the hooks may open.
echo "required $t/facts.so out=$t/out dev=$GPUMEM_CLUSTER_DIR/dev" >"$t/plug.conf"
chmod 644 "$t/plug.conf" "$t/facts.so"
start() {
	"$CL" stop >/dev/null 2>&1
	GPUMEM_SLURM_CONF_EXTRA="$1" "$CL" start --nodes 2 --gpus 2 --plugstack "$t/plug.conf" >"$t/start.log" 2>&1 ||
		{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
	eval "$("$CL" env)"
}
start "PrologEpilogTimeout=8"
uid=$(id -u "$U")
f() { cat "$t/out/$1.$2.$3" 2>/dev/null; }   # f prolog|epilog JOB NODE
wait_f() { for _ in $(seq 1 240); do [ -f "$t/out/$1" ] && return 0; sleep 0.25; done; return 1; }
node_reason() { scontrol show node "$1" -o | sed -n 's/.* Reason=\(.*\) \[.*/\1/p'; }

# --- context, ids, environment, option: a batch job with a GPU -----------------
# gpumem1's GPU 0 is taken by a first job, so the second gets physical GPU 1.
asuser sbatch -w gpumem1 --gres=gpu:1 -o /dev/null --wrap 'sleep 15' >/dev/null
for _ in $(seq 1 240); do squeue -h -t R -w gpumem1 | grep -q . && break; sleep 0.25; done
# Bounded (a loaded machine is slow, a passing run never waits it out): a job
# that never ends fails the checks below with the cluster's state, not the
# suite's 900 s timeout with nothing in the log (seen once, 22.05 --cgroup).
jid=$(asuser timeout 180 sbatch --parsable -w gpumem1 --gres=gpu:1 --facts-opt=hello -o /dev/null --wait --wrap 'true') ||
	diag "sbatch --wait: exit $? (124: not ended in 180 s); squeue: $(squeue -h -o '%i %T %R' | tr '\n' ';') $("$CL" logs 20 2>&1)"
wait_f "epilog.$jid.gpumem1"
p=$(f prolog "$jid" gpumem1)
like "$p" "context 5 remote 0 uid 0 euid 0" "job prolog: S_CTX_JOB_SCRIPT (5), as root"
like "$p" "init_called 0" "job prolog: slurm_spank_init is not called first: the hook parses its own arguments"
like "$p" "item S_JOB_UID ok $uid" "spank_get_item: S_JOB_UID"
like "$p" "item S_JOB_ID ok $jid" "spank_get_item: S_JOB_ID"
like "$p" "item S_JOB_STEPID error" "spank_get_item: no S_JOB_STEPID"
like "$p" "item S_JOB_LOCAL_TASK_COUNT error" "spank_get_item: no task items"
like "$p" "getenv SLURM_JOB_ID=$jid" "getenv works"
like "$p" "spank_getenv SLURM_JOB_ID rc=3006" "spank_getenv does not (ESPANK_NOT_REMOTE)"
like "$p" "getenv SPANK_FACTS_DATA=forwarded" "spank_job_control_setenv(NAME) arrives as SPANK_NAME"
like "$p" "getenv SPANK__SLURM_SPANK_OPTION_spankfacts_facts_opt=hello" "the option arrives SPANK_-prefixed"
like "$(printf '%s\n' "$p" | grep ^getopt)" "getopt rc=0 hello" "spank_option_getopt reads it"
like "$p" "getenv SLURM_JOB_GPUS=1" "SLURM_JOB_GPUS: the physical index (GPU 0 was busy)"
like "$p" "getenv CUDA_VISIBLE_DEVICES=1" "CUDA_VISIBLE_DEVICES: the same physical index"
like "$p" "getenv ENVIRONMENT=\(unset\)" "no ENVIRONMENT (nothing the job set, beyond SPANK_)"
like "$(f epilog "$jid" gpumem1)" "getenv SLURM_JOB_GPUS=1" "the epilog gets the same"
like "$(f epilog "$jid" gpumem1)" "getenv SPANK_FACTS_DATA=forwarded" "... and the forwarded data"
unlike "$p" "cgroup .*job_$jid" "the prolog runs outside the job's cgroup"
like "$p" "parent slurmd" "... as a child of slurmd"
like "$(f epilog "$jid" gpumem1)" "prolog_child alive" "a process the prolog started in a session of its own is alive when the epilog runs"
like "$(f epilog "$jid" gpumem1)" "prolog_groupchild gone" "... one left in the prolog's process group is not: slurmd kills the group when the prolog returns"
for _ in $(seq 1 240); do squeue -h | grep -q . || break; sleep 0.25; done

# --- srun and salloc jobs; without PrologFlags=Alloc ------------------------------
run asuser srun -N1 -w gpumem1 --facts-opt=s sh -c 'echo "job=$SLURM_JOB_ID"'
jid=$(printf '%s' "$out" | sed -n 's/^job=//p')
wait_f "epilog.$jid.gpumem1"
like "$(f prolog "$jid" gpumem1 | grep ^getopt)" "getopt rc=0 s" "srun job: prolog and option"
asuser salloc -N2 --facts-opt=a sh -c 'echo "job=$SLURM_JOB_ID"; sleep 2; ls '"$t/out"' >'"$t/out/ls1"'; srun -N1 -w gpumem1 true; srun -N1 -w gpumem1 true' >"$t/salloc.out" 2>&1
jid=$(sed -n 's/^job=//p' "$t/salloc.out")
wait_f "epilog.$jid.gpumem2"
grep -q "prolog.$jid" "$t/out/ls1" && fail "no Alloc: no prolog before the first step" || pass "no Alloc: no prolog before the first step reaches the node"
[ -f "$t/out/prolog.$jid.gpumem1" ] && pass "... then one on the node the steps ran on" || fail "prolog on gpumem1"
[ -f "$t/out/prolog.$jid.gpumem2" ] && fail "no prolog on the node no step ran on" || pass "no prolog on the node no step ran on"
[ -f "$t/out/epilog.$jid.gpumem2" ] && pass "the epilog runs on every node of the allocation, even without a step" || fail "epilog on gpumem2"
like "$(f prolog "$jid" gpumem1 | grep ^getopt)" "getopt rc=0 a" "salloc job: the option reaches the prolog"

# --- a failing prolog: through 24.11 only a negative return counts, from 25.05 any non-zero
echo 1 >"$t/out/ret.prolog"
run asuser srun -N1 -w gpumem2 true
if series_at_least 25.05; then
	[ "$rc" != 0 ] && pass "$SLURM_SERIES: prolog returning 1 fails the job (srun exit $rc)" ||
		fail "$SLURM_SERIES: prolog returning 1 fails the job"
	for _ in $(seq 1 240); do node_state gpumem2 | grep -q DRAIN && break; sleep 0.25; done
	like "$(node_state gpumem2)" "DRAIN" "... and drains the node"
	scontrol update NodeName=gpumem2 State=RESUME
	wait_idle gpumem2
else
	is "$rc" 0 "$SLURM_SERIES: prolog returning 1: ignored, the job runs"
	# The epilog may still run (IDLE+COMPLETING): wait for it, then no DRAIN.
	for _ in $(seq 1 240); do [[ $(node_state gpumem2) == *COMPLETING* ]] || break; sleep 0.25; done
	is "$(node_state gpumem2)" "IDLE" "... and the node stays up"
fi
echo -1 >"$t/out/ret.prolog"
jid=$(asuser sbatch --parsable -N1 -w gpumem2 -o /dev/null --wrap true)
for _ in $(seq 1 240); do node_state gpumem2 | grep -q DRAIN && break; sleep 0.25; done
like "$(node_state gpumem2)" "DRAIN" "prolog returning -1: the node is drained"
like "$(node_reason gpumem2)" "Prolog error" "... with Slurm's reason, not one of gpumem's"
for _ in $(seq 1 240); do squeue -h -j "$jid" -o '%T %r' | grep -q held && break; sleep 0.25; done
like "$(squeue -h -j "$jid" -o '%T %r')" "PENDING .*held" "... and the job is requeued held"
scancel "$jid"
rm -f "$t/out/ret.prolog"
scontrol update NodeName=gpumem2 State=RESUME

# --- a failing epilog drains -----------------------------------------------------
echo -1 >"$t/out/ret.epilog"
run asuser srun -N1 -w gpumem2 true
for _ in $(seq 1 240); do node_state gpumem2 | grep -q DRAIN && break; sleep 0.25; done
like "$(node_state gpumem2)" "DRAIN" "epilog returning -1: the node is drained"
like "$(node_reason gpumem2)" "Epilog error" "... reason 'Epilog error'"
rm -f "$t/out/ret.epilog"
scontrol update NodeName=gpumem2 State=RESUME

# --- PrologEpilogTimeout covers the SPANK hooks -----------------------------------
echo 30 >"$t/out/sleep.epilog"
s=$(date +%s)
asuser srun -N1 -w gpumem2 true
for _ in $(seq 1 240); do node_state gpumem2 | grep -q DRAIN && break; sleep 0.25; done
took=$(( $(date +%s) - s ))
like "$(node_state gpumem2)" "DRAIN" "an epilog past PrologEpilogTimeout=8: the node is drained (after ${took}s)"
[ "$took" -lt 25 ] && pass "... before the hook's own 30 s: the timeout covers it" || fail "timeout took ${took}s"
rm -f "$t/out/sleep.epilog"
scontrol update NodeName=gpumem2 State=RESUME

# --- PrologFlags=Alloc: the prolog runs at allocation, on every node ----------------
start "PrologFlags=Alloc
PrologEpilogTimeout=8"
asuser salloc -N2 sh -c 'echo "job=$SLURM_JOB_ID"; sleep 2; ls '"$t/out"' >'"$t/out/ls2" >"$t/salloc2.out" 2>&1
jid=$(sed -n 's/^job=//p' "$t/salloc2.out")
grep -q "prolog.$jid.gpumem1" "$t/out/ls2" && grep -q "prolog.$jid.gpumem2" "$t/out/ls2" &&
	pass "Alloc: the prolog ran on both nodes before any step" || fail "Alloc: prolog at allocation ($(cat "$t/out/ls2"))"
# --- PrologFlags=RunInJob (24.05+): the prolog and epilog run from the job's extern
# step, whose SPANK stack never calls slurm_spank_job_prolog/_epilog (Slurm's
# src/common/spank.c sets has_prolog only for slurmd's own stack).  gpumem refuses
# the setting (tests/slurm/runinjob.sh); this is why.
if series_at_least 24.05; then
	for flags in RunInJob RunInJob,Contain; do
		start "PrologFlags=$flags
PrologEpilogTimeout=8"
		rm -f "$t"/out/prolog.* "$t"/out/epilog.* "$t"/out/child.*   # job ids start again at 1
		jid=$(asuser timeout 60 sbatch --parsable -N1 --gres=gpu:1 --facts-opt=r -o "$t/out/rij.out" --wait --wrap 'echo ran')
		rc=$?
		wait_idle gpumem1
		sleep 1
		is "$rc $(cat "$t/out/rij.out" 2>/dev/null)" "0 ran" "PrologFlags=$flags: the job runs"
		[ -z "$(ls "$t/out" | grep -E "^(prolog|epilog)\.$jid\.")" ] &&
			pass "PrologFlags=$flags: Slurm calls no SPANK job prolog or epilog" ||
			fail "PrologFlags=$flags: SPANK hooks ran: $(ls "$t/out" | grep "\.$jid\.")"
	done
else
	skip "PrologFlags=RunInJob: Slurm $SLURM_SERIES has no such flag (24.05+)"
fi
done_testing
