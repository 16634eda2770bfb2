/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one NVML reader (plugin/core/health/health_nvml.c, health_doc.c): its pure
 * parts (the model cleared, the clock event reasons by name, the slowdown
 * bits and their alarms), then its reads over the stand-in NVML
 * (tests/fake-nvml; the test runs itself again with it on
 * LD_LIBRARY_PATH): one NVML per process however often it is asked for, a
 * GPU found by UUID (the check's lookup) and by index (gpumem-health's)
 * read alike, each part filling its own fields and no other, a GPU NVML
 * does not know refused with NVML's word.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core_health.h"
#include "tap.h"

static void count_alarm(const char *text, void *arg)
{
	char *buf = arg;

	strncat(buf, text, 511 - strlen(buf));
	strncat(buf, ";", 511 - strlen(buf));
}

static void pure(void)
{
	struct gpumem_health_dev d;
	char buf[512];

	memset(&d, 0x5a, sizeof(d));
	snprintf(d.gpu, sizeof(d.gpu), "3");
	gpumem_health_clear(&d);
	ok(d.found == 0 && d.ecc_enabled == -1 && d.ecc_pending == -1 && d.ecc[1][1] == -1 &&
	   d.remap_c == -1 && d.retired_pending == -1 && d.clocks == -1 && d.max_width == -1 &&
	   d.nvl_up == -1 && d.mem_procs == -1 && d.mig_mode == -1 && d.uuid[0] == '\0',
	   "cleared: every field unknown");
	is_str(d.gpu, "3", "... the GPU asked for kept");
	gpumem_health_clock_names(0x28, buf, sizeof(buf));
	is_str(buf, "hw_slowdown,sw_thermal", "clock reasons by name");
	gpumem_health_clock_names(0x41, buf, sizeof(buf));
	is_str(buf, "gpu_idle,hw_thermal", "... two of them");
	gpumem_health_clock_names(0, buf, sizeof(buf));
	is_str(buf, "none", "none");
	gpumem_health_clock_names(-1, buf, sizeof(buf));
	is_str(buf, "unknown", "unknown below 0");
	gpumem_health_clock_names(0x10001, buf, sizeof(buf));
	is_str(buf, "gpu_idle,other(0x10000)", "a bit not named: other(MASK)");
	gpumem_health_clock_names(0x1ff, buf, 8);
	ok(strlen(buf) < 8, "cut safely to the buffer");
	is_int((int)GPUMEM_HEALTH_SLOWDOWN, 0xe8, "the slowdown bits: hw, sw thermal, hw thermal, "
	       "power brake");
	d.found = 1;
	buf[0] = '\0';
	d.clocks = (long long)(GPUMEM_HEALTH_SLOWDOWN | GPUMEM_HEALTH_GPU_IDLE |
			       GPUMEM_HEALTH_SW_POWER_CAP);
	gpumem_health_alarms(&d, count_alarm, buf);
	is_str(buf, "clocks: hardware slowdown;clocks: hardware thermal slowdown;"
	       "clocks: power brake slowdown;clocks: software thermal slowdown;",
	       "an alarm for each slowdown bit, none for idle or the power cap");
}

/* Over the stand-in NVML: 3 GPUs, GPU 1 with counters of its own, GPU 2 in MIG mode. */
static void reads(void)
{
	struct gpumem_health_nvml *a, *b;
	struct gpumem_health_dev byidx, byuuid, part;
	char driver[96], note[300];
	const char *err = NULL;
	int missing = 1;

	a = gpumem_health_shared(driver, sizeof(driver), note, sizeof(note), &missing);
	ok(a != NULL && missing == 0, "NVML started (the stand-in)");
	if (a == NULL)
		return;
	is_str(note, "ok", "... ok");
	is_str(driver, "580.00-standin", "... its driver's version");
	driver[0] = '\0';
	b = gpumem_health_shared(driver, sizeof(driver), note, sizeof(note), &missing);
	ok(a == b, "asked again: the same NVML (one nvmlInit per process)");
	is_str(driver, "580.00-standin", "... with its driver's version");
	is_int((int)gpumem_health_count(a), 3, "three GPUs");

	snprintf(byidx.gpu, sizeof(byidx.gpu), "1");
	gpumem_health_read(a, &byidx);
	ok(byidx.found, "GPU 1 by index (gpumem-health's lookup)");
	is_str(byidx.uuid, "GPU-fa4e0000-0000-4000-8000-000000000001", "... its UUID");
	ok(byidx.ecc[0][1] == 3 && byidx.remap_pending == 1 && byidx.clocks == 0x40 &&
	   byidx.gen == 4 && byidx.max_gen == 5, "... its counters");
	gpumem_health_clear(&byuuid);
	is_int(gpumem_health_read_gpu(a, "", byidx.uuid, GPUMEM_HEALTH_PART_ALL |
				      GPUMEM_HEALTH_PART_MIG, &byuuid, &err), 0,
	       "GPU 1 by UUID (the check's lookup)");
	ok(byuuid.ecc[0][0] == byidx.ecc[0][0] && byuuid.ecc[0][1] == byidx.ecc[0][1] &&
	   byuuid.ecc[1][1] == byidx.ecc[1][1] && byuuid.remap_c == byidx.remap_c &&
	   byuuid.remap_pending == byidx.remap_pending && byuuid.retired_dbe == byidx.retired_dbe &&
	   byuuid.clocks == byidx.clocks && byuuid.width == byidx.width &&
	   byuuid.nvl_up == byidx.nvl_up && byuuid.mem_used == byidx.mem_used,
	   "... the same counters as by index");
	is_int(byuuid.mig_mode, 0, "... MIG mode off");
	gpumem_health_clear(&part);
	gpumem_health_read_gpu(a, NULL, byidx.uuid, GPUMEM_HEALTH_PART_PCIE, &part, &err);
	ok(part.gen == 4 && part.width == 16 && part.ecc_enabled == -1 && part.ecc[0][1] == -1 &&
	   part.clocks == -1 && part.mig_mode == -1 && part.uuid[0] == '\0',
	   "the PCIe part alone: the link, nothing else");
	gpumem_health_clear(&part);
	part.ecc_enabled = 0;   /* the check's: CUDA said ECC is off */
	gpumem_health_read_gpu(a, NULL, byidx.uuid, GPUMEM_HEALTH_PART_ECC, &part, &err);
	ok(part.ecc_enabled == 1 && part.ecc[0][1] == 3 && part.gen == -1,
	   "the ECC part: NVML's mode over CUDA's, then the counters");
	gpumem_health_clear(&part);
	gpumem_health_read_gpu(a, NULL, "GPU-fa4e0000-0000-4000-8000-000000000002",
			       GPUMEM_HEALTH_PART_MIG, &part, &err);
	is_int(part.mig_mode, 1, "GPU 2: MIG mode on");
	is_int(gpumem_health_read_gpu(a, NULL, "GPU-00000000-dead", GPUMEM_HEALTH_PART_ALL, &part,
				      &err), -1, "a UUID NVML does not know: refused");
	ok(err != NULL && err[0], "... with NVML's word");
	is_int(gpumem_health_read_gpu(a, "", "", GPUMEM_HEALTH_PART_ALL, &part, &err), -1,
	       "neither PCI bus id nor UUID: refused");
}

/* With the stand-in NVML on LD_LIBRARY_PATH (read at start: hence run again); 0 when none. */
static int with_fake(char **argv)
{
	char exe[PATH_MAX], lib[PATH_MAX + 64], so[PATH_MAX + 96];
	ssize_t n;

	if (getenv("GPUMEM_TEST_FAKE_NVML"))
		return 1;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	snprintf(lib, sizeof(lib), "%s/../fake-nvml/.libs", dirname(exe));
	snprintf(so, sizeof(so), "%s/libnvidia-ml.so.1", lib);
	if (access(so, R_OK) != 0)
		return 0;
	setenv("GPUMEM_TEST_FAKE_NVML", "1", 1);
	setenv("LD_LIBRARY_PATH", lib, 1);
	setenv("FAKE_NVML_GPUS", "3", 1);
	setenv("FAKE_NVML_MIG", "2", 1);
	setenv("FAKE_NVML_HEALTH_1", "ecc_vu=3,remap_p=1,thr=64,gen=4", 1);
	execv("/proc/self/exe", argv);
	return 0;
}

int main(int argc, char **argv)
{
	int fake = with_fake(argv);

	(void)argc;
	pure();
	if (fake)
		reads();
	else
		ok(1, "# SKIP the stand-in NVML (tests/fake-nvml) was not built");
	return tap_done();
}
