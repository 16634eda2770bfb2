#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# AdminComment records of a many-node job lose nothing (issue 27, item 7):
# a --hosts cluster (each slurmd its own network namespace and hostname)
# with a real slurmdbd, GPUMEM_ACCT_NODES nodes (default 8: 32 s on this
# 2-core machine, 4 nodes took 54 s at a higher load).  The same
# job shape twice: each node's Epilog merging its own record (read-back and
# retry; its count is reported, not asserted), and the nodes spooling their
# records for `gpumem-acct slurmctld` in EpilogSlurmctld, which merges them
# once per job: there every node's record must reach sacct's AdminComment
# and `gpumem job`.  sacct and sacctmgr run
# through wrappers that count them; the spool mode costs the job 2 sacct and
# 1 sacctmgr calls whatever its size.  A node without a report says so
# (NODE.none) and the controller does not wait for it; a spool others may
# write is refused.  Issue 32: an array's tasks and a het job's components
# each get exactly their own record, both ways; a node slower than --wait
# has its record merged by the next controller run; a job directory left
# for a day is reaped with a log line.  The GPU check is the stand-in;
# everything else is real.
. "$top_srcdir/tests/lib.sh"
slurm_test acctnodes
N=${GPUMEM_ACCT_NODES:-8}
for p in mariadbd mariadb-install-db slurmdbd; do
	command -v "$p" >/dev/null || skip_all "$p is not installed (contrib/setup-debian installs mariadb-server and slurmdbd)"
done
command -v ip >/dev/null || skip_all "ip(8) is not installed (iproute2)"
if ! ip netns add "gpumem-acctn-probe-$$" 2>"$t/netns.err"; then
	skip_all "network namespaces cannot be made here: $(cat "$t/netns.err")"
fi
ip netns del "gpumem-acctn-probe-$$"
ACCT="$top_builddir/plugin/acct/gpumem-acct"
GM="$top_builddir/plugin/cli/gpumem"
[ -x "$ACCT" ] || skip_all "gpumem-acct was not built"
mkdir -p "$t/reports" "$t/wrap" "$t/spool" "$t/fail" "$t/slow"
chmod 700 "$t/spool"
slurm_standin
printf 'version: 1\nreport:\n  dir: %s/reports\ncheck:\n  timeout: 5\n' "$t" >"$t/site.yaml"
printf 'version: 1\ncheck:\n  after: true\n' >"$t/pol.yaml"
plugstack "$t/plug.conf" site=$t/site.yaml check=$t/standin-check nvidia_dev=$t/nvidiactl
: >"$t/calls.log"; : >"$t/acct.log"
for p in sacct sacctmgr; do
	real=$(command -v "$p")
	printf '#!/bin/sh\necho "${SLURM_JOB_ID:-?} ${SLURMD_NODENAME:-ctld} %s $1 $2" >>%s\nexec %s "$@"\n' \
		"$p" "$t/calls.log" "$real" >"$t/wrap/$p"
done
# $t/mode: node or spool, read by both epilogs at each job's end; $t/wait:
# the controller's --wait; $t/slow/NODE: NODE's Epilog sleeps that long first.
cat >"$t/epilog" <<SH
#!/bin/sh
export PATH="$t/wrap:/usr/sbin:/usr/bin:/sbin:/bin"
[ -s "$t/slow/\$SLURMD_NODENAME" ] && sleep "\$(cat "$t/slow/\$SLURMD_NODENAME")"
[ "\$(cat "$t/mode")" = spool ] && set -- --spool "$t/spool"
exec "$ACCT" epilog --site "$t/site.yaml" "\$@" 2>>"$t/acct.log"
SH
# slurmctld gives EpilogSlurmctld no SLURM_CONF, and the cluster's is no default path.
cat >"$t/epilog-ctld" <<SH
#!/bin/sh
export PATH="$t/wrap:/usr/sbin:/usr/bin:/sbin:/bin" SLURM_CONF="$GPUMEM_CLUSTER_DIR/slurm.conf"
[ "\$(cat "$t/mode")" = spool ] || exit 0
exec "$ACCT" slurmctld --spool "$t/spool" --wait "\$(cat "$t/wait")" 2>>"$t/acct.log"
SH
echo node >"$t/mode"; echo 30 >"$t/wait"
chmod 755 "$t/epilog" "$t/epilog-ctld" "$t/wrap"/*; chmod 644 "$t/mode" "$t/wait" "$t"/*.yaml

t0=$(date +%s)
# bf_interval=1: a het job that cannot start at once is started only by backfill (30 s by default).
if ! GPUMEM_SLURM_CONF_EXTRA="SchedulerParameters=bf_interval=1" "$CL" start --hosts --nodes "$N" --gpus 1 --accounting --epilog "$t/epilog" --epilog-slurmctld "$t/epilog-ctld" \
	--plugstack "$t/plug.conf" >"$t/start.log" 2>&1; then
	why=$(grep -m1 -e 'MariaDB cannot start here' -e 'error' "$t/start.log")
	case $why in *'MariaDB cannot start here'*) skip_all "${why#cluster: error: --accounting: }" ;; esac
	cat "$t/start.log" >&2
	fail "the $N-host Slurm with accounting did not start"
	done_testing
fi
diag "start --hosts --nodes $N --accounting: $(($(date +%s) - t0)) s"
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
comment() { sacct -X -n -P -j "$1" -o AdminComment 2>/dev/null; }
# settled JOB N WHO: N runs of gpumem-acct (on nodes matching WHO) ended (120 s).
settled() {
	for _ in $(seq 1 480); do
		[ "$(grep -cE "job $1 on $3: (recorded|gave up|not written|no node of the job|spool .* refused)" "$t/acct.log")" -ge "$2" ] && return 0
		sleep 0.25
	done
	return 1
}
# onejob MODE: an N-node job written the MODE way; sets jid.
onejob() {
	echo "$1" >"$t/mode"
	run srun -N"$N" --gres=gpu:1 --gpumem-policy="$t/pol.yaml" sh -c '[ "$SLURM_NODEID" = 0 ] && echo "job=$SLURM_JOB_ID"; true'
	jid=$(jobid_of "$out")
	[ -n "$jid" ] || diag "srun: $out"
}
nodes_shown() { "$GM" job "$1" --json 2>/dev/null | json_in 'len({n["node"] for n in d[0]["nodes"]})' 2>/dev/null; }

# --- each node merges its own record ------------------------------------------------
# Measured, not asserted: nodes that read-modify-write one field can lose a
# record with no node noticing (bench/acct-scale: 1 of 24 at 8 nodes), so a
# count here would be a flaky test of a known limit.  Asserted: every node's
# gpumem-acct ends, and gpumem job reads what is there.
t1=$(date +%s)
onejob node
settled "$jid" "$N" '[^:]*' && pass "node mode, job $jid: every node's gpumem-acct ended" ||
	fail "node mode: not every node's gpumem-acct ended: $(tail -5 "$t/acct.log")"
run "$GM" job "$jid"
is "$rc" 0 "node mode: gpumem job reads the records"
diag "node mode: $(comment "$jid" | grep -o '{~' | wc -l) of $N records in AdminComment, $(nodes_shown "$jid") nodes in gpumem job, $(grep -c "job $jid on .*gave up" "$t/acct.log") gave up"
diag "node mode, $N nodes: $(grep -c "^$jid .* sacct " "$t/calls.log") sacct, $(grep -c "^$jid .* sacctmgr -i modify" "$t/calls.log") sacctmgr modify; attempts: $(grep -o "job $jid on [^:]*: recorded.*" "$t/acct.log" | sed 's/.*attempt \([0-9]*\).*/\1/' | tr '\n' ' ')($(($(date +%s) - t1)) s)"

# --- the nodes spool, slurmctld merges once -------------------------------------------
t1=$(date +%s)
onejob spool
settled "$jid" 1 slurmctld || diag "gpumem-acct slurmctld did not end: $(tail -5 "$t/acct.log")"
is "$(comment "$jid" | grep -o '{~' | wc -l)" "$N" "spool mode, job $jid: $N records in sacct's AdminComment"
is "$(nodes_shown "$jid")" "$N" "spool mode: gpumem job shows $N nodes"
like "$(grep "job $jid on slurmctld" "$t/acct.log")" "recorded $N node records as $jid \([0-9]+ bytes, attempt 1\)" "one merge by slurmctld"
is "$(grep -c "^$jid [^ ]* sacct " "$t/calls.log") $(grep -c "^$jid [^ ]* sacctmgr -i modify" "$t/calls.log")" "2 1" \
	"spool mode: 2 sacct and 1 sacctmgr modify for the $N-node job"
is "$(grep -c "^$jid gpumem" "$t/calls.log")" 0 "spool mode: the nodes called neither"
is "$(ls -A "$t/spool")" "" "the job's spool is gone once its records are stored"
run runuser -u "$GPUMEM_TEST_USER" -- env PATH="$PATH" SLURM_CONF="$SLURM_CONF" "$GM" job "$jid"
is "$rc" 1 "spool mode: the test user does not see root's job (PrivateData=jobs)"
diag "spool mode, $N nodes: $(($(date +%s) - t1)) s"

# --- a node without a report: its word is 'none', nobody waits 30 s for it --------------
t1=$(date +%s)
echo spool >"$t/mode"
run srun -N2 --gres=gpu:1 sh -c '[ "$SLURM_NODEID" = 0 ] && echo "job=$SLURM_JOB_ID"; true'
jid=$(jobid_of "$out")
settled "$jid" 1 slurmctld || true
el=$(($(date +%s) - t1))
is "$(comment "$jid")" "" "a job with no check: no record, and nothing written"
like "$(grep "job $jid on slurmctld" "$t/acct.log")" "no node of the job left a record" "slurmctld: no node left a record"
[ "$el" -lt 25 ] && pass "slurmctld did not wait out --wait 30 for nodes with no report (${el} s)" ||
	fail "slurmctld waited ${el} s for nodes with no report"

# --- a spool others may write is refused ------------------------------------------------
chmod 777 "$t/spool"
onejob spool
# Every node's epilog as well as slurmctld's: a node's epilog may end after
# slurmctld's, and one that ran after the chmod 700 below would spool its
# record where no merge comes any more (seen: an entry 4 left, test 23).
settled "$jid" $((N + 1)) '[^:]*' || diag "not every gpumem-acct of job $jid ended: $(tail -5 "$t/acct.log")"
# The count above may be reached by slurmctld's lines while a node's epilog
# still runs (seen under two tests/run at once): the nodes' own lines too.
settled "$jid" "$N" 'gpumem[0-9]*' || diag "not every node's gpumem-acct of job $jid ended: $(tail -5 "$t/acct.log")"
like "$(grep "job $jid on" "$t/acct.log")" "spool .* refused: writable by group or others" "a world-writable spool is refused, with the reason"
is "$(grep -c "job $jid on gpumem[0-9]*: spool .* refused" "$t/acct.log")" "$N" "... by each of the $N nodes too"
is "$(ls -A "$t/spool")" "" "and nothing was left in it"
chmod 700 "$t/spool"
# --- exactly one job record each: array tasks and het components (issue 32, finding 3) ------
# sacct/sacctmgr's "jobid=ID" also selects every task of array ID and every
# component of het job ID, and an array's last task and a het job's first
# component have that ID: a merge by it rewrote all of them.  One node
# fails its check; each task's and component's AdminComment must hold
# exactly its own record (its node, its own job id, its verdict).
# records SPEC: "node job verdict" of each record in SPEC's AdminComment.
records() {
	sacct -X -n -P -j "$1" -o AdminComment 2>/dev/null | python3 -c '
import json, re, sys, zlib
A = "!#$%&()*,-.:;<>?"
for s in re.findall(r"\{~(.*?)~\}", sys.stdin.read()):
    d = json.loads(zlib.decompress(bytes(A.index(s[i]) * 16 + A.index(s[i + 1]) for i in range(0, len(s), 2)), -15))
    v = [c["verdict"] for c in d["checks"] if c["phase"] == "after"]
    print(d["node"], d["job"], v[0] if v else "-")'
}
# own_records ID: for each task/component of ID, its spec, then "node raw verdict" as it
# must be and as its AdminComment has it ("ok" when they agree).
own_records() {
	sacct -X -n -P -j "$1" -o JobIDRaw,JobID,NodeList 2>/dev/null | sort -t'|' -k2 | while IFS='|' read -r raw spec node; do
		want="$node $raw $([ "$node" = gpumem2 ] && echo fail || echo pass)"
		got=$(records "$spec" | tr '\n' ';')
		[ "$got" = "$want;" ] && echo "$spec ok $want" ||
			echo "$spec WRONG: want '$want', got '$got'; gpumem-acct said: $(grep "job $raw on" "$t/acct.log" | tr '\n' ' ')"
	done
}
# settled_all ID K WHO: once the database shows ID's K tasks/components (slurmctld
# tells slurmdbd asynchronously), each has WHO's gpumem-acct ended, once per node.
settled_all() {
	for _ in $(seq 1 80); do
		[ "$(sacct -X -n -P -j "$1" -o JobID 2>/dev/null | grep -c '[_+]')" -ge "$2" ] && break
		sleep 0.25
	done
	for r in $(sacct -X -n -P -j "$1" -o JobIDRaw,NNodes 2>/dev/null | tr '\n' ' '); do
		settled "${r%%|*}" "$([ "$3" = slurmctld ] && echo 1 || echo "${r#*|}")" "$3" || return 1
	done
}
touch "$t/fail/gpumem2"
for mode in node spool; do
	echo "$mode" >"$t/mode"
	# Idle nodes: the scheduler places the tasks in node order, one on gpumem2.
	for k in 1 2 3 4; do wait_idle "gpumem$k"; done
	t1=$(date +%s)
	run sbatch --parsable --wait --array=0-3 -N1 --gres=gpu:1 --gpumem-policy="$t/pol.yaml" -o /dev/null --wrap 'sleep 1'
	aid=${out%%;*}
	t2=$(date +%s)
	who=$([ "$mode" = spool ] && echo slurmctld || echo '[^:]*')
	settled_all "$aid" 4 "$who" || diag "$mode mode: not every gpumem-acct of array $aid ended: $(tail -3 "$t/acct.log")"
	res=$(own_records "$aid")
	diag "$mode mode, array $aid: $(printf '%s\n' "$res" | tr '\n' ';') (sbatch $((t2 - t1)) s, records $(($(date +%s) - t2)) s)"
	is "$(printf '%s\n' "$res" | grep -c ' ok ')" 4 "$mode mode: each of the 4 array tasks holds exactly its own record"
	like "$res" "ok gpumem2 [0-9]+ fail" "$mode mode: ... one of them the failing check of gpumem2"
	like "$res" "ok gpumem[^2 ] [0-9]+ pass" "$mode mode: ... the others passes"

	wait_idle gpumem1; wait_idle gpumem2
	t1=$(date +%s)
	run srun -N1 -w gpumem1 --gres=gpu:1 --gpumem-policy="$t/pol.yaml" sh -c 'echo "job=$SLURM_JOB_ID"' : \
		-N1 -w gpumem2 --gres=gpu:1 --gpumem-policy="$t/pol.yaml" true
	hid=$(jobid_of "$out")
	[ -n "$hid" ] || diag "het srun: $out"
	t2=$(date +%s)
	settled_all "$hid" 2 "$who" || diag "$mode mode: not every gpumem-acct of het job $hid ended: $(tail -3 "$t/acct.log")"
	res=$(own_records "$hid")
	diag "$mode mode, het job $hid: $(printf '%s\n' "$res" | tr '\n' ';') (srun $((t2 - t1)) s, records $(($(date +%s) - t2)) s)"
	is "$(printf '%s\n' "$res" | grep -c "^$hid+[01] ok ")" 2 "$mode mode: each component of a het job holds exactly its own record"
done
rm -f "$t/fail/gpumem2"
is "$(ls -A "$t/spool")" "" "the spool keeps nothing of the arrays and het jobs"

# --- a node later than --wait, and the spool's leftovers (issue 32, finding 4) --------------
# gpumem2's Epilog takes 8 s, the controller waits 3: it merges gpumem1's
# record and says that gpumem2 left no word.  gpumem2's record comes after;
# the next controller run merges it (the directory is older than --wait).
# A crashed writer's file in a job's directory untouched for two days is
# reaped by that run, with a log line naming it.
t1=$(date +%s)
echo spool >"$t/mode"; echo 3 >"$t/wait"; echo 8 >"$t/slow/gpumem2"
run srun -N2 -w gpumem1,gpumem2 --gres=gpu:1 --gpumem-policy="$t/pol.yaml" sh -c '[ "$SLURM_NODEID" = 0 ] && echo "job=$SLURM_JOB_ID"; true'
ljid=$(jobid_of "$out")
settled "$ljid" 1 slurmctld || diag "slurmctld did not end for job $ljid: $(tail -3 "$t/acct.log")"
like "$(grep "job $ljid on slurmctld" "$t/acct.log")" "1 of 2 nodes left no word .* in 3 s: a later gpumem-acct slurmctld run merges" \
	"a node slower than --wait: the controller says so"
is "$(records "$ljid" | cut -d' ' -f1)" gpumem1 "... and merges the record that is there"
wait_file "$t/spool/$ljid/gpumem2.seg" || diag "gpumem2 left no record: $(grep "job $ljid on gpumem2" "$t/acct.log")"
rm -f "$t/slow/gpumem2"
mkdir -m 755 "$t/spool/4242"; : >"$t/spool/4242/.gpumem7.seg.99"; touch -d '2 days ago' "$t/spool/4242"
sleep 4         # gpumem2's word is older than --wait now
run srun -N1 -w gpumem3 --gres=gpu:1 --gpumem-policy="$t/pol.yaml" sh -c 'echo "job=$SLURM_JOB_ID"'
njid=$(jobid_of "$out")
for _ in $(seq 1 240); do [ -z "$(ls -A "$t/spool")" ] && break; sleep 0.25; done
like "$(grep "job $ljid on slurmctld" "$t/acct.log")" "late: the records of 1 nodes \(gpumem2\) came after the job's merge" \
	"the next controller run (job $njid) takes the late record"
is "$(records "$ljid" | cut -d' ' -f1 | sort | tr '\n' ' ')" "gpumem1 gpumem2 " "job $ljid's AdminComment ends with both records"
like "$(grep "job 4242 on slurmctld" "$t/acct.log")" "reaped $t/spool/4242, unchanged for [0-9]+ s \(--reap 86400\): .gpumem7.seg.99" \
	"a job directory unchanged for a day is reaped, with a log line naming what it held"
is "$(ls -A "$t/spool")" "" "the spool is empty"
diag "late node and reaping: $(($(date +%s) - t1)) s"
echo 30 >"$t/wait"
diag "suite: $(($(date +%s) - t0)) s for $N hosts"
done_testing
