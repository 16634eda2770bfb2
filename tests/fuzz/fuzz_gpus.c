/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the step's GPU list and the probe output (gpus.c).
 *
 * slurmstepd (root) reads the GPU list from the job's environment, and
 * CUDA_VISIBLE_DEVICES there is the user's to set; gpumem-probe's output
 * comes from the driver.  Input layout: byte 0 picks which of the three
 * variables are set (bit 0 SLURM_STEP_GPUS, 1 SLURM_JOB_GPUS, 2
 * CUDA_VISIBLE_DEVICES), the bytes up to the first NUL are their value,
 * the rest is the probe output.
 */
#include "fuzz.h"
#include "core_policy.h"

struct fake_env {
	unsigned which;
	const char *value;
};

/* As spank_getenv: the value cut to the buffer, 0 if set, -1 if not. */
static int fake_get(void *ctx, const char *name, char *buf, int len)
{
	const struct fake_env *e = ctx;
	int bit = !strcmp(name, "SLURM_STEP_GPUS") ? 1 : !strcmp(name, "SLURM_JOB_GPUS") ? 2 :
		!strcmp(name, "CUDA_VISIBLE_DEVICES") ? 4 : 0;

	if (!(e->which & (unsigned)bit))
		return -1;
	snprintf(buf, (size_t)len, "%s", e->value);
	return 0;
}

static struct gpumem_policy policy;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* A percentage limit: whatever the GPUs say, the task gets at most 50. */
	fuzz_parse_fixed("version: 1\nl2:\n  persisting_limit: 50%\nmps:\n"
			 "  pinned_device_mem_limit: 1GiB\nunified_memory: {}\n", &policy);
	return 0;
}

/* What gpumem-probe prints for two GPUs (see plugin/probe/probe.c). */
static const char real_probe[] =
	"gpu 0 GPU-aaaaaaaa-1111-2222-3333-444444444444 00000000:19:00.0 62914560 39321600 "
	"NVIDIA H200\n"
	"gpu 1 GPU-aaaabbbb-1111-2222-3333-444444444444 00000000:3B:00.0 52428800 32768000 "
	"NVIDIA H100 80GB HBM3\n";

static void check_match(const char *probe, char list[][64], int n, int unique)
{
	struct gpumem_node node;
	int ngpus;

	memset(&node, 0, sizeof(node));
	ngpus = gpumem_gpus_match(probe, list, n, &node);
	FUZZ_CHECK(ngpus == -1 || (ngpus >= 0 && ngpus == node.ngpus), "%d GPUs, node %d",
		   ngpus, node.ngpus);
	FUZZ_CHECK(node.ngpus >= 0 && node.ngpus <= GPUMEM_MAX_GPUS, "node has %d GPUs",
		   node.ngpus);
	for (int i = 0; i < node.ngpus; i++) {
		const struct gpumem_gpu *g = &node.gpus[i];

		FUZZ_CHECK(memchr(g->uuid, 0, sizeof(g->uuid)) &&
			   memchr(g->pci_bus_id, 0, sizeof(g->pci_bus_id)) &&
			   memchr(g->name, 0, sizeof(g->name)), "unterminated GPU %d", i);
		/* Numbered as the task sees them, from 0 in the order of the list. */
		if (n >= 0)
			FUZZ_CHECK(g->index >= 0 && g->index < n, "GPU %d has ordinal %d of %d", i,
				   g->index, n);
#ifdef FUZZ_TOLERATE_GPU_UUID_PREFIX
		unique = 0;
#endif
		for (int j = 0; unique && n >= 0 && j < i; j++)
			FUZZ_CHECK(node.gpus[j].index != g->index,
				   "list entry %d ('%s') matched GPUs %d and %d", g->index,
				   list[g->index], j, i);
	}
	if (ngpus >= 0) {
		node.um_library = "/opt/gpumem/libgpumem-um.so";
		fuzz_check_env(&policy, &node, 50);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char list[GPUMEM_MAX_GPUS][64], *value, *probe;
	struct fake_env env;
	const char *src;
	const uint8_t *nul;
	size_t vlen, total = 0;
	int n;

	if (size < 1)
		return 0;
	env.which = data[0] & 7;
	data++;
	size--;
	nul = memchr(data, 0, size);
	vlen = nul ? (size_t)(nul - data) : size;
	value = strndup((const char *)data, vlen);
	probe = nul ? strndup((const char *)nul + 1, size - vlen - 1) : strdup("");
	FUZZ_CHECK(value && probe, "out of memory");
	env.value = value;

	n = gpumem_gpus_from_env(fake_get, &env, list, GPUMEM_MAX_GPUS, &src);
	FUZZ_CHECK(n >= -1 && n <= GPUMEM_MAX_GPUS, "%d entries", n);
	FUZZ_CHECK((n < 0) == (env.which == 0), "%d entries with variables 0x%x", n, env.which);
	for (int i = 0; i < n; i++) {
		size_t l = strnlen(list[i], sizeof(list[i]));

		FUZZ_CHECK(l > 0 && l < sizeof(list[i]), "entry %d of length %zu", i, l);
		FUZZ_CHECK(list[i][0] != ' ' && !strchr(list[i], ','), "entry '%s'", list[i]);
		total += l + (i ? 1 : 0);
	}
	/*
	 * the plugin joins the entries back with commas into a buffer of
	 * GPUMEM_GPU_LIST_MAX bytes (the MPS daemon's device list): they must
	 * fit, or its snprintf offsets run past the buffer.
	 */
	FUZZ_CHECK(total < GPUMEM_GPU_LIST_MAX, "joined list of %zu bytes", total);

	/* The fuzzed probe output: memory safety and sane fields. */
	check_match(probe, list, n, 0);
	/*
	 * The real probe's output (one line per GPU, each index, UUID and bus
	 * id once): each entry of the list now names at most one GPU.
	 */
	check_match(real_probe, list, n, 1);
	free(value);
	free(probe);
	return 0;
}
