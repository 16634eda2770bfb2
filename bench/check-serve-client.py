#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/check-serve-client.py: start `gpumem-check --serve` on a listening
# unix socket this script makes (in a private temporary directory), send it
# requests in the warm server's wire format (plugin/core/health/checkwire.h) and
# time each request -> reply, the first one after the start included.  Used
# by bench/check-timing --warm and tests/slurm/warm.sh; needs no GPU (a node
# without one gets the "skipped" answer, exit 3, as a one-shot check does).
#
#   check-serve-client.py CHECK [--gpus 0,1] [--n N] [--gap S] [--idle S]
#                         [--site FILE] [--timeout S] [--print]
# Prints one line per request: "N SECONDS EXIT BYTES", then with --print the
# last document; the server is stopped (SIGTERM) at the end.  --gap S: wait
# S seconds between requests (jobs are spaced: the server's teardown of the
# last check's contexts then happens while no one waits).  The server gets
# this environment's CUDA_VISIBLE_DEVICES, if set, as the node's GPUs.
import argparse, os, shutil, signal, socket, struct, subprocess, sys, tempfile, time


def request(gpus, node="bench", frac="0.85", timeout=60, site=None, l2ab=False, l2reset=False):
    flags = (1 if l2ab else 0) | (2 if l2reset else 0) | (4 if site is not None else 0)
    fields = [frac.encode(), gpus.encode(), node.encode(), (site or b"")]
    body = b"".join(struct.pack(">I", len(f)) + f for f in fields)
    return b"GMCQ" + struct.pack(">BBHI", 1, flags, timeout, len(body)) + body


def ask(path, req):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    hello = b""
    while len(hello) < 8:
        c = s.recv(8 - len(hello))
        if not c:
            raise RuntimeError("no hello: not a warm check server")
        hello += c
    if hello != b"GMCH\x01\x00\x00\x00":
        raise RuntimeError("not a version 1 hello")
    s.sendall(req)
    buf = b""
    while True:
        c = s.recv(1 << 20)
        if not c:
            break
        buf += c
    s.close()
    if len(buf) < 12 or buf[:4] != b"GMCA":
        raise RuntimeError("broken reply (%d bytes)" % len(buf))
    code, n = buf[5], struct.unpack(">I", buf[8:12])[0]
    if len(buf) != 12 + n:
        raise RuntimeError("reply of %d bytes, head says %d" % (len(buf) - 12, n))
    return code, buf[12:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("check")
    ap.add_argument("--gpus", default="0")
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--idle", type=int, default=60)
    ap.add_argument("--site")
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--print", action="store_true")
    ap.add_argument("--gap", type=float, default=0)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="gpumem-serve.")
    path = os.path.join(d, "check.sock")
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(path)
    os.chmod(path, 0o600)
    ls.listen(16)
    env = {"PATH": "/usr/bin:/bin", "CUDA_DEVICE_MAX_CONNECTIONS": "1"}
    for k in ("CUDA_MPS_PIPE_DIRECTORY", "CUDA_VISIBLE_DEVICES"):
        if os.environ.get(k):
            env[k] = os.environ[k]
    t0 = time.monotonic()
    p = subprocess.Popen([a.check, "--serve", "--idle", str(a.idle)], stdin=ls.fileno(), env=env)
    ls.close()
    site = open(a.site, "rb").read() if a.site else None
    doc, rc = b"", 0
    try:
        for i in range(a.n):
            if i and a.gap:
                time.sleep(a.gap)
            t = time.monotonic()
            code, doc = ask(path, request(a.gpus, timeout=a.timeout, site=site))
            now = time.monotonic()
            # the first request's time from the server's start: what a cold node pays
            print("%d %.4f %d %d%s" % (i, now - t, code, len(doc),
                                       " (%.4f s from the server's start)" % (now - t0) if i == 0 else ""))
            sys.stdout.flush()
    except Exception as e:
        print("check-serve-client: %s" % e, file=sys.stderr)
        rc = 1
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
        shutil.rmtree(d, ignore_errors=True)
    if a.print:
        sys.stdout.write(doc.decode() + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())
