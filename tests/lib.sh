# SPDX-License-Identifier: GPL-2.0-or-later
# Shared TAP helpers for the shell tests.  Source it; call done_testing last.
# Every check prints "ok N - what" or "not ok N - what" and the diagnostics.
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
GPUMEM="${GPUMEM:-$top_builddir/plugin/cli/gpumem}"
_tap_n=0
_tap_failed=0
_tap_skipall=""

pass() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $*"; }
fail() { _tap_n=$((_tap_n + 1)); _tap_failed=$((_tap_failed + 1)); echo "not ok $_tap_n - $*"; return 1; }
skip() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - # SKIP $*"; }
diag() { printf '%s\n' "$@" | sed 's/^/# /'; }
# skip_all REASON: the whole file cannot run here; says why, never passes.
# After some checks ran: the rest cannot, one skip saying why (a plan of
# 1..0 after them is a TAP error).
skip_all() {
	[ "$_tap_n" -eq 0 ] || { skip "the rest of this test: $*"; done_testing; }
	_tap_end=1; echo "1..0 # SKIP $*"; exit 0
}

# is GOT WANT NAME
is() {
	if [ "$1" = "$2" ]; then pass "$3"; else fail "$3"; diag "got:  '$1'" "want: '$2'"; return 1; fi
}
# like TEXT PATTERN NAME   (grep -E pattern)
like() {
	if printf '%s' "$1" | grep -Eq -- "$2"; then pass "$3"
	else fail "$3"; diag "pattern: $2" "in:"; printf '%s\n' "$1" | head -20 | sed 's/^/#   /'; return 1; fi
}
unlike() {
	if printf '%s' "$1" | grep -Eq -- "$2"; then fail "$3"; diag "unexpected: $2" "in:"
		printf '%s\n' "$1" | head -20 | sed 's/^/#   /'; else pass "$3"; fi
}
# run CMD...: sets $out (stdout+stderr) and $rc
run() { out=$("$@" 2>&1); rc=$?; }

done_testing() { _tap_end=1; echo "1..$_tap_n"; [ "$_tap_failed" -eq 0 ]; exit $?; }

# slurm_series: the major.minor of the Slurm whose slurmd the cluster runs
# (22.05, 24.11; `srun --version` wants a configuration first), exported
# by slurm_test as SLURM_SERIES for the tests where the series differ.
slurm_series() {
	{ if [ -n "${SLURM_PREFIX:-}" ]; then "$SLURM_PREFIX/usr/sbin/slurmd-wlm" -V || "$SLURM_PREFIX/usr/sbin/slurmd" -V
	else PATH="$PATH:/usr/sbin:/sbin" slurmd -V; fi; } 2>/dev/null | sed -n 's/^[^0-9]*\([0-9]*\.[0-9]*\).*/\1/p' | head -1
}

# series_at_least MAJOR.MINOR: the series under test (SLURM_SERIES) is that one or newer.
series_at_least() { awk -v a="${SLURM_SERIES:-0}" -v b="$1" 'BEGIN { exit !(a + 0 >= b + 0) }'; }

# slurm_test NAME: the preamble of a real-Slurm test: skip (saying why) where
# it cannot run, else set CL (the cluster script), so (the built plugin), a
# private state dir GPUMEM_CLUSTER_DIR and a scratch dir t, both removed on exit.
slurm_test() {
	[ "$(id -u)" = 0 ] || skip_all "needs root: the test starts slurmctld and slurmd"
	[ -n "${SLURM_PREFIX:-}" ] || command -v srun >/dev/null || skip_all "Slurm is not installed"
	so="$top_builddir/plugin/spank/.libs/gpumem.so"
	[ -f "$so" ] || skip_all "gpumem.so was not built"
	command -v python3 >/dev/null || skip_all "python3 is needed to read the JSON reports"
	CL="$top_srcdir/tests/slurm/cluster"
	SLURM_SERIES=$(slurm_series)
	export SLURM_SERIES
	t=$(mktemp -d "/tmp/gpumem-$1.XXXXXX")
	chmod 755 "$t"
	# The cluster's own dir (two runs of one test at once never share one).
	export GPUMEM_CLUSTER_DIR=${GPUMEM_CLUSTER_DIR:-$t/cluster}
	slurm_bound_clients "$t/clients"
	trap slurm_test_exit EXIT
	slurm_test_guard "$t" "$CL"
}

# slurm_test_guard DIR CLUSTER: what makes a test's cluster go with the
# test, however it ends: TERM, INT and HUP exit (so the EXIT trap runs:
# without a trap of its own a TERM, make check's timeout, that finds bash
# between two commands kills it outright, EXIT trap and all), and a keeper
# for when no EXIT trap runs (slurm_test_keeper).  slurm_test calls it; a
# test with a cluster dir of its own that does not use slurm_test calls it
# after setting its EXIT trap.
slurm_test_guard() {
	trap 'exit 143' TERM
	trap 'exit 130' INT
	trap 'exit 129' HUP
	slurm_test_keeper "$1" "$2"
}

# slurm_test_keeper DIR CLUSTER: a process in a session of its own, out of
# reach of the TERM and the KILL that a test's timeout sends its process
# group, that waits for this shell to end and, where DIR (the test's own
# temporary dir) is still there, stops the cluster of GPUMEM_CLUSTER_DIR
# (as exported now) with the script CLUSTER and removes DIR.  A TERM that
# lands just before bash starts a command is acted on only when that
# command ends; the KILL 10 s later then ends the shell with no EXIT trap
# run (hostsnet.sh's killed test).  It takes the lock the trap's stop
# holds, so it never stops the cluster while that stop still runs; a second
# stop of a stopped cluster changes nothing.  Started by slurm_test_guard.
slurm_test_keeper() {
	setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 2; done
		exec 9>"$2/.stop" || exit 0
		flock 9; "$3" stop; rm -rf "$2"' _ $$ "$1" "$2" >/dev/null 2>&1 </dev/null &
}

# slurm_test_exit: the EXIT trap of slurm_test.  A test that failed, or
# that did not reach done_testing (killed by the suite's time limit, or an
# error), prints the cluster's state and the tail of its logs into its own
# log (they go with $t), so the next failure shows its cause.
slurm_test_exit() {
	local failed=0
	# Further TERMs (make check's timeout sends one to the test and one to
	# its process group, the same for a test killed by hand) must not cut
	# this trap short: `exit 143` again, from inside it, left the cluster
	# running (seen under load in hostsnet.sh 19).  A no-op handler, not an
	# ignored signal: the stop's children must still die of theirs.
	trap : TERM INT HUP
	[ "$_tap_failed" -gt 0 ] || [ -z "${_tap_end:-}" ] && failed=1
	# The stop at once, in a session of its own, with the state it needs
	# read inside that session: a test killed by its timeout gets SIGKILL 10
	# s after the TERM, which make check sends to the test's whole process
	# group; a stop begun after that (a status taking its 5 s on a loaded
	# machine first, seen in the suite proof) left the cluster running.
	# The session is out of reach of both signals and goes on if this
	# shell is killed.  Until setsid has made it, the child is still in the
	# group: the signals are ignored across that fork (a TERM in between
	# killed it before it ran the stop) and set back to their defaults
	# inside the new session (env), so the stop's own children still die of
	# theirs.  The lock: slurm_test_keeper's.
	trap '' TERM INT HUP
	setsid -w env --default-signal=TERM,INT,HUP bash -c 'exec 9>"$4/.stop"; flock 9
		[ "$1" = 1 ] && timeout 5 "$2" status >"$3" 2>&1; "$2" stop' \
		_ "$failed" "$CL" "$t/.cluster-status" "$t" >/dev/null 2>&1
	trap : TERM INT HUP
	if [ $failed = 1 ]; then
		diag "the cluster's state and logs at the end of this failed test ($GPUMEM_CLUSTER_DIR):"
		{ cat "$t/.cluster-status"; timeout 10 "$CL" logs 40; } 2>&1 | head -c 60000 | sed 's/^/#   /'
	fi
	rm -rf "$t"
}

# cluster_pids PATTERN: the pids of `pgrep -f PATTERN` that run in a mount
# namespace of this test's cluster (one of its slurmds'), so that a test
# never finds, nor kills, what another test or checkout runs on the host
# (a job id, a stand-in's name and a real MPS daemon's are not unique).
cluster_pids() {
	local pf p ns=""
	for pf in "$GPUMEM_CLUSTER_DIR"/run/slurmd.*.pid; do
		p=$(tr -dc 0-9 <"$pf" 2>/dev/null) && [ -n "$p" ] && ns="$ns $(readlink "/proc/$p/ns/mnt" 2>/dev/null)"
	done
	for p in $(pgrep -f -- "$1"); do
		[ "$p" != $$ ] || continue
		case " $ns " in *" $(readlink "/proc/$p/ns/mnt" 2>/dev/null) "*) echo "$p" ;; esac
	done
}

# slurm_bound_clients DIR: srun, salloc and sbatch in DIR, first on PATH
# (a job's environment keeps it, `cluster runas` too): each runs the real
# one under `timeout` (GPUMEM_TEST_SRUN_BOUND seconds, default 300) and,
# when that runs out, says so with squeue and sinfo on stderr, so no Slurm
# client of a test can hang its suite up to make check's 900 s limit (the
# cluster's logs then come from slurm_test_exit).  Signals to the wrapper
# reach the client (a test may kill a background srun by its pid).
slurm_bound_clients() {
	local c
	mkdir -p "$1" && chmod 755 "$1"
	for c in srun salloc sbatch; do
		cat >"$1/$c" <<'SH'
#!/bin/bash
# tests/lib.sh slurm_bound_clients: the real client under a time bound.
self=$(cd "$(dirname "$0")" && pwd)
name=$(basename "$0")
real=""
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
	[ "$d" != "$self" ] && [ -x "$d/$name" ] && { real=$d/$name; break; }
done
[ -n "$real" ] || { echo "$name: not found on PATH (tests/lib.sh slurm_bound_clients)" >&2; exit 127; }
b=${GPUMEM_TEST_SRUN_BOUND:-300}
SECONDS=0
timeout -k 10 "$b" "$real" "$@" <&0 &
child=$!
trap 'kill -TERM $child 2>/dev/null' TERM
trap 'kill -INT $child 2>/dev/null' INT
trap 'kill -HUP $child 2>/dev/null' HUP
while :; do
	wait $child 2>/dev/null; rc=$?   # (no "Killed" line of bash's own)
	kill -0 $child 2>/dev/null || break
done
# 124 (or 137 after -k): the bound ran out, not a task's own exit or SIGKILL.
if { [ $rc = 124 ] || [ $rc = 137 ]; } && [ "$SECONDS" -ge "$b" ]; then
	{
		echo "gpumem tests: $name $* ran past its bound of ${b}s (GPUMEM_TEST_SRUN_BOUND), killed; squeue and sinfo:"
		timeout 10 squeue -a -o '%i %u %T %r %N %M' 2>&1
		timeout 10 sinfo -N -o '%N %t %E' 2>&1
	} >&2
fi
exit $rc
SH
		chmod 755 "$1/$c"
	done
	# Prefix mode: the prefix's bin dirs as `cluster env` spells them, behind
	# DIR, so that its eval does not put them in front of DIR again.
	local x="" p m
	if [ -n "${SLURM_PREFIX:-}" ]; then
		p=${SLURM_PREFIX%/} m=${MUNGE_PREFIX:-${SLURM_PREFIX%/}}
		x="$p/usr/bin:$p/usr/sbin"
		[ "${m%/}" = "$p" ] || x="$x:${m%/}/usr/bin"
	fi
	PATH="$1${x:+:$x}:$PATH"
}

# need_netns NAME: skip (saying why) where ip(8) or network namespaces are
# missing (the --hosts tests).
need_netns() {
	command -v ip >/dev/null || skip_all "ip(8) is not installed (iproute2)"
	if ! ip netns add "gpumem-$1-probe-$$" 2>"$t/netns.err"; then
		skip_all "network namespaces cannot be made here: $(cat "$t/netns.err")"
	fi
	ip netns del "gpumem-$1-probe-$$"
}

# standin_bin DIR: the stand-ins of tests/slurm/standin-check and
# tests/slurm/standin/ (gpumem-check, gpumem-probe, gpumem-l2reset,
# nvidia-cuda-mps-control) in DIR, each logging its runs in DIR (runs,
# probe.runs, l2reset.runs, check-l2reset.runs, mps.log, writable by the
# test user), DIR/fail
# for the failures a test asks for; and $t/nvidiactl, "the driver is here".
standin_bin() {
	mkdir -p "$1/fail" && chmod 777 "$1/fail"
	cp "$top_srcdir/tests/slurm/standin-check" "$top_srcdir"/tests/slurm/standin/* "$1/"
	for f in runs probe.runs l2reset.runs check-l2reset.runs mps.log; do : >"$1/$f"; chmod 666 "$1/$f"; done
	mknod -m 0666 "$t/nvidiactl" c 1 3
}

# sampler_standin DIR: DIR/gpumem-sample, the real sampler over the stand-in
# NVML (tests/fake-nvml) with the figures of DIR/sample.values, logging
# "uid gid [groups] pid session argv" of each run in DIR/sample.runs; it
# plays a bad sampler while DIR/sample.mode says garbage, stuck or crash;
# DIR/sample.gpm holding 0 makes the GPUs GPM-less (FAKE_NVML_GPM), and
# DIR/sample.refuse the GPM metrics GPM refuses (FAKE_NVML_REFUSE: dram).
# Skips the whole test where either was not built.
sampler_standin() {
	local fake="$top_builddir/tests/fake-nvml/.libs" real="$top_builddir/plugin/sample/gpumem-sample"
	[ -e "$fake/libnvidia-ml.so.1" ] || skip_all "the stand-in NVML library was not built (make check builds it)"
	[ -x "$real" ] || skip_all "gpumem-sample was not built"
	: >"$1/sample.runs"; chmod 666 "$1/sample.runs"
	echo "dram=70,sm=40,occ=30,pcie_rx=0.5,pcie_tx=0.2,mem=7.5" >"$1/sample.values"
	cat >"$1/gpumem-sample" <<SH
#!/bin/sh
echo "\$(id -u) \$(id -g) [\$(id -G)] \$\$ \$(cut -d' ' -f6 /proc/\$\$/stat) \$*" >>"$1/sample.runs"
case "\$(cat "$1/sample.mode" 2>/dev/null)" in
garbage) printf '%s\n' '{"schema":"gpumem-profile/1","state":"ran","gpus":[{"index":0,"samples":-4}]}'; exec sleep 600 ;;
stuck) trap '' TERM; exec sleep 600 ;;
crash) exit 3 ;;
esac
export LD_LIBRARY_PATH="$fake" FAKE_NVML_VALUES="\$(cat "$1/sample.values")"
[ -s "$1/sample.gpm" ] && export FAKE_NVML_GPM="\$(cat "$1/sample.gpm")"
[ -s "$1/sample.refuse" ] && export FAKE_NVML_REFUSE="\$(cat "$1/sample.refuse")"
exec "$real" "\$@"
SH
	chmod 755 "$1/gpumem-sample"; chmod 644 "$1/sample.values"
}

# acct_need: a skip, saying why, where Slurm's accounting cannot run here
# (no MariaDB or slurmdbd; tests/slurm/run's 24.11 and 26.05 roots have
# them).
acct_need() {
	local p
	for p in mariadbd mariadb-install-db slurmdbd; do
		command -v "$p" >/dev/null ||
			skip_all "$p is not installed (contrib/setup-debian installs mariadb-server and slurmdbd)"
	done
}

# acct_setup: the nodes of the accounting tests (accounting.sh, mine.sh),
# or a skip where MariaDB, slurmdbd or gpumem-acct ($ACCT) is missing:
# the stand-in check (slurm_standin), $t/site.yaml (reports in $t/reports,
# profile every 200 ms), the real sampler over the stand-in NVML in
# $t/libexec, $t/plug.conf, and $t/epilog running gpumem-acct ($ACCT; its
# messages in $t/acct.log).
acct_setup() {
	acct_need
	ACCT="$top_builddir/plugin/acct/gpumem-acct"
	[ -x "$ACCT" ] || skip_all "gpumem-acct was not built"
	mkdir -p "$t/reports" "$t/libexec"
	slurm_standin
	printf 'version: 1\nreport:\n  dir: %s\ncheck:\n  timeout: 5\nprofile:\n  interval_ms: 200\n' \
		"$t/reports" >"$t/site.yaml"
	chmod 644 "$t/site.yaml"
	ln -s "$top_builddir/plugin/probe/gpumem-probe" "$t/libexec/gpumem-probe"
	sampler_standin "$t/libexec"
	plugstack "$t/plug.conf" site=$t/site.yaml libexecdir=$t/libexec check=$t/standin-check nvidia_dev=$t/nvidiactl
	printf '#!/bin/sh\nexec %s epilog --site %s 2>>%s\n' "$ACCT" "$t/site.yaml" "$t/acct.log" >"$t/epilog"
	chmod 755 "$t/epilog"
	chmod 644 "$t/plug.conf"
}

# advised_setup: the nodes of the advised tests (advised.sh,
# advised_default.sh), or a skip where MariaDB, slurmdbd or gpumem-acct is
# missing: $ACCT, $GM (the CLI), the stand-in check (slurm_standin), the
# shipped policies in $t/policies, $t/reports, and $B ($t/libexec) with the
# probe and the real sampler over the stand-in NVML.
advised_setup() {
	acct_need
	ACCT="$top_builddir/plugin/acct/gpumem-acct"
	GM="$top_builddir/plugin/cli/gpumem"
	[ -x "$ACCT" ] || skip_all "gpumem-acct was not built"
	B=$t/libexec
	mkdir -p "$t/reports" "$B" "$t/policies"
	slurm_standin
	cp "$top_srcdir"/policies/*.yaml "$t/policies/"
	chmod 755 "$t/policies"
	chmod 644 "$t"/policies/*.yaml
	ln -s "$top_builddir/plugin/probe/gpumem-probe" "$B/gpumem-probe"
	sampler_standin "$B"
}

# acct_wait_record JOB [NODE...]: until gpumem-acct says it recorded the job on
# each NODE (default gpumem1; bounded: 60 s), its messages in $t/acct.log
# (acct_setup, advised_setup's tests).
# Its log, not sacct: root's sacct polled while jobs start makes Slurm
# 22.05's database record about one job in three as "allocation" with uid
# 0 (a step's start reaching slurmdbd before its job's), which its user then
# never sees (doc/admin/profile.md, "Advised").
# Then until the job shows COMPLETED or FAILED (its epilog done) and as the user's:
# Slurm 22.05's database may have it for a while as "allocation" of uid 0
# (a step's start before its job's), which the user's own sacct does not list.
acct_wait_record() {
	local j=$1 nd
	shift
	for nd in "${@:-gpumem1}"; do
		for _ in $(seq 1 120); do
			grep -q "job $j on $nd: recorded" "$t/acct.log" 2>/dev/null && break
			sleep 0.5
		done
		grep -q "job $j on $nd: recorded" "$t/acct.log" ||
			{ fail "job $j got no record of $nd in AdminComment: $(tail -3 "$t/acct.log")"; return 1; }
		wait_idle "$nd"
	done
	set -- "$j"
	for _ in $(seq 1 120); do
		case "$(sacct -X -n -P -j "$1" -o State,UID)" in
		"COMPLETED|$(id -u "$GPUMEM_TEST_USER")" | "FAILED|$(id -u "$GPUMEM_TEST_USER")") return 0 ;;
		esac
		sleep 0.5
	done
	diag "job $1: $(sacct -n -P -j "$1" -o JobIDRaw,JobName,State,UID | tr '\n' ' ')"
}

# acct_cluster_start ARGS: "$CL" start --accounting ARGS, its output in
# $t/start.log; skips the test where MariaDB cannot start, fails it where
# the cluster does not start.
acct_cluster_start() {
	"$CL" start --accounting "$@" >"$t/start.log" 2>&1 && return 0
	why=$(grep -m1 'MariaDB cannot start here' "$t/start.log")
	[ -n "$why" ] && skip_all "${why#cluster: error: --accounting: }"
	cat "$t/start.log" >&2
	fail "the local Slurm with accounting did not start"
	done_testing
}

# health_standin DIR: DIR/gpumem-health, the real gpumem-health over the
# stand-in NVML (tests/fake-nvml, 16 GPUs) with the counters of
# DIR/health.values (FAKE_NVML_HEALTH: root's file, a test moves a counter
# by writing it) and of DIR/health.values.I for GPU I alone,
# logging "uid args" of each run in DIR/health.runs.  Skips the whole test
# where either was not built.
health_standin() {
	local fake="$top_builddir/tests/fake-nvml/.libs" real="$top_builddir/plugin/health/gpumem-health"
	[ -e "$fake/libnvidia-ml.so.1" ] || skip_all "the stand-in NVML library was not built (make check builds it)"
	[ -x "$real" ] || skip_all "gpumem-health was not built"
	: >"$1/health.runs"; chmod 666 "$1/health.runs"
	: >"$1/health.values"; chmod 644 "$1/health.values"
	cat >"$1/gpumem-health" <<SH
#!/bin/sh
echo "\$(id -u) \$*" >>"$1/health.runs"
export LD_LIBRARY_PATH="$fake" FAKE_NVML_GPUS=16 FAKE_NVML_HEALTH="\$(cat "$1/health.values")"
# health.procs: the stand-in's other values (mem=0: no process holds any GPU: "node_held" false).
[ -s "$1/health.procs" ] && export FAKE_NVML_VALUES="\$(cat "$1/health.procs")"
for f in "$1"/health.values.*; do [ -e "\$f" ] && export "FAKE_NVML_HEALTH_\${f##*.}=\$(cat "\$f")"; done
exec "$real" "\$@"
SH
	chmod 755 "$1/gpumem-health"
}

# helpers_libexec: this build's gpumem-probe and gpumem-health linked side
# by side into $t/libexec, as a package installs them in one libexecdir
# (the build keeps each in its own program's folder); prints the folder.
helpers_libexec() {
	mkdir -p "$t/libexec" &&
		ln -sf "$top_builddir/plugin/probe/gpumem-probe" "$t/libexec/gpumem-probe" &&
		ln -sf "$top_builddir/plugin/health/gpumem-health" "$t/libexec/gpumem-health" &&
		echo "$t/libexec"
}

# site_checks FILE [TIMEOUT [MIN_INTERVAL]]: a site file for the checks'
# tests: reports in $t/reports, drain on, every on_fail allowed, the check
# timeout (default 20 s) and min_interval (default 0) given.
site_checks() {
	cat >"$1" <<YAML
version: 1
limits:
  on_fail: [warn, fail, drain]
report:
  dir: $t/reports
drain:
  enabled: true
check:
  timeout: ${2:-20}
  min_interval: ${3:-0}
YAML
	chmod 644 "$1"
}

# site_requiring_checks FILE REPORT_DIR [TIMEOUT [TEXTFILE_DIR]]: a site file
# that requires a check before (failing the job) and after every job and
# keeps the check section closed to users, so nothing a user sets may
# switch it off; per-job MPS daemons allowed.
site_requiring_checks() {
	cat >"$1" <<YAML
version: 1
defaults:
  check:
    before: true
    after: true
    on_fail: fail
limits:
  on_fail: [warn, fail]
  mps_daemons: [none, job]
  sections: [l2, mps, unified_memory]
report:
  dir: $2
${4:+  textfile_dir: $4
}check:
  timeout: ${3:-5}
YAML
	chmod 644 "$1"
}

# slurm_standin: the stand-ins a node without a GPU gets for the plugstack's
# check= and nvidia_dev=: $t/standin-check (a GPU check: pass, or fail when
# $t/fail/NODE exists) and $t/nvidiactl (a device node with /dev/null's
# numbers: "the driver is here").
slurm_standin() {
	cp "$top_srcdir/tests/slurm/standin-check" "$t/standin-check"
	mknod -m 0666 "$t/nvidiactl" c 1 3
}

# sacct_standin DIR: DIR/sacct, a stand-in for `sacct ... -j ID ...` that
# prints DIR/sacct.ID when it exists (JobIDRaw|User|State|AdminComment lines).
sacct_standin() {
	cat >"$1/sacct" <<EOF
#!/bin/sh
while [ \$# -gt 0 ]; do [ "\$1" = -j ] && id=\$2; shift; done
[ -f "$1/sacct.\$id" ] && cat "$1/sacct.\$id"
exit 0
EOF
	chmod +x "$1/sacct"
}

# --- helpers of the real-Slurm tests (after slurm_test) ---------------------
# json FILE EXPR: EXPR (Python, d = FILE's JSON) printed; json_in EXPR: of stdin.
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"d": d}))' "$@"; }
json_in() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {}, {"d": d}))' "$1"; }
# plugstack FILE ARGS...: FILE holds "required <the built gpumem.so> ARGS", world-readable.
plugstack() { local f=$1; shift; echo "required $so $*" >"$f"; chmod 644 "$f"; }
# asuser CMD...: CMD as the unprivileged test user, with the cluster's environment.
asuser() { "$CL" runas "$@"; }
# node_state [NODE]: Slurm's state of NODE (default gpumem1), e.g. IDLE, MIXED+DRAIN.
node_state() { scontrol show node "${1:-gpumem1}" -o | grep -o 'State=[^ ]*' | cut -d= -f2; }
# wait_idle [NODE]: until NODE is idle (at most 60 s: bounds for a loaded
# machine, which a passing run never waits out); 1 if it never was.
wait_idle() { for _ in $(seq 1 240); do [ "$(node_state "${1:-gpumem1}")" = IDLE ] && return 0; sleep 0.25; done; return 1; }
# wait_state NODE ERE [SECONDS]: until NODE's state matches ERE (default 60 s):
# the state an epilog sets comes some time after the step's srun returns.
wait_state() { for _ in $(seq 1 $((${3:-60} * 4))); do node_state "$1" | grep -Eq -- "$2" && return 0; sleep 0.25; done; return 1; }
# wait_settled NODE: until NODE has no job COMPLETING (its epilog ended, 60 s at most).
wait_settled() { for _ in $(seq 1 240); do node_state "$1" | grep -q COMPLETING || return 0; sleep 0.25; done; return 1; }
# wait_file FILE: until FILE exists (at most 60 s); 1 if it never did.
wait_file() { for _ in $(seq 1 240); do [ -f "$1" ] && return 0; sleep 0.25; done; return 1; }
# jobid_of TEXT: N of the first line "job=N..." of TEXT.
jobid_of() { printf '%s\n' "$1" | sed -n 's/^job=\([0-9][0-9]*\).*/\1/p' | head -1; }
# gpu_profile_site: for the GPU scripts (tests/gpu/*_gpu.sh, $B the build):
# $t/libexec with the real probe, sampler and L2 reset, $t/site.yaml (the
# example policies, reports in $t/reports, profiles every
# GPUMEM_PROFILE_INTERVAL_MS, default 200) and $t/plugstack.conf with the
# real check and UM library.
gpu_profile_site() {
	mkdir -p "$t/reports" "$t/libexec"
	ln -s "$B/plugin/probe/gpumem-probe" "$t/libexec/gpumem-probe"
	ln -s "$B/plugin/sample/gpumem-sample" "$t/libexec/gpumem-sample"
	[ -x "$B/kernels/l2reset/gpumem-l2reset" ] && ln -s "$B/kernels/l2reset/gpumem-l2reset" "$t/libexec/gpumem-l2reset"
	cat >"$t/site.yaml" <<YAML
version: 1
limits:
  sections: [l2, mps, unified_memory, check, profile]
policy_dir: $top_srcdir/policies
report:
  dir: $t/reports
profile:
  interval_ms: ${GPUMEM_PROFILE_INTERVAL_MS:-200}
YAML
	echo "required $B/plugin/spank/.libs/gpumem.so site=$t/site.yaml libexecdir=$t/libexec check=$B/kernels/check/gpumem-check um_library=$B/kernels/um/.libs/libgpumem-um.so" >"$t/plugstack.conf"
	chmod 644 "$t/site.yaml" "$t/plugstack.conf"
}
