#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem job and gpumem advise on records with a GPU memory profile
# ("prof"), without Slurm: gpumem-acct's record mode builds each node's
# record from report files written here, and a stand-in sacct first on
# PATH prints them as the job's AdminComment.  The profile block, the
# advice after it, --json, the exit codes, and a record's strings cleaned
# for the terminal.
. "$top_srcdir/tests/lib.sh"
ACCT="$top_builddir/plugin/acct/gpumem-acct"
[ -x "$ACCT" ] || skip_all "gpumem-acct was not built"
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir "$t/r" "$t/bin"
unset GPUMEM_SITE

# The stand-in: `sacct ... -j ID ...` prints $t/bin/sacct.ID when it exists.
sacct_standin "$t/bin"
PATH="$t/bin:$PATH"; export PATH

# metric NAME UNIT MEAN P95 MAX: one metric of a profile document.
metric() {
	printf '"%s":{"unit":"%s","source":"gpm","mean":%s,"median":%s,"p95":%s,"max":%s,"above":{},"timeline":[%s,null]}' \
		"$1" "$2" "$3" "$3" "$4" "$5" "$3"
}
# gpu INDEX SAMPLES DRAM DRAM95 SM SM95 RX RX95 TX: one GPU of a profile.
gpu() {
	printf '{"index":%s,"uuid":"GPU-%s","name":"NVIDIA H100 80GB HBM3","source":"gpm","note":null,"samples":%s,"timeline_step_s":1.0,"metrics":{' "$1" "$1" "$2"
	metric dram_bw_util % "$3" "$4" "$4"; printf ,
	metric sm_util % "$5" "$6" "$6"; printf ,
	metric sm_occupancy % 40 50 60; printf ,
	metric pcie_rx GB/s "$7" "$8" "$8"; printf ,
	metric pcie_tx GB/s "$9" "$9" "$9"; printf ,
	printf '"nvlink_rx":null,"nvlink_tx":null,"mem_used":{"unit":"GiB","source":"nvml-memory","mean":5.0,"max":7.94,"timeline":[5.0]}}}'
}
# report NODE PHASE TIME PROFILE: a report file of job 12 (PROFILE: a JSON value or "");
# $basis: what its check judged the triad against (none: empty).
report() {
	bj=
	[ -n "${basis:-}" ] && bj=", \"basis\": \"$basis\""
	{
		printf '{"schema": "gpumem-report/1", "job": 12, "step": "%s", "node": "%s", "user": "alice", "uid": 1000, ' \
			"$([ "$2" = before ] && echo prolog || echo epilog)" "$1"
		printf '"policy": "zerocopy.yaml", "phase": "%s", "time": "%s", "gpus": "0,1", ' "$2" "$3"
		if [ "$2" = job ]; then
			printf '"status": "not_run", "reason": null, "exit_code": null, "verdict": "not_run", "drained": false, '
		else
			printf '"status": "ran", "reason": null, "exit_code": 0, "verdict": "pass", "drained": false, '
		fi
		printf '"effective": {"l2": {"persisting_limit": null}, "mps": {"active_thread_percentage": null, "daemon": "none"}, '
		printf '"unified_memory": {"preferred_location": "cpu", "accessed_by": ["gpu"], "prefetch": "none"}}, "check": '
		if [ "$2" = job ]; then printf 'null'; else
			printf '{"devices": [{"index": 0, "verdict": "pass", "reasons": [], "metrics": {"triad": {"best_gbps": 3100%s}}}]}' "$bj"
		fi
		[ -n "$4" ] && printf ', "profile": %s' "$4"
		printf '}\n'
	} >"$t/r/job12.x.$1.$2.json"
}
# seg NODE: the node's AdminComment segment, from gpumem-acct's record mode.
seg() { "$ACCT" record --dir "$t/r" --job 12 --node "$1" 2>"$t/acct.err" | sed -n 2p; }

# gpu01: after-check and a profile of 2 GPUs, GPU 0 faulting, GPU 1 HBM-bound.
prof1='{"schema":"gpumem-profile/1","state":"ran","reason":null,"interval_ms":1000,"started":"2026-11-25T16:00:00Z","seconds":12.0,"cpu_s":0.03,"gpus":['$(gpu 0 12 20 30 50 70 7.5 12.0 15.0),$(gpu 1 12 62 91 70 80 0.1 0.3 0.0)']}'
report gpu01 before 2026-11-25T16:00:00Z ""
basis="0.82 of this GPU's peak"
report gpu01 after 2026-11-25T17:00:00Z "$prof1"
basis="site reference"
# gpu02: no after-check ran, the job report has the profile (skipped).
report gpu02 job 2026-11-25T17:00:00Z '{"state":"skipped","reason":"no libnvidia-ml.so.1 on this node"}'
# gpu03: an after-check, no profile (gpumem before issue 25).
report gpu03 after 2026-11-25T17:00:00Z ""
basis=
# gpu04: a MIG GPU whose note carries an escape sequence.
prof4='{"schema":"gpumem-profile/1","state":"ran","reason":null,"interval_ms":1000,"seconds":60,"gpus":[{"index":2,"source":null,"note":"MIG\u001b[2J: per-instance sampling not supported","samples":0,"metrics":null}]}'
report gpu04 after 2026-11-25T17:00:00Z "$prof4"
s1=$(seg gpu01); s2=$(seg gpu02); s3=$(seg gpu03); s4=$(seg gpu04)
ok=1; for s in "$s1" "$s2" "$s3" "$s4"; do case $s in "{~"*"~}") ;; *) ok=;; esac; done
[ -n "$ok" ] && pass "gpumem-acct record: a segment per node" || { fail "gpumem-acct record"; cat "$t/acct.err"; }
echo "12|alice|COMPLETED|JS1:abc $s1 $s2 $s3 $s4" >"$t/bin/sacct.12"

run "$GPUMEM" job 12
is "$rc" 0 "gpumem job: exit 0"
like "$out" "job 12  user alice  COMPLETED: 4 node records" "four records"
like "$out" "  profile: 12 s sampled, source gpm, 2 GPUs" "gpu01: the profile block's head"
like "$out" "    gpu 0   12 samples" "each GPU with its samples"
like "$out" "      HBM bandwidth: mean 62%, p95 91% of what this GPU can do: memory-bound" \
	"HBM bandwidth in plain words, memory-bound"
like "$out" "      HBM bandwidth: mean 20%, p95 30% of what this GPU can do$" "not memory-bound: no label"
like "$out" "      SM busy: mean 50%, p95 70%; occupancy mean 40%" "SM busy"
like "$out" "      host link: rx mean 7.5 GB/s, p95 12.0 GB/s; tx mean 15.0 GB/s" "host link"
like "$out" "      memory used: max 7.9 GiB" "memory used"
like "$out" "      advice: zerocopy.yaml: managed memory moved page by page over the host link: zerocopy.yaml \(data read once\) or prefetch.yaml \(read many times\) \(PCIe rx mean 7.5 GB/s, p95 12 GB/s, tx 15 GB/s\); this job already ran with that \(um pl=cpu ab=gpu\)" \
	"the advice after the block, with figures and the job's policy"
like "$out" "      advice: stream.yaml: memory-bound on HBM" "GPU 1: stream.yaml"
is "$(printf '%s\n' "$out" | grep -n 'memory used\|advice:' | head -2 | cut -d: -f2 | tr -d ' ' | cut -c1-6)" \
	"memory
advice" "the advice comes after the GPU's block"
is "$(printf '%s\n' "$out" | sed -n '/node gpu01/,/node gpu02/p' | grep 'judged against')" \
	"    judged against: triad 0.82 of this GPU's peak" "gpu01's after-check: judged against the GPU's own peak"
is "$(printf '%s\n' "$out" | sed -n '/node gpu03/,/node gpu04/p' | grep 'judged against')" \
	"    judged against: site reference" "gpu03's: against the site reference"
is "$(printf '%s\n' "$out" | sed -n '/node gpu04/,$p' | grep -c 'judged against')" 0 \
	"a check whose figures say no basis (an older gpumem-check): no line"
like "$out" "node gpu02  policy zerocopy.yaml" "gpu02's record (only a job report)"
like "$out" "  profile: skipped \(no libnvidia-ml.so.1 on this node\)" "a skipped profile and why"
is "$(printf '%s\n' "$out" | sed -n '/node gpu02/,/node gpu03/p' | grep -c '  check ')" 0 \
	"a job report is no check"
is "$(printf '%s\n' "$out" | sed -n '/node gpu03/,/node gpu04/p' | grep -c 'profile')" 0 \
	"a record without a profile: no profile block"
like "$out" "      not sampled: MIG\?\[2J: per-instance sampling not supported" \
	"a MIG GPU: not sampled, its note cleaned for the terminal"
unlike "$out" "$(printf '\033')" "no escape byte reaches the terminal"

run "$GPUMEM" advise 12
is "$rc" 0 "gpumem advise: exit 0"
like "$out" "node gpu01  policy zerocopy.yaml" "node line"
like "$out" "  gpu 0   advice: zerocopy.yaml: managed memory moved page by page" "gpu 0's advice"
like "$out" "  gpu 1   advice: stream.yaml: memory-bound on HBM: stream.yaml keeps all of L2 for streaming .*no policy makes a healthy GPU's HBM faster \(DRAM mean 62%, p95 91%\)" \
	"gpu 1's advice with its figures"
like "$out" "  profile: skipped \(no libnvidia-ml.so.1 on this node\)" "gpu02: skipped"
like "$out" "  \(no profile in this record" "gpu03: no profile"
like "$out" "  gpu 2   advice: not sampled: MIG\?\[2J" "gpu04: not sampled"
unlike "$out" "  check |HBM bandwidth:|host link: rx|memory used:" "the advice only"

run "$GPUMEM" advise 12 --json
is "$rc" 0 "gpumem advise --json: exit 0"
if command -v python3 >/dev/null 2>&1; then
	is "$(printf '%s' "$out" | json_in '[(n["node"], n["profile"], [(a["gpu"], a["rule"], a["policy"], a["in_effect"]) for a in n["advice"]]) for n in d[0]["nodes"]]')" \
		"[('gpu01', 'ran', [(0, 'faulting', 'zerocopy.yaml', True), (1, 'hbm-bound', 'stream.yaml', False)]), ('gpu02', 'skipped', []), ('gpu03', 'none', []), ('gpu04', 'ran', [(2, 'unsampled', None, False)])]" \
		"advise --json: node, profile state, each GPU's rule and policy"
	like "$(printf '%s' "$out" | json_in 'd[0]["nodes"][0]["advice"][0]["reason"]')" "PCIe rx mean 7.5 GB/s" \
		"  with the reason"
	run "$GPUMEM" job 12 --json
	is "$rc" 0 "gpumem job --json: exit 0"
	is "$(printf '%s' "$out" | json_in '[(n["node"], n.get("prof", {}).get("st"), len(n["checks"]), [a["rule"] for a in n["advice"]]) for n in d[0]["nodes"]]')" \
		"[('gpu01', 'ran', 2, ['faulting', 'hbm-bound']), ('gpu02', 'skipped', 0, []), ('gpu03', None, 1, []), ('gpu04', 'ran', 1, ['unsampled'])]" \
		"job --json: the compact prof, the checks and the advice"
	is "$(printf '%s' "$out" | json_in 'sorted(d[0]["nodes"][0]["prof"]["g"][0].items())')" \
		"[('dram', 20), ('dram95', 30), ('gpu', 0), ('mem', 7.9), ('model', 'NVIDIA H100 80GB HBM3'), ('n', 12), ('nvrx', None), ('nvtx', None), ('occ', 40), ('rx', 7.5), ('rx95', 12.0), ('sm', 50), ('sm95', 70), ('src', 'gpm'), ('tx', 15.0)]" "  a compact GPU row, named"
else
	skip "python3 is needed to read the JSON"
fi

# Exit codes as gpumem job's.
run "$GPUMEM" advise
is "$rc" 64 "advise without a job: 64"
like "$out" "gpumem: advise: give one job ID" "  said so"
run "$GPUMEM" advise 12 --bogus
is "$rc" 64 "advise with an unknown option: 64"
run "$GPUMEM" advise --help
is "$rc" 0 "advise --help: 0"
like "$out" "Usage: gpumem advise JOBID \[--json\]" "  usage"
run "$GPUMEM" advise 99
is "$rc" 1 "advise on a job not in accounting: 1"
echo "13|alice|COMPLETED|$s1 {~!!!!!~}" >"$t/bin/sacct.13"
run "$GPUMEM" advise 13
is "$rc" 2 "advise with a garbled record: 2"
like "$out" "gpumem: job 13: record 2 refused" "  the refusal on stderr"
like "$out" "  gpu 0   advice: zerocopy.yaml" "  the good record still shown"
run "$GPUMEM" --help
like "$out" "gpumem advise JOBID" "gpumem --help lists advise"
done_testing
