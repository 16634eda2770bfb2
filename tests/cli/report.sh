#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem report: every node's check reports, worst first; the filters,
# --json, --svg; and bad files, which cost a warning line each, never the
# listing.
. "$top_srcdir/tests/lib.sh"
gen="$top_srcdir/tests/cli/report-gen.sh"
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
TZ=UTC; export TZ
unset GPUMEM_SITE
run2() { out=$("$@" 2>"$t/stderr"); rc=$?; err=$(cat "$t/stderr"); }
# The cache of rows already read: here, never in the caller's home.
XDG_CACHE_HOME="$t/cache"; export XDG_CACHE_HOME
have_python=; command -v python3 >/dev/null 2>&1 && have_python=1

# One of each verdict and status; expected order, worst first then newest:
# 102 fail, 106 unusable, 105 error (timed out), 101 warn, 104 not_run,
# 103 skipped, 107 pass, 101 pass.
sh "$gen" write "$t/r" <<'EOF'
R|101|0|gpu01|after|2026-11-20T10:00:00Z|ran|0,1||alice|0|
D|0|GPU-a0|NVIDIA H200|4300|4300|3950|4100|4290|54|54|
D|1|GPU-a1|NVIDIA H200|4300|4300|3950|3300|4290|54|54|
R|102|0|gpu02|after|2026-11-21T10:00:00Z|ran|2||bob|1|
D|0|GPU-b2|NVIDIA H200|4300|4300|3950|2900|4290|54|54|
R|103|batch|gpu03|before|2026-11-21T11:00:00Z|skipped||no GPU on this node|alice|0|
R|104|0|gpu03|after|2026-11-21T12:00:00Z|not_run|0|gpumem-check not installed|alice|0|
R|105|0|gpu04|after|2026-11-21T13:00:00Z|timed_out|0|killed: timeout after 60 s|alice|0|
R|106|0|gpu04|after|2026-11-19T13:00:00Z|ran|1||carol|0|
D|0|GPU-d1|NVIDIA H200|-|-|-|-|-|-|-|unusable:1.9 GiB free, below the 2.1 GiB the check needs
R|107|0|gpu01|before|2026-11-22T09:00:00Z|ran|0||alice|0|
D|0|GPU-a0|NVIDIA H200|4310|4300|3950|4110|4290|54|54|
EOF
is "$(ls "$t/r" | wc -l | tr -d ' ')" 7 "generator wrote 7 report files"

# rows OUTPUT: "JOB.STEP:GPU" of each table row (after the summary), in order.
rows() { printf '%s\n' "$1" | awk '/^TIME \(UTC\)/ { h = 1; next } h && /^[0-9]/ { printf "%s%s:%s", sep, $4, $6; sep = " " }'; }

run "$GPUMEM" report "$t/r"
is "$rc" 0 "report: exit 0"
like "$out" "^TIME \(UTC\) +NODE +JOB.STEP +PHASE +GPU +VERDICT +READ +COPY +TRIAD +H2D +D2H +REASON" "header"
is "$(rows "$out")" "102.0:2 106.0:1 105.0:- 101.0:1 104.0:- 103.batch:- 107.0:0 101.0:0" \
	"worst first (fail, unusable, error, warn, not_run/skipped, pass), then newest"
like "$out" "gpu02 +102.0 +after +2 H200 +fail \(drained\) +4300 +3950 +2900\* +54.0 +54.0 +triad 2900.0 GB/s below 3095.2" \
	"fail row: node's GPU index from 'gpus', drained, figure marked, reason"
like "$out" "gpu01 +101.0 +after +1 H200 +warn +4300 +3950 +3300\* .*triad 3300.0 GB/s below 3507.9 \(0.85 of 4127.0\)" "warn row"
like "$out" "gpu04 +105.0 +after +- +error \(timed_out\) +- +- +- +- +- +killed: timeout after 60 s" "timed out: status and reason"
like "$out" "gpu03 +104.0 +after +- +not_run +- .* gpumem-check not installed" "not run: status and reason"
like "$out" "gpu03 +103.batch +before +- +skipped +- .* no GPU on this node" "skipped: reason"
like "$out" "gpu04 +106.0 +after +1 H200 +unusable .* GPU unusable for the check: 1.9 GiB free" "unusable GPU"
unlike "$(printf '%s\n' "$out" | grep ' pass ')" "[*]|below" "pass rows: no marks, no reason"
unlike "$out" " +$" "no trailing blanks"

# The head line (doc/REPORT-JSON.md): the same files without "rows" on
# their first line are read whole, their rows made from "check": the same
# table and the same JSON, row for row.
mkdir "$t/whole"
for f in "$t"/r/*.json; do sed '1s/ "rows": .*$//' "$f" >"$t/whole/${f##*/}"; done
is "$(head -1 "$t/r/job102.0.gpu02.after.json" | grep -c '"rows": \[{"index": 0')" 1 "the generator writes a head line with rows"
is "$(grep -c '"rows"' "$t"/whole/*.json | grep -vc ':0$')" 0 "the copies have no rows"
run "$GPUMEM" report --no-cache "$t/r"; head_out=$(printf '%s\n' "$out" | tail -n +2)
run "$GPUMEM" report --no-cache "$t/whole"
is "$(printf '%s\n' "$out" | tail -n +2)" "$head_out" "table: head line and whole file list the same"
run "$GPUMEM" report --no-cache --json "$t/r"; head_out=$out
run "$GPUMEM" report --no-cache --json "$t/whole"
is "$out" "$head_out" "--json: head line and whole file list the same"
like "$head_out" '"verdict": "fail"' "(and the JSON has the fail row)"

# The head line's scanner (report_scan.c) against json-c: each file below
# is a head line changed in one way (escapes, other bytes, numbers of every
# form, null and odd values, repeated and unknown keys), in dir "scan"; its
# twin in dir "jsonc" has a key no plugin writes put first, which sends the
# reader to json-c.  Both must list the same rows, field for field.
if [ -n "$have_python" ]; then
	python3 - "$t/r/job101.0.gpu01.after.json" "$t/scan" "$t/jsonc" <<'PYEOF'
import os, sys
base = open(sys.argv[1]).read()
head, rest = base.split("\n", 1)
cases = {
    "plain": [],
    "numbers": [('4300.00', '4300'), ('3300.00', '3.3e3'), ('54.00', '54.000000000000001'),
                ('"uid": 1000', '"uid": 1e3'), ('3507.95', '12345678901234567.5')],
    "bignum": [('"exit_code": 1', '"exit_code": 123456789012345678')],
    "negzero": [('"exit_code": 1', '"exit_code": -0'), ('4300.00', '-0.0')],
    "tiny": [('4300.00', '1E-5'), ('3300.00', '0.1')],
    "escape": [('"node": "gpu01"', '"node": "gpu\\u0030\\/1"')],
    "utf8": [('"user": "alice"', '"user": "al\u00e9ce"')],
    "nulls": [('"user": "alice"', '"user": null'), ('"policy": "stream.yaml"', '"policy": null'),
              ('"step": "0"', '"step": null'), ('"drained": false', '"drained": null')],
    "stepnum": [('"step": "0"', '"step": 3.9')],
    "stepempty": [('"step": "0"', '"step": ""')],
    "index": [('"index": 0', '"index": null'), ('"index": 1', '"index": 5000')],
    "indexfrac": [('"index": 1', '"index": 1.7')],
    "verdictnull": [('"verdict": "warn", "reasons"', '"verdict": null, "reasons"')],
    "reasons": [('"reasons": []', '"reasons": ["", "disk"]'), ('"reasons": ["', '"reasons": ["", "\\"a\\"", "')],
    "metrics": [('"read": ["pass", 4300.00, 4265.60, 4373.00, 3717.05, 3279.75]', '"read": []'),
                ('"write": [', '"write": ["pass", 1, null], "x": ['),
                ('"d2d": [', '"d2d": [null, ')],
    "metricshort": [('"read": ["pass", 4300.00, 4265.60, 4373.00, 3717.05, 3279.75]', '"read": ["pass", 4300]')],
    "duplicate": [('"node": "gpu01"', '"node": "gpu01", "node": "gpu09"')],
    "unknown": [('"drained": false', '"drained": false, "extra": {"a": [1, 2]}')],
    "spaces": [(', "', ',\t "'), (': ', ' :  ')],
    "rowsempty": [('"rows": [', '"rows": [], "zrows": ['), ('"check_reason": null', '"check_reason": "no GPU"')],
    "badtime": [('"time": "2026-11-20T10:00:00Z"', '"time": "yesterday"')],
    "badjob": [('"job": 101', '"job": 101.5')],
    "control": [('"user": "alice"', '"user": "al\tice"')],
    "truncated": [('"check_reason": null,', '"check_reason": nul,')],
}
for d in sys.argv[2:]:
    os.makedirs(d)
for i, (name, subs) in enumerate(sorted(cases.items())):
    h = head
    for a, b in subs:
        assert a in h, (name, a)
        h = h.replace(a, b, 1)
    f = "job%d.0.%s.after.json" % (900 + i, name)
    open(os.path.join(sys.argv[2], f), "w").write(h + "\n" + rest)
    open(os.path.join(sys.argv[3], f), "w").write(h.replace("{", '{"zz-json-c": 0, ', 1) + "\n" + rest)
PYEOF
	is "$?" 0 "head lines changed in $(ls "$t/scan" | wc -l | tr -d ' ') ways, each in two twins"
	run2 "$GPUMEM" report --no-cache --json "$t/scan"; scan_out=$out scan_err=$err
	run2 "$GPUMEM" report --no-cache --json "$t/jsonc"
	is "$scan_out" "$out" "scanner and json-c: the same rows, field for field"
	# The twins' warnings name their directory, and columns 16 bytes on.
	is "$(printf '%s\n' "$scan_err" | sed 's#/scan/#/#; s/column [0-9]*/column N/')" \
		"$(printf '%s\n' "$err" | sed 's#/jsonc/#/#; s/column [0-9]*/column N/')" \
		"scanner and json-c: the same warnings"
	is "$(printf '%s\n' "$scan_err" | grep -c 'skipped$')" 4 \
		"(bad job, bad time, a tab in a string, a broken literal: refused on both sides)"
fi

# Filters.
run "$GPUMEM" report --node gpu04 "$t/r"
is "$(rows "$out")" "106.0:1 105.0:-" "--node NAME"
run "$GPUMEM" report --node 'gpu0[12]' "$t/r"
is "$(rows "$out")" "102.0:2 101.0:1 107.0:0 101.0:0" "--node GLOB"
run "$GPUMEM" report --node gpu02 --node gpu03 "$t/r"
is "$(rows "$out")" "102.0:2 104.0:- 103.batch:-" "--node repeated"
run "$GPUMEM" report --node gpu02,gpu04 "$t/r"
is "$(rows "$out")" "102.0:2 106.0:1 105.0:-" "--node NAME,NAME"
run "$GPUMEM" report --verdict fail,warn "$t/r"
is "$(rows "$out")" "102.0:2 101.0:1" "--verdict fail,warn"
run "$GPUMEM" report --verdict not_run "$t/r"
is "$(rows "$out")" "104.0:-" "--verdict not_run"
run "$GPUMEM" report --verdict skipped,error "$t/r"
is "$(rows "$out")" "105.0:- 103.batch:-" "--verdict skipped,error"
run "$GPUMEM" report --job 101 "$t/r"
is "$(rows "$out")" "101.0:1 101.0:0" "--job ID"
run "$GPUMEM" report --job 103.batch,107 "$t/r"
is "$(rows "$out")" "103.batch:- 107.0:0" "--job ID.STEP,ID"
run "$GPUMEM" report --job 103.0 "$t/r"
is "$rc" 0 "no match: exit 0"
like "$out" "no reports in .*/r match the filters \(7 reports in all\)" "no match: said"
run "$GPUMEM" report --since 2026-11-21T11:30:00Z "$t/r"
is "$(rows "$out")" "105.0:- 104.0:- 107.0:0" "--since ISO time"
run "$GPUMEM" report --since 2026-11-21 "$t/r"
is "$(rows "$out")" "102.0:2 105.0:- 104.0:- 103.batch:- 107.0:0" "--since date (local time, here UTC)"
run "$GPUMEM" report --since 2026-11-21T12:00+01:00 "$t/r"
is "$(rows "$out")" "105.0:- 104.0:- 103.batch:- 107.0:0" "--since with a zone offset"
run "$GPUMEM" report --verdict pass --node gpu01 --since 2026-11-22 "$t/r"
is "$(rows "$out")" "107.0:0" "filters combine"
run "$GPUMEM" report --limit 3 "$t/r"
is "$(rows "$out")" "102.0:2 106.0:1 105.0:-" "--limit 3: the three worst"
like "$out" "\(3 of 8 rows; --limit\)" "--limit says what it cut"

# The summary before the rows: rows by verdict, GPUs by model, fractions of
# the reference, drained nodes, the worst GPUs.
run "$GPUMEM" report "$t/r"
sum=$(printf '%s\n' "$out" | sed '/^TIME (UTC)/,$d')
like "$(printf '%s\n' "$sum" | head -1)" "/r: 8 rows, 4 nodes, 4 GPUs, 2026-11-19 13:00 to 2026-11-22 09:00 UTC" "summary: rows, nodes, GPUs (by UUID), time span"
like "$sum" "rows by verdict: fail 1, unusable 1, error 1, warn 1, skipped 1, not_run 1, pass 2" "summary: rows by verdict"
like "$sum" "H200 +4 GPUs: fail 1, unusable 1, warn 1, pass 1" "summary: GPUs by model, newest verdict (GPU-a0's newest is the pass of job 107)"
like "$sum" "H200 +4127.0 +0.703 +0.703 +0.703 +0.800 +0.996 +0.996  2 of 3" "summary: triad / reference quantiles, 2 of 3 measured GPUs under their threshold"
like "$sum" "drained by gpumem .*
  gpu02  2026-11-21 10:00  job 102.0 after" "summary: the node gpumem drained"
is "$(printf '%s\n' "$sum" | awk '/worst GPU/ { w = 1; getline; next } w { printf "%s%s:%s:%s", sep, $1, $2, $6; sep = " " }')" \
	"gpu02:2:fail gpu04:1:unusable gpu01:1:warn gpu01:0:pass" "summary: worst GPUs first (newest verdict, then fraction)"
run "$GPUMEM" report --summary --worst 1 "$t/r"
unlike "$out" "^TIME" "--summary: no rows"
is "$(printf '%s\n' "$out" | sed -n '/worst GPU/,$p' | grep -c 'GPU-')" 1 "--worst 1: one GPU listed"
run "$GPUMEM" report --rows "$t/r"
like "$(printf '%s\n' "$out" | head -1)" "^TIME \(UTC\)" "--rows: the table only"
if [ -n "$have_python" ]; then
	run sh -c '"$1" report --summary --json "$2" | python3 -c "import json,sys; d=json.load(sys.stdin); m=d[\"models\"][0]; print(d[\"gpus\"], d[\"rows_by_verdict\"][\"fail\"], m[\"gpus\"], m[\"below_threshold\"], round(m[\"fraction\"][\"min\"], 4), d[\"drained\"][0][\"node\"], [w[\"gpu_uuid\"] for w in d[\"worst\"]])"' sh "$GPUMEM" "$t/r"
	is "$out" "4 1 4 2 0.7027 gpu02 ['GPU-b2', 'GPU-d1', 'GPU-a1', 'GPU-a0']" "--summary --json: the same, as one object"
fi

# Filters by job and node read only the files named for them; --since skips
# files last written over an hour before it.  A bad file shows whether it was read.
cp -r "$t/r" "$t/pre"
echo 'not JSON' >"$t/pre/job555.0.gpu09.after.json"
run2 "$GPUMEM" report "$t/pre"
like "$err" "job555.0.gpu09.after.json: not valid JSON" "unfiltered: every file is read"
run2 "$GPUMEM" report --job 101 "$t/pre"
is "$err" "" "--job 101: the file named for job 555 is not opened"
is "$(rows "$out")" "101.0:1 101.0:0" "--job 101: its rows still"
run2 "$GPUMEM" report --node 'gpu0[1-4]' "$t/pre"
is "$err" "" "--node GLOB: the file named for gpu09 is not opened"
run2 "$GPUMEM" report --node gpu09 "$t/pre"
like "$err" "job555.*not valid JSON" "--node gpu09: the file named for it is read"
touch -d '2026-11-01 00:00Z' "$t/pre/job555.0.gpu09.after.json"
run2 "$GPUMEM" report --since 2026-11-21 "$t/pre"
is "$err" "" "--since: a file last written weeks before is not opened"
touch -d '2026-11-20 23:30Z' "$t/pre/job555.0.gpu09.after.json"
run2 "$GPUMEM" report --since 2026-11-21 "$t/pre"
like "$err" "job555.*not valid JSON" "--since: a file written within the hour's slack is read"
echo 'not JSON' >"$t/pre/odd-name.json"
run2 "$GPUMEM" report --job 101 "$t/pre"
like "$err" "odd-name.json: not valid JSON" "a name of another form is always read"

# The cache: a second run takes the rows of unchanged files from it, and
# gives what parsing them gives; a changed, new or deleted file is seen; a
# cache that does not read back whole, or that another user could have
# written, is not used.
cp -r "$t/r" "$t/c"
cachefile() { ls "$t/cache/gpumem/"report-*.cache 2>/dev/null | head -1; }
rm -rf "$t/cache"
"$GPUMEM" report --no-cache "$t/c" >"$t/c.plain" 2>&1
is "$(ls -A "$t/cache/gpumem" 2>/dev/null)" "" "--no-cache: no cache written"
"$GPUMEM" report "$t/c" >"$t/c.1" 2>&1
cf=$(cachefile)
[ -n "$cf" ] && pass "first run: the cache is written ($(wc -c <"$cf") bytes)" || fail "no cache file in $t/cache/gpumem"
is "$(stat -c '%a %U' "$t/cache/gpumem" "$cf" | tr '\n' ' ')" "700 $(id -un) 600 $(id -un) " "the cache is the user's alone (0700 directory, 0600 file)"
"$GPUMEM" report "$t/c" >"$t/c.2" 2>&1
is "$(cat "$t/c.2")" "$(cat "$t/c.plain")" "second run, from the cache: the same output as parsing every file"
"$GPUMEM" report --json "$t/c" >"$t/c.j1" 2>&1; "$GPUMEM" report --json --no-cache "$t/c" >"$t/c.j2" 2>&1
is "$(cat "$t/c.j1")" "$(cat "$t/c.j2")" "--json from the cache: byte for byte the same"
# The cache is really read: an edit in it shows (the file is the user's own).
python3 - "$cf" <<'PY'
import sys; p = sys.argv[1]; d = open(p, "rb").read(); open(p, "wb").write(d.replace(b"GPU-b2", b"GPU-q9"))
PY
run "$GPUMEM" report --summary "$t/c"
like "$out" "GPU-q9" "an unchanged file's rows come from the cache"
chmod 666 "$cf"
run "$GPUMEM" report --summary "$t/c"
unlike "$out" "GPU-q9" "a cache others can write is not used"
like "$out" "GPU-b2" "... the file is parsed instead"
is "$(stat -c %a "$(cachefile)")" 600 "... and the cache made again, the user's alone"
sed 's/GPU-b2/GPU-b7/' "$t/c/job102.0.gpu02.after.json" >"$t/c/new" && mv "$t/c/new" "$t/c/job102.0.gpu02.after.json"
rm "$t/c/job107.0.gpu01.before.json"
sed 's/"job": 107,/"job": 108,/' "$t/r/job107.0.gpu01.before.json" >"$t/c/job108.0.gpu01.before.json"
run "$GPUMEM" report "$t/c"
like "$out" "GPU-b7" "a rewritten file: its new rows"
like "$out" "108.0 " "a new file: its rows"
unlike "$out" "107.0 " "a deleted file: no rows"
head -c 300 "$(cachefile)" >"$t/cut" && cat "$t/cut" >"$(cachefile)"
run2 "$GPUMEM" report "$t/c"
like "$err" "the cache of .*/c does not read back whole: it is made again" "a cut cache: said"
is "$out" "$("$GPUMEM" report --no-cache "$t/c" 2>/dev/null)" "... and the output is right"
run2 "$GPUMEM" report "$t/c"
is "$err" "" "... and the next run has a whole cache again"
rm -rf "$t/cache"; mkdir -p "$t/elsewhere" "$t/cache"; ln -s "$t/elsewhere" "$t/cache/gpumem"
run2 "$GPUMEM" report "$t/c"
is "$rc.$(ls -A "$t/elsewhere")" "0." "a cache directory that is a link: not used, nothing written through it"
rm -rf "$t/cache"

# Relative --since, against the clock.
now=$(date +%s)
{
	printf 'R|201|0|n1|after|%s|ran|0||alice|0|\n' "$(date -u -d "@$((now - 3600))" +%Y-%m-%dT%H:%M:%SZ)"
	printf 'D|0|GPU-x|NVIDIA H200|4300|4300|3950|4100|4290|54|54|\n'
	printf 'R|202|0|n1|after|%s|ran|0||alice|0|\n' "$(date -u -d "@$((now - 3 * 86400))" +%Y-%m-%dT%H:%M:%SZ)"
	printf 'D|0|GPU-x|NVIDIA H200|4300|4300|3950|4100|4290|54|54|\n'
} | sh "$gen" write "$t/rel"
run "$GPUMEM" report --since 2h "$t/rel"
is "$(rows "$out")" "201.0:0" "--since 2h"
run "$GPUMEM" report --since 7d "$t/rel"
is "$(rows "$out")" "201.0:0 202.0:0" "--since 7d"
run "$GPUMEM" report --since 90m --json "$t/rel"
like "$out" '"job": 201' "--since 90m with --json"

# --json: one object per row, stable fields.
if [ -n "$have_python" ]; then
	"$GPUMEM" report --json "$t/r" >"$t/rows.json" 2>"$t/err"; rc=$?
	is "$rc" 0 "--json: exit 0"
	run python3 - "$t/rows.json" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))
fields = ["file", "time", "epoch", "node", "job", "step", "phase", "user", "uid", "policy",
          "gpus", "status", "exit_code", "drained", "report_verdict", "gpu_index",
          "gpu_cuda_index", "gpu_name", "gpu_uuid", "gpu_pci_bus_id", "verdict",
          "verdict_text", "reason", "metrics", "peers"]
metrics = ["read", "write", "copy", "triad", "d2d", "h2d", "d2h"]
mfields = ["verdict", "best_gbps", "median_gbps", "reference_gbps", "threshold_gbps",
           "warn_floor_gbps"]
assert all(list(r) == fields for r in rows), "field names and order"
assert all(list(r["metrics"]) == metrics for r in rows), "metric names"
print("rows", len(rows))
print("order", " ".join("%d.%s" % (r["job"], r["step"]) for r in rows))
f = rows[0]
print("fail", f["verdict"], f["drained"], f["gpu_index"], f["gpu_cuda_index"], f["gpu_uuid"],
      f["metrics"]["triad"]["best_gbps"], f["metrics"]["triad"]["threshold_gbps"],
      f["metrics"]["triad"]["verdict"], f["exit_code"], f["uid"], f["file"])
assert list(f["metrics"]["triad"]) == mfields
w = rows[3]
print("write", w["metrics"]["write"]["verdict"], w["metrics"]["write"]["threshold_gbps"])
s = [r for r in rows if r["job"] == 105][0]
print("timed_out", s["verdict"], s["status"], s["gpu_index"], s["exit_code"], s["metrics"]["triad"],
      s["reason"])
print("epoch", rows[0]["epoch"], rows[0]["time"])
n = [r for r in rows if r["job"] == 104][0]
print("not_run", n["verdict"], n["report_verdict"], n["status"], n["reason"])
EOF
	is "$rc" 0 "--json: parses, every row has the documented fields in order"
	like "$out" "rows 8" "--json: 8 rows"
	like "$out" "order 102.0 106.0 105.0 101.0 104.0 103.batch 107.0 101.0" "--json: same order as the table"
	like "$out" "fail fail True 2 0 GPU-b2 2900(\.0)? 3507.95 fail 2 1001 job102.0.gpu02.after.json" "--json: a GPU row"
	like "$out" "write pass \(no reference\) None" "--json: verdict_text kept, no threshold is null"
	like "$out" "timed_out error timed_out None None None killed: timeout after 60 s" "--json: a report without GPU"
	like "$out" "epoch 1795255200 2026-11-21T10:00:00Z" "--json: epoch"
	like "$out" "not_run not_run error not_run gpumem-check not installed" "--json: not run: verdict class not_run, the plugin's verdict kept"
else
	skip "--json: needs python3"
fi
run "$GPUMEM" report --json --verdict fail,warn --limit 1 "$t/r"
is "$(printf '%s\n' "$out" | grep -c '"job"')" 1 "--json --limit 1: one row"
mkdir "$t/empty"
run "$GPUMEM" report --json "$t/empty"
like "$out" "^\[\]" "--json on an empty directory: []"

# --svg: well-formed, one panel per GPU, the threshold drawn.
xml_ok() {
	if [ -z "$have_python" ]; then skip "$2: needs python3"; return; fi
	if python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' "$1" 2>"$t/xmlerr"
	then pass "$2"; else fail "$2"; diag "$(cat "$t/xmlerr")"; fi
}
run "$GPUMEM" report --svg "$t/r.svg" "$t/r"
is "$rc" 0 "--svg: exit 0"
like "$out" "wrote .*r.svg: triad of 5 GPU panels" "--svg: says what it drew"
xml_ok "$t/r.svg" "--svg: well-formed XML"
svg=$(cat "$t/r.svg")
# gpu01 GPU-a0 and GPU-a1, gpu02 GPU-b2, gpu04 GPU-d1, gpu03 (no GPU measured)
is "$(grep -c '^<g transform=' "$t/r.svg")" 5 "--svg: one panel per GPU (and one for a node without)"
is "$(grep -c 'class="threshold"' "$t/r.svg")" 3 "--svg: a dashed threshold line in each measured panel"
like "$svg" 'stroke-dasharray="6,4" class="threshold"' "--svg: the threshold is dashed"
like "$svg" 'class="lbl">≥3508<' "--svg: threshold labelled with its value"
like "$svg" 'class="lbl" style="fill:#c62828">&lt;3095<' "--svg: fail floor labelled with its value"
like "$svg" "GPU memory bandwidth: triad" "--svg: title names the metric"
like "$svg" "gpu03</tspan> · no GPU measured" "--svg: node without a GPU still has a panel"
like "$svg" "no GPU on this node" "--svg: why nothing was measured"
like "$svg" "<title>2026-11-21 10:00 UTC, job 102.0 after" "--svg: points carry their job"
first=$(grep -m1 -o '<tspan font-weight="bold" font-size="11.5">[^<]*</tspan>[^<]*' "$t/r.svg")
like "$first" "gpu02</tspan> · GPU 2" "--svg: the failing GPU's panel comes first"
run "$GPUMEM" report --svg "$t/h2d.svg" --metric h2d --node gpu01 "$t/r"
like "$out" "h2d of 2 GPU panels" "--svg --metric h2d --node: two panels"
like "$(cat "$t/h2d.svg")" "bandwidth: h2d" "--metric h2d: in the title"
xml_ok "$t/h2d.svg" "--metric h2d: well-formed"
run "$GPUMEM" report --svg "$t/l.svg" --limit 2 "$t/r"
like "$out" "of 2 GPU panels \(the 2 worst of 5; --limit N for more\)" "--svg --limit: panels, worst first"
is "$(grep -c '^<g transform=' "$t/l.svg")" 2 "--svg --limit 2: two panels"
run "$GPUMEM" report --svg "$t/none.svg" --job 999 "$t/r"
xml_ok "$t/none.svg" "--svg with nothing to draw: still well-formed"
like "$(cat "$t/none.svg")" "No report matches" "--svg with nothing to draw: says so"
"$GPUMEM" report --svg - --node gpu02 "$t/r" >"$t/stdout.svg" 2>/dev/null
like "$(head -1 "$t/stdout.svg")" '^<\?xml' "--svg -: to standard output"

# A realistic directory: hundreds of files over two weeks.
sh "$gen" synth 14 7 >"$t/spec"
sh "$gen" write "$t/many" <"$t/spec"
n=$(ls "$t/many" | wc -l | tr -d ' ')
if [ "$n" -ge 200 ]; then pass "synthetic cluster: $n report files"; else fail "only $n files"; fi
"$GPUMEM" report "$t/many" >"$t/many.out" 2>"$t/many.err"; rc=$?
is "$rc" 0 "hundreds of files: exit 0"
is "$(cat "$t/many.err")" "" "hundreds of files: no warnings"
like "$(sed -n '/^TIME (UTC)/{n;p;q;}' "$t/many.out")" " fail " "hundreds of files: a fail first"
like "$(tail -1 "$t/many.out")" " pass" "hundreds of files: passes last"
run "$GPUMEM" report --svg "$t/many.svg" "$t/many"
like "$out" "triad of 11 GPU panels" "synthetic cluster: 11 panels (10 GPUs, one node never measured)"
xml_ok "$t/many.svg" "synthetic cluster: well-formed SVG"

# Bad files: one warning each, naming the file; the rest is listed.
cp -r "$t/r" "$t/bad"
head -c 700 "$t/r/job101.0.gpu01.after.json" >"$t/bad/job901.0.n1.after.json"
echo 'this is not JSON' >"$t/bad/job902.0.n1.after.json"
printf '{"schema": "gpumem-report/2", "job": 903}\n' >"$t/bad/job903.0.n1.after.json"
printf '{"schema": "prometheus"}\n' >"$t/bad/job904.0.n1.after.json"
: >"$t/bad/job905.0.n1.after.json"
printf '{"schema": "gpumem-report/1", "job": 906, "node": "n1", "phase": "after", "time": "last tuesday", "status": "ran", "verdict": "pass"}' \
	>"$t/bad/job906.0.n1.after.json"
printf '{"schema": "gpumem-report/1", "job": "x", "node": "n1"}' >"$t/bad/job907.0.n1.after.json"
awk 'BEGIN { printf "{\"schema\": \"gpumem-report/1\", \"pad\": \""; for (i = 0; i < 1100000; i++) printf "x"; print "\"}" }' \
	>"$t/bad/job908.0.n1.after.json"
python3 -c 'print("[" * 500 + "]" * 500)' >"$t/bad/job909.0.n1.after.json" 2>/dev/null ||
	awk 'BEGIN { for (i = 0; i < 500; i++) printf "["; for (i = 0; i < 500; i++) printf "]"; print "" }' >"$t/bad/job909.0.n1.after.json"
mkfifo "$t/bad/job910.0.n1.after.json"
ln -s /etc/passwd "$t/bad/job911.0.n1.after.json"
cp "$t/r/job101.0.gpu01.after.json" "$t/bad/.job912.0.n1.after.json.tmp"    # being written
echo 'notes' >"$t/bad/README"
start=$(date +%s)
"$GPUMEM" report "$t/bad" >"$t/bad.out" 2>"$t/bad.err"; rc=$?
is "$rc" 0 "bad files: exit 0"
is "$(rows "$(cat "$t/bad.out")")" "102.0:2 106.0:1 105.0:- 101.0:1 104.0:- 103.batch:- 107.0:0 101.0:0" \
	"bad files: the good reports are all listed"
err=$(cat "$t/bad.err")
is "$(printf '%s\n' "$err" | wc -l | tr -d ' ')" 11 "bad files: one warning line per bad file"
unlike "$(printf '%s\n' "$err" | grep -v '^gpumem: report: .*/bad/job9[0-9][0-9]\.0\.n1\.after\.json: .*: skipped$')" . \
	"bad files: every warning is 'gpumem: report: FILE: ...: skipped'"
like "$err" "job901.*: not valid JSON: line [0-9]+, column [0-9]+: .*\(truncated\?\)" "truncated file"
like "$err" "job902.*: not valid JSON: line 1, column 1: expected a value, found 't'" "garbage"
like "$err" "job903.*: schema \"gpumem-report/2\": this gpumem reads gpumem-report/1 only" "newer schema"
like "$err" "job904.*: schema \"prometheus\" is not gpumem-report/1" "wrong schema"
like "$err" "job905.*: not valid JSON: empty file" "empty file"
like "$err" "job906.*: \"time\" \"last tuesday\" is not an ISO 8601 time" "bad time"
like "$err" "job907.*: \"job\" is missing or not a job ID" "bad job"
like "$err" "job908.*: [0-9]+ bytes, larger than the 1048576-byte limit" "over the size cap"
like "$err" "job909.*: nesting deeper than 64 levels" "too deep"
# The depth cap exactly: 64 levels are JSON (just not a report), 65 are not.
mkdir -p "$t/depth"
python3 -c 'print("[" * 64 + "]" * 64)' >"$t/depth/job1.0.n1.after.json"
python3 -c 'print("[" * 65 + "]" * 65)' >"$t/depth/job2.0.n1.after.json"
"$GPUMEM" report --no-cache "$t/depth" >/dev/null 2>"$t/depth.err"
like "$(cat "$t/depth.err")" "job1.0.n1.after.json: not a JSON object" "64 levels: read (and refused as no report)"
like "$(cat "$t/depth.err")" "job2.0.n1.after.json: not valid JSON: line 1, column 65: nesting deeper than 64 levels" "65 levels: refused by the depth cap"
like "$err" "job910.*: not a regular file" "FIFO: refused, not waited on"
like "$err" "job911.*: a symbolic link" "symbolic link refused"
unlike "$err" "job912|README" "temporary and non-JSON files: skipped silently"
# A hang guard (a FIFO would block a reader forever), not a timing claim.
if [ $(($(date +%s) - start)) -le 30 ]; then pass "bad files: no hang"; else fail "bad files: took over 30 s (a hang?)"; fi

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	mkdir "$t/perm"; cp "$t/r/job107.0.gpu01.before.json" "$t/r/job102.0.gpu02.after.json" "$t/perm/"
	chmod 600 "$t/perm/job102.0.gpu02.after.json"; chmod 755 "$t" "$t/perm"; chmod 644 "$t/perm/job107.0.gpu01.before.json"
	out=$(runuser -u nobody -- "$GPUMEM" report "$t/perm" 2>&1); rc=$?
	is "$rc" 0 "unreadable file: exit 0"
	like "$out" "job102.0.gpu02.after.json: cannot open: Permission denied: skipped" "unreadable file: warned"
	like "$out" "107.0" "unreadable file: the others listed"
	chmod 700 "$t/perm"
	out=$(runuser -u nobody -- "$GPUMEM" report "$t/perm" 2>&1); rc=$?
	is "$rc" 1 "unreadable directory: exit 1"
	like "$out" "gpumem: report: .*/perm: cannot read the report directory: Permission denied" "unreadable directory: message"
else
	skip "unreadable files: needs root to switch to an unprivileged user"
fi

# Hostile text cannot reach the terminal raw.
mkdir "$t/esc"
printf '{"schema": "gpumem-report/1", "job": 1, "step": "0", "node": "n\\u001b]0;owned\\u0007", "phase": "after", "time": "2026-11-22T00:00:00Z", "status": "failed", "verdict": "error", "reason": "\\u001b[2Jgone\\u009b1m", "check": null}\n' \
	>"$t/esc/job1.0.n.after.json"
run "$GPUMEM" report "$t/esc"
is "$rc" 0 "control characters: listed"
unlike "$out" "$(printf '\033')" "control characters: no ESC reaches the terminal"
like "$out" "n\?\]0;owned\? .*\?\[2Jgone\?1m" "control characters: shown as '?'"
# Bidirectional overrides and isolates reorder what a terminal shows (issue 23, finding 9).
mkdir "$t/bidi"
printf '{"schema": "gpumem-report/1", "job": 1, "step": "0", "node": "n1", "phase": "after", "time": "2026-11-22T00:00:00Z", "status": "failed", "verdict": "error", "reason": "ok\u202eliaf\u2066x\u2069\u061c", "check": null}\n' \
	>"$t/bidi/job1.0.n1.after.json"
run "$GPUMEM" report "$t/bidi"
is "$rc" 0 "bidirectional controls: listed"
unlike "$out" "$(printf '\342\200\256')|$(printf '\342\201\246')|$(printf '\342\201\251')|$(printf '\330\234')" "bidirectional controls: none reaches the terminal"
like "$out" "ok\?liaf\?x\?\?" "bidirectional controls: each shown as one '?'"

# Exit status and messages.
run "$GPUMEM" report "$t/empty"
is "$rc" 0 "empty directory: exit 0"
like "$out" "no reports in .*/empty" "empty directory: said"
run "$GPUMEM" report "$t/nosuch"
is "$rc" 1 "missing directory: exit 1"
like "$out" "gpumem: report: .*/nosuch: cannot read the report directory: No such file or directory" "missing directory: message"
printf 'version: 1\nreport:\n  dir: %s\n' "$t/r" >"$t/site.yaml"
run "$GPUMEM" report --site "$t/site.yaml" --job 107
is "$(rows "$out")" "107.0:0" "DIR from the site file's report.dir"
out=$(GPUMEM_SITE="$t/site.yaml" "$GPUMEM" report --job 107 2>&1)
is "$(rows "$out")" "107.0:0" "DIR from \$GPUMEM_SITE"
printf 'version: 1\nreport:\n  dri: x\n' >"$t/badsite.yaml"
run "$GPUMEM" report --site "$t/badsite.yaml"
is "$rc" 1 "bad site file: exit 1"
like "$out" "badsite.yaml:3:3: error: unknown key .report.dri." "bad site file: said, with its place"
run "$GPUMEM" report --help
is "$rc" 0 "--help: exit 0"
like "$out" "gpumem report --svg FILE" "--help: usage"

usage() {
	run "$GPUMEM" report "$@" "$t/r"
	is "$rc" 64 "usage error: $*"
	like "$out" "$pat" "usage error names the problem: $*"
}
pat="--limit: '0' is not a count"; usage --limit 0
pat="--limit: 'many' is not a count"; usage --limit many
pat="--since: 'soon' is neither a time"; usage --since soon
pat="--since: '2026-02-30' is neither a time"; usage --since 2026-02-30
pat="--verdict: 'bad' is not a verdict"; usage --verdict pass,bad
pat="--job: 'x12' is not a job ID"; usage --job x12
pat="--node: 'a,,b' has an empty node name"; usage --node a,,b
pat="--metric: 'speed' is not a metric"; usage --svg "$t/x.svg" --metric speed
pat="--metric: only with --svg or the summary"; usage --metric copy --rows
pat="--metric: only with --svg or the summary"; usage --metric copy --json
pat="--summary and --rows: give one"; usage --summary --rows
pat="--svg draws a picture: no --summary"; usage --svg x.svg --summary
pat="--worst: '0' is not a count"; usage --worst 0
pat="unknown or incomplete option '--frobnicate'"; usage --frobnicate
pat="give at most one DIR"; usage "$t/r"

done_testing
