/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The task environment, the UM advice string and GPU matching. */
#include <stdlib.h>
#include <string.h>
#include "core_policy.h"
#include "tap.h"

static const char *env_get(const struct gpumem_env *e, const char *name)
{
	for (int i = 0; i < e->n; i++)
		if (!strcmp(e->var[i].name, name))
			return e->var[i].value;
	return NULL;
}

struct fakeenv { const char *names[4], *values[4]; };

static int fake_get(void *ctx, const char *name, char *buf, int len)
{
	struct fakeenv *f = ctx;

	for (int i = 0; i < 4 && f->names[i]; i++)
		if (!strcmp(f->names[i], name)) {
			snprintf(buf, (size_t)len, "%s", f->values[i]);
			return 0;
		}
	return -1;
}

/*
 * The one builder of a helper's environment: PATH alone to begin with,
 * then NAME=VALUE in order; a value that would be cut, or one too many, is
 * refused and not added (never half a GPU list).
 */
static void helper_env(void)
{
	struct gpumem_henv e;
	char *const *envp;
	char big[5000];
	int n = 0, i;

	gpumem_henv_init(&e);
	envp = gpumem_henv_envp(&e);
	ok(envp[0] && !strcmp(envp[0], "PATH=/usr/bin:/bin") && envp[1] == NULL,
	   "a helper's environment: PATH=/usr/bin:/bin alone");
	is_int(gpumem_henv_set(&e, GPUMEM_ENV_MPS_PIPE, "%s", "/run/gpumem-mps/nomps"), 0,
	       "a variable added");
	is_int(gpumem_henv_set(&e, GPUMEM_ENV_MAX_CONN, "%d", 1), 0, "a number added");
	envp = gpumem_henv_envp(&e);
	ok(envp[1] && !strcmp(envp[1], "CUDA_MPS_PIPE_DIRECTORY=/run/gpumem-mps/nomps") &&
	   envp[2] && !strcmp(envp[2], "CUDA_DEVICE_MAX_CONNECTIONS=1") && envp[3] == NULL,
	   "... in order, NULL-ended");
	is_str(gpumem_henv_get(&e, GPUMEM_ENV_MPS_PIPE), "/run/gpumem-mps/nomps", "read back by name");
	ok(gpumem_henv_get(&e, "CUDA_MPS") == NULL, "a prefix of a name is no name");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	is_int(gpumem_henv_set(&e, GPUMEM_ENV_VISIBLE, "%s", big), -1, "a value that would be cut: refused");
	ok(gpumem_henv_get(&e, GPUMEM_ENV_VISIBLE) == NULL, "... and not added");
	for (i = 0; i < 10; i++)
		n += gpumem_henv_set(&e, GPUMEM_ENV_NODENAME, "n%d", i) == 0;
	is_int(n, GPUMEM_HENV_MAX - 3, "no more than GPUMEM_HENV_MAX variables");
	envp = gpumem_henv_envp(&e);
	ok(envp[GPUMEM_HENV_MAX] == NULL, "... still NULL-ended");
}

int main(void)
{
	struct gpumem_diags d = { 0 };
	struct gpumem_policy p;
	struct gpumem_node node;
	struct gpumem_env env;
	char buf[256], list[8][64];
	const char *src;
	const char *probe_out =
		"gpu 0 GPU-aaaaaaaa-0000-0000-0000-000000000000 00000000:19:00.0 62914560 39321600 NVIDIA H200\n"
		"gpu 1 GPU-bbbbbbbb-0000-0000-0000-000000000000 00000000:3B:00.0 52428800 32768000 NVIDIA H100 80GB HBM3\n";
	struct fakeenv fe = { { "CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS" }, { "0", "1" } };
	struct fakeenv fe2 = { { "CUDA_VISIBLE_DEVICES" }, { "GPU-bbbbbbbb,GPU-aaaaaaaa" } };
	struct fakeenv none = { { NULL }, { NULL } };
	int n;

	memset(&node, 0, sizeof(node));
	n = gpumem_gpus_from_env(fake_get, &fe, list, 8, &src);
	is_int(n, 1, "SLURM_STEP_GPUS wins over CUDA_VISIBLE_DEVICES");
	is_str(src, "SLURM_STEP_GPUS", "source named");
	is_int(gpumem_gpus_match(probe_out, list, n, &node), 1, "matched by index");
	is_str(node.gpus[0].name, "NVIDIA H100 80GB HBM3", "the right GPU");
	is_int(node.gpus[0].index, 0, "renumbered as the task sees it");
	n = gpumem_gpus_from_env(fake_get, &fe2, list, 8, &src);
	is_int(gpumem_gpus_match(probe_out, list, n, &node), 2, "matched by UUID prefix");
	is_str(node.gpus[0].name, "NVIDIA H100 80GB HBM3", "the step's order: GPU b first");
	is_int(node.gpus[1].index, 1, "GPU a is the task's ordinal 1");
	strcpy(list[0], "GPU-");
	is_int(gpumem_gpus_match(probe_out, list, 1, &node), 0,
	       "an ambiguous UUID prefix names no GPU (CUDA refuses it too)");
	is_int(gpumem_gpus_from_env(fake_get, &none, list, 8, &src), -1, "no variable: unknown");
	strcpy(list[0], "3B:00.0");
	is_int(gpumem_gpus_match(probe_out, list, 1, &node), 1, "PCI bus id without domain");

	/* L2: the smallest maximum of the step's GPUs bounds the percentage. */
	gpumem_policy_parse("version: 1\nl2:\n  persisting_limit: 70%\n", strlen("version: 1\nl2:\n  persisting_limit: 70%\n"), "p", &p, &d);
	gpumem_gpus_match(probe_out, list, -1, &node);
	is_int(gpumem_policy_env(&p, &node, &env, &d), 0, "env");
	is_str(env_get(&env, GPUMEM_ENV_L2_PCT), "18", "70%% on an H200 and an H100: their cap, 18%%");
	like(d.head ? d.head->msg : "", "70% of L2 would cost this GPU (NVIDIA H200) 60% of its triad "
	     "bandwidth (65% of its write bandwidth): capped at 18%", "... said, with what it would cost");
	gpumem_diags_free(&d);
	/* A site that raises every model's cap meets the GPUs' own maximum. */
	p.l2.site_caps.other = 100;
	snprintf(p.l2.site_caps.m[0].model, sizeof(p.l2.site_caps.m[0].model), "NVIDIA H200");
	p.l2.site_caps.m[0].percent = 100;
	p.l2.site_caps.n = 1;
	gpumem_policy_env(&p, &node, &env, &d);
	is_str(env_get(&env, GPUMEM_ENV_L2_PCT), "62", "caps raised: H200 62.5%% and H100 62.5%%: 62");
	gpumem_diags_free(&d);
	gpumem_policy_parse("version: 1\nl2:\n  persisting_limit: 0\n", strlen("version: 1\nl2:\n  persisting_limit: 0\n"), "p", &p, &d);
	gpumem_policy_env(&p, &node, &env, &d);
	is_str(env_get(&env, GPUMEM_ENV_L2_PCT), "0", "0 disables the set-aside");
	gpumem_policy_parse("version: 1\nl2:\n  persisting_limit: 1KiB\n", strlen("version: 1\nl2:\n  persisting_limit: 1KiB\n"), "p", &p, &d);
	gpumem_policy_env(&p, &node, &env, &d);
	is_str(env_get(&env, GPUMEM_ENV_L2_PCT), "1", "a tiny byte limit rounds up to 1%%");

	/* MPS and UM. */
	gpumem_policy_parse("version: 1\nmps:\n  active_thread_percentage: 25\n"
			    "  pinned_device_mem_limit: 1GiB\n  daemon: job\n", strlen("version: 1\nmps:\n  active_thread_percentage: 25\n"
			    "  pinned_device_mem_limit: 1GiB\n  daemon: job\n"), "p", &p, &d);
	node.mps_pipe_dir = "/tmp/x/pipe";
	node.mps_log_dir = "/tmp/x/log";
	gpumem_policy_env(&p, &node, &env, &d);
	is_str(env_get(&env, GPUMEM_ENV_MPS_PCT), "25", "MPS share");
	is_str(env_get(&env, GPUMEM_ENV_MPS_PINNED), "0=1024M,1=1024M", "pinned per GPU");
	is_str(env_get(&env, GPUMEM_ENV_MPS_PIPE), "/tmp/x/pipe", "pipe dir");
	ok(env_get(&env, GPUMEM_ENV_L2_PCT) == NULL, "no L2 key, no L2 variable");

	gpumem_policy_parse("version: 1\nunified_memory:\n  preferred_location: gpu\n"
			    "  prefetch: gpu\n  read_mostly: true\n", strlen("version: 1\nunified_memory:\n  preferred_location: gpu\n"
			    "  prefetch: gpu\n  read_mostly: true\n"), "p", &p, &d);
	ok(gpumem_um_format(&p, buf, sizeof(buf)) == 0, "um format");
	is_str(buf, "v1;preferred=gpu;accessed_by=none;read_mostly=1;prefetch=gpu;min_bytes=1048576",
	       "advice string");
	node.um_library = NULL;
	gpumem_diags_free(&d);
	gpumem_policy_env(&p, &node, &env, &d);
	ok(env_get(&env, GPUMEM_ENV_PRELOAD) == NULL && d.nwarnings == 1,
	   "no library installed: nothing preloaded, a warning");
	node.um_library = "/usr/lib/gpumem/libgpumem-um.so";
	gpumem_policy_env(&p, &node, &env, &d);
	is_str(env_get(&env, GPUMEM_ENV_PRELOAD), "/usr/lib/gpumem/libgpumem-um.so", "preload");
	gpumem_diags_free(&d);
	helper_env();
	return tap_done();
}
