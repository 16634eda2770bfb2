/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The site file's advice: section: a list of rules that
 * replaces the built-in table (advise.c) whole, so a site drops a built-in
 * rule by leaving it out.  Each rule is walked with the shared key walker
 * (schema.c: unknown, duplicate and missing keys said the same way as
 * everywhere) and its conditions and reason compiled by advise_rules.c,
 * every error at file:line:col.  Whether each advised policy is in the
 * site's policy_dir is a separate check (gpumem_advice_check_policies):
 * the plugin parses the site file on every node and a job must never fail
 * for an advice rule, so `gpumem validate` and `gpumem advise --rules` ask
 * it, not the plugin.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "advise.h"
#include "core_policy.h"

#define RULE(w) ((struct gpumem_advice_rule *)(w)->base)

static int scalar(struct gpumem_walk *w, const struct gpumem_ynode *n, const char *key)
{
	if (n->kind == GPUMEM_Y_SCALAR)
		return 0;
	gpumem_walk_error(w, n, "advice: %s is a value, not %s", key, gpumem_walk_kind(n));
	return -1;
}

static int rule_name(struct gpumem_walk *w, const struct gpumem_ynode *n)
{
	const char *s = n->str;

	if (scalar(w, n, "name") < 0)
		return -1;
	if (!islower((unsigned char)s[0]) || strlen(s) > GPUMEM_ADVICE_NAME_CHARS ||
	    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(s)) {
		gpumem_walk_error(w, n, "advice: rule name '%s': a lower-case word of at most %d "
				  "characters (letters, digits, '-', '_')", s,
				  GPUMEM_ADVICE_NAME_CHARS);
		return -1;
	}
	if (!strcmp(s, "unsampled") || !strcmp(s, "unmatched")) {
		gpumem_walk_error(w, n, "advice: rule name '%s' is gpumem's own (a GPU not "
				  "sampled, or no rule matched)", s);
		return -1;
	}
	snprintf(RULE(w)->name, sizeof(RULE(w)->name), "%s", s);
	RULE(w)->line = n->line;
	RULE(w)->col = n->col;
	return 0;
}

/* One condition or a list of them into C; errors at the byte they are about. */
static int conditions(struct gpumem_walk *w, const struct gpumem_ynode *n,
		      struct gpumem_advice_cond *c, int eff, const char *key)
{
	const struct gpumem_ynode *one = n;
	int rv = 0;

	if (n->kind == GPUMEM_Y_MAP || (n->kind == GPUMEM_Y_SEQ && n->n == 0)) {
		gpumem_walk_error(w, n, "advice: %s is a condition or a list of them, not %s", key,
				  n->kind == GPUMEM_Y_MAP ? "a mapping" : "an empty list");
		return -1;
	}
	for (size_t i = 0; i < (n->kind == GPUMEM_Y_SEQ ? n->n : 1); i++) {
		struct gpumem_ynode at;
		char err[400];
		size_t off;

		if (n->kind == GPUMEM_Y_SEQ)
			one = n->items[i];
		if (scalar(w, one, key) < 0) {
			rv = -1;
			continue;
		}
		if (gpumem_advice_cond_add(c, one->str, eff, err, sizeof(err), &off) == 0)
			continue;
		/* The column of the byte: past the opening quote of a quoted scalar. */
		at = *one;
		at.col = one->col + (one->plain ? 0 : 1) + (int)off;
		gpumem_walk_error(w, &at, "advice: %s: %s", key, err);
		rv = -1;
	}
	return rv;
}

static int rule_when(struct gpumem_walk *w, const struct gpumem_ynode *n)
{
	return conditions(w, n, &RULE(w)->when, 0, "when");
}

static int rule_in_effect(struct gpumem_walk *w, const struct gpumem_ynode *n)
{
	return conditions(w, n, &RULE(w)->in_effect, 1, "in_effect");
}

static int rule_policy(struct gpumem_walk *w, const struct gpumem_ynode *n)
{
	struct gpumem_advice_rule *r = RULE(w);
	const char *s = n->str;
	size_t len;

	if (scalar(w, n, "policy") < 0)
		return -1;
	len = strlen(s);
	r->policy_line = n->line;
	r->policy_col = n->col;
	if (!strcmp(s, "none") || (n->plain && (!strcmp(s, "null") || !strcmp(s, "~") || !*s))) {
		r->policy[0] = '\0';
		return 0;
	}
	if (len > 5 && !strcmp(s + len - 5, ".yaml"))
		len -= 5;
	if (s[0] == '.' || len == 0 || len > GPUMEM_ADVICE_POLICY_CHARS - 5 ||
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") <
	    strlen(s)) {
		gpumem_walk_error(w, n, "advice: policy '%s' is no policy name of the site's "
				  "policy_dir (NAME or NAME.yaml: letters, digits, '.', '_', '-'), "
				  "nor none", s);
		return -1;
	}
	snprintf(r->policy, sizeof(r->policy), "%.*s.yaml", (int)len, s);
	return 0;
}

static int rule_reason(struct gpumem_walk *w, const struct gpumem_ynode *n)
{
	struct gpumem_ynode at;
	char err[300];
	size_t off;

	if (scalar(w, n, "reason") < 0)
		return -1;
	if (strlen(n->str) > GPUMEM_ADVICE_REASON_CHARS) {
		gpumem_walk_error(w, n, "advice: reason longer than %d characters",
				  GPUMEM_ADVICE_REASON_CHARS);
		return -1;
	}
	if (gpumem_advice_reason_check(n->str, err, sizeof(err), &off) < 0) {
		at = *n;
		at.col = n->col + (n->plain ? 0 : 1) + (int)off;
		gpumem_walk_error(w, &at, "advice: %s", err);
		return -1;
	}
	snprintf(RULE(w)->reason, sizeof(RULE(w)->reason), "%s", n->str);
	return 0;
}

/* The keys of one rule (list_keys prints them as site advice.KEY). */
const struct gpumem_key gpumem_advice_rule_keys[] = {
	{ .name = "name", .type = GPUMEM_KT_CUSTOM, .custom = rule_name, .required = 1 },
	{ .name = "when", .type = GPUMEM_KT_CUSTOM, .custom = rule_when, .required = 1 },
	{ .name = "policy", .type = GPUMEM_KT_CUSTOM, .custom = rule_policy, .required = 1 },
	{ .name = "reason", .type = GPUMEM_KT_CUSTOM, .custom = rule_reason, .required = 1 },
	/* What its policy promises the job (advise.h); not said: no speed-up. */
	{ .name = "promise", .type = GPUMEM_KT_ENUM, .names = gpumem_advice_promises,
	  .off = offsetof(struct gpumem_advice_rule, promise) },
	{ .name = "in_effect", .type = GPUMEM_KT_CUSTOM, .custom = rule_in_effect },
	{ 0 }
};

/* What a rule is checked for against the rules before it; 0 or -1. */
static int rule_fits(struct gpumem_walk *w, const struct gpumem_advice_table *t,
		     const struct gpumem_advice_rule *r)
{
	struct gpumem_ynode at = { .line = r->line, .col = r->col };
	const struct gpumem_ynode *n = &at;

	for (int i = 0; i < t->n; i++) {
		if (!strcmp(t->r[i].name, r->name)) {
			gpumem_walk_error(w, n, "advice: rule name '%s' twice (first at line %d)",
					  r->name, t->r[i].line);
			return -1;
		}
		if (t->r[i].when.nterms == 0) {
			gpumem_walk_error(w, n, "advice: rule '%s' is never reached: rule '%s' "
					  "before it matches always", r->name, t->r[i].name);
			return -1;
		}
	}
	if (r->in_effect.nitems && !r->policy[0]) {
		gpumem_walk_error(w, n, "advice: rule '%s': in_effect says when the job already "
				  "does what the policy does, and the rule advises none", r->name);
		return -1;
	}
	return 0;
}

int gpumem_advice_walk(struct gpumem_walk *w, const struct gpumem_ynode *n)
{
	struct gpumem_site *s = (struct gpumem_site *)w->base;
	struct gpumem_advice_table *t;
	int rv = 0;

	if (n->kind != GPUMEM_Y_SEQ) {
		gpumem_walk_error(w, n, "advice: a list of rules ({name, when, policy, reason}), "
				  "not %s", gpumem_walk_kind(n));
		return -1;
	}
	gpumem_advice_table_free(s->advice);
	s->advice = t = calloc(1, sizeof(*t));
	if (t == NULL) {
		gpumem_walk_error(w, n, "out of memory");
		return -1;
	}
	snprintf(t->source, sizeof(t->source), "%s", w->file ? w->file : "the site file");
	for (size_t i = 0; i < n->n; i++) {
		const struct gpumem_ynode *item = n->items[i];
		struct gpumem_walk rw = { w->file, w->d, (char *)&t->r[t->n], NULL, NULL };
		int before = w->d->nerrors;
		char path[32];

		if (t->n >= GPUMEM_ADVICE_MAX_RULES) {
			gpumem_walk_error(w, item, "advice: more than %d rules",
					  GPUMEM_ADVICE_MAX_RULES);
			return -1;
		}
		if (item->kind != GPUMEM_Y_MAP) {
			gpumem_walk_error(w, item, "advice: each rule is a mapping {name, when, "
					  "policy, reason}, not %s", gpumem_walk_kind(item));
			rv = -1;
			continue;
		}
		memset(&t->r[t->n], 0, sizeof(t->r[0]));
		snprintf(path, sizeof(path), "advice[%zu]", i);
		gpumem_walk_map(&rw, gpumem_advice_rule_keys, item, path);
		if (w->d->nerrors > before || rule_fits(w, t, &t->r[t->n]) < 0) {
			rv = -1;
			continue;
		}
		t->n++;
	}
	return rv;
}

void gpumem_advice_table_free(struct gpumem_advice_table *t)
{
	free(t);
}

const struct gpumem_advice_table *gpumem_site_advice(const struct gpumem_site *s)
{
	return s && s->advice ? s->advice : gpumem_advice_builtin();
}

int gpumem_advice_check_policies(const struct gpumem_site *s, struct gpumem_diags *d)
{
	const struct gpumem_advice_table *t = s ? s->advice : NULL;
	int rv = 0;

	for (int i = 0; t && i < t->n; i++) {
		const struct gpumem_advice_rule *r = &t->r[i];
		char *path = NULL;

		if (!r->policy[0])
			continue;
		if (s->policy_dir == NULL) {
			gpumem_diag_add(d, GPUMEM_SEV_ERROR, s->path, r->policy_line, r->policy_col,
					"advice: rule '%s' advises %s, and the site file sets no "
					"policy_dir", r->name, r->policy);
			rv = -1;
			continue;
		}
		if (asprintf(&path, "%s/%s", s->policy_dir, r->policy) < 0)
			return -1;
		if (access(path, R_OK) != 0) {
			gpumem_diag_add(d, GPUMEM_SEV_ERROR, s->path, r->policy_line, r->policy_col,
					"advice: rule '%s' advises %s, which is not in policy_dir "
					"(%s: %s)", r->name, r->policy, path, strerror(errno));
			rv = -1;
		}
		free(path);
	}
	return rv;
}
