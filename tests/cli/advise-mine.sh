#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem advise --mine without Slurm: a stand-in sacct first on PATH logs
# its arguments and prints jobs as sacct -P --delimiter prints them, the
# records made by gpumem-acct's record mode from tests/cli/job-gen.py's
# reports.  What is asked of sacct (one query, the caller's uid only),
# grouping and sorting by GPU-hours, GPU-hours from the profile's GPUs
# where AllocTRES has no gres/gpu, a name with a line break, no job at all.
# The same through real slurmdbd, as two users: tests/slurm/mine.sh.
. "$top_srcdir/tests/lib.sh"
ACCT="$top_builddir/plugin/acct/gpumem-acct"
[ -x "$ACCT" ] || skip_all "gpumem-acct was not built"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir "$t/r" "$t/bin"
python3 "$top_srcdir/tests/cli/job-gen.py" test "$t/r"
seg=$("$ACCT" record --dir "$t/r" --job 77 --node gpu01 2>"$t/acct.err" | sed -n 2p)
case $seg in "{~"*"~}") pass "a record of 2 profiled GPUs (HBM-bound under a 25% set-aside, idle)" ;; *) fail "no record: $(cat "$t/acct.err")" ;; esac
cat >"$t/bin/sacct" <<SH
#!/bin/sh
printf '%s\n' "\$*" >>"$t/sacct.args"
cat "$t/sacct.out"
SH
chmod +x "$t/bin/sacct"
PATH="$t/bin:$PATH"; export PATH
d=$(printf '\037')
{
	# JobIDRaw State End ElapsedRaw AllocTRES AdminComment JobName
	echo "70${d}COMPLETED${d}2026-11-25T16:02:00${d}3600${d}cpu=1,gres/gpu=2${d}${d}small"
	echo "77${d}COMPLETED${d}2026-11-25T16:02:00${d}7200${d}cpu=4,mem=8G${d}JS1:abc $seg${d}train"
	echo "76${d}FAILED${d}2026-11-25T15:00:00${d}1800${d}cpu=4,gres/gpu=4${d}${d}train"
	echo "79${d}COMPLETED${d}2026-11-25T17:00:00${d}60${d}cpu=1${d}${d}two"
	echo "lines"
} >"$t/sacct.out"

run "$GPUMEM" advise --mine --json
is "$rc" 0 "advise --mine --json: exit 0" || diag "$out"
is "$(wc -l <"$t/sacct.args")" 1 "one sacct query"
like "$(cat "$t/sacct.args")" "^-n -P --delimiter=$d --user $(id -u) --starttime [0-9-]*T[0-9:]* -o JobIDRaw,State,End,ElapsedRaw,AllocTRES,AdminComment,JobName$" \
	"  for the caller's uid only, jobs with their steps (the judge's times), since a time"
is "$(printf '%s' "$out" | json_in '[(n["name"], n["jobs"], float(round(n["gpu_hours"], 2)), n["gpus_from"], n["latest_profiled_job"]) for n in d["names"]]')" \
	"[('train', 2, 6.0, 'profile', 77), ('small', 1, 2.0, 'tres', None), ('two', 1, 0.0, 'none', None)]" \
	"by name, the most GPU-hours first; 2 profiled GPUs x 2 h where AllocTRES has no gres/gpu; no GPU known: none"
is "$(printf '%s' "$out" | json_in '[(a["rule"], a["policy"], a["gpus"]) for a in d["names"][0]["advice"]]')" \
	"[('setaside', 'stream.yaml', 1), ('idle', 'mps-half.yaml', 1)]" "train: each distinct advice of job 77, with its GPUs (a 25% set-aside, DRAM p95 80%: setaside)"

run "$GPUMEM" advise --mine
like "$out" "Your jobs since .*: 3 names, 4 jobs" "text: the head line"
like "$out" "train: 2 jobs, 6.00 GPU-hours \(GPUs from the profiles: accounting does not track gres/gpu\); advice of the latest profiled job, 77:" \
	"text: train's line says where its GPUs came from"
like "$out" "  stream.yaml \(setaside, 1 GPU\): the job ran under a persisting-L2 set-aside .*\(DRAM p95 80%, mean 50%\)" "text: the advice and its reason"
like "$out" "small: 1 job, 2.00 GPU-hours; no profiled job" "text: a name without a profile"
like "$out" "\(1 line of sacct not read: a job name with a line break\?\)" "a line that is no job: said, not fatal"

: >"$t/sacct.out"
run "$GPUMEM" advise --mine
is "$rc" 0 "no job: exit 0"
like "$out" "No job of yours in accounting since " "  said so"
run "$GPUMEM" advise --mine --json
is "$(printf '%s' "$out" | json_in 'd["names"]')" "[]" "  --json: no names"
run "$GPUMEM" advise --mine 77
is "$rc" 64 "--mine with a JOBID: usage error"
run "$GPUMEM" advise 77 --since 7d
is "$rc" 64 "--since without --mine: usage error"
done_testing
