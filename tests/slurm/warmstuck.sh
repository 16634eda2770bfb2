#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A stuck warm check server never holds a node (doc/admin/checks.md, "The warm
# check server"; doc/HARDENING.md), on a real local Slurm with one
# stand-in GPU, the real gpumem-check (no CUDA driver here: it answers
# "skipped") over the stand-in NVML, check.warm on, a check before and
# after each job and check.min_interval on: each hook also asks the
# server for the NVML health, four connections a job.
#   1. the NVML health path hangs (the stand-in NVML's device lookup,
#      while a file exists), a job with a check before it alone (fewer
#      hooks than would end the server for its missed hellos): the hook
#      gives up at its bound and runs gpumem-health, the job completes,
#      and the server's own alarm ends it; once the driver answers again
#      a fresh server serves;
#   2. the listen queue full (a listener root made at the socket, which
#      accepts no one): neither the health nor the check is asked, at
#      once, one log line each says why; the job completes and the node
#      is idle; root's record of the server names a decoy (check_user's
#      `sleep`, its start time right) one miss short of the limit: at the
#      limit the decoy is not signalled, the log says why, and the socket
#      is removed all the same;
#   3. 30 jobs in a row, each meeting a stopped server (SIGSTOP, standing
#      in for one stuck in the driver; each server is stopped before the
#      next job): each job completes within a generous bound and the node
#      is idle after it, never left COMPLETING; each prolog's check ran
#      one-shot and the log says why; each stopped server is ended after
#      3 missed hellos (it is gone), its socket removed, and a fresh one
#      started by the next hook.
. "$top_srcdir/tests/lib.sh"
real="$top_builddir/kernels/check/gpumem-check"
[ -x "$real" ] || skip_all "gpumem-check was not built (no CUDA at configure time)"
slurm_test warmstuck
U=${GPUMEM_TEST_USER:-gpumemtest}
B=$t/bin
mkdir -p "$t/reports"
standin_bin "$B"
health_standin "$B"
cp "$real" "$B/gpumem-check"
chmod 755 "$B/gpumem-check"
# The servers this test started (its own gpumem-check path: no other run's), by pid.
servers() { pgrep -f "^$B/gpumem-check --serve" || true; }
# SIGKILL: a stopped server does not act on SIGTERM.
stop_servers() { local p; for p in $(servers); do kill -KILL "$p" 2>/dev/null; done; }
lpid=
decoy=
trap '[ -n "$lpid" ] && kill "$lpid" 2>/dev/null; [ -n "$decoy" ] && kill "$decoy" 2>/dev/null; rm -f "$t/hang"; stop_servers; "$CL" stop >/dev/null 2>&1; rm -rf "$t"' EXIT
fake="$top_builddir/tests/fake-nvml/.libs"
mkdir -p "$B/nvml"
# The real gpumem-check over the stand-in NVML: its health path hangs while $t/hang exists
# (the server's cmdline stays "$B/gpumem-check --serve ...": servers() finds it).
cat >"$B/nvml/gpumem-check" <<SH
#!/bin/sh
export LD_LIBRARY_PATH="$fake" FAKE_NVML_GPUS=16 FAKE_NVML_HEALTH_FILE="$B/health.values" FAKE_NVML_HANG_FILE="$t/hang"
exec "$B/gpumem-check" "\$@"
SH
chmod 755 "$B/nvml" "$B/nvml/gpumem-check"
site_checks "$t/warm.yaml" 20 60
printf '  warm: 60s\n' >>"$t/warm.yaml"
printf 'version: 1\ncheck:\n  before: true\n  after: true\n  on_fail: warn\n' >"$t/both.yaml"
printf 'version: 1\ncheck:\n  before: true\n  on_fail: warn\n' >"$t/before.yaml"
chmod 644 "$t"/*.yaml
plugstack "$t/warm.conf" site="$t/warm.yaml" libexecdir="$B" check="$B/nvml/gpumem-check" \
	nvidia_dev="$t/nvidiactl" mps_control="$B/nvidia-cuda-mps-control"
"$CL" start --nodes 1 --gpus 1 --plugstack "$t/warm.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
LOG="$GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log"
S=${GPUMEM_CLUSTER_STATE_DIR:-/run/gpumem}
nodehost=$(nsenter --target "$(tr -dc 0-9 <"$GPUMEM_CLUSTER_DIR/run/slurmd.gpumem1.pid")" --uts hostname)
SOCK=$S/check.$(printf '%s\n' "$nodehost" | tr -c 'A-Za-z0-9._\n-' _).sock
report() { echo "$t/reports/job$1.prolog.gpumem1.before.json"; }
# One job, bounded (a hook held by the server would hold it for ever); its id, or nothing.
# POLICY: both (default) or before.
job() {
	run asuser timeout 150 srun -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/${1:-both}.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
	jobid_of "$out"
}
served() { grep -o "check before job $1: served by the warm server pid [0-9]*" "$LOG" | grep -o '[0-9]*$'; }
# wait_gone PID: until PID has ended (at most 60 s); 1 if it never did.
wait_gone() { for _ in $(seq 1 240); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.25; done; return 1; }
ran_by() { json "$(report "$1")" 'd["ran_by"]' 2>&1; }

# --- 1. the server stuck in NVML's health path ---------------------------------------
j0=$(job)
p0=$(served "$j0")
like "$p0" '^[0-9]+$' "1: job $j0's check was served by a warm server (pid $p0)"
wait_idle
touch "$t/hang"
j1=$(job before)
like "$j1" '^[0-9]+$' "1: the health path hanging: job $j1 completes"
ok=yes; wait_idle || ok=no
is "$ok" yes "1: ... and the node is idle after it (state $(node_state))"
like "$(grep "job $j1: NVML health not asked of the warm server" "$LOG" | head -1)" \
	"the warm check server pid $p0 gave no health reply in time" "1: the prolog gave up on the health reply, saying so"
ok=yes; wait_gone "$p0" || ok=no
is "$ok" yes "1: the server ended (pid $p0 gone)"
is "$(grep -c "pid $p0 ended (SIGKILL)" "$LOG")" 0 "1: ... of its own alarm, not ended by a hook"
rm -f "$t/hang"
j2=$(job)
p2=$(served "$j2")
like "$p2" '^[0-9]+$' "1: the driver answering again, job $j2's check was served by a warm server"
unlike "$p2" "^$p0\$" "1: ... a fresh one (pid $p2)"
wait_idle
stop_servers

# --- 2. a full listen queue --------------------------------------------------------
rm -f "$SOCK" "$t/full"
# Root's listener at the socket, which accepts no one: its queue (backlog 0) filled by itself.
python3 - "$SOCK" "$t/full" <<'PY' &
import os, socket, sys, time
ls = socket.socket(socket.AF_UNIX)
ls.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o600); ls.listen(0)
held = []
while True:
    c = socket.socket(socket.AF_UNIX); c.setblocking(False)
    try:
        c.connect(sys.argv[1]); held.append(c)
    except BlockingIOError:
        break
open(sys.argv[2], "w").close()
time.sleep(600)
PY
lpid=$!
wait_file "$t/full"
# The record names check_user's sleep, which is no server: it must never be signalled.
# check_user is the package's account by default (the cluster makes it).
setpriv --reuid="$(id -u gpumem-check)" --regid="$(id -g gpumem-check)" --clear-groups sleep 600 &
decoy=$!
for _ in $(seq 1 240); do [ "$(cat "/proc/$decoy/comm" 2>/dev/null)" = sleep ] && break; sleep 0.25; done
REC=${SOCK%.sock}.server
printf '%s %s 1 0\n' "$decoy" "$(awk '{print $22}' "/proc/$decoy/stat")" >"$REC"
chmod 600 "$REC"
j3=$(job)
like "$j3" '^[0-9]+$' "2: the listen queue full: job $j3 completes"
ok=yes; wait_idle || ok=no
is "$ok" yes "2: ... and the node is idle after it (state $(node_state))"
is "$(grep -c "job $j3: NVML health not asked of the warm server (its listen queue is full: the server accepts no one): gpumem-health" "$LOG")" 2 \
	"2: the prolog and the epilog each say in one log line that the health was not asked, and why"
is "$(grep -c "job $j3: check not asked of the warm server (.*its listen queue is full: the server accepts no one): one-shot" "$LOG")" 2 \
	"2: ... and that the check was not asked either"
is "$(ran_by "$j3")" one-shot "2: ... the check ran one-shot"
like "$(grep "job $j3: the warm check server missed its hello" "$LOG")" \
	"3 times in a row \(last: its listen queue is full: the server accepts no one\): pid $decoy is not .gpumem-check --serve.: not signalled; its socket removed" \
	"2: at the third miss, the record's pid (check_user's sleep) is not signalled, the log says why"
ok=yes; kill -0 "$decoy" 2>/dev/null || ok=no
is "$ok" yes "2: ... the decoy lives"
ok=yes; [ -e "$SOCK" ] && ok=no
is "$ok" yes "2: ... and the socket is removed all the same"
kill "$decoy" 2>/dev/null
kill "$lpid" 2>/dev/null
wait "$lpid" 2>/dev/null
lpid=
stop_servers

# --- 3. a stopped server, 30 jobs --------------------------------------------------
j=$(job)
wait_idle
stopped=()
n=0 logged=0
for i in $(seq 1 30); do
	# Whatever server of this test runs now is stuck from here on.
	for p in $(servers); do
		[ "$(ps -o stat= -p "$p" | cut -c1)" = T ] && continue
		kill -STOP "$p" && stopped+=("$p")
	done
	j=$(job)
	ok=yes
	wait_idle || ok=no
	[ -n "$j" ] && [ "$ok" = yes ] && [ "$(ran_by "$j")" = one-shot ] || {
		fail "3: job $i of 30 (${j:-none}): completed, node idle after it, its check one-shot (node $(node_state), ran_by $(ran_by "$j"))"
		break
	}
	grep -q "job $j: check not asked of the warm server (.*gave no hello within [0-9]* ms: busy or stuck): one-shot" "$LOG" &&
		logged=$((logged + 1))
	n=$i
done
is "$n" 30 "3: 30 jobs in a row met a stopped server: each completed within 150 s, the node idle after each, its check one-shot"
is "$logged" "$n" "3: ... each prolog's log says why (the server busy or stuck)"
like "${#stopped[@]}" '^([3-9]|[1-9][0-9])$' "3: the stopped servers were replaced (${#stopped[@]} stopped in turn)"
gone=0 ended=0
for p in "${stopped[@]}"; do
	wait_gone "$p" && gone=$((gone + 1))
	grep -q "the warm check server missed its hello 3 times in a row (last: .*): pid $p ended (SIGKILL); its socket removed, the next check starts a fresh one" "$LOG" &&
		ended=$((ended + 1))
done
is "$gone" "${#stopped[@]}" "3: every stopped server is gone"
is "$ended" "${#stopped[@]}" "3: ... each ended after 3 missed hellos, the log says so"
stop_servers
done_testing
