/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Diagnostics (diag.c): a list of problems, each with its file, line and
 * column, that every reader of a user's or the site's file fills and its
 * caller prints, joins or logs.  Base: the file readers below the policy
 * engine (fileio.c) report through it too.
 */
#ifndef GPUMEM_DIAG_H
#define GPUMEM_DIAG_H
#include <stdio.h>

enum gpumem_sev { GPUMEM_SEV_ERROR, GPUMEM_SEV_WARNING };

struct gpumem_diag {
	struct gpumem_diag *next;
	enum gpumem_sev sev;
	int line, col;          /* 1-based; 0 when the problem has no place */
	char *file;
	char *msg;
};

struct gpumem_diags {
	struct gpumem_diag *head, *tail;
	int nerrors, nwarnings;
};

void gpumem_diag_add(struct gpumem_diags *d, enum gpumem_sev sev, const char *file,
		     int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
/* One line per diagnostic: "FILE:LINE:COL: error: MESSAGE". */
void gpumem_diags_print(const struct gpumem_diags *d, FILE *out);
/* Same lines joined with '\n' in a malloc'd string (NULL when empty). */
char *gpumem_diags_join(const struct gpumem_diags *d, int errors_only);
void gpumem_diags_free(struct gpumem_diags *d);
#endif
