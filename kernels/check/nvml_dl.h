/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVML, loaded at run time (plugin/core/nvmldl.h has the loader and the ABI
 * types): the functions the check uses.  A missing library is not an
 * error: that part of the health report says "skipped: NVML not found" and
 * the rest of the check runs.
 */
#ifndef GPUMEM_NVML_DL_H
#define GPUMEM_NVML_DL_H

#include "check.h"
#include "nvmldl.h"

struct gpumem_check_nvml {
	void *lib;
	int state;                      /* GPUMEM_CHECK_NVML_* */
	char note[GPUMEM_CHECK_MSG];
	char driver[80];
	gpumem_nvmlReturn_t (*init)(void);
	gpumem_nvmlReturn_t (*shutdown)(void);
	const char *(*error_string)(gpumem_nvmlReturn_t);
	gpumem_nvmlReturn_t (*driver_version)(char *, unsigned int);
	gpumem_nvmlReturn_t (*by_pci)(const char *, gpumem_nvmlDevice_t *);
	gpumem_nvmlReturn_t (*by_uuid)(const char *, gpumem_nvmlDevice_t *);
	gpumem_nvmlReturn_t (*uuid)(gpumem_nvmlDevice_t, char *, unsigned int);
	gpumem_nvmlReturn_t (*ecc_mode)(gpumem_nvmlDevice_t, int *, int *);
	gpumem_nvmlReturn_t (*ecc_total)(gpumem_nvmlDevice_t, int, int, unsigned long long *);
	gpumem_nvmlReturn_t (*retired)(gpumem_nvmlDevice_t, int, unsigned int *,
				       unsigned long long *);
	gpumem_nvmlReturn_t (*retired_pending)(gpumem_nvmlDevice_t, int *);
	gpumem_nvmlReturn_t (*remapped)(gpumem_nvmlDevice_t, unsigned int *, unsigned int *,
					unsigned int *, unsigned int *);
	gpumem_nvmlReturn_t (*pcie_gen)(gpumem_nvmlDevice_t, unsigned int *);
	gpumem_nvmlReturn_t (*pcie_width)(gpumem_nvmlDevice_t, unsigned int *);
	gpumem_nvmlReturn_t (*pcie_max_gen)(gpumem_nvmlDevice_t, unsigned int *);
	gpumem_nvmlReturn_t (*pcie_max_width)(gpumem_nvmlDevice_t, unsigned int *);
	gpumem_nvmlReturn_t (*clock_reasons)(gpumem_nvmlDevice_t, unsigned long long *);
	gpumem_nvmlReturn_t (*mig_mode)(gpumem_nvmlDevice_t, unsigned int *, unsigned int *);
	/* The GPU's peak (peak.h): architecture, memory bus width, maximum clock. */
	gpumem_nvmlReturn_t (*arch)(gpumem_nvmlDevice_t, unsigned int *);
	gpumem_nvmlReturn_t (*bus_width)(gpumem_nvmlDevice_t, unsigned int *);
	gpumem_nvmlReturn_t (*max_clock)(gpumem_nvmlDevice_t, int, unsigned int *);
};

/*
 * Load and initialise NVML.  Always fills n->state and n->note; returns 0
 * when NVML is usable.  Slow on some systems (it touches every GPU), so
 * the check runs it in its own thread while CUDA initialises.
 */
int gpumem_check_nvml_open(struct gpumem_check_nvml *n);

/*
 * Fill the NVML part of d->health for the device with d->pci_bus_id (and
 * d->uuid, to tell a MIG instance from its GPU).  'counters' 0 reads only
 * the MIG mode (what --quick still needs).  Returns 0 when the device was
 * found; on error h->nvml/h->nvml_note say why.
 */
int gpumem_check_nvml_query(const struct gpumem_check_nvml *n, struct gpumem_check_device *d,
			    int counters);

/*
 * Only the PCIe link (current and maximum generation and width), for the
 * sample taken while the H2D/D2H copies run: an idle link downshifts to
 * save power, so a reading taken later could look degraded.
 */
int gpumem_check_nvml_pcie(const struct gpumem_check_nvml *n, struct gpumem_check_device *d);

#endif
