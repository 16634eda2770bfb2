#!/bin/bash
# usage: flakes-loop2.sh NAME N SERIES TESTS [run args...]; waits for WAITPID first if set
name=$1 n=$2 series=$3 tests=$4; shift 4
out=/work/wt/flakes/bench/results/suite-proof-2026-11-27c
cd /work/wt/flakes
while [ -n "${WAITPID:-}" ] && kill -0 "$WAITPID" 2>/dev/null; do sleep 5; done
for i in $(seq 1 $n); do
	s=$(date -u +%H:%M:%S)
	GPUMEM_SLURM_TESTS="$tests" tests/slurm/run --slurm $series "$@" >"$out/$name-$i.raw" 2>&1
	rc=$?
	for t in $tests; do cp "_build-slurm$series/tests/${t%.sh}.log" "$out/$name-$i.$(basename ${t%.sh}).log" 2>/dev/null; done
	echo "$name $i start $s end $(date -u +%H:%M:%S) rc $rc: $(tail -1 "$out/$name-$i.raw")" >>"$out/runs.txt"
done
