/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A GPU's peak bandwidths from NVML's figures (peak.h).  The memory's:
 * bus width / 8 x maximum memory clock x the transfers per cycle of that
 * clock.  NVML reports HBM's real clock (two transfers per cycle), and
 * GDDR6, GDDR6X and GDDR7's as half the data rate of a pin: two again;
 * doc/admin/checks.md lists the published figures each was checked on.
 * The host link's: the maximum PCIe generation's rate per lane after its
 * line encoding, times the maximum width.  A Grace superchip reaches its
 * host through NVLink-C2C, which NVML's PCIe figures do not bound: no
 * host peak there.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* strcasestr */
#endif
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "peak.h"

const char *gpumem_memtype_name(enum gpumem_memtype t)
{
	switch (t) {
	case GPUMEM_MEM_HBM2:   return "HBM2";
	case GPUMEM_MEM_HBM2E:  return "HBM2e";
	case GPUMEM_MEM_HBM3:   return "HBM3";
	case GPUMEM_MEM_HBM3E:  return "HBM3e";
	case GPUMEM_MEM_GDDR6:  return "GDDR6";
	case GPUMEM_MEM_GDDR6X: return "GDDR6X";
	case GPUMEM_MEM_GDDR7:  return "GDDR7";
	case GPUMEM_MEM_UNKNOWN: break;
	}
	return "unknown";
}

static int has(const char *name, const char *word)
{
	return name && strcasestr(name, word) != NULL;
}

/* What the name alone says; GPUMEM_MEM_UNKNOWN when it says nothing. */
static enum gpumem_memtype type_of_name(const char *name)
{
	static const char *const gddr6x[] = { "RTX 3070 Ti", "RTX 3080", "RTX 3090", "RTX 4070",
					      "RTX 4080", "RTX 4090" };

	if (has(name, "HBM3e"))
		return GPUMEM_MEM_HBM3E;
	if (has(name, "HBM3"))
		return GPUMEM_MEM_HBM3;
	if (has(name, "HBM2e"))
		return GPUMEM_MEM_HBM2E;
	if (has(name, "HBM2"))
		return GPUMEM_MEM_HBM2;
	if (has(name, "GH200"))         /* the 96 GB one; the 144 GB one says HBM3e */
		return GPUMEM_MEM_HBM3;
	if (has(name, "H200"))
		return GPUMEM_MEM_HBM3E;
	if (has(name, "H100 PCIe"))
		return GPUMEM_MEM_HBM2E;
	if (has(name, "A100") && has(name, "40GB"))
		return GPUMEM_MEM_HBM2;
	for (size_t i = 0; i < sizeof(gddr6x) / sizeof(gddr6x[0]); i++)
		if (has(name, gddr6x[i]))
			return GPUMEM_MEM_GDDR6X;
	return GPUMEM_MEM_UNKNOWN;
}

enum gpumem_memtype gpumem_memtype_of(const char *name, int arch, int bus_bits)
{
	enum gpumem_memtype t = type_of_name(name);

	if (t != GPUMEM_MEM_UNKNOWN || bus_bits <= 0)
		return t;
	if (bus_bits >= 1024) {         /* one HBM stack or more */
		switch (arch) {
		case GPUMEM_ARCH_PASCAL:
		case GPUMEM_ARCH_VOLTA:     return GPUMEM_MEM_HBM2;
		case GPUMEM_ARCH_AMPERE:    return GPUMEM_MEM_HBM2E;
		case GPUMEM_ARCH_HOPPER:    return GPUMEM_MEM_HBM3;
		case GPUMEM_ARCH_BLACKWELL: return GPUMEM_MEM_HBM3E;
		}
		return GPUMEM_MEM_UNKNOWN;
	}
	switch (arch) {
	case GPUMEM_ARCH_TURING:
	case GPUMEM_ARCH_AMPERE:
	case GPUMEM_ARCH_ADA:       return GPUMEM_MEM_GDDR6;
	case GPUMEM_ARCH_BLACKWELL: return GPUMEM_MEM_GDDR7;
	}
	return GPUMEM_MEM_UNKNOWN;
}

int gpumem_memtype_rate(enum gpumem_memtype t)
{
	switch (t) {
	case GPUMEM_MEM_HBM2:
	case GPUMEM_MEM_HBM2E:
	case GPUMEM_MEM_HBM3:
	case GPUMEM_MEM_HBM3E:  return 2;       /* double data rate on the real clock */
	case GPUMEM_MEM_GDDR6:
	case GPUMEM_MEM_GDDR6X:
	case GPUMEM_MEM_GDDR7:  return 2;       /* NVML's clock is half a pin's data rate */
	case GPUMEM_MEM_UNKNOWN: break;
	}
	return 0;
}

double gpumem_pcie_lane_gbps(int gen)
{
	switch (gen) {
	case 1: return 0.250;   /* 2.5 GT/s, 8b/10b */
	case 2: return 0.500;   /* 5 GT/s, 8b/10b */
	case 3: return 0.985;   /* 8 GT/s, 128b/130b */
	case 4: return 1.969;   /* 16 GT/s, 128b/130b */
	case 5: return 3.938;   /* 32 GT/s, 128b/130b */
	case 6: return 7.563;   /* 64 GT/s PAM4, 242 of each 256-byte FLIT */
	}
	return 0;
}

/* A Grace superchip: its host link is NVLink-C2C. */
static int grace(const char *name)
{
	return has(name, "GH200") || has(name, "GB200") || has(name, "GB300");
}

static void mem_peak(const struct gpumem_peak_in *in, struct gpumem_peak *out)
{
	int rate;

	out->type = gpumem_memtype_of(in->name, in->arch, in->bus_bits);
	rate = gpumem_memtype_rate(out->type);
	if (in->bus_bits <= 0 || in->mem_mhz <= 0)
		snprintf(out->mem_why, sizeof(out->mem_why), "NVML gave no memory bus width or clock");
	else if (!rate)
		snprintf(out->mem_why, sizeof(out->mem_why), "unknown memory type");
	else
		out->mem_gbps = in->bus_bits / 8.0 * in->mem_mhz * rate / 1000.0;
}

static void host_peak(const struct gpumem_peak_in *in, struct gpumem_peak *out)
{
	double lane = gpumem_pcie_lane_gbps(in->pcie_gen);

	if (grace(in->name))
		snprintf(out->host_why, sizeof(out->host_why),
			 "host link is NVLink-C2C, not bounded by NVML's PCIe figures");
	else if (in->pcie_gen <= 0 || in->pcie_width <= 0)
		snprintf(out->host_why, sizeof(out->host_why), "NVML gave no PCIe generation or width");
	else if (!(lane > 0))
		snprintf(out->host_why, sizeof(out->host_why), "unknown PCIe generation %d",
			 in->pcie_gen);
	else
		out->host_gbps = lane * in->pcie_width;
}

void gpumem_peak_compute(const struct gpumem_peak_in *in, struct gpumem_peak *out)
{
	memset(out, 0, sizeof(*out));
	mem_peak(in, out);
	host_peak(in, out);
}
