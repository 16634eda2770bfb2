/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The health library's one public header (plugin/core/core.am): NVML's
 * health and its document, and the warm check server's wire.  Health
 * builds on base alone.  Each file's own header says what it owns;
 * outside health, include this one.
 */
#ifndef GPUMEM_CORE_HEALTH_H
#define GPUMEM_CORE_HEALTH_H
#include "nvhealth.h"   /* gpumem-health/1: NVML's reads and the document */
#include "peak.h"         /* the GPU's peak bandwidths from NVML's figures */
#include "checkwire.h"  /* the warm check server's requests and replies */
#endif
