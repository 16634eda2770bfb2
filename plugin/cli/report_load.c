/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A directory of gpumem-report/1 files into rows, one per (report, GPU).
 * The directory is shared by every node and written while we read it, so
 * nothing in it is trusted: each file is opened without following links or
 * blocking, size-capped, parsed strictly, and any problem costs that file
 * one warning line, never the listing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core_policy.h"
#include "core_base.h"
#include "report_cli.h"

/* Where this thread's warnings go (report_dir.c gives each reader its own). */
static __thread FILE *warn_out;

void gpumem_report_warn_to(FILE *f)
{
	warn_out = f;
}

/*
 * One line per bad file, always ending "skipped": the listing goes on.
 * File names and the text quoted from a file are the writer's, not ours:
 * control characters (C0, C1, bidi) become '?' (gpumem_term_clean) so a
 * hostile one cannot drive the terminal.
 */
__attribute__((format(printf, 3, 4)))
static void warn_file(const char *dir, const char *name, const char *fmt, ...)
{
	char line[1024], clean[1024];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "gpumem: report: %s/%s: ", dir, name);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	gpumem_term_clean(line, clean, sizeof(clean), sizeof(clean));
	fprintf(warn_out ? warn_out : stderr, "%s: skipped\n", clean);
}

#define WARN(dir, name, ...) warn_file(dir, name, __VA_ARGS__)

/*
 * Read a file of the directory: regular, not a link, at most the cap, into
 * the caller's buffer (kept from file to file: one allocation per reader,
 * not one per file).  1: older than min_mtime, not read (a report's file is
 * written after its check ran, so it holds no later report); 0; -1.
 */
static int read_capped(int dfd, const char *dir, const char *name, time_t min_mtime,
		       struct gpumem_report_buf *b, size_t *lenp, struct stat *stp)
{
	struct stat st;
	size_t len = 0;
	int fd, rv = -1;

	fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno == ELOOP)
			WARN(dir, name, "a symbolic link (reports are plain files)");
		else
			WARN(dir, name, "cannot open: %s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		WARN(dir, name, "cannot stat: %s", strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		WARN(dir, name, "not a regular file");
		goto fail;
	}
	if (st.st_mtime < min_mtime) {
		rv = 1;
		goto fail;
	}
	if (st.st_size > GPUMEM_REPORT_MAX_FILE_BYTES) {
		WARN(dir, name, "%lld bytes, larger than the %d-byte limit",
		     (long long)st.st_size, GPUMEM_REPORT_MAX_FILE_BYTES);
		goto fail;
	}
	if ((size_t)st.st_size + 2 > b->cap) {
		char *nb = realloc(b->data, (size_t)st.st_size + 2);

		if (nb == NULL) {
			WARN(dir, name, "out of memory");
			goto fail;
		}
		b->data = nb;
		b->cap = (size_t)st.st_size + 2;
	}
	/* Read one byte past the size: the file may have grown since fstat. */
	if (gpumem_read_fd(fd, b->data, (size_t)st.st_size + 1, &len) < 0) {
		WARN(dir, name, "read failed: %s", strerror(errno));
		goto fail;
	}
	if (len > (size_t)st.st_size) {
		WARN(dir, name, "changed while being read");
		goto fail;
	}
	b->data[len] = '\0';
	*lenp = len;
	*stp = st;
	rv = 0;
fail:
	close(fd);
	return rv;
}

int gpumem_report_add_file(struct gpumem_report_set *set, struct gpumem_report_file *f)
{
	struct gpumem_report_file **files;

	/* Doubling: a fleet's set holds 100,000 files. */
	if ((set->nfiles & (set->nfiles - 1)) == 0) {
		files = realloc(set->files, (set->nfiles ? set->nfiles * 2 : 16) * sizeof(*files));
		if (files == NULL)
			return -1;
		set->files = files;
	}
	set->files[set->nfiles++] = f;
	return 0;
}

void gpumem_report_stamp_of(const struct stat *st, struct gpumem_report_stamp *s)
{
	s->ino = (unsigned long long)st->st_ino;
	s->size = (unsigned long long)st->st_size;
	s->mtime_ns = (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
	s->ctime_ns = (long long)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
}

void gpumem_report_file_free(struct gpumem_report_file *f)
{
	if (f == NULL)
		return;
	free(f->name);
	free(f->step);
	free(f->node);
	free(f->user);
	free(f->policy);
	free(f->phase);
	free(f->time_text);
	free(f->gpus);
	free(f->status);
	free(f->reason);
	free(f->verdict);
	gpumem_report_prof_free(f->prof);
	free(f);
}

void gpumem_report_row_free(struct gpumem_report_row *r)
{
	free(r->gpu_name);
	free(r->gpu_uuid);
	free(r->gpu_pci);
	free(r->verdict);
	free(r->reason);
	for (int i = 0; i < GPUMEM_REPORT_NMETRICS; i++)
		free(r->m[i].verdict);
}

void gpumem_report_set_free(struct gpumem_report_set *set)
{
	gpumem_report_cache_wait(set);
	for (size_t i = 0; i < set->nrows; i++)
		gpumem_report_row_free(&set->rows[i]);
	for (size_t i = 0; i < set->nfiles; i++)
		gpumem_report_file_free(set->files[i]);
	free(set->rows);
	free(set->files);
	memset(set, 0, sizeof(*set));
}

int gpumem_report_add_row(struct gpumem_report_set *set, struct gpumem_report_row **out)
{
	if (set->nrows == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 256;
		struct gpumem_report_row *rows = realloc(set->rows, cap * sizeof(*rows));

		if (rows == NULL)
			return -1;
		set->rows = rows;
		set->cap = cap;
	}
	*out = &set->rows[set->nrows++];
	memset(*out, 0, sizeof(**out));
	for (int i = 0; i < GPUMEM_REPORT_NMETRICS; i++) {
		struct gpumem_report_metric *m = &(*out)->m[i];

		m->best = m->median = m->reference = m->threshold = m->warn_floor = NAN;
	}
	return 0;
}

/* "a; b; c" from an array of strings, or NULL when there is none. */
static char *join_reasons(struct json_object *arr)
{
	size_t len = 0, at = 0, n = gpumem_json_len(arr);
	char *s;

	for (size_t i = 0; i < n; i++)
		if (gpumem_json_is(gpumem_json_at(arr, i), json_type_string))
			len += strlen(json_object_get_string(gpumem_json_at(arr, i))) + 2;
	if (len == 0)
		return NULL;
	s = malloc(len + 1);
	if (s == NULL)
		return NULL;
	/* By offset, not strcat: a hostile file may hold many reasons. */
	for (size_t i = 0; i < n; i++) {
		struct json_object *item = gpumem_json_at(arr, i);
		const char *text = json_object_get_string(item);
		size_t tl;

		if (!gpumem_json_is(item, json_type_string) || !text[0])
			continue;
		if (at) {
			memcpy(s + at, "; ", 2);
			at += 2;
		}
		tl = strlen(text);
		memcpy(s + at, text, tl);
		at += tl;
	}
	s[at] = '\0';
	if (at == 0) {
		free(s);
		return NULL;
	}
	return s;
}

/* A metric of a compact row: [verdict, best, median, reference, threshold, warn floor]. */
static double item_num(struct json_object *arr, size_t i)
{
	struct json_object *v = gpumem_json_at(arr, i);

	return gpumem_json_is(v, json_type_int) || gpumem_json_is(v, json_type_double) ?
		json_object_get_double(v) : NAN;
}

static void metric_of(struct gpumem_report_metric *rm, struct json_object *a)
{
	struct json_object *v = gpumem_json_at(a, 0);
	double n[5];

	for (int i = 0; i < 5; i++)
		n[i] = item_num(a, (size_t)i + 1);
	gpumem_report_set_metric(rm, gpumem_json_is(v, json_type_string) ?
				 json_object_get_string(v) : NULL, n);
}

/* One GPU's row from its compact row (report_head.c: the head line's, or made from the check). */
static int device_row(struct gpumem_report_set *set, const struct gpumem_report_file *f,
		      struct json_object *dev, int pos)
{
	struct json_object *metrics = gpumem_json_get(dev, "metrics");
	const char *verdict = gpumem_json_str(dev, "verdict");
	struct gpumem_report_row *r;
	double idx;

	/* A device without an index keeps its position in the list. */
	r = gpumem_report_gpu_row(set, f, gpumem_json_num(dev, "index", &idx) == 0 && idx >= 0 &&
				  idx < 4096 ? (int)idx : pos, gpumem_json_str(dev, "name"),
				  gpumem_json_str(dev, "uuid"), gpumem_json_str(dev, "pci_bus_id"),
				  verdict, gpumem_report_vclass_of(verdict) == GPUMEM_REPORT_V_PASS ? NULL :
				  join_reasons(gpumem_json_get(dev, "reasons")));
	if (r == NULL)
		return -1;
	for (int i = 0; i < GPUMEM_REPORT_NMETRICS; i++) {
		struct json_object *m = gpumem_json_get(metrics, gpumem_report_metric_names[i]);

		if (gpumem_json_is(m, json_type_array))
			metric_of(&r->m[i], m);
	}
	return 0;
}

#define BAD(...) do { WARN(dir, name, __VA_ARGS__); goto fail; } while (0)

/* Slurm step IDs are numbers or names ("batch"): either form, "?" when neither. */
static const char *step_of(struct json_object *v, char *buf, size_t len)
{
	if (gpumem_json_is(v, json_type_int) || gpumem_json_is(v, json_type_double)) {
		snprintf(buf, len, "%lld", (long long)json_object_get_double(v));
		return buf;
	}
	return gpumem_json_is(v, json_type_string) && json_object_get_string(v)[0] ?
		json_object_get_string(v) : "?";
}

/* A required string member, or a warning naming it. */
static const char *need_str(struct json_object *root, const char *key,
			    const char *dir, const char *name)
{
	const char *s = gpumem_json_str(root, key);

	if (s == NULL || s[0] == '\0')
		WARN(dir, name, "\"%s\" is missing, empty or not a string", key);
	return s && s[0] ? s : NULL;
}

/* The report's own fields (not its rows) into a new file; NULL (warned). */
static struct gpumem_report_file *make_file(struct json_object *root, const char *dir,
					     const char *name)
{
	const char *schema, *node, *phase, *time_s, *status, *verdict;
	struct gpumem_report_file *f = NULL;
	struct gpumem_report_fields h;
	struct json_object *v;
	double job, x;

	if (!gpumem_json_is(root, json_type_object))
		BAD("not a JSON object: not a gpumem report");
	schema = gpumem_json_str(root, "schema");
	if (schema == NULL)
		BAD("no \"schema\": not a gpumem report");
	if (strcmp(schema, GPUMEM_REPORT_SCHEMA)) {
		if (!strncmp(schema, "gpumem-report/", 14))
			BAD("schema \"%.64s\": this gpumem reads %s only", schema,
			    GPUMEM_REPORT_SCHEMA);
		BAD("schema \"%.64s\" is not %s", schema, GPUMEM_REPORT_SCHEMA);
	}
	if (gpumem_json_num(root, "job", &job) < 0 || job < 0 || job > 9e15 ||
	    job != (double)(long long)job)
		BAD("\"job\" is missing or not a job ID");
	if (!(node = need_str(root, "node", dir, name)) ||
	    !(phase = need_str(root, "phase", dir, name)) ||
	    !(time_s = need_str(root, "time", dir, name)) ||
	    !(status = need_str(root, "status", dir, name)) ||
	    !(verdict = need_str(root, "verdict", dir, name)))
		goto fail;
	h = (struct gpumem_report_fields){ .name = name, .node = node, .phase = phase,
		.time = time_s, .status = status, .verdict = verdict, .job = (long long)job,
		.user = gpumem_json_str(root, "user"), .policy = gpumem_json_str(root, "policy"),
		.gpus = gpumem_json_str(root, "gpus"), .reason = gpumem_json_str(root, "reason") };
	if (gpumem_report_parse_time(time_s, &h.t) < 0)
		BAD("\"time\" \"%.64s\" is not an ISO 8601 time", time_s);
	h.step = step_of(gpumem_json_get(root, "step"), h.stepbuf, sizeof(h.stepbuf));
	h.has_uid = gpumem_json_num(root, "uid", &x) == 0;
	h.uid = h.has_uid ? (long long)x : 0;
	h.has_exit_code = gpumem_json_num(root, "exit_code", &x) == 0;
	h.exit_code = h.has_exit_code ? (long long)x : 0;
	v = gpumem_json_get(root, "drained");
	h.drained = gpumem_json_is(v, json_type_boolean) && json_object_get_boolean(v);
	if ((f = gpumem_report_file_of(&h)) == NULL)
		BAD("out of memory");
	return f;
fail:
	gpumem_report_file_free(f);
	return NULL;
}

/*
 * The file's rows: from its head line's "rows" when HEAD, else made from
 * its check as the plugin makes them (report_head.c), so both agree.
 */
static int extract(struct gpumem_report_set *set, const char *dir, const char *name,
		   struct json_object *root, int head)
{
	struct gpumem_report_file *f = make_file(root, dir, name);
	struct json_object *rows = NULL, *check = gpumem_json_get(root, "check");
	const char *reason;
	size_t first_row = set->nrows;
	char err[128];
	int rv = -1;

	if (f == NULL)
		return -1;
	if (head) {
		rows = json_object_get(gpumem_json_get(root, "rows"));
		reason = gpumem_json_str(root, "check_reason");
	} else {
		if (gpumem_report_rows_of(check, &rows, err, sizeof(err)) < 0)
			BAD("%s", err);
		reason = gpumem_report_check_reason(check);
	}
	for (size_t i = 0; i < gpumem_json_len(rows); i++) {
		if (!gpumem_json_is(gpumem_json_at(rows, i), json_type_object))
			BAD("rows[%zu] is not an object", i);
		if (device_row(set, f, gpumem_json_at(rows, i), (int)i) < 0)
			BAD("out of memory");
	}
	if (gpumem_json_len(rows) == 0 && gpumem_report_nogpu_row(set, f, reason) < 0)
		BAD("out of memory");
	if (gpumem_report_add_file(set, f) < 0)
		BAD("out of memory");
	f = NULL;
	rv = 0;
fail:
	if (rv < 0) {
		/* Take back the rows of a file that turned out bad halfway. */
		while (set->nrows > first_row)
			gpumem_report_row_free(&set->rows[--set->nrows]);
	}
	json_object_put(rows);
	gpumem_report_file_free(f);
	return rv;
}

/*
 * The head line alone (report_head.c): the text up to the first newline,
 * its final comma read as the closing brace.  0 and *root when that parses
 * and has "rows"; 1 otherwise: the whole file is read, and judged.
 */
static int parse_head(struct gpumem_report_buf *b, size_t len, struct json_object **root)
{
	char *nl = memchr(b->data, '\n', len), err[320];
	int rc;

	*root = NULL;
	if (nl == NULL || nl == b->data || nl[-1] != ',')
		return 1;
	nl[-1] = '}';
	rc = gpumem_json_parse_report_with(&b->tok, b->data, (size_t)(nl - b->data), root, err,
					   sizeof(err));
	nl[-1] = ',';
	if (rc == 0 && gpumem_json_is(gpumem_json_get(*root, "rows"), json_type_array))
		return 0;
	json_object_put(*root);
	*root = NULL;
	return 1;
}

int gpumem_report_load_file(struct gpumem_report_set *set, int dfd, const char *dir,
			    const char *name, const struct gpumem_report_want *want,
			    struct gpumem_report_buf *b)
{
	int rv, head, whole = want && want->profiles;
	struct json_object *root;
	struct stat st;
	char err[320];
	size_t len;

	rv = read_capped(dfd, dir, name, want ? want->min_mtime : 0, b, &len, &st);
	if (rv != 0)
		return rv;
	/* The head line as the plugin writes it, without json-c (report_scan.c). */
	if (!whole) {
		struct gpumem_report_file *f;

		rv = gpumem_report_scan_head(set, name, b->data, len, &f);
		if (rv == 0)
			gpumem_report_stamp_of(&st, &f->stamp);
		if (rv < 0)
			WARN(dir, name, "out of memory");
		if (rv <= 0)
			return rv;
	}
	/* The profile follows "check", past the head line: --profiles reads the whole file. */
	head = !whole && parse_head(b, len, &root) == 0;
	if (!head &&
	    gpumem_json_parse_report_with(&b->tok, b->data, len, &root, err, sizeof(err)) < 0) {
		WARN(dir, name, "not valid JSON: %s", err);
		return -1;
	}
	rv = extract(set, dir, name, root, head);
	if (rv == 0 && whole && gpumem_report_keep_profile(set->files[set->nfiles - 1], root) < 0)
		WARN(dir, name, "out of memory for its profile");   /* the report stays listed */
	json_object_put(root);
	if (rv == 0)
		gpumem_report_stamp_of(&st, &set->files[set->nfiles - 1]->stamp);
	return rv;
}
