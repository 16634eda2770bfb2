#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The warm check server on a GPU node (issue 35): gpumem-check --serve,
# which sees every GPU, must give the document a fresh
# `CUDA_VISIBLE_DEVICES=LIST gpumem-check` gives for the same list: the same
# exit code and, device by device, the same index (0..n-1 in the list's
# order), UUID, PCI bus id and verdict (the figures differ run to run: not
# compared); for the first GPU, the last, the last then the first, and all.
# After its reply and a pause the server holds no CUDA context (nvidia-smi
# lists no compute process of its pid): the teardown happened while no one
# waited.  The NVML health request: the server's gpumem-health/1 document
# is gpumem-health's (but time, wall_ms, node_held_why), node_held the same
# on an idle node (false: the server's own pid does not count), and its
# reply comes sooner than a gpumem-health run (timings printed, not
# asserted).  Timings: bench/check-timing --warm (tests/gpu/run part warm).
# Usage: tests/gpu/warm_gpu.sh BUILD_DIR   (run by tests/gpu/run)
B=$(cd "${1:?usage: warm_gpu.sh BUILD_DIR}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
export top_srcdir top_builddir=$B
. "$top_srcdir/tests/lib.sh"
[ -e /dev/nvidiactl ] || skip_all "no GPU here: run tests/gpu/run on a GPU machine"
C="$B/kernels/check/gpumem-check"
[ -x "$C" ] || skip_all "gpumem-check not built"
n=$(nvidia-smi -L | grep -c '^GPU')
last=$((n - 1))
CLIENT="$top_srcdir/bench/check-serve-client.py"
ident='" ".join("%s:%s:%s:%s" % (x["index"], x["uuid"], x["pci_bus_id"], x["verdict"]) for x in d["devices"]) + " exit " + str(d["overall"]["exit_code"])'
lists="0 $last"
[ "$n" -gt 1 ] && lists="$lists $last,0 $(seq -s, 0 $last)"
for l in $lists; do
	one=$(env -i PATH=/usr/bin:/bin CUDA_VISIBLE_DEVICES="$l" "$C" --json - --min-fraction 0.85 --timeout 60 2>/dev/null)
	warm=$(env -u CUDA_VISIBLE_DEVICES "$CLIENT" "$C" --gpus "$l" --n 1 --print 2>/dev/null | grep '^{')
	a=$(printf '%s\n' "$one" | json_in "$ident" 2>&1)
	diag "one-shot CUDA_VISIBLE_DEVICES=$l: $a"
	like "$a" '^0:GPU-' "GPUs $l: the one-shot check found them (the comparison is not of two errors)"
	is "$(printf '%s\n' "$warm" | json_in "$ident" 2>&1)" "$a" "GPUs $l: the server's devices (index, UUID, PCI, verdict) and exit are the one-shot check's"
done
# The teardown: after a reply and a pause, no context of the server's.
d=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-warm-gpu.XXXXXX")
python3 - "$d/s" "$C" "$(seq -s, 0 $last)" >"$d/out" 2>&1 <<'PY'
import os, socket, subprocess, sys, time
sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "bench"))
import importlib.util
spec = importlib.util.spec_from_file_location("c", os.path.join(os.environ["top_srcdir"], "bench", "check-serve-client.py"))
c = importlib.util.module_from_spec(spec); spec.loader.exec_module(c)
path, check, gpus = sys.argv[1:4]
ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); ls.bind(path); ls.listen(4)
p = subprocess.Popen([check, "--serve", "--idle", "60"], stdin=ls.fileno(), env={"PATH": "/usr/bin:/bin"})
code, doc = c.ask(path, c.request(gpus))
time.sleep(3)
apps = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"], capture_output=True, text=True).stdout.split()
print("exit %d held %s" % (code, "yes" if str(p.pid) in apps else "no"))
p.terminate(); p.wait(timeout=30)
PY
like "$(cat "$d/out")" "^exit [0-4] held no" "after its reply and 3 s, the server holds no CUDA context on any GPU (its teardown ran with no one waiting)"
# The NVML health from the server against gpumem-health, all GPUs.
H="$B/plugin/health/gpumem-health"
all=$(seq -s, 0 $last)
python3 - "$d/h" "$C" "$all" "$H" >"$d/hout" 2>"$d/herr" <<'PY'
import json, os, socket, struct, subprocess, sys, time
path, check, gpus, health = sys.argv[1:5]
ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); ls.bind(path); ls.listen(4)
p = subprocess.Popen([check, "--serve", "--idle", "60"], stdin=ls.fileno(), env={"PATH": "/usr/bin:/bin"})
def ask():
    t = time.monotonic()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(path)
    g = gpus.encode(); b = struct.pack(">I", len(g)) + g
    s.sendall(b"GMHQ" + struct.pack(">BBHI", 1, 0, 0, len(b)) + b)
    buf = b""
    while True:
        c = s.recv(65536)
        if not c: break
        buf += c
    return time.monotonic() - t, buf[8 + 5], json.loads(buf[20:])
ask()       # the server's first: its cuInit and NVML start
ts = []
for _ in range(5):
    dt, code, sdoc = ask(); ts.append(dt)
to = []
for _ in range(5):
    t = time.monotonic()
    out = subprocess.run([health, "--gpus", gpus], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    to.append(time.monotonic() - t)
odoc = json.loads(out.stdout)
norm = lambda d: json.dumps({k: v for k, v in d.items() if k not in ("time", "wall_ms", "node_held_why")}, sort_keys=True)
print("same %s code %d/%d held %s/%s" % (norm(sdoc) == norm(odoc), code, out.returncode, sdoc["node_held"], odoc["node_held"]))
if norm(sdoc) != norm(odoc):
    print("differ: server %s\ngpumem-health %s" % (norm(sdoc), norm(odoc)), file=sys.stderr)
ts.sort(); to.sort()
print("timing server %.4f s gpumem-health %.4f s ratio %.2f (medians of 5, GPUs %s)" % (ts[2], to[2], ts[2] / to[2], gpus), file=sys.stderr)
p.terminate(); p.wait(timeout=30)
PY
diag "$(cat "$d/herr")"
is "$(cat "$d/hout")" "same True code 0/0 held False/False" "health (GPUs $all): the server's document is gpumem-health's, node idle: node_held false from both"
rm -rf "$d"
done_testing
