/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NUMA placement of the pinned host buffers (see check_numa.h).  A pinned
 * buffer on the far socket costs an inter-socket hop on every H2D/D2H
 * transfer, which is exactly the kind of misconfiguration the check should
 * not hide, nor cause itself.
 */
#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef HAVE_HWLOC
#include <hwloc.h>
#endif

#include "check_numa.h"

#ifdef HAVE_HWLOC
struct gpumem_check_topo {
	hwloc_topology_t topo;
};

static const char *const gpu_plugins[] = { "cuda", "nvml", "opencl", "rsmi", "levelzero", "gl" };

struct gpumem_check_topo *gpumem_check_topo_load(char *why, size_t len)
{
	struct gpumem_check_topo *t = calloc(1, sizeof(*t));
	int inited = 0;

	if (!t) {
		snprintf(why, len, "out of memory");
		goto fail;
	}
	if (hwloc_topology_init(&t->topo) < 0) {
		snprintf(why, len, "hwloc_topology_init: %s", strerror(errno));
		goto fail;
	}
	inited = 1;
	/*
	 * Only what the placement needs: PCI devices, no caches (faster load),
	 * and none of hwloc's GPU plugins (libhwloc-plugins, where installed):
	 * they would start CUDA and NVML in this thread, beside the check's
	 * own contexts and its NVML thread.
	 */
	for (size_t i = 0; i < sizeof(gpu_plugins) / sizeof(gpu_plugins[0]); i++)
		hwloc_topology_set_components(t->topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
					      gpu_plugins[i]);
	hwloc_topology_set_io_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	hwloc_topology_set_cache_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_icache_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_NONE);
	if (hwloc_topology_load(t->topo) < 0) {
		snprintf(why, len, "hwloc_topology_load: %s", strerror(errno));
		goto fail;
	}
	return t;
fail:
	if (t && inited)
		hwloc_topology_destroy(t->topo);
	free(t);
	return NULL;
}

void gpumem_check_topo_free(struct gpumem_check_topo *t)
{
	if (!t)
		return;
	hwloc_topology_destroy(t->topo);
	free(t);
}
#else
struct gpumem_check_topo *gpumem_check_topo_load(char *why, size_t len)
{
	snprintf(why, len, "built without hwloc");
	return NULL;
}

void gpumem_check_topo_free(struct gpumem_check_topo *t)
{
	(void)t;
}
#endif

static void note_append(struct gpumem_check_numa *numa, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note_append(struct gpumem_check_numa *numa, const char *fmt, ...)
{
	size_t used = strlen(numa->note);
	va_list ap;

	if (used + 1 >= sizeof(numa->note))
		return;
	va_start(ap, fmt);
	vsnprintf(numa->note + used, sizeof(numa->note) - used, fmt, ap);
	va_end(ap);
}

/*
 * Huge pages for the buffer where the kernel gives them: 16 faults for
 * 32 MiB instead of 8192, and fewer pages for cudaHostRegister to pin and
 * map into every context: the host buffer's preparation takes less than
 * half as long, and the host-link figures are unchanged.
 * Only advice: where transparent huge pages are off the pages are small
 * as before.
 */
static void huge_advice(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
	(void)madvise(p, bytes, MADV_HUGEPAGE);
#else
	(void)p;
	(void)bytes;
#endif
}

/* Plain, touched, page-aligned memory: the no-hwloc path and the fallback. */
static int plain_alloc(size_t bytes, struct gpumem_check_hostbuf *hb)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	huge_advice(p, bytes);
	memset(p, 0x5a, bytes);         /* fault the pages in before pinning */
	hb->p = p;
	hb->bytes = bytes;
	hb->from_hwloc = 0;
	return 0;
}

#ifdef HAVE_HWLOC
static int placed_alloc(struct gpumem_check_topo *t, const char *pci_bus_id, int prefer_node,
			size_t bytes, struct gpumem_check_hostbuf *hb, struct gpumem_check_numa *numa)
{
	hwloc_topology_t topo = t->topo;
	hwloc_obj_t pci, anc, nodeobj;
	hwloc_bitmap_t one = NULL, where = NULL;
	hwloc_const_cpuset_t cpus;
	int node, bound, rv = -1;
	void *p = NULL;

	pci = hwloc_get_pcidev_by_busidstring(topo, pci_bus_id);
	if (!pci) {
		snprintf(numa->note, sizeof(numa->note),
			 "not placed: hwloc does not list PCI device %s", pci_bus_id);
		goto fail;
	}
	anc = hwloc_get_non_io_ancestor_obj(topo, pci);
	if (!anc || !anc->nodeset || hwloc_bitmap_iszero(anc->nodeset)) {
		snprintf(numa->note, sizeof(numa->note),
			 "not placed: no NUMA node near %s", pci_bus_id);
		goto fail;
	}
	/* CUDA's own idea of the near node wins when hwloc agrees it is near. */
	if (prefer_node >= 0 && hwloc_bitmap_isset(anc->nodeset, (unsigned)prefer_node))
		node = prefer_node;
	else
		node = hwloc_bitmap_first(anc->nodeset);
	numa->node = node;
	one = hwloc_bitmap_alloc();
	where = hwloc_bitmap_alloc();
	if (!one || !where) {
		snprintf(numa->note, sizeof(numa->note), "not placed: out of memory");
		goto fail;
	}
	hwloc_bitmap_only(one, (unsigned)node);

	/* The node's CPUs; a memory-only node (HBM, CXL) has none: use the ancestor's. */
	nodeobj = hwloc_get_numanode_obj_by_os_index(topo, (unsigned)node);
	cpus = nodeobj && nodeobj->cpuset && !hwloc_bitmap_iszero(nodeobj->cpuset) ?
		nodeobj->cpuset : anc->cpuset;
	bound = cpus && !hwloc_bitmap_iszero(cpus) &&
		hwloc_set_cpubind(topo, cpus, HWLOC_CPUBIND_THREAD) == 0;

	p = hwloc_alloc_membind(topo, bytes, one, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET);
	if (!p) {
		snprintf(numa->note, sizeof(numa->note),
			 "not placed: cannot bind memory to node %d: %s", node, strerror(errno));
		goto fail;
	}
	huge_advice(p, bytes);
	memset(p, 0x5a, bytes);         /* first touch, on the bound node */
	hb->p = p;
	hb->bytes = bytes;
	hb->from_hwloc = 1;
	p = NULL;
	if (hwloc_get_area_memlocation(topo, hb->p, bytes, where, HWLOC_MEMBIND_BYNODESET) == 0 &&
	    hwloc_bitmap_isequal(where, one)) {
		numa->placed = bound;
		if (bound)
			snprintf(numa->note, sizeof(numa->note), "host buffer and thread on NUMA node %d",
				 node);
		else
			snprintf(numa->note, sizeof(numa->note), "host buffer on NUMA node %d; thread "
				 "not bound (no allowed CPU there)", node);
	} else {
		snprintf(numa->note, sizeof(numa->note),
			 "host buffer bound to NUMA node %d, placement not verified", node);
	}
	rv = 0;
fail:
	if (p)
		hwloc_free(topo, p, bytes);
	hwloc_bitmap_free(one);
	hwloc_bitmap_free(where);
	return rv;
}
#endif

int gpumem_check_host_alloc(struct gpumem_check_topo *t, const char *pci_bus_id,
			    int prefer_node, size_t bytes, struct gpumem_check_hostbuf *hb,
			    struct gpumem_check_numa *numa)
{
	int rv = -1;

	memset(hb, 0, sizeof(*hb));
	numa->placed = 0;
	numa->node = -1;
#ifdef HAVE_HWLOC
	if (t && placed_alloc(t, pci_bus_id, prefer_node, bytes, hb, numa) == 0)
		return 0;
	if (!t && !numa->note[0])
		snprintf(numa->note, sizeof(numa->note), "not placed: hwloc topology not available");
#else
	(void)t;
	(void)pci_bus_id;
	snprintf(numa->note, sizeof(numa->note), "not placed: built without hwloc");
#endif
	if (prefer_node >= 0)
		note_append(numa, " (CUDA reports host NUMA node %d)", prefer_node);
	if (plain_alloc(bytes, hb) < 0) {
		note_append(numa, "; cannot allocate %zu bytes", bytes);
		goto fail;
	}
	rv = 0;
fail:
	return rv;
}

void gpumem_check_host_free(struct gpumem_check_topo *t, struct gpumem_check_hostbuf *hb)
{
	if (!hb->p)
		return;
#ifdef HAVE_HWLOC
	if (hb->from_hwloc && t) {
		hwloc_free(t->topo, hb->p, hb->bytes);
		hb->p = NULL;
		return;
	}
#else
	(void)t;
#endif
	munmap(hb->p, hb->bytes);
	hb->p = NULL;
}
