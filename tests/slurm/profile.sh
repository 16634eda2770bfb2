#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The job's profile (issue 25) on a real local Slurm: the job prolog starts
# the sampler as gpumem-sample in a session of its own, the user cannot signal
# it, the epilog stops it and puts its profile in the job's report (the
# after-check's, else one of phase "job"), `gpumem advise --report` turns
# it into advice; a sampler that writes garbage, hangs on SIGTERM or dies
# never fails or holds up the job or its epilog; the site decides whether
# users may turn it off; no GPU, no sampler.
# No GPU here: the real gpumem-sample over the stand-in NVML library
# (tests/fake-nvml), behind a small wrapper (below) that also plays the
# misbehaving samplers; Slurm, the plugin and its hooks are real.
. "$top_srcdir/tests/lib.sh"
slurm_test profile
B=$t/bin
mkdir -p "$t/reports"
standin_bin "$B"
sampler_standin "$B"
site() {   # site FILE [SECTIONS]
	cat >"$1" <<YAML
version: 1
limits:
  sections: [${2:-l2, mps, unified_memory, check}]
report:
  dir: $t/reports
profile:
  interval_ms: 200
YAML
	chmod 644 "$1"
}
site "$t/site.yaml"
site "$t/site-open.yaml" "l2, mps, unified_memory, check, profile"
printf 'version: 1\ncheck:\n  after: true\n' >"$t/after.yaml"
printf 'version: 1\nprofile:\n  enabled: false\n' >"$t/off.yaml"
chmod 644 "$t"/*.yaml
plug() { plugstack "$2" site=$1 libexecdir=$B check=$B/standin-check nvidia_dev=$t/nvidiactl mps_control=$B/nvidia-cuda-mps-control ${3:-}; }
plug "$t/site.yaml" "$t/plugstack.conf"
plug "$t/site-open.yaml" "$t/open.conf"
plugstack "$t/nogpu.conf" site=$t/site.yaml libexecdir=$B check=$B/standin-check nvidia_dev=$t/absent
"$CL" start --nodes 1 --gpus 1 --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
G="$top_builddir/plugin/cli/gpumem"
nruns() { wc -l <"$B/sample.runs" | tr -d ' '; }
# report JOB: the job's epilog report on gpumem1 (after, else job), once written
# (at most 60 s: a loaded machine is slow, a passing run never waits it out).
report() {
	local f
	for _ in $(seq 1 240); do
		for f in "$t/reports/job$1.epilog.gpumem1.after.json" "$t/reports/job$1.epilog.gpumem1.job.json"; do
			[ -f "$f" ] && { echo "$f"; return; }
		done
		sleep 0.25
	done
}
# samplers: what runs as the sampler's gpumem-sample (the stand-in's 'sleep 600'
# included) in this cluster's node, i.e. in its slurmd's mount namespace as it
# is now (cluster_pids): another test run's samplers on the same machine (their
# own clusters) are not ours.  Not a namespace noted once at the start: each
# restart-slurmd gives the node a new one, and the old one's inode number,
# once freed, may be given to another run's node (seen in the suite proof:
# another run's stuck stand-in counted as ours).
samplers() {
	local p
	for p in $(cluster_pids 'gpumem-sample|sleep 600'); do
		ps -o uid=,stat=,args= -p "$p"
	done | awk -v u="$(id -u gpumem-sample)" '$1 == u && $2 !~ /^Z/ { $1 = ""; sub(/^ /, ""); print }'
}

# --- a job gets a profile, with no change to the job -----------------------------------
run asuser srun -N1 --gres=gpu:1 sh -c 'echo "job=$SLURM_JOB_ID"; sleep 2'
jid=$(jobid_of "$out")
f=$(report "$jid")
is "${f##*/}" "job$jid.epilog.gpumem1.job.json" "no after-check: the epilog writes a report of phase job"
is "$(json "$f" 'd["phase"] + "|" + d["status"] + "|" + d["verdict"] + "|" + str(d["check"])')" "job|not_run|not_run|None" "... status and verdict not_run, no check"
is "$(json "$f" 'd["profile"]["state"] + "|" + d["profile"]["gpus"][0]["source"]')" "ran|gpm" "... carrying the profile the sampler took (GPM)"
is "$(json "$f" 'float(d["profile"]["gpus"][0]["metrics"]["dram_bw_util"]["mean"])')" "70.0" "... with the GPU's figures (DRAM 70%)"
is "$(json "$f" 'd["profile"]["gpus"][0]["samples"] >= 5')" True "... sampled every 200 ms over the 2 s job ($(json "$f" 'd["profile"]["gpus"][0]["samples"]') samples)"
read -r uid gid groups pid sid rest <"$B/sample.runs"
is "$uid $gid $groups" "$(id -u gpumem-sample) $(id -g gpumem-sample) [$(id -g gpumem-sample)]" "the sampler ran as the package's gpumem-sample, with no group of the user's"
unlike "$uid" "^(65534|$(id -u gpumem-check))$" "... not nobody's uid, nor check_user's"
is "$sid" "$pid" "... in a session of its own"
like "$rest" "--interval-ms 200 --gpus 0" "... every interval_ms, on the job's GPU"
is "$(samplers)" "" "... and is gone after the job"
like "$(grep -h "job $jid: sampler" "$GPUMEM_CLUSTER_DIR"/log/slurmd.*.log | tr '\n' ' ')" "sampler [0-9]+ started .* sampler [0-9]+ stopped" "slurmd's log: started and stopped"
run "$G" advise --report "$f"
like "$out" "gpu 0 +advice: stream.yaml: memory-bound" "gpumem advise --report: DRAM mean 70% -> stream.yaml"
run "$G" job --report "$f"
like "$out" "HBM bandwidth: mean 70%" "gpumem job --report prints the profile in plain words"

# --- the user cannot stop or signal it -------------------------------------------------
# (the prolog's fork is the sampler at once, its exec may still be under way: wait for
# its line in sample.runs, bounded; its pid from there, not a pgrep, which could find
# another suite's sampler: all share one pid namespace)
n=$(nruns)
run asuser srun -N1 --gres=gpu:1 sh -c 'echo "job=$SLURM_JOB_ID"; for i in $(seq 1 600); do pid=$(sed -n "$2{s/^[^]]*\] //;s/ .*//;p;}" "$1"); [ -n "$pid" ] && break; sleep 0.1; done; echo "pid=$pid $(ps -o args= -p "$pid")"; kill -TERM "$pid" 2>&1 && echo SIGNALLED || echo REFUSED; kill -STOP "$pid" 2>/dev/null && echo STOPPED' sh "$B/sample.runs" "$((n + 1))"
like "$out" "pid=[0-9]+ .*gpumem-sample" "the job's task sees the sampler"
like "$out" "REFUSED" "... but cannot signal it"
unlike "$out" "SIGNALLED|STOPPED" "... nor stop it"
f=$(report "$(jobid_of "$out")")
is "$(json "$f" 'd["profile"]["state"]')" ran "... and the profile is there"

# --- with an after-check, its report carries the profile ------------------------------
run asuser srun -N1 --gres=gpu:1 --gpumem-policy="$t/after.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; sleep 1'
jid=$(jobid_of "$out")
f=$(report "$jid")
is "${f##*/}" "job$jid.epilog.gpumem1.after.json" "with an after-check: its report"
is "$(json "$f" 'd["verdict"] + "|" + d["profile"]["state"]')" "pass|ran" "... carries the profile"
[ -f "$t/reports/job$jid.epilog.gpumem1.job.json" ] && fail "... and no report of phase job" || pass "... and no report of phase job"

# --- users may not turn it off, unless the site lets them --------------------------------
n=$(nruns)
run asuser srun -N1 --gres=gpu:1 --gpumem-policy="$t/off.yaml" true
like "$out" "section 'profile' is not open to users" "profile.enabled: false where the site keeps the section: warned"
wait_idle
is "$(nruns)" "$((n + 1))" "... and the profile is still taken"
"$CL" restart-slurmd --plugstack "$t/open.conf" >/dev/null 2>&1
n=$(nruns)
run asuser srun -N1 --gres=gpu:1 --gpumem-policy="$t/off.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
wait_idle
is "$(nruns)" "$n" "a site that lists profile in limits.sections: the user may turn it off"
[ -e "$t/reports/job$(jobid_of "$out").epilog.gpumem1.job.json" ] && fail "... and then no report" || pass "... and then no report"
"$CL" restart-slurmd --plugstack "$t/plugstack.conf" >/dev/null 2>&1

# --- misbehaving samplers never fail or hold up the job ---------------------------------
echo garbage >"$B/sample.mode"; chmod 644 "$B/sample.mode"
run asuser srun -N1 --gres=gpu:1 sh -c 'echo "job=$SLURM_JOB_ID"; echo ran'
like "$out" "ran" "a sampler writing a bad document: the job runs"
f=$(report "$(jobid_of "$out")")
is "$(json "$f" 'd["profile"]["state"]')" refused "... the profile is refused"
like "$(json "$f" 'd["profile"]["reason"]')" "^the sampler's profile is not valid: [^ ]+: " "... naming what is wrong"
wait_idle && pass "... the node is idle again" || fail "node state $(node_state)"

echo stuck >"$B/sample.mode"
s=$(date +%s%N)
run asuser srun -N1 --gres=gpu:1 sh -c 'echo "job=$SLURM_JOB_ID"; echo ran'
like "$out" "ran" "a sampler that ignores SIGTERM: the job runs"
wait_idle && pass "... the epilog ends and the node is idle" || fail "node state $(node_state)"
e=$(date +%s%N)
# Not a timed assert (a loaded machine is slow): the epilog killed it rather than waiting out its 600 s.
like "$(grep -h "job $(jobid_of "$out"): sampler" "$GPUMEM_CLUSTER_DIR"/log/slurmd.*.log)" "sampler [0-9]+ stopped: the sampler did not stop on SIGTERM and was killed" "... slurmd's log: killed (SIGKILL 2 s after SIGTERM), not waited for ($(( (e - s) / 1000000 )) ms)"
f=$(report "$(jobid_of "$out")")
like "$(json "$f" 'd["profile"]["reason"]')" "did not stop on SIGTERM and was killed" "... the report says it was killed"
# The epilog waits up to 0.5 s for the SIGKILLed sampler to go; a loaded
# machine may take longer to run its exit, so allow 10 s.  One the epilog
# never killed would still be there.
for _ in $(seq 1 240); do [ -z "$(samplers)" ] && break; sleep 0.25; done
is "$(samplers)" "" "... and nothing of it is left (within 10 s)"

echo crash >"$B/sample.mode"
run asuser srun -N1 --gres=gpu:1 sh -c 'echo "job=$SLURM_JOB_ID"; sleep 0.5; echo ran'
like "$out" "ran" "a sampler that died at once: the job runs"
f=$(report "$(jobid_of "$out")")
like "$(json "$f" 'd["profile"]["state"] + ": " + d["profile"]["reason"]')" "refused: the sampler left no profile: the sampler had ended before the job did" "... the report says so"
wait_idle && pass "... the node is idle again" || fail "node state $(node_state)"
rm -f "$B/sample.mode"

# --- no GPU on the node: no sampler, the log says why ------------------------------------
"$CL" restart-slurmd --plugstack "$t/nogpu.conf" >/dev/null 2>&1
n=$(nruns)
run asuser srun -N1 sh -c 'echo "job=$SLURM_JOB_ID"'
jid=$(jobid_of "$out")
wait_idle
is "$(nruns)" "$n" "a node without a GPU: no sampler"
like "$(grep -h "job $jid: profile" "$GPUMEM_CLUSTER_DIR"/log/slurmd.*.log)" "profile skipped: no GPU on this node" "... slurmd's log says why"
ls "$t/reports" | grep -q "^job$jid\." && fail "... and no report" || pass "... and no report"
done_testing
