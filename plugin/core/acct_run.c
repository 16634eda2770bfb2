/*
 * Running Slurm's client commands (sacct, sacctmgr) for the accounting
 * record (acct.h): fork and exec without a shell, output captured and
 * capped, bounded in time so an unreachable slurmdbd cannot hang an epilog.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "acct.h"

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void child(char *const argv[], int out, int err)
{
	int null = open("/dev/null", O_RDONLY);

	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(127);
	execvp(argv[0], argv);
	dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* Read both pipes until they close or the deadline passes: 0, or -1 on timeout. */
static int drain(int fds[2], char *out, size_t cap, char *errbuf, size_t errcap,
		 long long deadline)
{
	size_t n[2] = { 0, 0 };
	char *buf[2] = { out, errbuf };
	size_t room[2] = { cap - 1, errcap - 1 };
	int open_fds = 2;

	while (open_fds > 0) {
		struct pollfd p[2] = { { fds[0], POLLIN, 0 }, { fds[1], POLLIN, 0 } };
		long long left = deadline - now_ms();
		char sink[4096];

		if (left <= 0)
			return -1;
		if (poll(p, 2, (int)left) < 0 && errno != EINTR)
			return -1;
		for (int i = 0; i < 2; i++) {
			ssize_t r;

			if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (n[i] < room[i])
				r = read(fds[i], buf[i] + n[i], room[i] - n[i]);
			else
				r = read(fds[i], sink, sizeof(sink));
			if (r > 0 && n[i] < room[i])
				n[i] += (size_t)r;
			if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
				p[i].fd = -1;
				fds[i] = -1;
				open_fds--;
			}
		}
	}
	out[n[0]] = '\0';
	errbuf[n[1]] = '\0';
	return 0;
}

int gpumem_run_capture(char *const argv[], char *out, size_t cap, char *errline,
		       size_t errlen, int timeout_s)
{
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, fds[2], status = 0, rv = -1;
	char errbuf[1024];
	pid_t pid;

	out[0] = '\0';
	errline[0] = '\0';
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		snprintf(errline, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(errline, errlen, "fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0)
		child(argv, po[1], pe[1]);
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	fds[0] = po[0];
	fds[1] = pe[0];
	if (drain(fds, out, cap, errbuf, sizeof(errbuf), now_ms() + 1000LL * timeout_s) < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		snprintf(errline, errlen, "%s: no answer in %d s: killed", argv[0], timeout_s);
		goto fail;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	errbuf[strcspn(errbuf, "\n")] = '\0';
	snprintf(errline, errlen, "%s", errbuf);
	if (!WIFEXITED(status)) {
		snprintf(errline, errlen, "%s: killed by signal %d", argv[0], WTERMSIG(status));
		goto fail;
	}
	rv = WEXITSTATUS(status);
fail:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	return rv;
}
