/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Root's watch over the node's warm check server (checkserve.c), so that
 * a server stuck in the driver (or stopped) never holds a node: its
 * record, state_dir/check.<HOST>.server (root's, 0600; statefiles.h),
 * "PID START MISSES BUSY_UNTIL", read and written under the starter's
 * lock (check.<HOST>.lock):
 *   PID START   the server: the pid the hook forked (or the one its hello
 *               named) and its start time; the pair names one process, a
 *               pid alone could be reused;
 *   MISSES      hellos it missed in a row (none within the hook's wait,
 *               or its listen queue full);
 *   BUSY_UNTIL  CLOCK_MONOTONIC ms until which a hook is being served (or
 *               the fresh server is in its cuInit): a hello missed then
 *               is a hook queued behind a busy server, not a stuck one,
 *               and does not count.
 * At GPUMEM_CS_MISSES in a row the server is ended, once the recorded pid
 * is checked to be that very process, check_user's, running
 * `CHECK --serve` (never an arbitrary pid; signalled through a pidfd taken
 * before the check), and its socket is removed either way: the next hook
 * starts a fresh one.  Nothing here is within the user's reach: state_dir
 * is root's, 0700.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "checkwatch.h"
#include "log.h"
#include "core_base.h"
#include "statedir.h"
#include "statefiles.h"

#define REC_LOCK_MS 1000        /* a record's update waits this long for the lock (held for ms) */

struct rec {
	long pid;
	unsigned long long start;
	int misses;
	long busy_until;
};

int gpumem_cs_lock(const struct gpumem_check_ctx *c, long wait_ms, char *why, size_t wlen)
{
	char lname[128];
	long until;
	int lk;

	snprintf(why, wlen, "state_dir is not open");
	if (c->state.dfd < 0 || gpumem_sf_check(lname, sizeof(lname), GPUMEM_SF_CHECK_LOCK) < 0)
		return -1;
	lk = openat(c->state.dfd, lname, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	until = gpumem_mono_ms() + gpumem_proc_left_ms(wait_ms);
	while (lk >= 0 && flock(lk, LOCK_EX | LOCK_NB) < 0 && gpumem_mono_ms() < until)
		gpumem_sleep_ms(20);
	if (lk < 0 || flock(lk, LOCK_EX | LOCK_NB) < 0) {
		snprintf(why, wlen, "cannot take state_dir/%s", lname);
		if (lk >= 0)
			close(lk);
		return -1;
	}
	return lk;
}

/* The record into R (all zero where there is none, or it does not parse). */
static void rec_read(const struct gpumem_check_ctx *c, struct rec *r)
{
	char name[128], *t = NULL;

	memset(r, 0, sizeof(*r));
	if (gpumem_sf_check(name, sizeof(name), GPUMEM_SF_CHECK_SERVER) < 0 ||
	    !(t = gpumem_state_read(c->state.dfd, name, 256)))
		return;
	if (sscanf(t, "%ld %llu %d %ld", &r->pid, &r->start, &r->misses, &r->busy_until) != 4 ||
	    r->pid < 0 || r->misses < 0)
		memset(r, 0, sizeof(*r));
	free(t);
}

static void rec_write(const struct gpumem_check_ctx *c, const struct rec *r)
{
	char name[128], text[128];

	snprintf(text, sizeof(text), "%ld %llu %d %ld\n", r->pid, r->start, r->misses,
		 r->busy_until);
	if (gpumem_sf_check(name, sizeof(name), GPUMEM_SF_CHECK_SERVER) < 0 ||
	    gpumem_state_write(c->state.dfd, name, text) < 0)
		gpumem_error("gpumem: cannot write state_dir/%s: the warm check server is not "
			     "watched", name);
}

/* The lock taken and the record read into R: the lock's fd, or -1 (nothing read). */
static int rec_locked(const struct gpumem_check_ctx *c, struct rec *r)
{
	char why[200];
	int lk = gpumem_cs_lock(c, REC_LOCK_MS, why, sizeof(why));

	if (lk >= 0)
		rec_read(c, r);
	return lk;
}

void gpumem_cs_started(const struct gpumem_check_ctx *c, pid_t pid, long busy_ms)
{
	struct rec r = { pid, gpumem_proc_start_time(pid), 0, gpumem_mono_ms() + busy_ms };

	rec_write(c, &r);
}

void gpumem_cs_serving(const struct gpumem_check_ctx *c, pid_t pid, long busy_ms)
{
	struct rec r;
	int lk = rec_locked(c, &r);

	if (lk < 0)
		return;
	if (r.pid != pid || !gpumem_proc_alive(pid, r.start)) {
		r.pid = pid;
		r.start = gpumem_proc_start_time(pid);
	}
	r.misses = 0;
	r.busy_until = gpumem_mono_ms() + busy_ms;
	rec_write(c, &r);
	close(lk);
}

void gpumem_cs_served(const struct gpumem_check_ctx *c)
{
	struct rec r;
	int lk = rec_locked(c, &r);

	if (lk < 0)
		return;
	if (r.busy_until) {
		r.busy_until = 0;
		rec_write(c, &r);
	}
	close(lk);
}

/* Is R still that process, check_user's, running `CHECK --serve`?  0, or -1 with WHY. */
static int is_server(const struct gpumem_check_ctx *c, const struct rec *r, char *why, size_t wlen)
{
	const char *want = strrchr(c->as.check, '/'), *base;
	char cmd[4096];
	int n;

	want = want ? want + 1 : c->as.check;
	if (r->pid <= 1 || !gpumem_proc_alive((pid_t)r->pid, r->start)) {
		snprintf(why, wlen, "no server of record runs");
		return -1;
	}
	if (gpumem_proc_uid((pid_t)r->pid) != (long)c->as.uid) {
		snprintf(why, wlen, "pid %ld is not check_user's: not signalled", r->pid);
		return -1;
	}
	n = gpumem_proc_cmdline((pid_t)r->pid, cmd, sizeof(cmd));
	base = n > 0 ? strrchr(cmd, '/') : NULL;
	base = base ? base + 1 : cmd;
	if (n <= 0 || strcmp(base, want) || strcmp(cmd + strlen(cmd) + 1, "--serve")) {
		snprintf(why, wlen, "pid %ld is not `%s --serve`: not signalled", r->pid, want);
		return -1;
	}
	return 0;
}

/*
 * End the server of record R, checked first (is_server) through a pidfd
 * taken before the check, so that the process checked is the one
 * signalled.  0, or -1 with WHY.
 */
static int end_server(const struct gpumem_check_ctx *c, const struct rec *r, char *why, size_t wlen)
{
	int rv = -1, pfd = -1;

#ifdef SYS_pidfd_open
	if (r->pid > 1)
		pfd = (int)syscall(SYS_pidfd_open, (pid_t)r->pid, 0);
#endif
	if (is_server(c, r, why, wlen) < 0)
		goto out;
#ifdef SYS_pidfd_send_signal
	if (pfd >= 0)
		rv = (int)syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
	else
#endif
		rv = kill((pid_t)r->pid, SIGKILL);
	if (rv < 0)
		snprintf(why, wlen, "pid %ld could not be signalled", r->pid);
out:
	if (pfd >= 0)
		close(pfd);
	return rv;
}

void gpumem_cs_missed(const struct gpumem_check_ctx *c, const char *why)
{
	char note[300], name[128];
	struct rec r;
	int lk = rec_locked(c, &r);

	if (lk < 0)
		return;
	if (gpumem_mono_ms() < r.busy_until)
		goto out;       /* queued behind a hook being served: not stuck */
	if (++r.misses < GPUMEM_CS_MISSES) {
		rec_write(c, &r);
		goto out;
	}
	if (end_server(c, &r, note, sizeof(note)) == 0)
		snprintf(note, sizeof(note), "pid %ld ended (SIGKILL)", r.pid);
	if (gpumem_sf_check(name, sizeof(name), GPUMEM_SF_CHECK_SOCK) == 0)
		unlinkat(c->state.dfd, name, 0);
	if (gpumem_sf_check(name, sizeof(name), GPUMEM_SF_CHECK_SERVER) == 0)
		unlinkat(c->state.dfd, name, 0);
	gpumem_error("gpumem: job %u: the warm check server missed its hello %d times in a row "
		     "(last: %s): %s; its socket removed, the next check starts a fresh one",
		     c->job.id, r.misses, why, note);
out:
	close(lk);
}
