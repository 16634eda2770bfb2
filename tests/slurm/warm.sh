#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The warm check server (issue 35; doc/admin/checks.md, "The warm check server")
# on a real local Slurm with one stand-in GPU (GRES) and the real
# gpumem-check, which finds no CUDA driver here and answers "skipped" (exit
# 3), from a warm server as from a fresh process:
#   1. check.warm: 60s: two jobs in a row are served by the same server pid
#      (the log says so, the report's ran_by too), which runs as
#      check_user (gpumem-check) in a session of its own; its socket is root's,
#      0600, and the test user cannot connect to it; each report says
#      skipped with the reason a one-shot check gives;
#   2. the server killed: the next job starts a new one;
#   3. check.warm: 2s: the server is gone a few seconds after its check;
#   4. check.warm absent (default 0): no server, the check runs one-shot;
#   5. check= a program that does not know --serve: one log line, and the
#      check runs one-shot (the stand-in, which passes);
#   6. reuse (check.min_interval 60) with check.warm: after a measured pass
#      (the stand-in check, warm off), the NVML health comes from the warm
#      server (the real gpumem-check over the stand-in NVML, counters read
#      live from root's file): the check is reused, gpumem-health does not
#      run (its own log of runs), the slurmd log and the report say the
#      server read NVML; a counter moved, seen through the server, forces
#      a measured check (served by the server);
#   7. a server that does not answer the health request (check= the
#      stand-in, no server): one log line, gpumem-health runs, the check is
#      still reused on its evidence;
#   8. a server older than the health request (a stand-in that says hello
#      as check_user and, as gpumem-check --serve before it did, answers a
#      request that is no check request with nothing): the same fallback;
#   9. check.warm_min_gpus: 2 (the shipped site file's): a node whose
#      device files show one GPU runs its check one-shot, one log line
#      saying why, and starts no server; with a second device file, the
#      check is served.
. "$top_srcdir/tests/lib.sh"
real="$top_builddir/kernels/check/gpumem-check"
[ -x "$real" ] || skip_all "gpumem-check was not built (no CUDA at configure time)"
slurm_test warm
U=${GPUMEM_TEST_USER:-gpumemtest}
B=$t/bin
mkdir -p "$t/reports"
standin_bin "$B"
cp "$real" "$B/gpumem-check"
chmod 755 "$B/gpumem-check"
# The servers this test started (its own gpumem-check path: no other run's), by pid.
servers() { pgrep -f "^$B/gpumem-check --serve" || true; }
stop_servers() { local p; for p in $(servers); do kill "$p" 2>/dev/null; done; }
trap 'stop_servers; "$CL" stop >/dev/null 2>&1; rm -rf "$t"' EXIT
site_warm() { site_checks "$1"; [ -z "$2" ] || printf '  warm: %s\n' "$2" >>"$1"; }
site_warm "$t/warm.yaml" 60s
site_warm "$t/short.yaml" 2s
site_warm "$t/off.yaml" ""
printf 'version: 1\ncheck:\n  before: true\n  on_fail: warn\n' >"$t/before.yaml"
chmod 644 "$t"/*.yaml
plug() { plugstack "$2" site=$1 libexecdir=$B check=${3:-$B/gpumem-check} nvidia_dev=$t/nvidiactl mps_control=$B/nvidia-cuda-mps-control; }
plug "$t/warm.yaml" "$t/warm.conf"
plug "$t/short.yaml" "$t/short.conf"
plug "$t/off.yaml" "$t/off.conf"
plug "$t/warm.yaml" "$t/standin.conf" "$B/standin-check"
"$CL" start --nodes 1 --gpus 1 --plugstack "$t/warm.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
LOG="$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log"
S=${GPUMEM_CLUSTER_STATE_DIR:-/run/gpumem}
# The node's host name, as its slurmd sees it (with --hosts each node has
# its own, gpumem1; else the machine's).
nodehost=$(nsenter --target "$(tr -dc 0-9 <"$GPUMEM_CLUSTER_DIR/run/slurmd.gpumem1.pid")" --uts hostname)
SOCK=$S/check.$(printf '%s\n' "$nodehost" | tr -c 'A-Za-z0-9._\n-' _).sock
uid=$(id -u "$U")
report() { echo "$t/reports/job$1.prolog.gpumem1.before.json"; }
job() { run asuser srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/before.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'; jobid_of "$out"; }
served() { grep -o "check before job $1: served by the warm server pid [0-9]*" "$LOG" | grep -o '[0-9]*$'; }
# What a fresh check says here (the plugin's options, none of the job's environment).
oneshot=$(env -i PATH=/usr/bin:/bin "$B/gpumem-check" --json - --min-fraction 0.85 --timeout 20 2>/dev/null |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["overall"]["reason"])')
diag "a one-shot check here: $oneshot"

# --- 1. two jobs, one server ------------------------------------------------------
j1=$(job)
j2=$(job)
p1=$(served "$j1")
p2=$(served "$j2")
like "$p1" '^[0-9]+$' "1: job $j1's check was served by a warm server (log: pid $p1)"
is "$p2" "$p1" "1: job $j2's check by the same server pid"
is "$(ps -o uid= -p "$p1" | tr -d ' ')" "$(id -u gpumem-check)" "1: the server runs as check_user (the package's gpumem-check, not nobody's 65534)"
is "$(ps -o sid= -p "$p1" | tr -d ' ')" "$p1" "1: in a session of its own"
is "$(sed -n 's/^Groups:[[:space:]]*//p' "/proc/$p1/status" | tr -d ' ')" "" "1: with no groups"
like "$(tr '\0' '\n' <"/proc/$p1/environ" | sort | tr '\n' ' ')" \
	'^CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_MPS_PIPE_DIRECTORY=/[^ ]*/nomps PATH=/usr/bin:/bin $' \
	"1: its environment is fixed (PATH, root's nomps, one work queue), never the job's"
is "$(stat -c '%U %a %F' "$SOCK" 2>&1)" "root 600 socket" "1: its socket is root's, 0600"
run setpriv --reuid="$uid" --regid="$(id -g "$U")" --clear-groups python3 -c \
	'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print("CONNECTED")' "$SOCK"
unlike "$out" CONNECTED "1: the test user cannot connect to it"
for j in "$j1" "$j2"; do
	is "$(json "$(report "$j")" 'd["status"] + "|" + d["verdict"] + "|" + str(d["check_reason"])' 2>&1)" \
		"skipped|skipped|$oneshot" "1: job $j's report: skipped, with the one-shot check's reason"
	is "$(json "$(report "$j")" 'd["ran_by"]' 2>&1)" "warm server pid $p1" "1: ... and says which server ran it"
done

# --- 2. the server killed: a new one ----------------------------------------------
kill "$p1"
for _ in $(seq 1 240); do kill -0 "$p1" 2>/dev/null || break; sleep 0.25; done
j3=$(job)
p3=$(served "$j3")
like "$p3" '^[0-9]+$' "2: after the kill, job $j3 was served by a warm server"
unlike "$p3" "^$p1\$" "2: ... a new one (pid $p3)"
stop_servers

# --- 3. check.warm: 2s: gone soon after -------------------------------------------
"$CL" restart-slurmd --plugstack "$t/short.conf" >/dev/null 2>&1
j4=$(job)
p4=$(served "$j4")
like "$p4" '^[0-9]+$' "3: warm 2s: job $j4 served by a warm server"
gone=no
for _ in $(seq 1 240); do kill -0 "$p4" 2>/dev/null || { gone=yes; break; }; sleep 0.25; done
is "$gone" yes "3: ... which is gone within 60 s of its check (idle 2 s)"

# --- 4. the default (no check.warm): no server ------------------------------------
stop_servers
"$CL" restart-slurmd --plugstack "$t/off.conf" >/dev/null 2>&1
j5=$(job)
is "$(served "$j5")" "" "4: default: job $j5's check not served by a server"
is "$(servers)" "" "4: ... and none runs"
is "$(json "$(report "$j5")" 'd["status"] + "|" + str(d["check_reason"]) + "|" + d["ran_by"]' 2>&1)" \
	"skipped|$oneshot|one-shot" "4: ... the one-shot check's report, saying so"

# --- 5. a check program that is no server: one-shot, one log line -----------------
"$CL" restart-slurmd --plugstack "$t/standin.conf" >/dev/null 2>&1
j6=$(job)
is "$(grep -c "job $j6: check not asked of the warm server" "$LOG")" 1 "5: one log line says the server could not be used"
like "$(grep "job $j6: check not asked of the warm server" "$LOG")" "gave no hello: not a warm check server\): one-shot" "5: ... and why"
is "$(json "$(report "$j6")" 'd["status"] + "|" + d["verdict"] + "|" + d["ran_by"]' 2>&1)" \
	"ran|pass|one-shot" "5: the check ran one-shot (the stand-in passes)"

# --- 6. reuse: the NVML health from the warm server -------------------------------
health_standin "$B"
fake="$top_builddir/tests/fake-nvml/.libs"
mkdir -p "$B/nvml"
# The real gpumem-check over the stand-in NVML, its counters live in root's $B/health.values
# (the server's cmdline stays "$B/gpumem-check --serve ...": servers() finds it).
cat >"$B/nvml/gpumem-check" <<SH
#!/bin/sh
export LD_LIBRARY_PATH="$fake" FAKE_NVML_GPUS=16 FAKE_NVML_HEALTH_FILE="$B/health.values"
exec "$B/gpumem-check" "\$@"
SH
chmod 755 "$B/nvml" "$B/nvml/gpumem-check"
site_checks "$t/ev-off.yaml" 20 60
site_checks "$t/ev-warm.yaml" 20 60
printf '  warm: 60s\n' >>"$t/ev-warm.yaml"
plug "$t/ev-off.yaml" "$t/ev-off.conf" "$B/standin-check"
plug "$t/ev-warm.yaml" "$t/ev-warm.conf" "$B/nvml/gpumem-check"
plug "$t/ev-warm.yaml" "$t/ev-refuse.conf" "$B/standin-check"
ev() { json "$(report "$1")" 'd["status"] + "|" + d["evidence"]["text"]' 2>&1; }
hruns() { wc -l <"$B/health.runs" | tr -d ' '; }
stop_servers
"$CL" restart-slurmd --plugstack "$t/ev-off.conf" >/dev/null 2>&1
ja=$(job)
like "$(ev "$ja")" "^ran\|measured: gpu0: no measured pass on record" "6: job $ja (warm off): measured, its pass kept"
"$CL" restart-slurmd --plugstack "$t/ev-warm.conf" >/dev/null 2>&1
jb=$(job)
like "$(ev "$jb")" "^reused\|reused: bandwidth measured 0 min ago before job $ja, NVML health unchanged since" \
	"6: job $jb (warm on): reused on job $ja's pass (its health request started the server)"
for _ in $(seq 1 240); do [ -n "$(servers)" ] && break; sleep 0.25; done
ps_=$(servers)
like "$ps_" '^[0-9]+$' "6: a warm server runs (pid $ps_)"
n0=$(hruns)
jc=$(job)
is "$(ev "$jc")" "reused|reused: bandwidth measured 0 min ago before job $ja, NVML health unchanged since (NVML health from the warm server)" \
	"6: job $jc: reused, the report says the NVML health came from the warm server"
is "$(grep -o "job $jc: NVML health served by the warm server pid [0-9]*" "$LOG" | grep -o '[0-9]*$')" "$ps_" \
	"6: ... the slurmd log names the server (pid $ps_)"
is "$(hruns)" "$n0" "6: ... and gpumem-health did not run"
is "$(served "$jc")" "" "6: ... nor the check"
echo "ecc_vc=2" >"$B/health.values"
jd=$(job)
is "$(hruns)" "$n0" "6: job $jd: a corrected ECC error since the pass, read by the server: gpumem-health still did not run"
like "$(grep "job $jd: NVML health" "$LOG")" "served by the warm server pid $ps_" "6: ... the server read NVML"
like "$(served "$jd")" '^[0-9]+$' "6: ... and the check was measured (served by the warm server)"
like "$(json "$(report "$jd")" 'd["status"]' 2>&1)" '^(ran|skipped|failed)$' "6: ... not reused"
: >"$B/health.values"

# --- 7. a server that does not answer the health request --------------------------
stop_servers
"$CL" restart-slurmd --plugstack "$t/ev-refuse.conf" >/dev/null 2>&1
n0=$(hruns)
je=$(job)
is "$(grep -c "job $je: NVML health not asked of the warm server" "$LOG")" 1 "7: one log line says the server gave no health"
like "$(grep "job $je: NVML health not asked of the warm server" "$LOG")" "gave no hello: not a warm check server\): gpumem-health" "7: ... and why"
is "$(hruns)" "$((n0 + 1))" "7: gpumem-health ran instead"
like "$(ev "$je")" "^reused\|reused: bandwidth measured [0-9]+ min ago before job $ja, NVML health unchanged since$" \
	"7: the check is reused on gpumem-health's evidence"

# --- 8. a server older than the health request ------------------------------------
mkdir -p "$B/old"
cat >"$B/old/gpumem-check" <<'PY'
#!/usr/bin/python3
# A warm check server older than the health request: hello, then a request
# that is no check request ("GMCQ") is refused with no reply, as before.
import select, socket, sys
if sys.argv[1:2] != ["--serve"]:
    sys.exit(4)
ls = socket.socket(fileno=0)
while select.select([ls], [], [], 60)[0]:
    c, _ = ls.accept()
    c.sendall(b"GMCH\x01\x00\x00\x00")
    head = c.recv(12)
    c.close()
PY
chmod 755 "$B/old" "$B/old/gpumem-check"
plug "$t/ev-warm.yaml" "$t/ev-old.conf" "$B/old/gpumem-check"
"$CL" restart-slurmd --plugstack "$t/ev-old.conf" >/dev/null 2>&1
n0=$(hruns)
jf=$(job)
line=$(grep "job $jf: NVML health not asked of the warm server" "$LOG")
like "$line" "the warm check server pid [0-9]+ gave no health reply \(one older than the request\?\)\): gpumem-health" \
	"8: an older server (hello, no answer): one log line, and why"
is "$(hruns)" "$((n0 + 1))" "8: gpumem-health ran instead"
like "$(ev "$jf")" "^reused\|reused: .* NVML health unchanged since$" "8: the check is reused on gpumem-health's evidence"
old=$(printf '%s\n' "$line" | grep -o 'server pid [0-9]*' | grep -o '[0-9]*$')
[ -n "$old" ] && kill "$old" 2>/dev/null
# --- 9. check.warm_min_gpus: the server only on a node with enough GPUs -----------
stop_servers
mkdir -p "$t/dev1"
: >"$t/dev1/nvidiactl"
: >"$t/dev1/nvidia0"
: >"$t/dev1/nvidia-uvm"
site_warm "$t/min2.yaml" 60s
printf '  warm_min_gpus: 2\n' >>"$t/min2.yaml"
chmod 644 "$t/min2.yaml"
plugstack "$t/min2.conf" site=$t/min2.yaml libexecdir=$B check=$B/gpumem-check nvidia_dev=$t/dev1/nvidiactl \
	mps_control=$B/nvidia-cuda-mps-control
"$CL" restart-slurmd --plugstack "$t/min2.conf" >/dev/null 2>&1
jg=$(job)
is "$(grep -o "job $jg: check not asked of the warm server.*" "$LOG")" \
	"job $jg: check not asked of the warm server (this node has 1 GPU, check.warm_min_gpus is 2): one-shot" \
	"9: warm_min_gpus 2 on a node of 1 GPU (nvidia0; nvidiactl, nvidia-uvm are no GPUs): one-shot, and why"
is "$(served "$jg")|$(servers)" "|" "9: ... no server asked, none started"
is "$(json "$(report "$jg")" 'd["ran_by"]' 2>&1)" "one-shot" "9: ... the report says one-shot"
: >"$t/dev1/nvidia1"
jh=$(job)
like "$(served "$jh")" '^[0-9]+$' "9: with a second GPU's device file, job $jh's check is served by a warm server"
stop_servers
done_testing
