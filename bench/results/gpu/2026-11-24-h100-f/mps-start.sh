#!/bin/bash
# When is a per-job MPS control daemon usable?  -d (what the prolog waits
# for) against -f started in the background and its control socket polled.
set -u
C=$(command -v nvidia-cuda-mps-control) || { echo "no nvidia-cuda-mps-control"; exit 1; }
now() { echo "${EPOCHREALTIME/./}"; }
for i in 1 2 3 4 5 6 7; do
	d=$(mktemp -d); mkdir "$d/pipe" "$d/log"
	export CUDA_MPS_PIPE_DIRECTORY=$d/pipe CUDA_MPS_LOG_DIRECTORY=$d/log
	t0=$(now); "$C" -d; t1=$(now)
	ls "$d/pipe" | tr '\n' ' '
	echo "-d returned after $(( (t1 - t0) / 1000 )) ms"
	echo quit | "$C"; sleep 0.3; rm -rf "$d"
	d=$(mktemp -d); mkdir "$d/pipe" "$d/log"
	export CUDA_MPS_PIPE_DIRECTORY=$d/pipe CUDA_MPS_LOG_DIRECTORY=$d/log
	t0=$(now); setsid "$C" -f </dev/null >"$d/f.out" 2>&1 & pid=$!
	while [ ! -S "$d/pipe/control" ]; do sleep 0.0005; done; t1=$(now)
	# usable: a command answers
	echo get_server_list | "$C" >/dev/null 2>&1; t2=$(now)
	echo "-f: control socket after $(( (t1 - t0) / 1000 )) ms, first command answered after $(( (t2 - t0) / 1000 )) ms; pipe: $(ls "$d/pipe" | tr '\n' ' ')"
	echo quit | "$C"; sleep 0.3; kill $pid 2>/dev/null; rm -rf "$d"
done
