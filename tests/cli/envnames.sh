#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Every environment variable gpumem names is named once, in env.c's header
# (plugin/core/policy/env.h), and every helper's environment is built by
# env.c's one builder (gpumem_henv_*): in the C code of plugin/ and
# kernels/, no string literal spells a CUDA_ name, and none is a NAME=VALUE
# assignment, outside env.c and env.h.  Comments may name them, and
# messages CUDA's result codes (CUDA_ERROR_*, CUDA_SUCCESS).
. "$top_srcdir/tests/lib.sh"
command -v python3 >/dev/null || skip_all "python3 is needed to read the sources"
out=$(python3 - "$top_srcdir" <<'PY'
import os, re, sys
top = sys.argv[1]
own = {os.path.join("plugin", "core", "env.c"), os.path.join("plugin", "core", "policy", "env.h")}
tok = re.compile(r'"(?:\\.|[^"\\\n])*"|/\*.*?\*/|//[^\n]*|\'(?:\\.|[^\'\\\n])*\'', re.S)
files = 0
for part in ("plugin", "kernels"):
    for d, _, names in os.walk(os.path.join(top, part)):
        for n in sorted(names):
            if not n.endswith((".c", ".h", ".cu")):
                continue
            path = os.path.join(d, n)
            rel = os.path.relpath(path, top)
            files += 1
            if rel in own:
                continue
            text = open(path, encoding="utf-8", errors="replace").read()
            for m in tok.finditer(text):
                s = m.group(0)
                if not s.startswith('"'):
                    continue
                line = text.count("\n", 0, m.start()) + 1
                if re.search(r"\bCUDA_(?!ERROR_|SUCCESS\b)[A-Z0-9_]+", s):
                    print("name %s:%d: %s" % (rel, line, s))
                elif re.match(r'"[A-Z][A-Z0-9_]*=', s):
                    print("assign %s:%d: %s" % (rel, line, s))
print("files %d" % files)
PY
) || { echo "Bail out! the source scan failed"; exit 1; }
files=$(printf '%s\n' "$out" | sed -n 's/^files //p')
[ "${files:-0}" -gt 100 ] && pass "the scan read the sources ($files files)" ||
	fail "the scan read the sources (only ${files:-0} files)"
names=$(printf '%s\n' "$out" | sed -n 's/^name //p')
[ -z "$names" ] && pass "no literal CUDA_ name in C outside env.c and env.h" ||
	{ fail "no literal CUDA_ name in C outside env.c and env.h"; diag "$names"; }
assigns=$(printf '%s\n' "$out" | sed -n 's/^assign //p')
[ -z "$assigns" ] && pass "no helper environment built by hand (NAME=VALUE literals) outside env.c" ||
	{ fail "no helper environment built by hand (NAME=VALUE literals) outside env.c"; diag "$assigns"; }
done_testing
