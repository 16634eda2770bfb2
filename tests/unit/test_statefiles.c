/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugin/spank/state/statefiles.c: the names of the files in state_dir and
 * mps_dir, and their one rule for the suffix:
 * <NODE> on what only the job prolog and epilog of a node use, <HOST> on
 * what a step reads or writes, nothing on what is the host's; every name
 * made safe, none with a '/'; a name that does not fit is refused.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "statefiles.h"
#include "tap.h"

int main(void)
{
	char host[65], want[256], name[256];

	gpumem_sf_host(host, sizeof(host));
	ok(host[0] && !strchr(host, '/'), "this host's name, made safe (%s)", host);

	gpumem_sf_job(name, sizeof(name), GPUMEM_SF_REC, 7, "gpu/01");
	is_str(name, "job7.gpu_01.rec", "the epilog's record: by node, made safe");
	gpumem_sf_job(name, sizeof(name), GPUMEM_SF_REC, 7, NULL);
	snprintf(want, sizeof(want), "job7.%s.rec", host);
	is_str(name, want, "the steps' record: by host");
	gpumem_sf_job(name, sizeof(name), GPUMEM_SF_L2, 7, "n1");
	snprintf(want, sizeof(want), "job7.%s.l2", host);
	is_str(name, want, "a step's L2 mark: by host, whatever node is given");
	gpumem_sf_job(name, sizeof(name), GPUMEM_SF_MPS, 7, NULL);
	snprintf(want, sizeof(want), "mps.7.%s", host);
	is_str(name, want, "the MPS daemon's record (steps wait for it): by host");
	gpumem_sf_job(name, sizeof(name), GPUMEM_SF_SAMPLE, 7, "n1");
	is_str(name, "sample.7.n1", "the sampler's record: by node");
	gpumem_sf_job(name, sizeof(name), GPUMEM_SF_PROF, 7, "../../etc/x");
	is_str(name, "prof.7..._.._etc_x", "the profile: by node, no '/' ever");
	ok(gpumem_sf_job(name, 8, GPUMEM_SF_PROF, 7, "n1") < 0, "a name that does not fit: -1");

	gpumem_sf_gpu(name, sizeof(name), GPUMEM_SF_PASS, "n1", "3");
	is_str(name, "pass.n1.3", "gpus/: a GPU's last measured pass, per node");
	gpumem_sf_gpu(name, sizeof(name), GPUMEM_SF_SUSPECT, "n1", NULL);
	is_str(name, "suspect.n1.all", "gpus/: gpus=all is one key, all");
	gpumem_sf_gpu(name, sizeof(name), GPUMEM_SF_SUSPECT, "n1", "MIG-GPU-ab/1/0");
	is_str(name, "suspect.n1.MIG-GPU-ab_1_0", "gpus/: a MIG instance, made safe");

	gpumem_sf_tmp(name, sizeof(name), "probe.cache");
	snprintf(want, sizeof(want), ".probe.cache.%d.tmp", (int)getpid());
	is_str(name, want, "the temporary name before the rename");

	gpumem_mps_path(name, sizeof(name), "/run/gpumem-mps", 7, NULL);
	is_str(name, "/run/gpumem-mps/job7", "mps_dir/job<JOB>");
	gpumem_mps_path(name, sizeof(name), "/run/gpumem-mps", 7, GPUMEM_MPS_PIPE);
	is_str(name, "/run/gpumem-mps/job7/pipe", "... its pipe directory");
	gpumem_mps_path(name, sizeof(name), "/run/gpumem-mps", 7, GPUMEM_MPS_LOG);
	is_str(name, "/run/gpumem-mps/job7/log", "... its log directory");
	gpumem_mps_path(name, sizeof(name), "/run/gpumem-mps", 7, GPUMEM_MPS_CONTROL_OUT);
	is_str(name, "/run/gpumem-mps/job7/log/control.out", "... the daemon's output");
	gpumem_mps_path(name, sizeof(name), "/run/gpumem-mps", 7, GPUMEM_MPS_CONTROL_SOCKET);
	is_str(name, "/run/gpumem-mps/job7/pipe/control", "... its control socket");
	gpumem_mps_nomps_path(name, sizeof(name), "/run/gpumem-mps");
	is_str(name, "/run/gpumem-mps/nomps", "mps_dir/nomps");
	ok(gpumem_mps_path(name, 12, "/run/gpumem-mps", 7, NULL) < 0, "a path that does not fit: -1");
	return tap_done();
}
