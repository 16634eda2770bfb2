/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --gpumem-policy=advised (advice_history.h): sacct's rows of a user's jobs of one
 * name -> each job's winning advice, the history of its advised runs (did
 * they gain?) and the choice for the next job with the one line that says
 * why.  No I/O: srun's side (plugin/spank/advised.c) and `gpumem advise`
 * (plugin/cli/job.c) run sacct and print.  Every record goes through the
 * accounting record's decoder and checker (acct.h): a forged or oversized
 * AdminComment is refused there and counted, never read.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core_record.h"
#include "core_policy.h"
#include "advise.h"
#include "advice_history.h"

/* What Slurm 22.05's database may name a job srun started (advice_history.h). */
#define ALLOC_NAME "allocation"

/*
 * sacct's --name filter only where it is exact: Slurm's list parser splits
 * at ',' and drops quotes, and MariaDB's collation refuses some UTF-8 (C1
 * controls: error 1267).  Any other name: all the user's jobs of the window,
 * matched here (one_row), whole.
 */
static int name_filter_ok(const char *name)
{
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p < 0x20 || *p >= 0x7f || *p == ',' || *p == '"' || *p == '\'' || *p == '\\')
			return 0;
	return 1;
}

int gpumem_advised_argv(const char *name, const char *user, int days, char *buf, size_t blen,
			char **argv, size_t nargv, char *why, size_t wlen)
{
	static const char *const fixed[] = { "sacct", "-n", "-P", "-o",
		"JobIDRaw,ElapsedRaw,State,JobName,AdminComment,WorkDir,SubmitLine" };
	size_t k = 0, nf = sizeof(fixed) / sizeof(fixed[0]);
	int n, filter;

	if (name == NULL || !*name || strchr(name, '\n') || strlen(name) > 200) {
		snprintf(why, wlen, "%s", name == NULL || !*name ? "the job has no name" :
			 strlen(name) > 200 ? "the job name is over 200 bytes" :
			 "sacct's answer cannot tell a job name with a line break");
		return -1;
	}
	filter = name_filter_ok(name);
	n = snprintf(buf, blen, "--user=%s%c-Snow-%ddays%c--name=%s," ALLOC_NAME, user, 0, days,
		     0, filter ? name : "");
	if (n < 0 || (size_t)n >= blen || nargv < nf + 4) {
		snprintf(why, wlen, "the job name is too long");
		return -1;
	}
	for (size_t i = 0; i < nf; i++)
		argv[k++] = (char *)fixed[i];
	argv[k++] = buf;
	argv[k++] = buf + strlen(buf) + 1;
	if (filter) {
		argv[k] = argv[k - 1] + strlen(argv[k - 1]) + 1;
		k++;
	}
	argv[k] = NULL;
	return 0;
}

/* Rank of RULE in GPUMEM_ADVISED_ORDER (a rule the order does not know: after it). */
/* RULE's place in table T: its order decides between used GPUs (advice_history.h). */
static int rank_of(const struct gpumem_advice_table *t, const char *rule)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (strcmp(t->r[i].name, rule) == 0)
			return i;
	return i;
}

static int used(const char *rule)
{
	return strcmp(rule, "unsampled") && strcmp(rule, "short") && strcmp(rule, "idle");
}

struct pick {
	struct gpumem_advised_job *j;
	const struct gpumem_advice_table *rules;
	int best;                       /* rank of the winner so far, -1: none */
	int best_used;
	double prof_s;                  /* the record's sampled seconds */
};

/* One GPU's advice into the job's winner (advice_history.h: which GPU wins). */
static void consider(struct pick *k, const char *node, const struct gpumem_prof_gpu *g,
		     const struct gpumem_advice *a)
{
	struct gpumem_advised_job *j = k->j;
	int u = used(a->rule), r = rank_of(k->rules, a->rule);

	j->ngpus++;
	j->nused += u;
	/* The fewest samples of a used GPU; while none is used, the most of any. */
	if (isfinite(g->samples) && ((u && (j->jr.nused == 0 || g->samples < j->jr.samples)) ||
				     (!u && j->jr.nused == 0 && g->samples > j->jr.samples)))
		j->jr.samples = g->samples;
	j->jr.nused += u;
	if (isfinite(g->sm_mean))
		j->jr.busy_s += k->prof_s * g->sm_mean / 100;
	if (!j->jr.model[0])
		snprintf(j->jr.model, sizeof(j->jr.model), "%s", g->model);
	if (strcmp(a->rule, "unsampled") == 0 || strcmp(a->rule, "short") == 0)
		return;
	j->profiled = 1;
	if (j->advised && u && strcmp(a->rule, "faulting") == 0 &&
	    strcmp(j->from_rule, "faulting") == 0)
		j->still = 1;
	if (k->best >= 0 && (k->best_used > u || (k->best_used == u && k->best <= r)))
		return;
	k->best = r;
	k->best_used = u;
	j->gpu = g->index;
	snprintf(j->node, sizeof(j->node), "%s", node);
	snprintf(j->rule, sizeof(j->rule), "%s", a->rule);
	snprintf(j->policy, sizeof(j->policy), "%s", a->policy ? a->policy : "");
	snprintf(j->reason, sizeof(j->reason), "%s", a->reason);
}

/* One node's record, checked: its name (advised?) and its GPUs' advice. */
static void one_record(struct pick *k, struct json_object *rec)
{
	struct json_object *prof = gpumem_json_get(rec, "prof"), *rows = gpumem_json_get(prof, "g");
	struct json_object *eff = gpumem_json_get(rec, "eff");
	const char *st = gpumem_json_str(prof, "st"), *node = gpumem_json_str(rec, "node");
	struct gpumem_advised_job *j = k->j;
	struct gpumem_advsrc src;

	j->nrecords++;
	k->prof_s = 0;
	gpumem_json_num(prof, "s", &k->prof_s);
	j->jr.profiled |= st && strcmp(st, "ran") == 0;
	if (gpumem_json_str(rec, "policy") && strcmp(gpumem_json_str(rec, "policy"), "site defaults"))
		j->dflt = 0;
	if (!j->advised && gpumem_advsrc_of_record(rec, &src)) {
		j->advised = 1;
		j->from = src.job;
		snprintf(j->from_policy, sizeof(j->from_policy), "%s", src.policy);
		snprintf(j->from_rule, sizeof(j->from_rule), "%s", src.rule);
		j->unasked = src.unasked;
	}
	for (size_t i = 0; st && strcmp(st, "ran") == 0 && i < gpumem_json_len(rows); i++) {
		struct gpumem_prof_gpu g;
		struct gpumem_advice a;

		if (gpumem_prof_gpu_of(gpumem_json_at(rows, i), &g) < 0)
			continue;
		gpumem_advise_with(k->rules, &g, eff, &a);
		consider(k, node ? node : "-", &g, &a);
	}
}

static void segment(const char *data, size_t len, size_t at, void *arg)
{
	struct pick *k = arg;
	struct json_object *rec = NULL;
	char err[320];

	(void)at;
	if (gpumem_acct_segment_record(data, len, &rec, err, sizeof(err)) == 0)
		one_record(k, rec);
	else
		k->j->nrefused++;
	json_object_put(rec);
}

/*
 * Does the stored name at DB (sacct's field, up to its '|') read as NAME?
 * The database keeps what it can: a double quote as a backquote (Slurm
 * before 23.02), a character its charset lacks as '?'.  The length of DB's
 * name, or -1.
 */
static long name_at(const char *db, const char *name)
{
	const unsigned char *w = (const unsigned char *)name;
	const char *p = db;

	while (*w) {
		size_t l = *w >= 0x80 ? gpumem_utf8_len(w, strlen((const char *)w)) : 1;

		if (l == 0)
			l = 1;
		if (strncmp(p, (const char *)w, l) == 0)
			p += l;
		else if ((*w == '"' && *p == '`') || (*w >= 0x80 && *p == '?'))
			p++;
		else
			return -1;
		w += l;
	}
	return *p == '|' ? (long)(p - db) : -1;
}

struct row {
	char *id, *elapsed, *state, *rest;      /* rest: NAME|COMMENT */
	long long job;                          /* the job of the row (a step's too) */
	int step;                               /* "N.0", "N.batch", ... */
};

/* "ID|ELAPSED|STATE|NAME|COMMENT" split (LINE modified): 0, or -1 for a bad line. */
static int split_row(char *line, struct row *r)
{
	char *f[3], *p = line, *end;

	for (int i = 0; i < 3; i++) {
		f[i] = p;
		p = strchr(p, '|');
		if (p == NULL)
			return -1;
		*p++ = '\0';
	}
	r->id = f[0];
	r->elapsed = f[1];
	r->state = f[2];
	r->rest = p;
	r->job = strtoll(f[0], &end, 10);
	r->step = *end == '.';
	return r->job > 0 && (*end == '\0' || *end == '.') ? 0 : -1;
}

/* Is the word at P (LEN bytes) gpumem's own option, which says how to run the job, not what? */
static int policy_word(const char *p, size_t len, int *value_next)
{
	static const char opt[] = "--gpumem-policy";
	size_t n = sizeof(opt) - 1;

	*value_next = len == n && !strncmp(p, opt, n);
	return *value_next || (len > n && !strncmp(p, opt, n) && p[n] == '=');
}

/*
 * The job's command from what follows its AdminComment, "WORKDIR|SUBMITLINE"
 * (either may hold '|': hashed whole), without gpumem's own option
 * (--gpumem-policy=X or --gpumem-policy X: an advised run and the runs
 * under the defaults run the same command); 0 where accounting has
 * neither (a row without them, or 22.05 just after the job ended).
 */
static uint64_t command_of(const char *cmd)
{
	uint64_t h = GPUMEM_FNV1A_BASIS;
	int skip = 0, value_next;

	if (cmd == NULL || !strcmp(cmd, "") || !strcmp(cmd, "|"))
		return 0;
	for (const char *p = cmd; *p;) {
		size_t len = strcspn(p, " \t");

		if (len == 0) {
			p++;
			continue;
		}
		if (skip)
			skip = 0;
		else if (policy_word(p, len, &value_next))
			skip = value_next;
		else
			h = gpumem_fnv1a(gpumem_fnv1a(h, p, len), " ", 1);
		p += len;
	}
	return h;
}

/* Job row R, its name NL bytes long, its command CMD (or NULL), into J. */
static void take_row(const struct row *r, long nl, const char *cmd,
		     const struct gpumem_advice_table *rules, struct gpumem_advised_job *j)
{
	struct pick k = { j, rules, -1, 0, 0 };
	char *end;

	memset(j, 0, sizeof(*j));
	j->id = r->job;
	j->dflt = 1;
	j->batch_s = j->step_s = -1;
	j->elapsed = strtol(r->elapsed, &end, 10);
	if (*end || j->elapsed < 0)
		j->elapsed = 0;
	j->completed = strcmp(r->state, "COMPLETED") == 0;
	j->jr.cmd = command_of(cmd);
	gpumem_acct_segments(r->rest + nl + 1, segment, &k);
}

static int newer_first(const void *a, const void *b)
{
	const struct gpumem_advised_job *x = a, *y = b;

	return x->id < y->id ? 1 : x->id > y->id ? -1 : 0;
}

const struct gpumem_advised_job *gpumem_advised_find(const struct gpumem_advised *a, long long id)
{
	for (size_t i = 0; i < a->njobs; i++)
		if (a->jobs[i].id == id)
			return &a->jobs[i];
	return NULL;
}

/* A step row R of job J: its time (advice_history.h: the work, not the wall). */
static void step_time(struct gpumem_advised_job *j, const struct row *r)
{
	const char *dot = strchr(r->id, '.');
	char *end;
	long t = strtol(r->elapsed, &end, 10);

	if (j == NULL || r->job != j->id || dot == NULL || *end || t < 0)
		return;
	if (!strcmp(dot, ".batch"))
		j->batch_s = t;
	else if (dot[1] >= '0' && dot[1] <= '9' && t > j->step_s)
		j->step_s = t;
}

/* What the judge reads of J (judge.h). */
static void judge_run(struct gpumem_advised_job *j)
{
	j->jr.id = j->id;
	j->jr.completed = j->completed;
	j->jr.job_s = j->elapsed;
	j->jr.work_s = j->batch_s >= 0 ? j->batch_s : j->step_s;
	j->jr.ngpus = j->ngpus;
	j->jr.symptom = j->still;
}

/* The judgement of advised job J against the runs under the defaults before it. */
static void judge(const struct gpumem_advised *a, const struct gpumem_advised_job *j,
		  struct gpumem_advised_history *h)
{
	const struct gpumem_judge_run *c[GPUMEM_ADVISED_MAX_JOBS];
	size_t n = 0;

	memset(h, 0, sizeof(*h));
	h->job = j;
	h->from = gpumem_advised_find(a, j->from);
	for (size_t i = 0; i < a->njobs; i++)
		if (a->jobs[i].id < j->id && a->jobs[i].dflt && !a->jobs[i].advised)
			c[n++] = &a->jobs[i].jr;
	gpumem_judge(&j->jr, c, n, a->rules, j->from_rule, &h->j);
	h->ratio = h->j.ratio;
	h->outcome = gpumem_judge_outcome(&h->j, &j->jr);
}

int gpumem_advised_read(char *text, const char *name, const struct gpumem_advice_table *rules,
			struct gpumem_advised *out)
{
	char *line, *save = NULL;
	struct row alloc, *pending = NULL;
	struct gpumem_advised_job *cur = NULL;  /* the job whose steps follow */

	memset(out, 0, sizeof(*out));
	out->rules = rules ? rules : gpumem_advice_builtin();
	out->jobs = calloc(GPUMEM_ADVISED_MAX_JOBS, sizeof(*out->jobs));
	out->hist = calloc(GPUMEM_ADVISED_MAX_JOBS, sizeof(*out->hist));
	if (out->jobs == NULL || out->hist == NULL) {
		gpumem_advised_free(out);
		return -1;
	}
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct gpumem_advised_job *j = &out->jobs[out->njobs];
		struct row r;
		char *cmd, *bar;
		long nl;

		if (split_row(line, &r) < 0)
			continue;
		if (r.step && cur && r.job == cur->id && !(pending && r.job == pending->job)) {
			step_time(cur, &r);
			continue;
		}
		/*
		 * The name may hold '|': it is known, so it is matched whole, not
		 * split; what follows is AdminComment, which holds no '|' of gpumem's
		 * (a job named "a|b" is not "a" with a comment "b|..."), then the
		 * job's WorkDir and SubmitLine, its command (command_of).
		 */
		nl = name_at(r.rest, name);
		cmd = NULL;
		if (nl >= 0 && (bar = strchr(r.rest + nl + 1, '|')) != NULL) {
			*bar = '\0';
			cmd = bar + 1;
		}
		if (!r.step) {
			pending = NULL;
			if (nl < 0 && strncmp(r.rest, ALLOC_NAME "|", strlen(ALLOC_NAME) + 1) == 0) {
				/* Named by a step that follows? (advice_history.h: "allocation") */
				alloc = r;
				pending = &alloc;
				continue;
			}
			if (nl < 0)
				continue;
			take_row(&r, nl, cmd, out->rules, j);
		} else if (pending && r.job == pending->job && nl >= 0) {
			bar = strchr(pending->rest + strlen(ALLOC_NAME) + 1, '|');
			if (bar)
				*bar = '\0';
			take_row(pending, (long)strlen(ALLOC_NAME), bar ? bar + 1 : NULL, out->rules, j);
			pending = NULL;
			step_time(j, &r);
		} else {
			continue;
		}
		cur = NULL;
		if (j->nrecords || j->nrefused) {
			/* Keep the newest when over the cap: replace the oldest kept. */
			if (out->njobs + 1 < GPUMEM_ADVISED_MAX_JOBS) {
				out->njobs++;
				cur = j;
			} else {
				qsort(out->jobs, out->njobs + 1, sizeof(*j), newer_first);
			}
		}
	}
	qsort(out->jobs, out->njobs, sizeof(*out->jobs), newer_first);
	for (size_t i = 0; i < out->njobs; i++)
		judge_run(&out->jobs[i]);
	for (size_t i = 0; i < out->njobs; i++)
		if (out->jobs[i].advised)
			judge(out, &out->jobs[i], &out->hist[out->nhist++]);
	gpumem_advised_loop(out);
	return 0;
}

void gpumem_advised_free(struct gpumem_advised *a)
{
	free(a->jobs);
	free(a->hist);
	memset(a, 0, sizeof(*a));
}
