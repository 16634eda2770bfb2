#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# contrib/slurm/epilog.d/gpumem-check, the example Slurm Epilog, against a
# stand-in gpumem-check, scontrol and logger and a stand-in
# /proc/driver/nvidia/gpus: it checks only the job's GPUs, by PCI bus id,
# always exits 0, and drains (when asked) only with a "gpumem:" reason and
# never over an admin's drain.
# shellcheck disable=SC2154 # top_srcdir, out and rc come from lib.sh
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
EPILOG="$top_srcdir/contrib/slurm/epilog.d/gpumem-check"

t=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-epilog.XXXXXX") || { echo "Bail out! mktemp"; exit 1; }
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/bin" "$t/reports"
for bus in 0000:19:00.0 0000:2a:00.0 0000:3b:00.0; do
	mkdir -p "$t/gpus/$bus"
done
printf 'Model: NVIDIA H100\nDevice Minor: 0\n' >"$t/gpus/0000:19:00.0/information"
printf 'Model: NVIDIA H100\nDevice Minor: 2\n' >"$t/gpus/0000:2a:00.0/information"
printf 'Model: NVIDIA H100\nDevice Minor: 1\n' >"$t/gpus/0000:3b:00.0/information"

cat >"$t/gpumem-check" <<'EOF'
#!/bin/sh
echo "$*" >"$T/check.args"
while [ $# -gt 0 ]; do [ "$1" = --json ] && echo '{"schema":"gpumem-check/1"}' >"$2"; shift; done
[ "$STANDIN_RC" = 2 ] && printf 'GPU 1  NVIDIA H100  GPU-2  0000:3B:00.0\n  => FAIL (0.4 s)\n     - copy 1000 GB/s below 0.75 x 2750\n'
exit "$STANDIN_RC"
EOF
cat >"$t/bin/scontrol" <<'EOF'
#!/bin/sh
case $1 in
show) printf 'NodeName=n1 Arch=x86_64 State=%s ThreadsPerCore=1 Reason=%s\n' "$STANDIN_STATE" "$STANDIN_REASON" ;;
update) echo "$*" >"$T/scontrol.update" ;;
esac
EOF
cat >"$t/bin/logger" <<'EOF'
#!/bin/sh
shift 3
echo "$*" >>"$T/log"
EOF
chmod 755 "$t/gpumem-check" "$t/bin/scontrol" "$t/bin/logger"

# absent FILE NAME: FILE was not written (the stand-in was not called)
absent() { if [ -e "$1" ]; then fail "$2"; diag "$(cat "$1")"; else pass "$2"; fi; }

# epilog RC [VAR=VALUE...]: run the epilog as slurmd would, the check exiting RC
epilog() {
	rm -f "$t/check.args" "$t/scontrol.update" "$t/log"
	rc_check=$1
	shift
	out=$(env -i T="$t" STANDIN_RC="$rc_check" STANDIN_STATE="${STANDIN_STATE:-IDLE}" \
		STANDIN_REASON="${STANDIN_REASON:-}" GPUMEM_EPILOG_PATH="$t/bin" \
		GPUMEM_CHECK="$t/gpumem-check" GPUMEM_SITE=/site.yaml GPUMEM_EPILOG_REPORTS="$t/reports" \
		GPUMEM_NVIDIA_GPUS="$t/gpus" SLURM_JOB_ID=77 SLURMD_NODENAME=n1 SLURM_JOB_GPUS=1,2 \
		"$@" /bin/sh "$EPILOG" 2>&1)
	rc=$?
	[ -z "$out" ] || diag "$out"
	log=$(cat "$t/log" 2>/dev/null)
}

epilog 0
is "$rc" 0 "pass: exit 0"
is "$(cat "$t/check.args")" \
	"--quick --devices 0000:3b:00.0,0000:2a:00.0 --site /site.yaml --timeout 30 --json $t/reports/epilog-job77.n1.json" \
	"checks the job's GPUs (minors 1,2) by PCI bus id, quick, with the site file"
like "$(cat "$t/reports/epilog-job77.n1.json")" "gpumem-check/1" "keeps the JSON report"
like "$log" "job 77 on n1: GPUs 0000:3b:00.0,0000:2a:00.0: pass" "logs the verdict"

epilog 2
is "$rc" 0 "fail: still exit 0 (no 'Epilog error' drain by slurmd)"
like "$log" "fail: GPU 1: copy 1000 GB/s|fail: copy 1000 GB/s" "fail: logged with the reason"
absent "$t/scontrol.update" "fail without GPUMEM_EPILOG_DRAIN: no drain"

epilog 2 GPUMEM_EPILOG_DRAIN=yes
is "$(cat "$t/scontrol.update" 2>/dev/null)" \
	"update NodeName=n1 State=DRAIN Reason=gpumem: epilog check failed (job 77: copy 1000 GB/s below 0.75 x 2750)" \
	"fail with GPUMEM_EPILOG_DRAIN=yes: drained with a 'gpumem:' reason"
is "$rc" 0 "and exit 0"

STANDIN_STATE=IDLE+DRAIN STANDIN_REASON="disk replaced [admin@2026-11-01T10:00:00]"
epilog 2 GPUMEM_EPILOG_DRAIN=yes
absent "$t/scontrol.update" "an admin's drain is left alone"
like "$log" "already drained or down by someone else" "and says so"
STANDIN_REASON="gpumem: epilog check failed (job 70: x) [root@2026-11-01T10:00:00]"
epilog 2 GPUMEM_EPILOG_DRAIN=yes
like "$(cat "$t/scontrol.update" 2>/dev/null)" "State=DRAIN Reason=gpumem: " "a gpumem drain is renewed"
STANDIN_STATE="" STANDIN_REASON=""

epilog 4 GPUMEM_EPILOG_DRAIN=yes
absent "$t/scontrol.update" "unusable (busy, MIG): never drained"

epilog 0 SLURM_JOB_GPUS=
absent "$t/check.args" "a job without GPUs: no check"
epilog 0 SLURM_JOB_GPUS=7
absent "$t/check.args" "an index with no such minor: no check"
like "$log" "no /dev/nvidia minor matches SLURM_JOB_GPUS=7" "and says so"
epilog 0 GPUMEM_CHECK=/nonexistent
is "$rc" 0 "gpumem-check not installed: exit 0"
like "$log" "not installed" "and says so"

done_testing
