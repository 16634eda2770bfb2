/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Host buffers of the H2D/D2H measurement, placed on the NUMA node nearest
 * to the GPU: PCI bus id -> hwloc PCI object -> its first non-I/O ancestor
 * -> that ancestor's NUMA node.  The measuring thread is bound to the
 * ancestor's CPUs and the pages are bound to the node, then checked with
 * hwloc_get_area_memlocation().  Without hwloc the buffer is plain memory
 * and the report says so.
 */
#ifndef GPUMEM_CHECK_NUMA_H
#define GPUMEM_CHECK_NUMA_H

#include <stddef.h>
#include "check.h"

struct gpumem_check_topo;

/* Load the topology (PCI devices included).  NULL with 'why' filled on error. */
struct gpumem_check_topo *gpumem_check_topo_load(char *why, size_t len);
void gpumem_check_topo_free(struct gpumem_check_topo *t);

struct gpumem_check_hostbuf {
	void *p;
	size_t bytes;
	int from_hwloc;
};

/*
 * Bind the calling thread near 'pci_bus_id' and allocate 'bytes' of
 * touched host memory on the nearest NUMA node ('prefer_node', CUDA's
 * hostNumaId, wins when it is one of the near nodes).  't' may be NULL
 * (no hwloc, or the topology failed): plain memory, numa->note says why.
 * Fills numa->node/placed/note.  Returns 0, or -1 when no memory at all.
 */
int gpumem_check_host_alloc(struct gpumem_check_topo *t, const char *pci_bus_id,
			    int prefer_node, size_t bytes, struct gpumem_check_hostbuf *hb,
			    struct gpumem_check_numa *numa);
void gpumem_check_host_free(struct gpumem_check_topo *t, struct gpumem_check_hostbuf *hb);

#endif
