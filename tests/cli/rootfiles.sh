#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The gpumem command run by root on paths an unprivileged user could plant
# links in (HARDENING.md, "Root runs the gpumem command"): every output
# option (gpumem job --svg, gpumem report --svg) and the report cache
# refuse a link at OUT and, as root, anywhere in its directory's path, and
# leave the link's target untouched; --report (and, as root, report DIR
# and validate's policy files) never follows a link, reads a file in a
# user's directory with that user's rights, and no message quotes a byte
# of what it could not read.  Runs as root, the user nobody
# planting the links.
. "$top_srcdir/tests/lib.sh"
[ "$(id -u)" = 0 ] || skip_all "needs root (root runs the command, nobody plants the links)"
id nobody >/dev/null 2>&1 || skip_all "no user nobody to plant the links"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
command -v runuser >/dev/null 2>&1 || skip_all "runuser is not installed"
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
chmod 755 "$t"
unset GPUMEM_SITE
mkdir "$t/r" "$t/u" "$t/secretdir"
python3 "$top_srcdir/tests/cli/job-gen.py" test "$t/r"
chmod -R a+rX "$t/r"
chown nobody "$t/u"
chmod 700 "$t/secretdir"
printf 'SECRET-ROOT-ONLY\n' >"$t/secret"
chmod 600 "$t/secret"
rep="$t/r/job77.prolog.gpu01.before.json"
as_user() { runuser -u nobody -- "$@"; }
secret_ok() {
	is "$(cat "$t/secret")" "SECRET-ROOT-ONLY" "$1: the link's target is untouched"
	is "$(stat -c '%U %a' "$t/secret")" "root 600" "$1: and still root's 0600"
}

# ---- output options: a link at OUT
as_user ln -s "$t/secret" "$t/u/job.svg"
run "$GPUMEM" job --report "$rep" --svg "$t/u/job.svg"
is "$rc" 2 "job --svg LINK: refused (exit 2)"
like "$out" "^gpumem: job: --svg .*/u/job.svg: is a symbolic link: refused" \
	"job --svg LINK: the message names the option and the link"
secret_ok "job --svg LINK"
[ -L "$t/u/job.svg" ] && pass "job --svg LINK: the link itself is left" || fail "job --svg LINK: the link is gone"

as_user ln -s "$t/secret" "$t/u/fleet.svg"
run "$GPUMEM" report --no-cache --svg "$t/u/fleet.svg" "$t/r"
is "$rc" 1 "report --svg LINK: refused (exit 1)"
like "$out" "^gpumem: report: --svg .*/u/fleet.svg: is a symbolic link: refused" \
	"report --svg LINK: the message names the option and the link"
secret_ok "report --svg LINK"

# ---- as root, a link in OUT's directory path: root's directory never written
as_user ln -s "$t/secretdir" "$t/u/d"
run "$GPUMEM" job --report "$rep" --svg "$t/u/d/job.svg"
is "$rc" 2 "job --svg through a linked directory: refused"
like "$out" "gpumem: job: --svg .*: 'd' in its path is a symbolic link: refused as root" \
	"the message names the linked component"
run "$GPUMEM" report --no-cache --svg "$t/u/d/fleet.svg" "$t/r"
is "$rc" 1 "report --svg through a linked directory: refused"
is "$(ls -A "$t/secretdir")" "" "nothing was made in root's directory through the link"

# ---- what is not a link is written, whole, by rename
run "$GPUMEM" job --report "$rep" --svg "$t/u/real.svg"
is "$rc" 0 "job --svg into the user's directory: written" || diag "$out"
like "$(head -c 200 "$t/u/real.svg")" "<svg" "the picture is there"
is "$(ls -A "$t/u" | grep -c '\.tmp$')" 0 "no temporary file left beside it"

# ---- --report: never through a link, no byte of its target quoted
as_user ln -s "$t/secret" "$t/u/job5.prolog.n.before.json"
for cmd in job advise; do
	run "$GPUMEM" $cmd --report "$t/u/job5.prolog.n.before.json"
	is "$rc" 2 "$cmd --report LINK: refused"
	like "$out" "gpumem: $cmd: .*job5.prolog.n.before.json: is a symbolic link: refused" \
		"$cmd --report LINK: says it is a link"
	unlike "$out" "SECRET|'S'" "$cmd --report LINK: no byte of the target in the message"
done
run "$GPUMEM" job --report "$t/u/job5.prolog.n.before.json" --svg -
is "$rc" 2 "job --report LINK --svg -: refused"
unlike "$out" "SECRET|'S'" "job --report LINK --svg: no byte of the target in the message"

# ---- report DIR: as root, not through a user's link
as_user ln -s "$t/secretdir" "$t/u/reports"
run "$GPUMEM" report --no-cache "$t/u/reports"
is "$rc" 1 "report DIR through a user's link, as root: refused"
like "$out" "cannot read the report directory: 'reports' in its path is a symbolic link" \
	"... saying which component"

# ---- --report in a user's directory: read with that user's rights
cp "$rep" "$t/u/job77.prolog.gpu01.before.json"
chmod 600 "$t/u/job77.prolog.gpu01.before.json"        # root's, 0600, in nobody's directory
run "$GPUMEM" job --report "$t/u/job77.prolog.gpu01.before.json"
is "$rc" 2 "a root-only file in a user's directory: not read as root"
like "$out" "Permission denied" "it is read with the directory owner's rights"
run "$GPUMEM" job --report "$t/u/job77.prolog.gpu01.before.json" --svg -
is "$rc" 2 "the same with --svg: not read as root"
chmod 644 "$t/u/job77.prolog.gpu01.before.json"
run "$GPUMEM" job --report "$t/u/job77.prolog.gpu01.before.json"
is "$rc" 0 "one its owner could read: read" || diag "$out"
# Root's reading of a bad file says where, never what.
printf 'SECRET-ROOT-ONLY\n' >"$t/r/job6.prolog.n.before.json"
run "$GPUMEM" job --report "$t/r/job6.prolog.n.before.json"
is "$rc" 2 "not JSON: refused"
like "$out" "job6.prolog.n.before.json: not a valid gpumem report" "says it is no report"
unlike "$out" "SECRET|'S'" "as root, no byte of it quoted"

# ---- gpumem validate, as root: a user's policy, not through a link, with its owner's rights
as_user ln -s "$t/secret" "$t/u/pol.yaml"
run "$GPUMEM" validate "$t/u/pol.yaml"
is "$rc" 1 "validate LINK as root: refused"
like "$out" "pol.yaml: error: cannot open: is a symbolic link: refused" "... saying it is a link"
unlike "$out" "SECRET" "... no byte of the target in the message"
printf 'version: 1\nSECRETKEY: 1\n' >"$t/u/rootonly.yaml"
chmod 600 "$t/u/rootonly.yaml"                     # root's, 0600, in nobody's directory
run "$GPUMEM" validate "$t/u/rootonly.yaml"
is "$rc" 1 "validate a root-only file in a user's directory: not read as root"
like "$out" "rootonly.yaml: error: cannot open: Permission denied" "... read with the directory owner's rights"
unlike "$out" "SECRETKEY" "... so no key of it is quoted"
printf 'version: 1\n' >"$t/u/ok.yaml"; chmod 644 "$t/u/ok.yaml"
run "$GPUMEM" validate "$t/u/ok.yaml"
is "$rc" 0 "validate a policy its owner can read: valid" || diag "$out"

# ---- the report cache: as root, never under a HOME or XDG_CACHE_HOME the user could change
as_user ln -s "$t/secretdir" "$t/u/cachelink"
run env XDG_CACHE_HOME="$t/u/cachelink" "$GPUMEM" report "$t/r"
is "$rc" 0 "report with XDG_CACHE_HOME a user's link: lists"
is "$(ls -A "$t/secretdir")" "" "no cache made through the link"
mkdir "$t/u/home"; chown nobody "$t/u/home"
run env -u XDG_CACHE_HOME HOME="$t/u/home" "$GPUMEM" report "$t/r"
is "$(ls -A "$t/u/home")" "" "as root with a user's HOME: no root-owned cache in it"
# The user's own: a link at the cache directory is refused, the target untouched.
mkdir "$t/u/x"; chown nobody "$t/u/x"; mkdir "$t/u/target"; chown nobody "$t/u/target"
as_user ln -s "$t/u/target" "$t/u/x/gpumem"
out=$(as_user env XDG_CACHE_HOME="$t/u/x" "$GPUMEM" report "$t/r" 2>&1); rc=$?
is "$rc" 0 "the user's report with a linked cache directory: lists"
is "$(ls -A "$t/u/target")" "" "no cache written through the link"
done_testing
