/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Slurm's two log calls, for unit tests that build plugin files without
 * Slurm: each line printed as a TAP comment and kept in last_log, so that
 * a test can assert what the plugin said.
 */
#ifndef GPUMEM_SLURM_LOG_H
#define GPUMEM_SLURM_LOG_H
#include <stdarg.h>
#include <stdio.h>
#include <slurm/spank.h>

static char last_log[8192];

static void slurm_log_keep(const char *kind, const char *fmt, va_list ap)
{
	vsnprintf(last_log, sizeof(last_log), fmt, ap);
	printf("# %s: %.300s\n", kind, last_log);
}

void slurm_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	slurm_log_keep("info", fmt, ap);
	va_end(ap);
}

void slurm_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	slurm_log_keep("error", fmt, ap);
	va_end(ap);
}
#endif
