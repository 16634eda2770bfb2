#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The shipped examples are valid, and the CLI's basic contract holds.
. "$top_srcdir/tests/lib.sh"
site="$top_srcdir/etc/gpumem.yaml"

for p in "$top_srcdir"/policies/*.yaml; do
	run "$GPUMEM" validate --site "$site" "$p"
	is "$rc" 0 "example $(basename "$p") is valid under the example site file"
done
run "$GPUMEM" validate --site "$site"
is "$rc" 0 "the example site file is valid"
like "$out" "1 file valid" "validate says so"

run "$GPUMEM" --version
like "$out" "^gpumem [0-9]+\.[0-9]+\.[0-9]+" "--version"
run "$GPUMEM" --help
is "$rc" 0 "--help exits 0"
like "$out" "gpumem validate" "--help lists validate"
like "$out" "gpumem env" "--help lists env"
run "$GPUMEM" frobnicate
is "$rc" 64 "unknown command: usage exit status"
like "$out" "unknown command 'frobnicate'" "unknown command named"
run "$GPUMEM" show --bogus
is "$rc" 64 "unknown option: usage exit status"
like "$out" "unknown or incomplete option '--bogus'" "unknown option named"
run "$GPUMEM" env --gpus lots
is "$rc" 64 "bad --gpus value"
like "$out" "--gpus: 'lots' is not a count" "bad option value named"

# A bad site file is an error of its own, with its place.
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
printf 'version: 1\nlimits:\n  l2_max_percent: 50\n  stirct: true\n' >"$t/site.yaml"
run "$GPUMEM" validate --site "$t/site.yaml" "$top_srcdir/policies/stream.yaml"
is "$rc" 1 "a bad site file fails validation"
like "$out" "site.yaml:4:3: error: unknown key 'limits.stirct' \(did you mean 'strict'\?\)" "site file error has its place"
printf 'version: 1\ndrain:\n  reason: "maintenance"\n' >"$t/site2.yaml"
run "$GPUMEM" validate --site "$t/site2.yaml"
like "$out" "site2.yaml:3:11: error: drain.reason must start with 'gpumem:'" "drain reason must be ours"
printf 'version: 1\nreferences:\n  NVIDIA H200:\n    triad: fast\n    raed: 1\n' >"$t/site3.yaml"
run "$GPUMEM" validate --site "$t/site3.yaml"
like "$out" "site3.yaml:4:12: error: references.NVIDIA H200.triad: 'fast' is not a number" "reference figures are numbers"
like "$out" "site3.yaml:5:5: error: unknown key 'references.NVIDIA H200.raed'" "reference metrics are known names"
printf 'version: 1\ndefaults:\n  mps:\n    daemon: job\nlimits:\n  mps_daemons: [none]\n' >"$t/site4.yaml"
run "$GPUMEM" validate --site "$t/site4.yaml"
like "$out" "defaults.mps.daemon 'job' is not in limits.mps_daemons" "site defaults must obey site limits"
done_testing
