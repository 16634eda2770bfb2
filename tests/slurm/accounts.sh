#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The helpers' own accounts (doc/admin/checks.md, "The helpers' own accounts";
# HARDENING.md, G7) on a real local Slurm, the plugin's defaults as
# installed: with the accounts the package makes (the cluster makes them
# as it does), the after-check runs as gpumem-check and the sampler as
# gpumem-sample, never nobody's 65534; on a node whose passwd lacks them (a
# mount namespace of this test's own, /etc/passwd and /etc/group bound
# over without them, slurmd restarted in it) slurmd says so at start, the
# after-check is not run (not_run, counted as failed, saying the package's
# account is missing) and the sampler is skipped saying why: nothing runs
# as another uid.
if [ -z "${GPUMEM_ACCOUNTS_NS:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
	GPUMEM_ACCOUNTS_NS=1 exec unshare --mount --propagation private "$BASH" "$0" "$@"
fi
. "$top_srcdir/tests/lib.sh"
slurm_test accounts
[ -n "${GPUMEM_ACCOUNTS_NS:-}" ] || skip_all "needs unshare --mount (a passwd file of the test's own)"
B=$t/bin
mkdir -p "$t/reports"
standin_bin "$B"
sampler_standin "$B"
printf 'version: 1\nreport:\n  dir: %s\nprofile:\n  interval_ms: 200\n' "$t/reports" >"$t/site.yaml"
printf 'version: 1\ncheck:\n  after: true\n' >"$t/after.yaml"
chmod 644 "$t"/*.yaml
plugstack "$t/plugstack.conf" site=$t/site.yaml libexecdir=$B check=$B/standin-check \
	nvidia_dev=$t/nvidiactl mps_control=$B/nvidia-cuda-mps-control
"$CL" start --nodes 1 --gpus 1 --plugstack "$t/plugstack.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
LOG=$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log

# job: an after-checked job; $f its after-report once written.
job() {
	run asuser srun -N1 --gres=gpu:1 --gpumem-policy="$t/after.yaml" sh -c 'echo "job=$SLURM_JOB_ID"; sleep 1'
	jid=$(jobid_of "$out")
	f=$t/reports/job$jid.epilog.gpumem1.after.json
	wait_file "$f" || fail "job $jid: no after-report ($out)"
}

# --- the accounts as the package makes them --------------------------------------------
cu=$(id -u gpumem-check) && su=$(id -u gpumem-sample) || { fail "the cluster made no accounts"; done_testing; }
like "$cu $su" "^[0-9]+ [0-9]+$" "the accounts exist (gpumem-check $cu, gpumem-sample $su)"
[ "$cu" != "$su" ] && [ "$cu" != 65534 ] && [ "$su" != 65534 ] && pass "... two uids, neither nobody's" ||
	fail "... two uids, neither nobody's ($cu, $su)"
job
is "$(json "$f" 'd["status"]')" ran "the after-check ran"
is "$(tail -1 "$B/runs" | cut -d' ' -f4)" "$cu" "... as gpumem-check, by default"
is "$(json "$f" 'd["profile"]["state"]')" ran "the job has a profile"
is "$(tail -1 "$B/sample.runs" | cut -d' ' -f1)" "$su" "... the sampler ran as gpumem-sample, by default"

# --- a node without them: never another uid ----------------------------------------------
grep -v -e '^gpumem-check:' -e '^gpumem-sample:' /etc/passwd >"$t/passwd"
grep -v -e '^gpumem-check:' -e '^gpumem-sample:' /etc/group >"$t/group"
chmod 644 "$t/passwd" "$t/group"
mount --bind "$t/passwd" /etc/passwd && mount --bind "$t/group" /etc/group ||
	{ fail "cannot bind a passwd of the test's own"; done_testing; }
getent passwd gpumem-check >/dev/null && fail "gpumem-check still known" || pass "this namespace has no gpumem-check nor gpumem-sample"
"$CL" restart-slurmd >/dev/null 2>&1 || fail "slurmd did not restart"
for _ in $(seq 1 240); do grep -q "sample_user: the account gpumem-sample" "$LOG" && break; sleep 0.25; done
like "$(grep -a 'check_user: the account' "$LOG" | tail -1)" \
	"gpumem: check_user: the account gpumem-check \(made by gpumem's package\) is missing on this node and plugstack check_user= names none: every check on this node is not run" \
	"slurmd's log says at start that check_user's account is missing"
like "$(grep -a 'sample_user: the account' "$LOG" | tail -1)" "no job on this node gets a profile" \
	"... and the sampler's"
nruns=$(wc -l <"$B/runs")
nsample=$(wc -l <"$B/sample.runs")
job
is "$(json "$f" 'd["status"] + "|" + d["verdict"]')" "not_run|error" "the after-check is not run (counted as failed)"
like "$(json "$f" 'd["reason"]')" "the account gpumem-check \(made by gpumem's package\) is missing" \
	"... the report says the package's account is missing"
is "$(wc -l <"$B/runs")" "$nruns" "... no check ran, as any uid"
is "$(json "$f" 'd["profile"]["state"]')" skipped "the sampler is skipped"
like "$(json "$f" 'd["profile"]["reason"]')" "the account gpumem-sample \(made by gpumem's package\) is missing" \
	"... saying why"
is "$(wc -l <"$B/sample.runs")" "$nsample" "... no sampler ran, as any uid"
like "$(grep -a "job $jid" "$LOG")" "check_user: the account gpumem-check .* is missing" "the job's line in slurmd's log"
done_testing
