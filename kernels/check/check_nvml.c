/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The check's part of the one NVML reader (check_nvml.h): the process's
 * NVML (gpumem_health_shared) and the parts the check reads of a GPU,
 * found by PCI bus id (for a MIG instance: its GPU), else by UUID.  Every
 * query is optional: an old driver without a symbol, or a GPU that
 * answers "not supported", leaves that field unknown (-1) instead of
 * failing the check.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "check_nvml.h"

int gpumem_check_nvml_open(struct gpumem_check_nvml *n)
{
	char note[GPUMEM_CHECK_MSG];
	int missing = 0;

	memset(n, 0, sizeof(*n));
	n->h = gpumem_health_shared(n->driver, sizeof(n->driver), note, sizeof(note), &missing);
	if (n->h == NULL) {
		n->state = missing ? GPUMEM_CHECK_NVML_MISSING : GPUMEM_CHECK_NVML_ERROR;
		snprintf(n->note, sizeof(n->note), "%s", missing ? "skipped: NVML not found" : note);
		return -1;
	}
	n->state = GPUMEM_CHECK_NVML_OK;
	snprintf(n->note, sizeof(n->note), "ok");
	return 0;
}

int gpumem_check_nvml_pcie(const struct gpumem_check_nvml *n, struct gpumem_check_device *d)
{
	const char *err;

	if (n->state != GPUMEM_CHECK_NVML_OK)
		return -1;
	return gpumem_health_read_gpu(n->h, d->pci_bus_id, d->uuid, GPUMEM_HEALTH_PART_PCIE,
				      &d->health.nv, &err);
}

/*
 * The counters --quick leaves out: ECC (an ECC mode NVML does not give is
 * off), retired pages, remapped rows, the clock event reasons.  PCIe is
 * read apart, while the copies run (gpumem_check_nvml_pcie).
 */
#define COUNTERS (GPUMEM_HEALTH_PART_ECC | GPUMEM_HEALTH_ECC_UNSAID_OFF | \
		  GPUMEM_HEALTH_PART_ROWS | GPUMEM_HEALTH_PART_CLOCKS)

int gpumem_check_nvml_query(const struct gpumem_check_nvml *n, struct gpumem_check_device *d,
			    int counters)
{
	struct gpumem_check_health *h = &d->health;
	const char *err;
	int rv = -1;

	h->nvml = n->state;
	snprintf(h->nvml_note, sizeof(h->nvml_note), "%s", n->note);
	if (n->state != GPUMEM_CHECK_NVML_OK)
		goto fail;
	/*
	 * By PCI bus id first: for a MIG instance that finds the parent GPU,
	 * whose MIG mode is what we need to know.  The UUID is the fallback.
	 */
	h->nv.uuid[0] = '\0';
	if (gpumem_health_read_gpu(n->h, d->pci_bus_id, d->uuid,
				   GPUMEM_HEALTH_PART_MIG | GPUMEM_HEALTH_PART_PEAK | (counters ? COUNTERS : 0), &h->nv,
				   &err) < 0) {
		h->nvml = GPUMEM_CHECK_NVML_ERROR;
		snprintf(h->nvml_note, sizeof(h->nvml_note), "NVML error: no NVML device for %s: %s",
			 d->pci_bus_id[0] ? d->pci_bus_id : d->uuid, err);
		goto fail;
	}
	if (d->uuid[0] && h->nv.uuid[0])
		h->mig_instance = strcasecmp(h->nv.uuid, d->uuid) != 0;
	rv = 0;
fail:
	return rv;
}
