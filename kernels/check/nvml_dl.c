/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVML through dlopen, with our own minimal prototypes (see nvml_dl.h).
 * Every query is optional: an old driver without a symbol, or a GPU that
 * answers "not supported", leaves that field unknown (-1) instead of
 * failing the check.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "nvml_dl.h"

/* nvmlMemoryErrorType_t, nvmlEccCounterType_t, nvmlPageRetirementCause_t */
#define NVML_MEMORY_ERROR_TYPE_CORRECTED   0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC                  0
#define NVML_RETIRED_MULTIPLE_SBE          0
#define NVML_RETIRED_DOUBLE_BIT            1
/* nvmlClockType_t */
#define NVML_CLOCK_MEM                     2

static const char *errstr(const struct gpumem_check_nvml *n, gpumem_nvmlReturn_t r)
{
	const char *s = n->error_string ? n->error_string(r) : NULL;
	return s ? s : "unknown NVML error";
}

int gpumem_check_nvml_open(struct gpumem_check_nvml *n)
{
	gpumem_nvmlReturn_t r;
	int rv = -1;

	memset(n, 0, sizeof(*n));
	n->lib = gpumem_nvml_open();
	if (!n->lib) {
		n->state = GPUMEM_CHECK_NVML_MISSING;
		snprintf(n->note, sizeof(n->note), "skipped: NVML not found");
		goto fail;
	}
	GPUMEM_DLSYM_OR(n->lib, n->init, "nvmlInit_v2", "nvmlInit");
	GPUMEM_DLSYM(n->lib, n->shutdown, "nvmlShutdown");
	GPUMEM_DLSYM(n->lib, n->error_string, "nvmlErrorString");
	GPUMEM_DLSYM(n->lib, n->driver_version, "nvmlSystemGetDriverVersion");
	GPUMEM_DLSYM_OR(n->lib, n->by_pci, "nvmlDeviceGetHandleByPciBusId_v2",
			"nvmlDeviceGetHandleByPciBusId");
	GPUMEM_DLSYM(n->lib, n->by_uuid, "nvmlDeviceGetHandleByUUID");
	GPUMEM_DLSYM(n->lib, n->uuid, "nvmlDeviceGetUUID");
	GPUMEM_DLSYM(n->lib, n->ecc_mode, "nvmlDeviceGetEccMode");
	GPUMEM_DLSYM(n->lib, n->ecc_total, "nvmlDeviceGetTotalEccErrors");
	GPUMEM_DLSYM(n->lib, n->retired, "nvmlDeviceGetRetiredPages");
	GPUMEM_DLSYM(n->lib, n->retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
	GPUMEM_DLSYM(n->lib, n->remapped, "nvmlDeviceGetRemappedRows");
	GPUMEM_DLSYM(n->lib, n->pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
	GPUMEM_DLSYM(n->lib, n->pcie_width, "nvmlDeviceGetCurrPcieLinkWidth");
	GPUMEM_DLSYM(n->lib, n->pcie_max_gen, "nvmlDeviceGetMaxPcieLinkGeneration");
	GPUMEM_DLSYM(n->lib, n->pcie_max_width, "nvmlDeviceGetMaxPcieLinkWidth");
	/* Renamed in R535; the old name stays exported for compatibility. */
	GPUMEM_DLSYM_OR(n->lib, n->clock_reasons, "nvmlDeviceGetCurrentClocksEventReasons",
			"nvmlDeviceGetCurrentClocksThrottleReasons");
	GPUMEM_DLSYM(n->lib, n->mig_mode, "nvmlDeviceGetMigMode");
	GPUMEM_DLSYM(n->lib, n->arch, "nvmlDeviceGetArchitecture");
	GPUMEM_DLSYM(n->lib, n->bus_width, "nvmlDeviceGetMemoryBusWidth");
	GPUMEM_DLSYM(n->lib, n->max_clock, "nvmlDeviceGetMaxClockInfo");
	if (!n->init || !n->shutdown || (!n->by_pci && !n->by_uuid)) {
		n->state = GPUMEM_CHECK_NVML_ERROR;
		snprintf(n->note, sizeof(n->note), "NVML error: libnvidia-ml.so.1 lacks nvmlInit");
		goto fail;
	}
	r = n->init();
	if (r != GPUMEM_NVML_SUCCESS) {
		n->state = GPUMEM_CHECK_NVML_ERROR;
		snprintf(n->note, sizeof(n->note), "NVML error: nvmlInit: %s", errstr(n, r));
		n->shutdown = NULL;     /* nothing to shut down */
		goto fail;
	}
	if (n->driver_version && n->driver_version(n->driver, sizeof(n->driver)) != GPUMEM_NVML_SUCCESS)
		n->driver[0] = '\0';
	n->state = GPUMEM_CHECK_NVML_OK;
	snprintf(n->note, sizeof(n->note), "ok");
	rv = 0;
fail:
	return rv;
}

static int ok(gpumem_nvmlReturn_t r)
{
	return r == GPUMEM_NVML_SUCCESS;
}

/* The NVML handle of d: by PCI bus id (for a MIG slice: its GPU), else UUID. */
static gpumem_nvmlReturn_t handle(const struct gpumem_check_nvml *n,
				  const struct gpumem_check_device *d, gpumem_nvmlDevice_t *dev)
{
	gpumem_nvmlReturn_t r = GPUMEM_NVML_ERROR_NOT_FOUND;

	if (n->by_pci && d->pci_bus_id[0])
		r = n->by_pci(d->pci_bus_id, dev);
	if (!ok(r) && n->by_uuid && d->uuid[0])
		r = n->by_uuid(d->uuid, dev);
	return r;
}

static void query_pcie(const struct gpumem_check_nvml *n, gpumem_nvmlDevice_t dev,
		       struct gpumem_check_health *h)
{
	unsigned int a;

	if (n->pcie_gen && ok(n->pcie_gen(dev, &a)))
		h->pcie_gen = (int)a;
	if (n->pcie_width && ok(n->pcie_width(dev, &a)))
		h->pcie_width = (int)a;
	if (n->pcie_max_gen && ok(n->pcie_max_gen(dev, &a)))
		h->pcie_max_gen = (int)a;
	if (n->pcie_max_width && ok(n->pcie_max_width(dev, &a)))
		h->pcie_max_width = (int)a;
}

/* What the GPU's peak is computed from (peak.h); the PCIe maximum is query_pcie's. */
static void query_peak(const struct gpumem_check_nvml *n, gpumem_nvmlDevice_t dev,
		       struct gpumem_check_health *h)
{
	unsigned int a;

	if (n->arch && ok(n->arch(dev, &a)) && a < 1000)
		h->arch = (int)a;
	if (n->bus_width && ok(n->bus_width(dev, &a)) && a > 0 && a < 100000)
		h->bus_bits = (int)a;
	if (n->max_clock && ok(n->max_clock(dev, NVML_CLOCK_MEM, &a)) && a > 0 && a < 100000)
		h->mem_mhz = (int)a;
}

/* The counters --quick leaves out: ECC, retirement/remapping, PCIe, clocks. */
static void query_counters(const struct gpumem_check_nvml *n, gpumem_nvmlDevice_t dev,
			   struct gpumem_check_health *h)
{
	gpumem_nvmlReturn_t r;
	unsigned int a, b, c, e;
	unsigned long long ull;
	int cur, pend;

	if (n->ecc_mode && ok(n->ecc_mode(dev, &cur, &pend))) {
		h->ecc_enabled = cur == 1;
		h->ecc_pending = pend == 1;
	} else if (n->ecc_mode) {
		h->ecc_enabled = 0;     /* "not supported": no ECC on this GPU */
	}
	if (n->ecc_total && h->ecc_enabled == 1) {
		if (ok(n->ecc_total(dev, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &ull)))
			h->ecc_corrected = (long long)ull;
		if (ok(n->ecc_total(dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ull)))
			h->ecc_uncorrected = (long long)ull;
	}
	/* Page retirement is the pre-Ampere mechanism; row remapping replaced it. */
	if (n->retired) {
		a = 0;
		r = n->retired(dev, NVML_RETIRED_MULTIPLE_SBE, &a, NULL);
		if (ok(r) || r == GPUMEM_NVML_ERROR_INSUFFICIENT_SIZE)
			h->retired_sbe = a;
		a = 0;
		r = n->retired(dev, NVML_RETIRED_DOUBLE_BIT, &a, NULL);
		if (ok(r) || r == GPUMEM_NVML_ERROR_INSUFFICIENT_SIZE)
			h->retired_dbe = a;
	}
	if (n->retired_pending && ok(n->retired_pending(dev, &cur)))
		h->retired_pending = cur == 1;
	if (n->remapped && ok(n->remapped(dev, &a, &b, &c, &e))) {
		h->remap_corr = a;
		h->remap_unc = b;
		h->remap_pending = c != 0;
		h->remap_failure = e != 0;
	}
	if (n->clock_reasons && ok(n->clock_reasons(dev, &ull)))
		h->throttle = (long long)(ull & 0x7fffffffffffffffull);
}

int gpumem_check_nvml_pcie(const struct gpumem_check_nvml *n, struct gpumem_check_device *d)
{
	gpumem_nvmlDevice_t dev = NULL;

	if (n->state != GPUMEM_CHECK_NVML_OK || !ok(handle(n, d, &dev)))
		return -1;
	query_pcie(n, dev, &d->health);
	return 0;
}

int gpumem_check_nvml_query(const struct gpumem_check_nvml *n, struct gpumem_check_device *d,
			    int counters)
{
	struct gpumem_check_health *h = &d->health;
	gpumem_nvmlDevice_t dev = NULL;
	gpumem_nvmlReturn_t r = GPUMEM_NVML_ERROR_NOT_FOUND;
	unsigned int a, b;
	char uuid[96];
	int rv = -1;

	h->nvml = n->state;
	snprintf(h->nvml_note, sizeof(h->nvml_note), "%s", n->note);
	if (n->state != GPUMEM_CHECK_NVML_OK)
		goto fail;
	/*
	 * By PCI bus id first: for a MIG instance that finds the parent GPU,
	 * whose MIG mode is what we need to know.  The UUID is the fallback.
	 */
	r = handle(n, d, &dev);
	if (!ok(r)) {
		h->nvml = GPUMEM_CHECK_NVML_ERROR;
		snprintf(h->nvml_note, sizeof(h->nvml_note), "NVML error: no NVML device for %s: %s",
			 d->pci_bus_id[0] ? d->pci_bus_id : d->uuid, errstr(n, r));
		goto fail;
	}
	if (n->uuid && d->uuid[0] && ok(n->uuid(dev, uuid, sizeof(uuid))))
		h->mig_instance = strcasecmp(uuid, d->uuid) != 0;
	if (n->mig_mode) {
		r = n->mig_mode(dev, &a, &b);
		if (ok(r))
			h->mig_mode = a == 1;
		else if (r == GPUMEM_NVML_ERROR_NOT_SUPPORTED)
			h->mig_mode = 0;        /* not a MIG-capable GPU */
	}
	query_peak(n, dev, h);
	if (counters)
		query_counters(n, dev, h);
	rv = 0;
fail:
	return rv;
}
