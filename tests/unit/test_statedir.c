/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugin/spank/state/statedir.c: root's state directory is root's alone (issue
 * 32, finding 5): made 0700, a looser one made so, files written 0600.
 * Run as anyone: the safe open accepts a directory of the caller's own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "statedir.h"
#include "tap.h"

static unsigned mode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0;
}

int main(void)
{
	char base[] = "/tmp/gpumem-test-statedir.XXXXXX", dir[256], file[300], err[600], *text;
	int fd;

	if (mkdtemp(base) == NULL)
		return 1;
	umask(022);
	snprintf(dir, sizeof(dir), "%s/state", base);
	ok(gpumem_state_open(dir, 0, err, sizeof(err)) < 0, "a step never makes the directory");
	fd = gpumem_state_open(dir, 1, err, sizeof(err));
	ok(fd >= 0, "the prolog makes it (%s)", fd < 0 ? err : "ok");
	is_int(mode_of(dir), 0700, "... mode 0700: no one else lists it");
	ok(gpumem_state_write(fd, "job7.rec", "{}") == 0, "a record is written");
	snprintf(file, sizeof(file), "%s/job7.rec", dir);
	is_int(mode_of(file), 0600, "... mode 0600: no one else reads it");
	text = gpumem_state_read(fd, "job7.rec", 64);
	is_str(text ? text : "(null)", "{}", "... and read back");
	free(text);
	close(fd);
	chmod(dir, 0755);
	fd = gpumem_state_open(dir, 0, err, sizeof(err));
	ok(fd >= 0, "one left 0755 (an older gpumem) opens");
	is_int(mode_of(dir), 0700, "... and is made 0700");
	if (fd >= 0)
		close(fd);
	chmod(dir, 0775);
	ok(gpumem_state_open(dir, 0, err, sizeof(err)) < 0, "one its group may write is refused");
	like(err, "writable by its group", "... saying why");
	unlink(file);
	rmdir(dir);
	rmdir(base);
	return tap_done();
}
