#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/slurm/cgroup.sh on Slurm's cgroup/v2 (tests/slurm/cluster start
# --cgroup v2: IgnoreSystemd=yes, CgroupAutomount=yes, ConstrainDevices by
# eBPF).  Needs a cgroup2-only host; where cgroup v1 controllers are mounted
# (this development machine, most CI containers) it is skipped with the
# reason `cluster start` gives.  On a real GPU: tests/gpu/cgroup_gpu.sh.
GPUMEM_TEST_CGROUP=v2
. "$top_srcdir/tests/slurm/cgroup.sh"
