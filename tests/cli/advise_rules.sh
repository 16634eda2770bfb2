#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The advice rules as site data (issue 34): `gpumem advise --rules` prints
# the built-in table as etc/gpumem.yaml's commented advice: section says it,
# that section read back as a site file gives the same table, a site's own
# table is the one in force (gpumem advise --report follows it), and each
# bad table is refused at file:line:col by gpumem validate, gpumem advise
# --rules and gpumem job.
. "$top_srcdir/tests/lib.sh"
ACCT="$top_builddir/plugin/acct/gpumem-acct"
[ -x "$ACCT" ] || skip_all "gpumem-acct was not built"
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir "$t/r" "$t/pol"
unset GPUMEM_SITE
cp "$top_srcdir"/policies/*.yaml "$t/pol/"

# The built-in table, and etc/gpumem.yaml's commented copy of it.
run "$GPUMEM" advise --rules --site "$t/none.yaml"
is "$rc" 2 "--rules with a site file that is not there: 2"
printf 'version: 1\npolicy_dir: %s\n' "$t/pol" >"$t/plain.yaml"
run "$GPUMEM" advise --rules --site "$t/plain.yaml"
is "$rc" 0 "--rules, a site file without advice:: 0"
like "$out" "^# The advice rules in force: the built-in table \(no advice: section in $t/plain.yaml\)" \
	"  says the table is built in"
builtin=$(printf '%s\n' "$out" | grep -v '^#')
is "$(printf '%s\n' "$builtin" | grep -c '^  - name: ')" 8 "  eight rules"
is "$(printf '%s\n' "$builtin" | sed -n 's/^  - name: //p' | tr '\n' ' ')" \
	"short idle faulting link-bound setaside hbm-bound underused compute-bound " "  in today's order"
like "$builtin" 'when: "pcie_tx.mean >= 0.5 \* pcie_rx.mean"|- "pcie_tx.mean >= 0.5 \* pcie_rx.mean"' \
	"  faulting's ratio"
etc=$(sed -n '/^# advice:$/,$p' "$top_srcdir/etc/gpumem.yaml" | sed 's/^# \{0,1\}//')
is "$etc" "$builtin" "etc/gpumem.yaml's commented advice: section is the built-in table"

# That section, uncommented, as a site's own: the same table, valid.
{ printf 'version: 1\npolicy_dir: %s\n' "$t/pol"; printf '%s\n' "$etc"; } >"$t/same.yaml"
run "$GPUMEM" validate --site "$t/same.yaml"
is "$rc" 0 "the built-in table as a site file: valid"
run "$GPUMEM" advise --rules --site "$t/same.yaml"
is "$rc" 0 "  --rules: 0"
like "$out" "^# The advice rules in force: the site file's \($t/same.yaml\)" "  from the site file"
is "$(printf '%s\n' "$out" | grep -v '^#')" "$builtin" "  the same table, read back"

if command -v python3 >/dev/null 2>&1; then
	run "$GPUMEM" advise --rules --json --site "$t/plain.yaml"
	is "$rc" 0 "--rules --json: 0"
	is "$(printf '%s' "$out" | json_in '(d["source"], [(r["name"], len(r["when"]), r["policy"], len(r["in_effect"])) for r in d["rules"]])')" \
		"('built-in', [('short', 1, None, 0), ('idle', 3, 'mps-half.yaml', 1), ('faulting', 3, 'zerocopy.yaml', 1), ('link-bound', 1, 'prefetch.yaml', 1), ('setaside', 2, 'stream.yaml', 0), ('hbm-bound', 1, 'stream.yaml', 1), ('underused', 2, 'mps-half.yaml', 1), ('compute-bound', 1, None, 0)])" \
		"  source, each rule's name, conditions, policy"
	is "$(printf '%s' "$out" | json_in '[r["name"] for r in d["rules"] if r["promise"] == "gain"], sorted(set(r["promise"] for r in d["rules"]))')" \
		"(['faulting'], ['gain', 'not-slower'])" "  each rule's promise: faulting alone a gain"
else
	skip "python3 is needed to read the JSON"
fi

# A site's own table: idle dropped, a rule of its own first.
cat >"$t/own.yaml" <<EOT
version: 1
policy_dir: $t/pol
advice:
  - name: busy-link
    when: "pcie_rx.mean >= 5 and pcie_tx.mean >= 1.5 * pcie_rx.mean"
    policy: prefetch
    reason: "tx {pcie_tx.mean} GB/s over rx {pcie_rx.mean} GB/s, {samples} sample{samples:s}"
    in_effect: eff.um.pf has gpu
  - name: hbm-bound
    when: [dram_bw_util.p95 >= 90]
    policy: stream.yaml
    reason: "HBM p95 {dram_bw_util.p95}%"
  - name: other
    when: always
    policy: none
    reason: "SM {sm_util.mean}%"
EOT
run "$GPUMEM" validate --site "$t/own.yaml"
is "$rc" 0 "a site's own table: valid"
run "$GPUMEM" advise --rules --site "$t/own.yaml"
is "$(printf '%s\n' "$out" | sed -n 's/^  - name: //p' | tr '\n' ' ')" "busy-link hbm-bound other " \
	"  --rules: its rules, in its order"
like "$out" "    policy: prefetch.yaml" "  a policy name becomes NAME.yaml"

# A report of job 12 on gpu01 with one GPU's profile: rx 7.5, tx 15, DRAM p95 91.
m() { printf '"%s":{"unit":"%s","source":"gpm","mean":%s,"median":%s,"p95":%s,"max":%s,"above":{},"timeline":[%s]}' "$1" "$2" "$3" "$3" "$4" "$4" "$3"; }
prof='{"schema":"gpumem-profile/1","state":"ran","reason":null,"interval_ms":1000,"seconds":12.0,"gpus":[{"index":0,"uuid":"GPU-0","name":"NVIDIA H100 80GB HBM3","source":"gpm","note":null,"samples":12,"timeline_step_s":1.0,"metrics":{'
prof="$prof$(m dram_bw_util % 62 91),$(m sm_util % 50 70),$(m sm_occupancy % 40 50),$(m pcie_rx GB/s 7.5 12),$(m pcie_tx GB/s 15 15)"
prof="$prof"',"nvlink_rx":null,"nvlink_tx":null,"mem_used":{"unit":"GiB","source":"nvml-memory","mean":5.0,"max":7.9,"timeline":[5.0]}}}]}'
printf '{"schema": "gpumem-report/1", "job": 12, "step": "epilog", "node": "gpu01", "user": "alice", "uid": 1000, "policy": "none", "phase": "after", "time": "2026-11-25T17:00:00Z", "gpus": "0", "status": "ran", "reason": null, "exit_code": 0, "verdict": "pass", "drained": false, "effective": {"l2": {"persisting_limit": null}, "mps": {"active_thread_percentage": null, "daemon": "none"}, "unified_memory": {"preferred_location": "none", "accessed_by": [], "prefetch": "gpu"}}, "check": null, "profile": %s}\n' \
	"$prof" >"$t/r/job12.x.gpu01.after.json"
rep="$t/r/job12.x.gpu01.after.json"
run "$GPUMEM" advise --report "$rep" --site "$t/plain.yaml"
like "$out" "  gpu 0   advice: zerocopy.yaml: managed memory moved page by page" \
	"the built-in table: faulting"
run "$GPUMEM" advise --report "$rep" --site "$t/own.yaml"
is "$rc" 0 "the site's table: exit 0"
like "$out" "  gpu 0   advice: prefetch.yaml: tx 15 GB/s over rx 7.5 GB/s, 12 samples; this job already ran with that \(um pf=gpu\)" \
	"  its first rule, its reason, in effect by its in_effect"
GPUMEM_SITE="$t/own.yaml" run "$GPUMEM" job --report "$rep"
like "$out" "      advice: prefetch.yaml: tx 15 GB/s" "gpumem job: \$GPUMEM_SITE's table"

# Job 13 under persist.yaml's 50% set-aside, HBM p95 75% (below its peak), its
# after-check's L2 A/B measuring the set-aside's cost: the setaside rule, and
# gpumem job shows the cost the check measured.
prof13='{"schema":"gpumem-profile/1","state":"ran","reason":null,"interval_ms":1000,"seconds":12.0,"gpus":[{"index":0,"uuid":"GPU-0","name":"NVIDIA H200","source":"gpm","note":null,"samples":12,"timeline_step_s":1.0,"metrics":{'
prof13="$prof13$(m dram_bw_util % 55 75),$(m sm_util % 50 70),$(m sm_occupancy % 40 50),$(m pcie_rx GB/s 0.1 0.2),$(m pcie_tx GB/s 0 0)"
prof13="$prof13"',"nvlink_rx":null,"nvlink_tx":null,"mem_used":{"unit":"GiB","source":"nvml-memory","mean":5.0,"max":7.9,"timeline":[5.0]}}}]}'
sa13='"l2_ab": {"run": true, "persisting_bytes": 31457280, "speedup": 1.0, "error": null, "setaside": {"run": true, "percent": 50.00, "bytes": 31457280, "repeats": 6, "triad_without_gbps": 4170.00, "triad_with_gbps": 3127.50, "ratio": 0.7500, "error": null}}'
printf '{"schema": "gpumem-report/1", "job": 13, "step": "epilog", "node": "gpu01", "user": "alice", "uid": 1000, "policy": "persist", "phase": "after", "time": "2026-11-25T17:00:00Z", "gpus": "0", "status": "ran", "reason": null, "exit_code": 0, "verdict": "pass", "drained": false, "effective": {"l2": {"persisting_limit": "50%%"}, "mps": {"active_thread_percentage": null, "daemon": "none"}, "unified_memory": {"preferred_location": "none", "accessed_by": [], "prefetch": "none"}}, "check": {"devices": [{"index": 0, "verdict": "pass", "reasons": [], "metrics": {"triad": {"best_gbps": 4100}}, %s}]}, "profile": %s}\n' \
	"$sa13" "$prof13" >"$t/r/job13.x.gpu01.after.json"
rep13="$t/r/job13.x.gpu01.after.json"
run "$GPUMEM" advise --report "$rep13" --site "$t/plain.yaml"
like "$out" "  gpu 0   advice: stream.yaml: the job ran under a persisting-L2 set-aside .*\(DRAM p95 75%, mean 55%\): past 3/16 of L2 a set-aside slows every kernel .*0.73x at 50%" \
	"a 50% set-aside, HBM p95 75%: the setaside rule advises stream.yaml, with the cost"
run "$GPUMEM" job --report "$rep13" --site "$t/plain.yaml"
like "$out" "    l2 set-aside 50% of L2: triad at 0.75x of none \(check.l2_ab\)" \
	"gpumem job: the set-aside's cost the after-check measured"
like "$out" "node gpu01  policy persist  l2 50%" "  under the job's limit"
run "$GPUMEM" job --report "$rep" --site "$t/plain.yaml"
unlike "$out" "l2 set-aside" "a record without it: no such line"
sed 's/"persisting_limit": "50%"/"persisting_limit": "0"/; s/"job": 13/"job": 14/' "$rep13" >"$t/r/job14.x.gpu01.after.json"
run "$GPUMEM" advise --report "$t/r/job14.x.gpu01.after.json" --site "$t/plain.yaml"
like "$out" "  gpu 0   advice: nothing to gain from a memory policy: compute-bound" "persisting_limit 0: no set-aside, not that rule"

# Bad tables: each refused at file:line:col, by validate, advise --rules and job.
bad() { # NAME WANT RULES...: a site file whose advice: is RULES, refused with WANT
	name=$1 want=$2; shift 2
	{ printf 'version: 1\npolicy_dir: %s\nadvice:\n' "$t/pol"; printf '%s\n' "$@"; } >"$t/$name.yaml"
	run "$GPUMEM" validate --site "$t/$name.yaml"
	is "$rc" 1 "$name: validate refuses it"
	like "$out" "^$t/$name.yaml:$want" "  at file:line:col: $want"
}
R='  - name: x'
bad metric "5:11: error: advice: when: unknown metric 'dram_bw'" "$R" '    when: dram_bw.mean > 5' '    policy: none' '    reason: r'
bad statistic "5:11: error: advice: when: unknown statistic 'p99'" "$R" '    when: pcie_rx.p99 > 5' '    policy: none' '    reason: r'
bad kept "5:11: error: advice: when: the profile summary keeps no sm_util.median" "$R" '    when: sm_util.median > 5' '    policy: none' '    reason: r'
bad operator "5:24: error: advice: when: bad operator '=>'" "$R" '    when: sm_util.mean => 5' '    policy: none' '    reason: r'
bad range "6:29: error: advice: when: value 200 out of range for dram_bw_util.p95 \(0 to 100 %\)" \
	"$R" '    when:' '      - "dram_bw_util.p95 > 200"' '    policy: none' '    reason: r'
bad policy "6:13: error: advice: rule 'x' advises fast.yaml, which is not in policy_dir" \
	"$R" '    when: always' '    policy: fast' '    reason: r'
bad duplicate "8:11: error: advice: rule name 'x' twice \(first at line 4\)" \
	"$R" '    when: samples < 3' '    policy: none' '    reason: r' "$R" '    when: always' '    policy: none' '    reason: r'
bad reason "7:21: error: advice: reason: '{sm_util.max}' is no {FIGURE}" "$R" '    when: always' '    policy: none' '    reason: "SM max {sm_util.max}"'
many=
for i in $(seq 0 32); do many="$many  - {name: r$i, when: samples > $i, policy: none, reason: r}
"; done
bad many "36:5: error: advice: more than 32 rules" "$many"

run "$GPUMEM" advise --rules --site "$t/policy.yaml"
is "$rc" 2 "advise --rules with an advised policy missing: 2"
like "$out" "$t/policy.yaml:6:13: error: advice: rule 'x' advises fast.yaml" "  at the rule's policy"
run "$GPUMEM" advise --rules --site "$t/metric.yaml"
is "$rc" 2 "advise --rules, a table that does not parse: 2"
like "$out" "$t/metric.yaml:5:11: error: advice: when: unknown metric" "  said at file:line:col"
run "$GPUMEM" job --report "$rep" --site "$t/operator.yaml"
is "$rc" 2 "gpumem job with a bad table: 2"
like "$out" "gpumem: job: the site file's advice rules cannot be read" "  said so"
unlike "$out" "gpu 0   advice" "  and no advice shown"
run "$GPUMEM" advise 12 --rules
is "$rc" 64 "--rules with a job: 64"
done_testing
