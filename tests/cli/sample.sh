#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem-sample without a GPU, against the stand-in libnvidia-ml.so.1
# (tests/fake-nvml/fake_nvml.c, which gives its figures in NVML's units):
# the figures of the gpumem-profile/1 document (mean, median, p95, max,
# shares, timeline, unit conversions) for GPM and the older counters, MIG,
# no NVML, --gpus, usage errors, SIGTERM and SIGKILL, the in-place rewrite,
# the timeline's doubling step and a memory use that does not grow.
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib.sh"

SAMPLE="$top_builddir/plugin/sample/gpumem-sample"
FAKE="$top_builddir/tests/fake-nvml/.libs/libnvidia-ml.so.1"
[ -x "$SAMPLE" ] || skip_all "gpumem-sample was not built"
[ -f "$FAKE" ] || skip_all "the stand-in NVML (tests/fake-nvml) was not built: make check builds it"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed to read the documents"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-sample.XXXXXX") || exit 1
bg=
trap 'for b in $bg; do kill -KILL "$b" 2>/dev/null; done; rm -rf "$tmp"' EXIT
mkdir "$tmp/fake" "$tmp/none"
ln -s "$FAKE" "$tmp/fake/libnvidia-ml.so.1"
UUID0=GPU-fa4e0000-0000-4000-8000-000000000000
UUID2=GPU-fa4e0000-0000-4000-8000-000000000002

# start OUT VAR=VALUE... "$SAMPLE" [ARGS...]: the sampler against the stand-in
# in the background (stdout OUT, stderr OUT.err), its pid in $pid.
start() {
	_o=$1; shift
	env LD_LIBRARY_PATH="$tmp/fake" "$@" >"$_o" 2>"$_o.err" &
	pid=$!
}
# stop: SIGTERM to $pid, $rc its exit status.
stop() { kill -TERM "$pid"; wait "$pid"; rc=$?; }
# sample_for SECONDS OUT VAR=VALUE... "$SAMPLE" ARGS...: start, sleep, stop.
sample_for() { _s=$1; shift; start "$@"; sleep "$_s"; stop; }

# ask FILE EXPR...: each Python EXPR over FILE's document d on a line of
# $ans, one python3 a document (a slow interpreter costs little); `a N`
# prints line N.  shape() is "ok" when FILE is one line holding a
# gpumem-profile/1 document of the agreed shape; fig(GPU, METRIC, SEQ) is
# "ok" when the metric holds what the values SEQ (cycled, one a sample)
# give for the document's sample count.
cat >"$tmp/ask.py" <<'EOF'
import json, math, re, sys
text = open(sys.argv[1]).read()
try:
    d = json.loads(text)
except ValueError as e:
    d, bad = None, "not JSON: %s: %r" % (e, text[:200])

def two(x):
    return isinstance(x, (int, float)) and round(x, 2) == x

def shape():
    assert text.endswith("\n") and text.count("\n") == 1, "not one line"
    top = ["schema", "state", "reason", "interval_ms", "started", "seconds", "cpu_s", "gpus"]
    assert list(d) == top, list(d)
    assert d["schema"] == "gpumem-profile/1" and d["state"] in ("ran", "skipped")
    assert (d["reason"] is None) == (d["state"] == "ran")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", d["started"]), d["started"]
    keys = ["index", "uuid", "name", "source", "note", "samples", "timeline_step_s", "metrics"]
    names = ["dram_bw_util", "sm_util", "sm_occupancy", "pcie_rx", "pcie_tx", "nvlink_rx",
             "nvlink_tx", "mem_used"]
    for g in d["gpus"]:
        assert list(g) == keys, list(g)
        assert list(g["metrics"]) == names
        for n, m in g["metrics"].items():
            if m is None:
                continue
            want = ["unit", "source", "mean", "median", "p95", "max", "above", "timeline"]
            if n == "mem_used":
                want = ["unit", "source", "mean", "max", "timeline"]
            assert list(m) == want, (n, list(m))
            assert len(m["timeline"]) <= 120
            assert all(two(m[k]) for k in ("mean", "median", "p95", "max") if k in m), n
            assert all(x is None or two(x) for x in m["timeline"]), n
    return "ok"

def fig(gpu, metric, seq):
    g = d["gpus"][gpu]
    m = g["metrics"][metric]
    n = g["samples"]
    v = [float(seq[i % len(seq)]) for i in range(n)]
    s = sorted(v)
    rank = lambda p: s[max(1, math.ceil(p * n - 1e-9)) - 1]
    r2 = lambda x: math.floor(x * 100 + 0.5) / 100      # C's round(), not Python's to even
    levels = ["25", "50", "80"] if m["unit"] == "%" else ["1", "10", "25"]
    want = {"mean": r2(sum(v) / n), "median": rank(0.5), "p95": rank(0.95), "max": max(v),
            "above": {k: r2(sum(x >= float(k) for x in v) / n) for k in levels}, "timeline": v}
    got = {k: m[k] for k in want}
    if n < 3 or got != want or g["timeline_step_s"] != d["interval_ms"] / 1000:
        return "samples %d step %s got %s want %s" % (n, g["timeline_step_s"], got, want)
    return "ok"

for e in sys.argv[2:]:
    try:
        print(eval(e) if d is not None else bad)
    except Exception as x:
        print("%s: %r" % (type(x).__name__, x))
EOF
ask() { ans=$(python3 "$tmp/ask.py" "$@" 2>&1); }
a() { printf '%s\n' "$ans" | sed -n "$1p"; }
# doc TEXT: the line of TEXT (stdout and stderr together) that is the document, in $tmp/doc.
doc() { printf '%s\n' "$1" | grep '^{' >"$tmp/doc"; }

# ------------------------------------------------------------ long runs, in the background
# At 100 ms for 2 s and for 13 s: their memory use compared, and the
# second's more than 120 samples double the timeline's step.  The other
# checks run meanwhile.
start "$tmp/long" "$SAMPLE" --interval-ms 100 --flush-s 0
long=$pid
start "$tmp/short" "$SAMPLE" --interval-ms 100 --flush-s 0
short=$pid
bg="$long $short"
t_long=$(date +%s%N)
# wait_until MS: until MS milliseconds after those two started.
wait_until() { while [ $(( ($(date +%s%N) - t_long) / 1000000 )) -lt "$1" ]; do sleep 0.05; done; }
rss() { sed -n 's/^VmRSS:[^0-9]*\([0-9]*\) kB/\1/p' "/proc/$1/status"; }

# ------------------------------------------------------------ GPM
SEQ=10,20,30,40,50,60,70,80,90,100
sample_for 1.25 "$tmp/gpm" FAKE_NVML_SEQ=$SEQ \
	FAKE_NVML_VALUES=sm=40,occ=30,pcie_rx=12.5,pcie_tx=7,nvl_rx=3.25,nvl_tx=0.5,mem=7.5 \
	"$SAMPLE" --interval-ms 100
is "$rc:$(cat "$tmp/gpm.err")" "0:" "SIGTERM: exit 0, nothing on stderr"
ask "$tmp/gpm" 'shape()' '[d["state"], d["reason"], d["interval_ms"], len(d["gpus"])]' \
	'[(g["index"], g["uuid"], g["name"], g["source"], g["note"]) for g in d["gpus"]]' \
	'fig(0, "dram_bw_util", [10, 20, 30, 40, 50, 60, 70, 80, 90, 100])' \
	'[v["source"] for v in d["gpus"][0]["metrics"].values()]' \
	'fig(0, "sm_util", [40])' 'fig(0, "sm_occupancy", [30])' 'fig(0, "pcie_rx", [12.5])' \
	'fig(0, "pcie_tx", [7])' 'fig(0, "nvlink_rx", [3.25])' 'fig(0, "nvlink_tx", [0.5])' \
	'(lambda m: m == {"unit": "GiB", "source": "nvml-memory", "mean": 7.5, "max": 7.5, "timeline": [7.5] * d["gpus"][0]["samples"]} or m)(d["gpus"][0]["metrics"]["mem_used"])' \
	'[v["unit"] for v in d["gpus"][0]["metrics"].values()]' \
	'0 < d["seconds"] < 2 and 0 <= d["cpu_s"] < 1'
is "$(a 1)" ok "one line, gpumem-profile/1, the agreed members in order"
is "$(a 2)" "['ran', None, 100, 1]" "state ran, interval 100 ms, one GPU (the node's only one)"
is "$(a 3)" "[(0, '$UUID0', 'NVIDIA H100 80GB HBM3 (stand-in)', 'gpm', None)]" \
	"GPU 0: its UUID and name, source gpm, no note"
is "$(a 4)" ok "dram_bw_util: mean, median, p95, max, shares and timeline of the sequence given"
is "$(a 5)" "['gpm', 'gpm', 'gpm', 'gpm', 'gpm', 'gpm', 'gpm', 'nvml-memory']" \
	"sources: gpm, memory used from nvml-memory"
is "$(a 6)" ok "sm_util 40 %"
is "$(a 7)" ok "sm_occupancy 30 %"
is "$(a 8)" ok "pcie_rx: GPM's MiB/s read as 12.5 GB/s"
is "$(a 9)" ok "pcie_tx 7 GB/s"
is "$(a 10)" ok "nvlink_rx 3.25 GB/s"
is "$(a 11)" ok "nvlink_tx 0.5 GB/s (shares at 1, 10, 25 GB/s: none)"
is "$(a 12)" True "mem_used: 7.5 GiB (NVML's bytes); mean, max and timeline only"
is "$(a 13)" "['%', '%', '%', 'GB/s', 'GB/s', 'GB/s', 'GB/s', 'GiB']" "units"
is "$(a 14)" True "seconds and cpu_s"

# The 2 s run of the memory check.
wait_until 2000
rss_short=$(rss "$short")
pid=$short; stop
bg=$long
ask "$tmp/short" 'shape()'
is "$rc:$ans" "0:ok" "2 s at 100 ms: a document"

# ------------------------------------------------------------ the older counters
sample_for 1.25 "$tmp/nvml" FAKE_NVML_GPM=0 FAKE_NVML_SEQ=$SEQ "$SAMPLE" --interval-ms 100
ask "$tmp/nvml" 'shape()' \
	'[d["gpus"][0]["source"]] + [(k, v and v["source"]) for k, v in d["gpus"][0]["metrics"].items()]' \
	'fig(0, "dram_bw_util", [10, 20, 30, 40, 50, 60, 70, 80, 90, 100])' \
	'fig(0, "sm_util", [40])' 'fig(0, "pcie_rx", [12.5])'
is "$rc:$(a 1)" "0:ok" "no GPM: a document"
is "$(a 2)" "['nvml', ('dram_bw_util', 'nvml-utilization'), ('sm_util', 'nvml-utilization'), ('sm_occupancy', None), ('pcie_rx', 'nvml-pcie'), ('pcie_tx', 'nvml-pcie'), ('nvlink_rx', None), ('nvlink_tx', None), ('mem_used', 'nvml-memory')]" \
	"no GPM: source nvml, utilisation and PCIe counters; occupancy and NVLink null"
is "$(a 3)" ok "no GPM: dram_bw_util from the utilisation's memory figure"
is "$(a 4)" ok "no GPM: sm_util from the utilisation's gpu figure"
is "$(a 5)" ok "no GPM: pcie_rx 12.5 GB/s from KB/s"

sample_for 0.75 "$tmp/refuse" FAKE_NVML_REFUSE=dram,occ,nvl_rx "$SAMPLE" --interval-ms 100
ask "$tmp/refuse" '[d["gpus"][0]["source"]] + [v and v["source"] for v in d["gpus"][0]["metrics"].values()]' \
	'fig(0, "dram_bw_util", [70])'
is "$(a 1)" "['gpm', 'nvml-utilization', 'gpm', None, 'gpm', 'gpm', None, 'gpm', 'nvml-memory']" \
	"metrics GPM refuses: DRAM from the utilisation, occupancy and NVLink rx null"
is "$(a 2)" ok "  and their figures"

# ------------------------------------------------------------ MIG, --gpus
sample_for 0.75 "$tmp/mig" FAKE_NVML_GPUS=2 FAKE_NVML_MIG=1 "$SAMPLE" --interval-ms 100
ask "$tmp/mig" 'shape()' \
	'[(g["index"], g["source"], g["note"], g["samples"] > 0, all(v is None for v in g["metrics"].values())) for g in d["gpus"]]'
is "$(a 1)" ok "a GPU in MIG mode: the document's shape"
is "$(a 2)" "[(0, 'gpm', None, True, False), (1, None, 'MIG: per-instance sampling not supported', False, True)]" \
	"  source null, a note, no metrics; the other GPU sampled"

sample_for 0.5 "$tmp/sel1" FAKE_NVML_GPUS=3 FAKE_NVML_VALUES_1=sm=55 "$SAMPLE" --gpus 1 --interval-ms 100
ask "$tmp/sel1" '[(g["index"], g["uuid"][-1], g["metrics"]["sm_util"]["mean"]) for g in d["gpus"]]'
is "$ans" "[(1, '1', 55)]" "--gpus 1: that GPU alone, with its own figures"
sample_for 0.5 "$tmp/sel2" FAKE_NVML_GPUS=3 "$SAMPLE" --gpus "$UUID2,0" --interval-ms 100
ask "$tmp/sel2" '[(g["index"], g["uuid"]) for g in d["gpus"]]'
is "$ans" "[(2, '$UUID2'), (0, '$UUID0')]" \
	"--gpus UUID,0: by UUID (its node index found) and by index, in that order"
sample_for 0.3 "$tmp/sel3" FAKE_NVML_GPUS=3 "$SAMPLE" --gpus "$(echo "$UUID2" | tr a-f A-F)"
ask "$tmp/sel3" '[g["index"] for g in d["gpus"]]'
is "$ans" "[2]" "a UUID in capitals"

for bad in x 1,x -1 0,0 "" "1," ,1 GPU- 12345 "$UUID2,$UUID2" "GPU-zz"; do
	out=$(env LD_LIBRARY_PATH="$tmp/fake" "$SAMPLE" --gpus "$bad" 2>"$tmp/err"); rc=$?
	err=$(cat "$tmp/err")
	if [ "$rc" = 64 ] && [ -z "$out" ] && printf '%s' "$err" | grep -q '^gpumem: sample: --gpus: '; then
		pass "--gpus '$bad': exit 64, 'gpumem: sample: --gpus: ...', no document"
	else
		fail "--gpus '$bad': exit 64, 'gpumem: sample: --gpus: ...', no document"
		diag "rc $rc" "stderr: $err" "stdout: $out"
	fi
done
run env LD_LIBRARY_PATH="$tmp/fake" "$SAMPLE" --gpus x
like "$out" "'x' is neither a GPU index nor a GPU-... UUID" "  saying what is wrong"
# A GPU the node has not: no usage error, a skipped document (the job's GPUs come from Slurm).
run env LD_LIBRARY_PATH="$tmp/fake" FAKE_NVML_GPUS=2 "$SAMPLE" --gpus 0,5
is "$rc" 0 "--gpus 0,5 on a 2-GPU node: exit 0 at once"
like "$out" "gpumem: sample: skipped: no such GPU" "  saying so on stderr"
doc "$out"
ask "$tmp/doc" 'shape()' '[d["state"], d["reason"], d["gpus"]]'
is "$(a 1)" ok "  a document"
is "$(a 2)" "['skipped', 'no such GPU: index 5 (NVML lists 2)', []]" "  state skipped, saying which"
run env LD_LIBRARY_PATH="$tmp/fake" "$SAMPLE" --gpus GPU-0123abcd
like "$out" '"reason":"no such GPU: GPU-0123abcd"' "an unknown UUID: skipped"
run env LD_LIBRARY_PATH="$tmp/fake" "$SAMPLE" --gpus "0,$UUID0"
like "$out" '"reason":"GPU 0 is listed twice"' "one GPU by index and by UUID: skipped"

# ------------------------------------------------------------ usage
for args in "--interval-ms 50" "--interval-ms 99" "--interval-ms 3600001" "--interval-ms 1s" \
	"--flush-s -1" "--flush-s 86401" "--bogus" "--gpus" "extra"; do
	# shellcheck disable=SC2086
	run env LD_LIBRARY_PATH="$tmp/fake" "$SAMPLE" $args
	opt=${args%% *}
	[ "$opt" = extra ] && opt="unexpected argument"
	[ "$opt" = --bogus ] && opt="unknown option '--bogus'"
	if [ "$rc" = 64 ] && printf '%s' "$out" | grep -q "^gpumem: sample: .*$opt" &&
		! printf '%s' "$out" | grep -q '^{'; then
		pass "$args: exit 64 naming $opt"
	else
		fail "$args: exit 64 naming $opt"; diag "rc $rc" "$out"
	fi
done
run env LD_LIBRARY_PATH="$tmp/fake" "$SAMPLE" --help
is "$rc" 0 "--help: exit 0"
like "$out" "^Usage: gpumem-sample \[--gpus LIST\] \[--interval-ms N\] \[--flush-s N\]" "  the usage"

# ------------------------------------------------------------ no NVML
run env LD_LIBRARY_PATH="$tmp/fake" FAKE_NVML_INIT_FAIL=1 timeout 5 "$SAMPLE"
is "$rc" 0 "nvmlInit fails: exit 0 by itself"
doc "$out"
ask "$tmp/doc" 'shape()' '[d["state"], d["reason"], d["gpus"], d["seconds"]]'
is "$(a 1):$(a 2)" "ok:['skipped', 'nvmlInit failed: Driver Not Loaded', [], 0]" \
	"  state skipped, with NVML's reason"
if env LD_LIBRARY_PATH="$tmp/none" python3 -c 'import ctypes; ctypes.CDLL("libnvidia-ml.so.1")' 2>/dev/null; then
	skip "this host has its own libnvidia-ml.so.1: 'no NVML at all' cannot be shown here"
	skip "  (the same)"
else
	env LD_LIBRARY_PATH="$tmp/none" timeout 5 "$SAMPLE" >"$tmp/nolib" 2>"$tmp/nolib.err"; rc=$?
	ask "$tmp/nolib" 'shape()' 'd["state"] + " | " + d["reason"]'
	is "$rc:$(a 1)" "0:ok" "no libnvidia-ml.so.1: exit 0, a document"
	like "$(a 2)" "^skipped \| no NVML \(libnvidia-ml.so.1: cannot open shared object file" \
		"  state skipped, saying why"
fi

# ------------------------------------------------------------ stopping, flushing
# SIGTERM in the middle of a long interval: at once, with a document.
start "$tmp/term" "$SAMPLE" --interval-ms 3600000
sleep 0.5
t0=$(date +%s%N); stop; t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
if [ "$ms" -lt 1000 ]; then pass "SIGTERM during an hour-long interval: gone in $ms ms"
else fail "SIGTERM during an hour-long interval: gone in $ms ms (want < 1000)"; fi
ask "$tmp/term" 'shape()' '[d["state"], d["gpus"][0]["samples"], d["gpus"][0]["metrics"]["dram_bw_util"]]'
is "$rc:$(a 1):$(a 2)" "0:ok:['ran', 0, None]" "  exit 0, a valid document with no sample yet"
for sig in INT HUP; do
	start "$tmp/$sig" "$SAMPLE"
	sleep 0.3; kill -"$sig" "$pid"; wait "$pid"; rc=$?
	ask "$tmp/$sig" 'shape()'
	is "$rc:$ans" "0:ok" "SIG$sig: the same"
done

# --flush-s 1: a regular file holds a recent document while it runs, and after SIGKILL.
start "$tmp/flush" "$SAMPLE" --interval-ms 100 --flush-s 1
sleep 1.5
ask "$tmp/flush" 'shape()' 'd["gpus"][0]["samples"]'
is "$(a 1)" ok "--flush-s 1: a valid document in the file while the sampler runs"
n1=$(a 2)
sleep 1.1
kill -KILL "$pid"; wait "$pid" 2>/dev/null
ask "$tmp/flush" 'shape()' 'd["gpus"][0]["samples"]'
is "$(a 1)" ok "  and after SIGKILL"
n2=$(a 2)
if [ "$n1" -ge 5 ] 2>/dev/null && [ "$n2" -gt "$n1" ]; then pass "  rewritten each second ($n1, then $n2 samples)"
else fail "  rewritten each second ($n1, then $n2 samples)"; fi
start "$tmp/noflush" "$SAMPLE" --interval-ms 100 --flush-s 0
sleep 0.5
is "$(wc -c <"$tmp/noflush" | tr -d ' ')" 0 "--flush-s 0: nothing written before the end"
stop
ask "$tmp/noflush" 'shape()'
is "$rc:$ans" "0:ok" "  then the document"
# A pipe: written once, at the end.
sh -c 'echo $$ >"$1"; exec env LD_LIBRARY_PATH="$2" "$3" --interval-ms 100 --flush-s 1' sh \
	"$tmp/pipe.pid" "$tmp/fake" "$SAMPLE" 2>/dev/null | cat >"$tmp/pipe" &
cat_pid=$!
sleep 1.3
is "$(wc -c <"$tmp/pipe" | tr -d ' ')" 0 "stdout a pipe: nothing before the end"
kill -TERM "$(cat "$tmp/pipe.pid")"
wait "$cat_pid"
ask "$tmp/pipe" 'shape()'
is "$ans" ok "  one document at the end"
# Appended to a log: what was there is kept, the document follows it.
echo "a line before" >"$tmp/log"
env LD_LIBRARY_PATH="$tmp/fake" "$SAMPLE" --interval-ms 100 --flush-s 1 >>"$tmp/log" 2>/dev/null &
pid=$!
sleep 1.3; stop
echo "a line after" >>"$tmp/log"
is "$(head -1 "$tmp/log"):$(sed -n 2p "$tmp/log" | cut -c1-28):$(sed -n 3p "$tmp/log")" \
	'a line before:{"schema":"gpumem-profile/1":a line after' \
	"stdout appending to a log: the lines before and after kept around the document"
# Stdout that cannot be written: exit 1.
if [ -w /dev/full ]; then
	run env LD_LIBRARY_PATH="$tmp/fake" FAKE_NVML_INIT_FAIL=1 sh -c "\"$SAMPLE\" >/dev/full"
	is "$rc" 1 "stdout /dev/full: exit 1"
	like "$out" "gpumem: sample: cannot write the document on stdout" "  saying so"
else
	skip "no /dev/full"
	skip "  (the same)"
fi
run sh -c "\"$SAMPLE\" >&-"
is "$rc" 1 "stdout closed: exit 1"
like "$out" "gpumem: sample: stdout is closed" "  saying so"

# ------------------------------------------------------------ the long run
wait_until 13000
rss_long=$(rss "$long")
pid=$long; stop
bg=
secs=$(( ($(date +%s%N) - t_long) / 1000000000 ))
if [ -n "$rss_short" ] && [ -n "$rss_long" ] && [ "$rss_long" -le $((rss_short + 256)) ]; then
	pass "memory does not grow: RSS $rss_short kB after 2 s, $rss_long kB after $secs s"
else
	fail "memory does not grow: RSS $rss_short kB after 2 s, $rss_long kB after $secs s"
fi
# The step: the interval doubled until the samples fit 120 slots (no round missed).
ask "$tmp/long" 'shape()' \
	'(lambda g, per: [g["samples"] > 120, per >= 2 and per & (per - 1) == 0, math.ceil(g["samples"] / per) <= 120 < math.ceil(g["samples"] / (per // 2)), all(len(v["timeline"]) == math.ceil(g["samples"] / per) for v in g["metrics"].values())])(d["gpus"][0], round(d["gpus"][0]["timeline_step_s"] / 0.1))' \
	'd["gpus"][0]["metrics"]["dram_bw_util"]["timeline"][:3]' \
	'd["cpu_s"] / d["seconds"] < 0.02 or "%s s of CPU in %s s" % (d["cpu_s"], d["seconds"])'
is "$rc:$(a 1)" "0:ok" "$secs s at 100 ms: a document"
is "$(a 2)" "[True, True, True, True]" \
	"more than 120 samples: the step doubled until they fit, each slot the same samples"
is "$(a 3)" "[70, 70, 70]" "  merged slots keep the mean"
is "$(a 4)" True "CPU: under 2 % of a core at 10 samples a second"
done_testing
