/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Root's state directory (see statedir.h; the names of its files,
 * statefiles.h).  Everything here is
 * done relative to one directory fd opened with O_NOFOLLOW and checked for
 * owner and mode, so a user who made the path first (a link, their own
 * directory) gets it refused, never written through.  The directory is
 * root's alone (0700, files 0600): no user lists or reads another's job
 * records; what a user's process must reach (the empty MPS pipe directory
 * of the helpers) lives in mps_dir (mps.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core_policy.h"
#include "core_base.h"
#include "statedir.h"

static int root_only(const struct stat *st)
{
	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

int gpumem_state_open(const char *dir, int create, char *err, size_t elen)
{
	struct stat st;

	/* A step only reads: it never makes the directory the prolog did not. */
	if (!create && lstat(dir, &st) < 0) {
		snprintf(err, elen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	/*
	 * Every component without following links, root's, not writable by
	 * others; root's alone: one made now or left 0755 by an older gpumem is made 0700.
	 */
	return gpumem_dir_open_mode(dir, 0700, err, elen);
}

int gpumem_state_as_root(void)
{
	uid_t e = geteuid();

	if (e == 0 || getuid() != 0 || seteuid(0) < 0)
		return -1;
	return (int)e;
}

int gpumem_state_as_before(int saved)
{
	return saved >= 0 && seteuid((uid_t)saved) < 0 ? -1 : 0;
}

char *gpumem_state_read(int dfd, const char *name, size_t max)
{
	struct stat st;
	char *buf = NULL;
	ssize_t n;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !root_only(&st) ||
	    (size_t)st.st_size > max || !(buf = malloc((size_t)st.st_size + 1)))
		goto out;
	n = read(fd, buf, (size_t)st.st_size);
	if (n < 0) {
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[n] = '\0';
out:
	close(fd);
	return buf;
}

int gpumem_state_write(int dfd, const char *name, const char *text)
{
	char tmp[300];
	size_t len = strlen(text);
	int fd, rv = -1;

	if (gpumem_sf_tmp(tmp, sizeof(tmp), name) < 0)
		return -1;
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (write(fd, text, len) == (ssize_t)len && fchmod(fd, 0600) == 0 && close(fd) == 0) {
		fd = -1;
		rv = renameat(dfd, tmp, dfd, name);
	}
	if (fd >= 0)
		close(fd);
	if (rv < 0)
		unlinkat(dfd, tmp, 0);
	return rv;
}

/* Append LINE to *buf (grown as needed). */
static int append(char **buf, size_t *len, const char *line, size_t n)
{
	char *b = realloc(*buf, *len + n + 2);

	if (b == NULL)
		return -1;
	memcpy(b + *len, line, n);
	b[*len + n] = '\n';
	*len += n + 1;
	b[*len] = '\0';
	*buf = b;
	return 0;
}

int gpumem_probe_cache_lookup(int dfd, char list[][64], int n, struct gpumem_node *node)
{
	char *cache = dfd >= 0 && n > 0 ? gpumem_state_read(dfd, GPUMEM_SF_PROBE_CACHE, 256 * 1024) :
		NULL;
	int rv = cache && gpumem_gpus_match(cache, list, n, node) == n;

	if (!rv)
		memset(node, 0, sizeof(*node));
	free(cache);
	return rv;
}

int gpumem_probe_run(struct gpumem_proc *p, const char *libexecdir, const char *nomps,
		     const char *visible, uid_t uid, gid_t gid, int timeout)
{
	char path[4200];
	char *argv[] = { path, NULL };
	struct gpumem_henv env;

	snprintf(path, sizeof(path), "%s/gpumem-probe", libexecdir);
	gpumem_henv_init(&env);
	gpumem_henv_set(&env, GPUMEM_ENV_MPS_PIPE, "%s", nomps);
	if (visible)
		gpumem_henv_set(&env, GPUMEM_ENV_VISIBLE, "%s", visible);
	gpumem_proc_as_user(p, path, argv, gpumem_henv_envp(&env), uid, gid, timeout);
	return gpumem_proc_run(p) == 0 && p->status == 0 ? 0 : -1;
}

int gpumem_probe_cache_merge(int dfd, const char *out, char list[][64], int n)
{
	char *old = gpumem_state_read(dfd, GPUMEM_SF_PROBE_CACHE, 256 * 1024);
	char *buf = NULL, uuids[GPUMEM_MAX_GPUS][64];
	size_t len = 0;
	int nu = 0, rv;

	/* Fresh lines first, renumbered to the node's physical indexes. */
	for (const char *l = out; l && *l && nu < GPUMEM_MAX_GPUS;) {
		const char *nl = strchr(l, '\n');
		size_t ll = nl ? (size_t)(nl - l) : strlen(l);
		char line[512], uuid[64], rest[400];
		int k, off = 0;

		snprintf(line, sizeof(line), "%.*s", (int)ll, l);
		l = nl ? nl + 1 : NULL;
		if (sscanf(line, "gpu %d %63s %n", &k, uuid, &off) != 2 || k < 0 || k >= n ||
		    strspn(list[k], "0123456789") != strlen(list[k]))
			continue;
		snprintf(rest, sizeof(rest), "%s", line + off);
		snprintf(line, sizeof(line), "gpu %s %s %s", list[k], uuid, rest);
		snprintf(uuids[nu++], 64, "%s", uuid);
		if (append(&buf, &len, line, strlen(line)) < 0)
			goto oom;
	}
	/* Then what the cache knew of other GPUs. */
	for (const char *l = old; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t ll = nl ? (size_t)(nl - l) : strlen(l);
		char line[512], uuid[64];
		int k, seen = 0;

		snprintf(line, sizeof(line), "%.*s", (int)ll, l);
		l = nl ? nl + 1 : NULL;
		if (sscanf(line, "gpu %d %63s", &k, uuid) != 2)
			continue;
		for (int i = 0; i < nu; i++)
			seen |= !strcmp(uuids[i], uuid);
		if (!seen && append(&buf, &len, line, strlen(line)) < 0)
			goto oom;
	}
	free(old);
	rv = buf ? gpumem_state_write(dfd, GPUMEM_SF_PROBE_CACHE, buf) : 0;
	free(buf);
	return rv;
oom:
	free(old);
	free(buf);
	return -1;
}

/*
 * The record of JOB for NODE's epilog, or (NODE NULL) for the steps, which
 * know no node name: by this host's name (statefiles.h).
 */
static void jobrec_name(char *name, size_t len, unsigned job, const char *node)
{
	gpumem_sf_job(name, len, GPUMEM_SF_REC, job, node);
}
/* The user policy, the effective one and the site file, each capped at GPUMEM_MAX_FILE_BYTES. */
#define JOBREC_MAX (4 * GPUMEM_MAX_FILE_BYTES + 16384)
#define JOBREC_V 2

int gpumem_jobrec_write(int dfd, unsigned job, const char *node, const struct gpumem_jobrec *r)
{
	struct json_object *o = json_object_new_object();
	char name[128], *text;
	int rv = -1;

	if (o == NULL)
		return -1;
	gpumem_json_add(o, "v", gpumem_json_int(JOBREC_V));
	gpumem_json_add(o, "name", gpumem_json_string(r->name));
	gpumem_json_add(o, "policy", gpumem_json_string(r->policy));
	gpumem_json_add(o, "effective", gpumem_json_string(r->effective));
	gpumem_json_add(o, "site", gpumem_json_string(r->site));
	gpumem_json_add(o, "site_path", gpumem_json_string(r->site_path));
	gpumem_json_add(o, "rejected", gpumem_json_string(r->rejected));
	gpumem_json_add(o, "fail", gpumem_json_string(r->fail));
	gpumem_json_add(o, "mps", gpumem_json_string(r->mps));
	gpumem_json_add(o, "mps_gpus", gpumem_json_string(r->mps_gpus));
	text = gpumem_json_dump(o, GPUMEM_JSON_COMPACT);
	json_object_put(o);
	jobrec_name(name, sizeof(name), job, node);
	if (text && node)
		rv = gpumem_state_write(dfd, name, text);
	jobrec_name(name, sizeof(name), job, NULL);
	if (text && (node == NULL || rv == 0))
		rv = gpumem_state_write(dfd, name, text);
	free(text);
	return rv;
}

/* A string member, copied; NULL for null.  -1 when it is neither. */
static int member(struct json_object *o, const char *key, char **out)
{
	struct json_object *v = gpumem_json_get(o, key);

	*out = NULL;
	if (v == NULL)
		return 0;
	if (!gpumem_json_is(v, json_type_string))
		return -1;
	*out = strdup(json_object_get_string(v));
	return *out ? 0 : -1;
}

int gpumem_jobrec_read(int dfd, unsigned job, const char *node, struct gpumem_jobrec *r,
		       char *why, size_t wlen)
{
	static const struct gpumem_json_caps caps = { JOBREC_MAX, 4, 64, "a job record" };
	struct json_object *o = NULL;
	char name[128], err[256], *text;
	double v = 0;
	int rv = -1;

	memset(r, 0, sizeof(*r));
	jobrec_name(name, sizeof(name), job, node);
	text = dfd >= 0 ? gpumem_state_read(dfd, name, JOBREC_MAX) : NULL;
	if (text == NULL) {
		snprintf(why, wlen, "no record of job %u in the state directory", job);
		return -1;
	}
	if (gpumem_json_parse(text, strlen(text), &caps, &o, err, sizeof(err)) < 0 ||
	    gpumem_json_num(o, "v", &v) < 0 || v != JOBREC_V || member(o, "name", &r->name) < 0 ||
	    member(o, "policy", &r->policy) < 0 || member(o, "effective", &r->effective) < 0 ||
	    member(o, "site", &r->site) < 0 || member(o, "site_path", &r->site_path) < 0 ||
	    member(o, "rejected", &r->rejected) < 0 ||
	    member(o, "fail", &r->fail) < 0 || member(o, "mps", &r->mps) < 0 ||
	    member(o, "mps_gpus", &r->mps_gpus) < 0) {
		snprintf(why, wlen, "the record of job %u is not whole%s", job, v > 0 && v != JOBREC_V ?
			 " (written by another version of gpumem)" : "");
		gpumem_jobrec_free(r);
	} else {
		rv = 0;
	}
	json_object_put(o);
	free(text);
	return rv;
}

void gpumem_jobrec_free(struct gpumem_jobrec *r)
{
	free(r->name);
	free(r->policy);
	free(r->effective);
	free(r->site);
	free(r->site_path);
	free(r->rejected);
	free(r->fail);
	free(r->mps);
	free(r->mps_gpus);
	memset(r, 0, sizeof(*r));
}

void gpumem_jobrec_forget(int dfd, unsigned job, const char *node)
{
	char name[128];

	jobrec_name(name, sizeof(name), job, node);
	unlinkat(dfd, name, 0);
	jobrec_name(name, sizeof(name), job, NULL);
	unlinkat(dfd, name, 0);
}
