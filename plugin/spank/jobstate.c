/*
 * Root's per-node state directory (see jobstate.h).  Everything here is
 * done relative to one directory fd opened with O_NOFOLLOW and checked for
 * owner and mode, so a user who made the path first (a link, their own
 * directory) gets it refused, never written through.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>
#include "gpus.h"
#include "jobstate.h"
#include "trust.h"

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
	/* Every component without following links, root's, not writable by others. */
	return gpumem_dir_open_safe(dir, err, elen);
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

	snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, (int)getpid());
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (write(fd, text, len) == (ssize_t)len && fchmod(fd, 0644) == 0 && close(fd) == 0) {
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

int gpumem_probe_cache_merge(int dfd, const char *out, char list[][64], int n)
{
	char *old = gpumem_state_read(dfd, GPUMEM_PROBE_CACHE, 256 * 1024);
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
	rv = buf ? gpumem_state_write(dfd, GPUMEM_PROBE_CACHE, buf) : 0;
	free(buf);
	return rv;
oom:
	free(old);
	free(buf);
	return -1;
}

/* mkdir NAME under DFD, owned by uid/gid, 0700; never through a link. */
static int user_dir(int dfd, const char *name, uid_t uid, gid_t gid)
{
	if (mkdirat(dfd, name, 0700) < 0 && errno != EEXIST)
		return -1;
	return fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW);
}

int gpumem_state_mps_dir(int dfd, const char *dir, unsigned job, uid_t uid, gid_t gid,
			 char *path, size_t plen, char *err, size_t elen)
{
	char name[64];
	struct stat st;
	int fd;

	snprintf(name, sizeof(name), "mps.%u", job);
	snprintf(path, plen, "%s/%s", dir, name);
	if (mkdirat(dfd, name, 0700) < 0) {
		snprintf(err, elen, "%s: %s", path, strerror(errno));
		return -1;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* pipe/ and log/ are made while root still owns their parent. */
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != 0 || user_dir(fd, "pipe", uid, gid) < 0 ||
	    user_dir(fd, "log", uid, gid) < 0 || fchown(fd, uid, gid) < 0) {
		snprintf(err, elen, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int gpumem_state_mps_find(const char *dir, unsigned job, uid_t uid, char *path, size_t plen)
{
	struct stat st;

	snprintf(path, plen, "%s/mps.%u", dir, job);
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid ? 0 : -1;
}

#define MPS_READY "mps.%u.ready"
#define MPS_FAILED "mps.%u.failed"

int gpumem_state_mps_record(int dfd, unsigned job, const char *why)
{
	char name[64];

	snprintf(name, sizeof(name), why ? MPS_FAILED : MPS_READY, job);
	return gpumem_state_write(dfd, name, why ? why : "");
}

int gpumem_state_mps_wait(int dfd, unsigned job, long timeout_ms, char *why, size_t wlen)
{
	const struct timespec tick = { 0, 1000000 };    /* 1 ms */
	char ready[64], failed[64], *text;

	snprintf(ready, sizeof(ready), MPS_READY, job);
	snprintf(failed, sizeof(failed), MPS_FAILED, job);
	for (long waited = 0;; waited++) {
		if ((text = gpumem_state_read(dfd, ready, 64)) != NULL) {
			free(text);
			return 0;
		}
		if ((text = gpumem_state_read(dfd, failed, 2048)) != NULL) {
			snprintf(why, wlen, "%s", text);
			why[strcspn(why, "\n")] = '\0';
			free(text);
			return -1;
		}
		if (waited >= timeout_ms)
			return -2;
		nanosleep(&tick, NULL);
	}
}

void gpumem_state_mps_forget(int dfd, unsigned job)
{
	char name[64];

	snprintf(name, sizeof(name), MPS_READY, job);
	unlinkat(dfd, name, 0);
	snprintf(name, sizeof(name), MPS_FAILED, job);
	unlinkat(dfd, name, 0);
}
