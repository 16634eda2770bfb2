/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * From an effective policy to the environment of a task, and the one
 * builder of a helper's environment (env.h).  Only the names in env.h are
 * ever produced: a policy chooses values, never variables or library
 * paths; a helper gets PATH and what its caller names, never the job's.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include "env.h"
#include "l2cap.h"
#include "policy.h"
#include "um_advice.h"

static int env_set(struct gpumem_env *env, const char *name, const char *value)
{
	if (env->n >= GPUMEM_ENV_MAX)
		return -1;
	snprintf(env->var[env->n].name, sizeof(env->var[0].name), "%s", name);
	snprintf(env->var[env->n].value, sizeof(env->var[0].value), "%s", value);
	env->n++;
	return 0;
}

void gpumem_henv_init(struct gpumem_henv *e)
{
	e->n = 0;
	e->envp[0] = NULL;
	gpumem_henv_set(e, GPUMEM_ENV_PATH, "%s", GPUMEM_HELPER_PATH);
}

int gpumem_henv_set(struct gpumem_henv *e, const char *name, const char *fmt, ...)
{
	size_t len = sizeof(e->var[0]);
	va_list ap;
	int o, v;

	if (e->n >= GPUMEM_HENV_MAX)
		return -1;
	o = snprintf(e->var[e->n], len, "%s=", name);
	va_start(ap, fmt);
	v = o < 0 || (size_t)o >= len ? -1 : vsnprintf(e->var[e->n] + o, len - (size_t)o, fmt, ap);
	va_end(ap);
	if (v < 0 || (size_t)v >= len - (size_t)o)
		return -1;
	e->envp[e->n] = e->var[e->n];
	e->envp[++e->n] = NULL;
	return 0;
}

char *const *gpumem_henv_envp(const struct gpumem_henv *e)
{
	return (char *const *)e->envp;
}

const char *gpumem_henv_get(const struct gpumem_henv *e, const char *name)
{
	size_t n = strlen(name);

	for (int i = 0; i < e->n; i++)
		if (!strncmp(e->var[i], name, n) && e->var[i][n] == '=')
			return e->var[i] + n + 1;
	return NULL;
}

/* 0..1 as the library reads it: at most 6 decimals, no locale. */
static void um_fraction(double f, char *buf, size_t len)
{
	long ppm = lround(f * 1e6);
	char frac[8];
	size_t n;

	ppm = ppm < 0 ? 0 : ppm > 1000000 ? 1000000 : ppm;
	if (ppm % 1000000 == 0) {
		snprintf(buf, len, "%ld", ppm / 1000000);
		return;
	}
	snprintf(frac, sizeof(frac), "%06ld", ppm % 1000000);
	for (n = strlen(frac); n > 1 && frac[n - 1] == '0'; n--)
		frac[n - 1] = '\0';
	snprintf(buf, len, "0.%s", frac);
}

/*
 * v1 as before when there is no placement, so an older libgpumem-um still
 * reads it; v2 (v1 and the placement fields) when there is one (um_advice.h).
 */
int gpumem_um_format(const struct gpumem_policy *p, char *buf, size_t len)
{
	const unsigned a = p->um.accessed_by;
	const int stripe = p->um.placement == GPUMEM_PLACE_STRIPE;
	char frac[16], max[16];
	int n, m;

	n = snprintf(buf, len, "%s;preferred=%s;accessed_by=%s;read_mostly=%d;prefetch=%s;"
		     "min_bytes=%" PRIu64,
		     gpumem_um_advice_tag(gpumem_um_advice_version_for(stripe)),
		     gpumem_loc_name(p->um.preferred_location),
		     a == (GPUMEM_ACCESS_CPU | GPUMEM_ACCESS_GPU) ? "cpu,gpu" :
		     a == GPUMEM_ACCESS_CPU ? "cpu" : a == GPUMEM_ACCESS_GPU ? "gpu" : "none",
		     p->um.read_mostly ? 1 : 0, gpumem_loc_name(p->um.prefetch), p->um.min_bytes);
	if (n < 0 || (size_t)n >= len)
		return -1;
	if (!stripe)
		return 0;
	if (p->um.gpu_fraction == GPUMEM_FRACTION_AUTO)
		snprintf(frac, sizeof(frac), "auto");
	else
		um_fraction(p->um.gpu_fraction, frac, sizeof(frac));
	um_fraction(p->um.site_max_fraction, max, sizeof(max));
	m = snprintf(buf + n, len - (size_t)n, ";placement=stripe;gpu_fraction=%s;gpu_max=%s;"
		     "reserve=%" PRIu64 ";granularity=%" PRIu64, frac, max, p->um.reserve,
		     p->um.granularity);
	return m < 0 || (size_t)m >= len - (size_t)n ? -1 : 0;
}

int gpumem_l2_hw_max_percent(const struct gpumem_node *node)
{
	int best = -1;

	for (int i = 0; node && i < node->ngpus; i++) {
		const struct gpumem_gpu *g = &node->gpus[i];
		int pct;

		if (g->l2_bytes == 0)
			continue;
		pct = (int)(g->persisting_max_bytes * 100 / g->l2_bytes);
		if (best < 0 || pct < best)
			best = pct;
	}
	return best;
}

/* The cap per GPU model (l2cap.c): the smallest over the step's GPUs, said when it applies. */
static void l2_model_cap(const struct gpumem_policy *p, const struct gpumem_node *node,
			 double *pct, struct gpumem_diags *d)
{
	const char *names[GPUMEM_MAX_GPUS];
	int n = 0;

	for (int i = 0; node && i < node->ngpus && i < GPUMEM_MAX_GPUS; i++)
		names[n++] = node->gpus[i].name;
	gpumem_l2cap_apply(&p->l2.site_caps, names, n, pct, NULL, d);
}

static int l2_env(const struct gpumem_policy *p, const struct gpumem_node *node,
		  struct gpumem_env *env, struct gpumem_diags *d)
{
	int hw = gpumem_l2_hw_max_percent(node);
	double pct;
	char val[32];

	if (p->l2.limit_is_percent || p->l2.limit_bytes == 0) {
		pct = p->l2.limit_is_percent ? p->l2.limit_percent : 0;
	} else {
		uint64_t l2 = 0;

		/* Bytes must become a percentage of the smallest L2 of the step. */
		for (int i = 0; node && i < node->ngpus; i++)
			if (node->gpus[i].l2_bytes && (!l2 || node->gpus[i].l2_bytes < l2))
				l2 = node->gpus[i].l2_bytes;
		if (l2 == 0) {
			gpumem_diag_add(d, GPUMEM_SEV_WARNING, "l2.persisting_limit", 0, 0,
					"a limit in bytes needs the GPU's L2 size, and this node "
					"reported no GPU: not applied");
			return 0;
		}
		pct = (double)p->l2.limit_bytes * 100.0 / (double)l2;
		if (p->l2.limit_bytes && pct < 1)
			pct = 1;
		/* The site's cap applies to a byte limit too, once it is a share. */
		if (pct > p->l2.site_max_percent) {
			gpumem_diag_add(d, GPUMEM_SEV_WARNING, "l2.persisting_limit", 0, 0,
					"%" PRIu64 " bytes is %.1f%% of this GPU's L2, above the site "
					"limit of %g%%: using %g%%", p->l2.limit_bytes, pct,
					p->l2.site_max_percent, p->l2.site_max_percent);
			pct = p->l2.site_max_percent;
		}
	}
	l2_model_cap(p, node, &pct, d);
	if (hw >= 0 && pct > hw) {
		gpumem_diag_add(d, GPUMEM_SEV_WARNING, "l2.persisting_limit", 0, 0,
				"%g%% of L2 is above what this GPU allows for persisting lines "
				"(persistingL2CacheMaxSize = %d%% of L2; more would make CUDA "
				"context creation fail): using %d%%", pct, hw, hw);
		pct = hw;
	} else if (hw < 0 && pct > 62) {
		/*
		 * Unknown GPU: stay within what Hopper accepts (62.5% on H100/H200)
		 * rather than risk a job whose every context fails.
		 */
		gpumem_diag_add(d, GPUMEM_SEV_WARNING, "l2.persisting_limit", 0, 0,
				"%g%% of L2 with no GPU information: using 62%%, the most an "
				"H100/H200 accepts", pct);
		pct = 62;
	}
	snprintf(val, sizeof(val), "%d", (int)floor(pct));
	return env_set(env, GPUMEM_ENV_L2_PCT, val);
}

int gpumem_policy_env(const struct gpumem_policy *p, const struct gpumem_node *node,
		      struct gpumem_env *env, struct gpumem_diags *d)
{
	char val[1024];

	memset(env, 0, sizeof(*env));
	if ((p->set & GPUMEM_K_L2_LIMIT) && l2_env(p, node, env, d) < 0)
		return -1;
	if (p->set & GPUMEM_K_MPS_PCT) {
		snprintf(val, sizeof(val), "%d", p->mps.active_thread_percentage);
		if (env_set(env, GPUMEM_ENV_MPS_PCT, val) < 0)
			return -1;
	}
	if ((p->set & GPUMEM_K_MPS_PINNED) && p->mps.pinned_device_mem_limit) {
		/* One "ordinal=limit" per GPU the task sees, in MiB. */
		int n = node && node->ngpus > 0 ? node->ngpus : 1;
		size_t off = 0;
		uint64_t mib = p->mps.pinned_device_mem_limit >> 20;

		if (mib == 0)
			mib = 1;
		val[0] = '\0';
		for (int i = 0; i < n && off < sizeof(val); i++)
			off += (size_t)snprintf(val + off, sizeof(val) - off, "%s%d=%" PRIu64 "M",
						i ? "," : "", i, mib);
		if (env_set(env, GPUMEM_ENV_MPS_PINNED, val) < 0)
			return -1;
	}
	if (p->mps.daemon == GPUMEM_DAEMON_JOB && node && node->mps_pipe_dir) {
		if (env_set(env, GPUMEM_ENV_MPS_PIPE, node->mps_pipe_dir) < 0 ||
		    env_set(env, GPUMEM_ENV_MPS_LOG, node->mps_log_dir) < 0)
			return -1;
	}
	if (p->sections & GPUMEM_S_UM) {
		if (node == NULL || node->um_library == NULL) {
			gpumem_diag_add(d, GPUMEM_SEV_WARNING, "unified_memory", 0, 0,
					"libgpumem-um is not installed on this node: managed-"
					"memory advice is not applied");
		} else {
			if (gpumem_um_format(p, val, sizeof(val)) < 0 ||
			    env_set(env, GPUMEM_ENV_UM, val) < 0 ||
			    env_set(env, GPUMEM_ENV_PRELOAD, node->um_library) < 0)
				return -1;
		}
	}
	return 0;
}
