/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Root's side of the trust boundary (see trust.h and doc/HARDENING.md):
 * one escaper for every user string that root logs or reports, one
 * cleaner for every user string the CLI prints to a terminal, and one way
 * to open a directory root writes into.  Kept free of Slurm so the unit
 * tests and the CLI can use it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "trust.h"

/* Length of the valid UTF-8 sequence at S (2-4 bytes) and its code point; 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, unsigned *cpp)
{
	unsigned cp;
	size_t n;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;       /* overlong, out of range, surrogate */
	*cpp = cp;
	return n;
}

/* C1 controls, line/paragraph separators, bidirectional marks, overrides and isolates. */
static int cp_unsafe(unsigned cp)
{
	return cp < 0xa0 || cp == 0x2028 || cp == 0x2029 || cp == 0x200e || cp == 0x200f ||
		cp == 0x061c || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* Length of the valid UTF-8 sequence at S (2-4 bytes) that is safe to show, else 0. */
static size_t utf8_ok(const unsigned char *s)
{
	unsigned cp = 0;
	size_t n = utf8_seq(s, &cp);

	return n && !cp_unsafe(cp) ? n : 0;
}

char *gpumem_escape(char *out, size_t len, const char *in)
{
	const unsigned char *s = (const unsigned char *)(in ? in : "(null)");
	size_t o = 0;

	if (len == 0)
		return out;
	while (*s) {
		char esc[8];
		size_t n = 1;
		const char *piece = esc;

		if (*s == '\n' || *s == '\r' || *s == '\t' || *s == '\\') {
			esc[0] = '\\';
			esc[1] = *s == '\n' ? 'n' : *s == '\r' ? 'r' : *s == '\t' ? 't' : '\\';
			esc[2] = '\0';
		} else if (*s >= 0x20 && *s < 0x7f) {
			esc[0] = (char)*s;
			esc[1] = '\0';
		} else if (*s >= 0x80 && (n = utf8_ok(s)) > 0) {
			piece = (const char *)s;
		} else {
			n = 1;
			snprintf(esc, sizeof(esc), "\\x%02x", *s);
		}
		{
			size_t plen = piece == esc ? strlen(esc) : n;

			if (o + plen >= len)
				break;  /* never half an escape or half a character */
			memcpy(out + o, piece, plen);
			o += plen;
		}
		s += n;
	}
	out[o] = '\0';
	return out;
}

size_t gpumem_term_clean(const char *in, char *out, size_t outlen, size_t max)
{
	const unsigned char *s = (const unsigned char *)(in ? in : "");
	size_t o = 0, chars = 0;

	if (outlen == 0)
		return 0;
	while (*s && chars < max) {
		unsigned cp = 0;
		size_t n = *s >= 0x80 ? utf8_seq(s, &cp) : 1;
		int ok = *s >= 0x80 ? n && !cp_unsafe(cp) : *s >= 0x20 && *s != 0x7f;

		if (n == 0)
			n = 1;          /* invalid: one '?' a byte; an unsafe character: one '?' */
		if (o + (ok ? n : 1) + 1 > outlen)
			break;
		if (ok) {
			memcpy(out + o, s, n);
			o += n;
		} else {
			out[o++] = '?';
		}
		s += n;
		chars++;
	}
	out[o] = '\0';
	return chars;
}

int gpumem_fd_above_stdio(int fd)
{
	int nfd;

	if (fd < 0 || fd > 2)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return nfd;
}

char *gpumem_escape_fmt(char *out, size_t len, const char *fmt, ...)
{
	char raw[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	return gpumem_escape(out, len, raw);
}

/* Is the directory open at FD one that root may go through (LAST: write into)? */
static int dir_ok(int fd, const char *shown, int last, char *why, size_t whylen)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		snprintf(why, whylen, "%s: %s", shown, strerror(errno));
		return 0;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "%s is not a directory", shown);
		return 0;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(why, whylen, "%s is owned by uid %u, not root", shown,
			 (unsigned)st.st_uid);
		return 0;
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && (last || !(st.st_mode & S_ISVTX))) {
		snprintf(why, whylen, "%s is writable by %s (mode %04o)%s", shown,
			 st.st_mode & S_IWOTH ? "others" : "its group",
			 (unsigned)(st.st_mode & 07777),
			 last ? "" : " without the sticky bit");
		return 0;
	}
	return 1;
}

int gpumem_dir_open_safe(const char *path, char *why, size_t whylen)
{
	char buf[4096], shown[4096];
	char *save = NULL, *comp, *next;
	int fd, sub;

	if (path == NULL || path[0] != '/' || strlen(path) >= sizeof(buf)) {
		snprintf(why, whylen, "not an absolute path");
		return -1;
	}
	snprintf(buf, sizeof(buf), "%s", path);
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !dir_ok(fd, "/", 0, why, whylen))
		goto fail;
	snprintf(shown, sizeof(shown), "%s", "");
	comp = strtok_r(buf, "/", &save);
	while (comp) {
		next = strtok_r(NULL, "/", &save);
		if (!strcmp(comp, "..") || !strcmp(comp, ".")) {
			snprintf(why, whylen, "'%s' in the path", comp);
			goto fail;
		}
		snprintf(shown + strlen(shown), sizeof(shown) - strlen(shown), "/%s", comp);
		sub = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 && errno == ENOENT && next == NULL) {
			/* Only the last component is ever made, and made by root. */
			if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST) {
				snprintf(why, whylen, "cannot create %s: %s", shown, strerror(errno));
				goto fail;
			}
			sub = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (sub < 0) {
			struct stat lst;

			if (fstatat(fd, comp, &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lst.st_mode))
				snprintf(why, whylen, "%s is a symbolic link", shown);
			else
				snprintf(why, whylen, "%s: %s", shown, strerror(errno));
			goto fail;
		}
		close(fd);
		fd = sub;
		if (!dir_ok(fd, shown, next == NULL, why, whylen))
			goto fail;
		comp = next;
	}
	/* Never 0-2: a child's dup2 onto its standard streams would replace it. */
	return gpumem_fd_above_stdio(fd);
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

int gpumem_dir_open_mode(const char *path, mode_t mode, char *why, size_t whylen)
{
	struct stat st;
	int fd = gpumem_dir_open_safe(path, why, whylen);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || ((st.st_mode & 077 & ~mode) && fchmod(fd, mode) < 0)) {
		snprintf(why, whylen, "%s has mode %04o and cannot be made %04o: %s", path,
			 (unsigned)(st.st_mode & 07777), (unsigned)mode, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

void gpumem_safe_name(char *s)
{
	for (; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9') && *s != '.' && *s != '-' && *s != '_')
			*s = '_';
}
