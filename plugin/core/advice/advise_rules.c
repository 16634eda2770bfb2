/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The advice rules' small language (advise.h): the figures a
 * condition may name, a condition compiled from its text, whether it
 * holds for one GPU, a reason template expanded, and a table printed as
 * the site file's advice: section or as JSON.  A condition:
 *
 *   pcie_rx.mean >= 1
 *   pcie_tx.mean >= 0.5 * pcie_rx.mean
 *   dram_bw_util.p95 >= 80 or dram_bw_util.mean >= 60
 *   eff.um.pl has cpu and eff.um.ab has gpu or eff.um.pf has gpu
 *   eff.l2 > 18
 *
 * comparisons (< <= > >= == !=, or "has" for the effective policy's
 * unified-memory words) joined by "and" and "or", "and" first; "always"
 * alone holds always.  A figure the summary lacks (NAN) never makes a
 * comparison hold, whatever its operator.  The effective policy's figures
 * (eff.*) may be named in when as in in_effect; the profile's only in when.
 */
#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "advise.h"
#include "core_policy.h"

enum unit { U_PCT, U_GBPS, U_GIB, U_COUNT, U_EFF, U_WORDS };
static const char *const unit_names[] = { "%", "GB/s", "GiB", "samples", "", "" };

#define OFF(f) offsetof(struct gpumem_prof_gpu, f)
/* The figures: the compact summary's (profile.h), the sample count, the effective policy's. */
static const struct figdef {
	const char *name;
	size_t off;
	enum unit unit;
	double max;
} figs[] = {
	{ "dram_bw_util.mean", OFF(dram_mean), U_PCT, 100 },
	{ "dram_bw_util.p95", OFF(dram_p95), U_PCT, 100 },
	{ "sm_util.mean", OFF(sm_mean), U_PCT, 100 },
	{ "sm_util.p95", OFF(sm_p95), U_PCT, 100 },
	{ "sm_occupancy.mean", OFF(occ_mean), U_PCT, 100 },
	{ "pcie_rx.mean", OFF(rx_mean), U_GBPS, GPUMEM_PROFILE_MAX_GBPS },
	{ "pcie_rx.p95", OFF(rx_p95), U_GBPS, GPUMEM_PROFILE_MAX_GBPS },
	{ "pcie_tx.mean", OFF(tx_mean), U_GBPS, GPUMEM_PROFILE_MAX_GBPS },
	{ "nvlink_rx.mean", OFF(nvrx_mean), U_GBPS, GPUMEM_PROFILE_MAX_GBPS },
	{ "nvlink_tx.mean", OFF(nvtx_mean), U_GBPS, GPUMEM_PROFILE_MAX_GBPS },
	{ "mem_used.max", OFF(mem_max), U_GIB, GPUMEM_PROFILE_MAX_GIB },
	{ "samples", OFF(samples), U_COUNT, 1e9 },
	{ "eff.l2", 0, U_EFF, 1e15 },
	{ "eff.mps", 0, U_EFF, 100 },
	{ "eff.um.pl", 0, U_WORDS, 0 },
	{ "eff.um.ab", 0, U_WORDS, 0 },
	{ "eff.um.pf", 0, U_WORDS, 0 },
	{ NULL, 0, 0, 0 },
};
/* What a figure is, by its unit, never by its place in the table. */
static int is_profile_fig(int i)
{
	return figs[i].unit == U_PCT || figs[i].unit == U_GBPS || figs[i].unit == U_GIB;
}

static int is_eff_fig(int i)
{
	return figs[i].unit == U_EFF || figs[i].unit == U_WORDS;
}

static const char *const metrics[] = { "dram_bw_util", "sm_util", "sm_occupancy", "pcie_rx",
	"pcie_tx", "nvlink_rx", "nvlink_tx", "mem_used", NULL };
static const char *const stats[] = { "mean", "median", "p95", "max", NULL };
static const char *const ops[] = { "<", "<=", ">", ">=", "==", "!=", "has" };

/* The figures of METRIC the summary keeps, "a, b", into BUF. */
static void kept(const char *metric, char *buf, size_t len)
{
	size_t n = strlen(metric), o = 0;

	buf[0] = '\0';
	for (int i = 0; figs[i].name && o < len; i++)
		if (is_profile_fig(i) && !strncmp(figs[i].name, metric, n) && figs[i].name[n] == '.')
			o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", figs[i].name);
}

/* The figure named WORD, or -1 with why in ERR. */
static int figure_of(const char *word, int eff, char *err, size_t len)
{
	const char *dot = strchr(word, '.'), *near;
	char metric[64], list[160];
	int m = -1, s = -1;

	for (int i = 0; figs[i].name; i++)
		if (!strcmp(figs[i].name, word)) {
			/* when reads both: a rule may be about what the job ran under. */
			if (!is_eff_fig(i) && eff) {
				snprintf(err, len, "%s: in_effect reads the job's effective policy "
					 "(eff.l2, eff.mps, eff.um.pl, eff.um.ab, eff.um.pf), not its "
					 "profile", word);
				return -1;
			}
			return i;
		}
	if (!strncmp(word, "eff.", 4)) {
		snprintf(err, len, "unknown figure '%s' of the effective policy (eff.l2, eff.mps, "
			 "eff.um.pl, eff.um.ab, eff.um.pf)", word);
		return -1;
	}
	snprintf(metric, sizeof(metric), "%.*s", dot ? (int)(dot - word) : 63, word);
	for (int i = 0; metrics[i]; i++)
		if (!strcmp(metrics[i], metric))
			m = i;
	for (int i = 0; dot && stats[i]; i++)
		if (!strcmp(stats[i], dot + 1))
			s = i;
	if (m < 0 || dot == NULL) {
		near = gpumem_walk_closest(metric, metrics, sizeof(char *));
		snprintf(err, len, "unknown %s '%s'%s%s%s (a metric.statistic: metrics dram_bw_util, "
			 "sm_util, sm_occupancy, pcie_rx, pcie_tx, nvlink_rx, nvlink_tx, mem_used; "
			 "or samples)", dot ? "metric" : "figure", dot ? metric : word,
			 near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
	} else if (s < 0) {
		snprintf(err, len, "unknown statistic '%s' (mean, median, p95, max)", dot + 1);
	} else {
		kept(metric, list, sizeof(list));
		snprintf(err, len, "the profile summary keeps no %s (of %s it keeps %s)", word,
			 metric, list);
	}
	return -1;
}

/* The tokens: a word (figure, and/or, has, always), a number, an operator, '*'. */
struct lex {
	const char *s;
	size_t at;              /* where the current token starts */
	size_t end;
};

static size_t next(struct lex *l)
{
	const char *s = l->s;
	size_t i = l->end;

	while (s[i] == ' ')
		i++;
	l->at = i;
	if (isalpha((unsigned char)s[i]) || s[i] == '_')
		while (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.')
			i++;
	else if (isdigit((unsigned char)s[i]) || s[i] == '.' || s[i] == '-')
		while (isalnum((unsigned char)s[i]) || s[i] == '.' || s[i] == '-' || s[i] == '+')
			i++;
	else if (strchr("<>=!", s[i]) && s[i])
		while (s[i] && strchr("<>=!", s[i]))
			i++;
	else if (s[i])
		i++;
	l->end = i;
	return i - l->at;
}

static int tok_is(const struct lex *l, const char *word)
{
	return l->end - l->at == strlen(word) && !strncmp(l->s + l->at, word, strlen(word));
}

static void tok_copy(const struct lex *l, char *buf, size_t len)
{
	snprintf(buf, len, "%.*s", (int)(l->end - l->at), l->s + l->at);
}

/* Fail with MSG about the current token. */
#define BAD(...) do { snprintf(err, len, __VA_ARGS__); *at = l.at; goto fail; } while (0)

/* One comparison at L into T; 0 or -1. */
static int comparison(struct lex *lp, struct gpumem_advice_term *t, int eff, char *err,
		      size_t len, size_t *at)
{
	struct lex l = *lp;
	char word[GPUMEM_ADVICE_TEXT_CHARS + 1], *end;
	const struct figdef *f;
	int rv = -1;

	if (next(&l) == 0)
		BAD("a comparison is missing here (FIGURE OP VALUE)");
	tok_copy(&l, word, sizeof(word));
	if ((t->left = figure_of(word, eff, err, len)) < 0) {
		*at = l.at;
		goto fail;
	}
	f = &figs[t->left];
	next(&l);
	tok_copy(&l, word, sizeof(word));
	for (t->op = 0; t->op <= GPUMEM_ADVICE_OP_HAS && strcmp(ops[t->op], word); t->op++)
		;
	if (t->op > GPUMEM_ADVICE_OP_HAS)
		BAD("bad operator '%s' after %s (<, <=, >, >=, ==, !=%s)", word, f->name,
		    f->unit == U_WORDS ? ", has" : "");
	if ((t->op == GPUMEM_ADVICE_OP_HAS) != (f->unit == U_WORDS))
		BAD("%s: %s", f->name, f->unit == U_WORDS ? "its words are compared with 'has "
		    "WORD' (eff.um.ab has gpu)" : "'has' compares the effective policy's unified-"
		    "memory words (eff.um.pl, eff.um.ab, eff.um.pf)");
	next(&l);
	tok_copy(&l, word, sizeof(word));
	t->right = -1;
	if (t->op == GPUMEM_ADVICE_OP_HAS) {
		if (word[0] == '\0' || strlen(word) >= sizeof(t->word) ||
		    strspn(word, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(word))
			BAD("%s has: expected a word such as gpu or cpu, got '%s'", f->name, word);
		memcpy(t->word, word, strlen(word) + 1);      /* it fits: checked above */
		*lp = l;
		return 0;
	}
	t->value = strtod(word, &end);
	if (word[0] == '\0' || *end || !isfinite(t->value))
		BAD("%s %s: expected a number, got '%s'", f->name, ops[t->op], word);
	{
		struct lex star = l;

		next(&star);
		if (tok_is(&star, "*")) {
			l = star;
			next(&l);
			tok_copy(&l, word, sizeof(word));
			if ((t->right = figure_of(word, eff, err, len)) < 0) {
				*at = l.at;
				goto fail;
			}
			if (figs[t->right].unit != f->unit || f->unit == U_EFF)
				BAD("%s compared with a multiple of %s: the same unit on both sides, "
				    "please", f->name, figs[t->right].name);
			if (t->value < 0 || t->value > 1000)
				BAD("factor %s out of range (0 to 1000)", word);
			*lp = l;
			return 0;
		}
	}
	if (t->value < 0 || t->value > f->max)
		BAD("value %s out of range for %s (0 to %g%s%s)", word, f->name, f->max,
		    unit_names[f->unit][0] ? " " : "", unit_names[f->unit]);
	*lp = l;
	rv = 0;
fail:
	return rv;
}

int gpumem_advice_cond_add(struct gpumem_advice_cond *c, const char *text, int eff,
			   char *err, size_t len, size_t *at)
{
	struct lex l = { text, 0, 0 };
	int item = c->nitems, or_before = 0, first = c->nterms;

	*at = 0;
	if (c->nitems >= GPUMEM_ADVICE_MAX_ITEMS) {
		snprintf(err, len, "more than %d conditions", GPUMEM_ADVICE_MAX_ITEMS);
		return -1;
	}
	if (strlen(text) > GPUMEM_ADVICE_TEXT_CHARS) {
		snprintf(err, len, "a condition longer than %d characters", GPUMEM_ADVICE_TEXT_CHARS);
		return -1;
	}
	next(&l);
	if (tok_is(&l, "always") && !eff) {
		next(&l);
		if (l.end != l.at || c->nitems || c->nterms)
			BAD("'always' stands alone: leave the other conditions out");
		snprintf(c->text[c->nitems++], sizeof(c->text[0]), "always");
		return 0;
	}
	l.end = 0;
	for (;;) {
		struct gpumem_advice_term *t = &c->t[c->nterms];

		if (c->nterms >= GPUMEM_ADVICE_MAX_TERMS)
			BAD("more than %d comparisons in one rule", GPUMEM_ADVICE_MAX_TERMS);
		memset(t, 0, sizeof(*t));
		if (comparison(&l, t, eff, err, len, at) < 0)
			goto fail;
		t->item = item;
		t->or_before = or_before;
		c->nterms++;
		if (next(&l) == 0)
			break;
		if (tok_is(&l, "or"))
			or_before = 1;
		else if (tok_is(&l, "and"))
			or_before = 0;
		else
			BAD("expected 'and', 'or' or the end after a comparison, got '%.*s'",
			    (int)(l.end - l.at), l.s + l.at);
	}
	snprintf(c->text[c->nitems++], sizeof(c->text[0]), "%s", text);
	return 0;
fail:
	c->nterms = first;
	return -1;
}

/* The record's um words: is W in the comma list of KEY= ("ab=cpu,gpu")? */
static int um_has(const char *um, const char *key, const char *w)
{
	size_t k = strlen(key), n = strlen(w);

	for (const char *p = um; p && *p; p += strcspn(p, " "), p += *p == ' ') {
		if (strncmp(p, key, k) || p[k] != '=')
			continue;
		for (const char *v = p + k + 1; *v && *v != ' '; v += strcspn(v, ", "), v += *v == ',')
			if (!strncmp(v, w, n) && (v[n] == ',' || v[n] == ' ' || v[n] == '\0'))
				return 1;
	}
	return 0;
}

/*
 * A number the effective policy holds, NAN when absent or not a number:
 * eff.l2 "50%" is 50 (percent of L2), "40MiB" its bytes (gpumem_parse_size).
 */
static double eff_num(struct json_object *eff, const char *key)
{
	const char *s = gpumem_json_str(eff, key), *why;
	double v = NAN;
	uint64_t bytes;
	char *end;

	if (s) {
		v = strtod(s, &end);
		if (*s && *end == '%' && end[1] == '\0' && !strcmp(key, "l2"))
			return v;
		if (*s && *end == '\0')
			return v;
		return !strcmp(key, "l2") && gpumem_parse_size(s, &bytes, &why) == 0 ?
			(double)bytes : NAN;
	}
	return gpumem_json_num(eff, key, &v) == 0 ? v : NAN;
}

static double value_of(int fig, const struct gpumem_prof_gpu *g, struct json_object *eff)
{
	double v;

	if (figs[fig].unit == U_COUNT)
		return isfinite(g->samples) ? g->samples : 0;
	if (!is_eff_fig(fig)) {
		memcpy(&v, (const char *)g + figs[fig].off, sizeof(v));
		return v;
	}
	return eff_num(eff, figs[fig].name + 4);
}

static int term_holds(const struct gpumem_advice_term *t, const struct gpumem_prof_gpu *g,
		      struct json_object *eff)
{
	double l, r;

	if (t->op == GPUMEM_ADVICE_OP_HAS)
		return um_has(gpumem_json_str(eff, "um"), figs[t->left].name + 7, t->word);
	l = value_of(t->left, g, eff);
	r = t->right < 0 ? t->value : t->value * value_of(t->right, g, eff);
	if (!isfinite(l) || !isfinite(r))
		return 0;
	switch (t->op) {
	case GPUMEM_ADVICE_OP_LT: return l < r;
	case GPUMEM_ADVICE_OP_LE: return l <= r;
	case GPUMEM_ADVICE_OP_GT: return l > r;
	case GPUMEM_ADVICE_OP_GE: return l >= r;
	case GPUMEM_ADVICE_OP_EQ: return l == r;
	default: return l != r;
	}
}

/* The effective policy's words that made term T hold. */
static void what_of(const struct gpumem_advice_term *t, struct json_object *eff, char *what,
		    size_t len)
{
	const char *name = figs[t->left].name;

	if (!strncmp(name, "eff.um.", 7))
		snprintf(what, len, "um %.80s", gpumem_json_str(eff, "um"));
	else if (!strcmp(name, "eff.l2"))
		snprintf(what, len, "l2 persisting limit %.32s", gpumem_json_str(eff, "l2"));
	else
		snprintf(what, len, "mps %.0f%%", value_of(t->left, NULL, eff));
}

int gpumem_advice_cond_holds(const struct gpumem_advice_cond *c, const struct gpumem_prof_gpu *g,
			     struct json_object *eff, char *what, size_t wlen)
{
	int i = 0;

	if (what)
		what[0] = '\0';
	/* Each condition (item): groups of "and"ed terms, "or"ed; the first group that holds. */
	while (i < c->nterms) {
		int item = c->t[i].item, any = 0;

		while (i < c->nterms && c->t[i].item == item) {
			int start = i, all = 1;

			do {
				all = all && term_holds(&c->t[i], g, eff);
				i++;
			} while (i < c->nterms && c->t[i].item == item && !c->t[i].or_before);
			if (all && !any) {
				any = 1;
				if (what && !what[0] && is_eff_fig(c->t[start].left))
					what_of(&c->t[start], eff, what, wlen);
			}
		}
		if (!any)
			return 0;
	}
	return 1;
}

/* A figure for a sentence: "7.5", "15" (one decimal, ".0" dropped), "-" when absent. */
static void fig_text(char *buf, size_t len, double v)
{
	if (!isfinite(v)) {
		snprintf(buf, len, "-");
		return;
	}
	snprintf(buf, len, "%.1f", v);
	if (strlen(buf) > 2 && strcmp(buf + strlen(buf) - 2, ".0") == 0)
		buf[strlen(buf) - 2] = '\0';
}

/*
 * The placeholder at T ("{pcie_rx.mean}", "{samples:s}"): its figure and
 * whether it is the plural form, the length through '}'; 0 when it is none.
 */
static size_t placeholder(const char *t, int *fig, int *plural)
{
	size_t n = strcspn(t + 1, "}"), k;
	char name[48];

	if (t[1 + n] != '}' || n == 0 || n >= sizeof(name))
		return 0;
	snprintf(name, sizeof(name), "%.*s", (int)n, t + 1);
	k = strlen(name);
	*plural = k > 2 && !strcmp(name + k - 2, ":s");
	if (*plural)
		name[k - 2] = '\0';
	for (int i = 0; figs[i].name; i++)
		if (!is_eff_fig(i) && !strcmp(figs[i].name, name)) {
			*fig = i;
			return n + 2;
		}
	return 0;
}

int gpumem_advice_reason_check(const char *tmpl, char *err, size_t len, size_t *at)
{
	int fig, plural;

	for (const char *p = tmpl; *p; p++) {
		*at = (size_t)(p - tmpl);
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			snprintf(err, len, "reason: a control character");
			return -1;
		}
		if (*p == '}') {
			snprintf(err, len, "reason: a '}' that closes no {FIGURE}");
			return -1;
		}
		if (*p != '{')
			continue;
		if (placeholder(p, &fig, &plural) == 0) {
			snprintf(err, len, "reason: '%.*s' is no {FIGURE} of the profile (such as "
				 "{pcie_rx.mean}, {samples}, {samples:s})", (int)strcspn(p, "} ") + 1,
				 p);
			return -1;
		}
		p += placeholder(p, &fig, &plural) - 1;
	}
	if (tmpl[0] == '\0') {
		*at = 0;
		snprintf(err, len, "reason: empty");
		return -1;
	}
	return 0;
}

void gpumem_advice_reason(const char *tmpl, const struct gpumem_prof_gpu *g, char *out,
			  size_t len)
{
	size_t o = 0;
	int fig, plural;

	for (const char *p = tmpl; *p && o + 1 < len; ) {
		size_t n = *p == '{' ? placeholder(p, &fig, &plural) : 0;
		char f[32];

		if (n == 0) {
			out[o++] = *p++;
			continue;
		}
		fig_text(f, sizeof(f), value_of(fig, g, NULL));
		if (plural)
			snprintf(f, sizeof(f), "%s", value_of(fig, g, NULL) == 1 ? "" : "s");
		o += (size_t)snprintf(out + o, len - o, "%s", f);
		p += n;
	}
	out[o < len ? o : len - 1] = '\0';
}

/*
 * S as a YAML double-quoted scalar, folded at a space past column 80 (YAML
 * reads the line break back as that space; continuation lines indented).
 */
static void yaml_str(FILE *out, const char *s)
{
	int col = 16;

	fputc('"', out);
	for (; *s; s++, col++) {
		if (*s == ' ' && col > 80 && s[1] && s[1] != ' ' && s[-1] != ' ') {
			fprintf(out, "\n      ");
			col = 6;
			continue;
		}
		fprintf(out, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
	}
	fputc('"', out);
}

static void yaml_cond(FILE *out, const char *key, const struct gpumem_advice_cond *c)
{
	if (c->nitems == 0)
		return;
	fprintf(out, "    %s:", key);
	if (c->nitems == 1) {
		fputc(' ', out);
		yaml_str(out, c->text[0]);
		fputc('\n', out);
		return;
	}
	fputc('\n', out);
	for (int i = 0; i < c->nitems; i++) {
		fprintf(out, "      - ");
		yaml_str(out, c->text[i]);
		fputc('\n', out);
	}
}

void gpumem_advice_table_yaml(const struct gpumem_advice_table *t, FILE *out)
{
	fprintf(out, "advice:%s\n", t->n ? "" : " []");
	for (int i = 0; i < t->n; i++) {
		const struct gpumem_advice_rule *r = &t->r[i];

		fprintf(out, "  - name: %s\n", r->name);
		yaml_cond(out, "when", &r->when);
		fprintf(out, "    policy: %s\n", r->policy[0] ? r->policy : "none");
		fprintf(out, "    promise: %s\n", gpumem_enum_name(gpumem_advice_promises,
							    (unsigned)r->promise));
		fprintf(out, "    reason: ");
		yaml_str(out, r->reason);
		fputc('\n', out);
		yaml_cond(out, "in_effect", &r->in_effect);
	}
}

static struct json_object *json_cond(const struct gpumem_advice_cond *c)
{
	struct json_object *a = json_object_new_array();

	for (int i = 0; a && i < c->nitems; i++)
		json_object_array_add(a, gpumem_json_string(c->text[i]));
	return a;
}

struct json_object *gpumem_advice_table_json(const struct gpumem_advice_table *t)
{
	struct json_object *o = json_object_new_object(), *rules = json_object_new_array();

	if (o == NULL || rules == NULL) {
		json_object_put(o);
		json_object_put(rules);
		return NULL;
	}
	gpumem_json_add(o, "source", gpumem_json_string(t->source));
	gpumem_json_add(o, "first", gpumem_json_string("unsampled: a GPU with no source, "
						       "before any rule"));
	gpumem_json_add(o, "rules", rules);
	for (int i = 0; i < t->n; i++) {
		const struct gpumem_advice_rule *r = &t->r[i];
		struct json_object *j = json_object_new_object();

		if (j == NULL || json_object_array_add(rules, j) < 0) {
			json_object_put(j);
			json_object_put(o);
			return NULL;
		}
		gpumem_json_add(j, "name", gpumem_json_string(r->name));
		gpumem_json_add(j, "when", json_cond(&r->when));
		gpumem_json_add(j, "policy", gpumem_json_string(r->policy[0] ? r->policy : NULL));
		gpumem_json_add(j, "promise", gpumem_json_string(
					gpumem_enum_name(gpumem_advice_promises, (unsigned)r->promise)));
		gpumem_json_add(j, "reason", gpumem_json_string(r->reason));
		gpumem_json_add(j, "in_effect", json_cond(&r->in_effect));
	}
	return o;
}
