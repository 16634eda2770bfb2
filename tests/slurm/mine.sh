#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem advise --mine through real slurmdbd (tests/slurm/cluster
# --accounting, AccountingStorageTRES=gres/gpu): two users run jobs, the
# job profile is the real sampler over the stand-in NVML, gpumem-acct
# leaves each job's record in AdminComment.  Each user sees only their own
# jobs, grouped by name (root too, though Slurm would show root every
# job), with GPU-hours and the advice of the latest profiled job of each
# name; a job name with shell and terminal metacharacters (and sacct's
# own '|') is one name, cleaned on the terminal and exact in --json.
# Last, gpumem job --svg on the report of one of these jobs (the picture of
# a real sampler's profile, as the plugin wrote it).
. "$top_srcdir/tests/lib.sh"
slurm_test mine
GM="$top_builddir/plugin/cli/gpumem"
acct_setup
export GPUMEM_SLURM_CONF_EXTRA="AccountingStorageTRES=gres/gpu"
acct_cluster_start --nodes 1 --gpus 1 --epilog "$t/epilog" --plugstack "$t/plug.conf"
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
U=$GPUMEM_TEST_USER
asu() { runuser -u "$U" -- env PATH="$PATH" SLURM_CONF="$SLURM_CONF" "$@"; }
# wait_record JOB: until the job's AdminComment holds its record (bounded).
wait_record() {
	for _ in $(seq 1 120); do
		sacct -X -n -P -j "$1" -o AdminComment 2>/dev/null | grep -q '{~' && return 0
		sleep 0.5
	done
	return 1
}
# job AS NAME: a job named NAME run by AS (root or user), its id in $jid.
job() {
	local as=$1 name=$2
	if [ "$as" = user ]; then
		run asu srun -J "$name" --gres=gpu:1 sh -c 'echo "job=$SLURM_JOB_ID"; sleep 1'
	else
		run srun -J "$name" --gres=gpu:1 sh -c 'echo "job=$SLURM_JOB_ID"; sleep 1'
	fi
	jid=$(jobid_of "$out")
	[ -n "$jid" ] && wait_record "$jid" || { fail "job '$name' as $as: no record ($out)"; return 1; }
}

evil=$(printf 'x$(id)`id`;|<b>\033[31mred\033[0m')
job user train; t1=$jid                        # HBM-bound (the stand-in's figures)
echo "dram=3,sm=4,occ=2,pcie_rx=0.1,pcie_tx=0.1,mem=1.0" >"$t/libexec/sample.values"
job user train; t2=$jid                        # then idle: the latest advice
job user "$evil"; e1=$jid
job root train; r1=$jid
job root rootonly; r2=$jid
pass "jobs $t1 $t2 (train), $e1 (metacharacters) as $U; $r1, $r2 as root"
# sacct -j finds a job as soon as it ends; a query by time (--starttime, as
# --mine's) only some seconds later (3.7 s measured on 22.05): wait for it.
for _ in $(seq 1 120); do
	sacct -X -n -P -a -S 2026-01-01 -o JobIDRaw 2>/dev/null | grep -qx "$r2" && break
	sleep 0.5
done

run asu "$GM" advise --mine --json
is "$rc" 0 "advise --mine --json as $U: exit 0" || diag "$out"
is "$(printf '%s' "$out" | json_in 'sorted((n["name"], n["jobs"]) for n in d["names"])')" \
	"$(python3 -c 'import sys; print(sorted([("train", 2), (sys.argv[1], 1)]))' "$evil")" \
	"$U sees their own names only: train (2 jobs) and the odd name, exact"
is "$(printf '%s' "$out" | json_in '[(n["latest_profiled_job"], [(a["rule"], a["policy"], a["gpus"]) for a in n["advice"]]) for n in d["names"] if n["name"] == "train"]')" \
	"[($t2, [('idle', 'mps-half.yaml', 1)])]" "train: the advice of its latest profiled job ($t2: idle)"
is "$(printf '%s' "$out" | json_in 'all(n["gpu_hours"] > 0 and n["gpus_from"] == "tres" for n in d["names"])')" \
	True "GPU-hours from AllocTRES's gres/gpu"
like "$(printf '%s' "$out" | json_in '[a["reason"] for n in d["names"] if n["name"] == "train" for a in n["advice"]][0]')" \
	"idle most of the time" "  with the rule's reason"

run asu "$GM" advise --mine
diag "$out"
is "$rc" 0 "advise --mine as $U: exit 0"
like "$out" "^Your jobs since [0-9-]*T[0-9:]*: 2 names, 3 jobs" "the head line"
like "$out" "train: 2 jobs, <?[0-9.]+ GPU-hours; advice of the latest profiled job, $t2:" "train's line"
like "$out" "  mps-half.yaml \(idle, 1 GPU\): the GPU was idle" "  its advice"
like "$out" 'x\$\(id\)`id`;\|<b>\?\[31mred\?\[0m: 1 job' "the odd name as one name, its escapes shown as '?'"
unlike "$out" "$(printf '\033')" "no escape byte reaches the terminal"
unlike "$out" "rootonly|job $r1" "nothing of root's jobs"

run "$GM" advise --mine --json
is "$rc" 0 "advise --mine --json as root: exit 0"
is "$(printf '%s' "$out" | json_in 'sorted((n["name"], n["jobs"], n["latest_profiled_job"]) for n in d["names"])')" \
	"[('rootonly', 1, $r2), ('train', 1, $r1)]" "root sees root's own jobs only, though Slurm shows root all"

run asu "$GM" advise --mine --since 1x
is "$rc" 64 "--since that is no time: 64"
like "$out" "gpumem: advise: --since: '1x' is neither a time" "  said so"
run asu "$GM" advise --mine --since 2026-01-01 --json
is "$(printf '%s' "$out" | json_in 'd["jobs"]')" 3 "--since a date: the same three jobs"
run asu env SLURM_CONF=/nonexistent "$GM" advise --mine
is "$rc" 2 "sacct failing: 2"
like "$out" "gpumem: advise: --mine: sacct failed: " "  said so"

# The job's picture from the reports the plugin wrote (gpumem job --svg),
# by --report FILE and by JOBID (the site file's report.dir).
rep=$(ls "$t/reports/job$t1".*.gpumem1.after.json "$t/reports/job$t1".*.gpumem1.job.json 2>/dev/null | head -1)
run asu "$GM" job --report "$rep" --svg "$GPUMEM_CLUSTER_TMP/job$t1.svg"
is "$rc" 0 "job --report (the plugin's report of job $t1) --svg: exit 0" || diag "report '$rep': $out"
svg=$(cat "$GPUMEM_CLUSTER_TMP/job$t1.svg" 2>/dev/null)
like "$svg" ">gpumem1 GPU 0, .*: [0-9]* samples, .* s a point, source gpm</text>" "  the GPU's caption, from the real sampler's profile"
like "$svg" "Advice: try policy stream.yaml \(rule hbm-bound\)" "  the advice in the caption"
is "$(grep -c 'class="series"' "$GPUMEM_CLUSTER_TMP/job$t1.svg")" 5 "  five lines: HBM, SM, rx, tx, memory"
run asu "$GM" job "$t1" --site "$t/site.yaml" --svg "$GPUMEM_CLUSTER_TMP/id.svg"
is "$rc" 0 "job JOBID --svg: exit 0, from the site file's report.dir, as the user" || diag "$out"
cmp -s "$GPUMEM_CLUSTER_TMP/job$t1.svg" "$GPUMEM_CLUSTER_TMP/id.svg" && pass "  the same picture as --report's" ||
	fail "  the same picture as --report's"
run asu "$GM" job "$t1" --site /nonexistent.yaml --svg "$GPUMEM_CLUSTER_TMP/x.svg"
is "$rc" 2 "job JOBID --svg with a site file that is not there: 2"

"$CL" stop
done_testing
