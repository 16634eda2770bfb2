#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The node check behind one contract (plugin/spank/check/check_ctx.h): the
# check's files take what jobctx.c makes for them, never the job prolog's
# or epilog's whole context, the plugstack arguments or the site file; and
# each header declares only its own file's functions.
. "$top_srcdir/tests/lib.sh"
C=$top_srcdir/plugin/spank/check
is "$(grep -l '#include "\(jobctx\|plugin\|args\|mps\)\.h"' "$C"/*.c "$C"/*.h | xargs -rn1 basename)" "" \
	"no check file includes jobctx.h, plugin.h, args.h or mps.h"
is "$(grep -ln 'gpumem_jobctx\|->args\b\|->site\.' "$C"/*.c "$C"/*.h | xargs -rn1 basename)" "" \
	"no check file names the job's context, the plugstack arguments or the site file"
for c in "$C"/*.c; do
	f=$(basename "$c" .c)
	is "$([ -f "$C/$f.h" ] && echo yes)" "yes" "$f.c has its own header, $f.h"
	# Every gpumem_ function a header declares is defined in the file named after it.
	for fn in $(grep -o '^[a-z].*\bgpumem_[a-z0-9_]*(' "$C/$f.h" 2>/dev/null | grep -o 'gpumem_[a-z0-9_]*(' | tr -d '('); do
		like "$(grep -c "^[a-z].*\b$fn(" "$c")" "^1$" "$f.h declares $fn: $f.c defines it"
	done
done
done_testing
