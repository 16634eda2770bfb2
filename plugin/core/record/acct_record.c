/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The accounting record's content (acct.h): built from one node's report
 * files of one job (the newest "before" and "after" report, and the newest
 * report with a GPU memory profile: "after", or "job" where no after-check
 * ran), and checked on the way back.  The record (doc/admin/reports.md, "Accounting"):
 *
 *   {"v":2,"node":"gpu01","job":12,"user":"bob","policy":"stream.yaml",
 *    "eff":{"l2":"25%","mps":50,"daemon":"job","um":"pl=gpu ab=cpu rm pf=gpu stripe=auto"},
 *    "checks":[{"phase":"after","step":"batch","status":"ran","verdict":"pass",
 *               "reason":null,"ev":"measured: ...","gpus":[[0,"pass",4300,4100,55,53]]}],
 *    "drained":false,
 *    "prof":{"st":"ran","why":null,"s":12,"src":"gpm","g":[{"gpu":0,"n":12,...}]},
 *    "adv":{"job":1240,"rule":"faulting","policy":"zerocopy.yaml","standing":"new"}}
 *
 * Per GPU: node index, verdict, best read, triad, h2d, d2h in GB/s
 * (rounded; null: not measured), and the first reason when not a pass.
 * "jb" (absent in older records, and where no figure says): what the
 * first GPU's read, triad, h2d and d2h were judged against, cut to 100
 * characters ("site reference", "read 0.85, triad 0.82 of this GPU's peak").
 * "ev" (absent in older records): what the check rests on, the report's
 * evidence.text cut to 100 characters ("reused: bandwidth measured 12 min
 * ago after job 4411, NVML health unchanged since", or "measured: why").
 * "prof" is the profile's compact summary (profile.h), absent when no
 * report of the job on the node has a "profile"; a "job" report is no
 * check and never in "checks".  "adv" (version 2, only for a job that ran
 * --gpumem-policy=advised): the advised source's fields (advsrc.h).
 * Version 1 records (positional profile rows, no "adv") are still read.
 * Reports are read and the record is built and written with the JSON
 * module (json.h, libjson-c), compact style.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "acct.h"
#include "advsrc.h"
#include "core_policy.h"
#include "profile.h"

#define MAX_GPUS 64
#define REASON_CHARS 60
/* A check's evidence (the report's evidence.text: "reused: bandwidth measured ..."), cut. */
#define EVIDENCE_CHARS 100
#define BASIS_CHARS 100
/* The phases of a report's name, as indexes: before, after, job (no check ran). */
#define NPHASES 3
/* A set-aside's cost (triad with / without it): a check's figure, bounded for the reader. */
#define SA_RATIO_MAX 10

struct rep {
	char *text;
	struct json_object *v;
	const char *time;
};

static void rep_free(struct rep *r)
{
	json_object_put(r->v);
	free(r->text);
	r->v = NULL;
	r->text = NULL;
}

static int load_report(int dfd, const char *name, struct rep *r)
{
	struct stat st;
	size_t len = 0;
	char err[256];
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > GPUMEM_REPORT_MAX_FILE_BYTES ||
	    (r->text = malloc((size_t)st.st_size + 2)) == NULL) {
		close(fd);
		return -1;
	}
	if (gpumem_read_fd(fd, r->text, (size_t)st.st_size + 1, &len) < 0 ||
	    len > GPUMEM_REPORT_MAX_FILE_BYTES) {
		close(fd);
		rep_free(r);
		return -1;
	}
	close(fd);
	r->text[len] = '\0';
	if (gpumem_json_parse_report(r->text, len, &r->v, err, sizeof(err)) < 0 ||
	    !gpumem_json_is(r->v, json_type_object) || !gpumem_json_str(r->v, "time")) {
		fprintf(stderr, "gpumem: acct: %s: skipped: %s\n", name,
			gpumem_json_is(r->v, json_type_object) ? "no time" :
			err[0] ? err : "not an object");
		rep_free(r);
		return -1;
	}
	r->time = gpumem_json_str(r->v, "time");
	return 0;
}

/* Is NAME "job<JOB>.<STEP>.<NODE>.<PHASE>.json"?  The phase index (0 before,
 * 1 after, 2 job), or -1. */
static int match_name(const char *name, long long job, const char *node)
{
	char pre[48];
	size_t pl, nl = strlen(node), len = strlen(name);
	const char *rest, *dot;

	pl = (size_t)snprintf(pre, sizeof(pre), "job%lld.", job);
	if (strncmp(name, pre, pl) != 0 || len < 5 || strcmp(name + len - 5, ".json") != 0)
		return -1;
	rest = name + pl;
	dot = strchr(rest, '.');
	if (dot == NULL || strncmp(dot + 1, node, nl) != 0 || dot[1 + nl] != '.')
		return -1;
	rest = dot + 2 + nl;
	if (strcmp(rest, "before.json") == 0)
		return 0;
	if (strcmp(rest, "after.json") == 0)
		return 1;
	if (strcmp(rest, "job.json") == 0)
		return 2;
	return -1;
}

/* Add V to array ARR (V may be NULL: null); json-c takes it. */
static void push(struct json_object *arr, struct json_object *v)
{
	if (json_object_array_add(arr, v) < 0)
		json_object_put(v);
}

/* A metric's best figure in GB/s, rounded, or null. */
static struct json_object *gbps(struct json_object *metrics, const char *name)
{
	double v;

	if (gpumem_json_num(gpumem_json_get(metrics, name), "best_gbps", &v) == 0 &&
	    isfinite(v) && v >= 0 && v < 1e7)
		return gpumem_json_fmt(v, "%.0f");
	return NULL;
}

/* The node's index of the CUDA ordinal I, from the report's "gpus" ("0,3"). */
static long node_index(const char *gpus, long i)
{
	const char *p = gpus;

	for (long k = 0; p && *p; k++) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (k == i)
			return v;
		p = *end == ',' ? end + 1 : NULL;
	}
	return i;
}


/*
 * The report's own row of its check's device D (number I), where the row is
 * D's (the same UUID), else D: its verdict is the hooks' (a GPU that fell
 * below its own history warns there, not in the check's document, with
 * the reason the check's passing device did not have).
 */
static struct json_object *own_row(const struct rep *r, struct json_object *d, size_t i)
{
	struct json_object *row = gpumem_json_at(gpumem_json_get(r->v, "rows"), i);
	const char *ru = gpumem_json_str(row, "uuid"), *du = gpumem_json_str(d, "uuid");

	return ru && du && !strcmp(ru, du) ? row : d;
}

/* [index, verdict, read, triad, h2d, d2h(, reason)] for device I of report R. */
static struct json_object *gpu_row(const struct rep *r, struct json_object *d, size_t i)
{
	struct json_object *m = gpumem_json_get(d, "metrics"), *own = own_row(r, d, i);
	struct json_object *why = gpumem_json_at(gpumem_json_get(d, "reasons"), 0);
	struct json_object *g = json_object_new_array();
	const char *verdict = gpumem_json_str(own, "verdict");
	double idx;

	if (g == NULL)
		return NULL;
	if (gpumem_json_num(d, "index", &idx) < 0 || idx < 0 || idx > 4096)
		idx = (double)i;
	if (!gpumem_json_is(why, json_type_string))
		why = gpumem_json_at(gpumem_json_get(own, "reasons"), 0);
	push(g, gpumem_json_int(node_index(gpumem_json_str(r->v, "gpus"), (long)idx)));
	push(g, gpumem_json_string(verdict ? verdict : "error"));
	push(g, gbps(m, "read"));
	push(g, gbps(m, "triad"));
	push(g, gbps(m, "h2d"));
	push(g, gbps(m, "d2h"));
	if (verdict && strcmp(verdict, "pass") != 0 && gpumem_json_is(why, json_type_string))
		push(g, gpumem_json_string_cut(json_object_get_string(why), REASON_CHARS));
	return g;
}

/*
 * The L2 set-aside's own cost the check measured (its devices'
 * l2_ab.setaside): [percent of L2, triad with / without] of the device
 * where it cost the most, or NULL when none measured it.
 */
static struct json_object *setaside_of(struct json_object *devs)
{
	struct json_object *a;
	double pct = 0, worst = -1, p, q;

	for (size_t i = 0; i < gpumem_json_len(devs); i++) {
		struct json_object *sa = gpumem_json_get(gpumem_json_get(gpumem_json_at(devs, i),
									  "l2_ab"), "setaside");

		if (gpumem_json_num(sa, "ratio", &q) == 0 && gpumem_json_num(sa, "percent", &p) == 0 &&
		    q >= 0 && q <= SA_RATIO_MAX && p > 0 && p <= 100 && (worst < 0 || q < worst)) {
			worst = q;
			pct = p;
		}
	}
	if (worst < 0 || (a = json_object_new_array()) == NULL)
		return NULL;
	push(a, gpumem_json_fmt(pct, "%.0f"));
	push(a, gpumem_json_fmt(worst, "%.2f"));
	return a;
}

static struct json_object *check_of(const struct rep *r)
{
	struct json_object *devs = gpumem_json_get(gpumem_json_get(r->v, "check"), "devices");
	struct json_object *c = json_object_new_object(), *gpus = json_object_new_array(), *sa;
	static const char *const judged[] = { "read", "triad", "h2d", "d2h" };
	const char *ev;
	char basis[400];

	if (c == NULL || gpus == NULL) {
		json_object_put(c);
		json_object_put(gpus);
		return NULL;
	}
	gpumem_json_add(c, "phase", gpumem_json_string(gpumem_json_str(r->v, "phase")));
	gpumem_json_add(c, "step", gpumem_json_string(gpumem_json_str(r->v, "step")));
	gpumem_json_add(c, "status", gpumem_json_string(gpumem_json_str(r->v, "status")));
	gpumem_json_add(c, "verdict", gpumem_json_string(gpumem_json_str(r->v, "verdict")));
	gpumem_json_add(c, "reason", gpumem_json_string_cut(gpumem_json_str(r->v, "reason"),
							    REASON_CHARS));
	ev = gpumem_json_str(gpumem_json_get(r->v, "evidence"), "text");
	if (ev)
		gpumem_json_add(c, "ev", gpumem_json_string_cut(ev, EVIDENCE_CHARS));
	/* What its first GPU's figures were judged against (report.h). */
	gpumem_report_basis(gpumem_json_at(devs, 0), judged, 4, basis, sizeof(basis));
	if (basis[0])
		gpumem_json_add(c, "jb", gpumem_json_string_cut(basis, BASIS_CHARS));
	for (size_t i = 0; i < gpumem_json_len(devs) && i < MAX_GPUS; i++)
		push(gpus, gpu_row(r, gpumem_json_at(devs, i), i));
	gpumem_json_add(c, "gpus", gpus);
	sa = setaside_of(devs);
	if (sa)
		gpumem_json_add(c, "sa", sa);
	return c;
}

static const char *or_auto(const char *s)
{
	return s ? s : "auto";
}

/* "pl=gpu ab=cpu,gpu rm pf=gpu stripe=0.5", or "none". */
static void um_text(struct json_object *um, char *buf, size_t len)
{
	const char *pl = gpumem_json_str(um, "preferred_location");
	const char *pf = gpumem_json_str(um, "prefetch");
	const char *place = gpumem_json_str(um, "placement");
	struct json_object *ab = gpumem_json_get(um, "accessed_by");
	struct json_object *rm = gpumem_json_get(um, "read_mostly");
	size_t n = 0, nab = gpumem_json_len(ab);

	buf[0] = '\0';
	if (pl && strcmp(pl, "none") != 0)
		n += (size_t)snprintf(buf + n, len - n, "pl=%.8s ", pl);
	for (size_t i = 0; i < nab && i < 2 && n < len; i++) {
		struct json_object *a = gpumem_json_at(ab, i);

		if (gpumem_json_is(a, json_type_string))
			n += (size_t)snprintf(buf + n, len - n, "%s%.8s%s", i ? "" : "ab=",
					      json_object_get_string(a),
					      i + 1 < nab && i < 1 ? "," : " ");
	}
	if (gpumem_json_is(rm, json_type_boolean) && json_object_get_boolean(rm) && n < len)
		n += (size_t)snprintf(buf + n, len - n, "rm ");
	if (pf && strcmp(pf, "none") != 0 && n < len)
		n += (size_t)snprintf(buf + n, len - n, "pf=%.8s ", pf);
	if (place && strcmp(place, "none") != 0 && n < len) {
		double gf;

		if (gpumem_json_num(um, "gpu_fraction", &gf) == 0)
			n += (size_t)snprintf(buf + n, len - n, "%.8s=%.2g ", place, gf);
		else
			n += (size_t)snprintf(buf + n, len - n, "%.8s=%.8s ", place,
					      or_auto(gpumem_json_str(um, "gpu_fraction")));
	}
	if (n == 0)
		snprintf(buf, len, "none");
	else if (n <= len)
		buf[n - 1] = '\0';
}

/* The effective policy in short, or null when the report has none (acct.h). */
struct json_object *gpumem_acct_effective(struct json_object *eff)
{
	struct json_object *l2 = gpumem_json_get(eff, "l2"), *mps = gpumem_json_get(eff, "mps");
	struct json_object *o;
	char um[80];
	double pct;

	if (!gpumem_json_is(eff, json_type_object) || (o = json_object_new_object()) == NULL)
		return NULL;
	gpumem_json_add(o, "l2", gpumem_json_string(gpumem_json_str(l2, "persisting_limit")));
	gpumem_json_add(o, "mps", gpumem_json_num(mps, "active_thread_percentage", &pct) == 0 ?
			gpumem_json_fmt(pct, "%.0f") : NULL);
	gpumem_json_add(o, "daemon", gpumem_json_string(gpumem_json_str(mps, "daemon")));
	um_text(gpumem_json_get(eff, "unified_memory"), um, sizeof(um));
	gpumem_json_add(o, "um", gpumem_json_string(um));
	return o;
}

/* The newest profile of the job on the node: its report's time and the "profile" member. */
struct prof {
	char time[64];
	struct json_object *doc;        /* a reference of its own, or NULL */
};

static char *record_json(long long job, const char *node, struct rep *r[NPHASES],
			 const struct prof *prof)
{
	const struct rep *any = r[1] ? r[1] : r[2] ? r[2] : r[0];
	struct json_object *o = json_object_new_object(), *checks = json_object_new_array();
	char *text = NULL;
	int drained = 0;

	if (o == NULL || checks == NULL) {
		json_object_put(o);
		json_object_put(checks);
		return NULL;
	}
	gpumem_json_add(o, "v", gpumem_json_int(GPUMEM_ACCT_VERSION));
	gpumem_json_add(o, "node", gpumem_json_string(node));
	gpumem_json_add(o, "job", gpumem_json_int(job));
	gpumem_json_add(o, "user", gpumem_json_string(gpumem_json_str(any->v, "user")));
	gpumem_json_add(o, "policy", gpumem_json_string(gpumem_json_str(any->v, "policy")));
	gpumem_json_add(o, "eff", gpumem_acct_effective(gpumem_json_get(any->v, "effective")));
	for (int i = 0; i < NPHASES; i++) {
		struct json_object *d;

		if (r[i] == NULL)
			continue;
		if (i < 2)      /* a "job" report is no check */
			push(checks, check_of(r[i]));
		d = gpumem_json_get(r[i]->v, "drained");
		drained |= gpumem_json_is(d, json_type_boolean) && json_object_get_boolean(d);
	}
	gpumem_json_add(o, "checks", checks);
	gpumem_json_add(o, "drained", gpumem_json_bool(drained));
	if (prof->doc) {
		struct json_object *p = gpumem_profile_compact(prof->doc);

		if (p == NULL) {
			json_object_put(o);
			return NULL;
		}
		gpumem_json_add(o, "prof", p);
	}
	text = gpumem_json_dump(o, GPUMEM_JSON_COMPACT);
	json_object_put(o);
	if (text)
		text[strcspn(text, "\n")] = '\0';       /* one line, no newline */
	return text;
}

char *gpumem_acct_build(const char *dir, long long job, const char *node, int *nreports,
			char *err, size_t errlen)
{
	struct rep reps[NPHASES] = { 0 }, *best[NPHASES] = { NULL, NULL, NULL };
	struct prof prof = { "", NULL };
	char *json = NULL;
	struct dirent *e;
	DIR *d = opendir(dir);

	*nreports = 0;
	if (d == NULL) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return NULL;
	}
	while ((e = readdir(d)) != NULL) {
		int ph = match_name(e->d_name, job, node);
		struct rep r = { 0 };
		struct json_object *p;

		if (ph < 0 || load_report(dirfd(d), e->d_name, &r) < 0)
			continue;
		(*nreports)++;
		p = gpumem_json_get(r.v, "profile");
		if (p && ph > 0 && (prof.doc == NULL || strcmp(prof.time, r.time) < 0)) {
			json_object_put(prof.doc);
			prof.doc = json_object_get(p);         /* outlives its report */
			snprintf(prof.time, sizeof(prof.time), "%s", r.time);
		}
		if (best[ph] && strcmp(best[ph]->time, r.time) >= 0) {
			rep_free(&r);
			continue;
		}
		if (best[ph])
			rep_free(best[ph]);
		reps[ph] = r;
		best[ph] = &reps[ph];
	}
	closedir(d);
	if (*nreports == 0)
		return NULL;
	json = record_json(job, node, best, &prof);
	if (json == NULL)
		snprintf(err, errlen, "out of memory");
	for (int i = 0; i < NPHASES; i++)
		if (best[i])
			rep_free(best[i]);
	json_object_put(prof.doc);
	return json;
}

/* ------------------------------------------------------------ reading back */
/* A string of at most MAX bytes, or (NULLABLE) null or absent. */
static int is_str(struct json_object *v, int nullable, size_t max)
{
	if (gpumem_json_is(v, json_type_string))
		return strlen(json_object_get_string(v)) <= max;
	return nullable && v == NULL;
}

static int is_num(struct json_object *v)
{
	return gpumem_json_is(v, json_type_int) || gpumem_json_is(v, json_type_double);
}

static int is_num_or_null(struct json_object *v)
{
	return v == NULL || is_num(v);
}

static int check_gpu(struct json_object *g)
{
	size_t n = gpumem_json_len(g);

	if (!gpumem_json_is(g, json_type_array) || n < 6 || n > 7 ||
	    !is_num(gpumem_json_at(g, 0)) || !is_str(gpumem_json_at(g, 1), 0, 32))
		return -1;
	for (size_t k = 2; k < 6; k++)
		if (!is_num_or_null(gpumem_json_at(g, k)))
			return -1;
	return n == 7 && !is_str(gpumem_json_at(g, 6), 0, REASON_CHARS * 4) ? -1 : 0;
}

/* "sa", where present: [percent 0..100, ratio 0..SA_RATIO_MAX]. */
static int check_sa(struct json_object *sa)
{
	double p, q;

	if (sa == NULL)
		return 0;
	if (!gpumem_json_is(sa, json_type_array) || gpumem_json_len(sa) != 2 ||
	    !is_num(gpumem_json_at(sa, 0)) || !is_num(gpumem_json_at(sa, 1)))
		return -1;
	p = json_object_get_double(gpumem_json_at(sa, 0));
	q = json_object_get_double(gpumem_json_at(sa, 1));
	return p >= 0 && p <= 100 && q >= 0 && q <= SA_RATIO_MAX ? 0 : -1;
}

static int check_one(struct json_object *c, char *err, size_t errlen, size_t i)
{
	struct json_object *gpus = gpumem_json_get(c, "gpus");

	if (!gpumem_json_is(c, json_type_object) || !is_str(gpumem_json_get(c, "phase"), 0, 16) ||
	    !is_str(gpumem_json_get(c, "verdict"), 0, 32) ||
	    !is_str(gpumem_json_get(c, "status"), 1, 32) ||
	    !is_str(gpumem_json_get(c, "step"), 1, 32) ||
	    !is_str(gpumem_json_get(c, "reason"), 1, REASON_CHARS * 4) ||
	    !is_str(gpumem_json_get(c, "ev"), 1, EVIDENCE_CHARS * 4) ||
	    !is_str(gpumem_json_get(c, "jb"), 1, BASIS_CHARS * 4) ||
	    !gpumem_json_is(gpus, json_type_array) || gpumem_json_len(gpus) > MAX_GPUS ||
	    check_sa(gpumem_json_get(c, "sa")) < 0) {
		snprintf(err, errlen, "checks[%zu]: wrong fields", i);
		return -1;
	}
	for (size_t k = 0; k < gpumem_json_len(gpus); k++) {
		if (check_gpu(gpumem_json_at(gpus, k)) < 0) {
			snprintf(err, errlen, "checks[%zu].gpus[%zu]: not [index, verdict, read, "
				 "triad, h2d, d2h(, reason)]", i, k);
			return -1;
		}
	}
	return 0;
}

static int check_eff(struct json_object *eff)
{
	return eff == NULL ||
		(gpumem_json_is(eff, json_type_object) && is_str(gpumem_json_get(eff, "l2"), 1, 32) &&
		 is_num_or_null(gpumem_json_get(eff, "mps")) &&
		 is_str(gpumem_json_get(eff, "daemon"), 1, 16) &&
		 is_str(gpumem_json_get(eff, "um"), 1, 80));
}

int gpumem_acct_check(struct json_object *v, char *err, size_t errlen)
{
	struct json_object *checks = gpumem_json_get(v, "checks");
	const char *node = gpumem_json_str(v, "node");
	struct gpumem_advsrc adv;
	double ver;

	if (gpumem_json_num(v, "v", &ver) < 0) {
		snprintf(err, errlen, "no version");
		return -1;
	}
	if (ver != 1 && ver != GPUMEM_ACCT_VERSION) {
		snprintf(err, errlen, "version %g, this gpumem reads 1 to %d", ver,
			 GPUMEM_ACCT_VERSION);
		return -1;
	}
	if (!is_str(gpumem_json_get(v, "node"), 0, 64) || !node[0] ||
	    !is_num(gpumem_json_get(v, "job")) || !is_str(gpumem_json_get(v, "user"), 1, 64) ||
	    !is_str(gpumem_json_get(v, "policy"), 1, 256) ||
	    !gpumem_json_is(gpumem_json_get(v, "drained"), json_type_boolean)) {
		snprintf(err, errlen, "node, job, user, policy or drained missing or wrong");
		return -1;
	}
	if (!check_eff(gpumem_json_get(v, "eff"))) {
		snprintf(err, errlen, "eff: wrong fields");
		return -1;
	}
	if (!gpumem_json_is(checks, json_type_array) || gpumem_json_len(checks) > 2) {
		snprintf(err, errlen, "checks: not an array of at most 2");
		return -1;
	}
	for (size_t i = 0; i < gpumem_json_len(checks); i++)
		if (check_one(gpumem_json_at(checks, i), err, errlen, i) < 0)
			return -1;
	if (json_object_object_get_ex(v, "prof", NULL) &&
	    gpumem_profile_compact_check(gpumem_json_get(v, "prof"), err, errlen) < 0)
		return -1;
	if (json_object_object_get_ex(v, "adv", NULL) &&
	    (ver < 2 || gpumem_advsrc_from_object(gpumem_json_get(v, "adv"), &adv, err,
						  errlen) < 0)) {
		if (ver < 2)
			snprintf(err, errlen, "adv: not in a version 1 record");
		return -1;
	}
	return 0;
}
