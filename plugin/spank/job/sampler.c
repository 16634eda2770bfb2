/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The per-job GPU sampler, root's side (sampler.h).  The job prolog forks
 * gpumem-sample in a session of its own (gpumem_proc_spawn: out of
 * the prolog's process group, which Slurm kills when the prolog returns,
 * before the prolog goes on), as sample_user (never the job's user, nor
 * check_user: the user can neither signal it, trace it nor write what it
 * writes), outside the job's cgroup like the prolog itself; its stdout is
 * state_dir/prof.<JOB>.<NODE>, opened by root before the fork, so the document
 * lands in a file only root can open.  Root's record state_dir/sample.<JOB>.<NODE>
 * says "ran PID START" (the epilog signals that process only while its
 * start time still matches) or "skipped WHY".  The epilog stops it, reads
 * the document under its caps and checks it (gpumem_profile_check): the
 * sampler reads NVML, which a broken driver could make say anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core_policy.h"
#include "core_base.h"
#include "log.h"
#include "core_record.h"
#include "sampler.h"
#include "statedir.h"

#define TERM_WAIT_MS 2000
#define KILL_WAIT_MS 500

static void record(int sfd, unsigned job, const char *node, const char *text)
{
	char name[128];

	gpumem_sf_job(name, sizeof(name), GPUMEM_SF_SAMPLE, job, node);
	if (gpumem_state_write(sfd, name, text) < 0)
		gpumem_error("gpumem: job %u: cannot record the sampler: %s", job, strerror(errno));
}

/*
 * The sampler's process: sample_user, stdout the profile file, nothing
 * else open.  The stop signals stay blocked across exec until
 * gpumem-sample reads them from its signalfd: an epilog that signals a
 * sampler still starting (a short job on a busy node) gets a profile, not
 * a sampler killed before it wrote one.
 */
static pid_t spawn(const struct gpumem_sampler *s, int out, char **argv)
{
	struct gpumem_henv env;
	struct gpumem_spawn sp = { .path = s->path, .argv = argv, .uid = s->uid,
				   .gid = s->gid, .rgid = s->gid, .in = -1, .out = out,
				   .err = -1 };
	sigset_t stop;

	gpumem_henv_init(&env);
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	sp.block = &stop;
	sp.envp = gpumem_henv_envp(&env);
	return gpumem_proc_spawn(&sp);
}

void gpumem_sampler_start(const struct gpumem_sampler *s, const char *skip)
{
	char name[128], text[2200], interval[32];
	char *argv[] = { (char *)s->path, "--interval-ms", interval, "--gpus", (char *)s->gpus,
			 NULL };
	unsigned long long start;
	pid_t pid;
	int out;

	if (s->sfd < 0)
		return;
	if (skip == NULL && access(s->path, X_OK) != 0)
		skip = "gpumem-sample is not installed on this node";
	if (skip) {
		snprintf(text, sizeof(text), "skipped %.2000s\n", skip);
		record(s->sfd, s->job, s->node, text);
		gpumem_info("gpumem: job %u: profile skipped: %s", s->job, skip);
		return;
	}
	snprintf(interval, sizeof(interval), "%d", s->interval_ms);
	if (s->gpus == NULL || !s->gpus[0])
		argv[3] = NULL;
	gpumem_sf_job(name, sizeof(name), GPUMEM_SF_PROF, s->job, s->node);
	unlinkat(s->sfd, name, 0);
	out = openat(s->sfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		snprintf(text, sizeof(text), "skipped cannot make %s in the state directory: %s\n",
			 name, strerror(errno));
		record(s->sfd, s->job, s->node, text);
		return;
	}
	pid = spawn(s, out, argv);
	close(out);
	start = pid > 0 ? gpumem_proc_start_time(pid) : 0;
	if (pid < 0 || start == 0)
		snprintf(text, sizeof(text), "skipped cannot start gpumem-sample: %s\n",
			 strerror(pid < 0 ? errno : ESRCH));
	else
		snprintf(text, sizeof(text), "ran %d %llu\n", (int)pid, start);
	record(s->sfd, s->job, s->node, text);
	text[strcspn(text, "\n")] = '\0';
	if (text[0] == 's')
		gpumem_error("gpumem: job %u: profile %s", s->job, text);
	else
		gpumem_info("gpumem: job %u: sampler %d started (every %d ms, GPUs %s)", s->job,
			    (int)pid, s->interval_ms, argv[3] ? s->gpus : "(all)");
}

/* SIGTERM: it writes its document and leaves; SIGKILL what does not. "" or how it ended. */
static const char *stop(pid_t pid, unsigned long long start)
{
	if (!gpumem_proc_alive(pid, start))
		return "the sampler had ended before the job did";
	kill(pid, SIGTERM);
	if (gpumem_proc_wait_gone(pid, start, TERM_WAIT_MS))
		return "";
	kill(pid, SIGKILL);
	gpumem_proc_wait_gone(pid, start, KILL_WAIT_MS);
	return "the sampler did not stop on SIGTERM and was killed: figures up to its last flush";
}

static char *state_text(const char *state, const char *reason)
{
	struct json_object *o = json_object_new_object();
	char *text;

	gpumem_json_add(o, "state", gpumem_json_string(state));
	gpumem_json_add(o, "reason", gpumem_json_string(reason));
	text = gpumem_json_dump(o, GPUMEM_JSON_COMPACT);
	json_object_put(o);
	if (text)
		text[strcspn(text, "\n")] = '\0';
	return text;
}

/* The document the sampler left, checked; else why not, as the member's text. */
static char *take_document(int sfd, unsigned job, const char *name, const char *how)
{
	struct json_object *doc = NULL;
	char err[400], why[600];
	char *text, *out;

	text = gpumem_state_read(sfd, name, GPUMEM_PROFILE_MAX_BYTES + 1);
	if (text == NULL || !text[0]) {
		snprintf(why, sizeof(why), "the sampler left no profile%s%s", how[0] ? ": " : "",
			 how);
		free(text);
		return state_text("refused", why);
	}
	if (gpumem_profile_parse(text, strlen(text), &doc, err, sizeof(err)) < 0) {
		snprintf(why, sizeof(why), "the sampler's profile is not valid: %s", err);
		gpumem_error("gpumem: job %u: %s", job, why);
		json_object_put(doc);
		free(text);
		return state_text("refused", why);
	}
	if (how[0])
		gpumem_json_add(doc, "note", gpumem_json_string(how));
	out = gpumem_json_dump(doc, GPUMEM_JSON_COMPACT);
	if (out)
		out[strcspn(out, "\n")] = '\0';
	json_object_put(doc);
	free(text);
	return out;
}

char *gpumem_sampler_stop(int sfd, unsigned job, const char *node, int *ran)
{
	char name[128], output[128], *rec, *out;
	unsigned long long start;
	int pid;

	*ran = 0;
	if (sfd < 0)
		return NULL;
	gpumem_sf_job(name, sizeof(name), GPUMEM_SF_SAMPLE, job, node);
	gpumem_sf_job(output, sizeof(output), GPUMEM_SF_PROF, job, node);
	rec = gpumem_state_read(sfd, name, 4096);
	if (rec == NULL)
		return NULL;
	rec[strcspn(rec, "\n")] = '\0';
	if (!strncmp(rec, "skipped ", 8))
		out = state_text("skipped", rec + 8);
	else if (sscanf(rec, "ran %d %llu", &pid, &start) == 2 && (*ran = 1)) {
		const char *how = stop(pid, start);

		gpumem_info("gpumem: job %u: sampler %d stopped%s%s", job, pid, how[0] ? ": " : "",
			    how);
		out = take_document(sfd, job, output, how);
	}
	else
		out = state_text("refused", "the sampler's record is not whole");
	free(rec);
	unlinkat(sfd, name, 0);
	unlinkat(sfd, output, 0);
	return out;
}
