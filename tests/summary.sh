#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Count the individual TAP results of the last `make check` (from the .trs
# files) and print one closing line: "N passed, N failed, N skipped".
dir=${1:-.}
find "$dir" -name '*.trs' -exec cat {} + 2>/dev/null | awk '
	/^:test-result: PASS/  { p++ }
	/^:test-result: XFAIL/ { p++ }
	/^:test-result: FAIL/  { f++ }
	/^:test-result: XPASS/ { f++ }
	/^:test-result: ERROR/ { f++ }
	/^:test-result: SKIP/  { s++ }
	END { printf "%d passed, %d failed, %d skipped\n", p, f, s }'
