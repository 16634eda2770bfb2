#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Prometheus for real (issue 16 item 5): contrib/node_exporter/gpumem-rules.yml
# passes `promtool check rules` and its unit tests (gpumem-rules.test.yml)
# pass `promtool test rules`, while a broken copy of each fails; then a real
# srun job as the test user on a local Slurm of two nodes, with the stand-in
# check failing on gpumem2, leaves node_exporter textfiles that Debian's
# prometheus-node-exporter serves and Debian's prometheus scrapes and alerts
# on: gpumem_check_verdict through the HTTP API, GpumemCheckFailed firing for
# gpumem2 only, and resolving once gpumem2's next check passes.
#
# Both daemons run as the unprivileged test user (as node_exporter would:
# the textfiles must be readable by it), listen on 127.0.0.1 only, on free
# ports, and are stopped on exit whatever happens.  The GPU check is the
# stand-in (CI has no GPU); everything else is real.
. "$top_srcdir/tests/lib.sh"
slurm_test prometheus
for p in prometheus promtool prometheus-node-exporter; do
	command -v "$p" >/dev/null ||
		skip_all "$p is not installed (apt-get install prometheus prometheus-node-exporter; contrib/setup-debian does)"
done
command -v setpriv >/dev/null || skip_all "setpriv (util-linux) is needed to run the daemons as the test user"
rules_dir=$(cd "$top_srcdir/contrib/node_exporter" && pwd)
rules="$rules_dir/gpumem-rules.yml"

# --- promtool: the rules are valid and do what their unit tests say ----------------
run promtool check rules "$rules"
is "$rc" 0 "promtool check rules gpumem-rules.yml" || diag "$out"
like "$out" "SUCCESS: 3 rules found" "... finds the 3 rules"
mkdir -p "$t/broken" "$t/wrong"
# A broken copy: an unbalanced parenthesis in the first rule's expression.
sed '0,/expr: /s/expr: \(.*\)$/expr: (\1/' "$rules" >"$t/broken/gpumem-rules.yml"
cmp -s "$rules" "$t/broken/gpumem-rules.yml" && fail "the broken expression was put in the copy"
run promtool check rules "$t/broken/gpumem-rules.yml"
[ "$rc" -ne 0 ] && pass "a copy with a broken expression fails promtool check rules (rc $rc)" ||
	{ fail "a copy with a broken expression fails promtool check rules"; diag "$out"; }
like "$out" "GpumemCheckFailed|parse error" "... naming what is wrong"
run sh -c 'cd "$1" && promtool test rules gpumem-rules.test.yml' sh "$rules_dir"
is "$rc" 0 "promtool test rules gpumem-rules.test.yml" || diag "$out"
like "$out" "SUCCESS" "... SUCCESS"
# A wrong expectation: GpumemCheckFailed with severity warning, not critical.
cp "$rules" "$t/wrong/"
sed 's/severity: critical,/severity: warning,/' "$rules_dir/gpumem-rules.test.yml" >"$t/wrong/gpumem-rules.test.yml"
cmp -s "$rules_dir/gpumem-rules.test.yml" "$t/wrong/gpumem-rules.test.yml" && fail "the wrong expectation was put in the copy"
run sh -c 'cd "$1" && promtool test rules gpumem-rules.test.yml' sh "$t/wrong"
[ "$rc" -ne 0 ] && pass "a copy with a wrong expectation fails promtool test rules (rc $rc)" ||
	{ fail "a copy with a wrong expectation fails promtool test rules"; diag "$out"; }
like "$out" "alertname: GpumemCheckFailed" "... naming the alert"

# --- a real job on two nodes writes the textfiles ---------------------------------
mkdir -p "$t/reports" "$t/textfile" "$t/fail" "$t/tsdb"
chmod 777 "$t/fail"
slurm_standin
cat >"$t/site.yaml" <<YAML
version: 1
report:
  dir: $t/reports
  textfile_dir: $t/textfile
check:
  timeout: 5
YAML
printf 'version: 1\ncheck:\n  after: true\n' >"$t/after.yaml"
plugstack "$t/standin.conf" site=$t/site.yaml libexecdir=$(helpers_libexec) check=$t/standin-check nvidia_dev=$t/nvidiactl
chmod 644 "$t"/*.yaml "$t"/*.conf
"$CL" start --nodes 2 --gpus 1 --plugstack "$t/standin.conf" >"$t/start.log" 2>&1 ||
	{ cat "$t/start.log" >&2; skip_all "the local Slurm did not start"; }
eval "$("$CL" env)"
cd "$GPUMEM_CLUSTER_TMP" || exit 1
U1=GPU-00000000-0000-0000-0000-000000000001
U2=GPU-00000000-0000-0000-0000-000000000002

touch "$t/fail/gpumem2"
run "$CL" runas srun -N2 --gres=gpu:1 --gpumem-policy="$t/after.yaml" true
is "$rc" 0 "srun -N2 as $GPUMEM_TEST_USER with an after-check" || diag "$out"
wait_file "$t/textfile/gpumem_$U1.prom" && pass "gpumem1's textfile ($U1)" || fail "gpumem1's textfile ($U1)"
wait_file "$t/textfile/gpumem_$U2.prom" && pass "gpumem2's textfile ($U2)" || fail "gpumem2's textfile ($U2)"
rm -f "$t/fail/gpumem2"

# --- node_exporter and Prometheus, as the test user, on 127.0.0.1 ------------------
ne_pid="" pr_pid=""
stop_daemons() {
	local p
	for p in $pr_pid $ne_pid; do kill -TERM "$p" 2>/dev/null; done
	for p in $pr_pid $ne_pid; do
		for _ in $(seq 1 240); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
}
trap 'stop_daemons; "$CL" stop >/dev/null 2>&1; rm -rf "$t"' EXIT
trap 'exit 1' INT TERM HUP
# Two free ports on 127.0.0.1, held together while chosen so they differ.
read -r NE_PORT PR_PORT < <(python3 -c 'import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
uid=$(id -u "$GPUMEM_TEST_USER") gid=$(id -g "$GPUMEM_TEST_USER")
# asuser CMD...: exec CMD as the test user, killed if this script dies (in a
# subshell with &, $! is then the daemon itself).
asuser() { exec setpriv --reuid="$uid" --regid="$gid" --init-groups --pdeathsig TERM "$@"; }
chown "$uid:$gid" "$t/tsdb"
cat >"$t/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $rules
scrape_configs:
  - job_name: gpumem
    static_configs:
      - targets: ['127.0.0.1:$NE_PORT']
YAML
chmod 644 "$t/prometheus.yml"
(asuser prometheus-node-exporter --web.listen-address="127.0.0.1:$NE_PORT" \
	--collector.disable-defaults --collector.textfile --collector.textfile.directory="$t/textfile") \
	>"$t/node_exporter.log" 2>&1 &
ne_pid=$!
(cd "$t" && asuser prometheus --config.file="$t/prometheus.yml" --storage.tsdb.path="$t/tsdb" \
	--web.listen-address="127.0.0.1:$PR_PORT") >"$t/prometheus.log" 2>&1 &
pr_pid=$!

# get URL: the body, from 127.0.0.1 only (no proxy).
get() {
	if command -v curl >/dev/null; then curl -sg --noproxy '*' --max-time 5 "$1"
	else python3 -c 'import sys, urllib.request
o = urllib.request.build_opener(urllib.request.ProxyHandler({}))
sys.stdout.write(o.open(sys.argv[1], timeout=5).read().decode())' "$1" 2>/dev/null; fi
}
API="http://127.0.0.1:$PR_PORT/api/v1"
# pyq PY [ARG]: prints the Python expression PY of the JSON on stdin (d; ARG is sys.argv[2]).
pyq() { python3 -c 'import json, sys
try: d = json.load(sys.stdin)
except ValueError: sys.exit(1)
print(eval(sys.argv[1]))' "$@" 2>/dev/null; }
# series QUERY: "node uuid value" per series, sorted (empty until there are some).
series() {
	get "$API/query?query=$1" | pyq '"\n".join(sorted("%s %s %s" % (r["metric"].get("node"), r["metric"].get("uuid"), r["value"][1]) for r in d["data"]["result"]))'
}
# firing NAME: "node uuid severity|summary" of each firing alert of that name.
firing() {
	get "$API/alerts" | pyq '"\n".join(sorted("%s %s %s|%s" % (a["labels"].get("node"), a["labels"].get("uuid"), a["labels"].get("severity"), a["annotations"].get("summary")) for a in d["data"]["alerts"] if a["labels"]["alertname"] == sys.argv[2] and a["state"] == "firing"))' "$1"
}
# until_is WANT CMD...: repeat CMD (stdout) until it prints WANT, 30 s at most; sets $got.
until_is() {
	local want=$1; shift
	for _ in $(seq 1 120); do got=$("$@"); [ "$got" = "$want" ] && return 0; sleep 0.5; done
	return 1
}

ready=""
for _ in $(seq 1 60); do
	[ "$(get "http://127.0.0.1:$PR_PORT/-/ready")" = "Prometheus Server is Ready." ] && { ready=1; break; }
	kill -0 "$pr_pid" 2>/dev/null || break
	sleep 0.5
done
if [ -n "$ready" ]; then pass "Prometheus is ready on 127.0.0.1:$PR_PORT"
else
	fail "Prometheus is ready on 127.0.0.1:$PR_PORT"
	diag "prometheus.log:" "$(tail -20 "$t/prometheus.log")" "node_exporter.log:" "$(tail -20 "$t/node_exporter.log")"
fi
like "$(get "http://127.0.0.1:$NE_PORT/metrics")" "gpumem_check_verdict\{gpu=\"0\",node=\"gpumem2\",uuid=\"$U2\"\} 2" \
	"node_exporter on 127.0.0.1:$NE_PORT serves the textfiles, as $GPUMEM_TEST_USER"
is "$(ps -o uid= -p "$ne_pid" | tr -d ' ')/$(ps -o uid= -p "$pr_pid" | tr -d ' ')" "$uid/$uid" \
	"both daemons run as the test user"
is "$(ss -Hltnp | grep -E "pid=($ne_pid|$pr_pid)," | awk '{print $4}' | sort | tr '\n' ' ')" \
	"$(printf '127.0.0.1:%s\n' "$NE_PORT" "$PR_PORT" | sort | tr '\n' ' ')" "they listen on 127.0.0.1 only, one port each"

# rules: "name:health" of each rule Prometheus loaded ("unknown" until first evaluated).
rules() { get "$API/rules" | pyq '" ".join("%s:%s" % (r["name"], r["health"]) for g in d["data"]["groups"] for r in g["rules"])'; }
until_is "GpumemCheckFailed:ok GpumemCheckUnusable:ok GpumemCheckStale:ok" rules
is "$got" "GpumemCheckFailed:ok GpumemCheckUnusable:ok GpumemCheckStale:ok" "Prometheus loaded contrib's rules and evaluates them without error"

until_is "gpumem1 $U1 0
gpumem2 $U2 2" series gpumem_check_verdict
is "$got" "gpumem1 $U1 0
gpumem2 $U2 2" "query gpumem_check_verdict: two series, gpumem1 0 (pass), gpumem2 2 (fail), with their UUIDs"
is "$(get "$API/query?query=gpumem_check_verdict" | pyq '" ".join(sorted("%s,%s,%s" % (r["metric"]["job"], r["metric"]["instance"], r["metric"]["gpu"]) for r in d["data"]["result"]))')" \
	"gpumem,127.0.0.1:$NE_PORT,0 gpumem,127.0.0.1:$NE_PORT,0" "... scraped by job gpumem from the exporter, gpu label 0"
is "$(series 'gpumem_bandwidth_gbps%7Bmetric%3D%22triad%22%7D')" "gpumem1 $U1 4100
gpumem2 $U2 1200" 'gpumem_bandwidth_gbps{metric="triad"}: each GPU'"'"'s triad figure'
like "$(series 'time()-gpumem_check_timestamp_seconds')" "^gpumem1 $U1 [0-9.e+-]+
gpumem2 $U2 [0-9.e+-]+$" "gpumem_check_timestamp_seconds: both GPUs"
is "$(series 'node_textfile_scrape_error')" "None None 0" "node_exporter read the textfile directory without error"

until_is "gpumem2 $U2 critical|GPU $U2 on gpumem2 failed its gpumem check" firing GpumemCheckFailed
is "$got" "gpumem2 $U2 critical|GPU $U2 on gpumem2 failed its gpumem check" \
	"/api/v1/alerts: GpumemCheckFailed firing for gpumem2 only, severity and summary from the rules"
is "$(firing GpumemCheckUnusable)$(firing GpumemCheckStale)" "" "... and no Unusable or Stale alert (fresh checks, none unusable)"

# --- gpumem2's next check passes: its file says 0, the alert resolves ---------------
run "$CL" runas srun -w gpumem2 --gres=gpu:1 --gpumem-policy="$t/after.yaml" true
is "$rc" 0 "a second job on gpumem2, whose check passes now" || diag "$out"
until_is "gpumem1 $U1 0
gpumem2 $U2 0" series gpumem_check_verdict
is "$got" "gpumem1 $U1 0
gpumem2 $U2 0" "Prometheus sees gpumem2's verdict 0"
until_is "" firing GpumemCheckFailed
is "$got" "" "GpumemCheckFailed no longer fires"

# --- nothing keeps running ------------------------------------------------------------
stop_daemons
left=""
for p in $ne_pid $pr_pid; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
is "$left" "" "node_exporter and Prometheus stopped"
is "$(ss -Hltn | awk '{print $4}' | grep -cE "^127\.0\.0\.1:($NE_PORT|$PR_PORT)$")" 0 "... their ports are closed"
ne_pid="" pr_pid=""
done_testing
