#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The docs against the code (issue 33): every key of the policy and site
# key tables, as the code lists them (tests/unit/list_keys), is in
# gpumem-policy(5), policies/README.md (policy keys) and etc/gpumem.yaml
# (site keys); every message a step, a hook or gpumem-acct fails with is in
# doc/admin/troubleshooting.md; each page of doc/admin/ lists its sections,
# and every link to a heading of a Markdown file finds it.  Which messages
# count: docs.py says, and so does doc/admin/troubleshooting.md.
. "$top_srcdir/tests/lib.sh"
command -v python3 >/dev/null || skip_all "python3 is needed to read the docs"
keys="$top_builddir/tests/unit/list_keys"
[ -x "$keys" ] || skip_all "tests/unit/list_keys was not built (make check builds it)"
list=$("$keys") || { echo "Bail out! $keys failed"; exit 1; }
printf '%s\n' "$list" | python3 "$top_srcdir/tests/cli/docs.py" "$top_srcdir"
