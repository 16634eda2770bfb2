/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The names of the files in state_dir and mps_dir (statefiles.h: the
 * rule for their node and host suffixes).  Names only: opening, reading
 * and writing them safely is statedir.c's and mps.c's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include "statefiles.h"
#include "core_base.h"

/* snprintf that says whether it fit: 0, or -1 (NAME then holds the cut text). */
static int fit(char *name, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(name, len, fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < len ? 0 : -1;
}

void gpumem_sf_host(char *host, size_t len)
{
	if (len == 0)
		return;
	host[0] = '\0';
	if (gethostname(host, len - 1) < 0)
		host[0] = '\0';
	host[len - 1] = '\0';
	gpumem_safe_name(host);
}

int gpumem_sf_job(char *name, size_t len, enum gpumem_sf_kind kind, unsigned job,
		  const char *node)
{
	char where[65] = "";
	int by_node = kind == GPUMEM_SF_SAMPLE || kind == GPUMEM_SF_PROF ||
		(kind == GPUMEM_SF_REC && node != NULL);

	if (by_node)
		snprintf(where, sizeof(where), "%s", node ? node : "");
	else
		gpumem_sf_host(where, sizeof(where));
	gpumem_safe_name(where);
	switch (kind) {
	case GPUMEM_SF_REC: return fit(name, len, "job%u.%s.rec", job, where);
	case GPUMEM_SF_L2: return fit(name, len, "job%u.%s.l2", job, where);
	case GPUMEM_SF_MPS: return fit(name, len, "mps.%u.%s", job, where);
	case GPUMEM_SF_SAMPLE: return fit(name, len, "sample.%u.%s", job, where);
	case GPUMEM_SF_PROF: return fit(name, len, "prof.%u.%s", job, where);
	}
	return -1;
}

int gpumem_sf_gpu(char *name, size_t len, const char *kind, const char *node, const char *gpu)
{
	int rv = fit(name, len, "%s.%s.%s", kind, node ? node : "", gpu ? gpu : "all");

	gpumem_safe_name(name);
	return rv;
}

int gpumem_sf_tmp(char *tmp, size_t len, const char *name)
{
	return fit(tmp, len, ".%s.%d.tmp", name, (int)getpid());
}

int gpumem_mps_job_name(char *name, size_t len, unsigned job)
{
	return fit(name, len, "job%u", job);
}

int gpumem_mps_path(char *path, size_t len, const char *base, unsigned job, const char *sub)
{
	char name[32];

	gpumem_mps_job_name(name, sizeof(name), job);
	return sub ? fit(path, len, "%s/%s/%s", base, name, sub) : fit(path, len, "%s/%s", base, name);
}

int gpumem_mps_nomps_path(char *path, size_t len, const char *base)
{
	return fit(path, len, "%s/%s", base, GPUMEM_MPS_NOMPS);
}

int gpumem_sf_check(char *name, size_t len, const char *kind)
{
	char host[65];

	gpumem_sf_host(host, sizeof(host));
	return fit(name, len, "check.%s.%s", host, kind);
}
