/*
 * Per-job MPS.  The daemon runs as the job's user, never root, with its
 * pipe and log directories in a private mkdtemp directory, so two jobs on
 * one node never share a server and nothing is left once the step ends.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "compat.h"
#include "log.h"
#include "mps.h"
#include "proc.h"

const char *gpumem_mps_find(const char *configured)
{
	static const char *const places[] = { "/usr/bin/nvidia-cuda-mps-control",
					      "/usr/local/bin/nvidia-cuda-mps-control",
					      "/usr/local/nvidia/bin/nvidia-cuda-mps-control" };

	if (configured)
		return access(configured, X_OK) == 0 ? configured : NULL;
	for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++)
		if (access(places[i], X_OK) == 0)
			return places[i];
	return NULL;
}

static int run_control(const char *control, uid_t uid, gid_t gid, const char *dir,
		       const char *gpus, int l2_pct, const char *arg, const char *input,
		       int timeout, char **out)
{
	char pipe_env[4200], log_env[4200], gpu_env[1100], l2_env[96];
	char *argv[] = { (char *)control, (char *)arg, NULL };
	char *envp[8];
	int n = 0, rv;
	struct gpumem_proc p = { 0 };

	snprintf(pipe_env, sizeof(pipe_env), "CUDA_MPS_PIPE_DIRECTORY=%s/pipe", dir);
	snprintf(log_env, sizeof(log_env), "CUDA_MPS_LOG_DIRECTORY=%s/log", dir);
	envp[n++] = "PATH=/usr/bin:/bin";
	envp[n++] = pipe_env;
	envp[n++] = log_env;
	if (gpus && *gpus) {
		snprintf(gpu_env, sizeof(gpu_env), "CUDA_VISIBLE_DEVICES=%s", gpus);
		envp[n++] = gpu_env;
	}
	if (l2_pct >= 0) {
		snprintf(l2_env, sizeof(l2_env),
			 "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=%d", l2_pct);
		envp[n++] = l2_env;
	}
	envp[n] = NULL;
	if (arg == NULL)
		argv[1] = NULL;
	gpumem_proc_as_user(&p, control, argv, envp, uid, gid, timeout);
	p.input = input;
	if (gpumem_proc_run(&p) < 0)
		return -1;
	rv = p.status == 0 && !p.timed_out ? 0 : -1;
	if (out)
		*out = p.out;
	else
		gpumem_proc_free(&p);
	return rv;
}

int gpumem_mps_start_in(const char *control, uid_t uid, gid_t gid, const char *gpus,
			int l2_pct, const char *dir, int timeout, char **errp)
{
	char *out = NULL;
	int rv = 0;

	*errp = NULL;
	if (run_control(control, uid, gid, dir, gpus, l2_pct, "-d", NULL, timeout, &out) < 0) {
		if (asprintf(errp, "%s -d failed: %s", control, out && *out ? out : "no output") < 0)
			*errp = NULL;
		rv = -1;
	}
	free(out);
	return rv;
}

int gpumem_mps_start(const char *control, uid_t uid, gid_t gid, const char *gpus,
		     int l2_pct, unsigned job, unsigned step, int timeout, char **dirp,
		     char **errp)
{
	char tmpl[256], sub[300];
	int rv = -1;

	*dirp = NULL;
	*errp = NULL;
	/* We run with the user's effective ids here (user_init). */
	snprintf(tmpl, sizeof(tmpl), "/tmp/gpumem-mps.%u.%u.XXXXXX", job, step);
	if (mkdtemp(tmpl) == NULL) {
		if (asprintf(errp, "mkdtemp %s: %s", tmpl, strerror(errno)) < 0)
			*errp = NULL;
		goto fail;
	}
	*dirp = strdup(tmpl);
	snprintf(sub, sizeof(sub), "%s/pipe", tmpl);
	if (*dirp == NULL || mkdir(sub, 0700) < 0)
		goto fail;
	snprintf(sub, sizeof(sub), "%s/log", tmpl);
	if (mkdir(sub, 0700) < 0)
		goto fail;
	if (gpumem_mps_start_in(control, uid, gid, gpus, l2_pct, tmpl, timeout, errp) < 0)
		goto fail;
	rv = 0;
fail:
	if (rv < 0 && *dirp) {
		/* Leave nothing behind: a failed start removes its directory. */
		gpumem_mps_stop(NULL, uid, gid, *dirp, timeout);
		free(*dirp);
		*dirp = NULL;
	}
	return rv;
}

/* The control daemon's pid, from its pid file in the pipe directory. */
static pid_t control_pid(const char *dir)
{
	char path[4200], buf[32];
	struct stat st;
	ssize_t n = -1;
	int fd;

	/*
	 * The directory is the user's, and root reads this at teardown: a
	 * FIFO there would block the open for good (slurmstepd hung, the job
	 * never completing), a link would lead anywhere.  Regular files only.
	 */
	snprintf(path, sizeof(path), "%s/pipe/nvidia-cuda-mps-control.pid", dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return (pid_t)strtol(buf, NULL, 10);
}

static int pid_owned_by(pid_t pid, uid_t uid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return stat(path, &st) == 0 && st.st_uid == uid;
}

int gpumem_mps_quit(const char *control, uid_t uid, gid_t gid, const char *dir, int timeout)
{
	pid_t pid = control_pid(dir);
	int rv = 0;

	if (control) {
		char *out = NULL;

		if (run_control(control, uid, gid, dir, NULL, -1, NULL, "quit\n", timeout, &out) < 0)
			gpumem_error("gpumem: %s quit failed: %.300s", control,
				     out && *out ? out : "no output");
		free(out);
	}
	/* quit is asynchronous: give the daemon a moment, then insist. */
	for (int i = 0; pid > 0 && i < 50 && pid_owned_by(pid, uid); i++)
		usleep(100000);
	if (pid > 0 && pid_owned_by(pid, uid)) {
		slurm_error("gpumem: MPS control daemon %d did not quit: killing it", (int)pid);
		kill(pid, SIGKILL);
		rv = -1;
	}
	return rv;
}

int gpumem_mps_stop(const char *control, uid_t uid, gid_t gid, const char *dir, int timeout)
{
	char *argv[] = { "/bin/rm", "-rf", "--", (char *)dir, NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct gpumem_proc rm = { 0 };
	int rv = gpumem_mps_quit(control, uid, gid, dir, timeout);

	/* Remove as the user: the directory and everything in it are theirs. */
	gpumem_proc_as_user(&rm, argv[0], argv, envp, uid, gid, timeout);
	if (gpumem_proc_run(&rm) < 0 || rm.status != 0) {
		slurm_error("gpumem: cannot remove %s: %s", dir, rm.out ? rm.out : "");
		rv = -1;
	} else {
		slurm_info("gpumem: per-job MPS daemon stopped, %s removed", dir);
	}
	gpumem_proc_free(&rm);
	return rv;
}
