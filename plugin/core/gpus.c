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
