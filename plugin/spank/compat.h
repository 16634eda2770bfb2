/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What gpumem.so knows about the Slurm series it is built against, in one
 * place (no #if on Slurm versions elsewhere).  Tested: 22.05 (Debian 12),
 * 24.11 (Debian 13) and 26.05 (Debian forky; tests/slurm/run --slurm
 * SERIES); the plugin builds with -Werror against each spank.h unchanged.
 * Between them spank.h only gained spank_prepend_task_argv() (23.11), which
 * gpumem does not use, and slurm_spank_init_failure_mode (25.05, below).  Behaviour
 * that differs is the caller's, not the API's: through 24.11 only a negative
 * return fails a callback, and only for a `required` plugin (25.05: any
 * non-zero), so every callback fails with GPUMEM_SPANK_FAIL (-1), which all
 * of them read as failure.  Slurm loads a plugin only into the major.minor it
 * was built for ("spank: ...: Incompatible plugin version"; doc/admin/slurm.md).
 */
#ifndef GPUMEM_SPANK_COMPAT_H
#define GPUMEM_SPANK_COMPAT_H
#include <slurm/spank.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurm_version.h>

/* SLURM_VERSION_NUMBER is at least MAJOR.MINOR. */
#define GPUMEM_SLURM_AT_LEAST(major, minor) \
	(SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(major, minor, 0))

#if !GPUMEM_SLURM_AT_LEAST(22, 5)
#error "gpumem needs Slurm 22.05 or later (slurm/spank.h of an older series found)"
#endif

/* The failure return every series counts as failure. */
#define GPUMEM_SPANK_FAIL (-1)
/* The plugin may say what a failing slurm_spank_init costs (25.05 and later). */
#define GPUMEM_HAVE_INIT_FAILURE_MODE GPUMEM_SLURM_AT_LEAST(25, 5)
/* spank_prepend_task_argv() exists (23.11 and later). */
#define GPUMEM_HAVE_PREPEND_TASK_ARGV GPUMEM_SLURM_AT_LEAST(23, 11)
#endif
