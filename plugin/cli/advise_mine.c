/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem advise --mine [--since TIME] [--json]: the caller's own recent
 * jobs, grouped by job name, the most GPU-hours first: for each name how
 * many jobs and GPU-hours, and the advice of its latest profiled job (each
 * distinct rule and policy, on how many GPUs, and the rule's reason: what
 * following it would gain).  One sacct query, as the caller, for the
 * caller's uid only (--user), so nobody sees another's jobs even where
 * Slurm would show them (root, operators).  The records are those of
 * `gpumem advise JOBID` (acct.h, job_profile.c).  GPU-hours: AllocTRES's
 * gres/gpu times the elapsed time; where accounting does not track
 * gres/gpu (AccountingStorageTRES), the GPUs of the job's profile records.
 * Each name's advised runs (--gpumem-policy=advised) of the window, judged
 * as the advised lookup judges them (advice_history.h: the loop), from the same
 * rows: "tried: ..." lines ("applied by default: ..." where the job asked
 * for nothing: advised.by_default), --json's "history"; then what
 * advised.by_default does for the name's next job and why (the rule's
 * promise), --json's "by_default".
 * Job names are the user's own and may hold anything: the terminal gets
 * them cleaned (gpumem_job_text), --json gets them as JSON strings.
 *
 * Builds: gpumem (plugin/cli/cli.am).  Includes plugin/core's headers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core_record.h"
#include "advise_mine.h"
#include "core_advice.h"
#include "job_cli.h"
#include "core_base.h"
#include "core_policy.h"
#include "report_cli.h"

#define OUT_CAP (32 * 1024 * 1024)
#define DELIM "\x1f"            /* sacct's field separator: no job name is split by it... */
#define NFIXED 6                /* ...and the name comes last, whole, whatever it holds */
#define MAX_ADVICE 16

/* One distinct piece of advice of a job: a rule and policy, on how many GPUs. */
struct advice {
	char rule[32], policy[128], reason[400];
	int gpus, in_effect;
};

struct group {
	char *name;
	long jobs;
	double gpu_h;
	int gpus_guessed;               /* some GPU-hours from the records, not AllocTRES */
	int gpus_tres;                  /* some from AllocTRES */
	long long latest;               /* the latest profiled job, or -1 */
	struct advice adv[MAX_ADVICE];
	int nadv;
	char *rows;                     /* its jobs as the advised lookup reads them */
	size_t rlen, rcap;
};

struct mine {
	struct group *g;
	size_t n, cap;
	long long last_job;             /* the job whose steps follow, and its group */
	size_t last_group;
	long jobs, odd;
};

/* "gres/gpu=N" of an AllocTRES list, or -1. */
static long tres_gpus(const char *tres)
{
	for (const char *p = tres; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, "gres/gpu=", 9) == 0)
			return strtol(p + 9, NULL, 10);
	return -1;
}

/* What a job's records say: its GPUs with a profile, and its advice (ADV). */
struct job_seen {
	long gpus;
	struct json_object *advice;     /* a new array, the advice of every node's GPUs */
};

static void one_record(const char *data, size_t len, size_t at, void *arg)
{
	struct job_seen *js = arg;
	struct json_object *rec = NULL, *adv;
	char err[320];
	const char *st;

	(void)at;
	if (gpumem_acct_segment_record(data, len, &rec, err, sizeof(err)) < 0)
		return;                 /* `gpumem job JOBID` says why */
	st = gpumem_json_str(gpumem_json_get(rec, "prof"), "st");
	adv = st && !strcmp(st, "ran") ? gpumem_job_advice(rec) : NULL;
	for (size_t i = 0; i < gpumem_json_len(adv); i++) {
		struct json_object *a = gpumem_json_at(adv, i);

		if (json_object_get(a) && json_object_array_add(js->advice, a) < 0)
			json_object_put(a);
		js->gpus++;
	}
	json_object_put(adv);
	json_object_put(rec);
}

static struct group *group_of(struct mine *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->g[i].name, name) == 0)
			return &m->g[i];
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct group *g = realloc(m->g, cap * sizeof(*g));

		if (g == NULL)
			return NULL;
		m->g = g;
		m->cap = cap;
	}
	memset(&m->g[m->n], 0, sizeof(m->g[0]));
	m->g[m->n].latest = -1;
	if ((m->g[m->n].name = strdup(name)) == NULL)
		return NULL;
	return &m->g[m->n++];
}

/* G's advice: job JOB's ADVICE, each distinct rule and policy once, with its GPUs. */
static void set_advice(struct group *g, long long job, struct json_object *advice)
{
	g->latest = job;
	g->nadv = 0;
	for (size_t i = 0; i < gpumem_json_len(advice); i++) {
		struct json_object *a = gpumem_json_at(advice, i);
		const char *rule = gpumem_json_str(a, "rule"), *pol = gpumem_json_str(a, "policy");
		int k;

		for (k = 0; k < g->nadv; k++)
			if (!strcmp(g->adv[k].rule, rule ? rule : "") &&
			    !strcmp(g->adv[k].policy, pol ? pol : ""))
				break;
		if (k == g->nadv) {
			if (g->nadv == MAX_ADVICE)
				continue;
			g->nadv++;
			snprintf(g->adv[k].rule, sizeof(g->adv[k].rule), "%s", rule ? rule : "");
			snprintf(g->adv[k].policy, sizeof(g->adv[k].policy), "%s", pol ? pol : "");
			snprintf(g->adv[k].reason, sizeof(g->adv[k].reason), "%s",
				 gpumem_json_str(a, "reason") ? gpumem_json_str(a, "reason") : "");
			g->adv[k].gpus = 0;
			g->adv[k].in_effect = 1;
		}
		g->adv[k].gpus++;
		g->adv[k].in_effect &= json_object_get_boolean(gpumem_json_get(a, "in_effect"));
	}
}

/* G's job ID as the advised lookup's sacct gives it: ID|ELAPSED|STATE|NAME|COMMENT. */
static int add_row(struct group *g, const char *id, const char *elapsed, const char *state,
		   const char *comment)
{
	size_t need = strlen(id) + strlen(elapsed) + strlen(state) + strlen(g->name) +
		strlen(comment) + 6;

	if (g->rlen + need > g->rcap) {
		size_t cap = (g->rlen + need) * 2;
		char *r = realloc(g->rows, cap);

		if (r == NULL)
			return -1;
		g->rows = r;
		g->rcap = cap;
	}
	g->rlen += (size_t)snprintf(g->rows + g->rlen, g->rcap - g->rlen, "%s|%s|%s|%s|%s\n", id,
				    elapsed, state, g->name, comment);
	return 0;
}

/*
 * G's advised runs, judged (advice_history.h) from its rows: 0 with A read
 * (gpumem_advised_free it), or -1.  The rows are read once: a copy.
 */
static int history(const struct group *g, struct gpumem_advised *a)
{
	char *text = g->rows ? strndup(g->rows, g->rlen) : NULL;
	int rv = text ? gpumem_advised_read(text, g->name, gpumem_job_rules(), a) : -1;

	free(text);
	return rv;
}

/* One line of sacct (a job's, or one of its steps' after it): JobIDRaw, State, End, ElapsedRaw,
 * AllocTRES, AdminComment, JobName. */
static int one_job(struct mine *m, char *line)
{
	char *f[NFIXED + 1];
	struct job_seen js = { 0, json_object_new_array() };
	struct group *g;
	long gpus;

	f[0] = line;
	for (int i = 1; i <= NFIXED; i++) {
		char *d = f[i - 1] ? strstr(f[i - 1], DELIM) : NULL;

		if (d)
			*d = '\0';
		f[i] = d ? d + strlen(DELIM) : NULL;
	}
	if (f[NFIXED] && f[0][0] && f[0][strspn(f[0], "0123456789")] == '.') {
		/* A step: its time is what the advised judge reads (advice_history.h). */
		json_object_put(js.advice);
		return m->last_job > 0 && strtoll(f[0], NULL, 10) == m->last_job ?
			add_row(&m->g[m->last_group], f[0], f[3], f[1], "") : 0;
	}
	if (f[NFIXED] == NULL || strspn(f[0], "0123456789") != strlen(f[0]) || !f[0][0] ||
	    js.advice == NULL) {
		json_object_put(js.advice);
		m->odd++;               /* a name with a newline: its tail */
		return 0;
	}
	gpumem_acct_segments(f[5], one_record, &js);
	if ((g = group_of(m, f[NFIXED])) == NULL) {
		json_object_put(js.advice);
		return -1;
	}
	m->jobs++;
	g->jobs++;
	m->last_job = strtoll(f[0], NULL, 10);
	m->last_group = (size_t)(g - m->g);
	gpus = tres_gpus(f[4]);
	g->gpus_tres |= gpus >= 0;
	if (gpus < 0 && js.gpus > 0) {
		gpus = js.gpus;
		g->gpus_guessed = 1;
	}
	if (gpus > 0)
		g->gpu_h += (double)gpus * strtod(f[3], NULL) / 3600.0;
	if (gpumem_json_len(js.advice) > 0 && strtoll(f[0], NULL, 10) > g->latest)
		set_advice(g, strtoll(f[0], NULL, 10), js.advice);
	json_object_put(js.advice);
	return add_row(g, f[0], f[3], f[1], f[5]);
}

static int by_gpu_h(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->gpu_h != y->gpu_h)
		return x->gpu_h < y->gpu_h ? 1 : -1;
	return x->jobs != y->jobs ? (x->jobs < y->jobs ? 1 : -1) : strcmp(x->name, y->name);
}

/*
 * What advised.by_default does for the next job of A's name that asks for
 * nothing (A read and chosen): the policy applied, or NULL, and the line
 * that says so and why ("" where by_default is off).
 */
static const char *by_default(const char *name, const struct gpumem_advised *a, char *line,
			      size_t len)
{
	int mode = gpumem_job_by_default();
	const char *m = gpumem_by_default_names[mode];
	int promise = gpumem_advice_promise(gpumem_job_rules(), a->rule);

	line[0] = '\0';
	if (mode == GPUMEM_BY_DEFAULT_OFF)
		return NULL;
	if (a->policy[0] == '\0') {
		snprintf(line, len, "by default (advised.by_default: %s): the next job named %s gets "
			 "the site's defaults (nothing to apply)", m, name);
		return NULL;
	}
	if (!gpumem_advice_unasked(gpumem_job_rules(), mode, a->rule)) {
		snprintf(line, len, "by default (advised.by_default: %s): the next job named %s gets "
			 "the site's defaults: %s (%s) promises no speed-up (--gpumem-policy=advised "
			 "applies it)", m, name, a->policy, a->rule);
		return NULL;
	}
	snprintf(line, len, "by default (advised.by_default: %s): the next job named %s gets %s "
		 "(%s promises %s)", m, name, a->policy, a->rule, promise == GPUMEM_PROMISE_GAIN ?
		 "a gain" : "no speed-up; all applies every rule");
	return a->policy;
}

/*
 * G's advised runs, one line each: "  tried: zerocopy.yaml tried in job
 * ...: kept", "applied by default: ..." for a run that asked for nothing;
 * then what advised.by_default does for its next job.
 */
static void print_history(const struct group *g)
{
	struct gpumem_advised a;
	char line[1600];

	if (history(g, &a) < 0)
		return;
	for (size_t i = 0; i < a.nhist; i++)
		printf("  %s: %s\n", a.hist[i].job->unasked ? "applied by default" : "tried",
		       gpumem_job_text(a.hist[i].text));
	gpumem_advised_choose(&a, g->name, gpumem_job_advised_days());
	by_default(g->name, &a, line, sizeof(line));
	if (line[0])
		printf("  %s\n", gpumem_job_text(line));
	gpumem_advised_free(&a);
}

/* The same as {"mode", "policy" (applied, or null), "advised", "rule", "promise", "text"}. */
static struct json_object *by_default_json(const struct group *g, struct gpumem_advised *a)
{
	struct json_object *o = json_object_new_object();
	const char *applied;
	char line[1600];
	int promise;

	if (o == NULL)
		return NULL;
	gpumem_advised_choose(a, g->name, gpumem_job_advised_days());
	applied = by_default(g->name, a, line, sizeof(line));
	promise = gpumem_advice_promise(gpumem_job_rules(), a->rule);
	gpumem_json_add(o, "mode", gpumem_json_string(gpumem_by_default_names[
		gpumem_job_by_default()]));
	gpumem_json_add(o, "policy", gpumem_json_string(applied));
	gpumem_json_add(o, "advised", gpumem_json_string(a->policy[0] ? a->policy : NULL));
	gpumem_json_add(o, "rule", gpumem_json_string(a->policy[0] ? a->rule : NULL));
	gpumem_json_add(o, "promise", gpumem_json_string(promise < 0 || !a->policy[0] ? NULL :
		gpumem_enum_name(gpumem_advice_promises, (unsigned)promise)));
	gpumem_json_add(o, "text", gpumem_json_string(line[0] ? line : NULL));
	return o;
}

static void print_text(const struct mine *m, const char *from)
{
	printf("Your jobs since %s: %zu name%s, %ld job%s, the most GPU-hours first\n", from, m->n,
	       m->n == 1 ? "" : "s", m->jobs, m->jobs == 1 ? "" : "s");
	for (size_t i = 0; i < m->n; i++) {
		const struct group *g = &m->g[i];

		char h[32];

		snprintf(h, sizeof(h), g->gpu_h > 0 && g->gpu_h < 0.005 ? "<0.01" : "%.2f", g->gpu_h);
		printf("\n%s: %ld job%s, %s GPU-hours%s", gpumem_job_text(g->name), g->jobs,
		       g->jobs == 1 ? "" : "s", h, g->gpus_guessed ? " (GPUs from the "
		       "profiles: accounting does not track gres/gpu)" : "");
		if (g->latest < 0) {
			printf("; no profiled job\n");
			continue;
		}
		printf("; advice of the latest profiled job, %lld:\n", g->latest);
		for (int k = 0; k < g->nadv; k++) {
			const struct advice *a = &g->adv[k];

			printf("  %s (%s, %d GPU%s)%s: %s\n", a->policy[0] ? a->policy : "no policy",
			       a->rule, a->gpus, a->gpus == 1 ? "" : "s",
			       a->policy[0] && a->in_effect ? ", already in effect" : "",
			       gpumem_job_text(a->reason));
		}
		print_history(g);
	}
	if (m->odd)
		printf("\n(%ld line%s of sacct not read: a job name with a line break?)\n", m->odd,
		       m->odd == 1 ? "" : "s");
}

static struct json_object *group_json(const struct group *g)
{
	struct json_object *o = json_object_new_object(), *arr = json_object_new_array();
	struct gpumem_advised adv;

	if (o == NULL || arr == NULL) {
		json_object_put(o);
		json_object_put(arr);
		return NULL;
	}
	gpumem_json_add(o, "name", gpumem_json_string(g->name));
	gpumem_json_add(o, "jobs", gpumem_json_int(g->jobs));
	gpumem_json_add(o, "gpu_hours", gpumem_json_number(g->gpu_h));
	gpumem_json_add(o, "gpus_from", gpumem_json_string(g->gpus_guessed ? "profile" :
							     g->gpus_tres ? "tres" : "none"));
	gpumem_json_add(o, "latest_profiled_job", g->latest < 0 ? NULL : gpumem_json_int(g->latest));
	for (int k = 0; k < g->nadv; k++) {
		struct json_object *a = json_object_new_object();

		if (a == NULL || json_object_array_add(arr, a) < 0) {
			json_object_put(a);
			continue;
		}
		gpumem_json_add(a, "rule", gpumem_json_string(g->adv[k].rule));
		gpumem_json_add(a, "policy", g->adv[k].policy[0] ?
				gpumem_json_string(g->adv[k].policy) : NULL);
		gpumem_json_add(a, "in_effect", gpumem_json_bool(g->adv[k].in_effect));
		gpumem_json_add(a, "gpus", gpumem_json_int(g->adv[k].gpus));
		gpumem_json_add(a, "reason", gpumem_json_string(g->adv[k].reason));
	}
	gpumem_json_add(o, "advice", arr);
	if (history(g, &adv) == 0) {
		gpumem_json_add(o, "history", gpumem_job_history_runs(&adv));
		gpumem_json_add(o, "by_default", by_default_json(g, &adv));
		gpumem_advised_free(&adv);
	}
	return o;
}

static int print_json(const struct mine *m, const char *from)
{
	struct json_object *o = json_object_new_object(), *names = json_object_new_array();
	int rv = -1;

	if (o == NULL || names == NULL) {
		json_object_put(names);
		goto fail;
	}
	gpumem_json_add(o, "since", gpumem_json_string(from));
	gpumem_json_add(o, "jobs", gpumem_json_int(m->jobs));
	gpumem_json_add(o, "names", names);
	for (size_t i = 0; i < m->n; i++) {
		struct json_object *g = group_json(&m->g[i]);

		if (g == NULL || json_object_array_add(names, g) < 0) {
			json_object_put(g);
			goto fail;
		}
	}
	if (gpumem_json_write(stdout, o, GPUMEM_JSON_SPACED) == 0 && putchar('\n') != EOF)
		rv = 0;
fail:
	json_object_put(o);
	return rv;
}

int gpumem_advise_mine(const char *since, int json)
{
	char *out = malloc(OUT_CAP), err[512], start[32], uid[24], *line, *save = NULL;
	time_t t;
	struct tm tm;
	struct mine m = { 0 };
	int rc, rv = 2;

	if (gpumem_report_parse_since(since ? since : "7d", time(NULL), &t) < 0) {
		fprintf(stderr, "gpumem: advise: --since: '%s' is neither a time (2026-11-22, "
			"2026-11-22T03:00) nor an age (90m, 2h, 7d, 2w)\n", gpumem_job_text(since));
		free(out);
		return 64;
	}
	localtime_r(&t, &tm);           /* sacct reads times in the local zone */
	strftime(start, sizeof(start), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
	char *argv[] = { "sacct", "-n", "-P", "--delimiter=" DELIM, "--user", uid,
			 "--starttime", start, "-o",
			 "JobIDRaw,State,End,ElapsedRaw,AllocTRES,AdminComment,JobName", NULL };
	if (out == NULL)
		goto fail;
	rc = gpumem_run_capture(argv, out, OUT_CAP, err, sizeof(err), 60);
	if (rc != 0) {
		fprintf(stderr, "gpumem: advise: --mine: sacct failed: %s\n",
			err[0] ? gpumem_job_text(err) : "(no message)");
		goto fail;
	}
	if (strlen(out) >= OUT_CAP - 1)
		fprintf(stderr, "gpumem: advise: --mine: sacct said more than %d MiB: the jobs "
			"after that are left out (a shorter --since)\n", OUT_CAP >> 20);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (one_job(&m, line) < 0) {
			fprintf(stderr, "gpumem: advise: --mine: out of memory\n");
			goto fail;
		}
	qsort(m.g, m.n, sizeof(m.g[0]), by_gpu_h);
	if (json) {
		if (print_json(&m, start) < 0)
			goto fail;
	} else if (m.n == 0) {
		printf("No job of yours in accounting since %s.\n", start);
	} else {
		print_text(&m, start);
	}
	rv = 0;
fail:
	for (size_t i = 0; i < m.n; i++) {
		free(m.g[i].name);
		free(m.g[i].rows);
	}
	free(m.g);
	free(out);
	return rv;
}
