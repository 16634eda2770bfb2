#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem-health without a GPU, against the stand-in libnvidia-ml.so.1
# (tests/fake-nvml, FAKE_NVML_HEALTH moves each counter): the
# gpumem-health/1 document, each counter in the evidence string, each
# alarm, --gpus (a GPU NVML lacks, a bad list), no NVML at all.
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib.sh"

H="$top_builddir/plugin/health/gpumem-health"
FAKE="$top_builddir/tests/fake-nvml/.libs"
[ -x "$H" ] || skip_all "gpumem-health was not built"
[ -f "$FAKE/libnvidia-ml.so.1" ] || skip_all "the stand-in NVML (tests/fake-nvml) was not built: make check builds it"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed to read the documents"

# health [VAR=VALUE...] [ARGS...]: run it over the stand-in; $out, $rc.
health() {
	out=$(env LD_LIBRARY_PATH="$FAKE" "$@" 2>&1)
	rc=$?
}
doc() { printf '%s\n' "$out" | json_in "$1" 2>&1; }

health FAKE_NVML_GPUS=2 "$H"
is "$rc" 0 "two healthy stand-in GPUs: exit 0"
is "$(doc 'd["schema"] + " " + d["nvml"] + " " + str(len(d["devices"]))')" "gpumem-health/1 ok 2" "a gpumem-health/1 document, NVML ok, both GPUs"
is "$(printf '%s\n' "$out" | wc -l | tr -d ' ')" 1 "one line"
is "$(doc 'd["devices"][1]["evidence"]')" "uuid=GPU-fa4e0000-0000-4000-8000-000000000001 ecc.volatile.corrected=0 ecc.volatile.uncorrected=0 ecc.aggregate.corrected=0 ecc.aggregate.uncorrected=0 remapped.correctable=0 remapped.uncorrectable=0 retired.single_bit=0 retired.double_bit=0 pcie.max_gen=5 pcie.max_width=16 nvlink.active=?" "the evidence string: every counter, ? where NVML has none (no NVLink)"
is "$(doc 'len(d["devices"][0]["alarms"])')" 0 "no alarm"
is "$(doc 'd["devices"][0]["memory"]["unowned_bytes"]')" 0 "memory: all of it held by a process"

# Each counter moves the evidence, by name.
for kv in ecc_vc=1:ecc.volatile.corrected=1 ecc_vu=2:ecc.volatile.uncorrected=2 \
	ecc_ac=3:ecc.aggregate.corrected=3 ecc_au=4:ecc.aggregate.uncorrected=4 \
	remap_c=5:remapped.correctable=5 remap_u=6:remapped.uncorrectable=6 \
	ret_s=7:retired.single_bit=7 ret_d=8:retired.double_bit=8 maxgen=4:pcie.max_gen=4 \
	maxwidth=8:pcie.max_width=8 nvl=12:nvlink.active=12; do
	health FAKE_NVML_HEALTH="${kv%%:*}" "$H"
	like "$(doc 'd["devices"][0]["evidence"]')" " ${kv#*:}( |\$)" "${kv%%:*}: the evidence says ${kv#*:}"
done

# Each alarm.
for kv in "remap_p=1:remapped rows: a remapping is pending" "remap_f=1:remapped rows: a remapping failed" \
	"ret_p=1:retired pages: a retirement is pending" "thr=8:clocks: hardware slowdown" \
	"thr=64:clocks: hardware thermal slowdown" "thr=128:clocks: power brake slowdown" \
	"thr=32:clocks: software thermal slowdown" "width=8:PCIe link x8 of x16" \
	"orphan=2:memory: 2.0 GiB held by no process"; do
	health FAKE_NVML_HEALTH="${kv%%:*}" "$H"
	like "$(doc '"|".join(d["devices"][0]["alarms"])')" "^${kv#*:}" "${kv%%:*}: alarm '${kv#*:}'"
done
health FAKE_NVML_HEALTH="thr=1,gen=1" "$H"
is "$(doc 'len(d["devices"][0]["alarms"])')" 0 "an idle GPU (clocks: idle; link at gen 1, full width): no alarm"
health FAKE_NVML_HEALTH="orphan=0.5" "$H"
is "$(doc 'len(d["devices"][0]["alarms"])')" 0 "0.5 GiB held by no process (the driver's share): no alarm"

# --gpus
health FAKE_NVML_GPUS=4 FAKE_NVML_HEALTH_2="ecc_vc=9" "$H" --gpus 2,3
is "$(doc '",".join(x["gpu"] for x in d["devices"]) + " " + str(d["devices"][0]["ecc"]["volatile"]["corrected"])')" "2,3 9" "--gpus 2,3: those GPUs, in that order, each its own counters"
health FAKE_NVML_GPUS=2 "$H" --gpus 0,5
is "$rc" 1 "a GPU NVML does not list: exit 1"
is "$(doc 'd["devices"][1]["found"] == False and d["devices"][1]["alarms"][0]')" "NVML lists no GPU with index 5" "... that GPU not found, as an alarm"
health "$H" --gpus 0,x
is "$rc" 2 "--gpus 0,x: usage error (exit 2)"
like "$out" "gpumem-health: --gpus 0,x: not a list of GPU indexes" "... saying why"
health FAKE_NVML_INIT_FAIL=1 "$H"
is "$rc" 1 "NVML's init fails: exit 1"
like "$(doc 'd["nvml"]')" "^NVML error: nvmlInit: Driver Not Loaded" "... the document says why"
out=$(env LD_LIBRARY_PATH=/nonexistent "$H" 2>&1); rc=$?
is "$rc" 3 "no NVML library: exit 3"
like "$(doc 'd["nvml"] + " " + str(d["devices"])')" "^skipped: NVML not found .* \[\]" "... NVML skipped, no device"
done_testing
