#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Several clusters on one machine, --hosts ones among them (issue 33): what
# one cluster's commands do never reaches another's network, and a cluster
# that fails or is killed mid-way leaves nothing behind.
#  - A second stop of a stopped cluster (a test's EXIT trap after its own
#    stop), after a --hosts cluster took its port block, leaves that
#    cluster's namespaces, bridge, veths and daemons alone: it still runs
#    jobs and restarts its slurmds.  (Before, that stop removed them: the
#    slurmds lost their addresses, srun met "Insane message length".)
#  - With its bridge gone a cluster's /24 is unreachable, never routed off
#    the machine (here an egress proxy answered); a slurmd whose namespace
#    lost its address is not started; its log says why.
#  - A start that fails mid-way (its slurmds die; a die after the ports are
#    claimed) leaves no process, namespace, link, route or claim.
#  - A test killed mid-way (make check's timeout: SIGTERM; or SIGKILL)
#    leaves nothing.
. "$top_srcdir/tests/lib.sh"
slurm_test hostsnet
need_netns hostsnet
A=$t/a B=$t/b F=$t/f K=$t/k
trap 'for d in "$A" "$B" "$F" "$t/b2" "$t/f2" "$K/cluster" "$t/k2/cluster"; do setsid -w "$CL" stop --dir "$d" >/dev/null 2>&1; done; rm -rf "$t"' EXIT
port_of() { sed -n 's/^PORT_BASE=//p' "$1/cluster.state" 2>/dev/null; }
claims_of() { grep -lxF "$1" /tmp/gpumem-cluster-port.*/dir 2>/dev/null | tr '\n' ' '; }
# left DIR PORT: what of the cluster in DIR (ports PORT..) is still there
# (the block's names only while no other cluster has claimed it since).
left() {
	local what="" other=0
	[ -d "/tmp/gpumem-cluster-port.$2" ] && [ "$(cat "/tmp/gpumem-cluster-port.$2/dir" 2>/dev/null)" != "$1" ] && other=1
	pgrep -f "$1/" >/dev/null && what="$what processes($(pgrep -f "$1/" | tr '\n' ' '))"
	[ -n "$2" ] && [ $other = 0 ] && ip netns list | grep -q "^gpumem-$2-" && what="$what netns"
	[ -n "$2" ] && [ $other = 0 ] && ip -o link show | grep -q "gm$2[bv]" && what="$what links"
	[ -n "$2" ] && [ $other = 0 ] && ip -4 route show type unreachable | grep -q " metric $2\b" && what="$what route"
	[ -n "$(claims_of "$1")" ] && what="$what claims($(claims_of "$1"))"
	echo "${what# }"
}

# --- a second stop after another cluster took the block ------------------------------
# The first cluster gives its block back; the --hosts one asks for exactly
# that block (GPUMEM_SLURM_PORT).  On this shared machine another cluster
# may take it first (seen in a 24.11 --cgroup --hosts run, 3 times of 3):
# then the first dir is made what a stopped cluster's dir is, its state
# naming the block the --hosts one holds now (its PORT_BASE, no daemon).
"$CL" start --dir "$A" >"$t/a.log" 2>&1 || { cat "$t/a.log" >&2; skip_all "the Slurm did not start here: $(grep -m1 'error:' "$t/a.log")"; }
pa=$(port_of "$A")
"$CL" stop --dir "$A" >/dev/null 2>&1
# A stop leaves no block named in its state (so a second stop has no block
# to tear down).
is "$(sed -n 's/^PORT_BASE=//p' "$A/cluster.state")" "" "the first stop left its state naming no port block"
if ! GPUMEM_SLURM_PORT=$pa "$CL" start --hosts --nodes 2 --dir "$B" >"$t/b.log" 2>&1 &&
	grep -q 'are claimed by\|is in use' "$t/b.log"; then
	diag "another cluster took ports $pa.. between the two starts ($(grep -m1 error: "$t/b.log")): the first dir's state is made to name the block the --hosts cluster gets"
	rm -rf "$B"
	"$CL" start --hosts --nodes 2 --dir "$B" >"$t/b.log" 2>&1
	pa=$(port_of "$B")
	sed -i "s/^PORT_BASE=.*/PORT_BASE=$pa/" "$A/cluster.state"
fi
if [ ! -f "$B/run/slurmctld.pid" ]; then
	cat "$t/b.log" >&2
	fail "a --hosts cluster on the ports the first one gave back"
else
	pass "a --hosts cluster on the ports the first one gave back ($pa)"
	slurmds=$(cat "$B"/run/slurmd.gpumem[12].pid | tr '\n' ' ')
	# A stop cut short, or an older cluster script, leaves the block named
	# in the state: it is made so, for the claim guard behind that.
	sed -i "s/^PORT_BASE=.*/PORT_BASE=$pa/" "$A/cluster.state"
	run "$CL" stop --dir "$A"
	like "$out" "ports $pa\.\. are now the cluster's in $B: its namespaces, bridge, veths and cgroups are left alone" "a second stop of the first says whose the block is now"
	ip link show "gm${pa}br" >/dev/null 2>&1 && pass "... and leaves its bridge" || fail "... and leaves its bridge"
	is "$(ip netns list | grep -c "^gpumem-$pa-gpumem[12] ")" 2 "... its namespaces"
	is "$(ip -o link show | grep -c "gm${pa}v[12]@")" 2 "... its veths"
	# With --cgroup (GPUMEM_CLUSTER_ARGS) the old stop SIGKILLed what was in
	# the cgroups gpumem_pBASE_*: that cluster's slurmds.
	is "$(for p in $slurmds; do kill -0 "$p" 2>/dev/null && echo "$p"; done | wc -l)" 2 "... and its slurmds (and cgroups)"
	run env SLURM_CONF="$B/slurm.conf" timeout 60 srun -N2 hostname
	is "$(printf '%s\n' "$out" | sort | tr '\n' ' ')" "gpumem1 gpumem2 " "... and it still runs jobs on both hosts"
	run "$CL" restart-slurmd --dir "$B"
	is "$rc" 0 "... and restarts its slurmds"
	[ "$rc" = 0 ] || diag "$out"

	# --- a node whose namespace lost its address ------------------------------------
	nb=$(sed -n 's/^NET=//p' "$B/cluster.state")
	ip link del "gm${pa}br"
	like "$(ip route get "$nb.77" 2>&1)" "unreachable|No route to host" "with its bridge gone, its /24 is unreachable, not routed off this machine"
	ip link del "gm${pa}v1"
	run env GPUMEM_CLUSTER_TIMEOUT=10 "$CL" restart-slurmd --dir "$B"
	isnt_rc=$rc
	[ "$isnt_rc" != 0 ] && pass "restart-slurmd fails where a node's veth was removed" || fail "restart-slurmd fails where a node's veth was removed"
	like "$(cat "$B/log/slurmd.gpumem1.out")" "gpumem1: its network namespace gpumem-$pa-gpumem1 is gone or has no address .*: not starting it" "... and gpumem1's log says why it did not start it"
	"$CL" stop --dir "$B" >/dev/null 2>&1
	is "$(left "$B" "$pa")" "" "stop of that cluster leaves nothing"
fi

# --- a start that fails mid-way ------------------------------------------------------
# slurmd dies at its start: a required SPANK plugin that is not there.
echo "required $t/missing-plugin.so" >"$t/missing.conf"
run "$CL" start --hosts --nodes 2 --plugstack "$t/missing.conf" --dir "$F"
pf=$(port_of "$F")
like "$out" "slurmd of gpumem[12] died" "a start that fails at its last step (its slurmds die: a required plugin missing)"
is "$(left "$F" "$pf")" "" "... leaves no process, namespace, link, route or claim"
B2=$t/b2
"$CL" start --hosts --dir "$B2" >"$t/b2.log" 2>&1 || { cat "$t/b2.log" >&2; fail "a --hosts cluster to take a /24 from"; }
F2=$t/f2
run env GPUMEM_CLUSTER_NET="$(sed -n 's/^NET=//p' "$B2/cluster.state")" "$CL" start --hosts --dir "$F2"
like "$out" "error: --hosts: .* is already used on this host" "a start that dies after claiming its ports (its /24 taken)"
is "$(left "$F2" "$(port_of "$F2")")" "" "... leaves no process, namespace, link, route or claim"
"$CL" stop --dir "$B2" >/dev/null 2>&1

# --- a test killed mid-way -----------------------------------------------------------
cat >"$t/killed.sh" <<'EOF'
. "$top_srcdir/tests/lib.sh"
slurm_test killed
"$CL" start --hosts --nodes 2 >"$GPUMEM_CLUSTER_DIR.log" 2>&1 || exit 1
port_base=$(sed -n 's/^PORT_BASE=//p' "$GPUMEM_CLUSTER_DIR/cluster.state")
printf '%s\n%s\n' "$port_base" "$t" >"$GPUMEM_CLUSTER_DIR.up.tmp" && mv "$GPUMEM_CLUSTER_DIR.up.tmp" "$GPUMEM_CLUSTER_DIR.up"
sleep 600
EOF
# killed SIG DIR WHAT: killed.sh's cluster in DIR/cluster, its test sent SIG
# (to its whole process group) once the cluster is up; then nothing of it
# may be left, nor its own temporary dir.
killed() {
	local sig=$1 d=$2 what=$3 tpid pk kt rc
	mkdir -p "$d"
	GPUMEM_CLUSTER_DIR=$d/cluster top_srcdir=$top_srcdir top_builddir=$top_builddir timeout -k 10 900 bash "$t/killed.sh" &
	tpid=$!
	for _ in $(seq 1 600); do [ -f "$d/cluster.up" ] || ! kill -0 "$tpid" 2>/dev/null && break; sleep 0.2; done
	pk=$(sed -n 1p "$d/cluster.up" 2>/dev/null) kt=$(sed -n 2p "$d/cluster.up" 2>/dev/null)
	if [ -z "$pk" ]; then
		fail "the killed test's cluster came up"
		cat "$d/cluster.log" >&2
		return
	fi
	kill -"$sig" -- -"$tpid"
	wait "$tpid"
	rc=$?
	# TERM: 137 where its EXIT trap's stop took longer than the 10 s before
	# timeout's SIGKILL (a loaded machine).
	like "$rc" "^(124|137|143)\$" "a test killed $what mid-way"
	# The trap's stop, or the test's keeper (lib.sh, slurm_test_keeper),
	# runs in a session of its own and may go on after the SIGKILL that
	# ends the test: what must be true is that it then finishes.  A stop
	# that never ran (a second TERM that cut the trap short; a TERM just
	# before a command, acted on only after the KILL; a KILL), or that left
	# something, still fails here after 300 s.
	for _ in $(seq 1 1500); do [ -z "$(left "$d/cluster" "$pk")" ] && [ ! -d "$kt" ] && break; sleep 0.2; done
	is "$(left "$d/cluster" "$pk")" "" "... leaves no process, namespace, link, route or claim (once the stop, out of the kill's reach, is done)"
	[ ! -d "$kt" ] && pass "... nor its temporary dir" || fail "... nor its temporary dir ($kt)"
}
# What timeout does when the time is up: SIGTERM to the test and to its
# whole process group (timeout leads it), then SIGKILL 10 s later.
killed TERM "$K" "by its timeout (SIGTERM to its process group)"
# A KILL at once: no EXIT trap runs; the keeper stops the cluster.
killed KILL "$t/k2" "outright (SIGKILL to its process group, no EXIT trap)"
done_testing
