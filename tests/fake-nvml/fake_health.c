/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The stand-in NVML's health counters, for gpumem-health's tests
 * (tests/cli/health.sh, tests/slurm/evidence.sh): FAKE_NVML_HEALTH (and
 * FAKE_NVML_HEALTH_<I> for device I) set them, so a test can move each
 * counter between two jobs (see fake_nvml.c's header for the keys).
 * NVML's documented ABI, declared here on its own.  Not part of gpumem.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_nvml.h"

static const char *const hname[NH] = {
	"ecc_vc", "ecc_vu", "ecc_ac", "ecc_au", "remap_c", "remap_u", "remap_p", "remap_f",
	"ret_s", "ret_d", "ret_p", "thr", "gen", "width", "maxgen", "maxwidth", "nvl", "orphan",
};

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

void fake_health_configure(unsigned int i, double *h)
{
	const char *path = getenv("FAKE_NVML_HEALTH_FILE");
	char key[40], text[512] = "";
	FILE *f;

	memset(h, 0, NH * sizeof(*h));
	h[H_GEN] = h[H_MAXGEN] = 5;
	h[H_WIDTH] = h[H_MAXWIDTH] = 16;
	fake_keys(getenv("FAKE_NVML_HEALTH"), hname, NH, h);
	snprintf(key, sizeof(key), "FAKE_NVML_HEALTH_%u", i);
	fake_keys(getenv(key), hname, NH, h);
	/* The live counters: read again at each device lookup, as a running NVML moves. */
	if (path && (f = fopen(path, "r"))) {
		if (!fgets(text, sizeof(text), f))
			text[0] = '\0';
		fclose(f);
		text[strcspn(text, "\n")] = '\0';
		fake_keys(text, hname, NH, h);
	}
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int len)
{
	snprintf(buf, len, "580.00-standin");
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetEccMode(struct nvmlDevice_st *d, int *cur, int *pend)
{
	if (!fake_valid(d))
		return NVML_ERROR_INVALID_ARGUMENT;
	*cur = *pend = 1;
	return NVML_SUCCESS;
}

/* errorType 0 corrected, 1 uncorrected; counterType 0 volatile, 1 aggregate. */
EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(struct nvmlDevice_st *d, int type, int counter,
						unsigned long long *n)
{
	if (!fake_valid(d) || type < 0 || type > 1 || counter < 0 || counter > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	*n = (unsigned long long)d->h[counter ? (type ? H_ECC_AU : H_ECC_AC) :
					 (type ? H_ECC_VU : H_ECC_VC)];
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(struct nvmlDevice_st *d, unsigned int *c,
					       unsigned int *u, unsigned int *p, unsigned int *f)
{
	if (!fake_valid(d))
		return NVML_ERROR_INVALID_ARGUMENT;
	*c = (unsigned int)d->h[H_REMAP_C];
	*u = (unsigned int)d->h[H_REMAP_U];
	*p = (unsigned int)d->h[H_REMAP_P];
	*f = (unsigned int)d->h[H_REMAP_F];
	return NVML_SUCCESS;
}

/* cause 0 multiple single-bit, 1 double-bit; no room asked: the count only. */
EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(struct nvmlDevice_st *d, int cause,
					       unsigned int *count, unsigned long long *addr)
{
	unsigned int n;

	if (!fake_valid(d) || cause < 0 || cause > 1 || count == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	n = (unsigned int)d->h[cause ? H_RET_D : H_RET_S];
	if (*count < n || addr == NULL) {
		*count = n;
		return n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
	}
	*count = n;
	memset(addr, 0, n * sizeof(*addr));
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(struct nvmlDevice_st *d, int *p)
{
	if (!fake_valid(d))
		return NVML_ERROR_INVALID_ARGUMENT;
	*p = d->h[H_RET_P] != 0;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(struct nvmlDevice_st *d,
							    unsigned long long *mask)
{
	if (!fake_valid(d))
		return NVML_ERROR_INVALID_ARGUMENT;
	*mask = (unsigned long long)d->h[H_THR];
	return NVML_SUCCESS;
}

static nvmlReturn_t link(struct nvmlDevice_st *d, int which, unsigned int *out)
{
	if (!fake_valid(d))
		return NVML_ERROR_INVALID_ARGUMENT;
	*out = (unsigned int)d->h[which];
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(struct nvmlDevice_st *d, unsigned int *g)
{
	return link(d, H_GEN, g);
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(struct nvmlDevice_st *d, unsigned int *w)
{
	return link(d, H_WIDTH, w);
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(struct nvmlDevice_st *d, unsigned int *g)
{
	return link(d, H_MAXGEN, g);
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(struct nvmlDevice_st *d, unsigned int *w)
{
	return link(d, H_MAXWIDTH, w);
}

/* Links below "nvl" are active; a GPU with nvl=0 has no NVLink ("not supported"). */
EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(struct nvmlDevice_st *d, unsigned int l, int *on)
{
	if (!fake_valid(d) || l >= 18)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d->h[H_NVL] <= 0)
		return NVML_ERROR_NOT_SUPPORTED;
	*on = l < (unsigned int)d->h[H_NVL];
	return NVML_SUCCESS;
}

/* One process holding the memory in use less "orphan" GiB, when that is above 0. */
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(struct nvmlDevice_st *d,
							     unsigned int *n,
							     nvmlProcessInfo_t *p)
{
	double held = d && fake_valid(d) ? d->v[V_MEM] - d->h[H_ORPHAN] : 0;
	unsigned int have = held > 0;

	if (!fake_valid(d) || n == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (*n < have || (have && p == NULL)) {
		*n = have;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	*n = have;
	if (have) {
		memset(p, 0, sizeof(*p));
		p->pid = fake_holder_pid();
		p->usedGpuMemory = (unsigned long long)(held * (1ULL << 30));
	}
	return NVML_SUCCESS;
}
