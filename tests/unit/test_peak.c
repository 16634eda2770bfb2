/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A GPU's peak bandwidths from NVML's figures (plugin/core/health/peak.c):
 * every memory type, from the bus width and maximum memory clock NVML
 * reports for a GPU of that type, against the bandwidth its maker
 * publishes; the type from the name, else from the architecture and bus
 * width; the PCIe link of each generation; what is not known, said.
 */
#include <math.h>
#include <stdio.h>

#include "tap.h"
#include "core_health.h"

/* Within 0.5 GB/s. */
static int near(double got, double want)
{
	return fabs(got - want) < 0.5;
}

struct gpu {
	const char *name;
	int arch, bus_bits, mem_mhz;
	const char *type;
	double gbps;            /* the published peak, GB/s */
};

/* NVML's figures (nvidia-smi -q -d CLOCK's maximum memory clock) and the published peak. */
static const struct gpu gpus[] = {
	{ "Tesla V100-SXM2-32GB", GPUMEM_ARCH_VOLTA, 4096, 877, "HBM2", 898.0 },
	{ "NVIDIA A100-SXM4-40GB", GPUMEM_ARCH_AMPERE, 5120, 1215, "HBM2", 1555.2 },
	{ "NVIDIA A100-SXM4-80GB", GPUMEM_ARCH_AMPERE, 5120, 1593, "HBM2e", 2039.0 },
	{ "NVIDIA H100 PCIe", GPUMEM_ARCH_HOPPER, 5120, 1593, "HBM2e", 2039.0 },
	{ "NVIDIA H100 80GB HBM3", GPUMEM_ARCH_HOPPER, 5120, 2619, "HBM3", 3352.3 },
	{ "NVIDIA H200", GPUMEM_ARCH_HOPPER, 6016, 3201, "HBM3e", 4814.4 },
	{ "Tesla T4", GPUMEM_ARCH_TURING, 256, 5001, "GDDR6", 320.0 },
	{ "NVIDIA L40S", GPUMEM_ARCH_ADA, 384, 9001, "GDDR6", 864.0 },
	{ "NVIDIA GeForce RTX 4090", GPUMEM_ARCH_ADA, 384, 10501, "GDDR6X", 1008.1 },
	{ "NVIDIA GeForce RTX 5090", GPUMEM_ARCH_BLACKWELL, 512, 14001, "GDDR7", 1792.1 },
};

static void test_memory(void)
{
	for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]); i++) {
		const struct gpu *g = &gpus[i];
		struct gpumem_peak_in in = { g->name, g->arch, g->bus_bits, g->mem_mhz, 5, 16 };
		struct gpumem_peak p;

		gpumem_peak_compute(&in, &p);
		is_str(gpumem_memtype_name(p.type), g->type, "%s: %s", g->name, g->type);
		ok(near(p.mem_gbps, g->gbps), "%s: %d bits x %d MHz: %.1f GB/s (published %.0f)",
		   g->name, g->bus_bits, g->mem_mhz, p.mem_gbps, g->gbps);
		is_str(p.mem_why, "", "%s: nothing missing", g->name);
	}
}

static void test_types(void)
{
	/* Each type has its rate; the unknown one none. */
	for (int t = GPUMEM_MEM_HBM2; t <= GPUMEM_MEM_GDDR7; t++)
		is_int(gpumem_memtype_rate((enum gpumem_memtype)t), 2, "%s: two transfers per "
		       "NVML clock", gpumem_memtype_name((enum gpumem_memtype)t));
	is_int(gpumem_memtype_rate(GPUMEM_MEM_UNKNOWN), 0, "unknown type: no rate");
	/* The name first, then the architecture and bus width. */
	is_int(gpumem_memtype_of("NVIDIA GH200 144G HBM3e", GPUMEM_ARCH_HOPPER, 6144),
	       GPUMEM_MEM_HBM3E, "the name's HBM3e wins");
	is_int(gpumem_memtype_of("NVIDIA GH200 480GB", GPUMEM_ARCH_HOPPER, 6144), GPUMEM_MEM_HBM3,
	       "GH200 480GB: HBM3, not the H200's HBM3e");
	is_int(gpumem_memtype_of("NVIDIA H100 NVL", GPUMEM_ARCH_HOPPER, 6144), GPUMEM_MEM_HBM3,
	       "a Hopper with an HBM-wide bus: HBM3");
	is_int(gpumem_memtype_of("NVIDIA A10", GPUMEM_ARCH_AMPERE, 384), GPUMEM_MEM_GDDR6,
	       "an Ampere with a 384-bit bus: GDDR6");
	is_int(gpumem_memtype_of("Tesla P100-PCIE-16GB", GPUMEM_ARCH_PASCAL, 4096), GPUMEM_MEM_HBM2,
	       "Pascal with 4096 bits: HBM2");
	is_int(gpumem_memtype_of("Tesla P40", GPUMEM_ARCH_PASCAL, 384), GPUMEM_MEM_UNKNOWN,
	       "Pascal GDDR5X: unknown");
	is_int(gpumem_memtype_of("NVIDIA Future", 11, 8192), GPUMEM_MEM_UNKNOWN,
	       "an architecture not known here: unknown");
	is_int(gpumem_memtype_of("NVIDIA H200", GPUMEM_ARCH_HOPPER, -1), GPUMEM_MEM_HBM3E,
	       "the name alone, without a bus width");
}

static void test_unknown(void)
{
	struct gpumem_peak_in in = { "Tesla K80", 2, 384, 2505, 3, 16 };
	struct gpumem_peak p;

	gpumem_peak_compute(&in, &p);
	ok(p.mem_gbps == 0, "Kepler: no memory peak");
	is_str(p.mem_why, "unknown memory type", "and says: unknown memory type");
	ok(near(p.host_gbps, 15.76), "its host link still: gen3 x16 %.2f GB/s", p.host_gbps);

	in = (struct gpumem_peak_in){ "NVIDIA H200", GPUMEM_ARCH_HOPPER, -1, 3201, -1, -1 };
	gpumem_peak_compute(&in, &p);
	ok(p.mem_gbps == 0 && p.host_gbps == 0, "no bus width, no PCIe figures: no peaks");
	like(p.mem_why, "no memory bus width", "memory: says what NVML did not give");
	like(p.host_why, "no PCIe", "host: says what NVML did not give");

	in = (struct gpumem_peak_in){ "NVIDIA GH200 480GB", GPUMEM_ARCH_HOPPER, 6144, 2619, 5, 16 };
	gpumem_peak_compute(&in, &p);
	ok(p.mem_gbps > 3900 && p.host_gbps == 0, "GH200: memory peak %.0f, no PCIe host peak",
	   p.mem_gbps);
	like(p.host_why, "NVLink-C2C", "GH200: its host link is C2C, not judged");
}

static void test_pcie(void)
{
	static const double lane[] = { 0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563 };
	struct gpumem_peak_in in = { "NVIDIA H200", GPUMEM_ARCH_HOPPER, 6016, 3201, 5, 16 };
	struct gpumem_peak p;

	for (int g = 1; g <= 6; g++)
		ok(fabs(gpumem_pcie_lane_gbps(g) - lane[g]) < 1e-9, "gen%d: %.3f GB/s per lane", g,
		   lane[g]);
	ok(gpumem_pcie_lane_gbps(7) == 0 && gpumem_pcie_lane_gbps(0) == 0, "no other generation");
	gpumem_peak_compute(&in, &p);
	ok(near(p.host_gbps, 63.0), "H200 gen5 x16: %.1f GB/s", p.host_gbps);
	in.pcie_gen = 4;
	in.pcie_width = 8;
	gpumem_peak_compute(&in, &p);
	ok(near(p.host_gbps, 15.75), "gen4 x8: %.2f GB/s", p.host_gbps);
	in.pcie_gen = 9;
	gpumem_peak_compute(&in, &p);
	like(p.host_why, "unknown PCIe generation 9", "a generation not known here: said");
}

int main(void)
{
	test_memory();
	test_types();
	test_unknown();
	test_pcie();
	return tap_done();
}
