#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem-check --serve, the warm check server (issue 35), without Slurm and
# without a GPU: this machine's answer is "skipped" (exit 3), from the
# server as from a fresh check.  The server on a listening socket this test
# makes (bench/check-serve-client.py speaks its wire format): the same
# document as a one-shot check; a bad request gets a hello and no check, and
# the server goes on; a peer other than root is refused (as root only);
# --idle, SIGTERM and a replaced executable end it (the last before it
# answers the next request); a standard input that
# is no listening socket and bad arguments are usage errors (64).
. "$top_srcdir/tests/lib.sh"
CHECK="$top_builddir/kernels/check/gpumem-check"
[ -x "$CHECK" ] || skip_all "gpumem-check was not built (no CUDA at configure time)"
command -v python3 >/dev/null || skip_all "python3 is needed to speak the wire format"
t=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-serve.XXXXXX")
chmod 755 "$t"
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$t"' EXIT
CLIENT="$top_srcdir/bench/check-serve-client.py"
# A document without what differs from run to run (time, wall and timings).
norm() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); [d.pop(k, None) for k in ("time", "wall_s", "timings_s")]; print(json.dumps(d, sort_keys=True))'; }

# --- the same document as a one-shot check ---------------------------------------
one=$(env -i PATH=/usr/bin:/bin CUDA_VISIBLE_DEVICES=0,1 "$CHECK" --json - --min-fraction 0.85 --timeout 60 2>/dev/null)
rc1=$?
run "$CLIENT" "$CHECK" --gpus 0,1 --n 2 --print
is "$rc" 0 "the client got two replies"
like "$out" '^0 [0-9.]+ 3 [0-9]+ ' "the first: exit 3 (skipped), as a one-shot check here ($rc1)"
warm=$(printf '%s\n' "$out" | grep '^{')
is "$(printf '%s' "$warm" | norm)" "$(printf '%s' "$one" | norm)" "the server's document is the one-shot check's (but time, wall_s, timings_s)"

# serve: start the server on a fresh socket SOCK (mode MODE), its pid in $srv.
serve() {
	python3 - "$1" "$2" "$3" "$4" <<'PY' &
import os, socket, sys
path, mode, check, idle = sys.argv[1], int(sys.argv[2], 8), sys.argv[3], sys.argv[4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, mode)
s.listen(8)
os.dup2(s.fileno(), 0)
os.execve(check, [check, "--serve", "--idle", idle], {"PATH": "/usr/bin:/bin"})
PY
	srv=$!
	pids="$pids $srv"
	for _ in $(seq 1 200); do [ -S "$1" ] && break; sleep 0.05; done
}
# ask SOCK HEX [UID]: connect (as UID), send the bytes HEX, print what came back as hex.
ask() {
	python3 - "$@" <<'PY'
import os, socket, sys
path, data = sys.argv[1], bytes.fromhex(sys.argv[2])
if len(sys.argv) > 3:
    os.setgroups([]); os.setgid(int(sys.argv[3])); os.setuid(int(sys.argv[3]))
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(60)
s.connect(path)
try:
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
except OSError:
    pass
buf = b""
while True:
    try:
        c = s.recv(65536)
    except OSError:
        break
    if not c:
        break
    buf += c
print(buf.hex())
PY
}
# gone PID: within 60 s.
gone() { for _ in $(seq 1 240); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.25; done; return 1; }
# A valid request (no site, GPUs "0", node "n1"), and one with version 2.
good=$(python3 -c 'import struct; b=b"".join(struct.pack(">I",len(f))+f for f in (b"0.85",b"0",b"n1",b"")); print((b"GMCQ"+struct.pack(">BBHI",1,0,60,len(b))+b).hex())')
bad=${good:0:8}02${good:10}
hello=474d434801000000

# --- a bad request: a hello, no check; the server goes on --------------------------
serve "$t/a.sock" 600 "$CHECK" 60
is "$(ask "$t/a.sock" "$bad")" "$hello" "a request of version 2: the hello and nothing more"
r=$(ask "$t/a.sock" "$good")
like "$r" "^${hello}474d43410103" "the next good request: hello, then a reply with exit 3"
is "$(ask "$t/a.sock" "${good:0:40}")" "$hello" "a truncated request: no check"
kill -0 "$srv" 2>/dev/null && pass "the server still runs after bad requests" || fail "the server still runs after bad requests"

# --- a peer other than root ---------------------------------------------------------
if [ "$(id -u)" = 0 ]; then
	chmod 666 "$t/a.sock"
	is "$(ask "$t/a.sock" "$good" 65534)" "" "a peer of uid 65534 (socket opened to it for the test): refused, not even a hello"
	like "$(ask "$t/a.sock" "$good")" "^${hello}474d4341" "root still served after it"
else
	skip "a peer other than root: needs root to be another uid"
	skip "root still served after it"
fi

# --- SIGTERM, --idle, a replaced executable ------------------------------------------
kill -TERM "$srv"
gone "$srv" && pass "SIGTERM ends it" || fail "SIGTERM ends it"
serve "$t/b.sock" 600 "$CHECK" 1
gone "$srv" && pass "--idle 1: it ends after a second without a request" || fail "--idle 1: it ends after a second without a request"
cp "$CHECK" "$t/gpumem-check"
serve "$t/c.sock" 600 "$t/gpumem-check" 600
rm "$t/gpumem-check"
is "$(ask "$t/c.sock" "$good")" "" "its executable removed (a package upgrade): the next request gets no hello (the plugin runs the new one-shot check)"
gone "$srv" && pass "... and it ends" || fail "... and it ends"

# --- usage ------------------------------------------------------------------------
run "$CHECK" --serve --idle 5 </dev/null
is "$rc" 64 "a standard input that is no listening socket: usage error"
like "$out" "standard input is not a listening socket" "... saying so"
run "$CHECK" --serve </dev/null
is "$rc" 64 "--serve without --idle: usage error"
run "$CHECK" --serve --idle 0 </dev/null
is "$rc" 64 "--idle 0: usage error"
done_testing
