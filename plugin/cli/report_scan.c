/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The head line of a report file read without json-c.  A cold `gpumem
 * report` over a fleet reads 100,000 head lines; json-c makes each a tree
 * of some 80 objects (and a copy of each number's text) for report_load.c
 * to copy a few fields out and free.  This
 * reads the head line as the plugin writes it (report_head.c): an object
 * of known keys, strings of printable ASCII without escapes, plain
 * numbers.  Anything else (an escape, another byte, an unknown or repeated
 * key, another type, a value report_load.c would refuse) returns 1 and the
 * caller parses the line with json-c as before, which accepts or refuses
 * it and says why.  So this path accepts nothing json-c would refuse, and
 * gives the same file and rows for what both read (the rows come from the
 * same builders in report_load.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "report_cli.h"

#define MAX_STR 256             /* longer strings: json-c's path */
#define MAX_ROWS 1024

struct sc {
	const char *p, *end;
};

struct str {
	const char *s;                  /* into the buffer; NULL: null */
	size_t n;
};

static void ws(struct sc *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static int eat(struct sc *c, char ch)
{
	ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return 1;
	}
	return 0;
}

static int word(struct sc *c, const char *w)
{
	size_t n = strlen(w);

	ws(c);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n))
		return 0;
	c->p += n;
	return 1;
}

static int string(struct sc *c, struct str *out)
{
	const char *s;

	if (!eat(c, '"'))
		return 0;
	for (s = c->p; c->p < c->end && *c->p != '"'; c->p++)
		if ((unsigned char)*c->p < 0x20 || (unsigned char)*c->p > 0x7e || *c->p == '\\')
			return 0;
	if (c->p >= c->end || c->p - s >= MAX_STR)
		return 0;
	out->s = s;
	out->n = (size_t)(c->p++ - s);
	return 1;
}

static int string_or_null(struct sc *c, struct str *out)
{
	out->s = NULL;
	return word(c, "null") || string(c, out);
}

/* Decimal digits from q: how many, and (while it fits) their value appended to *acc. */
static const char *digits(const char *q, const char *end, int *n, long long *acc)
{
	for (*n = 0; q < end && *q >= '0' && *q <= '9'; q++, (*n)++)
		if (*acc < 100000000000000000LL)
			*acc = *acc * 10 + (*q - '0');
	return q;
}

/*
 * A JSON number, valued as json-c values it: an integer as int64, else as
 * strtod does.  A decimal of at most 15 digits and a power of ten within
 * 10^22 is one exact integer divided or multiplied by one exact power of
 * ten, which IEEE rounds once, correctly: the value strtod gives, without
 * its arbitrary-precision path.
 */
static int number(struct sc *c, double *v)
{
	static const double p10[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
		1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
	const char *s, *q;
	long long mant = 0;
	int n, frac = 0, e = 0, eneg = 0, integer = 1;
	char tmp[48];

	ws(c);
	s = q = c->p;
	if (q < c->end && *q == '-')
		q++;
	q = digits(q, c->end, &n, &mant);
	if (n == 0 || (n > 1 && q[-n] == '0'))
		return 0;
	if (q < c->end && *q == '.') {
		integer = 0;
		if ((q = digits(q + 1, c->end, &frac, &mant)), frac == 0)
			return 0;
	}
	if (q < c->end && (*q == 'e' || *q == 'E')) {
		long long ev = 0;
		int m;

		integer = 0;
		q++;
		if (q < c->end && (*q == '+' || *q == '-'))
			eneg = *q++ == '-';
		if ((q = digits(q, c->end, &m, &ev)), m == 0)
			return 0;
		e = m > 4 ? 99999 : (int)ev;
	}
	/* An integer of more digits, or "-0": as json-c has it, not guessed here. */
	if ((size_t)(q - s) >= sizeof(tmp) || (integer && (n > 15 || (*s == '-' && mant == 0))))
		return 0;
	c->p = q;
	e = (eneg ? -e : e) - frac;
	if (n + frac <= 15 && e >= -22 && e <= 22) {
		*v = e < 0 ? (double)mant / p10[-e] : (double)mant * p10[e];
		if (*s == '-')
			*v = -*v;
		return 1;
	}
	memcpy(tmp, s, (size_t)(q - s));
	tmp[q - s] = '\0';
	*v = strtod(tmp, NULL);
	return isfinite(*v);
}

static int number_or_null(struct sc *c, double *v, int *has)
{
	*has = 0;
	if (word(c, "null"))
		return 1;
	*has = 1;
	return number(c, v);
}

/* s as a C string in buf (MAX_STR), or NULL for null. */
static const char *cstr(const struct str *s, char *buf)
{
	if (s->s == NULL)
		return NULL;
	memcpy(buf, s->s, s->n);
	buf[s->n] = '\0';
	return buf;
}

/*
 * The key of an object's next member, as an index in keys (each once), -1:
 * none of them.  Looked for from the one after the key before: the plugin
 * writes them in order.
 */
static int key(struct sc *c, const char *const *keys, int nkeys, unsigned *seen, int *hint)
{
	struct str k;

	if (!string(c, &k) || !eat(c, ':'))
		return -1;
	for (int j = 0; j < nkeys; j++) {
		int i = (*hint + j) % nkeys;

		if (!strncmp(keys[i], k.s, k.n) && keys[i][k.n] == '\0' && !(*seen & 1u << i)) {
			*seen |= 1u << i;
			*hint = i + 1;
			return i;
		}
	}
	return -1;
}

/* After a member: 1 more follow, 0 the object ended, -1 neither. */
static int next(struct sc *c, char close)
{
	if (eat(c, close))
		return 0;
	return eat(c, ',') ? 1 : -1;
}

/* ------------------------------------------------------------ a GPU's row */
/* A metric's [verdict, best, median, reference, threshold, warn floor]; into m when m. */
static int metric(struct sc *c, struct gpumem_report_metric *m)
{
	double v[5] = { NAN, NAN, NAN, NAN, NAN };
	char buf[MAX_STR];
	struct str verdict = { 0 };
	int i = 0, has;

	if (!eat(c, '['))
		return 0;
	if (!eat(c, ']')) {
		if (!string_or_null(c, &verdict))
			return 0;
		for (i = 0; eat(c, ','); i++)
			if (i == 5 || !number_or_null(c, &v[i], &has))
				return 0;
		if (!eat(c, ']'))
			return 0;
	}
	if (m)
		gpumem_report_set_metric(m, cstr(&verdict, buf), v);
	return 1;
}

static int metrics(struct sc *c, struct gpumem_report_row *r)
{
	unsigned seen = 0;
	int k, more = 1, hint = 0;

	if (!eat(c, '{'))
		return 0;
	if (eat(c, '}'))
		return 1;
	while (more > 0) {
		if ((k = key(c, gpumem_report_metric_names, GPUMEM_REPORT_NMETRICS, &seen, &hint)) < 0 ||
		    !metric(c, r ? &r->m[k] : NULL))
			return 0;
		more = next(c, '}');
	}
	return more == 0;
}

/* The reasons, "; "-joined into *out (when out; NULL: none). */
static int reasons(struct sc *c, char **out)
{
	size_t len = 0;
	struct str s;
	char *j = NULL;
	int more = 1;

	if (!eat(c, '['))
		return 0;
	if (eat(c, ']'))
		return 1;
	while (more > 0) {
		if (!string(c, &s))
			goto bad;
		if (out && s.n) {
			char *nj = realloc(j, len + s.n + 3);

			if (nj == NULL)
				goto bad;
			j = nj;
			if (len)
				memcpy(j + len, "; ", 2), len += 2;
			memcpy(j + len, s.s, s.n);
			len += s.n;
			j[len] = '\0';
		}
		more = next(c, ']');
	}
	if (more < 0)
		goto bad;
	if (out)
		*out = j;
	return 1;
bad:
	free(j);
	return 0;
}

enum { R_INDEX, R_NAME, R_UUID, R_PCI, R_VERDICT, R_REASONS, R_METRICS, NR };
static const char *const row_keys[NR] = {
	"index", "name", "uuid", "pci_bus_id", "verdict", "reasons", "metrics"
};

/*
 * One row object: checked when f is NULL, else built into set (the scan
 * was checked before, so only memory can fail then: -1).
 */
static int row(struct sc *c, int pos, struct gpumem_report_set *set,
	       const struct gpumem_report_file *f)
{
	struct str s[NR] = { { 0 } };
	const char *at_reasons = NULL, *at_metrics = NULL;
	char b[4][MAX_STR], *why = NULL;
	struct gpumem_report_row *r;
	unsigned seen = 0;
	double idx = NAN;
	int k, has = 0, more = 1, hint = 0;

	if (!eat(c, '{'))
		return 0;
	if (eat(c, '}'))
		more = 0;
	while (more > 0) {
		if ((k = key(c, row_keys, NR, &seen, &hint)) < 0)
			return 0;
		ws(c);
		if (k == R_INDEX ? !number_or_null(c, &idx, &has) :
		    k == R_REASONS ? (at_reasons = c->p, !reasons(c, NULL)) :
		    k == R_METRICS ? (at_metrics = c->p, !metrics(c, NULL)) :
		    !string_or_null(c, &s[k]))
			return 0;
		more = next(c, '}');
	}
	if (more < 0 || f == NULL)
		return more == 0;
	if (at_reasons && gpumem_report_vclass_of(cstr(&s[R_VERDICT], b[3])) != GPUMEM_REPORT_V_PASS &&
	    !reasons(&(struct sc){ at_reasons, c->end }, &why))
		return -1;
	r = gpumem_report_gpu_row(set, f, has && idx >= 0 && idx < 4096 ? (int)idx : pos,
				  cstr(&s[R_NAME], b[0]), cstr(&s[R_UUID], b[1]),
				  cstr(&s[R_PCI], b[2]), cstr(&s[R_VERDICT], b[3]), why);
	if (r == NULL)
		return -1;
	if (at_metrics)
		metrics(&(struct sc){ at_metrics, c->end }, r);
	return 1;
}

/* The rows array: checked (set NULL), or built; returns as row() does. */
static int rows(struct sc *c, struct gpumem_report_set *set, const struct gpumem_report_file *f)
{
	int n = 0, more = 1, rc;

	if (!eat(c, '['))
		return 0;
	if (eat(c, ']'))
		return 1;
	while (more > 0) {
		if (n == MAX_ROWS || (rc = row(c, n++, set, f)) <= 0)
			return f ? -1 : 0;
		more = next(c, ']');
	}
	return more == 0;
}

/* ------------------------------------------------------------ the report */
enum { H_SCHEMA, H_JOB, H_STEP, H_NODE, H_USER, H_UID, H_POLICY, H_PHASE, H_TIME, H_GPUS,
       H_STATUS, H_REASON, H_EXIT, H_VERDICT, H_DRAINED, H_ROWS, H_CHECK_REASON, NH };
static const char *const head_keys[NH] = {
	"schema", "job", "step", "node", "user", "uid", "policy", "phase", "time", "gpus",
	"status", "reason", "exit_code", "verdict", "drained", "rows", "check_reason"
};
#define REQUIRED (1u << H_SCHEMA | 1u << H_JOB | 1u << H_NODE | 1u << H_PHASE | 1u << H_TIME | \
		  1u << H_STATUS | 1u << H_VERDICT | 1u << H_ROWS)

struct head {
	struct str s[NH];               /* the string members */
	double job, uid, exit_code, step_num;
	int has_uid, has_exit_code, step_is_num, drained;
	const char *at_rows;
};

/* One member's value into h; 0 when it is not as the plugin writes it. */
static int member(struct sc *c, int k, struct head *h)
{
	switch (k) {
	case H_JOB:
		return number(c, &h->job) && h->job >= 0 && h->job <= 9e15 &&
			h->job == (double)(long long)h->job;
	case H_UID:
		return number_or_null(c, &h->uid, &h->has_uid);
	case H_EXIT:
		return number_or_null(c, &h->exit_code, &h->has_exit_code);
	case H_STEP:
		ws(c);
		if (c->p < c->end && (*c->p == '-' || (*c->p >= '0' && *c->p <= '9')))
			return (h->step_is_num = number(c, &h->step_num));
		return string_or_null(c, &h->s[k]);
	case H_DRAINED:
		h->drained = word(c, "true");
		return h->drained || word(c, "false") || word(c, "null");
	case H_ROWS:
		ws(c);
		h->at_rows = c->p;
		return rows(c, NULL, NULL);
	case H_SCHEMA: case H_NODE: case H_PHASE: case H_TIME: case H_STATUS: case H_VERDICT:
		return string(c, &h->s[k]) && h->s[k].n > 0;
	default:
		return string_or_null(c, &h->s[k]);
	}
}

static int scan(struct sc *c, struct head *h)
{
	unsigned seen = 0;
	int k, hint = 0;

	if (!eat(c, '{'))
		return 0;
	do {
		if ((k = key(c, head_keys, NH, &seen, &hint)) < 0 || !member(c, k, h))
			return 0;
		ws(c);
	} while (c->p < c->end && eat(c, ','));
	/* The head line's last comma stands for the object's closing brace. */
	return c->p == c->end && (seen & REQUIRED) == REQUIRED && h->s[H_SCHEMA].n ==
		strlen(GPUMEM_REPORT_SCHEMA) && !memcmp(h->s[H_SCHEMA].s, GPUMEM_REPORT_SCHEMA,
							 h->s[H_SCHEMA].n);
}

int gpumem_report_scan_head(struct gpumem_report_set *set, const char *name, const char *data,
			    size_t len, struct gpumem_report_file **fp)
{
	const char *nl = memchr(data, '\n', len);
	struct head h = { 0 };
	struct gpumem_report_fields fi = { .name = name };
	struct gpumem_report_file *f;
	char b[10][MAX_STR];
	size_t first = set->nrows;
	struct sc c;
	int rc;

	if (nl == NULL || nl == data || nl[-1] != ',')
		return 1;
	c = (struct sc){ data, nl - 1 };
	if (!scan(&c, &h))
		return 1;
	fi.node = cstr(&h.s[H_NODE], b[0]);
	fi.phase = cstr(&h.s[H_PHASE], b[1]);
	fi.time = cstr(&h.s[H_TIME], b[2]);
	fi.status = cstr(&h.s[H_STATUS], b[3]);
	fi.verdict = cstr(&h.s[H_VERDICT], b[4]);
	fi.user = cstr(&h.s[H_USER], b[5]);
	fi.policy = cstr(&h.s[H_POLICY], b[6]);
	fi.gpus = cstr(&h.s[H_GPUS], b[7]);
	fi.reason = cstr(&h.s[H_REASON], b[8]);
	if (gpumem_report_parse_time(fi.time, &fi.t) < 0)
		return 1;
	if (h.step_is_num) {
		snprintf(fi.stepbuf, sizeof(fi.stepbuf), "%lld", (long long)h.step_num);
		fi.step = fi.stepbuf;
	} else {
		fi.step = h.s[H_STEP].s && h.s[H_STEP].n ? cstr(&h.s[H_STEP], b[9]) : "?";
	}
	fi.job = (long long)h.job;
	fi.has_uid = h.has_uid;
	fi.uid = h.has_uid ? (long long)h.uid : 0;
	fi.has_exit_code = h.has_exit_code;
	fi.exit_code = h.has_exit_code ? (long long)h.exit_code : 0;
	fi.drained = h.drained;
	if ((f = gpumem_report_file_of(&fi)) == NULL)
		return -1;
	c = (struct sc){ h.at_rows, nl - 1 };
	rc = rows(&c, set, f);
	if (rc > 0 && set->nrows == first)
		rc = gpumem_report_nogpu_row(set, f, cstr(&h.s[H_CHECK_REASON], b[0])) < 0 ? -1 : 1;
	if (rc > 0 && gpumem_report_add_file(set, f) == 0) {
		*fp = f;
		return 0;
	}
	while (set->nrows > first)
		gpumem_report_row_free(&set->rows[--set->nrows]);
	gpumem_report_file_free(f);
	return -1;
}
