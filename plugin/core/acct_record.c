/*
 * The accounting record's content (acct.h): built from one node's report
 * files of one job (the newest "before" and "after" report), and checked
 * on the way back.  The record (doc/ADMIN.md, "Accounting"):
 *
 *   {"v":1,"node":"gpu01","job":12,"user":"bob","policy":"stream.yaml",
 *    "eff":{"l2":"25%","mps":50,"daemon":"job","um":"pl=gpu ab=cpu rm pf=gpu stripe=auto"},
 *    "checks":[{"phase":"after","step":"batch","status":"ran","verdict":"pass",
 *               "reason":null,"gpus":[[0,"pass",4300,4100,55,53]]}],
 *    "drained":false}
 *
 * Per GPU: node index, verdict, best read, triad, h2d, d2h in GB/s
 * (rounded; null: not measured), and the first reason when not a pass.
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
#include "policy.h"

#define MAX_GPUS 64
#define REASON_CHARS 60

struct rep {
	char *text;
	struct gpumem_report_jval v;
	const char *time;
};

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
		free(r->text);
		r->text = NULL;
		return -1;
	}
	close(fd);
	r->text[len] = '\0';
	if (gpumem_report_json_parse(r->text, len, &r->v, err, sizeof(err)) < 0 ||
	    r->v.type != GPUMEM_REPORT_JOBJ || !gpumem_report_jstr(&r->v, "time")) {
		fprintf(stderr, "gpumem: acct: %s: skipped: %s\n", name,
			r->v.type == GPUMEM_REPORT_JOBJ ? "no time" : err);
		gpumem_report_json_free(&r->v);
		free(r->text);
		r->text = NULL;
		return -1;
	}
	r->time = gpumem_report_jstr(&r->v, "time");
	return 0;
}

/* Is NAME "job<JOB>.<STEP>.<NODE>.<PHASE>.json"?  The phase index, or -1. */
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
	return -1;
}

static void put_str(FILE *f, const char *key, const char *s)
{
	fprintf(f, ",\"%s\":", key);
	gpumem_report_json_str(f, s);
}

static void put_gbps(FILE *f, const struct gpumem_report_jval *metrics, const char *name)
{
	double v;

	if (gpumem_report_jnum(gpumem_report_jget(metrics, name), "best_gbps", &v) == 0 &&
	    isfinite(v) && v >= 0 && v < 1e7)
		fprintf(f, ",%.0f", v);
	else
		fputs(",null", f);
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

static void put_reason(FILE *f, const char *s)
{
	char buf[REASON_CHARS * 4 + 1];
	size_t n = 0;

	/* Cut at a character boundary. */
	for (size_t chars = 0; s[n] && chars < REASON_CHARS; chars++) {
		n++;
		while (((unsigned char)s[n] & 0xc0) == 0x80)
			n++;
	}
	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	gpumem_report_json_str(f, buf);
}

static void put_gpus(FILE *f, const struct rep *r)
{
	const struct gpumem_report_jval *devs =
		gpumem_report_jget(gpumem_report_jget(&r->v, "check"), "devices");
	const char *gpus = gpumem_report_jstr(&r->v, "gpus");

	fputs(",\"gpus\":[", f);
	for (size_t i = 0; devs && devs->type == GPUMEM_REPORT_JARR && i < devs->n && i < MAX_GPUS;
	     i++) {
		const struct gpumem_report_jval *d = &devs->items[i];
		const struct gpumem_report_jval *m = gpumem_report_jget(d, "metrics");
		const struct gpumem_report_jval *why = gpumem_report_jget(d, "reasons");
		const char *verdict = gpumem_report_jstr(d, "verdict");
		double idx;

		if (gpumem_report_jnum(d, "index", &idx) < 0 || idx < 0 || idx > 4096)
			idx = (double)i;
		fprintf(f, "%s[%ld,", i ? "," : "", node_index(gpus, (long)idx));
		gpumem_report_json_str(f, verdict ? verdict : "error");
		put_gbps(f, m, "read");
		put_gbps(f, m, "triad");
		put_gbps(f, m, "h2d");
		put_gbps(f, m, "d2h");
		if (verdict && strcmp(verdict, "pass") != 0 && why && why->type == GPUMEM_REPORT_JARR &&
		    why->n > 0 && why->items[0].type == GPUMEM_REPORT_JSTR) {
			fputc(',', f);
			put_reason(f, why->items[0].str);
		}
		fputc(']', f);
	}
	fputc(']', f);
}

static void put_check(FILE *f, const struct rep *r, int first)
{
	const char *reason = gpumem_report_jstr(&r->v, "reason");

	fprintf(f, "%s{\"phase\":", first ? "" : ",");
	gpumem_report_json_str(f, gpumem_report_jstr(&r->v, "phase"));
	put_str(f, "step", gpumem_report_jstr(&r->v, "step"));
	put_str(f, "status", gpumem_report_jstr(&r->v, "status"));
	put_str(f, "verdict", gpumem_report_jstr(&r->v, "verdict"));
	fputs(",\"reason\":", f);
	if (reason)
		put_reason(f, reason);
	else
		fputs("null", f);
	put_gpus(f, r);
	fputc('}', f);
}

static const char *or_auto(const char *s)
{
	return s ? s : "auto";
}

/* "pl=gpu ab=cpu,gpu rm pf=gpu stripe=0.5", or "none". */
static void um_text(const struct gpumem_report_jval *um, char *buf, size_t len)
{
	const char *pl = gpumem_report_jstr(um, "preferred_location");
	const char *pf = gpumem_report_jstr(um, "prefetch");
	const char *place = gpumem_report_jstr(um, "placement");
	const struct gpumem_report_jval *ab = gpumem_report_jget(um, "accessed_by");
	const struct gpumem_report_jval *rm = gpumem_report_jget(um, "read_mostly");
	size_t n = 0;

	buf[0] = '\0';
	if (pl && strcmp(pl, "none") != 0)
		n += (size_t)snprintf(buf + n, len - n, "pl=%.8s ", pl);
	for (size_t i = 0; ab && ab->type == GPUMEM_REPORT_JARR && i < ab->n && i < 2 && n < len;
	     i++)
		if (ab->items[i].type == GPUMEM_REPORT_JSTR)
			n += (size_t)snprintf(buf + n, len - n, "%s%.8s%s", i ? "" : "ab=",
					      ab->items[i].str, i + 1 < ab->n && i < 1 ? "," : " ");
	if (rm && rm->type == GPUMEM_REPORT_JBOOL && rm->boolean && n < len)
		n += (size_t)snprintf(buf + n, len - n, "rm ");
	if (pf && strcmp(pf, "none") != 0 && n < len)
		n += (size_t)snprintf(buf + n, len - n, "pf=%.8s ", pf);
	if (place && strcmp(place, "none") != 0 && n < len) {
		double gf;

		if (gpumem_report_jnum(um, "gpu_fraction", &gf) == 0)
			n += (size_t)snprintf(buf + n, len - n, "%.8s=%.2g ", place, gf);
		else
			n += (size_t)snprintf(buf + n, len - n, "%.8s=%.8s ", place,
					      or_auto(gpumem_report_jstr(um, "gpu_fraction")));
	}
	if (n == 0)
		snprintf(buf, len, "none");
	else if (n <= len)
		buf[n - 1] = '\0';
}

static void put_effective(FILE *f, const struct gpumem_report_jval *eff)
{
	const struct gpumem_report_jval *l2 = gpumem_report_jget(eff, "l2");
	const struct gpumem_report_jval *mps = gpumem_report_jget(eff, "mps");
	char um[80];
	double pct;

	if (eff == NULL || eff->type != GPUMEM_REPORT_JOBJ) {
		fputs(",\"eff\":null", f);
		return;
	}
	fputs(",\"eff\":{\"l2\":", f);
	gpumem_report_json_str(f, gpumem_report_jstr(l2, "persisting_limit"));
	if (gpumem_report_jnum(mps, "active_thread_percentage", &pct) == 0)
		fprintf(f, ",\"mps\":%.0f", pct);
	else
		fputs(",\"mps\":null", f);
	put_str(f, "daemon", gpumem_report_jstr(mps, "daemon"));
	um_text(gpumem_report_jget(eff, "unified_memory"), um, sizeof(um));
	put_str(f, "um", um);
	fputc('}', f);
}

static char *record_json(long long job, const char *node, struct rep *r[2])
{
	const struct rep *any = r[1] ? r[1] : r[0];
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int drained = 0, first = 1;

	if (f == NULL)
		return NULL;
	fprintf(f, "{\"v\":%d", GPUMEM_ACCT_VERSION);
	put_str(f, "node", node);
	fprintf(f, ",\"job\":%lld", job);
	put_str(f, "user", gpumem_report_jstr(&any->v, "user"));
	put_str(f, "policy", gpumem_report_jstr(&any->v, "policy"));
	put_effective(f, gpumem_report_jget(&any->v, "effective"));
	fputs(",\"checks\":[", f);
	for (int i = 0; i < 2; i++) {
		const struct gpumem_report_jval *d;

		if (r[i] == NULL)
			continue;
		put_check(f, r[i], first);
		first = 0;
		d = gpumem_report_jget(&r[i]->v, "drained");
		drained |= d && d->type == GPUMEM_REPORT_JBOOL && d->boolean;
	}
	fprintf(f, "],\"drained\":%s}", drained ? "true" : "false");
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

char *gpumem_acct_build(const char *dir, long long job, const char *node, int *nreports,
			char *err, size_t errlen)
{
	struct rep reps[2] = { 0 }, *best[2] = { NULL, NULL };
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

		if (ph < 0 || load_report(dirfd(d), e->d_name, &r) < 0)
			continue;
		(*nreports)++;
		if (best[ph] && strcmp(best[ph]->time, r.time) >= 0) {
			gpumem_report_json_free(&r.v);
			free(r.text);
			continue;
		}
		if (best[ph]) {
			gpumem_report_json_free(&best[ph]->v);
			free(best[ph]->text);
		}
		reps[ph] = r;
		best[ph] = &reps[ph];
	}
	closedir(d);
	if (*nreports == 0)
		return NULL;
	json = record_json(job, node, best);
	if (json == NULL)
		snprintf(err, errlen, "out of memory");
	for (int i = 0; i < 2; i++) {
		if (best[i]) {
			gpumem_report_json_free(&best[i]->v);
			free(best[i]->text);
		}
	}
	return json;
}

/* ------------------------------------------------------------ reading back */
static int is_str(const struct gpumem_report_jval *v, int nullable, size_t max)
{
	if (v && v->type == GPUMEM_REPORT_JSTR)
		return strlen(v->str) <= max;
	return nullable && (v == NULL || v->type == GPUMEM_REPORT_JNULL);
}

static int is_num_or_null(const struct gpumem_report_jval *v)
{
	return v && (v->type == GPUMEM_REPORT_JNUM || v->type == GPUMEM_REPORT_JNULL);
}

static int check_gpu(const struct gpumem_report_jval *g)
{
	if (g->type != GPUMEM_REPORT_JARR || g->n < 6 || g->n > 7 ||
	    g->items[0].type != GPUMEM_REPORT_JNUM || !is_str(&g->items[1], 0, 32))
		return -1;
	for (size_t k = 2; k < 6; k++)
		if (!is_num_or_null(&g->items[k]))
			return -1;
	return g->n == 7 && !is_str(&g->items[6], 0, REASON_CHARS * 4) ? -1 : 0;
}

static int check_one(const struct gpumem_report_jval *c, char *err, size_t errlen, size_t i)
{
	const struct gpumem_report_jval *gpus = gpumem_report_jget(c, "gpus");

	if (c->type != GPUMEM_REPORT_JOBJ || !is_str(gpumem_report_jget(c, "phase"), 0, 16) ||
	    !is_str(gpumem_report_jget(c, "verdict"), 0, 32) ||
	    !is_str(gpumem_report_jget(c, "status"), 1, 32) ||
	    !is_str(gpumem_report_jget(c, "step"), 1, 32) ||
	    !is_str(gpumem_report_jget(c, "reason"), 1, REASON_CHARS * 4) ||
	    !gpus || gpus->type != GPUMEM_REPORT_JARR || gpus->n > MAX_GPUS) {
		snprintf(err, errlen, "checks[%zu]: wrong fields", i);
		return -1;
	}
	for (size_t k = 0; k < gpus->n; k++) {
		if (check_gpu(&gpus->items[k]) < 0) {
			snprintf(err, errlen, "checks[%zu].gpus[%zu]: not [index, verdict, read, "
				 "triad, h2d, d2h(, reason)]", i, k);
			return -1;
		}
	}
	return 0;
}

int gpumem_acct_check(const struct gpumem_report_jval *v, char *err, size_t errlen)
{
	const struct gpumem_report_jval *checks = gpumem_report_jget(v, "checks");
	const struct gpumem_report_jval *eff = gpumem_report_jget(v, "eff");
	const struct gpumem_report_jval *dr = gpumem_report_jget(v, "drained");
	double ver;

	if (v->type != GPUMEM_REPORT_JOBJ || gpumem_report_jnum(v, "v", &ver) < 0) {
		snprintf(err, errlen, "no version");
		return -1;
	}
	if (ver != GPUMEM_ACCT_VERSION) {
		snprintf(err, errlen, "version %g, this gpumem reads %d", ver, GPUMEM_ACCT_VERSION);
		return -1;
	}
	if (!is_str(gpumem_report_jget(v, "node"), 0, 64) || !gpumem_report_jstr(v, "node")[0] ||
	    !gpumem_report_jget(v, "job") || gpumem_report_jget(v, "job")->type != GPUMEM_REPORT_JNUM ||
	    !is_str(gpumem_report_jget(v, "user"), 1, 64) ||
	    !is_str(gpumem_report_jget(v, "policy"), 1, 256) ||
	    !dr || dr->type != GPUMEM_REPORT_JBOOL) {
		snprintf(err, errlen, "node, job, user, policy or drained missing or wrong");
		return -1;
	}
	if (eff && eff->type != GPUMEM_REPORT_JNULL &&
	    (eff->type != GPUMEM_REPORT_JOBJ || !is_str(gpumem_report_jget(eff, "l2"), 1, 32) ||
	     !is_num_or_null(gpumem_report_jget(eff, "mps")) ||
	     !is_str(gpumem_report_jget(eff, "daemon"), 1, 16) ||
	     !is_str(gpumem_report_jget(eff, "um"), 1, 80))) {
		snprintf(err, errlen, "eff: wrong fields");
		return -1;
	}
	if (!checks || checks->type != GPUMEM_REPORT_JARR || checks->n > 2) {
		snprintf(err, errlen, "checks: not an array of at most 2");
		return -1;
	}
	for (size_t i = 0; i < checks->n; i++)
		if (check_one(&checks->items[i], err, errlen, i) < 0)
			return -1;
	return 0;
}
