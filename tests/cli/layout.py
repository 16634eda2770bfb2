# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks plugin/core's layout (CONTRIBUTING.md, Layout); speaks TAP.
Called by layout.sh with the source tree as argument.

- Every source file of plugin/core is in one of its five library folders
  and named in plugin/core/core.am (so that `make dist` carries it).
- Each library has its public header, core_LIB.h, which only includes the
  library's own headers.
- A library includes another library only through its public header, and
  only one below it (base < policy < record < advice; health on base
  alone); the one include known to point up is listed in UP.
- Outside plugin/core (plugin/, kernels/, tests/), a file includes a
  library only through its public header.
- No two files of plugin/ and kernels/ share a name.
"""
import os, re, sys

top = sys.argv[1]
core = os.path.join(top, "plugin/core")
LIBS = ["base", "policy", "record", "advice", "health"]
BELOW = {"base": set(), "policy": {"base"}, "record": {"base", "policy"},
         "advice": {"base", "policy", "record"}, "health": {"base"}}
# Includes that point up, each with its reason in CONTRIBUTING.md.
UP = {("policy/site.c", "core_advice.h")}
n = failed = 0


def tap(ok, what, *diag):
    global n, failed
    n += 1
    if not ok:
        failed += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what))
    for d in diag:
        print("# " + d)


def includes(path):
    with open(path, errors="replace") as f:
        return re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), re.M)


owner = {}          # a header's name -> its library
files = []          # (library, name) of every source file of a library
stray = []
for d, subs, fs in os.walk(core):
    rel = os.path.relpath(d, core)
    for f in fs:
        if not f.endswith((".c", ".h")):
            continue
        if rel not in LIBS:
            stray.append(os.path.join(rel, f))
            continue
        files.append((rel, f))
        if f.endswith(".h"):
            owner[f] = rel
tap(not stray and files, "every source file of plugin/core is in a library folder (%d files)"
    % len(files), *["plugin/core/%s is in none" % s for s in stray])

with open(os.path.join(core, "core.am")) as f:
    am = set(re.findall(r"core/(\w+/[\w.]+\.[ch])\b", f.read()))
unlisted = ["plugin/core/%s/%s" % lf for lf in files if "%s/%s" % lf not in am]
tap(not unlisted, "plugin/core/core.am names every file of the libraries", *unlisted)

bad = []
for lib in LIBS:
    pub = "core_%s.h" % lib
    if owner.get(pub) != lib:
        bad.append("plugin/core/%s has no %s" % (lib, pub))
        continue
    bad += ["%s includes %s, not a header of %s" % (pub, h, lib)
            for h in includes(os.path.join(core, lib, pub)) if owner.get(h) != lib]
tap(not bad, "each library has one public header, core_LIB.h, of its own headers", *bad)

bad, up = [], []
for lib, f in files:
    for h in includes(os.path.join(core, lib, f)):
        other = owner.get(h)
        if other is None or other == lib:
            continue
        if h != "core_%s.h" % other:
            bad.append("plugin/core/%s/%s includes %s, not core_%s.h" % (lib, f, h, other))
        elif other not in BELOW[lib]:
            if ("%s/%s" % (lib, f), h) in UP:
                up.append("%s/%s -> %s" % (lib, f, h))
            else:
                bad.append("plugin/core/%s/%s includes %s: %s is not below %s"
                           % (lib, f, h, other, lib))
tap(not bad, "a library includes only the public headers of those below it (%d known "
    "to point up: %s)" % (len(up), ", ".join(up) or "none"), *bad)

bad, seen, names = [], 0, {}
for where in ("plugin", "kernels", "tests"):
    for d, subs, fs in os.walk(os.path.join(top, where)):
        subs[:] = [s for s in subs if not s.startswith((".", "_build"))]
        for f in fs:
            path = os.path.join(d, f)
            rel = os.path.relpath(path, top)
            if where != "tests" and f.endswith((".c", ".h", ".cu")):
                names.setdefault(f, []).append(rel)
            if rel.startswith("plugin/core/") or not f.endswith((".c", ".h", ".cu")):
                continue
            seen += 1
            bad += ["%s includes %s, not core_%s.h" % (rel, h, owner[h])
                    for h in includes(path) if h in owner and not h.startswith("core_")]
tap(not bad, "outside plugin/core, only the libraries' public headers are included "
    "(%d files)" % seen, *bad)
dup = ["%s: %s" % (f, ", ".join(sorted(p))) for f, p in sorted(names.items()) if len(p) > 1]
tap(not dup, "no two files of plugin/ and kernels/ share a name (%d names)" % len(names), *dup)
print("1..%d" % n)
sys.exit(1 if failed else 0)
