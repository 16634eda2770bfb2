#!/bin/bash
# loop.sh NAME ROUNDS: ROUNDS rounds of what the --hosts suites do to a
# cluster, each in a dir of its own: start --hosts --nodes 3, srun -N3,
# restart-slurmd, srun -N3, stop, and stop once more (a test's EXIT trap
# after its own stop).  Run on the host (Slurm 22.05) or inside
# `tests/slurm/run --shell --slurm 24.11|26.05`.  One line per round; a
# failing round's logs are kept in OUT/NAME.rK/ (OUT: $LOOP_OUT).
set -u
name=$1 rounds=$2
top=$(cd "$(dirname "$0")/../../.." && pwd)
CL=$top/tests/slurm/cluster
out=${LOOP_OUT:?}
ok=0 bad=0
for r in $(seq 1 "$rounds"); do
	d=$(mktemp -d "/tmp/gpumem-loop-$name.XXXXXX")
	t0=$(date +%s)
	why=""
	if ! "$CL" start --hosts --nodes 3 --dir "$d/c" >"$d/start.log" 2>&1; then why="start: $(grep -m1 'error:' "$d/start.log")"
	else
		export SLURM_CONF=$d/c/slurm.conf
		n=$(cd "$d/c/tmp" && timeout 60 srun -N3 hostname 2>"$d/srun1.err" | sort | tr '\n' ' ')
		[ "$n" = "gpumem1 gpumem2 gpumem3 " ] || why="srun 1: '$n' $(head -c 300 "$d/srun1.err")"
		if [ -z "$why" ]; then
			"$CL" restart-slurmd --dir "$d/c" >"$d/restart.log" 2>&1 || why="restart-slurmd: $(grep -m1 'error' "$d/restart.log")"
		fi
		if [ -z "$why" ]; then
			n=$(cd "$d/c/tmp" && timeout 60 srun -N3 hostname 2>"$d/srun2.err" | sort | tr '\n' ' ')
			[ "$n" = "gpumem1 gpumem2 gpumem3 " ] || why="srun 2: '$n' $(head -c 300 "$d/srun2.err")"
		fi
		unset SLURM_CONF
	fi
	if [ -n "$why" ]; then
		mkdir -p "$out/$name.r$r"
		cp -r "$d"/*.log "$d"/*.err "$d/c/log" "$d/c/cluster.state" "$out/$name.r$r/" 2>/dev/null
	fi
	p=$(sed -n 's/^PORT_BASE=//p' "$d/c/cluster.state" 2>/dev/null)
	"$CL" stop --dir "$d/c" >/dev/null 2>&1
	"$CL" stop --dir "$d/c" >"$d/stop2.log" 2>&1
	if [ -n "$p" ]; then
		left=""
		pgrep -f "$d/c/" >/dev/null && left="$left processes"
		ip -o link show | grep -q "gm${p}[bv].*" && [ "$(cat /tmp/gpumem-cluster-port.$p/dir 2>/dev/null)" = "$d/c" ] && left="$left links"
		grep -qxF "$d/c" /tmp/gpumem-cluster-port.*/dir 2>/dev/null && left="$left claim"
		[ -z "$left" ] || why="${why:+$why; }left after stop:$left"
	fi
	if [ -z "$why" ]; then ok=$((ok + 1)); res=ok; else bad=$((bad + 1)); res="FAIL $why"; fi
	echo "$(date -u +%T) $name round $r port ${p:-?} $(($(date +%s) - t0))s: $res"
	rm -rf "$d"
done
echo "$(date -u +%T) $name: $ok ok, $bad failed of $rounds"
