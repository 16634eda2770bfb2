/*
 * GPU selection.  With device cgroups a task sees its GPUs renumbered from
 * 0, so an index means "the Nth GPU of the node in PCI order" only on the
 * node side: we match probe output (which uses PCI order) by index, UUID or
 * PCI bus id, and renumber in the order the step lists them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "gpus.h"

int gpumem_gpus_from_env(int (*get)(void *ctx, const char *name, char *buf, int len),
			 void *ctx, char list[][64], int max, const char **source)
{
	static const char *const vars[] = { "SLURM_STEP_GPUS", "SLURM_JOB_GPUS",
					     "CUDA_VISIBLE_DEVICES" };
	char buf[GPUMEM_GPU_LIST_MAX];

	*source = NULL;
	for (size_t v = 0; v < sizeof(vars) / sizeof(vars[0]); v++) {
		char *save = NULL, *tok;
		int n = 0;

		if (get(ctx, vars[v], buf, sizeof(buf)) != 0)
			continue;
		*source = vars[v];
		for (tok = strtok_r(buf, ",", &save); tok && n < max;
		     tok = strtok_r(NULL, ",", &save)) {
			while (*tok == ' ')
				tok++;
			if (*tok == '\0')
				continue;
			snprintf(list[n++], 64, "%s", tok);
		}
		return n;
	}
	return -1;
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
	/* PCI bus ids: compare without the domain, which comes in 4 or 8 digits. */
	return strcasecmp(bus_part(want), bus_part(pci)) == 0;
}

int gpumem_gpus_match(const char *out, char list[][64], int n, struct gpumem_node *node)
{
	const char *line = out;

	node->ngpus = 0;
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		char l[512], uuid[64], pci[32], name[96] = "";
		uint64_t l2, pmax;
		int idx, off = 0;
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		snprintf(l, sizeof(l), "%.*s", (int)len, line);
		line = nl ? nl + 1 : NULL;
		if (sscanf(l, "gpu %d %63s %31s %" SCNu64 " %" SCNu64 " %n", &idx, uuid, pci, &l2,
			   &pmax, &off) != 5)
			continue;
		snprintf(name, sizeof(name), "%s", l + off);
		for (int k = 0; k < (n < 0 ? 1 : n); k++) {
			struct gpumem_gpu *g;

			if (n >= 0 && !matches(list[k], idx, uuid, pci))
				continue;
			if (node->ngpus >= GPUMEM_MAX_GPUS)
				return -1;
			g = &node->gpus[node->ngpus++];
			g->index = n < 0 ? idx : k;
			snprintf(g->uuid, sizeof(g->uuid), "%s", uuid);
			snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%s", pci);
			snprintf(g->name, sizeof(g->name), "%s", name);
			g->l2_bytes = l2;
			g->persisting_max_bytes = pmax;
			break;
		}
	}
	return node->ngpus;
}
