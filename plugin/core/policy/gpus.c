/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GPU selection.  Two lists name a step's GPUs: the node's (SLURM_STEP_GPUS:
 * indices of the node's GPUs, what reports and logs name) and the tasks'
 * (CUDA_VISIBLE_DEVICES as Slurm set it).  With ConstrainDevices a task,
 * and every helper the plugin forks (they run in the step's devices cgroup
 * too), sees only its GPUs, renumbered from 0: Slurm then sets
 * CUDA_VISIBLE_DEVICES=0 for the job on GPU 1.  So helpers get the tasks'
 * list, reports the node's.  Entries are indices, GPU UUIDs (or prefixes),
 * MIG instances (MIG-<uuid>, or MIG-GPU-<uuid>/GI/CI before driver R470)
 * or PCI bus ids; we match probe output by any of them.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "env.h"
#include "gpus.h"

/* Comma-separated entries of buf into list; blanks trimmed, empty ones dropped. */
static int split_list(char *buf, char list[][64], int max)
{
	char *save = NULL, *tok;
	int n = 0;

	for (tok = strtok_r(buf, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save)) {
		size_t len;

		while (*tok == ' ')
			tok++;
		len = strlen(tok);
		while (len > 0 && tok[len - 1] == ' ')
			tok[--len] = '\0';
		if (len == 0)
			continue;
		/* Never cut a name: a cut UUID is a prefix of another. */
		snprintf(list[n++], 64, "%s", len < 64 ? tok : "?");
	}
	return n;
}

int gpumem_gpus_from_env(int (*get)(void *ctx, const char *name, char *buf, int len),
			 void *ctx, char list[][64], int max, const char **source)
{
	static const char *const vars[] = { GPUMEM_ENV_STEP_GPUS, GPUMEM_ENV_JOB_GPUS,
					     GPUMEM_ENV_VISIBLE };
	char buf[GPUMEM_GPU_LIST_MAX];

	*source = NULL;
	for (size_t v = 0; v < sizeof(vars) / sizeof(vars[0]); v++) {
		if (get(ctx, vars[v], buf, sizeof(buf)) != 0)
			continue;
		*source = vars[v];
		return split_list(buf, list, max);
	}
	return -1;
}

int gpumem_gpus_mps_client(const char *daemon, char step[][64], int n, char *out, size_t len)
{
	char buf[GPUMEM_GPU_LIST_MAX], d[GPUMEM_MAX_GPUS][64];
	size_t off = 0;
	int nd;

	snprintf(buf, sizeof(buf), "%s", daemon);
	nd = split_list(buf, d, GPUMEM_MAX_GPUS);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		int at = -1;

		for (int j = 0; j < nd && at < 0; j++)
			if (!strcmp(step[i], d[j]))
				at = j;
		if (at < 0 || off >= len)
			return -1;
		off += (size_t)snprintf(out + off, len - off, "%s%d", i ? "," : "", at);
	}
	return off < len ? 0 : -1;
}

/* s is a UUID body "8-4-4-4-12" hex (full: 1) or a prefix of one (0); -1 not one. */
static int uuid_body(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > 36)
		return -1;
	for (i = 0; i < len; i++) {
		int want_dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (want_dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
			return -1;
	}
	return len == 36;
}

/* "/GI/CI" with GI and CI small numbers. */
static int mig_suffix(const char *s)
{
	char *end;
	long gi, ci;

	if (*s != '/' || !isdigit((unsigned char)s[1]))
		return -1;
	gi = strtol(s + 1, &end, 10);
	if (*end != '/' || !isdigit((unsigned char)end[1]))
		return -1;
	ci = strtol(end + 1, &end, 10);
	return *end == '\0' && gi >= 0 && gi < 64 && ci >= 0 && ci < 64 ? 0 : -1;
}

/* [[DDDD]DDDD:]BB:DD.F, hex. */
static int pci_id(const char *s)
{
	unsigned dom, bus, dev, fn;
	int n = 0;

	if (sscanf(s, "%x:%x:%x.%x%n", &dom, &bus, &dev, &fn, &n) == 4 && s[n] == '\0')
		return strchr(s, ':') - s <= 8 && bus < 256 && dev < 32 && fn < 8 ? 0 : -1;
	n = 0;
	if (sscanf(s, "%x:%x.%x%n", &bus, &dev, &fn, &n) == 3 && s[n] == '\0')
		return bus < 256 && dev < 32 && fn < 8 ? 0 : -1;
	return -1;
}

int gpumem_gpu_kind(const char *id, char *parent, size_t plen)
{
	const char *slash;
	char *end;

	if (parent && plen)
		parent[0] = '\0';
	if (isdigit((unsigned char)id[0])) {
		long i = strtol(id, &end, 10);

		if (*end == '\0')
			return i >= 0 && i < 4096 ? GPUMEM_GPU_INDEX : GPUMEM_GPU_BAD;
		return pci_id(id) == 0 ? GPUMEM_GPU_PCI : GPUMEM_GPU_BAD;
	}
	if (strncasecmp(id, "MIG-GPU-", 8) == 0) {
		/* MIG-GPU-<GPU uuid>/GI/CI: an instance of the GPU named. */
		slash = strchr(id + 8, '/');
		if (!slash || uuid_body(id + 8, (size_t)(slash - id - 8)) != 1 || mig_suffix(slash) < 0)
			return GPUMEM_GPU_BAD;
		if (parent && plen)
			snprintf(parent, plen, "GPU-%.*s", (int)(slash - id - 8), id + 8);
		return GPUMEM_GPU_MIG;
	}
	if (strncasecmp(id, "MIG-", 4) == 0)
		return uuid_body(id + 4, strlen(id + 4)) == 1 ? GPUMEM_GPU_MIG : GPUMEM_GPU_BAD;
	if (strncasecmp(id, "GPU-", 4) == 0)
		return uuid_body(id + 4, strlen(id + 4)) >= 0 ? GPUMEM_GPU_UUID : GPUMEM_GPU_BAD;
	return pci_id(id) == 0 ? GPUMEM_GPU_PCI : GPUMEM_GPU_BAD;
}

int gpumem_gpus_for_tasks(int (*get)(void *ctx, const char *name, char *buf, int len),
			  void *ctx, const char *source, char node[][64], int n,
			  char task[][64], int max)
{
	int m = -1;

	if (n > max)
		n = max;
	/* The tasks' own list, when Slurm gave one that fits the node's. */
	if (source && strcmp(source, GPUMEM_ENV_VISIBLE) != 0 && n > 0) {
		char (*tmp)[64] = calloc((size_t)max, 64);
		char buf[GPUMEM_GPU_LIST_MAX];

		if (tmp == NULL)
			return -1;
		if (get(ctx, GPUMEM_ENV_VISIBLE, buf, sizeof(buf)) == 0)
			m = split_list(buf, tmp, max);
		for (int i = 0; i < m; i++)
			if (gpumem_gpu_kind(tmp[i], NULL, 0) == GPUMEM_GPU_BAD)
				m = -1;
		if (m == n)
			memcpy(task, tmp, (size_t)n * 64);
		free(tmp);
		if (m == n)
			return 1;
	}
	if (n > 0)
		memcpy(task, node, (size_t)n * 64);
	return 0;
}

/* "0000:3b:00.0" and "00000000:3B:00.0" -> "3b:00.0"; "3b:00.0" stays. */
static const char *bus_part(const char *id)
{
	const char *c1 = strchr(id, ':');

	return c1 && strchr(c1 + 1, ':') ? c1 + 1 : id;
}

static int matches(const char *want, int index, const char *uuid, const char *pci)
{
	char *end;
	long i = strtol(want, &end, 10);

	if (*want && *end == '\0')
		return i == index;
	if (strncasecmp(want, "GPU-", 4) == 0)
		return strncasecmp(want, uuid, strlen(want)) == 0;
	/* The probe prints a MIG instance's 16 bytes as "GPU-...", like CUDA's own UUID. */
	if (strncasecmp(want, "MIG-GPU-", 8) == 0)
		return 0;
	if (strncasecmp(want, "MIG-", 4) == 0)
		return strlen(uuid) > 4 && strcasecmp(want + 4, uuid + 4) == 0;
	/* PCI bus ids: compare without the domain, which comes in 4 or 8 digits. */
	return strcasecmp(bus_part(want), bus_part(pci)) == 0;
}

struct probed {
	int index;
	uint64_t l2, pmax;
	char uuid[64], pci[32], name[96];
};

/* One gpumem-probe line; 0 when it is a GPU line. */
static int probe_line(const char *l, struct probed *g)
{
	int off = 0;

	if (sscanf(l, "gpu %d %63s %31s %" SCNu64 " %" SCNu64 " %n", &g->index, g->uuid, g->pci,
		   &g->l2, &g->pmax, &off) != 5)
		return -1;
	snprintf(g->name, sizeof(g->name), "%s", l + off);
	return 0;
}

static void add_gpu(struct gpumem_node *node, const struct probed *p, int index)
{
	struct gpumem_gpu *g = &node->gpus[node->ngpus++];

	g->index = index;
	snprintf(g->uuid, sizeof(g->uuid), "%s", p->uuid);
	snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%s", p->pci);
	snprintf(g->name, sizeof(g->name), "%s", p->name);
	g->l2_bytes = p->l2;
	g->persisting_max_bytes = p->pmax;
}

int gpumem_gpus_match(const char *out, char list[][64], int n, struct gpumem_node *node)
{
	struct probed *all;
	int nall = 0;

	node->ngpus = 0;
	all = calloc(GPUMEM_MAX_GPUS, sizeof(*all));
	if (all == NULL)
		return -1;
	for (const char *line = out; line && *line && nall < GPUMEM_MAX_GPUS;) {
		const char *nl = strchr(line, '\n');
		char l[512];

		snprintf(l, sizeof(l), "%.*s", (int)(nl ? (size_t)(nl - line) : strlen(line)), line);
		line = nl ? nl + 1 : NULL;
		if (probe_line(l, &all[nall]) == 0)
			nall++;
	}
	/*
	 * Each entry of the step's list is the task's ordinal k; it names one
	 * GPU or none.  An ambiguous UUID prefix names none (CUDA refuses it
	 * too), so a list can never yield more GPUs than it has entries.
	 */
	for (int k = 0; k < (n < 0 ? nall : n) && node->ngpus < GPUMEM_MAX_GPUS; k++) {
		int found = -1, count = 0;

		if (n < 0) {
			add_gpu(node, &all[k], all[k].index);
			continue;
		}
		for (int i = 0; i < nall; i++)
			if (matches(list[k], all[i].index, all[i].uuid, all[i].pci)) {
				found = i;
				count++;
			}
		if (count == 1)
			add_gpu(node, &all[found], k);
	}
	free(all);
	return node->ngpus;
}
