/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the stand-in NVML's two files share (fake_nvml.c: the library and
 * the sampler's calls; fake_health.c: what gpumem-health reads): NVML's
 * return codes, the stand-in's device.  Not part of gpumem.
 */
#ifndef FAKE_NVML_H
#define FAKE_NVML_H

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
enum {
	NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_DRIVER_NOT_LOADED = 9, NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
};

enum { V_DRAM, V_SM, V_OCC, V_PCIE_RX, V_PCIE_TX, V_NVL_RX, V_NVL_TX, V_MEM, NV };
/* FAKE_NVML_HEALTH's figures (fake_health.c). */
enum {
	H_ECC_VC, H_ECC_VU, H_ECC_AC, H_ECC_AU, H_REMAP_C, H_REMAP_U, H_REMAP_P, H_REMAP_F,
	H_RET_S, H_RET_D, H_RET_P, H_THR, H_GEN, H_WIDTH, H_MAXGEN, H_MAXWIDTH, H_NVL,
	H_ORPHAN, NH
};
#define MAX_DEV 16

struct nvmlDevice_st {
	unsigned int index;
	int mig;
	double v[NV];
	unsigned long seq_at;           /* samples taken (for FAKE_NVML_SEQ) */
	double h[NH];
};

extern struct nvmlDevice_st dev[MAX_DEV];
extern unsigned int ndev;
/* Is D one of the devices, with NVML initialised? */
int fake_valid(struct nvmlDevice_st *d);
/* "k=v,k=v" into V, whose N keys are NAMES. */
void fake_keys(const char *s, const char *const *names, int n, double *v);
/* The pid of the process holding a GPU: 4242, or the caller's (FAKE_NVML_PID=self). */
unsigned int fake_holder_pid(void);
/* Device I's FAKE_NVML_HEALTH figures into H. */
void fake_health_configure(unsigned int i, double *h);
#endif
