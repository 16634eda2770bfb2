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

/*
 * Copy IN to OUT (LEN bytes, always NUL-terminated, cut at a whole escape)
 * with every byte that is not printable ASCII or part of valid, printable
 * UTF-8 made visible: \n \r \t \\ and \xNN (ESC is \x1b, C1 controls and
 * invalid UTF-8 byte by byte).  A backslash is doubled, so an escape in the
 * output always comes from here.  Returns OUT.
 */
char *gpumem_escape(char *out, size_t len, const char *in);
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
#endif
