#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Two test clusters on one host at once (issue 32, "tests/slurm/cluster
# touches only its own state"; issue 33, item 1).  Each cluster's slurmds
# see the plugin's defaults as installed, /run/gpumem and /run/gpumem-mps,
# as the cluster's own (bind mounts in the nodes' mount namespaces), so:
# cluster A's job keeps its per-job MPS daemon and its records while
# cluster B runs a job (with the same job id) and stops; neither sees the
# other's state_dir; the host's /run/gpumem is left as it was.  Stand-ins
# for what needs a GPU (tests/slurm/standin*); Slurm is real.
. "$top_srcdir/tests/lib.sh"
slurm_test isolation
B=$t/bin
A_DIR=$t/a CB_DIR=$t/b
mkdir -p "$t/reports"
standin_bin "$B"
site_requiring_checks "$t/site.yaml" "$t/reports"
printf 'version: 1\nmps:\n  daemon: job\n' >"$t/mps.yaml"
chmod 644 "$t"/*.yaml
plugstack "$t/plugstack.conf" site="$t/site.yaml" libexecdir="$B" check="$B/standin-check" \
	nvidia_dev="$t/nvidiactl" mps_control="$B/nvidia-cuda-mps-control"
trap '"$CL" stop --dir "$A_DIR" >/dev/null 2>&1; "$CL" stop --dir "$CB_DIR" >/dev/null 2>&1; rm -f "$mark"; rm -rf "$t"' EXIT

# incl DIR CMD...: CMD with the environment of the cluster in DIR.
incl() { local d=$1; shift; (eval "$("$CL" env --dir "$d")"; "$@"); }
# A file of the host's own /run/gpumem, which no cluster may touch.  Hidden
# and not a plugin's temporary (.NAME.PID.tmp): a --tmpfs cluster of a suite
# beside this one uses the host's /run/gpumem and on its stop removes only
# what its jobs may have made there (tests/slurm/cluster, hostrun_new).
[ -d /run/gpumem ] || mkdir -m 0700 /run/gpumem
mark=$(mktemp /run/gpumem/.isolation.XXXXXX)

# Both at once, as two suites would start them.
"$CL" start --dir "$A_DIR" --gpus 1 --plugstack "$t/plugstack.conf" >"$t/a.log" 2>&1 &
a=$!
"$CL" start --dir "$CB_DIR" --gpus 1 --plugstack "$t/plugstack.conf" >"$t/b.log" 2>&1 &
b=$!
wait "$a"; ra=$?
wait "$b"; rb=$?
[ "$ra" = 0 ] && [ "$rb" = 0 ] || { cat "$t/a.log" "$t/b.log" >&2; skip_all "two local Slurms did not start"; }
pass "two clusters started at once"

# A: a job whose MPS daemon must live until its second step.
cat >"$t/job.sh" <<'SH'
#!/bin/sh
srun sh -c 'echo "first=$CUDA_MPS_PIPE_DIRECTORY"'
while [ ! -e "$1" ]; do sleep 0.2; done
srun sh -c 'echo "second=$CUDA_MPS_PIPE_DIRECTORY"'
SH
chmod 755 "$t/job.sh"
mkdir -m 777 "$t/out"
go=$t/go
jid=$(incl "$A_DIR" asuser sbatch --parsable --gres=gpu:1 --gpumem-policy="$t/mps.yaml" -o "$t/out/a-job.out" "$t/job.sh" "$go")
# The daemon's record, mps.JOB.HOST (plugin/spank/state/statefiles.h: a step knows only its host).
for _ in $(seq 1 120); do
	rec=$(ls "$A_DIR/noderun/gpumem/mps.$jid".* 2>/dev/null | head -1)
	grep -q '^ready' "$rec" 2>/dev/null && grep -q '^first=' "$t/out/a-job.out" 2>/dev/null && break
	sleep 0.25
done
read -r _ pid start _ <"$rec" 2>/dev/null
like "$(cat "$t/out/a-job.out" 2>&1)" "^first=/run/gpumem-mps/job$jid/pipe" "A: job $jid's first step runs on its MPS daemon ($pid)"

# B: a job of its own (its first job id may be A's too), then stop it all.
run incl "$CB_DIR" asuser srun --gres=gpu:1 --gpumem-policy="$t/mps.yaml" sh -c 'echo "job=$SLURM_JOB_ID pipe=$CUDA_MPS_PIPE_DIRECTORY"'
like "$out" "pipe=/run/gpumem-mps/job[0-9]+/pipe" "B: a job with its own MPS daemon runs beside A's"
incl "$CB_DIR" wait_idle
"$CL" exec --dir "$A_DIR" touch /run/gpumem/isolation-a
run "$CL" exec --dir "$CB_DIR" ls -A /run/gpumem
unlike "$out" "isolation-a" "B's nodes do not see A's state_dir"
[ -e /run/gpumem/isolation-a ] && fail "... nor does the host" || pass "... nor does the host"
"$CL" stop --dir "$CB_DIR" >/dev/null 2>&1
pass "B stopped"

# A's daemon, its records and its job outlived B.
now=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f20)
is "$now" "$start" "A's MPS daemon ($pid) still runs after B's stop"
[ -f "$rec" ] && ls "$A_DIR/noderun/gpumem/job$jid".*.rec >/dev/null 2>&1 && pass "... and A's records are there" || fail "... and A's records are there"
touch "$go"
for _ in $(seq 1 240); do grep -q '^second=' "$t/out/a-job.out" 2>/dev/null && break; sleep 0.25; done
like "$(cat "$t/out/a-job.out")" "^second=/run/gpumem-mps/job$jid/pipe" "... so A's job's second step runs on it"
unlike "$(cat "$t/out/a-job.out")" "gpumem:|error" "... without an error"
incl "$A_DIR" wait_idle
[ -f "$rec" ] && fail "A's epilog removed its MPS record" || pass "A's epilog removed its MPS record"
"$CL" stop --dir "$A_DIR" >/dev/null 2>&1
[ -f "$mark" ] && pass "the host's /run/gpumem kept what was in it" || fail "the host's /run/gpumem kept what was in it"
done_testing
