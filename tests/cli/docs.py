# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks the docs against the code; speaks TAP.  Called by docs.sh with the
source tree as argument and tests/unit/list_keys' output on stdin.

Keys (from the code's own tables, never re-parsed from C):
  policy SECTION.KEY  named in gpumem-policy(5) under ".SS SECTION" and in
                      policies/README.md under "## `SECTION`"
  site KEY            named in gpumem-policy(5) SITE FILE, and each part
                      ("KEY:", commented out or not, or "- KEY:" of a list)
                      in etc/gpumem.yaml
  "N sections"        in the docs: N is the number of policy sections

The admin guide is doc/admin/, one page per topic, and doc/ADMIN.md its
index: the index links every page, and every page with three sections
or more has a contents list that links each of them.  Every link to an
anchor of a Markdown file of the tree (README.md, doc/ with doc/admin/,
policies/, contrib/, bench/) finds that heading (GitHub's anchors).

Failure messages (the rule doc/admin/troubleshooting.md states): the format
string of every
  - defer() / defer_lines() call in plugin/spank (the reason every step of
    the job fails with), and every reason stored for it: asprintf into
    deferred_error or rec.fail, rec.fail = strdup(...);
  - slurm_error() / gpumem_error() in plugin/spank after which its function
    fails within four lines (return -1 or GPUMEM_SPANK_FAIL, rc or rv set
    to one of them, goto fail): a hook or a step fails with it;
  - say() in plugin/acct (gpumem-acct always exits 0) that says a record
    was not written: "not written", "gave up", "refused", "unusable",
    "left no word", "no node".
A message counts as documented when its longest fixed piece (the text
between its conversions, %s and the like; its first 60 characters, cut at
a word) is in doc/admin/troubleshooting.md, whitespace and backquotes
aside.  Messages with no fixed piece of 12 characters or more (pure
pass-throughs such as "%s") are not counted.
"""
import glob, os, re, sys

top = sys.argv[1]
n = 0
failed = 0


def tap(ok, what, *diag):
    global n, failed
    n += 1
    if not ok:
        failed += 1
    print(("ok" if ok else "not ok") + " %d - %s" % (n, what))
    for d in diag:
        print("# " + d)


def read(rel):
    with open(os.path.join(top, rel), encoding="utf-8") as f:
        return f.read()


def has_word(text, word):
    return re.search(r"(?<![A-Za-z0-9_.])" + re.escape(word) + r"(?![A-Za-z0-9_])", text) is not None


def block(text, start_re, end_re):
    """The text from the line matching start_re to the next line matching end_re."""
    m = re.search(start_re, text, re.M)
    if not m:
        return ""
    rest = text[m.end():]
    e = re.search(end_re, rest, re.M)
    return rest[:e.start()] if e else rest


sections, policy, site = [], [], []
for line in sys.stdin.read().split("\n"):
    if not line:
        continue
    kind, name = line.split(" ", 1)
    {"section": sections, "policy": policy, "site": site}[kind].append(name)

man = read("doc/gpumem-policy.5")
readme = read("policies/README.md")
yaml = read("etc/gpumem.yaml")
admin = read("doc/ADMIN.md")
admin_pages = sorted(os.path.relpath(p, top) for p in glob.glob(os.path.join(top, "doc/admin/*.md")))

# Policy keys.
tap(len(policy) > 10 and len(site) > 15, "list_keys printed the key tables (%d policy, %d site keys)"
    % (len(policy), len(site)))
for key in policy:
    if key == "version":
        continue
    sec, rest = key.split(".", 1)
    ms = block(man, r"^\.SS " + re.escape(sec) + r"\s*$", r"^\.S[SH] ")
    tap(has_word(ms, rest), "gpumem-policy(5) names policy key %s under .SS %s" % (key, sec))
    rs = block(readme, r"^## `" + re.escape(sec) + r"`", r"^## ")
    tap(has_word(rs, rest), "policies/README.md names policy key %s under ## `%s`" % (key, sec))

# How many sections the docs say a policy has.
words = "zero one two three four five six seven eight nine ten".split()
want = words[len(sections)] if len(sections) < len(words) else str(len(sections))
for rel in ["doc/gpumem-policy.5", "doc/ADMIN.md"] + admin_pages + ["policies/README.md", "README.md"]:
    said = re.findall(r"\b(" + "|".join(words[1:]) + r") (?:policy )?sections\b", read(rel))
    wrong = [w for w in said if w != want]
    tap(not wrong, "%s says %s sections where it counts them (%s)" % (rel, want, ", ".join(said) or "none"),
        *(["says '%s sections'" % w for w in wrong]))

# Site keys.
msite = block(man, r"^\.SH SITE FILE", r"^\.SH ")
for key in site:
    tap(has_word(msite, key), "gpumem-policy(5) SITE FILE names site key %s" % key)
    parts = key.split(".")
    # "KEY:", commented out or not, or first in a list item ("- name:", advice's rules)
    ok = all(re.search(r"^[ \t]*(#[ \t]*)?(-[ \t]+)?" + re.escape(p) + r":", yaml, re.M) for p in parts)
    tap(ok, "etc/gpumem.yaml has site key %s" % key)

# The admin guide's index and each page's contents, and every link to an anchor.
def anchor(title):
    a = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return a.replace(" ", "-")


def headings(text):
    out, fence = [], False
    for l in text.split("\n"):
        if l.startswith("```"):
            fence = not fence
        m = re.match(r"^(#+) (.*)$", l)
        if m and not fence:
            out.append((len(m.group(1)), m.group(2)))
    return out


unlisted = [p for p in admin_pages if "(%s)" % os.path.relpath(p, "doc") not in admin]
tap(len(admin_pages) > 5 and not unlisted, "doc/ADMIN.md links every page of doc/admin/ (%d)"
    % len(admin_pages), *["not linked: " + p for p in unlisted])
for rel in admin_pages:
    page = read(rel)
    secs = [t for lvl, t in headings(page) if lvl >= 2]
    contents = block(page, r"^Contents:", r"^## ")
    missing = [t for t in secs if "(#%s)" % anchor(t) not in contents] if len(secs) >= 3 else []
    tap(not missing and (len(secs) < 3 or contents), "%s's contents list every section" % rel,
        *["not listed: " + t for t in missing])
bad = []
mds = [f for f in glob.glob(os.path.join(top, "**", "*.md"), recursive=True)
       if not os.path.relpath(f, top).startswith(("_build", "tests/", ".git"))]
for f in mds:
    for m in re.finditer(r"\]\(([^)\s#]*)#([^)\s]+)\)", open(f, encoding="utf-8").read()):
        path = os.path.normpath(os.path.join(os.path.dirname(f), m.group(1))) if m.group(1) else f
        if path.endswith(".md") and os.path.exists(path) and \
           m.group(2) not in [anchor(t) for _, t in headings(open(path, encoding="utf-8").read())]:
            bad.append("%s: %s#%s" % (os.path.relpath(f, top), m.group(1), m.group(2)))
tap(not bad, "every link to a heading finds it (%d Markdown files)" % len(mds), *bad)

# Every file of the tree that a document or a code comment names exists.
# Documents: the Markdown files (not bench/results/ or tests/fuzz/RESULTS.md,
# which record what was, with the names of then), the man pages, the shipped
# site file and policies; code: the comments of plugin/ and kernels/.  A name
# with a folder in it must be a file or folder of the tree (from the top, from
# the naming file's folder, or as the tail of one); a bare name a file of the
# tree by that name; a bare policy name (my.yaml) and a placeholder folder
# (policy_dir/NAME.yaml) are examples, not files.  Names of Slurm's, CUDA's and the build system's own
# files are not ours to check.
FOREIGN = {"slurm.h", "spank.h", "slurm_version.h", "slurm/slurm.h", "slurm/spank.h",
           "slurm/slurm_version.h", "include/slurm/spank.h", "PREFIX/include/slurm/spank.h",
           "src/common/spank.c", "spank.c", "job_mgr.c", "job_functions.c", "slurmscriptd.c",
           "prep_script_slurmd.c", "as_mysql_jobacct_process.c", "cuda.h", "nvml.h",
           "config.h", "tap-driver.sh"}
skipdirs = {".git", ".debs", ".debs-acct", ".gl", ".whl", "autom4te.cache"}
tree, bases = set(), set()
for d, subs, fs in os.walk(top):
    rel = os.path.relpath(d, top)
    subs[:] = [x for x in subs if x not in skipdirs and not x.startswith("_build")]
    if rel != ".":
        tree.add(rel)
    for x in fs:
        tree.add(os.path.normpath(os.path.join(rel, x)))
        bases.add(x)
name_re = re.compile(r"(?<![\w./$<>*{\\-])((?:[A-Za-z_.][\w.-]*/)*[A-Za-z_][\w-]*(?:\.[\w-]+)*"
                     r"\.(?:c|h|cu|md|sh|py|yaml|am|ac))(?![\w/*<>{}-])")
def named(rel):
    text = read(rel)
    if rel.endswith((".c", ".h", ".cu")):
        text = "\n".join(re.findall(r"/\*.*?\*/|//[^\n]*", text, re.S))
    for m in name_re.finditer(text):
        name = m.group(1)
        if name in FOREIGN or "://" in text[text.rfind("\n", 0, m.start()) + 1:m.start()]:
            continue
        first = name.split("/")[0]
        if name.endswith(".yaml") and "/" not in name:
            continue                  # a policy the reader writes (my.yaml, NAME.yaml)
        if "/" in name and first not in (".", "..") and first not in tree and \
           not any(t.endswith("/" + first) for t in tree):
            continue                  # a placeholder folder (policy_dir/, POLICY_DIR/)
        here = os.path.normpath(os.path.join(os.path.dirname(rel), name))
        if name in tree or here in tree or ("/" not in name and name in bases) or \
           ("/" in name and any(t.endswith("/" + name) for t in tree)):
            continue
        yield "%s names %s" % (rel, name)
docs = sorted(t for t in tree if (t.endswith(".md") and not t.startswith(("bench/results/", "tests/"))) or
              re.match(r"doc/.*\.[158]$", t) or t == "etc/gpumem.yaml" or re.match(r"policies/.*\.yaml$", t)
              or (t.startswith(("plugin/", "kernels/")) and t.endswith((".c", ".h", ".cu"))))
dead = [d for rel in docs for d in named(rel)]
tap(not dead, "every file a document or code comment names exists (%d files read)" % len(docs), *dead)

# Failure messages.
def literals(stmt):
    """The first run of adjacent string literals in stmt, joined."""
    out, pos, started = [], 0, False
    for m in re.finditer(r'"((?:[^"\\]|\\.)*)"|([^\s"]+)', stmt):
        if m.group(1) is not None:
            out.append(m.group(1))
            started = True
        elif started:
            break
    return "".join(out).replace('\\"', '"').replace("\\n", " ")


def statement(lines, i):
    s = ""
    for j in range(i, min(i + 8, len(lines))):
        s += " " + lines[j].strip()
        if re.search(r"\)\s*;\s*$", lines[j]) or lines[j].rstrip().endswith(") ||") or lines[j].rstrip().endswith(") <"):
            break
    return s


msgs = []
fails_after = re.compile(r"return -1;|return GPUMEM_SPANK_FAIL;|\b(rc|rv) = (-1|GPUMEM_SPANK_FAIL);|goto fail;")
acct_fail = re.compile(r"not written|gave up|refused|unusable|left no word|no node")
for path in sorted(glob.glob(os.path.join(top, "plugin/spank/**/*.c"), recursive=True)):
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, l in enumerate(lines):
        where = "%s:%d" % (os.path.relpath(path, top), i + 1)
        if re.search(r"\bdefer(_lines)?\(\"", l) or \
           re.search(r"asprintf\(&[\w>.-]*(deferred_error|rec\.fail),", l) or \
           re.search(r"rec\.fail = strdup\(\"", l):
            msgs.append((where, literals(statement(lines, i)[l.find("(") if "(" in l else 0:])))
        elif re.search(r"\b(slurm_error|gpumem_error)\(\"gpumem:", l):
            after = "\n".join(lines[i + 1:i + 6])
            if fails_after.search(after):
                msgs.append((where, literals(statement(lines, i))))
for path in sorted(glob.glob(os.path.join(top, "plugin/acct/*.c"))):
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, l in enumerate(lines):
        if re.search(r"\bsay\(o, \"", l):
            m = literals(statement(lines, i))
            if acct_fail.search(m):
                msgs.append(("%s:%d" % (os.path.relpath(path, top), i + 1), m))

trouble = read("doc/admin/troubleshooting.md")
norm = lambda s: re.sub(r"\s+", " ", s.replace("`", "").replace("\\|", "|"))
trouble_n = norm(trouble)
tap(len(msgs) > 10, "found the failure messages by the rule (%d)" % len(msgs))
seen = set()
for where, fmt in msgs:
    fmt = re.sub(r"^gpumem: ", "", fmt)
    pieces = [re.sub(r"^'?s\b:? ?", "", p).strip(" :'\"(),;.")
              for p in re.split(r"%[-#+ 0-9.*]*[hlzjt]*[diouxXeEfgGcsp%]", fmt)]
    piece = max(pieces, key=len) if pieces else ""
    if len(piece) > 60:
        piece = piece[:61].rsplit(" ", 1)[0].rstrip(" :,;(")
    if len(piece) < 12 or piece in seen:
        continue
    seen.add(piece)
    tap(norm(piece) in trouble_n, "doc/admin/troubleshooting.md has \"%s\" (%s)" % (piece, where))

print("1..%d" % n)
sys.exit(1 if failed else 0)
