/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What root knows of a process from /proc, to act on the same process
 * later (mps.c, sampler.c, checkwatch.c): its start time (with its pid, the
 * process's identity: a pid can be reused, the pair cannot), its real uid,
 * its parent, its command line.
 */
#include <fcntl.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proc.h"

/* /proc/PID/stat into BUF, and where its fields after the command start; NULL. */
static const char *stat_fields(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	/* After the command's closing parenthesis: state is field 3. */
	return strrchr(buf, ')') ? strrchr(buf, ')') + 1 : NULL;
}

unsigned long long gpumem_proc_start_time(pid_t pid)
{
	char buf[1024], state = 0;
	const char *p = stat_fields(pid, buf, sizeof(buf));
	unsigned long long t = 0;

	/* Start time is field 22; a zombie has ended (only its parent's wait is missing). */
	if (p == NULL || sscanf(p, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u "
			       "%*d %*d %*d %*d %*d %*d %llu", &state, &t) != 2 || state == 'Z')
		return 0;
	return t;
}

pid_t gpumem_proc_parent(pid_t pid)
{
	char buf[1024];
	const char *p = stat_fields(pid, buf, sizeof(buf));
	int ppid = 0;

	if (p == NULL || sscanf(p, " %*c %d", &ppid) != 1)
		return 0;
	return ppid;
}

long gpumem_proc_uid(pid_t pid)
{
	char path[64], buf[2048], *u;
	ssize_t n;
	long uid = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	u = strstr(buf, "\nUid:");
	if (u)
		uid = strtol(u + 5, NULL, 10);
	return uid;
}

int gpumem_proc_alive(pid_t pid, unsigned long long start)
{
	return pid > 0 && start && gpumem_proc_start_time(pid) == start;
}

void gpumem_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };

	nanosleep(&ts, NULL);
}

int gpumem_proc_wait_gone(pid_t pid, unsigned long long start, long ms)
{
	ms = gpumem_proc_left_ms(ms);   /* never past the process's deadline (proc.h) */
	for (long waited = 0; gpumem_proc_alive(pid, start) && waited < ms; waited += 2)
		gpumem_sleep_ms(2);
	return !gpumem_proc_alive(pid, start);
}

int gpumem_proc_cmdline(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	if (len < 2)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 2);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = buf[n + 1] = '\0';
	return (int)n;
}
