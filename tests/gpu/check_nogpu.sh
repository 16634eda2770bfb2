#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem-check where `make check` runs.  Without a GPU (CI): it must answer
# "skipped" with exit 3 and one clear line, in well under a second.  With a
# GPU: it runs for real and the JSON must hold a verdict for every device.
# Not built (configured without CUDA): the whole file is skipped, saying so.
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$top_srcdir/tests/lib.sh"

CHECK="${GPUMEM_CHECK:-$top_builddir/kernels/check/gpumem-check}"
[ -x "$CHECK" ] || skip_all "gpumem-check not built (configured without CUDA): $CHECK"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-check.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
PY=$(command -v python3 || true)

ms() { date +%s%N | cut -c1-13; }

# json_ok FILE PYTHON-EXPRESSION-ON-d: true when the expression holds
json_ok() {
	[ -n "$PY" ] || return 2
	"$PY" - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)
EOF
}

# -- usage errors name the option and exit 64, GPU or not
run "$CHECK" --mem-bytes lots
is "$rc" 64 "bad --mem-bytes: exit 64"
like "$out" "^gpumem-check: --mem-bytes: 'lots'" "the message names the option"
run "$CHECK" --min-fraction 2
is "$rc" 64 "bad --min-fraction: exit 64"
like "$out" "--min-fraction" "the message names --min-fraction"
run "$CHECK" --no-such-option
is "$rc" 64 "unknown option: exit 64"
run "$CHECK" --devices 'not a gpu'
is "$rc" 64 "bad --devices: exit 64"
run "$CHECK" --help
is "$rc" 0 "--help: exit 0"
like "$out" "--plant-error" "--help lists the options"
like "$out" "3 skipped" "--help lists the exit codes"
run "$CHECK" --version
is "$rc" 0 "--version: exit 0"
like "$out" "^gpumem-check [0-9]" "--version prints the version"

# -- the real run, or the no-GPU answer
t0=$(ms)
run "$CHECK" --json "$tmp/out.json"
t1=$(ms)
elapsed=$((t1 - t0))
diag "gpumem-check exited $rc after ${elapsed} ms"

if [ ! -e /dev/nvidia0 ] || [ "$rc" -eq 3 ]; then
	[ -e /dev/nvidia0 ] && diag "/dev/nvidia0 exists but CUDA sees no usable GPU"
	is "$rc" 3 "no GPU: exit 3 (skipped)"
	like "$out" "^gpumem-check: skipped: " "no GPU: one 'skipped' line"
	is "$(printf '%s\n' "$out" | wc -l)" 1 "no GPU: exactly one line"
	# A hang guard, not a timing claim (bench/ measures; here the
	# machine may be loaded): the answer comes without CUDA work.
	if [ "$elapsed" -lt 20000 ]; then
		pass "no GPU: answered (${elapsed} ms)"
	else
		fail "no GPU: answered in ${elapsed} ms (a hang?)"
	fi
	if [ -n "$PY" ]; then
		json_ok "$tmp/out.json" \
			'd["schema"] == "gpumem-check/1" and d["devices"] == [] and d["overall"]["verdict"] == "skipped" and d["overall"]["exit_code"] == 3 and d["overall"]["reason"]' \
			&& pass "no GPU: the JSON says skipped, with the reason" \
			|| fail "no GPU: the JSON says skipped, with the reason"
	else
		like "$(cat "$tmp/out.json")" '"verdict":"skipped","exit_code":3' \
			"no GPU: the JSON says skipped"
	fi
	# the same fast answer with every option that does heavy work
	t0=$(ms)
	run "$CHECK" --l2-ab --plant-error --mem-bytes 4GiB
	t1=$(ms)
	is "$rc" 3 "no GPU, heavy options: still exit 3"
	[ $((t1 - t0)) -lt 20000 ] && pass "no GPU, heavy options: answered ($((t1 - t0)) ms)" \
		|| fail "no GPU, heavy options: $((t1 - t0)) ms (a hang?)"
else
	case $rc in
	0|1|2|4) pass "GPU: exit $rc is a verdict (0 pass, 1 warn, 2 fail, 4 unusable)" ;;
	*) fail "GPU: exit $rc is not a verdict"; diag "$out" ;;
	esac
	like "$out" "overall: " "GPU: the table has an overall line"
	if [ -n "$PY" ]; then
		json_ok "$tmp/out.json" \
			'd["schema"] == "gpumem-check/1" and len(d["devices"]) >= 1' \
			&& pass "GPU: JSON lists the devices" || fail "GPU: JSON lists the devices"
		json_ok "$tmp/out.json" \
			'all(x["verdict"] in ("pass", "pass (no reference)", "warn", "fail", "unusable") for x in d["devices"])' \
			&& pass "GPU: a verdict for each device" || fail "GPU: a verdict for each device"
		json_ok "$tmp/out.json" \
			'd["overall"]["exit_code"] == '"$rc" \
			&& pass "GPU: the JSON exit code matches" || fail "GPU: the JSON exit code matches"
	else
		n=$(grep -o '"index":' "$tmp/out.json" | wc -l)
		[ "$n" -ge 1 ] && pass "GPU: $n device(s) in the JSON" || fail "GPU: no device in the JSON"
	fi
	diag "$(printf '%s\n' "$out" | tail -n 30)"
fi
done_testing
