#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What each job got, in Slurm's accounting: a real slurmdbd on a private
# MariaDB (tests/slurm/cluster --accounting), gpumem-acct in the nodes'
# Epilog, jobs through real srun.  Each node's record lands in the job's
# AdminComment (sacct), `gpumem job` shows it to the job's user and to
# nobody else (PrivateData=jobs), another tool's content (jobstats' JS1:)
# survives, an 8-GPU node's record stays under 1 KiB, the job's profile reaches
# `gpumem job` and `gpumem advise` (the sampler over the stand-in NVML; the site file's
# advice: rules where gpumem reads it), garbled records are
# refused with a clear message.  The GPU check is the stand-in (CI has no
# GPU); everything else is real.
. "$top_srcdir/tests/lib.sh"
slurm_test accounting
GM="$top_builddir/plugin/cli/gpumem"
acct_setup
mkdir -p "$t/fail" "$t/syn"
chmod 777 "$t/fail"
cat >>"$t/site.yaml" <<YAML
advice:                          # the plugin and gpumem-acct take it; gpumem advise follows it
  - name: hot-hbm
    when: dram_bw_util.mean >= 70
    policy: none
    reason: "the site's own rule (DRAM mean {dram_bw_util.mean}%)"
YAML
printf 'version: 1\nunified_memory:\n  preferred_location: gpu\n  prefetch: gpu\ncheck:\n  after: true\n' >"$t/pol.yaml"
chmod 644 "$t/pol.yaml"

# --- an 8-GPU node's record: at most 1 KiB, with every GPU failing ---------------
{
	for ph in before after; do
		echo "R|4711|batch|gpu01|$ph|2026-11-22T03:4${#ph}:00Z|ran|0,1,2,3,4,5,6,7||alice|true|"
		for i in 0 1 2 3 4 5 6 7; do
			echo "D|$i|GPU-0000000$i-aaaa-bbbb-cccc-dddddddddddd|NVIDIA H200|43$i$i.5|4100|3960|41$i$i.2|4200|5$i.3|5$i.9|memtest:$((100 + i * 37))"
		done
	done
} | sh "$top_srcdir/tests/cli/report-gen.sh" write "$t/syn"
python3 - "$t/syn" <<'EOF'
import glob, json, sys
for f in glob.glob(sys.argv[1] + "/job*.json"):
    d = json.load(open(f))
    d["policy"] = "a-rather-long-policy-name-for-a-test.yaml"
    d["drained"] = d["phase"] == "after"
    d["effective"] = {"l2": {"persisting_limit": "25%"}, "mps": {"active_thread_percentage": 50, "daemon": "job"},
                      "unified_memory": {"preferred_location": "gpu", "accessed_by": ["cpu", "gpu"],
                                         "read_mostly": True, "prefetch": "gpu",
                                         "placement": "stripe", "gpu_fraction": 0.5}}
    json.dump(d, open(f, "w"))
EOF
run "$ACCT" record --dir "$t/syn" --job 4711 --node gpu01
seg=$(printf '%s\n' "$out" | sed -n 2p)
size=${#seg}
diag "8-GPU node, both phases, every GPU failing with a reason: record $size bytes in AdminComment"
[ "$rc" = 0 ] && [ "$size" -gt 100 ] && [ "$size" -le 1024 ] && pass "8-GPU record is $size bytes (<= 1024)" ||
	fail "8-GPU record: rc $rc, $size bytes: $out"
is "$(printf '%s\n' "$out" | sed -n 1p | json_in 'len(d["checks"][1]["gpus"]), d["drained"], d["eff"]["um"]')" \
	"(8, True, 'pl=gpu ab=cpu,gpu rm pf=gpu stripe=0.5')" "the record holds 8 GPUs, the drain and the UM advice"
unlike "$seg" '[A-Za-z0-9+/='"'"'"\\]' "the segment has no base64 character, quote or backslash"

# --- the cluster, with accounting ------------------------------------------------------
t0=$(date +%s%N)
acct_cluster_start --nodes 2 --gpus 1 --epilog "$t/epilog" --plugstack "$t/plug.conf"
diag "$(grep '^cluster: ' "$t/start.log")" "start --accounting took $((($(date +%s%N) - t0) / 1000000)) ms"
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
U=$GPUMEM_TEST_USER
comment() { sacct -X -n -P -j "$1" -o AdminComment 2>/dev/null; }
# wait_segments JOB N: until the job's AdminComment holds N records (bounded).
wait_segments() {
	for _ in $(seq 1 120); do
		[ "$(comment "$1" | grep -o '{~' | wc -l)" -ge "$2" ] && return 0
		sleep 0.5
	done
	return 1
}

# --- a user's job on two nodes: one record per node, in sacct and in gpumem job -------
touch "$t/fail/gpumem2"
run runuser -u "$U" -- env PATH="$PATH" SLURM_CONF="$SLURM_CONF" srun -N2 --gres=gpu:1 --gpumem-policy="$t/pol.yaml" \
	sh -c '[ "$SLURM_NODEID" = 0 ] && echo "job=$SLURM_JOB_ID"; sleep 1'
jid=$(jobid_of "$out")
[ -n "$jid" ] || diag "srun: $out"
wait_segments "$jid" 2 && pass "job $jid: two node records in sacct's AdminComment" ||
	fail "job $jid: AdminComment is '$(comment "$jid")'; gpumem-acct said: $(tail -3 "$t/acct.log")"
run runuser -u "$U" -- env PATH="$PATH" SLURM_CONF="$SLURM_CONF" "$GM" job "$jid"
is "$rc" 0 "gpumem job as the job's user: exit 0"
like "$out" "node gpumem1  policy [^ ]*/pol.yaml" "gpumem job names node 1 and the policy"
like "$out" "um pl=gpu pf=gpu" "gpumem job shows the effective UM advice"
like "$out" "check after  fail" "gpumem job shows node 2's failing check"
like "$out" "triad 1200" "gpumem job shows the figures"
like "$out" "    evidence: measured: no NVML evidence: gpumem-health is not installed" "gpumem job says what each check rests on (issue 35: the default min_interval, no gpumem-health here)"
run runuser -u "$U" -- env PATH="$PATH" SLURM_CONF="$SLURM_CONF" "$GM" job "$jid" --json
is "$(printf '%s' "$out" | json_in 'sorted((n["node"], n["checks"][0]["verdict"], n["checks"][0]["gpus"][0][3]) for n in d[0]["nodes"])')" \
	"[('gpumem1', 'pass', 4100), ('gpumem2', 'fail', 1200)]" "gpumem job --json: node, verdict, triad"
# The job's profile (issue 25): each node's record carries it; job and advise show it.
is "$(printf '%s' "$out" | json_in 'sorted((n["node"], n["prof"]["st"], n["prof"]["g"][0]["dram"], n["prof"]["g"][0]["n"] >= 3) for n in d[0]["nodes"])')" \
	"[('gpumem1', 'ran', 70, True), ('gpumem2', 'ran', 70, True)]" "each node's record carries the job's profile (DRAM mean 70%, 3 samples or more)"
run runuser -u "$U" -- env PATH="$PATH" SLURM_CONF="$SLURM_CONF" "$GM" job "$jid"
like "$out" "HBM bandwidth: mean 70%, p95 70% of what this GPU can do: memory-bound" "gpumem job prints the profile in plain words"
run runuser -u "$U" -- env PATH="$PATH" SLURM_CONF="$SLURM_CONF" "$GM" advise "$jid"
is "$(printf '%s\n' "$out" | grep -c 'advice: stream.yaml: memory-bound')" 2 "gpumem advise: stream.yaml for the GPU of each node"
# The site file's advice: section (issue 34) is the table in force where gpumem reads that file.
run runuser -u "$U" -- env PATH="$PATH" SLURM_CONF="$SLURM_CONF" GPUMEM_SITE="$t/site.yaml" "$GM" advise "$jid"
is "$(printf '%s\n' "$out" | grep -c "advice: the site's own rule (DRAM mean 70%)")" 2 \
	"gpumem advise with the site file: its own rule for the GPU of each node"
rm -f "$t/fail/gpumem2"

# --- PrivateData=jobs: another user's job is not shown ---------------------------------
# (-w gpumem1: the hand-run gpumem-acct below reads gpumem1's reports)
run srun -N1 -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/pol.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
rjid=$(jobid_of "$out")
wait_segments "$rjid" 1 || fail "root's job $rjid got no record"
run "$GM" job "$rjid"
is "$rc" 0 "gpumem job as root on root's job: exit 0"
run runuser -u "$U" -- env PATH="$PATH" SLURM_CONF="$SLURM_CONF" "$GM" job "$rjid"
is "$rc" 1 "gpumem job as $U on root's job: exit 1"
like "$out" "not in accounting, or not yours to see" "and says why, without the record"

# --- jobstats' content (set as jobstats does, with sacctmgr) survives ---------------------
b64=$(python3 -c 'import base64,gzip,json; print(base64.b64encode(gzip.compress(json.dumps({"nodes": {"gpumem1": {"cpus": 4}}}).encode())).decode())')
sacctmgr -i modify job where jobid="$rjid" set AdminComment="JS1:$b64" >/dev/null
planted=$(comment "$rjid")
like "$planted" '^(JS1|js1):' "jobstats' AdminComment planted with sacctmgr (lower-cased before 23.02)"
env SLURM_CONF="$SLURM_CONF" "$ACCT" epilog --site "$t/site.yaml" --job "$rjid" --node gpumem1 2>>"$t/acct.log"
now=$(comment "$rjid")
is "${now%% *}" "$planted" "jobstats' content is kept byte for byte beside the record"
like "$now" ' \{~[^ ]*~\}$' "gpumem's record follows it" || diag "gpumem-acct said: $(tail -8 "$t/acct.log")"
if [ "$planted" = "JS1:$b64" ]; then
	is "$(python3 -c 'import base64,gzip,json,sys; d=sys.argv[1]; print(json.loads(gzip.decompress(base64.b64decode(d[4:])))["nodes"]["gpumem1"]["cpus"])' "$now")" 4 \
		"jobstats' own decoder still reads its data"
else
	diag "this sacctmgr lower-cased the planted value (before 23.02): jobstats' data is not decodable here anyway"
fi
run "$GM" job "$rjid"
is "$rc" 0 "gpumem job reads the record beside jobstats' content"

# --- content sacctmgr would change is never rewritten -----------------------------------
run runuser -u "$U" -- env PATH="$PATH" SLURM_CONF="$SLURM_CONF" srun -N1 -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/pol.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
ujid=$(jobid_of "$out")
wait_segments "$ujid" 1 || fail "job $ujid got no record"
# A backslash: MySQL reads "\\" as one, and would read that one as an escape.
sacctmgr -i modify job where jobid="$ujid" set AdminComment='other-tool:a\\b' >/dev/null
before=$(comment "$ujid")
like "$before" 'other-tool:a\\' "another tool's text with a backslash planted"
env SLURM_CONF="$SLURM_CONF" "$ACCT" epilog --site "$t/site.yaml" --job "$ujid" --node gpumem1 2>"$t/refuse.log"
is "$?" 0 "gpumem-acct epilog exits 0 even when it does not write"
is "$(comment "$ujid")" "$before" "another tool's text that sacctmgr would alter is left as it was"
like "$(cat "$t/refuse.log")" "not written: .*would not survive sacctmgr unchanged" "and the log says why"

# --- garbled records are refused, with a clear message -------------------------------------
sacctmgr -i modify job where jobid="$ujid" set AdminComment='{~!!!!!~} {~,,zz~} {~!#$%~}' >/dev/null
run "$GM" job "$ujid"
is "$rc" 2 "gpumem job on garbled records: exit 2"
like "$out" "record 1 refused: odd length 5" "odd number of digits: refused"
like "$out" "record 2 refused: character 'z' .* is no digit of the record's alphabet" "foreign character: refused"
like "$out" "record 3 refused: not a compressed record" "not deflate data: refused"

# --- a record's strings reach the terminal cleaned (issue 23, finding 9) -----------------
# A check runs as the user, who can make its reasons say anything: a C1 CSI
# (U+009B) and bidirectional overrides and isolates in a failing GPU's reason.
printf 'R|4712|epilog|gpu01|after|2026-11-22T03:40:00Z|ran|0||alice|false|\nD|0|GPU-00000000-aaaa-bbbb-cccc-dddddddddddd|NVIDIA H200|4300|4100|3960|4100|4200|55|55|memtest:3\n' |
	sh "$top_srcdir/tests/cli/report-gen.sh" write "$t/hostile"
python3 - "$t/hostile" <<'PY'
import glob, json, sys
for f in glob.glob(sys.argv[1] + "/job*.json"):
    d = json.load(open(f))
    d["check"]["devices"][0]["reasons"] = ["\u009b2J\u202eliaf\u2066x\u2069"]
    json.dump(d, open(f, "w"))
PY
seg=$("$ACCT" record --dir "$t/hostile" --job 4712 --node gpu01 | sed -n 2p)
sacctmgr -i modify job where jobid="$ujid" set AdminComment="$seg" >/dev/null
run "$GM" job "$ujid"
like "$out" "gpu 0 +fail" "a record with control characters in a reason is shown"
unlike "$out" "$(printf '\302\233')|$(printf '\342\200\256')|$(printf '\342\201\246')|$(printf '\342\201\251')" "... no C1 control or bidirectional override reaches the terminal"
like "$out" "\?2J\?liaf\?x\?" "... each shown as one '?'"

# --- stop: no daemon of the cluster is left ------------------------------------------------
"$CL" stop
left=$(pgrep -af 'mariadbd|slurmdbd' | grep -F "$GPUMEM_CLUSTER_DIR" )
is "$left" "" "stop ends MariaDB and slurmdbd"
for p in $(pgrep slurmdbd); do
	grep -qzxF "GPUMEM_CLUSTER_DAEMON=$GPUMEM_CLUSTER_DIR" /proc/"$p"/environ 2>/dev/null && fail "slurmdbd $p is left"
done
done_testing
