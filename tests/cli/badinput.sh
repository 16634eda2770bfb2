#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Every class of bad policy input gets a clear error naming file, line and
# column, exit status 1, and is refused without hanging (the time is shown,
# not asserted: a loaded CI machine under ASan is no benchmark).
. "$top_srcdir/tests/lib.sh"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

# reject NAME FILE PATTERN: gpumem validate fails fast with PATTERN.
reject() {
	name=$1 file=$2 pat=$3
	start=$(date +%s%N)
	out=$("$GPUMEM" validate "$file" 2>&1); rc=$?
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	is "$rc" 1 "$name: exit status 1"
	like "$out" "$pat" "$name: message"
	# A hang guard, not a timing claim.
	if [ "$ms" -lt 20000 ]; then pass "$name: refused (${ms} ms)"
	else fail "$name: took ${ms} ms (a hang?)"; fi
}

. "$top_srcdir/tests/bad-policies.sh"
bad_policies "$t" >"$t/cases"
while IFS='	' read -r name file pat; do
	reject "$name" "$file" "$pat"
done <"$t/cases"

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	printf 'version: 1\n' >"$t/secret.yaml"; chmod 600 "$t/secret.yaml"; chmod 755 "$t"
	out=$(runuser -u nobody -- "$GPUMEM" validate "$t/secret.yaml" 2>&1); rc=$?
	is "$rc" 1 "unreadable file: exit status 1"
	like "$out" "secret.yaml: error: cannot open: Permission denied" "unreadable file: message"
else
	skip "unreadable file: needs root to switch to an unprivileged user"
fi

# Every problem is reported, not only the first.
printf 'version: 1\nl2:\n  persisting_limit: 7 bananas\nmps:\n  active_thread_percentage: 0\n  deamon: job\n' >"$t/many.yaml"
run "$GPUMEM" validate "$t/many.yaml"
is "$(printf '%s\n' "$out" | grep -c ': error: ')" 3 "three problems, three error lines"
like "$out" "many.yaml:6:3: error: unknown key 'mps.deamon' \(did you mean 'daemon'\?\)" "the last one too"

# Several files: exit 1 if any is invalid, messages name each file.
run "$GPUMEM" validate "$top_srcdir/policies/stream.yaml" "$t/unknown.yaml"
is "$rc" 1 "one bad file among two fails validation"
unlike "$out" "stream.yaml" "the good file gets no message"
done_testing
