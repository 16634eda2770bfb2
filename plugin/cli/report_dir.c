/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A directory of report files into one set of rows, fast enough for a
 * fleet: 100,000 files are 400 MB of JSON.  The names are listed and
 * sorted first; a name the filters rule out (job, step and node are in
 * it) is never opened; the rest are split into contiguous slices, one per
 * reader thread, each with its own rows, file buffer and warning stream,
 * and the slices are joined in name order, so the rows and the warnings
 * come out as a single reader would give them.  Before them, files read
 * before and unchanged since come from the cache (report_cache.c).
 * report_load.c reads one file.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core_base.h"
#include "report_cli.h"

#define MAX_READERS 8
#define FILES_PER_READER 256    /* fewer files are not worth a thread */

struct slice {
	const char *dir;
	int dfd;
	char **names;
	size_t n;
	const struct gpumem_report_want *want;  /* may be NULL */
	struct gpumem_report_set set;
	char *warn;                     /* this slice's warnings, in order */
	size_t warnlen;
};

/*
 * job<JOB>.<STEP>.<NODE>.<PHASE>.json: the step has no dot (a number or
 * batch, extern...), the node may.  0 when name has this form.
 */
static int parse_name(const char *name, long long *job, char *step, size_t steplen,
		      char *node, size_t nodelen)
{
	const char *s = name + 3, *dot, *last;
	char *end;
	size_t len = strlen(name);

	if (strncmp(name, "job", 3) || len < 5 || strcmp(name + len - 5, ".json"))
		return -1;
	*job = strtoll(s, &end, 10);
	if (end == s || *end != '.' || *job < 0)
		return -1;
	s = end + 1;
	dot = strchr(s, '.');
	if (dot == NULL || dot == s || (size_t)(dot - s) >= steplen)
		return -1;
	memcpy(step, s, (size_t)(dot - s));
	step[dot - s] = '\0';
	s = dot + 1;
	last = name + len - 5;                  /* the dot of ".json" */
	while (last > s && last[-1] != '.')     /* back over the phase */
		last--;
	if (last <= s + 1 || (size_t)(last - 1 - s) >= nodelen)
		return -1;
	memcpy(node, s, (size_t)(last - 1 - s));
	node[last - 1 - s] = '\0';
	return 0;
}

static int wanted(const struct gpumem_report_want *w, const char *name)
{
	char step[64], node[256];
	long long job;

	if (w == NULL || w->name == NULL ||
	    parse_name(name, &job, step, sizeof(step), node, sizeof(node)) < 0)
		return 1;
	return w->name(job, step, node, w->arg);
}

static void *read_slice(void *arg)
{
	struct slice *s = arg;
	struct gpumem_report_buf b = { 0 };
	FILE *w = open_memstream(&s->warn, &s->warnlen);

	gpumem_report_warn_to(w);      /* NULL (no memory): straight to stderr */
	for (size_t i = 0; i < s->n; i++)
		if (gpumem_report_load_file(&s->set, s->dfd, s->dir, s->names[i], s->want, &b) < 0)
			s->set.nbad++;
	gpumem_report_warn_to(NULL);
	if (w)
		fclose(w);
	free(b.data);
	if (b.tok)
		json_tokener_free(b.tok);
	return NULL;
}

/* Append src's rows and files to dst, in order; src is left empty. */
static int join(struct gpumem_report_set *dst, struct gpumem_report_set *src)
{
	struct gpumem_report_row *rows;

	if (dst->nrows + src->nrows > dst->cap) {
		rows = realloc(dst->rows, (dst->nrows + src->nrows) * sizeof(*rows));
		if (rows == NULL)
			return -1;
		dst->rows = rows;
		dst->cap = dst->nrows + src->nrows;
	}
	for (size_t i = 0; i < src->nfiles; i++) {
		if (gpumem_report_add_file(dst, src->files[i]) < 0) {
			dst->nfiles -= i;       /* src keeps them all: it frees them */
			return -1;
		}
	}
	if (src->nrows > 0)     /* both may be NULL when nothing matched */
		memcpy(dst->rows + dst->nrows, src->rows, src->nrows * sizeof(*src->rows));
	dst->nrows += src->nrows;
	dst->nbad += src->nbad;
	free(src->rows);
	free(src->files);
	memset(src, 0, sizeof(*src));
	return 0;
}

/* The CPUs this process may run on (taskset, a cgroup's cpuset), else those online. */
static long cpus_here(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	return sysconf(_SC_NPROCESSORS_ONLN);
}

static int readers(size_t n)
{
	long cpus = cpus_here();
	size_t k = n / FILES_PER_READER + 1;

	if (cpus < 1)
		cpus = 1;
	if (k > (size_t)cpus)
		k = (size_t)cpus;
	return k > MAX_READERS ? MAX_READERS : (int)k;
}

/* Read the sorted names on k threads (the first slice on this one). */
static int read_all(const char *dir, int dfd, char **names, size_t n,
		    const struct gpumem_report_want *want, struct gpumem_report_set *set)
{
	struct slice sl[MAX_READERS];
	pthread_t tid[MAX_READERS];
	int k = readers(n), started[MAX_READERS] = { 0 }, rv = 0;

	memset(sl, 0, sizeof(sl));
	for (int i = 0; i < k; i++) {
		size_t a = n * (size_t)i / (size_t)k, b = n * (size_t)(i + 1) / (size_t)k;

		sl[i] = (struct slice){ .dir = dir, .dfd = dfd, .names = names + a, .n = b - a,
					.want = want };
		if (i > 0)
			started[i] = pthread_create(&tid[i], NULL, read_slice, &sl[i]) == 0;
	}
	read_slice(&sl[0]);
	for (int i = 1; i < k; i++) {
		if (started[i])
			pthread_join(tid[i], NULL);
		else
			read_slice(&sl[i]);     /* no thread: read it here */
	}
	for (int i = 0; i < k; i++) {
		if (sl[i].warn)
			fwrite(sl[i].warn, 1, sl[i].warnlen, stderr);
		free(sl[i].warn);
		if (rv == 0 && join(set, &sl[i].set) < 0) {
			fprintf(stderr, "gpumem: report: %s: out of memory\n", dir);
			rv = -1;
		}
		gpumem_report_set_free(&sl[i].set);
	}
	return rv;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.json names of d, sorted; -1 (said) when the directory fails. */
static int list_names(DIR *d, const char *dir, char ***namesp, size_t *np)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;

	for (;;) {
		size_t len;

		errno = 0;
		e = readdir(d);
		if (e == NULL)
			break;
		len = strlen(e->d_name);
		/* '.', '..' and hidden files: the plugin's .*.tmp files are
		 * reports being written, complete only once renamed. */
		if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".json") ||
		    e->d_type == DT_DIR)
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? cap * 2 : 256) * sizeof(*nn));

			if (nn == NULL)
				goto oom;
			names = nn;
		}
		if ((names[n] = strdup(e->d_name)) == NULL)
			goto oom;
		n++;
	}
	if (errno) {
		fprintf(stderr, "gpumem: report: %s: cannot read the report directory: %s\n",
			dir, strerror(errno));
		goto fail;
	}
	/* A fixed order makes the warnings (and equal rows) reproducible. */
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	*namesp = names;
	*np = n;
	return 0;
oom:
	fprintf(stderr, "gpumem: report: %s: out of memory\n", dir);
fail:
	while (n)
		free(names[--n]);
	free(names);
	return -1;
}

/* The names the filters leave, in place; returns how many. */
static size_t filter_names(char **names, size_t n, const struct gpumem_report_want *want)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (wanted(want, names[i]))
			names[k++] = names[i];
		else
			free(names[i]);
	return k;
}

int gpumem_report_load_dir(const char *dir, const struct gpumem_report_want *want,
			   int use_cache, struct gpumem_report_set *set)
{
	struct gpumem_report_cache_run run = { .cfd = -1 };
	time_t min_mtime = want ? want->min_mtime : 0;
	char **names = NULL, **todo = NULL;
	size_t n = 0, ntodo = 0;
	char why[400];
	DIR *d = NULL;
	int rv = -1, fd;

	memset(set, 0, sizeof(*set));
	/* As root, no link in DIR's path is followed (callerfile.h). */
	fd = gpumem_caller_dir_open(dir, why, sizeof(why));
	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		fprintf(stderr, "gpumem: report: %s: cannot read the report directory: %s\n",
			dir, fd < 0 ? why : strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (list_names(d, dir, &names, &n) < 0)
		goto fail;
	set->nlisted = n;
	n = filter_names(names, n, want);
	set->nskipped = set->nlisted - n;
	/* The cache first (without memory for the list: no cache, every file read);
	 * it holds rows only, never profiles. */
	if (want && want->profiles)
		use_cache = 0;
	todo = use_cache ? malloc((n ? n : 1) * sizeof(*todo)) : NULL;
	if (todo)
		gpumem_report_cache_pass(&run, dir, dirfd(d), names, n, min_mtime, set, todo, &ntodo);
	rv = read_all(dir, dirfd(d), todo ? todo : names, todo ? ntodo : n, want, set);
	if (todo)
		gpumem_report_cache_done(&run, set, rv == 0 && set->nskipped == 0 && min_mtime == 0);
fail:
	free(todo);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rv;
}
