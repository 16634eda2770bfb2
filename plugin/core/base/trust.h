/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What root does with things a user could have touched: strings a user
 * chose are escaped before they reach a log, a report or scontrol; a
 * directory root writes into is opened without following links and only
 * when no user could have made or could change it.
 */
#ifndef GPUMEM_TRUST_H
#define GPUMEM_TRUST_H
#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Copy IN to OUT (LEN bytes, always NUL-terminated, cut at a whole escape)
 * with every byte that is not printable ASCII or part of valid, printable
 * UTF-8 made visible: \n \r \t \\ and \xNN (ESC is \x1b, C1 controls and
 * invalid UTF-8 byte by byte).  A backslash is doubled, so an escape in the
 * output always comes from here.  Returns OUT.
 */
char *gpumem_escape(char *out, size_t len, const char *in);
/*
 * Copy IN for a terminal, at most MAX characters into OUT (OUTLEN bytes,
 * NUL-terminated, never half a character): C0 controls, DEL, C1 controls,
 * invalid or overlong UTF-8, line separators and bidirectional overrides
 * each become '?'.  Every user-facing string the CLI prints goes through
 * it.  Returns the characters written (display columns).
 */
size_t gpumem_term_clean(const char *in, char *out, size_t outlen, size_t max);
/*
 * FD moved to 3 or above (close-on-exec) when it is 0, 1 or 2: a directory
 * root keeps open must never be a standard stream, which a forked child
 * replaces with dup2.  Returns the fd, or -1 (FD closed).
 */
int gpumem_fd_above_stdio(int fd);
/* File names from what a node or GPU is called: every byte but [A-Za-z0-9._-] becomes '_'. */
void gpumem_safe_name(char *s);
/* vsnprintf FMT into OUT, then escape the whole line in place. */
char *gpumem_escape_fmt(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Open directory PATH (absolute) for writing by root, creating its last
 * component (mode 0755) when missing.  Every component is opened with
 * O_NOFOLLOW from "/" (a symbolic link anywhere is refused) and must be
 * owned by root; a component other than the last may be writable by group
 * or others only with the sticky bit (like /tmp), and the last one not at
 * all.  Returns an O_DIRECTORY descriptor, or -1 with the reason in WHY.
 */
int gpumem_dir_open_safe(const char *path, char *why, size_t whylen);
/*
 * gpumem_dir_open_safe, then a directory whose mode gives group or others
 * more than MODE allows (one made now, or left by an older gpumem) is
 * made MODE (fchmod: root's state that only root may read, 0700).  -1,
 * with the reason in WHY, when it cannot be.
 */
int gpumem_dir_open_mode(const char *path, mode_t mode, char *why, size_t whylen);
#endif
