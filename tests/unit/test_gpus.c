/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GPU lists as Slurm and CUDA write them (plugin/core/policy/gpus.c): indices,
 * GPU UUIDs, MIG instances in both spellings, PCI bus ids; the tasks' list
 * under ConstrainDevices (renumbered from 0) against the node's; and
 * matching probe output by each form.  The UUIDs are shaped like those of
 * real H100/A100s (nvidia-smi -L); none names a real device.
 */
#include <stdlib.h>
#include <string.h>
#include "core_policy.h"
#include "tap.h"

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

#define GPU_A "GPU-5d1f8a3e-7c2b-4e91-b0a6-3f9e2d1c8b47"
#define GPU_B "GPU-e0b2c7d4-19af-4c38-8d52-a6f1b3e9047c"
#define MIG_1 "MIG-8c3a9e21-5f4d-5b7a-9e0c-1d2f3a4b5c6d"
#define MIG_2 "MIG-0f1e2d3c-4b5a-5968-8776-a5b4c3d2e1f0"

static void kinds(void)
{
	char parent[64];

	is_int(gpumem_gpu_kind("0", NULL, 0), GPUMEM_GPU_INDEX, "0: an index");
	is_int(gpumem_gpu_kind("15", NULL, 0), GPUMEM_GPU_INDEX, "15: an index");
	is_int(gpumem_gpu_kind(GPU_A, NULL, 0), GPUMEM_GPU_UUID, "a GPU UUID");
	is_int(gpumem_gpu_kind("GPU-5d1f8a3e", NULL, 0), GPUMEM_GPU_UUID, "a GPU UUID prefix (CUDA takes those)");
	is_int(gpumem_gpu_kind("gpu-5D1F8A3E-7c2b", NULL, 0), GPUMEM_GPU_UUID, "any case");
	is_int(gpumem_gpu_kind(MIG_1, parent, sizeof(parent)), GPUMEM_GPU_MIG, "MIG-<uuid> (driver R470 and later)");
	is_str(parent, "", "... names no parent GPU");
	is_int(gpumem_gpu_kind("MIG-" GPU_A "/7/0", parent, sizeof(parent)), GPUMEM_GPU_MIG,
	       "MIG-GPU-<uuid>/GI/CI (CUDA 11.0-11.3)");
	is_str(parent, GPU_A, "... names its GPU");
	is_int(gpumem_gpu_kind("0000:3b:00.0", NULL, 0), GPUMEM_GPU_PCI, "a PCI bus id");
	is_int(gpumem_gpu_kind("00000000:3B:00.0", NULL, 0), GPUMEM_GPU_PCI, "a PCI bus id, 8-digit domain");
	is_int(gpumem_gpu_kind("3b:00.0", NULL, 0), GPUMEM_GPU_PCI, "a PCI bus id without domain");
	/* What names no GPU. */
	is_int(gpumem_gpu_kind("", NULL, 0), GPUMEM_GPU_BAD, "empty");
	is_int(gpumem_gpu_kind("-1", NULL, 0), GPUMEM_GPU_BAD, "-1");
	is_int(gpumem_gpu_kind("1a", NULL, 0), GPUMEM_GPU_BAD, "1a");
	is_int(gpumem_gpu_kind("GPU-", NULL, 0), GPUMEM_GPU_BAD, "GPU- alone");
	is_int(gpumem_gpu_kind("GPU-xyz", NULL, 0), GPUMEM_GPU_BAD, "GPU- with no hex");
	is_int(gpumem_gpu_kind(GPU_A "0", NULL, 0), GPUMEM_GPU_BAD, "a UUID one digit too long");
	is_int(gpumem_gpu_kind("MIG-8c3a9e21", NULL, 0), GPUMEM_GPU_BAD, "a MIG UUID must be whole");
	is_int(gpumem_gpu_kind("MIG-" GPU_A, NULL, 0), GPUMEM_GPU_BAD, "MIG-GPU-<uuid> without /GI/CI");
	is_int(gpumem_gpu_kind("MIG-" GPU_A "/7", NULL, 0), GPUMEM_GPU_BAD, "MIG-GPU-<uuid>/GI without CI");
	is_int(gpumem_gpu_kind("MIG-" GPU_A "/7/0/1", NULL, 0), GPUMEM_GPU_BAD, "... with one level too many");
	is_int(gpumem_gpu_kind("MIG-" GPU_A "/a/0", NULL, 0), GPUMEM_GPU_BAD, "... with a non-number GI");
	is_int(gpumem_gpu_kind("MIG-GPU-5d1f8a3e/1/0", NULL, 0), GPUMEM_GPU_BAD, "... with a UUID prefix");
	is_int(gpumem_gpu_kind("0000:3b:00.9", NULL, 0), GPUMEM_GPU_BAD, "PCI function 9");
	is_int(gpumem_gpu_kind("NoDevFiles", NULL, 0), GPUMEM_GPU_BAD, "Slurm's NoDevFiles");
	is_int(gpumem_gpu_kind("/dev/nvidia0", NULL, 0), GPUMEM_GPU_BAD, "a device path");
}

static void lists(void)
{
	char node[8][64], task[8][64];
	const char *src;
	int n;
	/* ConstrainDevices: the job on GPUs 1 and 3 gets CUDA_VISIBLE_DEVICES=0,1. */
	struct fakeenv confined = { { "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES" }, { "1,3", "0,1" } };
	/* No cgroup: both lists agree. */
	struct fakeenv open = { { "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES" }, { "1,3", "1,3" } };
	/* MIG through Slurm's NVML autodetection: two instances of GPU 0. */
	struct fakeenv mig = { { "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES" }, { "0,1", MIG_1 "," MIG_2 } };
	struct fakeenv oldmig = { { "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES" },
				  { "2", "MIG-" GPU_B "/1/0" } };
	/* The user's own list disagrees in length with Slurm's: the node's is kept. */
	struct fakeenv odd = { { "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES" }, { "1,3", "0" } };
	struct fakeenv bad = { { "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES" }, { "1", "junk" } };
	struct fakeenv uuids = { { "CUDA_VISIBLE_DEVICES" }, { " " GPU_B ", ," GPU_A } };
	struct fakeenv nodev = { { "CUDA_VISIBLE_DEVICES" }, { "NoDevFiles" } };
	char longid[200];

	n = gpumem_gpus_from_env(fake_get, &confined, node, 8, &src);
	is_int(n, 2, "SLURM_STEP_GPUS=1,3: two GPUs");
	is_int(gpumem_gpus_for_tasks(fake_get, &confined, src, node, n, task, 8), 1,
	       "confined: the tasks' list is Slurm's CUDA_VISIBLE_DEVICES");
	is_str(task[0], "0", "... GPU 1 is the tasks' 0");
	is_str(task[1], "1", "... GPU 3 is the tasks' 1");
	is_str(node[0], "1", "... and the node's list still says 1");
	n = gpumem_gpus_from_env(fake_get, &open, node, 8, &src);
	gpumem_gpus_for_tasks(fake_get, &open, src, node, n, task, 8);
	is_str(task[1], "3", "not confined: the same numbers");
	n = gpumem_gpus_from_env(fake_get, &mig, node, 8, &src);
	is_int(gpumem_gpus_for_tasks(fake_get, &mig, src, node, n, task, 8), 1, "MIG: Slurm's MIG UUIDs");
	is_str(task[0], MIG_1, "... first instance");
	is_str(task[1], MIG_2, "... second instance");
	n = gpumem_gpus_from_env(fake_get, &oldmig, node, 8, &src);
	is_str(src, "SLURM_JOB_GPUS", "a batch step: SLURM_JOB_GPUS");
	gpumem_gpus_for_tasks(fake_get, &oldmig, src, node, n, task, 8);
	is_str(task[0], "MIG-" GPU_B "/1/0", "MIG-GPU-<uuid>/1/0 kept whole");
	n = gpumem_gpus_from_env(fake_get, &odd, node, 8, &src);
	is_int(gpumem_gpus_for_tasks(fake_get, &odd, src, node, n, task, 8), 0,
	       "CUDA_VISIBLE_DEVICES of another length: the node's list");
	is_str(task[1], "3", "... copied");
	n = gpumem_gpus_from_env(fake_get, &bad, node, 8, &src);
	is_int(gpumem_gpus_for_tasks(fake_get, &bad, src, node, n, task, 8), 0,
	       "CUDA_VISIBLE_DEVICES that names no GPU: the node's list");
	n = gpumem_gpus_from_env(fake_get, &uuids, node, 8, &src);
	is_int(n, 2, "UUID list with blanks and an empty entry: two GPUs");
	is_str(node[0], GPU_B, "... spaces trimmed");
	is_int(gpumem_gpus_for_tasks(fake_get, &uuids, src, node, n, task, 8), 0,
	       "only CUDA_VISIBLE_DEVICES: it is both lists");
	is_str(task[1], GPU_A, "... copied");
	n = gpumem_gpus_from_env(fake_get, &nodev, node, 8, &src);
	is_int(n, 1, "NoDevFiles: one entry");
	is_int(gpumem_gpu_kind(node[0], NULL, 0), GPUMEM_GPU_BAD, "... that names no GPU");
	memset(longid, 'a', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	memcpy(longid, "GPU-", 4);
	{
		struct fakeenv l = { { "CUDA_VISIBLE_DEVICES" }, { longid } };

		n = gpumem_gpus_from_env(fake_get, &l, node, 8, &src);
		is_int(n, 1, "a 199-character entry is one entry");
		is_int(gpumem_gpu_kind(node[0], NULL, 0), GPUMEM_GPU_BAD, "... never cut into a UUID prefix");
	}
}

static void matching(void)
{
	struct gpumem_node node;
	char list[4][64];
	/* Inside the job's devices cgroup the probe sees one GPU, as 0. */
	const char *confined =
		"gpu 0 " GPU_B " 00000000:3B:00.0 52428800 32768000 NVIDIA H100 80GB HBM3\n";
	const char *mig =
		"gpu 0 GPU-8c3a9e21-5f4d-5b7a-9e0c-1d2f3a4b5c6d 00000000:19:00.0 41943040 0 NVIDIA A100-SXM4-40GB MIG 3g.20gb\n";

	memset(&node, 0, sizeof(node));
	strcpy(list[0], "0");
	is_int(gpumem_gpus_match(confined, list, 1, &node), 1, "confined: the tasks' 0 is the probe's 0");
	is_str(node.gpus[0].uuid, GPU_B, "... which is GPU B");
	strcpy(list[0], "1");
	is_int(gpumem_gpus_match(confined, list, 1, &node), 0,
	       "the node's index 1 matches nothing in the cgroup (never another GPU)");
	strcpy(list[0], MIG_1);
	is_int(gpumem_gpus_match(mig, list, 1, &node), 1, "MIG-<uuid> matches the probe's UUID of the instance");
	is_int((long long)node.gpus[0].persisting_max_bytes, 0, "... whose persisting L2 maximum is 0");
	strcpy(list[0], MIG_2);
	is_int(gpumem_gpus_match(mig, list, 1, &node), 0, "another instance does not");
	strcpy(list[0], "MIG-" GPU_A "/1/0");
	is_int(gpumem_gpus_match(mig, list, 1, &node), 0, "MIG-GPU-.../GI/CI cannot be matched: unknown, not wrong");
}

/* A client of the job's MPS daemon: the step's GPUs in the daemon's numbering. */
static void mps_client(void)
{
	char step[3][64] = { "1" }, out[64];

	is_int(gpumem_gpus_mps_client("1", step, 1, out, sizeof(out)), 0, "daemon on GPU 1, step on GPU 1");
	is_str(out, "0", "... the client's CUDA_VISIBLE_DEVICES is 0");
	strcpy(step[0], "3");
	strcpy(step[1], "1");
	is_int(gpumem_gpus_mps_client("1, 3", step, 2, out, sizeof(out)), 0, "daemon on 1,3, step on 3,1");
	is_str(out, "1,0", "... 1,0: each GPU's place in the daemon's list, in the step's order");
	strcpy(step[0], "0");
	is_int(gpumem_gpus_mps_client("1,3", step, 1, out, sizeof(out)), -1, "a GPU the daemon does not serve: refused");
	strcpy(step[0], GPU_A);
	is_int(gpumem_gpus_mps_client(GPU_A, step, 1, out, sizeof(out)), 0, "UUIDs as well");
	is_str(out, "0", "... numbered the same way");
	is_int(gpumem_gpus_mps_client("0", step, 1, out, 1), -1, "no room for the answer: refused, never cut");
}

int main(void)
{
	kinds();
	lists();
	matching();
	mps_client();
	return tap_done();
}
