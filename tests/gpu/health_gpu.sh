#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem-health on a GPU node (issue 35): the NVML-only health read a
# reused check rests on, against the real driver: every GPU found with
# nvidia-smi's UUID, counters read (no "?" for ECC where ECC is on), no
# alarm on an idle node, --gpus, and what it costs per GPU count beside
# gpumem-check (bench/health-timing; printed, never asserted).
# Usage: tests/gpu/health_gpu.sh BUILD_DIR   (run by tests/gpu/run)
B=$(cd "${1:?usage: health_gpu.sh BUILD_DIR}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
export top_srcdir top_builddir=$B
. "$top_srcdir/tests/lib.sh"
[ -e /dev/nvidiactl ] || skip_all "no GPU here: run tests/gpu/run on a GPU machine"
H="$B/plugin/health/gpumem-health"
[ -x "$H" ] || skip_all "gpumem-health not built"
n=$(nvidia-smi -L | grep -c '^GPU')
out=$("$H"); rc=$?
is "$rc" 0 "gpumem-health on every GPU: exit 0"
diag "$(printf '%s' "$out" | head -c 2000)"
doc() { printf '%s\n' "$out" | json_in "$1" 2>&1; }
is "$(doc 'd["nvml"] + " " + str(len(d["devices"]))')" "ok $n" "NVML ok, $n GPU(s), as nvidia-smi lists"
is "$(doc '" ".join(x["uuid"] for x in d["devices"])')" "$(nvidia-smi --query-gpu=uuid --format=csv,noheader | tr '\n' ' ' | sed 's/ $//')" "each GPU by its index, with nvidia-smi's UUID"
ecc=$(nvidia-smi --query-gpu=ecc.mode.current --format=csv,noheader | sort -u)
if [ "$ecc" = Enabled ]; then
	unlike "$(doc '" ".join(x["evidence"] for x in d["devices"])')" "ecc\.[a-z]+\.[a-z]+=\?" "ECC on: every ECC counter read"
else
	pass "ECC not on every GPU ($ecc): its counters may be unknown"
fi
is "$(doc '"; ".join(a for x in d["devices"] for a in x["alarms"])')" "" "an idle node: no alarm"
last=$((n - 1))
out=$("$H" --gpus "$last"); rc=$?
is "$rc|$(doc '",".join(x["gpu"] for x in d["devices"])')" "0|$last" "--gpus $last: that GPU alone"
"$top_srcdir/bench/health-timing" "$B" 1 2 4 8 | sed 's/^/# /'
done_testing
