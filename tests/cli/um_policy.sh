#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# unified_memory.placement (issue 17) through the gpumem CLI: the keys are
# validated with their place and a did-you-mean, the site can forbid or cap
# them, and the task environment carries them to libgpumem-um (v2 only when
# a placement is asked, so an older library still reads everything else).
. "$top_srcdir/tests/lib.sh"

t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
pol() { f=$t/$1; shift; printf 'version: 1\nunified_memory:\n' >"$f"; for l in "$@"; do printf '  %s\n' "$l" >>"$f"; done; }

pol good.yaml 'placement: stripe' 'gpu_fraction: 0.25' 'reserve: 2GiB' 'granularity: 4MiB'
run "$GPUMEM" validate "$t/good.yaml"
is "$rc" 0 "a stripe policy is valid"
run "$GPUMEM" env "$t/good.yaml"
like "$out" "GPUMEM_UM_ADVICE=v2;preferred=none;accessed_by=none;read_mostly=0;prefetch=none;min_bytes=1048576;placement=stripe;gpu_fraction=0.25;gpu_max=1;reserve=2147483648;granularity=4194304" \
	"env: GPUMEM_UM_ADVICE v2 with the placement"
pol auto.yaml 'placement: stripe' 'gpu_fraction: auto'
run "$GPUMEM" env "$t/auto.yaml"
like "$out" ";placement=stripe;gpu_fraction=auto;gpu_max=1;reserve=1073741824;granularity=2097152" \
	"auto: default reserve 1GiB, granularity 2MiB"
pol none.yaml 'preferred_location: cpu' 'accessed_by: [gpu]'
run "$GPUMEM" env "$t/none.yaml"
like "$out" "GPUMEM_UM_ADVICE=v1;preferred=cpu;accessed_by=gpu;" "no placement: v1, as before"
run "$GPUMEM" show "$t/good.yaml"
like "$out" "placement: stripe" "show: placement"
like "$out" "gpu_fraction: 0.25" "show: gpu_fraction"
like "$out" "granularity: 4MiB" "show: granularity"

# Bad values: one error each, at file:line:col, with a did-you-mean where one fits.
pol bad.yaml 'placement: strip' 'gpu_fraction: atuo' 'granularity: 3MiB' 'reserve: lots'
run "$GPUMEM" validate "$t/bad.yaml"
is "$rc" 1 "bad placement values fail validation"
like "$out" "bad.yaml:3:14: error: unified_memory.placement: 'strip' is not one of: none, stripe \(did you mean 'stripe'\?\)" "placement: strip"
like "$out" "bad.yaml:4:17: error: unified_memory.gpu_fraction: 'atuo' is neither auto nor a number in \[0, 1\] \(did you mean 'auto'\?\)" "gpu_fraction: atuo"
like "$out" "bad.yaml:5:16: error: unified_memory.granularity: 3MiB is not a power of two from 4KiB to 1GiB" "granularity: 3MiB"
like "$out" "bad.yaml:6:12: error: unified_memory.reserve: 'lots'" "reserve: lots"
pol bad2.yaml 'gpu_fraction: 1.5' 'granularity: 2GiB' 'placment: stripe' 'gpu_fraction2: 1'
run "$GPUMEM" validate "$t/bad2.yaml"
like "$out" "bad2.yaml:3:17: error: unified_memory.gpu_fraction: 1.5 is out of range \[0, 1\]" "gpu_fraction: 1.5"
like "$out" "bad2.yaml:4:16: error: unified_memory.granularity: 2GiB is not a power of two from 4KiB to 1GiB" "granularity above 1GiB"
like "$out" "bad2.yaml:5:3: error: unknown key 'unified_memory.placment' \(did you mean 'placement'\?\)" "placment"
pol bad3.yaml 'gpu_fraction: -0.1' 'granularity: [2MiB]'
run "$GPUMEM" validate "$t/bad3.yaml"
like "$out" "bad3.yaml:3:17: error: unified_memory.gpu_fraction: -0.1 is out of range" "gpu_fraction: -0.1"
like "$out" "bad3.yaml:4:16: error: unified_memory.granularity: expected a size, got a list" "granularity: a list"
pol conflict.yaml 'prefetch: gpu' 'placement: stripe'
run "$GPUMEM" validate "$t/conflict.yaml"
is "$rc" 1 "stripe with prefetch: gpu is an error"
like "$out" "conflict.yaml:4:14: error: unified_memory.placement: stripe sets the preferred location and the prefetch of each allocation it places itself: remove unified_memory.prefetch \(or set it to none\)" \
	"  at the placement key, naming the other"
pol ok2.yaml 'prefetch: none' 'read_mostly: false' 'placement: stripe' 'accessed_by: [cpu]'
run "$GPUMEM" validate "$t/ok2.yaml"
is "$rc" 0 "stripe beside prefetch: none, read_mostly: false, accessed_by: [cpu] is fine"

# The site: cap, floor, forbid.
printf 'version: 1\nlimits:\n  um_max_gpu_fraction: 0.5\n  um_min_reserve: 4GiB\n' >"$t/site.yaml"
pol big.yaml 'placement: stripe' 'gpu_fraction: 0.75' 'reserve: 1GiB'
run "$GPUMEM" env --site "$t/site.yaml" "$t/big.yaml"
like "$out" "unified_memory.gpu_fraction: 0.75 is above the site limit of 0.5: using 0.5" "site cap on gpu_fraction: a warning"
like "$out" "unified_memory.reserve: 1GiB is below the site minimum of 4GiB: using 4GiB" "site minimum reserve: a warning"
like "$out" ";gpu_fraction=0.5;gpu_max=0.5;reserve=4294967296;" "  and the task gets the capped values"
run "$GPUMEM" env --site "$t/site.yaml" "$t/auto.yaml"
like "$out" ";gpu_fraction=auto;gpu_max=0.5;reserve=4294967296;" "auto: the cap travels to the library"
printf 'version: 1\nlimits:\n  um_placements: [none]\n' >"$t/site2.yaml"
run "$GPUMEM" env --site "$t/site2.yaml" "$t/good.yaml"
like "$out" "unified_memory.placement: 'stripe' is not allowed on this site: using 'none'" "a site that forbids stripe: said"
like "$out" "GPUMEM_UM_ADVICE=v1;" "  and no placement reaches the task"
printf 'version: 1\nlimits:\n  um_placements: [none]\n  strict: true\n' >"$t/site3.yaml"
run "$GPUMEM" validate --site "$t/site3.yaml" "$t/good.yaml"
is "$rc" 1 "a strict site: forbidding is an error"
printf 'version: 1\nlimits:\n  sections: [l2, check]\n' >"$t/site4.yaml"
run "$GPUMEM" env --site "$t/site4.yaml" "$t/good.yaml"
like "$out" "section 'unified_memory' is not open to users on this site" "limits.sections closes the whole section"
unlike "$out" "GPUMEM_UM_ADVICE" "  no advice"
printf 'version: 1\nlimits:\n  um_placements: [none, strip]\n  um_max_gpu_fraction: 2\n' >"$t/site5.yaml"
run "$GPUMEM" validate --site "$t/site5.yaml"
like "$out" "site5.yaml:3:25: error: limits.um_placements: 'strip' is not one of: none, stripe \(did you mean 'stripe'\?\)" "site: bad um_placements"
like "$out" "site5.yaml:4:24: error: limits.um_max_gpu_fraction: 2 is out of range \[0, 1\]" "site: bad um_max_gpu_fraction"
printf 'version: 1\ndefaults:\n  unified_memory:\n    placement: stripe\nlimits:\n  um_placements: [none]\n' >"$t/site6.yaml"
run "$GPUMEM" validate --site "$t/site6.yaml"
like "$out" "defaults.unified_memory.placement 'stripe' is not in limits.um_placements" "site: a default it forbids"
done_testing
