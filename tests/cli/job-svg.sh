#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem job --report FILE --svg: the job's picture, from report files
# written here (a stand-in profile of known shape), read as XML, then
# rendered by Debian's chromium headless: on GPU 0 the HBM line (blue) is
# at 20% before its step and at 80% after it, where the profile says.
# Also: every node of the job beside FILE is drawn, a MIG GPU, a GPU with
# no sample, a skipped and a refused profile and null slots are notes and
# breaks (never a crash), user strings are escaped, and JOBID --svg draws
# the same from the site file's report.dir.  The PNG is decoded with Python's zlib
# (tests/cli/pngrows.py).
. "$top_srcdir/tests/lib.sh"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir "$t/r"
unset GPUMEM_SITE

python3 "$top_srcdir/tests/cli/job-gen.py" test "$t/r"

run "$GPUMEM" job --report "$t/r/job77.prolog.gpu01.before.json" --svg "$t/job.svg"
is "$rc" 0 "job --report FILE --svg OUT: exit 0" || diag "$out"
like "$out" "gpumem: job: wrote .*job.svg: job 77, 4 GPUs on 4 nodes" "it says what it drew"
svg=$(cat "$t/job.svg")
txt=$(sed 's/<[^>]*>/ /g' "$t/job.svg" | tr -s ' \n' '  ')      # the text, lines joined
run python3 -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); print(r.tag, r.get("width"))' "$t/job.svg"
like "$out" "{http://www.w3.org/2000/svg}svg [0-9]" "the picture is well-formed XML (SVG)" || diag "$out"
like "$svg" ">Job 77: what its GPUs did, and the advice</text>" "title"
like "$txt" "user alice; 4 nodes, 4 GPUs" "subtitle: user, nodes, GPUs"
like "$txt" "Node gpu01, policy e&lt;vil&gt;&amp;&quot;&apos;.yaml In force: L2 persisting 25%, MPS none \(daemon none\), unified memory pl=gpu" \
	"node head: the policy (escaped) and what was in force"
unlike "$svg" "e<vil>" "no user string reaches the SVG unescaped"
like "$txt" "Sampled 120 s from 2026-11-25T16:00:00Z" "how long it was sampled"
like "$svg" ">gpu01 GPU 0, NVIDIA H100 80GB HBM3: 120 samples, 1 s a point, source gpm</text>" \
	"GPU 0's caption head"
like "$txt" "Advice: try policy stream.yaml \(rule setaside\): the job ran under a persisting-L2 set-aside" \
	"GPU 0's advice (25% set-aside, DRAM p95 80%): rule, policy, reason in the caption"
like "$txt" "Advice: try policy mps-half.yaml \(rule idle\): the GPU was idle" "GPU 1's advice"
for l in '>HBM</text>' '>SM</text>' '>rx, to GPU</text>' '>tx, to host</text>' '>used</text>' \
	'>mean 50%</text>' '>HBM busy</text>'; do
	like "$svg" "$l" "a line named at its end: $l"
done
like "$txt" "tx, to host: not measured by this GPU&apos;s source" "a figure the source lacks: a note"
like "$txt" "breaks: 10 slots without a sample" "null slots: a note..."
is "$(grep -c 'class="series"[^>]*d="M[^"]*M' "$t/job.svg")" 4 "  ... and broken lines (HBM, SM, rx, memory of GPU 1)"
like "$txt" "not sampled: MIG &lt;b&gt;&amp;[^[ ]{1,4}\[2J: per-instance sampling not supported" \
	"a MIG GPU: empty plots with its note, escaped"
like "$txt" "not sampled \(no sample in the job&apos;s time\)" "a GPU with no sample: a note"
like "$txt" "Advice: no policy change \(rule short\): too short to tell \(0 samples\)" "  and its advice"
like "$txt" "Node gpu03, policy stream.yaml In force: .* Profile skipped: no libnvidia-ml.so.1: no figure to draw" \
	"a skipped profile: the node says so"
like "$txt" "Node gpu04, .* Profile refused: gpus\[0\].metrics.sm_util.timeline\[5\]" \
	"a refused profile: the node says why, nothing of it drawn"
is "$(grep -c '<g class="gpu">' "$t/job.svg")" 4 "four GPU blocks (gpu01: 2, gpu02: 2; job 78 not drawn)"
unlike "$svg" "$(printf '\033')" "no escape byte in the SVG"

run "$GPUMEM" job --report "$t/r/job77.epilog.gpu01.after.json" --svg - 
is "$rc" 0 "--svg -: to stdout"
like "$out" "^<\?xml version" "  the SVG on stdout"

# JOBID --svg: the same picture, from the job's reports in the site file's report.dir.
printf 'version: 1\nreport:\n  dir: %s\n' "$t/r" >"$t/site.yaml"
run "$GPUMEM" job 77 --site "$t/site.yaml" --svg "$t/id.svg"
is "$rc" 0 "JOBID --svg OUT: exit 0 (the site file's report.dir)" || diag "$out"
if cmp -s "$t/job.svg" "$t/id.svg"; then pass "  the same picture as --report FILE --svg"; else fail "  the same picture as --report FILE --svg"; fi
run env GPUMEM_SITE="$t/site.yaml" "$GPUMEM" job 77 --svg -
like "$out" "^<\?xml version" "  GPUMEM_SITE names the site file too; - is stdout"
printf 'version: 1\nreport:\n  dir: %s\n' "$t/nosuchdir" >"$t/site2.yaml"
run "$GPUMEM" job 77 --site "$t/site2.yaml" --svg "$t/x.svg"
is "$rc" 2 "JOBID --svg with no report directory: 2"
like "$out" "gpumem: job: --svg: the report directory .*nosuchdir: No such file or directory \(the picture is drawn from the job's report files, read with your rights" "  it says which directory and why"
run "$GPUMEM" job 99999 --site "$t/site.yaml" --svg "$t/x.svg"
is "$rc" 2 "a job with no report there: 2"
like "$out" "no report of job 99999 in .* has a profile" "  said so"
run "$GPUMEM" job 77_1 --site "$t/site.yaml" --svg "$t/x.svg"
is "$rc" 64 "JOBID --svg of an array task's ARRAYID_TASK: usage error (64)"
like "$out" "JOBID the job's own number, as in the report files' names: for an array task sacct -j ID -o JobIDRaw" "  it says which number to give"
run "$GPUMEM" job 77 --json --svg "$t/x.svg"
is "$rc" 64 "--json with --svg: usage error"
[ ! -e "$t/x.svg" ] && pass "  no failed run wrote a file" || fail "  a failed run wrote a file"
run "$GPUMEM" job --report "$t/r/nosuch.json" --svg "$t/x.svg"
is "$rc" 2 "a report that is not there: 2"
like "$out" "gpumem: job: --report .*/r/nosuch.json: No such file" "  said so"
run "$GPUMEM" job --report "$t/r/job77.prolog.gpu01.before.json" --svg "$t/nodir/x.svg"
is "$rc" 2 "an OUT that cannot be written: 2"
mkdir "$t/r2"; cp "$t/r/job77.prolog.gpu01.before.json" "$t/r2/"
run "$GPUMEM" job --report "$t/r2/job77.prolog.gpu01.before.json" --svg "$t/x.svg"
is "$rc" 2 "no report of the job with a profile: 2"
like "$out" "no report of job 77 in .* has a profile" "  said so"

# In a browser: GPU 0's HBM line where the profile puts it.
if ! command -v chromium >/dev/null 2>&1; then
	skip "chromium is not installed (contrib/setup-debian installs it)"
	done_testing
fi
read -r w h <<EOF2
$(sed -n 's/.*<svg [^>]* width="\([0-9]*\)" height="\([0-9]*\)".*/\1 \2/p' "$t/job.svg" | head -1)
EOF2
area=$(sed -n 's/.*<rect class="plot-area" x="\([0-9.]*\)" y="\([0-9.]*\)" width="\([0-9.]*\)" height="\([0-9.]*\)".*/\1 \2 \3 \4/p' "$t/job.svg" | head -1)
[ -n "$w" ] && [ -n "$area" ] && pass "page $w x $h px, GPU 0's first plot at $area" || fail "no size in the SVG"
timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$t/profile" \
	--window-size="$w,$h" --screenshot="$t/shot.png" "file://$t/job.svg" >"$t/chromium.log" 2>&1
is "$?" 0 "chromium rendered the picture" || diag "$(tail -5 "$t/chromium.log")"
run python3 - "$t/shot.png" $area <<'EOF'
import os, sys
sys.dont_write_bytecode = True     # nothing written to the source tree
sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests/cli"))
import pngrows
w, h, bpp, rows = pngrows.read(sys.argv[1])
x0, y0, pw, ph = (float(v) for v in sys.argv[2:6])
def blue_at(x):         # the rows where column x is the HBM line's blue (#1565c0)
    ys = []
    for y in range(int(y0), int(y0 + ph) + 1):
        r, g, b = rows[y][x * bpp:x * bpp + 3]
        if b > 150 and r < 90 and 60 < g < 140:
            ys.append(y)
    return ys
for name, frac, pct in (("before", 0.25, 20), ("after", 0.75, 80)):
    ys = blue_at(int(x0 + frac * pw))
    want = y0 + ph - pct / 100 * ph
    print(name, "at", [round(want)], "seen", ys, "ok" if ys and abs(sum(ys) / len(ys) - want) <= 2 else "no")
EOF
like "$out" "before at .* ok" "on screen: GPU 0's HBM line at 20% before the step" || diag "$out"
like "$out" "after at .* ok" "on screen: and at 80% after it" || diag "$out"
done_testing
