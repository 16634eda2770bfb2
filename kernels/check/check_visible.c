/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-check's narrowing of what CUDA sees to the GPUs it tests, before
 * cuInit: the driver's start costs a share for every GPU it can see, so
 * `--devices 0` on a node of
 * eight must not start eight.  Only --devices lists made of CUDA ordinals
 * are narrowed: CUDA_VISIBLE_DEVICES becomes those entries of the caller's
 * own CUDA_VISIBLE_DEVICES (or those ordinals where it is unset), and each
 * device keeps the number the caller gave it (gpumem_check_device.index)
 * in the table and the report.  UUID and PCI selectors, and ordinals past
 * what the node or the caller's list holds, leave the environment alone
 * (the old path: every visible GPU is started, and a selector matching
 * none is a usage error as before).  The plugin narrows for the check
 * itself (CUDA_VISIBLE_DEVICES = the job's GPUs), so it never passes
 * --devices.  The warm server (check_serve.c), which sees every GPU, reads
 * a request's list as CUDA would read that variable
 * (gpumem_check_io_ordinals).
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "core_policy.h"

#define CVD GPUMEM_ENV_VISIBLE

/* GPU device nodes present (/dev/nvidia0..63): how many ordinals there can be. */
static int dev_nodes(void)
{
	char path[32];
	int i, n = 0;

	for (i = 0; i < 64; i++) {
		snprintf(path, sizeof(path), "/dev/nvidia%d", i);
		if (access(path, F_OK) == 0)
			n++;
	}
	return n;
}

/*
 * Entry K of the comma list LIST (blanks around it dropped) into OUT;
 * 0, or -1 when LIST has no entry K or it does not fit.
 */
static int list_entry(const char *list, int k, char *out, size_t len)
{
	const char *p = list, *c, *e;

	for (; k > 0 && p; k--) {
		c = strchr(p, ',');
		p = c ? c + 1 : NULL;
	}
	if (!p)
		return -1;
	while (*p == ' ' || *p == '\t')
		p++;
	c = strchr(p, ',');
	e = c ? c : p + strlen(p);
	while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (e == p || (size_t)(e - p) >= len)
		return -1;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
	return 0;
}

int gpumem_check_visible_narrow(struct gpumem_check_args *a)
{
	const char *cvd = getenv(CVD);
	char list[4096], ent[128];
	int ord[GPUMEM_CHECK_MAX_DEVICES], n = 0, i, j, have;
	size_t off = 0;

	a->nnarrow = 0;
	if (!a->nsel)
		return 0;
	have = cvd ? -1 : dev_nodes();
	for (i = 0; i < a->nsel; i++) {
		int o = a->sel[i].ordinal, dup = 0;

		if (a->sel[i].kind != GPUMEM_CHECK_SEL_ORDINAL)
			return 0;
		if (cvd ? list_entry(cvd, o, ent, sizeof(ent)) < 0 : o >= have)
			return 0;
		for (j = 0; j < n && !dup; j++)
			dup = ord[j] == o;
		if (!dup)
			ord[n++] = o;
	}
	/* In the caller's order of numbers: new ordinal J is the Jth smallest. */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && ord[j - 1] > ord[j]; j--) {
			int t = ord[j];

			ord[j] = ord[j - 1];
			ord[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		if (cvd)
			list_entry(cvd, ord[i], ent, sizeof(ent));
		else
			snprintf(ent, sizeof(ent), "%d", ord[i]);
		if (off + strlen(ent) + 2 > sizeof(list))
			return 0;
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", i ? "," : "", ent);
	}
	if (setenv(CVD, list, 1) != 0)
		return 0;
	memcpy(a->narrow_index, ord, (size_t)n * sizeof(ord[0]));
	a->nnarrow = n;
	return n;
}

int gpumem_check_visible_index(const struct gpumem_check_args *a, int cuda_ordinal)
{
	if (a->nnarrow && cuda_ordinal >= 0 && cuda_ordinal < a->nnarrow)
		return a->narrow_index[cuda_ordinal];
	return cuda_ordinal;
}

int gpumem_check_io_ordinals(struct gpumem_check_io *io, int cuda_count)
{
	int k;

	for (k = 0; k < io->nord && io->ordinals[k] >= 0 && io->ordinals[k] < cuda_count; k++)
		;
	io->nord = k;
	return k;
}
