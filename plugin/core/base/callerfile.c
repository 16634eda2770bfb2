/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Files opened on a caller's word (callerfile.h).  The gpumem command may
 * be run by root on paths a user chose or could change (a report file, an
 * output file in the user's directory, a HOME or XDG_CACHE_HOME handed
 * on): nothing here follows a link that a user could have planted to make
 * root write or read elsewhere, and nothing written replaces a file in
 * place (a temporary file, then rename).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>
#include "callerfile.h"

/* PATH's directory into DIR and its last component into NAME; -1 (WHY) when it names no file. */
static int split(const char *path, char *dir, size_t dlen, char *name, size_t nlen, char *why,
		 size_t whylen)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;

	if (!*base || !strcmp(base, ".") || !strcmp(base, "..") || strlen(base) >= nlen ||
	    strlen(path) >= dlen) {
		snprintf(why, whylen, "names no file (a directory, or too long)");
		return -1;
	}
	snprintf(name, nlen, "%s", base);
	if (slash == NULL)
		snprintf(dir, dlen, ".");
	else if (slash == path)
		snprintf(dir, dlen, "/");
	else
		snprintf(dir, dlen, "%.*s", (int)(slash - path), path);
	return 0;
}

/* Root's walk: each component of PATH from / or the working directory, no link followed. */
static int walk_nofollow(const char *path, char *why, size_t whylen)
{
	char buf[4096], *save = NULL, *comp;
	int fd, sub;

	if (strlen(path) >= sizeof(buf)) {
		snprintf(why, whylen, "path too long");
		return -1;
	}
	snprintf(buf, sizeof(buf), "%s", path);
	fd = open(path[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (comp = strtok_r(buf, "/", &save); fd >= 0 && comp; comp = strtok_r(NULL, "/", &save)) {
		struct stat lst;

		sub = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			int e = errno;

			if (fstatat(fd, comp, &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lst.st_mode))
				snprintf(why, whylen, "'%s' in its path is a symbolic link: refused "
					 "as root (give the real path)", comp);
			else
				snprintf(why, whylen, "%s", strerror(e));
		}
		close(fd);
		fd = sub;
	}
	return fd;
}

int gpumem_caller_dir_open(const char *path, char *why, size_t whylen)
{
	int fd;

	if (geteuid() == 0)
		return walk_nofollow(path, why, whylen);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		snprintf(why, whylen, "%s", strerror(errno));
	return fd;
}

/* NAME in DFD may be written over: absent, or a regular file (never a link). */
static int replaceable(int dfd, const char *name, char *why, size_t whylen)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : (snprintf(why, whylen, "%s", strerror(errno)), -1);
	if (S_ISLNK(st.st_mode)) {
		snprintf(why, whylen, "is a symbolic link: refused (nothing is written through a "
			 "link; remove it or name another file)");
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "is not a regular file: refused");
		return -1;
	}
	return 0;
}

int gpumem_out_open(struct gpumem_out *o, const char *path, char *why, size_t whylen)
{
	char dir[4096];
	int fd = -1;

	memset(o, 0, sizeof(*o));
	o->dfd = -1;
	if (!strcmp(path, "-")) {
		o->f = stdout;
		return 0;
	}
	if (split(path, dir, sizeof(dir), o->name, sizeof(o->name), why, whylen) < 0 ||
	    (o->dfd = gpumem_caller_dir_open(dir, why, whylen)) < 0 ||
	    replaceable(o->dfd, o->name, why, whylen) < 0)
		goto fail;
	snprintf(o->tmp, sizeof(o->tmp), ".%.200s.%ld.tmp", o->name, (long)getpid());
	fd = openat(o->dfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0 || (o->f = fdopen(fd, "w")) == NULL) {
		snprintf(why, whylen, "cannot create a file in its directory: %s", strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlinkat(o->dfd, o->tmp, 0);
		}
		goto fail;
	}
	return 0;
fail:
	if (o->dfd >= 0)
		close(o->dfd);
	o->dfd = -1;
	return -1;
}

int gpumem_out_commit(struct gpumem_out *o, int keep, char *why, size_t whylen)
{
	int bad = ferror(o->f) != 0 || !keep;

	why[0] = '\0';
	errno = 0;
	if (o->dfd < 0)
		bad = fflush(o->f) != 0 || bad;
	else
		bad = fclose(o->f) != 0 || bad;
	if (bad)
		snprintf(why, whylen, "%s", strerror(errno ? errno : EIO));
	if (o->dfd >= 0) {
		/* Where OUT became a link since it was looked at, rename replaces the link itself. */
		if (!bad && (replaceable(o->dfd, o->name, why, whylen) < 0 ||
			     renameat(o->dfd, o->tmp, o->dfd, o->name) < 0)) {
			if (!why[0])
				snprintf(why, whylen, "%s", strerror(errno));
			bad = 1;
		}
		if (bad)
			unlinkat(o->dfd, o->tmp, 0);
		close(o->dfd);
	}
	o->f = NULL;
	o->dfd = -1;
	return bad ? -1 : 0;
}

int gpumem_fs_as_owner(int dfd, struct gpumem_fs_ids *s, char *why, size_t whylen)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	struct stat st;
	gid_t gid;

	memset(s, 0, sizeof(*s));
	/* Not root, or already another's (setfsuid(-1) only reports it). */
	if (geteuid() != 0 || setfsuid((uid_t)-1) != 0)
		return 0;
	if (fstat(dfd, &st) < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		return -1;
	}
	if (st.st_uid == 0)
		return 0;
	gid = getpwuid_r(st.st_uid, &pw, buf, sizeof(buf), &res) == 0 && res ? pw.pw_gid :
		st.st_gid;
	s->ngroups = getgroups(sizeof(s->groups) / sizeof(s->groups[0]), s->groups);
	if (s->ngroups < 0 || setgroups(0, NULL) < 0) {
		snprintf(why, whylen, "cannot take its owner's rights: %s", strerror(errno));
		return -1;
	}
	setfsgid(gid);
	setfsuid(st.st_uid);
	s->switched = 1;
	if (setfsuid((uid_t)-1) != (int)st.st_uid || setfsgid((gid_t)-1) != (int)gid) {
		gpumem_fs_restore(s);
		snprintf(why, whylen, "cannot take its owner's rights (uid %u)", (unsigned)st.st_uid);
		return -1;
	}
	return 0;
}

void gpumem_fs_restore(struct gpumem_fs_ids *s)
{
	if (!s->switched)
		return;
	setfsuid(geteuid());
	setfsgid(getegid());
	if (setgroups((size_t)s->ngroups, s->groups) < 0)
		abort();        /* root with no groups is safer than a half-restored identity */
	s->switched = 0;
}

int gpumem_caller_file_open(const char *path, char *why, size_t whylen)
{
	char dir[4096], name[256];
	struct gpumem_fs_ids ids = { 0 };
	int dfd, fd = -1;

	if (split(path, dir, sizeof(dir), name, sizeof(name), why, whylen) < 0 ||
	    (dfd = gpumem_caller_dir_open(dir, why, whylen)) < 0)
		return -1;
	if (gpumem_fs_as_owner(dfd, &ids, why, whylen) == 0) {
		fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (fd < 0 && errno == ELOOP)
			snprintf(why, whylen, "is a symbolic link: refused (a link is never followed)");
		else if (fd < 0)
			snprintf(why, whylen, "%s", strerror(errno));
		gpumem_fs_restore(&ids);
	}
	close(dfd);
	return fd;
}

/* Component NAME in FD, made 0700 when missing, the uid's alone; its descriptor, or -1. */
static int own_sub(int fd, const char *name, uid_t uid, char *why, size_t whylen)
{
	struct stat st;
	int sub;

	if (mkdirat(fd, name, 0700) < 0 && errno != EEXIST) {
		snprintf(why, whylen, "cannot make %s: %s", name, strerror(errno));
		return -1;
	}
	sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0) {
		snprintf(why, whylen, "%s: %s", name, errno == ELOOP || errno == ENOTDIR ?
			 "a symbolic link or not a directory: refused" : strerror(errno));
		return -1;
	}
	if (fstat(sub, &st) < 0 || st.st_uid != uid || (st.st_mode & 022)) {
		snprintf(why, whylen, "%s is not yours alone (owner or mode): refused", name);
		close(sub);
		return -1;
	}
	return sub;
}

int gpumem_cache_dir_open(char *why, size_t whylen)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char base[4096], dir[4096], name[256];
	const char *subs[3] = { NULL, ".cache", "gpumem" };
	uid_t uid = getuid();
	struct stat st;
	int fd, sub, i = 1;
	size_t n;

	if (uid != geteuid()) {
		snprintf(why, whylen, "real and effective uid differ: no cache");
		return -1;
	}
	if (!(xdg && xdg[0] == '/') && !(home && home[0] == '/')) {
		snprintf(why, whylen, "neither XDG_CACHE_HOME nor HOME is an absolute path");
		return -1;
	}
	snprintf(base, sizeof(base), "%s", xdg && xdg[0] == '/' ? xdg : home);
	for (n = strlen(base); n > 1 && base[n - 1] == '/'; n--)
		base[n - 1] = '\0';
	if (xdg && xdg[0] == '/') {
		/* XDG_CACHE_HOME itself is made when missing, like ~/.cache, and is the uid's alone. */
		if (split(base, dir, sizeof(dir), name, sizeof(name), why, whylen) < 0)
			return -1;
		subs[0] = name;
		subs[1] = NULL;
		i = 0;
		fd = gpumem_caller_dir_open(dir, why, whylen);
	} else {
		fd = gpumem_caller_dir_open(base, why, whylen);
		if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != uid)) {
			snprintf(why, whylen, "%s is not owned by uid %u: no cache there", base,
				 (unsigned)uid);
			close(fd);
			fd = -1;
		}
	}
	for (; fd >= 0 && i < 3; i++) {
		if (subs[i] == NULL)
			continue;
		sub = own_sub(fd, subs[i], uid, why, whylen);
		close(fd);
		fd = sub;
	}
	return fd;
}
