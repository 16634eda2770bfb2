// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The node's GPU count from its device files (nodegpus.h): each GPU the
 * driver knows has /dev/nvidiaN, N its minor number; nvidiactl,
 * nvidia-uvm and nvidia-caps are not GPUs.  Read in root's prolog and
 * epilog only, from root's own /dev (or the test's stand-in folder).
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "nodegpus.h"

static int is_gpu_node(const char *name)
{
	const char *p;

	if (strncmp(name, "nvidia", 6) != 0 || !name[6])
		return 0;
	for (p = name + 6; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	return 1;
}

int gpumem_node_gpus(const char *nvidia_dev)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(nvidia_dev, '/');
	struct dirent *e;
	DIR *d;
	int n = 0;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (snprintf(dir, sizeof(dir), "%.*s", (int)(slash - nvidia_dev), nvidia_dev) >= (int)sizeof(dir))
		return 0;
	if (!dir[0])
		snprintf(dir, sizeof(dir), "/");
	d = opendir(dir);
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += is_gpu_node(e->d_name);
	closedir(d);
	return n;
}
