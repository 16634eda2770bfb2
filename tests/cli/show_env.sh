#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# gpumem show / env: merging, clamping with warnings, named policies and the
# environment each example policy gives a task.
. "$top_srcdir/tests/lib.sh"
site="$top_srcdir/etc/gpumem.yaml"
pol="$top_srcdir/policies"
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
H200="--gpus 1 --l2-bytes 62914560 --persisting-max 39321600"

run "$GPUMEM" env --site "$site" $H200 "$pol/persist.yaml"
is "$out" "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=18" "persist.yaml: L2 limit 18%, below the cost"
run "$GPUMEM" env --site "$site" $H200 "$pol/stream.yaml"
is "$out" "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=0" "stream.yaml: no set-aside"
run "$GPUMEM" env --site "$site" --gpus 2 "$pol/mps-half.yaml"
like "$out" "^CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50$" "mps-half.yaml: active thread percentage"
like "$out" "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=40960M,1=40960M" "mps-half.yaml: pinned limit per GPU, in MiB"
like "$out" "CUDA_MPS_PIPE_DIRECTORY=" "mps-half.yaml: private MPS pipe directory"
run "$GPUMEM" env --site "$site" --um-library /opt/gpumem/libgpumem-um.so "$pol/zerocopy.yaml"
like "$out" "GPUMEM_UM_ADVICE=v1;preferred=cpu;accessed_by=gpu;read_mostly=0;prefetch=none;min_bytes=1048576" "zerocopy.yaml: advice"
like "$out" "LD_PRELOAD=/opt/gpumem/libgpumem-um.so" "zerocopy.yaml: the installed library, preloaded"
run "$GPUMEM" env --site "$site" --um-library /opt/gpumem/libgpumem-um.so "$pol/checked.yaml"
is "$out" "" "checked.yaml: no environment (checks only)"

# Clamps: the site caps L2 at 50%, the GPU model's cost at 18%, the GPU at 62%.
printf 'version: 1\nl2:\n  persisting_limit: 75%%\n' >"$t/greedy.yaml"
run "$GPUMEM" env --site "$site" $H200 --gpu-model "NVIDIA H200" "$t/greedy.yaml"
like "$out" "greedy.yaml: warning: l2.persisting_limit: 75% is above the site limit of 50%: using 50%" "site clamp warns with key, asked value and limit"
like "$out" "warning: 50% of L2 would cost this GPU \(NVIDIA H200\) 27% of its triad bandwidth \(31% of its write bandwidth\): capped at 18%" "then the H200's cap, with what 50% would cost"
like "$out" "PERCENTAGE_LIMIT=18$" "both applied: 18%"
printf 'version: 1\nlimits:\n  l2_max_percent: 100\n  l2_model_max_percent:\n    other: 100\n' >"$t/open.yaml"
run "$GPUMEM" env --site "$t/open.yaml" $H200 "$t/greedy.yaml"
like "$out" "warning: 75% of L2 is above what this GPU allows for persisting lines \(persistingL2CacheMaxSize = 62% of L2" "GPU clamp warns"
like "$out" "PERCENTAGE_LIMIT=62$" "GPU clamp: 62% on an H200 (never a value that fails context creation)"
run "$GPUMEM" env --site "$t/open.yaml" "$t/greedy.yaml"
like "$out" "PERCENTAGE_LIMIT=62$" "no GPU information: the Hopper maximum"
printf 'version: 1\nl2:\n  persisting_limit: 30MiB\n' >"$t/bytes.yaml"
run "$GPUMEM" env --site "$t/open.yaml" $H200 "$t/bytes.yaml"
is "$out" "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=50" "30 MiB of a 60 MiB L2 is 50%"
run "$GPUMEM" env --site "$t/open.yaml" "$t/bytes.yaml"
like "$out" "needs the GPU's L2 size, and this node reported no GPU: not applied" "bytes without GPU: skipped, said"

printf 'version: 1\nl2:\n  persisting_limit: 60MiB\n' >"$t/bytes60.yaml"
run "$GPUMEM" env --site "$site" $H200 "$t/bytes60.yaml"
like "$out" "62914560 bytes is 100.0% of this GPU's L2, above the site limit of 50%: using 50%" "a limit in bytes cannot escape the site's percentage cap"
like "$out" "warning: 50% of L2 on a GPU model not known here .*: capped at 18%, gpumem's cap for GPU models it has not measured" "... nor the cap per GPU model"
like "$out" "PERCENTAGE_LIMIT=18$" "... clamped to both"
run "$GPUMEM" show "$top_srcdir/policies/stream.yaml" "$top_srcdir/policies/persist.yaml"
is "$rc" 64 "show with two policies: a usage error, not a crash"

printf 'version: 1\nmps:\n  active_thread_percentage: 5\n  pinned_device_mem_limit: 100GiB\n  daemon: job\ncheck:\n  on_fail: drain\n' >"$t/mps.yaml"
printf 'version: 1\nlimits:\n  mps_min_active_thread_percentage: 10\n  mps_max_pinned_device_mem_limit: 80GiB\n  mps_daemons: [none, site]\n' >"$t/site-mps.yaml"
run "$GPUMEM" show --site "$t/site-mps.yaml" "$t/mps.yaml"
like "$out" "mps.active_thread_percentage: 5 is outside the site range 10..100: using 10" "MPS share clamp"
like "$out" "mps.pinned_device_mem_limit: 100GiB is above the site limit of 80GiB: using 80GiB" "pinned clamp"
like "$out" "mps.daemon: 'job' is not allowed on this site: using 'none'" "daemon clamp"
like "$out" "check.on_fail: 'drain' is not allowed on this site: using 'warn'" "on_fail clamp"
like "$out" "active_thread_percentage: 10" "effective share shown"

printf 'version: 1\nlimits:\n  strict: true\n  l2_max_percent: 25\n' >"$t/strict.yaml"
run "$GPUMEM" show --site "$t/strict.yaml" "$t/greedy.yaml"
is "$rc" 1 "strict site: a clamp is an error"
like "$out" "greedy.yaml: error: l2.persisting_limit: 75% is above the site limit of 25%" "strict error names key and limit"

printf 'version: 1\nlimits:\n  sections: [check]\n' >"$t/closed.yaml"
run "$GPUMEM" show --site "$t/closed.yaml" "$pol/mps-half.yaml"
like "$out" "warning: section 'mps' is not open to users on this site" "closed section: warned"
like "$out" "daemon: none" "closed section: site settings kept"

# Site defaults apply without a policy; user keys overlay them.
printf 'version: 1\ndefaults:\n  l2:\n    persisting_limit: 10%%\n  check:\n    after: true\n' >"$t/defaults.yaml"
run "$GPUMEM" env --site "$t/defaults.yaml" $H200
is "$out" "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=10" "site default without a policy"
run "$GPUMEM" show --site "$t/defaults.yaml" "$pol/persist.yaml"
like "$out" "persisting_limit: 18%" "user value overlays the default"
like "$out" "after: true" "untouched default kept"

# Named policies come from the site's policy_dir; names cannot escape it.
printf 'version: 1\npolicy_dir: %s\n' "$pol" >"$t/named.yaml"
run "$GPUMEM" env --site "$t/named.yaml" $H200 persist
is "$out" "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=18" "named policy 'persist'"
run "$GPUMEM" env --site "$t/named.yaml" 'bad*name'
like "$out" "is neither a file path nor a policy name" "bad policy name refused"
run "$GPUMEM" env --site "$t/named.yaml" nosuch
like "$out" "nosuch.yaml: error: cannot open" "missing named policy"
run "$GPUMEM" env --site "$site" persist
like "$out" "policies/persist.yaml|cannot open" "named policy with the example site resolves into its policy_dir"

# The cap on the L2 set-aside per GPU model (doc/admin/lifecycle.md, "The L2 set-aside's cost"):
# show and validate say it, with what the asked share would cost, off the node.
printf 'version: 1\nl2:\n  persisting_limit: 50%%\n' >"$t/half.yaml"
run "$GPUMEM" show --site "$site" --gpu-model "NVIDIA H200" "$t/half.yaml"
is "$rc" 0 "show of 50% for an H200: shown"
like "$out" "half.yaml: warning: l2.persisting_limit: 50% of L2 would cost this GPU \(NVIDIA H200\) 27% of its triad bandwidth \(31% of its write bandwidth\): capped at 18%$" "... with the cap and what 50% would cost"
like "$out" "^  persisting_limit: 18%" "... the capped value shown"
like "$out" "^# and to the L2 set-aside's cap for NVIDIA H200$" "... and for which model"
run "$GPUMEM" validate --site "$site" --gpu-model "nvidia h200" "$t/half.yaml"
is "$rc" 0 "validate of 50% for an H200: valid (a cap is a warning)"
like "$out" "half.yaml: warning: l2.persisting_limit: 50% of L2 would cost this GPU \(NVIDIA H200\) 27% of its triad bandwidth" "... and says the cap and its cost"
run "$GPUMEM" validate "$t/half.yaml"
like "$out" "half.yaml: warning: l2.persisting_limit: 50% of L2 on a GPU model not known here \(it would cost an NVIDIA H200 27% of its triad bandwidth \(31% of its write bandwidth\)\): capped at 18%, gpumem's cap for GPU models it has not measured" "no model named, no site: the cap for unmeasured models"
run "$GPUMEM" show --gpu-model "NVIDIA H100 80GB HBM3" "$t/half.yaml"
like "$out" "50% of L2 on this GPU \(NVIDIA H100 80GB HBM3\), whose set-aside cost gpumem has not measured .*capped at 18%" "an unmeasured model: the conservative cap, named"
printf 'version: 1\nlimits:\n  l2_model_max_percent:\n    NVIDIA H200: 40%%\n    other: 30\n' >"$t/raise.yaml"
run "$GPUMEM" show --site "$t/raise.yaml" --gpu-model "NVIDIA H200" "$t/half.yaml"
like "$out" "50% of L2 would cost this GPU \(NVIDIA H200\) 27% of its triad bandwidth \(31% of its write bandwidth\): capped at 40%, the site's cap for it \(limits.l2_model_max_percent\)" "a site key raises the H200's cap"
like "$out" "^  persisting_limit: 40%" "... to 40%"
run "$GPUMEM" env --site "$t/raise.yaml" --gpus 1 --gpu-model "Some GPU" "$t/half.yaml"
like "$out" "capped at 30%, the site's cap for GPU models it does not name \(limits.l2_model_max_percent.other\)" "... and the one for other models"
like "$out" "PERCENTAGE_LIMIT=30$" "... applied"
printf 'version: 1\ndefaults:\n  l2:\n    persisting_limit: 40%%\n' >"$t/sitedef.yaml"
run "$GPUMEM" validate --site "$t/sitedef.yaml" --gpu-model "NVIDIA H200"
like "$out" "sitedef.yaml: warning: l2.persisting_limit: 40% of L2 would cost this GPU \(NVIDIA H200\) 20% of its triad bandwidth \(31% of its write bandwidth\): capped at 18%" "validate of a site whose default is above the cap: said"
printf 'version: 1\nl2:\n  persisting_limit: 15%%\n' >"$t/small.yaml"
run "$GPUMEM" validate --gpu-model "NVIDIA H200" "$t/small.yaml"
unlike "$out" "warning" "15% is under the cap: nothing said"
run "$GPUMEM" show --gpu-model "" "$t/half.yaml"
is "$rc" 64 "--gpu-model '': a usage error"

run "$GPUMEM" show --json --site "$site" "$pol/zerocopy.yaml"
like "$out" '"unified_memory": \{"preferred_location": "cpu", "accessed_by": \["gpu"\]' "show --json"
done_testing
