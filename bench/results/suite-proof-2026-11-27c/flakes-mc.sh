#!/bin/bash
# usage: flakes-mc.sh NAME N "TESTS"
name=$1 n=$2 tests=$3
out=/work/wt/flakes/bench/results/suite-proof-2026-11-27c
cd /work/wt/flakes/_build/tests
for i in $(seq 1 $n); do
	s=$(date -u +%H:%M:%S)
	make -j1 check TESTS="$tests" >"$out/$name-$i.raw" 2>&1; rc=$?
	cp test-suite.log "$out/$name-$i.suite.log" 2>/dev/null
	echo "$name $i start $s end $(date -u +%H:%M:%S) rc $rc: $(grep -E '^# (PASS|FAIL|SKIP|ERROR)' test-suite.log | tr '\n' ' ')" >>"$out/runs.txt"
done
