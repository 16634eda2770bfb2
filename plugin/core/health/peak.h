/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a GPU can do at most, from what NVML says of it: the memory's peak
 * bandwidth (bus width, maximum memory clock, the data rate of its memory
 * type) and the host link's (maximum PCIe generation and width).  The
 * check judges its figures against these where the site names no
 * reference (doc/admin/checks.md, "What a figure is judged against").
 * Pure computation, no NVML: tests/unit/test_peak.c covers every memory
 * type from NVML's own figures.
 */
#ifndef GPUMEM_PEAK_H
#define GPUMEM_PEAK_H
#include <stddef.h>

enum gpumem_memtype {
	GPUMEM_MEM_UNKNOWN = 0,
	GPUMEM_MEM_HBM2,
	GPUMEM_MEM_HBM2E,
	GPUMEM_MEM_HBM3,
	GPUMEM_MEM_HBM3E,
	GPUMEM_MEM_GDDR6,
	GPUMEM_MEM_GDDR6X,
	GPUMEM_MEM_GDDR7,
};

/* nvmlDeviceArchitecture_t (nvml.h): the values this file reads. */
#define GPUMEM_ARCH_PASCAL    4
#define GPUMEM_ARCH_VOLTA     5
#define GPUMEM_ARCH_TURING    6
#define GPUMEM_ARCH_AMPERE    7
#define GPUMEM_ARCH_ADA       8
#define GPUMEM_ARCH_HOPPER    9
#define GPUMEM_ARCH_BLACKWELL 10

/* NVML's figures of one GPU; 0 or below: NVML did not say. */
struct gpumem_peak_in {
	const char *name;       /* the GPU's name ("NVIDIA H200"); NULL or "" unknown */
	int arch;               /* nvmlDeviceGetArchitecture */
	int bus_bits;           /* nvmlDeviceGetMemoryBusWidth */
	int mem_mhz;            /* nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM) */
	int pcie_gen, pcie_width;       /* nvmlDeviceGetMaxPcieLinkGeneration/Width */
};

struct gpumem_peak {
	enum gpumem_memtype type;
	double mem_gbps;        /* memory peak, GB/s (10^9 B/s); 0: not known */
	double host_gbps;       /* host link peak per direction, GB/s; 0: not known */
	char mem_why[96];       /* why mem_gbps is 0: "unknown memory type", ... */
	char host_why[96];      /* why host_gbps is 0 */
};

/* "HBM3e", ...; "unknown". */
const char *gpumem_memtype_name(enum gpumem_memtype t);
/*
 * The memory type of a GPU: what its name says ("HBM3e" in it, a known
 * model), else its architecture and bus width (an HBM stack is 1024 bits
 * wide, a GDDR bus at most 512).  GPUMEM_MEM_UNKNOWN where neither tells.
 */
enum gpumem_memtype gpumem_memtype_of(const char *name, int arch, int bus_bits);
/* Transfers per pin per cycle of the clock NVML reports for type T; 0 unknown. */
int gpumem_memtype_rate(enum gpumem_memtype t);
/* GB/s per lane and direction of PCIe generation GEN after its encoding; 0 unknown. */
double gpumem_pcie_lane_gbps(int gen);
/* Both peaks of the GPU IN into OUT. */
void gpumem_peak_compute(const struct gpumem_peak_in *in, struct gpumem_peak *out);
#endif
