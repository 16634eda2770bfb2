/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Advice from a job's GPU memory profile: which policy of
 * the site's policy directory a job like this one should try, from one
 * GPU's compact summary (profile.h) and the job's effective policy (the
 * accounting record's "eff").  The rules are data: a table of rules,
 * each a name, conditions on the summary's figures and the effective
 * policy's ("when"), the policy to advise, a reason template naming
 * figures, and conditions on
 * the effective policy that already do what it advises ("in_effect").
 * The built-in table (advise.c) is today's rules; a site file's advice:
 * section replaces it (advise_site.c); the condition language and the
 * table's printing are advise_rules.c's.  Evaluation is pure: no I/O, the
 * same figures always give the same advice.  doc/admin/profile.md has the
 * built-in rules as a table with the measurements behind them.
 */
#ifndef GPUMEM_ADVISE_H
#define GPUMEM_ADVISE_H
#include <stdio.h>
#include "core_base.h"
#include "core_record.h"

#define GPUMEM_ADVICE_MAX_RULES 32      /* rules in a table */
#define GPUMEM_ADVICE_MAX_ITEMS 8       /* conditions in a rule's when (or in_effect) */
#define GPUMEM_ADVICE_MAX_TERMS 8       /* comparisons in a rule's when (or in_effect) */
#define GPUMEM_ADVICE_NAME_CHARS 32
#define GPUMEM_ADVICE_POLICY_CHARS 128  /* "NAME.yaml" */
#define GPUMEM_ADVICE_TEXT_CHARS 160    /* one condition */
#define GPUMEM_ADVICE_REASON_CHARS 360  /* a reason template */

/* One comparison: LEFT OP VALUE, LEFT OP VALUE * RIGHT, or LEFT has WORD. */
struct gpumem_advice_term {
	int left, right;                /* figures (advise_rules.c); right -1: a constant */
	int op;                         /* GPUMEM_ADVICE_OP_* */
	int item;                       /* which condition of the list it belongs to */
	int or_before;                  /* "or" joins it to the term before */
	double value;                   /* the constant, or the factor of RIGHT */
	char word[16];                  /* has WORD */
};
enum { GPUMEM_ADVICE_OP_LT, GPUMEM_ADVICE_OP_LE, GPUMEM_ADVICE_OP_GT, GPUMEM_ADVICE_OP_GE,
       GPUMEM_ADVICE_OP_EQ, GPUMEM_ADVICE_OP_NE, GPUMEM_ADVICE_OP_HAS };

/*
 * A list of conditions, all of which must hold; one condition is
 * comparisons joined by "and" and "or" ("and" first).  No condition:
 * "always" (when) or "never" (in_effect).
 */
struct gpumem_advice_cond {
	int nitems, nterms;
	char text[GPUMEM_ADVICE_MAX_ITEMS][GPUMEM_ADVICE_TEXT_CHARS + 1];
	struct gpumem_advice_term t[GPUMEM_ADVICE_MAX_TERMS];
};

/*
 * What a rule's policy promises the job (the rule's "promise"): a gain
 * (the job runs faster once the symptom is gone: faulting's zerocopy.yaml),
 * or no speed-up, only no loss (checks, a share of the GPU: hbm-bound's
 * stream.yaml, idle's mps-half.yaml).  advised.by_default: gain applies
 * the first kind unasked and only that; the advised judge holds each rule
 * to its promise.  A site rule that says none promises no speed-up.
 */
enum { GPUMEM_PROMISE_NOT_SLOWER = 0, GPUMEM_PROMISE_GAIN };
extern const char *const gpumem_advice_promises[];     /* "not-slower", "gain", NULL */

struct gpumem_advice_rule {
	char name[GPUMEM_ADVICE_NAME_CHARS + 1];
	int promise;                                    /* GPUMEM_PROMISE_* */
	char policy[GPUMEM_ADVICE_POLICY_CHARS + 1];    /* "zerocopy.yaml", "" for none */
	char reason[GPUMEM_ADVICE_REASON_CHARS + 1];    /* "{pcie_rx.mean}" names a figure */
	struct gpumem_advice_cond when, in_effect;
	int line, col, policy_line, policy_col;         /* in the site file; 0 built in */
};

struct gpumem_advice_table {
	char source[256];               /* "built-in", or the site file's path */
	int n;
	struct gpumem_advice_rule r[GPUMEM_ADVICE_MAX_RULES];
};

struct gpumem_advice {
	/*
	 * The rule's name ("unsampled" before any rule; "unmatched" when no
	 * rule of a site's table matched) and the policy to try, or NULL:
	 * none.  Both point into this struct's own copies (rule_buf,
	 * policy_buf), never into a table: copy the struct with
	 * gpumem_advice_copy, not '='.
	 */
	const char *rule;
	const char *policy;
	int in_effect;          /* the job's effective policy already does that */
	char reason[400];       /* a plain sentence with the figures that triggered it */
	char rule_buf[GPUMEM_ADVICE_NAME_CHARS + 1];
	char policy_buf[GPUMEM_ADVICE_POLICY_CHARS + 1];
};

/* The built-in table (today's rules), compiled once. */
const struct gpumem_advice_table *gpumem_advice_builtin(void);
/* The promise (GPUMEM_PROMISE_*) of table T's rule RULE, or -1 when T has no such rule. */
int gpumem_advice_promise(const struct gpumem_advice_table *t, const char *rule);
/*
 * May RULE's policy of table T be applied to a job that asked for nothing,
 * under advised.by_default MODE (GPUMEM_BY_DEFAULT_*, policy.h)?  off:
 * never; all: always; gain: only where the rule promises a gain.
 */
int gpumem_advice_unasked(const struct gpumem_advice_table *t, int mode, const char *rule);
/*
 * The advice for GPU G under table T (NULL: the built-in one); EFF is the
 * record's "eff" member ({"l2", "mps", "daemon", "um"}), or NULL (then no
 * condition on it holds, in when or in_effect).  A GPU
 * without a source is "unsampled" before any rule; then the first rule
 * that matches wins.
 */
void gpumem_advise_with(const struct gpumem_advice_table *t, const struct gpumem_prof_gpu *g,
			struct json_object *eff, struct gpumem_advice *out);
/* The same under the built-in table. */
void gpumem_advise(const struct gpumem_prof_gpu *g, struct json_object *eff,
		   struct gpumem_advice *out);
void gpumem_advice_copy(struct gpumem_advice *dst, const struct gpumem_advice *src);
/* A as {"gpu": INDEX, "rule", "policy", "in_effect", "reason"}, a new object, or NULL. */
struct json_object *gpumem_advice_json(const struct gpumem_advice *a, long index);

/* ---- advise_rules.c: the condition language, the table printed */
/*
 * Compile TEXT, one condition, into C (item C->nitems).  EFF: a condition
 * on the effective policy (in_effect), else on the profile (when).  0, or
 * -1 with why in ERR and the byte of TEXT it is about in *AT.
 */
int gpumem_advice_cond_add(struct gpumem_advice_cond *c, const char *text, int eff,
			   char *err, size_t len, size_t *at);
/* Does C hold?  *WHAT (in_effect): the effective policy's words that made it. */
int gpumem_advice_cond_holds(const struct gpumem_advice_cond *c, const struct gpumem_prof_gpu *g,
			     struct json_object *eff, char *what, size_t wlen);
/* Is TEMPLATE a reason this version expands?  0, or -1 with why and *AT. */
int gpumem_advice_reason_check(const char *tmpl, char *err, size_t len, size_t *at);
/* TEMPLATE with G's figures ("{pcie_rx.mean}" -> "7.5", "-" when absent). */
void gpumem_advice_reason(const char *tmpl, const struct gpumem_prof_gpu *g, char *out,
			  size_t len);
/* T as the site file's advice: section (YAML), or as JSON (a new object). */
void gpumem_advice_table_yaml(const struct gpumem_advice_table *t, FILE *out);
struct json_object *gpumem_advice_table_json(const struct gpumem_advice_table *t);

/* ---- advise_site.c: the site file's advice: section (site.c calls it) */
struct gpumem_walk;
struct gpumem_ynode;
struct gpumem_site;
struct gpumem_diags;
int gpumem_advice_walk(struct gpumem_walk *w, const struct gpumem_ynode *n);
void gpumem_advice_table_free(struct gpumem_advice_table *t);
/* The table in force: the site file's (S may be NULL), else the built-in one. */
const struct gpumem_advice_table *gpumem_site_advice(const struct gpumem_site *s);
/*
 * Does every policy the site's table advises exist in its policy_dir?
 * Errors at the rule's policy: line:col.  `gpumem validate`, `gpumem
 * advise --rules` and `gpumem job/advise` ask; the plugin does not (a job
 * never fails for an advice rule).  0, or -1.
 */
int gpumem_advice_check_policies(const struct gpumem_site *s, struct gpumem_diags *d);
#endif
