/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-health: the GPUs' health as NVML keeps it, with no CUDA context,
 * in milliseconds (health_nvml.c reads it): ECC counters, remapped rows,
 * retired pages, clock event (throttle) reasons, the PCIe link against its
 * maximum, NVLink state, memory held by no process.  Prints one
 * gpumem-health/1 document (doc/CHECK-JSON.md; plugin/core/health/health_doc.c
 * builds it, the warm check server answers the same one) with, per GPU, its
 * "evidence" (the counters, as one string the plugin compares with the one
 * of the GPU's last measured pass) and its "alarms" (what forbids reusing
 * any pass now).  The job prolog and epilog run it as the site's
 * check_user, as they run gpumem-check (plugin/spank/check/evidence.c), to
 * decide whether the bandwidth check is due (doc/admin/checks.md, "Reuse"), and
 * whether any process holds any GPU of the node ("node_held": where none
 * does, an epilog whose after-check rested on evidence skips the L2 reset,
 * as gpumem-l2reset itself would, without a second NVML start).
 *
 *   gpumem-health [--gpus LIST]   LIST: the node's GPU indexes (NVML's
 *                                 order, as Slurm gives them); default all
 * Exit 0: NVML answered for every GPU; 1: not for some; 3: no NVML.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core_health.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

int main(int argc, char **argv)
{
	char idx[GPUMEM_HEALTH_MAX_GPUS][16], driver[96], note[300], *text;
	const char *gpus = NULL;
	struct gpumem_health_nvml *n;
	struct timespec t0;
	int missing, rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--gpus") && i + 1 < argc) {
			gpus = argv[++i];
			if (gpumem_health_parse_list(gpus, idx, GPUMEM_HEALTH_MAX_GPUS) < 0) {
				fprintf(stderr, "gpumem-health: --gpus %s: not a list of GPU indexes\n",
					argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--version")) {
			printf("gpumem-health %s\n", PACKAGE_VERSION);
			return 0;
		} else {
			fprintf(stderr, "usage: gpumem-health [--gpus 0,1,...]\n");
			return !strcmp(argv[i], "--help") ? 0 : 2;
		}
	}
	n = gpumem_health_open(driver, sizeof(driver), note, sizeof(note), &missing);
	text = gpumem_health_document(n, driver, note, missing, gpus, &t0, &rc);
	gpumem_health_close(n);
	if (!text) {
		fprintf(stderr, "gpumem-health: out of memory\n");
		return 1;
	}
	fputs(text, stdout);
	free(text);
	return rc;
}
