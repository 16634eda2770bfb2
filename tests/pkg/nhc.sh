#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# contrib/nhc/gpumem.nhc, the Node Health Check function, against a
# stand-in gpumem-check that exits with each status and prints what the real
# one prints, and a stand-in nvidia-smi.  die, log and dbg stand in for
# NHC's own: die records the failure the way NHC would drain the node.
# shellcheck disable=SC2154 # top_srcdir, out and rc come from lib.sh
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"

t=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-nhctest.XXXXXX") || { echo "Bail out! mktemp"; exit 1; }
trap 'rm -rf "$t"' EXIT
mkdir "$t/tmp"
export TMPDIR="$t/tmp"

died="" logged=""
die() { died="$1 $2"; }
log() { logged="$logged$*
"; }
dbg() { :; }

# The stand-in: exits $STANDIN_RC, records its arguments, writes the JSON file.
cat >"$t/gpumem-check" <<'EOF'
#!/bin/sh
echo "$*" >"$STANDIN_ARGS"
while [ $# -gt 0 ]; do
	[ "$1" = --json ] && echo '{"schema":"gpumem-check/1"}' >"$2"
	shift
done
case $STANDIN_RC in
0) printf 'gpumem-check 0.1.0 on n1\n\nGPU 0  NVIDIA H100  GPU-1  0000:19:00.0\n  => PASS (0.4 s)\n\noverall: PASS (exit 0), wall 0.4 s\n' ;;
1) printf 'GPU 0  NVIDIA H100  GPU-1  0000:19:00.0\n  => WARN (0.4 s)\n     - copy 2400 GB/s below 0.85 x 2750\n\noverall: WARN (exit 1), wall 0.4 s\n' ;;
2) printf 'GPU 0  NVIDIA H100  GPU-1  0000:19:00.0\n  => PASS (0.4 s)\nGPU 1  NVIDIA H100  GPU-2  0000:2a:00.0\n  => FAIL (0.4 s)\n     - triad 1200 GB/s below 0.75 x 2825\n     - read 1500 GB/s below 0.75 x 3010\n\noverall: FAIL (exit 2), wall 0.4 s\n' ;;
3) echo "gpumem-check: skipped: no NVIDIA driver (libcuda.so.1 not found), 2 ms" >&2 ;;
4) printf 'GPU 0  NVIDIA H100  GPU-1  0000:19:00.0\n  => UNUSABLE (0.1 s)\n     - MIG mode is enabled\n\noverall: UNUSABLE (exit 4), wall 0.1 s\n' ;;
64) echo "gpumem-check: --timeout: not a number of seconds: 'x'" >&2 ;;
127) echo "$0: error while loading shared libraries: libyaml-0.so.2: cannot open shared object file" >&2 ;;
*) ;;
esac
exit "$STANDIN_RC"
EOF
chmod 755 "$t/gpumem-check"
mkdir "$t/bin"
cat >"$t/bin/nvidia-smi" <<'EOF'
#!/bin/sh
printf '%s' "$STANDIN_PROCS"
EOF
chmod 755 "$t/bin/nvidia-smi"
PATH="$t/bin:$PATH"
export STANDIN_ARGS="$t/args" STANDIN_PROCS=""
# shellcheck disable=SC2034 # read by gpumem.nhc
GPUMEM_CHECK="$t/gpumem-check"
# shellcheck disable=SC2034 # read by gpumem.nhc
GPUMEM_SITE="$t/site.yaml"
# shellcheck source=../../contrib/nhc/gpumem.nhc
. "$top_srcdir/contrib/nhc/gpumem.nhc"

# nhc RC [OPTIONS...]: run check_gpumem against a stand-in exiting RC
nhc() {
	export STANDIN_RC=$1
	shift
	died="" logged=""
	check_gpumem "$@"
	rc=$?
}

nhc 0
is "$rc/$died" "0/" "pass: the node passes"
like "$(cat "$t/args")" "^--quick --json [^ ]+ --site $t/site.yaml --timeout 20$" \
	"runs gpumem-check --quick --json FILE --site SITE --timeout 20"
nhc 0 -f -t 7 -s /x.yaml
like "$(cat "$t/args")" "^--json [^ ]+ --site /x.yaml --timeout 7$" "-f -t -s: full check, timeout, site"

nhc 1
is "$rc/$died" "0/" "warn: the node passes"
like "$logged" "warning \(not failing the node\): GPU 0: copy 2400 GB/s" "warn: logged with the reason"
nhc 1 -w
is "$rc" 1 "warn with -w: the check fails"
like "$died" "^1 check_gpumem: GPU check warning: GPU 0: copy 2400" "warn with -w: die 1 with the reason"

nhc 2
is "$rc" 1 "fail: the check fails"
is "$died" "1 check_gpumem: GPU check failed: GPU 1: triad 1200 GB/s below 0.75 x 2825" \
	"fail: die 1, the reason names the failing GPU"

nhc 3
is "$rc/$died" "0/" "skipped (no GPU or driver): the node passes"
like "$logged" "skipped: skipped: no NVIDIA driver" "skipped: logged"
nhc 3 -g
is "$rc" 1 "skipped with -g: the check fails"
like "$died" "^1 check_gpumem: no usable GPU or driver" "skipped with -g: die 1"

nhc 4
is "$rc" 1 "unusable: the check fails"
is "$died" "1 check_gpumem: GPU unusable for the check: GPU 0: MIG mode is enabled" \
	"unusable: die 1 with the reason"

nhc 64
is "$rc" 1 "usage error: the check fails"
like "$died" "usage error .*--timeout: not a number" "usage error: die 1 with gpumem-check's message"

nhc 139
is "$rc" 1 "a crash: the check fails"
is "$died" "1 check_gpumem: gpumem-check exited 139: no output" "a crash: die 1 with the status"
nhc 127
like "$died" "^1 check_gpumem: gpumem-check exited 127: .*libyaml-0.so.2: cannot open" \
	"a program that cannot start: die 1 with the loader's message"

STANDIN_PROCS="4242
4243"
rm -f "$t/args"
nhc 2
is "$rc/$died" "0/" "GPU processes running: skipped, not failed"
like "$logged" "GPU processes running \(4242 4243\): check skipped" "busy: logged"
if [ -e "$t/args" ]; then fail "busy: gpumem-check not run"; else pass "busy: gpumem-check not run"; fi
nhc 2 -b
is "$rc" 1 "-b: checked even while busy"
STANDIN_PROCS=""

nhc 2 -j "$t/keep.json"
like "$(cat "$t/keep.json" 2>/dev/null)" "gpumem-check/1" "-j FILE keeps the JSON report"
nhc 0
is "$(ls "$t/tmp")" "" "without -j no temporary report is left behind"

# shellcheck disable=SC2034 # read by gpumem.nhc
GPUMEM_CHECK="$t/none"
nhc 0
like "$died" "^1 check_gpumem: $t/none not found" "gpumem-check missing: die 1"
nhc 0 -c "$t/gpumem-check"
is "$rc/$died" "0/" "-c PATH"
nhc 0 -x
like "$died" "^1 check_gpumem: unknown option -x" "an unknown option: die 1"

# The real gpumem-check takes the options the function passes.
real="$top_builddir/kernels/check/gpumem-check"
if [ -x "$real" ]; then
	nhc 0 -c "$real" -s "$top_srcdir/etc/gpumem.yaml"
	unlike "$died" "usage error" "the real gpumem-check accepts the options (${died:-passed})"
	if [ ! -e /dev/nvidiactl ]; then
		is "$rc/$died" "0/" "the real gpumem-check on a node without GPU: passes"
		like "$logged" "skipped: " "and says it skipped"
	fi
else
	skip "no gpumem-check built here (no CUDA)"
fi

done_testing
