#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem report --svg looked at in a real browser: Debian's chromium renders
# the picture of a 1,600-GPU fleet headless, and the screenshot's pixels
# must show what the picture is for: the overview's cloud of passing GPUs
# (green), the failing GPU's red mark apart from it, on its left (lower
# bandwidth), and the warn GPU's orange one between.  The PNG is decoded
# with Python's zlib (tests/cli/pngrows.py: no imaging library on a CI machine).
. "$top_srcdir/tests/lib.sh"
command -v chromium >/dev/null 2>&1 || skip_all "chromium is not installed (contrib/setup-debian installs it)"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
gen="$top_srcdir/tests/cli/report-gen.sh"
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT

# 200 nodes x 8 GPUs, one report each; gpu117 GPU 5 at 0.70 of the
# reference (fail), gpu042 GPU 1 at 0.80 (warn), the rest 0.96-0.99.
awk 'BEGIN {
	srand(3); split("4373 4400 3969 4127 4294 55 55", r, " ")
	for (i = 0; i < 1600; i++) {
		node = i % 200; g = int(i / 200); f = 0.96 + 0.03 * rand()
		if (node == 117 && g == 5) f = 0.70
		if (node == 42 && g == 1) f = 0.80
		printf "R|%d|0|gpu%03d|after|2026-11-%02dT%02d:00:00Z|ran|%d||alice|0|\n", 5000 + i, node, 1 + i % 20, i % 24, g
		printf "D|0|GPU-%08d-0000-4000-8000-%012d|NVIDIA H200", node, g
		for (k = 1; k <= 7; k++) printf "|%.1f", r[k] * (k <= 4 ? f : 0.98)
		printf "|\n"
	}
}' | sh "$gen" write "$t/r"
run "$GPUMEM" report --svg "$t/fleet.svg" "$t/r"
is "$rc" 0 "--svg of 1,600 GPUs: exit 0"
svg=$(cat "$t/fleet.svg")
like "$svg" '<g class="fleet">' "the picture has the fleet overview"
like "$svg" "Every GPU, by its newest check: triad / the site&apos;s reference \(1600 GPUs" "the overview counts every GPU"
like "$svg" '>gpu117 GPU 5</text>' "the failing GPU is named"
like "$svg" '>gpu042 GPU 1</text>' "the warn GPU is named"
is "$(grep -c '<g class="outlier">' "$t/fleet.svg")" 2 "two marks drawn as outliers, the rest in the cloud"

# The screenshot: the page's width, down to the first panels.
w=$(sed -n 's/.*<svg [^>]* width="\([0-9]*\)".*/\1/p' "$t/fleet.svg" | head -1)
top=$(python3 -c 'import re,sys; s=open(sys.argv[1]).read(); m=re.search(r"<g class=\"fleet\">\n<rect x=\"\d+\" y=\"(\d+)\" width=\"\d+\" height=\"(\d+)\"", s); print(m.group(1), m.group(2))' "$t/fleet.svg")
set -- $top
fy=$1 fh=$2
[ -n "$w" ] && [ -n "$fy" ] && pass "the page is $w px wide, the overview at y $fy, $fh px high" || fail "no size in the SVG"
timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$t/profile" \
	--window-size="$w,$((fy + fh + 40))" --screenshot="$t/shot.png" "file://$t/fleet.svg" >"$t/chromium.log" 2>&1
is "$?" 0 "chromium rendered the picture" || diag "$(tail -5 "$t/chromium.log")"
run python3 - "$t/shot.png" "$fy" "$fh" <<'EOF'
import os, sys
sys.dont_write_bytecode = True     # nothing written to the source tree
sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests/cli"))
import pngrows
w, h, bpp, rows = pngrows.read(sys.argv[1])
y0, y1 = int(sys.argv[2]), int(sys.argv[2]) + int(sys.argv[3])
red, green, orange = [], [], []
for y in range(y0, min(y1, h)):
    line = rows[y]
    for x in range(w):
        r, g, bl = line[x * bpp:x * bpp + 3]
        if r > 180 and g < 90 and bl < 90: red.append(x)            # fail #d32f2f
        elif r > 200 and 120 < g < 180 and bl < 60: orange.append(x)  # warn #f29900
        elif g > r + 40 and g > bl + 40: green.append(x)             # pass #2e7d32, faint
print("size", w, h)
print("green", len(green) > 500, "red", len(red) > 10, "orange", len(orange) > 10)
print("order", max(red) < min(orange) < max(orange) < min(green) if red and orange and green else None)
EOF
like "$out" "green True red True orange True" "the screenshot shows the cloud (green), the failing (red) and the warn (orange) GPU" || diag "$out"
like "$out" "order True" "on screen: the red mark left of the orange, both left of the cloud" || diag "$out"
done_testing
