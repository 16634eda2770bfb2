/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Capped file reads (fileio.c): a policy, site or other small file read
 * without trusting it, its errors named in diagnostics (diag.h).
 */
#ifndef GPUMEM_FILEIO_H
#define GPUMEM_FILEIO_H
#include <stddef.h>
#include "diag.h"

/* The cap on a policy or site file (and what gpumem_read_file reads). */
#define GPUMEM_MAX_FILE_BYTES   (64 * 1024)

/*
 * Read a file safely (regular file only, size-capped, no blocking on FIFOs)
 * into a malloc'd, NUL-terminated buffer.  Errors name the path.
 */
int gpumem_read_file(const char *path, char **buf, size_t *len, struct gpumem_diags *d);
/* The same for FD, already opened (and closed here), its errors naming PATH. */
int gpumem_read_opened(int fd, const char *path, char **buf, size_t *len,
		       struct gpumem_diags *d);
/*
 * Read FD until end of file or ROOM bytes into BUF (retrying EINTR): 0 and
 * *len, or -1 with errno.  Callers give one byte more than they accept, so
 * a file that grew past its cap shows as *len over it.
 */
int gpumem_read_fd(int fd, char *buf, size_t room, size_t *len);
#endif
