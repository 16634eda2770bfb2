/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Drain and resume through scontrol, as root (the job prolog and epilog,
 * after a check).  gpumem only ever touches a
 * node whose reason it wrote: an admin's drain or down is left alone, and
 * only a reason starting "gpumem:" is ever resumed.  scontrol is found on
 * the daemon's own PATH and runs with the daemon's environment (SLURM_CONF,
 * library paths): none of it comes from the job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "drain.h"
#include "core_base.h"

extern char **environ;

/* scontrol and friends: slurmd's own PATH (its absolute entries), then the usual places. */
static int find_tool(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	char dirs[4096];

	snprintf(dirs, sizeof(dirs), "%s:/usr/bin:/usr/local/bin", path ? path : "");
	return gpumem_proc_find(name, dirs, buf, len);
}

static int slurm_tool(const char *name, char *const args[], char **out)
{
	char path[4096];
	char *argv[8];
	struct gpumem_proc p = { 0 };
	int n = 0, rv = -1;

	*out = NULL;
	if (find_tool(name, path, sizeof(path)) < 0)
		return -1;
	argv[n++] = path;
	for (int i = 0; args[i] && n < 7; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	p.path = path;
	p.argv = argv;
	p.envp = environ;
	p.timeout_s = 30;
	if (gpumem_proc_run(&p) == 0) {
		rv = p.status == 0 ? 0 : -1;
		*out = p.out;
	}
	return rv;
}

static int scontrol(char *const args[], char **out)
{
	return slurm_tool("scontrol", args, out);
}

int gpumem_node_state(const char *show, int *drained, char *reason, size_t len)
{
	const char *st = strstr(show, "State="), *r = strstr(show, " Reason=");

	*drained = 0;
	reason[0] = '\0';
	if (st == NULL)
		return -1;
	st += 6;
	{
		size_t sl = strcspn(st, " \n");
		char state[128];

		snprintf(state, sizeof(state), "%.*s", (int)(sl < 127 ? sl : 127), st);
		if (strstr(state, "DRAIN") || strstr(state, "DOWN") || strstr(state, "FAIL"))
			*drained = 1;
	}
	if (r) {
		/* "Reason=text [user@time]": the text ends at " [" or the line. */
		const char *e;

		r += 8;
		e = strstr(r, " [");
		if (e == NULL)
			e = r + strcspn(r, "\n");
		snprintf(reason, len, "%.*s", (int)(e - r), r);
	}
	return 0;
}

static int show(const char *node, int *drained, char *reason, size_t len)
{
	char *args[] = { "show", "node", "-o", (char *)node, NULL };
	char *out = NULL;
	int rv;

	rv = scontrol(args, &out);
	if (rv == 0)
		rv = gpumem_node_state(out, drained, reason, len);
	free(out);
	return rv;
}

int gpumem_drain(const char *node, const char *reason, char *msg, size_t len)
{
	char cur[1024], state_arg[] = "State=DRAIN", node_arg[160], reason_arg[1500];
	char *args[] = { "update", node_arg, state_arg, reason_arg, NULL };
	char *out = NULL;
	int drained, rv;

	if (strncmp(reason, GPUMEM_DRAIN_PREFIX, strlen(GPUMEM_DRAIN_PREFIX)) != 0) {
		snprintf(msg, len, "refusing a drain reason not starting with '%s'",
			 GPUMEM_DRAIN_PREFIX);
		return -1;
	}
	if (show(node, &drained, cur, sizeof(cur)) < 0) {
		snprintf(msg, len, "cannot read the state of node %s (scontrol)", node);
		return -1;
	}
	if (drained && strncmp(cur, GPUMEM_DRAIN_PREFIX, strlen(GPUMEM_DRAIN_PREFIX)) != 0) {
		snprintf(msg, len, "node %s is already drained or down by someone else "
			 "(reason '%s'): left alone", node, cur);
		return 0;
	}
	snprintf(node_arg, sizeof(node_arg), "NodeName=%s", node);
	snprintf(reason_arg, sizeof(reason_arg), "Reason=%s", reason);
	rv = scontrol(args, &out);
	snprintf(msg, len, rv == 0 ? "node %s drained: %s" : "draining node %s failed: %s",
		 node, rv == 0 ? reason : (out ? out : "scontrol not found"));
	free(out);
	return rv == 0 ? 1 : -1;
}

int gpumem_drain_gpus_passed(const char *reason, const char *passed)
{
	const char *a = strstr(reason, "{GPU-"), *e = a ? strchr(a, '}') : NULL;
	char want[80], list[2048];

	if (a == NULL || e == NULL)
		return 1;       /* a drain that names no GPU: any pass clears it */
	snprintf(list, sizeof(list), ",%s,", passed ? passed : "");
	for (const char *p = a + 1; p < e;) {
		size_t n = strcspn(p, ",}");

		snprintf(want, sizeof(want), ",%.*s,", (int)(n < 70 ? n : 70), p);
		if (strstr(list, want) == NULL)
			return 0;
		p += n + (p[n] == ',');
	}
	return 1;
}

int gpumem_resume(const char *node, const char *passed, char *msg, size_t len)
{
	char cur[2048], state_arg[] = "State=RESUME", node_arg[160];
	char *args[] = { "update", node_arg, state_arg, NULL };
	char *out = NULL;
	int drained, rv;

	if (show(node, &drained, cur, sizeof(cur)) < 0) {
		snprintf(msg, len, "cannot read the state of node %s (scontrol)", node);
		return -1;
	}
	if (!drained || strncmp(cur, GPUMEM_DRAIN_PREFIX, strlen(GPUMEM_DRAIN_PREFIX)) != 0) {
		msg[0] = '\0';
		return 0;       /* not drained, or not by us: nothing to undo */
	}
	if (!gpumem_drain_gpus_passed(cur, passed)) {
		snprintf(msg, len, "node %s stays drained: a GPU its gpumem drain names was not "
			 "among those that passed (%s)", node, passed && *passed ? passed : "none");
		return 2;
	}
	snprintf(node_arg, sizeof(node_arg), "NodeName=%s", node);
	rv = scontrol(args, &out);
	snprintf(msg, len, rv == 0 ? "node %s resumed (its gpumem drain '%s' is cleared)" :
		 "resuming node %s failed: %s", node, rv == 0 ? cur : (out ? out : ""));
	free(out);
	return rv == 0 ? 1 : -1;
}
