/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A user's own SPANK plugin, for tests/slurm/jobtrust.sh: what a hostile
 * user can load into their own srun/sbatch/salloc (their own slurm.conf
 * through SLURM_CONF, naming their own plugstack.conf).  In those commands
 * it sets job-control variables, which reach the job prolog and epilog as
 * SPANK_<NAME>: for each JOBENV_<NAME>=VALUE in its environment, NAME=VALUE.
 * Loaded after gpumem.so, it overwrites what gpumem forwarded.  Not
 * installed; built by the test with cc against the installed spank.h.
 */
#include <stdlib.h>
#include <string.h>
#include <slurm/spank.h>

SPANK_PLUGIN(jobenv, 1);

extern char **environ;

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_LOCAL && spank_context() != S_CTX_ALLOCATOR)
		return 0;
	for (char **e = environ; *e; e++) {
		char name[256];
		const char *eq = strchr(*e, '=');

		if (strncmp(*e, "JOBENV_", 7) || eq == NULL || (size_t)(eq - *e) - 7 >= sizeof(name))
			continue;
		memcpy(name, *e + 7, (size_t)(eq - *e) - 7);
		name[eq - *e - 7] = '\0';
		spank_job_control_setenv(sp, name, eq + 1, 1);
	}
	return 0;
}
