/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The check's NVML: the one NVML reader (plugin/core/health/nvhealth.h), started
 * once per process (gpumem_health_shared: the warm server's checks and its
 * health requests share it), and what the check reads of it.  A missing
 * library is not an error: that part of the health report says "skipped:
 * NVML not found" and the rest of the check runs.
 */
#ifndef GPUMEM_CHECK_NVML_H
#define GPUMEM_CHECK_NVML_H

#include "check.h"
#include "core_health.h"

struct gpumem_check_nvml {
	struct gpumem_health_nvml *h;   /* the process's NVML, never closed here */
	int state;                      /* GPUMEM_CHECK_NVML_* */
	char note[GPUMEM_CHECK_MSG];
	char driver[80];
};

/*
 * Start (or find started) NVML.  Always fills n->state and n->note;
 * returns 0 when NVML is usable.  Slow on some systems (it touches every
 * GPU), so the check runs it in its own thread while CUDA initialises.
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
