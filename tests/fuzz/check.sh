#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Fuzzing in `make check`: build the libFuzzer targets (tests/fuzz/run),
# replay every regression input and every seed once, then fuzz each target
# for GPUMEM_FUZZ_SECONDS (20) seconds.  Without a clang that can link
# libFuzzer the whole file is skipped, and says why.
. "$top_srcdir/tests/lib.sh"
fz="$top_srcdir/tests/fuzz"
targets=${GPUMEM_FUZZ_TARGETS:-policy site gpus report profile}
secs=${GPUMEM_FUZZ_SECONDS:-20}
w=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-fuzz-check.XXXXXX")
# A failure keeps the work directory: the crashing inputs are in it.
trap 'if [ "$_tap_failed" = 0 ]; then rm -rf "$w"; else echo "# work directory kept: $w"; fi' EXIT
GPUMEM_FUZZ_WORK=$w
export GPUMEM_FUZZ_WORK
# Only the default build: a finding must never be tolerated here.
unset GPUMEM_FUZZ_CFLAGS

why=$(sh "$fz/run" --probe 2>&1)
case $? in
0) ;;
77) skip_all "$why" ;;
*) fail "probe for clang and libFuzzer"; diag "$why"; done_testing ;;
esac

run sh "$fz/run" --build-only
is "$rc" 0 "the fuzz targets build with clang, libFuzzer, ASan and UBSan"
if [ "$rc" != 0 ]; then
	diag "$out"
	done_testing
fi

# why_failed LOG: the lines that say what broke, not the whole report.
why_failed() {
	grep -E 'invariant failed|ERROR: |SUMMARY: |runtime error: |^ +#[0-9] .* in [a-z_]+ /' "$1" |
		head -n 12
}

# Each input that once broke the engine is its own test, so a fix shows.
for t in $targets; do
	for f in "$fz/regress/$t"/*; do
		[ -f "$f" ] || continue
		"$w/build/fuzz_$t" -rss_limit_mb=2048 -timeout=5 "$f" >"$w/one.log" 2>&1
		rc=$?
		if [ "$rc" = 0 ]; then
			pass "fuzz_$t replays regress/$t/$(basename "$f")"
		else
			fail "fuzz_$t replays regress/$t/$(basename "$f") (exit $rc)"
			diag "$(why_failed "$w/one.log")"
		fi
	done
done

# The seeds in one go per target.
for t in $targets; do
	set --
	for f in "$fz/corpus/$t"/*; do
		[ -f "$f" ] && set -- "$@" "$f"
	done
	"$w/build/fuzz_$t" -rss_limit_mb=2048 -timeout=5 "$@" >"$w/seeds.log" 2>&1
	rc=$?
	if [ "$rc" = 0 ]; then
		pass "fuzz_$t replays its $# seeds"
	else
		fail "fuzz_$t replays its $# seeds (exit $rc)"
		diag "failed on: $(grep '^Running: ' "$w/seeds.log" | tail -n 1 | cut -c10-)"
		diag "$(why_failed "$w/seeds.log")"
	fi
done

# Then fuzz each for a while: new inputs, not only the ones we know.
for t in $targets; do
	out=$(GPUMEM_FUZZ_TARGETS=$t sh "$fz/run" "$secs" 2>&1)
	rc=$?
	stats=$(printf '%s\n' "$out" | sed -n "s/^fuzz: $t: \([0-9?]* execs.*\), exit.*/\1/p")
	if [ "$rc" = 0 ]; then
		pass "fuzz_$t: ${secs} s, no finding (${stats:-no statistics})"
	else
		fail "fuzz_$t: ${secs} s: a finding (exit $rc)"
		diag "$out"
	fi
done
done_testing
