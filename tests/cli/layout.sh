#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# plugin/core's five libraries and their include rule (CONTRIBUTING.md,
# Layout): each file in a library folder and in core.am, one public header
# per library, includes only downwards and only through that header,
# nothing outside plugin/core including a library's own headers, no two
# files of the product sharing a name.  layout.py says how.
. "$top_srcdir/tests/lib.sh"
command -v python3 >/dev/null || skip_all "python3 is needed to read the tree"
python3 "$top_srcdir/tests/cli/layout.py" "$top_srcdir"
