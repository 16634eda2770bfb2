#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Nodes as separate hosts (tests/slurm/cluster start --hosts): three slurmd,
# each in its own network namespace with its own address on a bridge of a
# private /24 and its own hostname, all on one SlurmdPort.  srun -N3 crosses
# them; the policy reaches every node and each clamps it to its own site
# file (gpumem2 a stricter one, gpumem3 none: per-node plugstack.conf,
# --node-plugstack); one report per node; a check failing on one node
# drains it and leaves the others up; bad options are refused; stop leaves
# no namespace, link, process or cgroup.
. "$top_srcdir/tests/lib.sh"
slurm_test hosts
need_netns hosts
mkdir -p "$t/reports" "$t/fail"
chmod 777 "$t/fail"
slurm_standin

site() { # site NAME L2MAX
	cat >"$t/$1.yaml" <<YAML
version: 1
limits:
  l2_max_percent: $2
  on_fail: [warn, fail, drain]
report:
  dir: $t/reports
drain:
  enabled: true
  reason: "gpumem: GPU check failed"
YAML
}
site site 50
site strict 10
printf 'version: 1\nl2:\n  persisting_limit: 15%%\n' >"$t/l2-15.yaml"
printf 'version: 1\ncheck:\n  after: true\n  on_fail: drain\n' >"$t/drain.yaml"
base="required $so libexecdir=$(helpers_libexec)"
echo "$base site=$t/site.yaml" >"$t/plug1.conf"
echo "$base site=$t/strict.yaml" >"$t/plug2.conf"
echo "$base" >"$t/plug3.conf"
# No GRES on these hosts: gpus=all (a job may use every GPU of its node).
echo "$base site=$t/site.yaml check=$t/standin-check nvidia_dev=$t/nvidiactl gpus=all" >"$t/standin.conf"
chmod -R a+rX "$t"

# --- bad options: refused before anything is started -------------------------------
bad="$t/bad-dir"
run "$CL" start --hosts=yes --dir "$bad"
like "$out" "cluster: error: start: --hosts takes no value" "--hosts=yes refused"
# Without --hosts, also where tests/slurm/run --hosts puts it in GPUMEM_CLUSTER_ARGS.
no_hosts_args=$(printf '%s\n' ${GPUMEM_CLUSTER_ARGS:-} | grep -vx -- --hosts | tr '\n' ' ')
run env GPUMEM_CLUSTER_ARGS="$no_hosts_args" "$CL" start --nodes 2 --node-plugstack "1=$t/plug1.conf" --dir "$bad"
like "$out" "error: --node-plugstack needs --hosts" "--node-plugstack without --hosts refused"
run "$CL" start --hosts --nodes 2 --node-plugstack "3=$t/plug1.conf" --dir "$bad"
like "$out" "error: --node-plugstack wants K=FILE with K in 1..2, got '3=" "--node-plugstack for a node that is not there refused"
run "$CL" start --hosts --node-plugstack "1=$t/missing.conf" --dir "$bad"
like "$out" "error: --node-plugstack 1=.*missing.conf is not a readable file" "--node-plugstack with a missing file refused"
run env GPUMEM_CLUSTER_NET=8.8.8 "$CL" start --hosts --dir "$bad"
like "$out" "error: GPUMEM_CLUSTER_NET=8.8.8: want the first three numbers of a private /24" "a public network refused"
run "$CL" start --cgroup=1 --dir "$bad"
like "$out" "error: start: --cgroup takes v1 or v2, not '1'" "--cgroup=1 refused"
[ -e "$bad" ] && fail "nothing made for a refused start" || pass "nothing made for a refused start"

# --- three hosts ---------------------------------------------------------------------
t0=$(date +%s)
if ! "$CL" start --hosts --nodes 3 --plugstack "$t/plug1.conf" \
	--node-plugstack "2=$t/plug2.conf" --node-plugstack "3=$t/plug3.conf" >"$t/start.log" 2>&1; then
	why=$(grep -m1 'cluster: error:' "$t/start.log")
	cat "$t/start.log" >&2
	skip_all "the separate-hosts Slurm did not start here: ${why:-see the log above}"
fi
diag "start --hosts --nodes 3: $(($(date +%s) - t0)) s"
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
D=$GPUMEM_CLUSTER_DIR
port=$(sed -n 's/^PORT_BASE=//p' "$D/cluster.state")
net=$(sed -n 's/^NET=//p' "$D/cluster.state")

run srun -N3 -l sh -c 'echo "$(hostname) $(ip -4 -o addr show eth0 | awk "{print \$4}") $(readlink /proc/self/ns/net)"'
is "$rc" 0 "srun -N3 across three hosts"
names=$(printf '%s\n' "$out" | awk '{print $2}' | sort | tr '\n' ' ')
is "$names" "gpumem1 gpumem2 gpumem3 " "each task's hostname is its node's"
addrs=$(printf '%s\n' "$out" | awk '{print $3}' | sort | tr '\n' ' ')
is "$addrs" "$net.1/24 $net.2/24 $net.3/24 " "each task has its node's own address on the cluster's /24"
is "$(printf '%s\n' "$out" | awk '{print $4}' | sort -u | wc -l)" 3 "three network namespaces"
printf '%s\n' "$out" | grep -qF "$(readlink /proc/self/ns/net)" && fail "none of them is this host's" || pass "none of them is this host's"
is "$(sinfo -h -N -o '%N %o' | sort | tr '\n' ' ')" "gpumem1 $net.1 gpumem2 $net.2 gpumem3 $net.3 " "slurmctld reaches each node at its own address"
hexport=$(printf ':%04X' $((port + 1)))
listening=""
for n in 1 2 3; do
	ip netns exec "gpumem-$port-gpumem$n" cat /proc/net/tcp | awk -v p="$hexport" '$2 ~ p"$" && $4 == "0A"' | grep -q . && listening="$listening $n"
done
is "$listening" " 1 2 3" "all three slurmd listen on one port ($((port + 1))), each on its own host"
run ip netns exec "gpumem-$port-gpumem2" ip route
is "$(printf '%s\n' "$out" | grep -c .)" 1 "a node's only route is its /24: no traffic goes anywhere else"
run srun -N3 --ntasks-per-node=2 -l id -un
is "$(printf '%s\n' "$out" | grep -c ' root$')" 6 "srun -N3 --ntasks-per-node=2: six tasks"
run "$CL" runas srun -N3 -l id -un
is "$(printf '%s\n' "$out" | grep -c " $GPUMEM_TEST_USER\$")" 3 "... and as the test user"

# --- one policy, each node's own site clamp ----------------------------------------
run srun -N3 -l --gpumem-policy="$t/l2-15.yaml" sh -c 'echo "$SLURMD_NODENAME ${CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT-unset}"'
is "$rc" 0 "a policy on three hosts"
l2=$(printf '%s\n' "$out" | grep -E '^[0-9]+: gpumem' | awk '{print $2 "=" $3}' | sort | tr '\n' ' ')
is "$l2" "gpumem1=15 gpumem2=10 gpumem3=15 " "the policy reached every node: 15% kept on gpumem1, clamped to gpumem2's 10%, none on gpumem3 (no site file)"
like "$(grep -h 'gpumem: job' "$D/log/slurmd.gpumem2.log" | tail -3)" "l2-15.yaml \(as forwarded\)" "gpumem2 got the forwarded copy"
like "$(grep -h 'gpumem: job' "$D/log/slurmd.gpumem2.log")" "15% is above the site limit of 10%: using 10%" "gpumem2's log says it clamped to its site limit"
unlike "$(grep -h 'gpumem: job' "$D/log/slurmd.gpumem1.log" "$D/log/slurmd.gpumem3.log")" "above the site limit" "the other nodes did not clamp"

# --- reports, one per node; a failing check drains only its node ---------------------
"$CL" restart-slurmd --no-node-plugstack --plugstack "$t/standin.conf" >"$t/restart.log" 2>&1 ||
	{ cat "$t/restart.log" >&2; fail "restart-slurmd on three hosts"; }
touch "$t/fail/gpumem2"
run srun -N3 --gpumem-policy="$t/drain.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
is "$rc" 0 "the job itself is not failed by an after-check"
jid=$(printf '%s\n' "$out" | sed -n 's/^job=//p' | head -1)
# The reports come from the epilogs, after srun returns: wait on the
# nodes' state (no job COMPLETING), not on a time a loaded machine misses
# (10 s were not enough beside other suites: 26.05 --cgroup in the matrix).
for n in 1 2 3; do wait_settled "gpumem$n" || diag "gpumem$n still COMPLETING after 60 s: $(node_state "gpumem$n")"; done
is "$(ls "$t/reports" | grep "^job$jid\.epilog\." | tr '\n' ' ')" "job$jid.epilog.gpumem1.after.json job$jid.epilog.gpumem2.after.json job$jid.epilog.gpumem3.after.json " "one report per node"
for n in 1 2 3; do
	is "$(json "$t/reports/job$jid.epilog.gpumem$n.after.json" 'd["node"] + " " + d["check"]["host"]')" "gpumem$n gpumem$n" "gpumem$n's report: written by its node, of its node's check"
done
is "$(json "$t/reports/job$jid.epilog.gpumem2.after.json" 'd["verdict"] + " " + str(d["drained"])')" "fail True" "gpumem2 failed and was drained (scontrol from its own host)"
wait_state gpumem2 DRAIN
like "$(node_state gpumem2)" "DRAIN" "gpumem2 is drained"
wait_state gpumem1 '^IDLE$'; wait_state gpumem3 '^IDLE$'
is "$(node_state gpumem1) $(node_state gpumem3)" "IDLE IDLE" "gpumem1 and gpumem3 stay up"
run srun -N2 sh -c hostname
is "$(printf '%s\n' "$out" | sort | tr '\n' ' ')" "gpumem1 gpumem3 " "jobs still run on the two others"
rm -f "$t/fail/gpumem2"

# --- nothing left --------------------------------------------------------------------
"$CL" stop >/dev/null 2>&1
is "$(ip netns list | grep -c "^gpumem-$port-")" 0 "stop removed the network namespaces"
ip link show "gm${port}br" >/dev/null 2>&1 && fail "stop removed the bridge" || pass "stop removed the bridge"
is "$(ip -o link show | grep -c "gm${port}v")" 0 "... and the veth pairs"
is "$(ip -4 addr show | grep -c " $net\.")" 0 "... and every address of the /24"
pgrep -f "$D/slurm.conf" >/dev/null && fail "no daemon left" || pass "no daemon left"
done_testing
