#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# An 8-GPU job's record in Slurm's accounting (issue 35, point 4, the CPU
# side of "the AdminComment record of a 4- and an 8-GPU job fits"): one
# node of 8 stand-in GPUs (tests/slurm/cluster --gpus 8), a job with
# --gres=gpu:8 checked before and after by the stand-in check giving 8
# devices with every field gpumem-check writes (standin-check's D/gpus),
# profiled by the real sampler over the stand-in NVML (8 GPUs), its record
# put in AdminComment by the real gpumem-acct through a real slurmdbd.
# Asserted: the segment is within the 4096-byte segment limit (its size
# printed), and `gpumem job` shows per-GPU figures of both checks and the
# profile for all 8 GPUs.  tests/slurm/accounting.sh covers the worst case
# (every GPU failing with a reason) from synthetic reports; this is the
# same record from a real job's reports.
. "$top_srcdir/tests/lib.sh"
slurm_test acct8
GM="$top_builddir/plugin/cli/gpumem"
acct_setup
echo 8 >"$t/gpus"                 # the stand-in check reports 8 devices
sed -i '/^export LD_LIBRARY_PATH/a export FAKE_NVML_GPUS=8' "$t/libexec/gpumem-sample"
grep -q FAKE_NVML_GPUS=8 "$t/libexec/gpumem-sample" || { fail "the sampler wrapper was not extended"; done_testing; }
printf 'version: 1\nl2:\n  persisting_limit: 25%%\ncheck:\n  before: true\n  after: true\n' >"$t/pol.yaml"
chmod 644 "$t/pol.yaml" "$t/gpus"
acct_cluster_start --nodes 1 --gpus 8 --epilog "$t/epilog" --plugstack "$t/plug.conf"
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
U=$GPUMEM_TEST_USER
comment() { sacct -X -n -P -j "$1" -o AdminComment 2>/dev/null; }

run runuser -u "$U" -- env PATH="$PATH" SLURM_CONF="$SLURM_CONF" srun -N1 --gres=gpu:8 --gpumem-policy="$t/pol.yaml" \
	sh -c 'echo "job=$SLURM_JOB_ID gpus=$SLURM_STEP_GPUS"; sleep 1'
jid=$(jobid_of "$out")
is "$(printf '%s\n' "$out" | sed -n 's/^job=[0-9]* gpus=//p')" "0,1,2,3,4,5,6,7" "a job on the node's 8 stand-in GPUs"
for _ in $(seq 1 120); do [ -n "$(comment "$jid")" ] && break; sleep 0.5; done
seg=$(comment "$jid")
[ -n "$seg" ] || diag "no AdminComment; gpumem-acct said: $(tail -3 "$t/acct.log")"
is "$(json "$t/reports/job$jid.epilog.gpumem1.after.json" 'len(d["check"]["devices"]), len(d["profile"]["gpus"])' 2>&1)" "(8, 8)" \
	"the job's after report: 8 checked devices, 8 profiled GPUs"
size=${#seg}
diag "8-GPU job, both checks passing, a full profile: AdminComment $size bytes of the 4096-byte segment limit ($((100 * size / 4096))%)"
like "$seg" '^\{~[^ ]*~\}$' "AdminComment holds the node's one record"
[ "$size" -gt 200 ] && [ "$size" -le 4096 ] && pass "the 8-GPU record fits: $size bytes <= 4096" || fail "the 8-GPU record: $size bytes"
run runuser -u "$U" -- env PATH="$PATH" SLURM_CONF="$SLURM_CONF" "$GM" job "$jid" --json
all8="[0, 1, 2, 3, 4, 5, 6, 7]"
is "$(printf '%s' "$out" | json_in 'sorted((c["phase"], [g[0] for g in c["gpus"] if g[1] == "pass" and all(x is not None and x > 0 for x in g[2:6])]) for c in d[0]["nodes"][0]["checks"])' 2>&1)" \
	"[('after', $all8), ('before', $all8)]" "gpumem job --json: both checks with read, triad, h2d and d2h for each of the 8 GPUs"
is "$(printf '%s' "$out" | json_in 'd[0]["nodes"][0]["prof"]["st"], [g["gpu"] for g in d[0]["nodes"][0]["prof"]["g"] if g["dram"] == 70]' 2>&1)" \
	"('ran', $all8)" "gpumem job --json: the profile of each of the 8 GPUs (DRAM mean 70%)"
run runuser -u "$U" -- env PATH="$PATH" SLURM_CONF="$SLURM_CONF" "$GM" job "$jid"
is "$rc" 0 "gpumem job as the job's user: exit 0"
is "$(printf '%s\n' "$out" | grep -cE '^ +gpu ?[0-7]\b.*triad')" 16 "gpumem job prints a line of figures per GPU of each check (16)" ||
	diag "$out"
done_testing
