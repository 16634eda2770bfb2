#!/bin/bash
# The setups tests/slurm/run offers beyond tests/run's plain ones, each in a
# fresh clone of REV, P at a time.  matrix.sh REV OUTDIR P
rev=$1 out=$2 par=$3
mkdir -p "$out"
one() {
	local name=$1; shift
	mkdir "$out/claim-$name" 2>/dev/null || return 0
	local w; w=$(mktemp -d /var/tmp/gpumem-matrix.XXXXXX); chmod 755 "$w"
	git clone -q /work/main "$w/src" && git -C "$w/src" checkout -q "$rev" || { echo "$name: clone failed" >"$out/matrix-$name.log"; return; }
	echo "start $name $(date -u +%H:%M:%S)" >>"$out/times.txt"
	( cd "$w/src" && ./autogen.sh >/dev/null 2>&1; tests/slurm/run "$@" ) >"$out/matrix-$name.full.log" 2>&1
	echo "end $name rc=$? $(date -u +%H:%M:%S) $(grep -h '^slurm .*passed' "$out/matrix-$name.full.log" | tail -1)" >>"$out/times.txt"
	local trs
	for trs in "$w"/src/_build-slurm*/tests/slurm/*.trs; do
		grep -qE '^:test-result: (FAIL|ERROR)' "$trs" 2>/dev/null && cp "${trs%.trs}.log" "$out/fail-$name-$(basename "${trs%.trs}").log"
	done
	rm -rf "$w"
}
export -f one; export rev out
printf '%s\n' "22.05-cgroup --cgroup" "24.11-cgroup --slurm 24.11 --cgroup" "26.05-cgroup --slurm 26.05 --cgroup" \
  "22.05-hosts --hosts" "24.11-hosts --slurm 24.11 --hosts" "26.05-hosts --slurm 26.05 --hosts" \
  "22.05-cgroup-hosts --cgroup --hosts" "24.11-cgroup-hosts --slurm 24.11 --cgroup --hosts" "26.05-cgroup-hosts --slurm 26.05 --cgroup --hosts" |
  { if [ -n "${SETUPS:-}" ]; then grep -wF "$(printf '%s\n' $SETUPS)"; else cat; fi; } |
  awk -v order="${SETUPS:-}" 'BEGIN { n = split(order, o, " "); for (i = 1; i <= n; i++) rank[o[i]] = i } { print (n ? rank[$1] : NR) "\t" $0 }' | sort -n | cut -f2- |
  xargs -P "$par" -I{} bash -c 'one {}'
