#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem report --profiles: the jobs' GPU memory profiles across a report
# directory, a row per report and GPU, the most memory-bound first; the
# sort keys, the filters, --limit/--worst, --json; profiles refused,
# skipped or hostile left out and counted, bad files a warning each, the
# writer's words cleaned for the terminal; and the same figures and advice
# as `gpumem advise` gives from the accounting record.
. "$top_srcdir/tests/lib.sh"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed to write the reports"
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
TZ=UTC; export TZ
unset GPUMEM_SITE
XDG_CACHE_HOME="$t/cache"; export XDG_CACHE_HOME
run2() { out=$("$@" 2>"$t/stderr"); rc=$?; err=$(cat "$t/stderr"); }

# The reports, as the plugin writes them: the head line, then "effective",
# "check" and "profile".  A profile is gpumem-profile/1 (REPORT-JSON.md).
python3 - "$t/r" <<'PY'
import json, os, sys
out = sys.argv[1]
os.makedirs(out)

def metric(unit, mean, p95, source="gpm"):
    return {"unit": unit, "source": source, "mean": mean, "median": mean, "p95": p95,
            "max": p95, "above": {"25": 0.5, "50": 0.2, "80": 0.0}, "timeline": [mean, None]}

# GPU INDEX: DRAM, SM and PCIe rx as (mean, p95); source None: not sampled.
def gpu(index, dram=None, sm=None, rx=None, tx=0.0, mem=1.0, samples=120, source="gpm",
        note=None, name="NVIDIA H100 80GB HBM3"):
    g = {"index": index, "uuid": "GPU-%d" % index, "name": name, "source": source,
         "note": note, "samples": samples, "timeline_step_s": 1.0, "metrics": None}
    if source is not None:
        util = "gpm" if source == "gpm" else "nvml-utilization"
        link = "gpm" if source == "gpm" else "nvml-pcie"
        g["metrics"] = {
            "dram_bw_util": metric("%", dram[0], dram[1], util),
            "sm_util": metric("%", sm[0], sm[1], util),
            "sm_occupancy": metric("%", 40, 50) if source == "gpm" else None,
            "pcie_rx": metric("GB/s", rx[0], rx[1], link),
            "pcie_tx": metric("GB/s", tx, tx, link),
            "nvlink_rx": None, "nvlink_tx": None,
            "mem_used": {"unit": "GiB", "source": "nvml-memory", "mean": mem / 2, "max": mem,
                         "timeline": [mem]}}
    return g

def profile(*gpus):
    return {"schema": "gpumem-profile/1", "state": "ran", "reason": None, "interval_ms": 1000,
            "started": "2026-11-20T09:00:00Z", "seconds": 120.0, "cpu_s": 0.05,
            "gpus": list(gpus)}

def report(job, node, user, phase, time, prof="absent", effective=None, name=None, extra=None):
    head = {"schema": "gpumem-report/1", "job": job,
            "step": "prolog" if phase == "before" else "epilog", "node": node, "user": user,
            "uid": 1000 + job, "policy": "site defaults", "phase": phase, "time": time,
            "gpus": "0,1", "status": "not_run" if phase == "job" else "ran", "reason": None,
            "exit_code": None if phase == "job" else 0,
            "verdict": "not_run" if phase == "job" else "pass", "drained": False,
            "rows": [], "check_reason": None}
    if extra:
        head.update(extra)
    tail = {"effective": effective, "check": None}
    if prof != "absent":
        tail["profile"] = prof
    text = json.dumps(head)[:-1] + ",\n" + json.dumps(tail)[1:] + "\n"
    name = name or "job%d.%s.%s.%s.json" % (job, head["step"], node, phase)
    open(os.path.join(out, name), "w").write(text)

stream = {"l2": {"persisting_limit": "0"},
          "mps": {"active_thread_percentage": None, "daemon": "none"},
          "unified_memory": {"preferred_location": "none", "accessed_by": [], "prefetch": "none"}}
# Five jobs with profiles that ran, of different DRAM, SM, PCIe rx, memory, time.
report(301, "gpu01", "alice", "before", "2026-11-20T09:00:00Z")
report(301, "gpu01", "alice", "after", "2026-11-20T10:00:00Z", profile(
    gpu(0, dram=(40, 55), sm=(70, 80), rx=(0.5, 1.0), tx=0.1, mem=10.2),
    gpu(1, dram=(61.6, 91.2), sm=(50, 60), rx=(0.24, 0.4), mem=70.54)), effective=stream)
report(302, "gpu02", "bob", "job", "2026-11-21T10:00:00Z",
       profile(gpu(2, dram=(70, 97), sm=(20, 30), rx=(2.0, 3.0), tx=0.1, mem=40.0)))
report(303, "gpu03", "carol", "after", "2026-11-22T10:00:00Z",
       profile(gpu(0, dram=(5, 8), sm=(3, 5), rx=(0.1, 0.2), mem=1.0)))
report(308, "gpu08", "ev\x1b[31mil", "after", "2026-11-23T10:00:00Z",
       profile(gpu(0, dram=(30, 45), sm=(85, 95), rx=(12.0, 40.0), tx=1.0, mem=20.0)))
report(309, "gpu09", "frank", "after", "2026-11-24T10:00:00Z", profile(
    gpu(3, source=None, samples=0, note="MIG\x1b[2J: per-instance sampling not supported",
        name="NVIDIA H100 \x1b]0;owned\x07"),
    gpu(4, dram=(20, 35), sm=(40, 50), rx=(0.3, 0.5), mem=5.0, source="nvml")))
# Left out, counted: refused by the plugin, hostile, skipped, not a profile.
report(304, "gpu04", "dave", "after", "2026-11-24T11:00:00Z",
       {"state": "refused", "reason": "gpus[0].samples: -3 is out of range"})
hostile = profile(gpu(0, dram=(50, 500), sm=(10, 20), rx=(0.1, 0.2)))
report(307, "gpu07", "mallory", "after", "2026-11-24T12:00:00Z", hostile)
report(310, "gpu10", "alice", "after", "2026-11-24T13:00:00Z",
       {"schema": "gpumem-profile/1", "state": "skipped", "reason": "no NVIDIA driver"})
report(312, "gpu12", "alice", "after", "2026-11-24T14:00:00Z", "ran")
# Left out silently: no profile.
report(305, "gpu05", "erin", "after", "2026-11-24T15:00:00Z")
# Bad files: a warning each.
open(os.path.join(out, "job311.epilog.gpu11.after.json"), "w").write("not JSON\n")
report(313, "gpu13", "alice", "after", "2026-11-24T16:00:00Z",
       profile(gpu(0, dram=(99, 99), sm=(1, 1), rx=(0.1, 0.1))), extra={"pad": "x" * 1100000})
PY
is "$(ls "$t/r" | wc -l | tr -d ' ')" 13 "13 report files written"

# prows OUTPUT: "JOB:GPU" of each table row, in order.
prows() { printf '%s\n' "$1" | awk '/^TIME \(UTC\)/ { h = 1; next } h && /^[0-9]/ { printf "%s%s:%s", sep, $4, $6; sep = " " }'; }

run2 "$GPUMEM" report --profiles "$t/r"
is "$rc" 0 "--profiles: exit 0"
like "$out" "^TIME \(UTC\) +NODE +JOB +USER +GPU +SAMPLES +DRAM mean/p95 % +SM mean % +RX mean GB/s +MEM max GiB +ADVICE" "header"
is "$(prows "$out")" "302:2 301:1 301:0 308:0 309:4 303:0 309:3" "DRAM p95 first, highest first; a GPU without figures last"
like "$out" "2026-11-20 10:00 +gpu01 +301 +alice +1 +120 +62/91 +50 +0.2 +70.5 +stream.yaml" \
	"a row: time, node, job, user, GPU, samples, DRAM mean/p95, SM, RX, MEM as the compact summary rounds them, the advice's policy"
like "$out" "gpu02 +302 +bob +2 +120 +70/97 +20 +2.0 +40.0 +stream.yaml" "a job report's profile (phase job)"
like "$out" "gpu03 +303 +carol +0 +120 +5/8 +3 +0.1 +1.0 +mps-half.yaml" "an idle GPU: mps-half.yaml"
like "$out" "gpu09 +309 +frank +3 +0 +-/- +- +- +- +-$" "a GPU not sampled: no figures, no policy"
like "$out" "gpu09 +309 +frank +4 +120 +20/35~ +40 +0.3 +5.0 +-" "a GPU without GPM: DRAM marked ~, compute-bound: no policy"
like "$out" "~: no GPM on that GPU: DRAM is the share of time memory was busy" "the ~ explained"
like "$out" "gpu08 +308 +ev\?\[31mil +0 .* prefetch.yaml" "a user name with an escape: cleaned"
unlike "$out$err" "$(printf '\033')" "no escape byte reaches the terminal"
unlike "$out" " +$" "no trailing blanks"
unlike "$out" " (304|305|307|310|312|313) |dave|mallory|erin" "refused, skipped, hostile and absent profiles: not listed"
is "$(printf '%s\n' "$err" | grep -c 'skipped$')" 2 "bad files: one warning line each"
like "$err" "gpumem: report: .*/job311.epilog.gpu11.after.json: not valid JSON: .*: skipped" "  not JSON"
like "$err" "gpumem: report: .*/job313.*: [0-9]+ bytes, larger than the 1048576-byte limit: skipped" "  over the report cap"
like "$err" "gpumem: report: 4 reports without a usable profile \(refused, skipped or not run\)" \
	"refused, hostile, skipped and broken profiles: counted in one line"
is "$(printf '%s\n' "$err" | tail -1 | cut -c1-17)" "gpumem: report: 4" "  the count comes last"
is "$(ls -A "$t/cache/gpumem" 2>/dev/null)" "" "--profiles: no cache written"

# The sort keys.
run "$GPUMEM" report --profiles --sort sm "$t/r"
is "$(prows "$out")" "308:0 301:0 301:1 309:4 302:2 303:0 309:3" "--sort sm: SM mean, highest first"
run "$GPUMEM" report --profiles --sort rx "$t/r"
is "$(prows "$out")" "308:0 302:2 301:0 309:4 301:1 303:0 309:3" "--sort rx: PCIe rx mean"
run "$GPUMEM" report --profiles --sort mem "$t/r"
is "$(prows "$out")" "301:1 302:2 308:0 301:0 309:4 303:0 309:3" "--sort mem: most memory used"
run "$GPUMEM" report --profiles --sort time "$t/r"
is "$(prows "$out")" "309:3 309:4 308:0 303:0 302:2 301:0 301:1" "--sort time: newest first"
run "$GPUMEM" report --profiles --sort dram "$t/r"
is "$(prows "$out")" "302:2 301:1 301:0 308:0 309:4 303:0 309:3" "--sort dram: the default"

# The filters of `gpumem report`, and the limit.
run "$GPUMEM" report --profiles --job 301 "$t/r"
is "$(prows "$out")" "301:1 301:0" "--job"
unlike "$out" "without a usable profile" "--job: the count covers the filtered reports only"
run2 "$GPUMEM" report --profiles --job 304,301 "$t/r"
like "$err" "gpumem: report: 1 report without a usable profile" "--job 304: its refused profile counted"
run "$GPUMEM" report --profiles --node 'gpu0[23]' "$t/r"
is "$(prows "$out")" "302:2 303:0" "--node GLOB"
run "$GPUMEM" report --profiles --user carol "$t/r"
is "$(prows "$out")" "303:0" "--user"
run "$GPUMEM" report --profiles --user 'b*,frank' "$t/r"
is "$(prows "$out")" "302:2 309:4 309:3" "--user GLOB,NAME"
run "$GPUMEM" report --profiles --since 2026-11-22 "$t/r"
is "$(prows "$out")" "308:0 309:4 303:0 309:3" "--since"
run "$GPUMEM" report --profiles --user alice --since 2026-11-21 "$t/r"
like "$out" "^no job profiles in .*/r match the filters" "nothing matches: said"
run "$GPUMEM" report --profiles --limit 2 "$t/r"
is "$(prows "$out")" "302:2 301:1" "--limit 2: the two most memory-bound"
like "$out" "\(2 of 7 rows; --limit\)" "--limit says what it cut"
run "$GPUMEM" report --profiles --worst 3 --sort sm "$t/r"
is "$(prows "$out")" "308:0 301:0 301:1" "--worst 3 with --sort sm: the three first"
run "$GPUMEM" report --user alice --rows "$t/r"
like "$out" "gpu01 +301.prolog" "--user filters the check rows too"
unlike "$out" "gpu02|gpu03|gpu09" "  only alice's"

# --json.
"$GPUMEM" report --profiles --json "$t/r" >"$t/p.json" 2>"$t/p.err"; rc=$?
is "$rc" 0 "--json: exit 0"
unlike "$(cat "$t/p.json")" "$(printf '\033')" "--json: escapes written as \\u001b, never raw"
run python3 - "$t/p.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
fields = ["job", "node", "user", "time", "phase", "gpu", "samples", "source", "dram_mean",
          "dram_p95", "sm_mean", "sm_p95", "occ_mean", "rx_mean", "rx_p95", "tx_mean", "mem_max",
          "advice"]
assert all(list(r) == fields for r in rows), "fields and order"
assert all(list(r["advice"]) == ["rule", "policy", "reason"] for r in rows), "advice fields"
print("order", " ".join("%d:%d" % (r["job"], r["gpu"]) for r in rows))
a = [r for r in rows if r["job"] == 301 and r["gpu"] == 1][0]
print("row", a["node"], a["user"], a["time"], a["phase"], a["samples"], a["source"], a["dram_mean"],
      a["dram_p95"], a["sm_mean"], a["sm_p95"], a["occ_mean"], a["rx_mean"], a["rx_p95"],
      a["tx_mean"], a["mem_max"], a["advice"]["rule"], a["advice"]["policy"])
print("in effect", a["advice"]["reason"])
b = [r for r in rows if r["job"] == 302][0]
print("job phase", b["phase"], b["advice"]["rule"])
m = [r for r in rows if r["gpu"] == 3][0]
print("mig", m["source"], m["dram_p95"], m["mem_max"], m["advice"]["rule"], m["advice"]["policy"],
      repr(m["advice"]["reason"]))
n = [r for r in rows if r["gpu"] == 4][0]
print("nvml", n["source"], n["occ_mean"], n["advice"]["rule"], n["advice"]["policy"])
e = [r for r in rows if r["job"] == 308][0]
print("user", repr(e["user"]), e["advice"]["rule"])
PY
is "$rc" 0 "--json: parses, every object has the documented fields in order"
like "$out" "order 302:2 301:1 301:0 308:0 309:4 303:0 309:3" "--json: the table's order"
like "$out" "row gpu01 alice 2026-11-20T10:00:00Z after 120 gpm 62 91 50 60 40 0.2 0.4 0.0 70.5 hbm-bound stream.yaml" \
	"--json: a row's figures, as the compact summary has them"
like "$out" "in effect memory-bound on HBM: .*\(DRAM mean 62%, p95 91%\); this job already ran with that \(l2 persisting limit 0\)" \
	"--json: the advice reason, with the report's effective policy"
like "$out" "job phase job hbm-bound" "--json: the phase"
like "$out" "mig None None None unsampled None 'not sampled: MIG\\\\x1b\[2J: per-instance sampling not supported'" \
	"--json: a GPU not sampled: nulls, the note in the reason (JSON-escaped)"
like "$out" "nvml nvml None compute-bound None" "--json: a GPU without GPM"
like "$out" "user 'ev\\\\x1b\[31mil' link-bound" "--json: the user as written"
like "$(cat "$t/p.err")" "4 reports without a usable profile" "--json: the count on stderr"
run2 "$GPUMEM" report --profiles --json --job 999 "$t/r"
is "$out" "[]" "--json, nothing matches: []"
like "$err" "gpumem: report: no job profiles in .*/r match the filters" "  said on stderr"
run "$GPUMEM" report --profiles --json --limit 1 "$t/r"
is "$(printf '%s\n' "$out" | grep -c '"job"')" 1 "--json --limit 1: one object"

# The same figures and advice as `gpumem advise`, which reads the record
# gpumem-acct builds from the same report (stand-in sacct, as advise.sh).
ACCT="$top_builddir/plugin/acct/gpumem-acct"
if [ -x "$ACCT" ]; then
	mkdir "$t/bin"
	sacct_standin "$t/bin"
	seg=$("$ACCT" record --dir "$t/r" --job 301 --node gpu01 2>/dev/null | sed -n 2p)
	echo "301|alice|COMPLETED|$seg" >"$t/bin/sacct.301"
	adv=$(PATH="$t/bin:$PATH" "$GPUMEM" advise 301 --json 2>&1 |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print(sorted((a["gpu"], a["rule"], a["policy"], a["reason"]) for a in d[0]["nodes"][0]["advice"]))')
	mine=$(python3 -c 'import json,sys; print(sorted((r["gpu"], r["advice"]["rule"], r["advice"]["policy"], r["advice"]["reason"]) for r in json.load(open(sys.argv[1])) if r["job"] == 301))' "$t/p.json")
	is "$mine" "$adv" "the advice and its figures: those of gpumem advise, GPU for GPU"
else
	skip "gpumem-acct was not built"
fi

# Usage errors.
usage() {
	run "$GPUMEM" report "$@" "$t/r"
	is "$rc" 64 "usage error: $*"
	like "$out" "$pat" "usage error names the problem: $*"
}
pat="--sort: 'speed' is not a key \(dram, sm, rx, mem, time\)"; usage --profiles --sort speed
pat="--sort: only with --profiles"; usage --sort sm
pat="--profiles lists the jobs' profiles: no --svg"; usage --profiles --verdict fail
pat="--profiles lists the jobs' profiles: no --svg"; usage --profiles --svg "$t/x.svg"
pat="--profiles lists the jobs' profiles: no --svg"; usage --profiles --summary
pat="--user: 'a,,b' has an empty user name"; usage --profiles --user a,,b
run "$GPUMEM" report --help
like "$out" "gpumem report --profiles \[--sort KEY\]" "--help: the --profiles usage"

done_testing
