/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The site file (etc/gpumem.yaml): defaults, limits, named policies,
 * reference bandwidths, reports, drain and the advice rules (advise_site.c).
 * Only root writes it, but it is still parsed with every check a user's
 * policy gets.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "core_advice.h"
#include "l2cap.h"
#include "schema.h"

#define S(field) offsetof(struct gpumem_site, field)

const char *const gpumem_by_default_names[] = { "off", "gain", "all", NULL };

static const struct gpumem_key limits_keys[] = {
	{ .name = "l2_max_percent", .type = GPUMEM_KT_PERCENT, .off = S(limits.l2_max_percent),
	  .min = 0, .max = 100 },
	/* { "NVIDIA H200": 40, other: 25 }: the set-aside's cap per GPU model (l2cap.c) */
	{ .name = "l2_model_max_percent", .type = GPUMEM_KT_CUSTOM, .custom = gpumem_l2cap_walk },
	{ .name = "mps_min_active_thread_percentage", .type = GPUMEM_KT_INT,
	  .off = S(limits.mps_min_pct), .min = 1, .max = 100 },
	{ .name = "mps_max_active_thread_percentage", .type = GPUMEM_KT_INT,
	  .off = S(limits.mps_max_pct), .min = 1, .max = 100 },
	{ .name = "mps_max_pinned_device_mem_limit", .type = GPUMEM_KT_SIZE,
	  .off = S(limits.mps_max_pinned), .max = 1e15 },
	/* a floor on check.bandwidth.min_fraction: no user's check asks the GPU for less */
	{ .name = "min_fraction", .type = GPUMEM_KT_FRACTION, .off = S(limits.min_fraction),
	  .min = 0, .max = 1 },
	{ .name = "mps_daemons", .type = GPUMEM_KT_ENUM_LIST, .off = S(limits.daemons_allowed),
	  .names = gpumem_daemon_names },
	{ .name = "on_fail", .type = GPUMEM_KT_ENUM_LIST, .off = S(limits.onfail_allowed),
	  .names = gpumem_onfail_names },
	{ .name = "sections", .type = GPUMEM_KT_ENUM_LIST, .off = S(limits.sections_allowed),
	  .names = gpumem_section_names },
	{ .name = "strict", .type = GPUMEM_KT_BOOL, .off = S(limits.strict) },
	{ .name = "um_placements", .type = GPUMEM_KT_ENUM_LIST, .off = S(limits.placements_allowed),
	  .names = gpumem_placement_names },
	{ .name = "um_max_gpu_fraction", .type = GPUMEM_KT_FRACTION,
	  .off = S(limits.um_max_gpu_fraction), .min = 0, .max = 1 },
	{ .name = "um_min_reserve", .type = GPUMEM_KT_SIZE, .off = S(limits.um_min_reserve),
	  .max = 1e15 },
	{ 0 }
};

static const struct gpumem_key report_keys[] = {
	{ .name = "dir", .type = GPUMEM_KT_PATH, .off = S(report.dir) },
	{ .name = "textfile_dir", .type = GPUMEM_KT_PATH, .off = S(report.textfile_dir) },
	{ 0 }
};

static int check_reason(struct gpumem_walk *w, const struct gpumem_ynode *n)
{
	struct gpumem_site *s = (struct gpumem_site *)w->base;

	if (n->kind != GPUMEM_Y_SCALAR || strncmp(n->str, "gpumem:", 7) != 0) {
		gpumem_walk_error(w, n, "drain.reason must start with 'gpumem:' (that prefix "
				  "is how gpumem knows which drains are its own)");
		return -1;
	}
	free(s->drain.reason);
	s->drain.reason = strdup(n->str);
	return s->drain.reason ? 0 : -1;
}

static const struct gpumem_key drain_keys[] = {
	{ .name = "enabled", .type = GPUMEM_KT_BOOL, .off = S(drain.enabled) },
	{ .name = "reason", .type = GPUMEM_KT_CUSTOM, .custom = check_reason },
	{ 0 }
};

/*
 * check.warm: how long the warm check server (gpumem-check --serve) waits
 * for the next check before it ends; "0" (the default): no server.  N
 * seconds, or Ns, Nm, Nh; at most 24h.
 */
static int check_warm(struct gpumem_walk *w, const struct gpumem_ynode *n)
{
	struct gpumem_site *s = (struct gpumem_site *)w->base;
	unsigned long v = 0, mul = 1;
	const char *p;

	if (n->kind != GPUMEM_Y_SCALAR || !n->str[0])
		goto bad;
	for (p = n->str; *p >= '0' && *p <= '9' && v <= 86400; p++)
		v = v * 10 + (unsigned long)(*p - '0');
	if (p == n->str)
		goto bad;
	if (*p)
		mul = *p == 's' ? 1 : *p == 'm' ? 60 : *p == 'h' ? 3600 : 0;
	if (!mul || (*p && p[1]) || v > 86400 || v * mul > 86400)
		goto bad;
	s->check_warm_s = (int)(v * mul);
	return 0;
bad:
	gpumem_walk_error(w, n, "check.warm must be a duration from 0 to 24h (N seconds, "
			  "or Ns, Nm, Nh: '10m'); 0 turns the warm check server off");
	return -1;
}

static const struct gpumem_key checkcfg_keys[] = {
	{ .name = "timeout", .type = GPUMEM_KT_INT, .off = S(check_timeout_s), .min = 1,
	  .max = 3600 },
	/* minutes: how long a measured pass may be reused while the evidence holds (evidence.c) */
	{ .name = "min_interval", .type = GPUMEM_KT_INT, .off = S(check_min_interval_min),
	  .min = 0, .max = 10080 },
	/* seconds: the warm check server's idle time (plugin/spank/check/checkserve.c); 0: off */
	{ .name = "warm", .type = GPUMEM_KT_CUSTOM, .custom = check_warm },
	/* the warm server only where the node has at least this many GPUs (its device files) */
	{ .name = "warm_min_gpus", .type = GPUMEM_KT_INT, .off = S(check_warm_min_gpus), .min = 1,
	  .max = 64 },
	{ 0 }
};

/* profile: the per-job sampler (gpumem-sample); whether it runs is the policy's profile.enabled. */
static const struct gpumem_key profilecfg_keys[] = {
	{ .name = "interval_ms", .type = GPUMEM_KT_INT, .off = S(profile_interval_ms),
	  .min = 100, .max = 3600000 },
	{ 0 }
};

/*
 * advised.by_default: gain, all or off; true and false, its older words,
 * read as all and off (what they did before it had modes).
 */
static int advised_by_default(struct gpumem_walk *w, const struct gpumem_ynode *n)
{
	struct gpumem_site *s = (struct gpumem_site *)w->base;

	for (int i = 0; n->kind == GPUMEM_Y_SCALAR && gpumem_by_default_names[i]; i++)
		if (!strcmp(n->str, gpumem_by_default_names[i])) {
			s->advised.by_default = i;
			return 0;
		}
	if (n->kind == GPUMEM_Y_SCALAR && (!strcmp(n->str, "true") || !strcmp(n->str, "false"))) {
		s->advised.by_default = n->str[0] == 't' ? GPUMEM_BY_DEFAULT_ALL :
			GPUMEM_BY_DEFAULT_OFF;
		return 0;
	}
	gpumem_walk_error(w, n, "advised.by_default: %s%s%s is not one of: gain (advise unasked "
			  "only what promises the job a gain), all, off (true is all, false is off)",
			  n->kind == GPUMEM_Y_SCALAR ? "'" : "", n->kind == GPUMEM_Y_SCALAR ? n->str :
			  gpumem_walk_kind(n), n->kind == GPUMEM_Y_SCALAR ? "'" : "");
	return -1;
}

/* advised: --gpumem-policy=advised (srun side, plugin/spank/advised.c; doc/admin/profile.md "Advised"). */
static const struct gpumem_key advisedcfg_keys[] = {
	{ .name = "by_default", .type = GPUMEM_KT_CUSTOM, .custom = advised_by_default },
	{ .name = "days", .type = GPUMEM_KT_INT, .off = S(advised.days), .min = 1, .max = 366 },
	/* seconds: the lookup's sacct is killed past it (slurmdbd down or hung) */
	{ .name = "timeout", .type = GPUMEM_KT_INT, .off = S(advised.timeout_s), .min = 1,
	  .max = 60 },
	{ .name = "hint", .type = GPUMEM_KT_BOOL, .off = S(advised.hint) },
	{ 0 }
};

/* references: { "NVIDIA H200": { read: 4373, triad: 4127, ... }, ... } */
static int parse_refs(struct gpumem_walk *w, const struct gpumem_ynode *n)
{
	static const struct { const char *name; size_t off; } metrics[] = {
		{ "read", offsetof(struct gpumem_ref, read) },
		{ "write", offsetof(struct gpumem_ref, write) },
		{ "copy", offsetof(struct gpumem_ref, copy) },
		{ "triad", offsetof(struct gpumem_ref, triad) },
		{ "d2d", offsetof(struct gpumem_ref, d2d) },
		{ "h2d", offsetof(struct gpumem_ref, h2d) },
		{ "d2h", offsetof(struct gpumem_ref, d2h) },
	};
	struct gpumem_site *s = (struct gpumem_site *)w->base;
	int rv = 0;

	if (n->kind != GPUMEM_Y_MAP) {
		gpumem_walk_error(w, n, "references: expected a mapping of GPU model names");
		return -1;
	}
	for (size_t i = 0; i + 1 < n->n; i += 2) {
		const struct gpumem_ynode *model = n->items[i], *vals = n->items[i + 1];
		struct gpumem_ref *r;

		if (model->kind != GPUMEM_Y_SCALAR || vals->kind != GPUMEM_Y_MAP) {
			gpumem_walk_error(w, model, "references: each GPU model maps to "
					  "{read: GB/s, ...}");
			rv = -1;
			continue;
		}
		if (gpumem_site_ref(s, model->str)) {
			gpumem_walk_error(w, model, "references: model '%s' is listed twice",
					  model->str);
			rv = -1;
			continue;
		}
		if (s->nrefs >= GPUMEM_MAX_REFS) {
			gpumem_walk_error(w, model, "references: more than %d models",
					  GPUMEM_MAX_REFS);
			return -1;
		}
		r = &s->refs[s->nrefs];
		memset(r, 0, sizeof(*r));
		for (size_t j = 0; j + 1 < vals->n; j += 2) {
			const struct gpumem_ynode *k = vals->items[j];
			char key[160];
			size_t m;
			double v;

			snprintf(key, sizeof(key), "references.%s.%s", model->str,
				 k->kind == GPUMEM_Y_SCALAR ? k->str : "?");
			for (m = 0; m < sizeof(metrics) / sizeof(metrics[0]); m++)
				if (k->kind == GPUMEM_Y_SCALAR && !strcmp(k->str, metrics[m].name))
					break;
			if (m == sizeof(metrics) / sizeof(metrics[0])) {
				gpumem_walk_error(w, k, "unknown key '%s' (metrics: read, write, "
						  "copy, triad, d2d, h2d, d2h, in GB/s)", key);
				rv = -1;
				continue;
			}
			if (gpumem_walk_number(w, vals->items[j + 1], key, 0.001, 1e6, &v) < 0) {
				rv = -1;
				continue;
			}
			*(double *)((char *)r + metrics[m].off) = v;
		}
		r->model = strdup(model->str);
		if (r->model == NULL)
			return -1;
		s->nrefs++;
	}
	return rv;
}


/* The site file's keys (gpumem_keys_each lists them, tests/cli/docs.py checks the docs). */
const struct gpumem_key gpumem_site_keys[] = {
	{ .name = "version", .type = GPUMEM_KT_CUSTOM, .custom = gpumem_walk_version, .required = 1 },
	{ .name = "defaults", .type = GPUMEM_KT_POLICY, .off = S(defaults) },
	{ .name = "limits", .type = GPUMEM_KT_SECTION, .sub = limits_keys },
	{ .name = "policy_dir", .type = GPUMEM_KT_PATH, .off = S(policy_dir) },
	{ .name = "references", .type = GPUMEM_KT_CUSTOM, .custom = parse_refs },
	{ .name = "report", .type = GPUMEM_KT_SECTION, .sub = report_keys },
	{ .name = "drain", .type = GPUMEM_KT_SECTION, .sub = drain_keys },
	{ .name = "check", .type = GPUMEM_KT_SECTION, .sub = checkcfg_keys },
	{ .name = "profile", .type = GPUMEM_KT_SECTION, .sub = profilecfg_keys },
	/* the advice rules, replacing the built-in table (advise_site.c) */
	{ .name = "advice", .type = GPUMEM_KT_CUSTOM, .custom = gpumem_advice_walk },
	{ .name = "advised", .type = GPUMEM_KT_SECTION, .sub = advisedcfg_keys },
	{ 0 }
};

void gpumem_site_init(struct gpumem_site *s)
{
	memset(s, 0, sizeof(*s));
	gpumem_policy_init(&s->defaults);
	s->limits.l2_max_percent = 100;
	s->limits.l2_caps.other = -1;
	s->limits.mps_min_pct = 1;
	s->limits.mps_max_pct = 100;
	s->limits.daemons_allowed = (1u << GPUMEM_DAEMON_NONE) | (1u << GPUMEM_DAEMON_SITE) |
		(1u << GPUMEM_DAEMON_JOB);
	s->limits.onfail_allowed = (1u << GPUMEM_ONFAIL_WARN) | (1u << GPUMEM_ONFAIL_FAIL);
	/* Users may not turn the profile off unless the site lists the section. */
	s->limits.sections_allowed = GPUMEM_S_ALL & ~GPUMEM_S_PROFILE;
	s->limits.placements_allowed = (1u << GPUMEM_PLACE_NONE) | (1u << GPUMEM_PLACE_STRIPE);
	s->limits.um_max_gpu_fraction = 1;
	s->check_timeout_s = 60;
	/* A measured pass is reused on unchanged NVML evidence for an hour (doc/admin/checks.md, "Reuse"). */
	s->check_min_interval_min = GPUMEM_CHECK_MIN_INTERVAL_DEFAULT;
	s->check_warm_min_gpus = 1;
	s->profile_interval_ms = 1000;
	s->advised.days = 30;
	s->advised.timeout_s = GPUMEM_ADVISED_TIMEOUT_S;
}

int gpumem_site_parse(const char *buf, size_t len, const char *name,
		      struct gpumem_site *s, struct gpumem_diags *d)
{
	struct gpumem_walk w = { name, d, (char *)s, NULL, NULL };
	int rv;

	gpumem_site_free(s);
	gpumem_site_init(s);
	s->path = strdup(name);
	rv = gpumem_walk_buffer(buf, len, name, gpumem_site_keys, &w, "site file");
	if (rv == 0 && s->limits.mps_min_pct > s->limits.mps_max_pct) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, name, 0, 0,
				"limits: mps_min_active_thread_percentage %d is above "
				"mps_max_active_thread_percentage %d",
				s->limits.mps_min_pct, s->limits.mps_max_pct);
		rv = -1;
	}
	if (rv == 0 && !(s->limits.daemons_allowed & (1u << s->defaults.mps.daemon))) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, name, 0, 0,
				"defaults.mps.daemon '%s' is not in limits.mps_daemons",
				gpumem_daemon_name(s->defaults.mps.daemon));
		rv = -1;
	}
	if (rv == 0 && !(s->limits.onfail_allowed & (1u << s->defaults.check.on_fail))) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, name, 0, 0,
				"defaults.check.on_fail '%s' is not in limits.on_fail",
				gpumem_onfail_name(s->defaults.check.on_fail));
		rv = -1;
	}
	if (rv == 0 && s->defaults.check.min_fraction < s->limits.min_fraction) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, name, 0, 0,
				"defaults.check.bandwidth.min_fraction %g is below limits.min_fraction %g",
				s->defaults.check.min_fraction, s->limits.min_fraction);
		rv = -1;
	}
	if (rv == 0 && !(s->limits.placements_allowed & (1u << s->defaults.um.placement))) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, name, 0, 0,
				"defaults.unified_memory.placement '%s' is not in limits.um_placements",
				gpumem_placement_name(s->defaults.um.placement));
		rv = -1;
	}
	return rv;
}

int gpumem_site_load(const char *path, struct gpumem_site *s, struct gpumem_diags *d)
{
	char *buf;
	size_t len;
	int rv;

	gpumem_site_init(s);
	if (gpumem_read_file(path, &buf, &len, d) < 0)
		return -1;
	rv = gpumem_site_parse(buf, len, path, s, d);
	free(buf);
	return rv;
}

int gpumem_site_load_default(const char *path, const char *installed, struct gpumem_site *s,
			     int *have, struct gpumem_diags *d)
{
	*have = 0;
	gpumem_site_init(s);
	if (path == NULL || path[0] == '\0')
		path = getenv("GPUMEM_SITE");
	if (path == NULL || path[0] == '\0') {
		if (installed == NULL || access(installed, F_OK) != 0)
			return 0;
		path = installed;
	}
	if (gpumem_site_load(path, s, d) < 0)
		return -1;
	*have = 1;
	return 0;
}

void gpumem_site_free(struct gpumem_site *s)
{
	free(s->path);
	free(s->policy_dir);
	free(s->report.dir);
	free(s->report.textfile_dir);
	free(s->drain.reason);
	for (int i = 0; i < s->nrefs; i++)
		free(s->refs[i].model);
	gpumem_advice_table_free(s->advice);
	gpumem_site_init(s);
}

const struct gpumem_ref *gpumem_site_ref(const struct gpumem_site *s, const char *model)
{
	for (int i = 0; i < s->nrefs; i++)
		if (strcasecmp(s->refs[i].model, model) == 0)
			return &s->refs[i];
	return NULL;
}

static int policy_name_ok(const char *n)
{
	if (n[0] == '\0' || n[0] == '.' || strlen(n) > 128)
		return 0;
	for (const char *c = n; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '.' && *c != '_' && *c != '-')
			return 0;
	return 1;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

char *gpumem_policy_resolve(const struct gpumem_site *s, const char *arg,
			    struct gpumem_diags *d)
{
	char *path = NULL;

	if (arg == NULL || arg[0] == '\0') {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, "--gpumem-policy", 0, 0,
				"empty policy name");
		return NULL;
	}
	if (strchr(arg, '/') || ends_with(arg, ".yaml") || ends_with(arg, ".yml"))
		return strdup(arg);
	if (!policy_name_ok(arg)) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, "--gpumem-policy", 0, 0,
				"'%s' is neither a file path nor a policy name "
				"(names use letters, digits, '.', '_' and '-')", arg);
		return NULL;
	}
	if (s == NULL || s->policy_dir == NULL) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, "--gpumem-policy", 0, 0,
				"'%s' looks like a named policy, but the site file sets no "
				"policy_dir (give a path such as ./%s.yaml)", arg, arg);
		return NULL;
	}
	if (asprintf(&path, "%s/%s.yaml", s->policy_dir, arg) < 0)
		return NULL;
	return path;
}
