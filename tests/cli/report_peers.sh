#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem report: each GPU against its peers.  A site that names no
# reference (every check "pass (no reference)") still finds its slow GPU:
# of 512 GPUs, the one at 0.80x of the others is listed first and marked
# in the table, the summary, --json, --prometheus and --svg; one 3% low
# (inside no margin) is not marked, nor is a GPU with too few peers.
. "$top_srcdir/tests/lib.sh"
gen="$top_srcdir/tests/cli/report-gen.sh"
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
TZ=UTC; export TZ
unset GPUMEM_SITE
XDG_CACHE_HOME="$t/cache"; export XDG_CACHE_HOME

# 64 nodes of 8 NVIDIA B200 (report-gen.sh has no reference for it), one
# check each, figures within 0.3% (HBM) and 3% (host links) of each other;
# node41 GPU 5 at 0.80x of every figure; node17 GPU 2 3% low; node41's
# checks of a day before, when GPU 5 was as fast as the rest; and gpux01,
# the site's only 2 H100 PCIe, one of them slow: one peer is too few.
awk 'BEGIN {
	srand(3)
	for (n = 0; n < 64; n++) {
		printf "R|%d|0|node%02d|after|2026-11-20T%02d:%02d:00Z|ran|0-7||alice|0|\n", 1000 + n, n, n % 24, n % 60
		for (g = 0; g < 8; g++) {
			f = 1 + 0.003 * (rand() * 2 - 1); h = 1 + 0.03 * (rand() * 2 - 1)
			if (n == 41 && g == 5) f = h = 0.80
			if (n == 17 && g == 2) f = h = 0.97
			printf "D|%d|GPU-%04d-%d|NVIDIA B200|%.1f|%.1f|%.1f|%.1f|%.1f|%.1f|%.1f|\n", g, n, g,
				6500 * f, 6400 * f, 6000 * f, 6100 * f, 6300 * f, 55 * h, 56 * h
		}
	}
	print "R|900|0|node41|after|2026-11-19T10:00:00Z|ran|0-7||alice|0|"
	for (g = 0; g < 8; g++)
		printf "D|%d|GPU-0041-%d|NVIDIA B200|6500|6400|6000|6100|6300|55|56|\n", g, g
	print "R|950|0|gpux01|after|2026-11-20T12:00:00Z|ran|0,1||alice|0|"
	print "D|0|GPU-x1-0|NVIDIA H100 PCIe|1900|1900|1700|1750|1850|25|26|"
	print "D|1|GPU-x1-1|NVIDIA H100 PCIe|1400|1400|1300|1300|1400|20|21|"
}' | sh "$gen" write "$t/r"
is "$(ls "$t/r" | wc -l | tr -d ' ')" 66 "generator wrote 66 report files"
is "$(grep -l '"verdict":"pass (no reference)"' "$t"/r/*.json | wc -l | tr -d ' ')" 66 \
	"every check: pass (no reference)"
is "$(grep -o '"verdict":"pass (no reference)"' "$t/r/job1041.0.node41.after.json" | wc -l | tr -d ' ')" 56 \
	"(all 7 figures of all 8 GPUs of node41)"

mark="slow vs fleet: read 0.80x of 511 peers"
# rows OUTPUT: "NODE:GPU" of each table row, in order.
rows() { printf '%s\n' "$1" | awk '/^TIME \(UTC\)/ { h = 1; next } h && /^[0-9]/ { printf "%s%s:%s", sep, $3, $6; sep = " " }'; }

run "$GPUMEM" report "$t/r"
is "$rc" 0 "table: exit 0"
is "$(rows "$out" | cut -d' ' -f1)" "node41:5" "table: the slow GPU listed first"
like "$(printf '%s\n' "$out" | grep -A1 '^TIME' | tail -1)" \
	"^2026-11-20 17:41 +node41 +1041.0 +after +5 B200 +pass +5200 +4800 +4880 +44.0 +44.8 +$mark\$" \
	"table: its row marked: $mark"
is "$(printf '%s\n' "$out" | grep -c 'slow vs')" 2 "table: marked once, and named once in the summary"
unlike "$(printf '%s\n' "$out" | grep ' node17 .* 2 B200 ')" "slow" "table: the 3%-low GPU is not marked"
unlike "$(printf '%s\n' "$out" | grep 'gpux01')" "slow" "table: a model of 2 GPUs (1 peer) is not judged"
is "$(rows "$out" | tr ' ' '\n' | grep -n '^node41:5$' | cut -d: -f1 | tr '\n' ' ')" "1 520 " \
	"table: its check of the day before, as fast as its peers, is not marked: the oldest pass (520 of 522)"
like "$out" "slow against their peers \(under 0.90x of their median for HBM, 0.85x for host links\): 1 GPU" \
	"summary: one slow GPU"
like "$out" "  node41 +5  B200 +$mark  GPU-0041-5" "summary: named with its mark"
like "$(printf '%s\n' "$out" | grep -A2 'worst GPUs' | tail -1)" "^  node41 +5  B200 " \
	"summary: first of the worst GPUs"

run "$GPUMEM" report --verdict pass "$t/r"
is "$(rows "$out" | cut -d' ' -f1)" "node41:5" "--verdict pass: still compared with every peer, still first"

run "$GPUMEM" report --json "$t/r"
is "$rc" 0 "--json: exit 0"
printf '%s\n' "$out" >"$t/rows.json"
is "$(json "$t/rows.json" '(d[0]["node"], d[0]["gpu_index"], d[0]["peers"]["slow"], d[0]["peers"]["ratio"], d[0]["peers"]["peers"], d[0]["peers"]["against"], d[0]["peers"]["text"])')" \
	"('node41', 5, True, 0.8001, 511, 'fleet', '$mark')" "--json: first row the slow GPU, its peers"
is "$(json "$t/rows.json" 'sum(1 for r in d if r["peers"] and r["peers"]["slow"])')" 1 "--json: one row slow"
is "$(json "$t/rows.json" '[round(r["peers"]["ratio"], 2) for r in d if r["node"] == "node17" and r["gpu_index"] == 2]')" \
	"[0.97]" "--json: the 3%-low GPU at 0.97x, not slow"
is "$(json "$t/rows.json" '[r["peers"] for r in d if r["node"] == "gpux01"]')" "[None, None]" \
	"--json: one peer is too few: not compared"
run "$GPUMEM" report --summary --json "$t/r"
printf '%s\n' "$out" >"$t/sum.json"
is "$(json "$t/sum.json" '[(g["node"], g["gpu_index"], g["slow_text"]) for g in d["slow"]]')" \
	"[('node41', 5, '$mark')]" "--summary --json: the slow list"
is "$(json "$t/sum.json" '(d["worst"][0]["node"], d["worst"][0]["slow"], d["peer_margins"])')" \
	"('node41', True, {'hbm': 0.9, 'host': 0.85})" "--summary --json: first of the worst, margins"

run "$GPUMEM" report --prometheus "$t/r"
is "$rc" 0 "--prometheus: exit 0"
like "$(printf '%s\n' "$out" | sed -n 3p)" \
	'^gpumem_peer_slow\{node="node41",gpu="5",uuid="GPU-0041-5",model="NVIDIA B200"\} 1$' \
	"--prometheus: the slow GPU first"
is "$(printf '%s\n' "$out" | grep -c '^gpumem_peer_slow{.*} 1$')" 1 "--prometheus: one GPU slow"
is "$(printf '%s\n' "$out" | grep -c '^gpumem_peer_slow{')" 512 "--prometheus: every judged GPU (not the H100 pair)"
like "$out" 'gpumem_peer_ratio\{node="node41",gpu="5",uuid="GPU-0041-5",model="NVIDIA B200",metric="read",against="fleet"\} 0.800' \
	"--prometheus: its ratio"
like "$out" 'gpumem_peer_count\{node="node41",gpu="5",uuid="GPU-0041-5",model="NVIDIA B200",metric="read",against="fleet"\} 511' \
	"--prometheus: its peers"
is "$(printf '%s\n' "$out" | grep -vc -E '^(# (HELP|TYPE) gpumem_peer_[a-z]+ .*|gpumem_peer_[a-z]+\{[^{}]*\} [0-9.]+)$')" 0 \
	"--prometheus: every line a comment or a sample"

run "$GPUMEM" report --svg "$t/p.svg" --limit 4 "$t/r"
is "$rc" 0 "--svg: exit 0"
svg=$(cat "$t/p.svg")
like "$(printf '%s\n' "$svg" | grep -o '<tspan font-weight="bold" font-size="11.5">[^<]*</tspan> · GPU [0-9]*' | head -1)" \
	"node41</tspan> · GPU 5" "--svg: the slow GPU's panel first"
like "$svg" "class=\"note slow-peers\"[^>]*>$mark<" "--svg: its panel marked"
like "$svg" "class=\"slow-peers\">node41 GPU 5: $mark<" "--svg: named in the overview"
is "$(printf '%s\n' "$svg" | grep -o 'slow vs [a-z]*' | wc -l | tr -d ' ')" 2 "--svg: no other GPU marked"

run "$GPUMEM" report --prometheus --json "$t/r"
is "$rc" 64 "--prometheus --json: usage error"
like "$out" "gpumem: report: --prometheus prints its own text" "(said)"

done_testing
