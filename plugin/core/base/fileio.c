/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading a policy or site file without trusting it: only regular files,
 * opened with O_NONBLOCK so a FIFO cannot hang us, size-capped so a huge
 * file is refused at once.  The caller is responsible for doing this with
 * the right privileges (the plugin reads user files as the user).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fileio.h"

int gpumem_read_fd(int fd, char *buf, size_t room, size_t *len)
{
	*len = 0;
	while (*len < room) {
		ssize_t n = read(fd, buf + *len, room - *len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		*len += (size_t)n;
	}
	return 0;
}

int gpumem_read_file(const char *path, char **bufp, size_t *lenp, struct gpumem_diags *d)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	*bufp = NULL;
	*lenp = 0;
	if (fd < 0) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, path, 0, 0, "cannot open: %s", strerror(errno));
		return -1;
	}
	return gpumem_read_opened(fd, path, bufp, lenp, d);
}

int gpumem_read_opened(int fd, const char *path, char **bufp, size_t *lenp,
		       struct gpumem_diags *d)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int rv = -1;

	*bufp = NULL;
	*lenp = 0;
	if (fstat(fd, &st) < 0) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, path, 0, 0, "cannot stat: %s", strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, path, 0, 0, "is a directory, not a policy file");
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, path, 0, 0,
				"not a regular file (FIFO, socket or device): refused");
		goto fail;
	}
	if (st.st_size > GPUMEM_MAX_FILE_BYTES) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, path, 0, 0,
				"file is %lld bytes, larger than the %d-byte limit",
				(long long)st.st_size, GPUMEM_MAX_FILE_BYTES);
		goto fail;
	}
	buf = malloc(GPUMEM_MAX_FILE_BYTES + 2);
	if (buf == NULL) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, path, 0, 0, "out of memory");
		goto fail;
	}
	/* Read up to one byte past the cap: the file may grow after fstat. */
	if (gpumem_read_fd(fd, buf, GPUMEM_MAX_FILE_BYTES + 1, &len) < 0) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, path, 0, 0, "read failed: %s", strerror(errno));
		goto fail;
	}
	if (len > GPUMEM_MAX_FILE_BYTES) {
		gpumem_diag_add(d, GPUMEM_SEV_ERROR, path, 0, 0,
				"file is larger than the %d-byte limit", GPUMEM_MAX_FILE_BYTES);
		goto fail;
	}
	buf[len] = '\0';
	*bufp = buf;
	*lenp = len;
	buf = NULL;
	rv = 0;
fail:
	free(buf);
	close(fd);
	return rv;
}
