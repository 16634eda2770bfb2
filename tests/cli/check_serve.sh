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
# is no listening socket and bad arguments are usage errors (64); the job's
# L2 set-aside in a request reaches the check as --l2-setaside.
# The NVML health request (issue 35): over the stand-in NVML
# (tests/fake-nvml), the server answers the gpumem-health/1 document
# gpumem-health prints (but its time, wall_ms and node_held), reads the
# counters live (one moved between two requests shows), leaves its own pid,
# and only its own, out of "node_held"; without NVML it answers gpumem-health's
# exit; a bad health request gets the hello and nothing more; a check
# request is served after health requests.
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

# serve SOCK MODE CHECK IDLE [K=V...]: start the server on a fresh socket
# SOCK (mode MODE), with PATH and the K=V given as its environment; its pid in $srv.
serve() {
	python3 - "$@" <<'PY' &
import os, socket, sys
path, mode, check, idle = sys.argv[1], int(sys.argv[2], 8), sys.argv[3], sys.argv[4]
env = dict(kv.split("=", 1) for kv in sys.argv[5:])
env["PATH"] = "/usr/bin:/bin"
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, mode)
s.listen(8)
os.dup2(s.fileno(), 0)
os.execve(check, [check, "--serve", "--idle", idle], env)
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
# The job's L2 set-aside (flags l2-ab and set-aside, a fifth field): the check gets --l2-setaside.
sa=$(python3 -c 'import struct; b=b"".join(struct.pack(">I",len(f))+f for f in (b"0.85",b"0",b"n1",b"",b"40%")); print((b"GMCQ"+struct.pack(">BBHI",1,9,60,len(b))+b).hex())')
r=$(ask "$t/a.sock" "$sa")
is "$(printf '%s' "${r:40}" | python3 -c 'import json,sys; d=json.loads(bytes.fromhex(sys.stdin.read())); s=d["settings"]; print(s["l2_ab"], s["l2_setaside"])' 2>&1)" "True 40%" \
	"a request with the job's set-aside: the check ran with --l2-ab --l2-setaside 40%"
sa=$(python3 -c 'import struct; b=b"".join(struct.pack(">I",len(f))+f for f in (b"0.85",b"0",b"n1",b"",b"40%")); print((b"GMCQ"+struct.pack(">BBHI",1,8,60,len(b))+b).hex())')
is "$(ask "$t/a.sock" "$sa")" "$hello" "a set-aside without the L2 A/B's flag: the hello and nothing more"

# --- the NVML health request ------------------------------------------------------
HEALTH="$top_builddir/plugin/health/gpumem-health"
fake="$top_builddir/tests/fake-nvml/.libs"
# hreq LIST [VERSION]: a health request for the GPUs LIST, as hex.
hreq() { python3 -c 'import struct,sys; g=sys.argv[1].encode(); b=struct.pack(">I",len(g))+g; print((b"GMHQ"+struct.pack(">BBHI",int(sys.argv[2]),0,0,len(b))+b).hex())' "$1" "${2:-1}"; }
# hdoc HEX: the document of a health reply after the hello; hcode HEX: its exit code.
hdoc() { python3 -c 'import sys; print(bytes.fromhex(sys.argv[1])[20:].decode(), end="")' "$1"; }
hcode() { python3 -c 'import sys; print(bytes.fromhex(sys.argv[1])[13])' "$1"; }
hnorm() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); [d.pop(k, None) for k in ("time", "wall_ms", "node_held", "node_held_why")]; print(json.dumps(d, sort_keys=True))'; }
jget() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$1"; }
if [ -x "$HEALTH" ] && [ -e "$fake/libnvidia-ml.so.1" ]; then
	hv=$t/health.values
	: >"$hv"
	nenv="LD_LIBRARY_PATH=$fake FAKE_NVML_GPUS=4 FAKE_NVML_HEALTH_FILE=$hv"
	# shellcheck disable=SC2086 # nenv: K=V words
	serve "$t/h.sock" 600 "$CHECK" 60 $nenv FAKE_NVML_PID=self
	r=$(ask "$t/h.sock" "$(hreq 0,2)")
	like "$r" "^${hello}474d48410100" "health: the hello, then a health reply (GMHA) with exit 0"
	sdoc=$(hdoc "$r")
	# shellcheck disable=SC2086
	odoc=$(env -i PATH=/usr/bin:/bin $nenv FAKE_NVML_PID=self "$HEALTH" --gpus 0,2)
	is "$(printf '%s' "$sdoc" | hnorm)" "$(printf '%s' "$odoc" | hnorm)" \
		"health: the server's document is gpumem-health's (but time, wall_ms, node_held)"
	is "$(printf '%s' "$sdoc" | jget 'd["schema"], d["program"], [x["gpu"] for x in d["devices"]]')" \
		"('gpumem-health/1', 'gpumem-health', ['0', '2'])" "health: gpumem-health/1, for GPUs 0 and 2"
	is "$(printf '%s' "$sdoc" | jget 'd["node_held"]')" False \
		"health: the one process on the GPUs is the server itself: not counted in node_held"
	is "$(printf '%s' "$odoc" | jget 'd["node_held"]')" True \
		"health: ... where gpumem-health, held by itself (the stand-in's pid), counts it"
	echo "ecc_vc=5" >"$hv"
	r=$(ask "$t/h.sock" "$(hreq 0,2)")
	like "$(hdoc "$r" | jget 'd["devices"][1]["evidence"]')" "ecc.volatile.corrected=5 " \
		"health: a counter moved since the last request shows (NVML kept open, read live)"
	is "$(ask "$t/h.sock" "$(hreq 0,2 2)")" "$hello" "health: a health request of version 2: the hello and nothing more"
	is "$(ask "$t/h.sock" "$(hreq 0,0)")" "$hello" "health: a repeated GPU: the hello and nothing more"
	like "$(ask "$t/h.sock" "$good")" "^${hello}474d43410103" "health: a check request after them is served as ever"
	kill "$srv"
	# shellcheck disable=SC2086
	serve "$t/h2.sock" 600 "$CHECK" 60 $nenv
	is "$(hdoc "$(ask "$t/h2.sock" "$(hreq 1)")" | jget 'd["node_held"]')" True \
		"health: another process (pid 4242) on a GPU counts in the server's node_held"
	kill "$srv"
else
	for _ in 1 2 3 4 5 6 7 8 9 10; do skip "health: the stand-in NVML or gpumem-health was not built"; done
fi
# Without the stand-in: the server answers gpumem-health's exit (3 here: no NVML; 0 on a GPU node).
serve "$t/h3.sock" 600 "$CHECK" 60
env -i PATH=/usr/bin:/bin "$HEALTH" --gpus 0 >/dev/null 2>&1
hrc=$?
r=$(ask "$t/h3.sock" "$(hreq 0)")
is "$(hcode "$r")" "$hrc" "health without the stand-in: the server's exit code is gpumem-health's ($hrc)"
kill "$srv"

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
