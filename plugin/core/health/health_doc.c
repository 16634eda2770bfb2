/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The gpumem-health/1 document (doc/CHECK-JSON.md) built from NVML's
 * reads (health_nvml.c): what gpumem-health prints (plugin/health/health.c,
 * a fresh process that starts NVML each time) and what the warm check
 * server answers a health request with (kernels/check/check_serve.c, NVML
 * started once and kept), from this one code, so that both give the same
 * document.  Also each GPU's "evidence" (the counters, as one string the
 * plugin compares with the one kept with the GPU's last measured pass)
 * and its "alarms" (what forbids reusing any pass now): doc/admin/checks.md,
 * "Reuse: a check that rests on evidence".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core_base.h"
#include "nvhealth.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

static void field(char *buf, size_t len, size_t *o, const char *name, long long v)
{
	if (*o >= len)
		return;
	if (v < 0)
		*o += (size_t)snprintf(buf + *o, len - *o, " %s=?", name);
	else
		*o += (size_t)snprintf(buf + *o, len - *o, " %s=%lld", name, v);
}

void gpumem_health_evidence(const struct gpumem_health_dev *d, char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "uuid=%s", d->uuid[0] ? d->uuid : "?");

	field(buf, len, &o, "ecc.volatile.corrected", d->ecc[0][0]);
	field(buf, len, &o, "ecc.volatile.uncorrected", d->ecc[0][1]);
	field(buf, len, &o, "ecc.aggregate.corrected", d->ecc[1][0]);
	field(buf, len, &o, "ecc.aggregate.uncorrected", d->ecc[1][1]);
	field(buf, len, &o, "remapped.correctable", d->remap_c);
	field(buf, len, &o, "remapped.uncorrectable", d->remap_u);
	field(buf, len, &o, "retired.single_bit", d->retired_sbe);
	field(buf, len, &o, "retired.double_bit", d->retired_dbe);
	field(buf, len, &o, "pcie.max_gen", d->max_gen);
	field(buf, len, &o, "pcie.max_width", d->max_width);
	field(buf, len, &o, "nvlink.active", d->nvl_up);
}

void gpumem_health_clock_names(long long mask, char *buf, size_t len)
{
	static const struct { unsigned long long bit; const char *name; } names[] = {
		{ GPUMEM_HEALTH_GPU_IDLE, "gpu_idle" },
		{ GPUMEM_HEALTH_APP_CLOCKS, "applications_clocks" },
		{ GPUMEM_HEALTH_SW_POWER_CAP, "sw_power_cap" },
		{ GPUMEM_HEALTH_HW_SLOWDOWN, "hw_slowdown" },
		{ GPUMEM_HEALTH_SYNC_BOOST, "sync_boost" },
		{ GPUMEM_HEALTH_SW_THERMAL, "sw_thermal" },
		{ GPUMEM_HEALTH_HW_THERMAL, "hw_thermal" },
		{ GPUMEM_HEALTH_HW_POWER_BRAKE, "hw_power_brake" },
		{ GPUMEM_HEALTH_DISPLAY_CLOCKS, "display_clocks" },
	};
	unsigned long long m = (unsigned long long)mask, known = 0;
	size_t used = 0, i;

	if (!len)
		return;
	buf[0] = '\0';
	if (mask < 0) {
		snprintf(buf, len, "unknown");
		return;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		known |= names[i].bit;
		if ((m & names[i].bit) && used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 used ? "," : "", names[i].name);
	}
	if ((m & ~known) && used < len)
		used += (size_t)snprintf(buf + used, len - used, "%sother(0x%llx)",
					 used ? "," : "", m & ~known);
	if (!used)
		snprintf(buf, len, "none");
}

/* The alarm of each slowdown reason (GPUMEM_HEALTH_SLOWDOWN's bits, each named once here). */
static const struct { unsigned long long bit; const char *what; } slow[] = {
	{ GPUMEM_HEALTH_HW_SLOWDOWN, "clocks: hardware slowdown" },
	{ GPUMEM_HEALTH_HW_THERMAL, "clocks: hardware thermal slowdown" },
	{ GPUMEM_HEALTH_HW_POWER_BRAKE, "clocks: power brake slowdown" },
	{ GPUMEM_HEALTH_SW_THERMAL, "clocks: software thermal slowdown" },
};

void gpumem_health_alarms(const struct gpumem_health_dev *d,
			  void (*alarm)(const char *text, void *arg), void *arg)
{
	char text[96];

	if (!d->found) {
		alarm(d->note, arg);
		return;
	}
	if (d->remap_pending == 1)
		alarm("remapped rows: a remapping is pending (reset the GPU)", arg);
	if (d->remap_failure == 1)
		alarm("remapped rows: a remapping failed", arg);
	if (d->retired_pending == 1)
		alarm("retired pages: a retirement is pending (reset the GPU)", arg);
	for (size_t i = 0; d->clocks > 0 && i < sizeof(slow) / sizeof(slow[0]); i++)
		if ((unsigned long long)d->clocks & GPUMEM_HEALTH_SLOWDOWN & slow[i].bit)
			alarm(slow[i].what, arg);
	/* The width holds at idle; the generation drops to save power, so only the width. */
	if (d->width > 0 && d->max_width > 0 && d->width < d->max_width) {
		snprintf(text, sizeof(text), "PCIe link x%d of x%d", d->width, d->max_width);
		alarm(text, arg);
	}
	if (d->mem_used >= 0 && d->mem_procs >= 0 &&
	    d->mem_used - d->mem_procs > GPUMEM_HEALTH_UNOWNED_MAX) {
		snprintf(text, sizeof(text), "memory: %.1f GiB held by no process",
			 (double)(d->mem_used - d->mem_procs) / (1 << 30));
		alarm(text, arg);
	}
}

static struct json_object *num(long long v)
{
	return v < 0 ? NULL : gpumem_json_int(v);
}

static struct json_object *flag(int v)
{
	return v < 0 ? NULL : gpumem_json_bool(v);
}

static struct json_object *pair(const char *a, long long va, const char *b, long long vb)
{
	struct json_object *o = json_object_new_object();

	gpumem_json_add(o, a, num(va));
	gpumem_json_add(o, b, num(vb));
	return o;
}

static void add_alarm(const char *text, void *arg)
{
	json_object_array_add(arg, gpumem_json_string(text));
}

static struct json_object *device(const struct gpumem_health_dev *d)
{
	struct json_object *o = json_object_new_object(), *x, *alarms = json_object_new_array();
	char ev[1024], mask[32];

	gpumem_json_add(o, "gpu", gpumem_json_string(d->gpu));
	gpumem_json_add(o, "found", gpumem_json_bool(d->found));
	gpumem_json_add(o, "note", d->found ? NULL : gpumem_json_string(d->note));
	gpumem_json_add(o, "uuid", d->uuid[0] ? gpumem_json_string(d->uuid) : NULL);
	gpumem_health_evidence(d, ev, sizeof(ev));
	gpumem_json_add(o, "evidence", d->found ? gpumem_json_string(ev) : NULL);
	gpumem_health_alarms(d, add_alarm, alarms);
	gpumem_json_add(o, "alarms", alarms);
	if (!d->found)
		return o;
	x = json_object_new_object();
	gpumem_json_add(x, "enabled", flag(d->ecc_enabled));
	gpumem_json_add(x, "volatile", pair("corrected", d->ecc[0][0], "uncorrected", d->ecc[0][1]));
	gpumem_json_add(x, "aggregate", pair("corrected", d->ecc[1][0], "uncorrected", d->ecc[1][1]));
	gpumem_json_add(o, "ecc", x);
	x = pair("correctable", d->remap_c, "uncorrectable", d->remap_u);
	gpumem_json_add(x, "pending", flag(d->remap_pending));
	gpumem_json_add(x, "failure", flag(d->remap_failure));
	gpumem_json_add(o, "remapped_rows", x);
	x = pair("single_bit", d->retired_sbe, "double_bit", d->retired_dbe);
	gpumem_json_add(x, "pending", flag(d->retired_pending));
	gpumem_json_add(o, "retired_pages", x);
	snprintf(mask, sizeof(mask), "0x%llx", (unsigned long long)d->clocks);
	gpumem_json_add(o, "clock_event_reasons", d->clocks < 0 ? NULL : gpumem_json_string(mask));
	x = pair("gen", d->gen, "width", d->width);
	gpumem_json_add(x, "max_gen", num(d->max_gen));
	gpumem_json_add(x, "max_width", num(d->max_width));
	gpumem_json_add(o, "pcie", x);
	gpumem_json_add(o, "nvlink", d->nvl_links < 0 ? NULL :
			pair("links", d->nvl_links, "active", d->nvl_up));
	x = pair("used_bytes", d->mem_used, "process_bytes", d->mem_procs);
	gpumem_json_add(x, "unowned_bytes", d->mem_used < 0 || d->mem_procs < 0 ? NULL :
			gpumem_json_int(d->mem_used - d->mem_procs));
	gpumem_json_add(o, "memory", x);
	return o;
}

int gpumem_health_parse_list(const char *s, char idx[][16], int max)
{
	int k = 0;

	for (const char *p = s; *p && k < max; ) {
		size_t l = strcspn(p, ",");

		if (l == 0 || l >= 16 || strspn(p, "0123456789") != l)
			return -1;
		snprintf(idx[k++], 16, "%.*s", (int)l, p);
		p += l + (p[l] == ',');
	}
	return k;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

char *gpumem_health_document(struct gpumem_health_nvml *n, const char *driver, const char *note,
			     int missing, const char *gpus, const struct timespec *t0, int *code)
{
	char idx[GPUMEM_HEALTH_MAX_GPUS][16], now[32], held_why[120] = "", *text = NULL;
	struct json_object *doc = json_object_new_object(), *devs = json_object_new_array();
	struct gpumem_health_dev *dev = calloc(GPUMEM_HEALTH_MAX_GPUS, sizeof(*dev));
	time_t t = time(NULL);
	struct tm tm;
	int ngpus = gpus ? gpumem_health_parse_list(gpus, idx, GPUMEM_HEALTH_MAX_GPUS) : -1;
	int rc = 0, held;

	if (n && !gpus)
		ngpus = gpumem_health_list(n, idx, GPUMEM_HEALTH_MAX_GPUS);
	for (int i = 0; n && dev && i < ngpus; i++) {
		snprintf(dev[i].gpu, sizeof(dev[i].gpu), "%.15s", idx[i]);   /* both 16 */
		gpumem_health_read(n, &dev[i]);
		rc |= !dev[i].found;
		json_object_array_add(devs, device(&dev[i]));
	}
	held = n ? gpumem_health_node_held(n, held_why, sizeof(held_why)) : -1;
	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	gpumem_json_add(doc, "schema", gpumem_json_string(GPUMEM_HEALTH_SCHEMA));
	gpumem_json_add(doc, "program", gpumem_json_string("gpumem-health"));
	gpumem_json_add(doc, "version", gpumem_json_string(PACKAGE_VERSION));
	gpumem_json_add(doc, "time", gpumem_json_string(now));
	gpumem_json_add(doc, "nvml", gpumem_json_string(note));
	gpumem_json_add(doc, "driver", driver[0] ? gpumem_json_string(driver) : NULL);
	gpumem_json_add(doc, "wall_ms", gpumem_json_fixed(ms_since(t0), 3));
	gpumem_json_add(doc, "devices", devs);
	/* Any process on any GPU of the node: whether the epilog's L2 reset has anything to do. */
	gpumem_json_add(doc, "node_held", held < 0 ? NULL : json_object_new_boolean(held));
	gpumem_json_add(doc, "node_held_why", held < 0 ? NULL : gpumem_json_string(held_why));
	text = dev ? gpumem_json_dump(doc, GPUMEM_JSON_COMPACT) : NULL;
	json_object_put(doc);
	free(dev);
	*code = n == NULL ? (missing ? GPUMEM_EXIT_NO_GPU : 1) : rc;
	return text;
}
