/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem report's cache: the rows of every report file it has read, so the
 * next run over a fleet's directory parses only what is new.  100,000
 * reports are 400 MB of JSON, and json-c builds and frees a tree for each
 * (3 s on 2 cores); the same rows from here take a stat and a copy each.
 *
 * Where: $XDG_CACHE_HOME/gpumem (else ~/.cache/gpumem), one file per report
 * directory, named by a hash of its real path, which the file also holds.
 * Whose: the user who runs the command, in their own directory: it never
 * decides anything for anyone else, and it is used only when it and its
 * directory are owned by that user, not links, and writable by no other
 * (gpumem_cache_dir_open: made with mkdirat, opened with O_NOFOLLOW).
 * When: a file's rows are taken only while the file is the one read
 * (inode, size, mtime and ctime, which no user can set back); any doubt is
 * a miss, and the file is parsed.  A cache that does not read back whole
 * is dropped with a warning, and rewritten.
 *
 * Format (this machine's byte order and sizes; a header that differs is a
 * miss): a header line, the directory, then one entry per file in name
 * order: its byte length, name, stamp, the file's fields, its rows.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core_base.h"
#include "report_cli.h"

#define MAGIC "gpumem-report-cache/2\n"
#define STR_MAX (64 * 1024)
#define ROWS_MAX 4096
#define NO_STR UINT32_MAX

static const uint32_t byte_order = 0x01020304;

/* ------------------------------------------------------------ where */
static uint64_t fnv1a(const char *s)
{
	return gpumem_fnv1a(GPUMEM_FNV1A_BASIS, s, strlen(s));
}

/* Ours alone: owned by us, not a link (fstat of an O_NOFOLLOW fd), no one else writes. */
static int ours(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & 022);
}

/* The cache directory, opened (made when missing, callerfile.h); -1 when there is none to trust. */
static int cache_dir(void)
{
	char why[300];

	return gpumem_cache_dir_open(why, sizeof(why));
}

static void cache_name(const char *real, char *name, size_t len)
{
	snprintf(name, len, "report-%016llx.cache", (unsigned long long)fnv1a(real));
}

/* ------------------------------------------------------------ reading */
struct cache {
	FILE *f;
	const char *real;               /* the report directory's real path */
	char *name;                     /* the current entry's file name, NULL at the end */
	long next;                      /* offset of the entry after it */
	int bad;
};

static int get(struct cache *c, void *p, size_t n)
{
	if (c->bad || fread(p, 1, n, c->f) != n) {
		c->bad = 1;
		return -1;
	}
	return 0;
}

static char *get_str(struct cache *c)
{
	uint32_t n;
	char *s;

	if (get(c, &n, sizeof(n)) < 0 || n == NO_STR)
		return NULL;
	if (n > STR_MAX || (s = malloc(n + 1)) == NULL) {
		c->bad = 1;
		return NULL;
	}
	if (get(c, s, n) < 0 || memchr(s, '\0', n)) {
		free(s);
		c->bad = 1;
		return NULL;
	}
	s[n] = '\0';
	return s;
}

/* Move to the next entry: its name, with the stream after it; 0 at the end. */
static int advance(struct cache *c)
{
	uint32_t len;

	free(c->name);
	c->name = NULL;
	if (c->bad || fseek(c->f, c->next, SEEK_SET) != 0)
		return -1;
	if (fread(&len, sizeof(len), 1, c->f) != 1)
		return feof(c->f) ? 0 : -1;
	c->next += (long)sizeof(len) + (long)len;
	c->name = get_str(c);
	return c->name ? 1 : -1;
}

static struct cache *cache_open(int dfd, const char *real)
{
	char name[64], head[sizeof(MAGIC) - 1];
	uint32_t order, sizes[3];
	struct cache *c;
	int fd;
	char *dir;

	cache_name(real, name, sizeof(name));
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	if (!ours(fd) || (c = calloc(1, sizeof(*c))) == NULL || (c->f = fdopen(fd, "r")) == NULL) {
		close(fd);
		return NULL;
	}
	c->real = real;
	dir = NULL;
	if (get(c, head, sizeof(head)) == 0 && !memcmp(head, MAGIC, sizeof(head)) &&
	    get(c, &order, sizeof(order)) == 0 && order == byte_order &&
	    get(c, sizes, sizeof(sizes)) == 0 && sizes[0] == sizeof(long long) &&
	    sizes[1] == sizeof(double) && sizes[2] == sizeof(int) &&
	    (dir = get_str(c)) != NULL && !strcmp(dir, real)) {
		free(dir);
		c->next = ftell(c->f);
		if (advance(c) >= 0)
			return c;
	}
	free(dir);
	fclose(c->f);
	free(c);
	return NULL;
}

static void cache_close(struct cache *c)
{
	if (c == NULL)
		return;
	free(c->name);
	fclose(c->f);
	free(c);
}

/* The strings of a file and of a row, in the order they are stored. */
#define FILE_STRS(f) { &(f)->step, &(f)->node, &(f)->user, &(f)->policy, &(f)->phase, \
		       &(f)->time_text, &(f)->gpus, &(f)->status, &(f)->reason, &(f)->verdict }
#define ROW_STRS(r) { &(r)->gpu_name, &(r)->gpu_uuid, &(r)->gpu_pci, &(r)->verdict, &(r)->reason }
#define NFILE_STRS 10
#define NROW_STRS 5

static int vclass_ok(int v)
{
	return v >= 0 && v < GPUMEM_REPORT_NV;
}

/* n strings into *ps[i]; bit i of required: that one may not be null. */
static int get_strs(struct cache *c, char **const *ps, size_t n, unsigned required)
{
	for (size_t i = 0; i < n; i++) {
		*ps[i] = get_str(c);
		if (c->bad || ((required >> i & 1) && *ps[i] == NULL))
			return -1;
	}
	return 0;
}

static int get_row(struct cache *c, struct gpumem_report_row *r, const struct gpumem_report_file *f)
{
	char **strs[NROW_STRS] = ROW_STRS(r);
	int ints[4];

	r->rep = f;
	if (get(c, ints, sizeof(ints)) < 0 || get_strs(c, strs, NROW_STRS, 1u << 3) < 0 ||
	    !vclass_ok(ints[3]))
		return -1;
	r->has_gpu = ints[0];
	r->cuda_index = ints[1];
	r->node_index = ints[2];
	r->vclass = (enum gpumem_report_vclass)ints[3];
	for (int i = 0; i < GPUMEM_REPORT_NMETRICS; i++) {
		struct gpumem_report_metric *m = &r->m[i];
		int mi[2];
		double d[5];

		if (get(c, mi, sizeof(mi)) < 0 || !vclass_ok(mi[1]))
			return -1;
		m->present = mi[0];
		m->vclass = (enum gpumem_report_vclass)mi[1];
		m->verdict = get_str(c);
		if (get(c, d, sizeof(d)) < 0)
			return -1;
		m->best = d[0], m->median = d[1], m->reference = d[2];
		m->threshold = d[3], m->warn_floor = d[4];
	}
	return 0;
}

static int get_file(struct cache *c, struct gpumem_report_file *f, uint32_t *nrows)
{
	char **strs[NFILE_STRS] = FILE_STRS(f);
	long long ll[3];
	int ints[4];

	if (get(c, &f->job, sizeof(f->job)) < 0 ||
	    get_strs(c, strs, NFILE_STRS, 0x2b3) < 0 ||    /* all but user, policy, gpus, reason */
	    get(c, ints, sizeof(ints)) < 0 || get(c, ll, sizeof(ll)) < 0 ||
	    get(c, nrows, sizeof(*nrows)) < 0 || !vclass_ok(ints[0]) || *nrows > ROWS_MAX)
		return -1;
	f->vclass = (enum gpumem_report_vclass)ints[0];
	f->has_uid = ints[1], f->has_exit_code = ints[2], f->drained = ints[3];
	f->uid = ll[0], f->exit_code = ll[1], f->time = (time_t)ll[2];
	return 0;
}

/* The current entry into set: 0, or -1 (the cache is bad; set unchanged). */
static int take(struct cache *c, const struct gpumem_report_stamp *want,
		struct gpumem_report_set *set)
{
	struct gpumem_report_file *f = calloc(1, sizeof(*f));
	size_t first = set->nrows;
	uint32_t nrows = 0;

	if (f == NULL || get(c, &f->stamp, sizeof(f->stamp)) < 0)
		goto bad;
	if (memcmp(&f->stamp, want, sizeof(*want)) != 0) {
		gpumem_report_file_free(f);
		return 1;                       /* changed since: a miss */
	}
	f->name = strdup(c->name);
	if (f->name == NULL || get_file(c, f, &nrows) < 0)
		goto bad;
	for (uint32_t i = 0; i < nrows; i++) {
		struct gpumem_report_row *r;

		if (gpumem_report_add_row(set, &r) < 0 || get_row(c, r, f) < 0)
			goto bad;
	}
	if (gpumem_report_add_file(set, f) < 0)
		goto bad;
	return 0;
bad:
	c->bad = 1;
	while (set->nrows > first)
		gpumem_report_row_free(&set->rows[--set->nrows]);
	gpumem_report_file_free(f);
	return -1;
}

/* ------------------------------------------------------------ writing */
/* An entry is built in memory, then written with its length in front. */
struct out {
	char *p;
	size_t len, cap;
	int oom;
};

static void put(struct out *o, const void *p, size_t n)
{
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap : 4096;
		char *np;

		while (cap < o->len + n)
			cap *= 2;
		if ((np = realloc(o->p, cap)) == NULL) {
			o->oom = 1;
			return;
		}
		o->p = np;
		o->cap = cap;
	}
	memcpy(o->p + o->len, p, n);
	o->len += n;
}

static void put_str(struct out *o, const char *s)
{
	uint32_t n = s ? (uint32_t)strlen(s) : NO_STR;

	put(o, &n, sizeof(n));
	if (s)
		put(o, s, n);
}

static void put_row(struct out *o, const struct gpumem_report_row *r)
{
	char **strs[NROW_STRS] = ROW_STRS((struct gpumem_report_row *)r);
	int ints[4] = { r->has_gpu, r->cuda_index, r->node_index, (int)r->vclass };

	put(o, ints, sizeof(ints));
	for (int i = 0; i < NROW_STRS; i++)
		put_str(o, *strs[i]);
	for (int i = 0; i < GPUMEM_REPORT_NMETRICS; i++) {
		const struct gpumem_report_metric *m = &r->m[i];
		int mi[2] = { m->present, (int)m->vclass };
		double d[5] = { m->best, m->median, m->reference, m->threshold, m->warn_floor };

		put(o, mi, sizeof(mi));
		put_str(o, m->verdict);
		put(o, d, sizeof(d));
	}
}

/* One file and its rows, as an entry. */
static void put_entry(FILE *f, struct out *o, const struct gpumem_report_file *fi,
		      const struct gpumem_report_row *rows, uint32_t nrows)
{
	char **strs[NFILE_STRS] = FILE_STRS((struct gpumem_report_file *)fi);
	int ints[4] = { (int)fi->vclass, fi->has_uid, fi->has_exit_code, fi->drained };
	long long ll[3] = { fi->uid, fi->exit_code, (long long)fi->time };
	uint32_t len;

	o->len = 0;
	put_str(o, fi->name);
	put(o, &fi->stamp, sizeof(fi->stamp));
	put(o, &fi->job, sizeof(fi->job));
	for (int i = 0; i < NFILE_STRS; i++)
		put_str(o, *strs[i]);
	put(o, ints, sizeof(ints));
	put(o, ll, sizeof(ll));
	put(o, &nrows, sizeof(nrows));
	for (uint32_t i = 0; i < nrows; i++)
		put_row(o, &rows[i]);
	len = (uint32_t)o->len;
	fwrite(&len, sizeof(len), 1, f);
	fwrite(o->p, 1, o->len, f);
}

/* A file's rows are contiguous in set->rows: one group per file. */
struct group {
	const struct gpumem_report_file *f;
	size_t first, n;
};

static int cmp_group(const void *a, const void *b)
{
	return strcmp(((const struct group *)a)->f->name, ((const struct group *)b)->f->name);
}

static int write_all(FILE *f, const char *real, const struct gpumem_report_set *set)
{
	struct group *g = malloc((set->nrows ? set->nrows : 1) * sizeof(*g));
	uint32_t sizes[3] = { sizeof(long long), sizeof(double), sizeof(int) };
	struct out o = { 0 };
	size_t ng = 0;
	int rv;

	if (g == NULL)
		return -1;
	for (size_t i = 0; i < set->nrows; i++) {
		if (ng && g[ng - 1].f == set->rows[i].rep)
			g[ng - 1].n++;
		else
			g[ng++] = (struct group){ set->rows[i].rep, i, 1 };
	}
	qsort(g, ng, sizeof(*g), cmp_group);
	put(&o, MAGIC, sizeof(MAGIC) - 1);
	put(&o, &byte_order, sizeof(byte_order));
	put(&o, sizes, sizeof(sizes));
	put_str(&o, real);
	fwrite(o.p, 1, o.len, f);
	for (size_t i = 0; i < ng && !o.oom; i++)
		put_entry(f, &o, g[i].f, &set->rows[g[i].first], (uint32_t)g[i].n);
	rv = ferror(f) || o.oom ? -1 : 0;
	free(o.p);
	free(g);
	return rv;
}

/* Write the cache whole beside the old one, then rename it over. */
static void cache_write(int cfd, const char *real, const struct gpumem_report_set *set)
{
	char name[64], tmp[96];
	FILE *f;
	int fd, ok;

	cache_name(real, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), ".%s.%ld", name, (long)getpid());
	fd = openat(cfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	ok = write_all(f, real, set) == 0;
	ok = fclose(f) == 0 && ok;
	if (!ok || renameat(cfd, tmp, cfd, name) < 0)
		unlinkat(cfd, tmp, 0);
}

/* ------------------------------------------------------------ the pass */
/* Past the entries of files that are gone; 1 when the current one is name's. */
static int seek_name(struct cache *c, const char *name, int *stale)
{
	int cmp = 1;

	while (c->name && (cmp = strcmp(c->name, name)) < 0) {
		*stale = 1;
		if (advance(c) < 0)
			return -1;
	}
	return c->name && cmp == 0;
}

/* name from the cache: 0 taken, 1 not (parse it), 2 left out (older than min_mtime), -1 bad cache. */
static int from_cache(struct cache *c, int dfd, const char *name, time_t min_mtime,
		      struct gpumem_report_set *set, int *stale)
{
	struct gpumem_report_stamp stamp;
	struct stat st;
	int rv = seek_name(c, name, stale);

	if (rv <= 0)
		return rv < 0 ? -1 : 1;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return 1;                       /* the reader says what is wrong */
	if (st.st_mtime < min_mtime)
		return 2;
	gpumem_report_stamp_of(&st, &stamp);
	rv = take(c, &stamp, set);
	if (rv == 1)
		*stale = 1;
	if (rv >= 0 && advance(c) < 0)
		return -1;
	return rv;
}

int gpumem_report_cache_pass(struct gpumem_report_cache_run *run, const char *dir, int dfd,
			     char **names, size_t n, time_t min_mtime,
			     struct gpumem_report_set *set, char **todo, size_t *ntodo)
{
	struct cache *c = NULL;
	size_t k = 0;

	memset(run, 0, sizeof(*run));
	run->cfd = cache_dir();
	run->real = realpath(dir, NULL);
	if (run->cfd >= 0 && run->real)
		c = cache_open(run->cfd, run->real);
	run->stale = c == NULL;
	for (size_t i = 0; i < n; i++) {
		int rv = c ? from_cache(c, dfd, names[i], min_mtime, set, &run->stale) : 1;

		if (rv < 0) {
			fprintf(stderr, "gpumem: report: the cache of %s does not read back whole: "
				"it is made again\n", dir);
			cache_close(c);
			c = NULL;
			run->stale = 1;
			rv = 1;
		}
		if (rv == 0)
			set->ncached++;
		if (rv == 1)
			todo[k++] = names[i];
	}
	if (c && c->name)
		run->stale = 1;                 /* entries of files gone */
	cache_close(c);
	*ntodo = k;
	return 0;
}

static void run_close(struct gpumem_report_cache_run *run)
{
	if (run->cfd >= 0)
		close(run->cfd);
	free(run->real);
	memset(run, 0, sizeof(*run));
	run->cfd = -1;
}

/* The writer: set is only read, here and by the listing meanwhile. */
static void *write_thread(void *arg)
{
	struct gpumem_report_set *set = arg;

	cache_write(set->writer->cfd, set->writer->real, set);
	return NULL;
}

void gpumem_report_cache_done(struct gpumem_report_cache_run *run,
			      struct gpumem_report_set *set, int complete)
{
	/* A file read now, not from the cache, is new to it. */
	if (!complete || run->cfd < 0 || !run->real || (!run->stale && set->nfiles == set->ncached)) {
		run_close(run);
		return;
	}
	/*
	 * Written beside the listing, on another thread (the set stays as it
	 * is until gpumem_report_set_free waits for it): the cache is for the
	 * next run, and this one need not wait for it.
	 */
	set->writer = malloc(sizeof(*set->writer));
	if (set->writer) {
		*set->writer = *run;
		memset(run, 0, sizeof(*run));
		run->cfd = -1;
		if (pthread_create(&set->writer_tid, NULL, write_thread, set) == 0)
			return;
		*run = *set->writer;
		free(set->writer);
		set->writer = NULL;
	}
	cache_write(run->cfd, run->real, set);
	run_close(run);
}

void gpumem_report_cache_wait(struct gpumem_report_set *set)
{
	if (set->writer == NULL)
		return;
	pthread_join(set->writer_tid, NULL);
	run_close(set->writer);
	free(set->writer);
	set->writer = NULL;
}
