#!/bin/bash
# loop.sh BUILD N ARGS...: run gpumem-check N times, print crashes.
B=$1; n=$2; shift 2
cc -shared -fPIC -O1 -g -o /tmp/segv.so "$(dirname "$0")/segv.c" || exit 1
crash=0
for i in $(seq 1 $n); do
	LD_PRELOAD=/tmp/segv.so "$B/kernels/check/gpumem-check" --json /tmp/seg.json "$@" >/tmp/seg.out 2>/tmp/seg.err
	rc=$?
	if [ $rc -gt 4 ]; then crash=$((crash+1)); echo "run $i rc $rc"; head -40 /tmp/seg.err
		grep -o '[^ ]*(+0x[0-9a-f]*)' /tmp/seg.err | while read -r f; do
			bin=${f%%(*}; off=${f#*(+}; off=${off%)}
			addr2line -f -C -i -e "$bin" "$off" 2>/dev/null | paste -sd' ' | sed "s|^|  $(basename "$bin") $off: |"
		done; fi
done
echo "$* : $crash crashes in $n runs"
