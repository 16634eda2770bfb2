/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * srun, sbatch and salloc, as the user: --gpumem-policy=advised (or, for
 * a job that asked for nothing, the site's advised.by_default: gain applies
 * only a rule that promises the job a gain, all applies any) and the hint
 * (advised.hint).  One sacct query, run as the user with no shell (proc.c's
 * runner: Slurm decides which jobs they may see), killed after
 * advised.timeout seconds (slurmdbd down or hung never holds a submission
 * longer), finds their jobs of this name in the last advised.days days;
 * core/advice/advice_history.c reads the records and chooses.  The
 * job name is Slurm's own, after its option processing (slurm_option_get
 * on the command's option table), else SLURM_JOB_NAME, SBATCH_JOB_NAME or
 * SALLOC_JOB_NAME.  Every message is escaped (the name is the user's, the
 * records' strings a node's); nothing here fails a job: an error says why
 * and the site's defaults apply.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "core_advice.h"
#include "core_base.h"
#include "core_record.h"
#include "plugin.h"

/* The command's option NAME from Slurm's own option table, or NULL.  Malloc'd. */
static char *slurm_option(const char *name)
{
	typedef char *(*get_fn)(void *, const char *);
	void *opt = dlsym(RTLD_DEFAULT, "opt");
	get_fn get = (get_fn)dlsym(RTLD_DEFAULT, "slurm_option_get");
	void (*xfree)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "slurm_xfree_ptr");
	char *n = NULL, *own = NULL;

	if (opt && get && xfree) {
		n = get(opt, name);
		if (n && *n)
			own = strdup(n);
		if (n)
			xfree(n);      /* Slurm's xmalloc'd copy */
	}
	return own;
}

/* The job's name as the command will submit it, or NULL.  Malloc'd. */
static char *job_name(spank_t sp)
{
	const char *env = spank_context() == S_CTX_LOCAL ? "SLURM_JOB_NAME" :
		getenv("SBATCH_JOB_NAME") ? "SBATCH_JOB_NAME" : "SALLOC_JOB_NAME";
	char *own = slurm_option("job-name");

	(void)sp;
	if (own == NULL && getenv(env) && *getenv(env))
		own = strdup(getenv(env));
	return own;
}

/*
 * Was the command given -v?  Its log level is raised only after the
 * plugin's options are processed, so slurm_verbose() here is never shown.
 */
static int verbose(void)
{
	char *v = slurm_option("verbose");
	int on = v && strtol(v, NULL, 10) > 0;

	free(v);
	return on;
}

static void say(const char *line)
{
	char e[1600];

	gpumem_term_clean(line, e, sizeof(e), sizeof(e) - 1);
	slurm_info("%s", e);
}

/*
 * The lookup's line for a job that asked for nothing (advised.by_default):
 * "gpumem: advised by default: ...", on stderr (LOUD: a policy applied, or
 * the advice SKIPPED: accounting did not answer) or only with srun -v (no
 * history, nothing to apply, a rule the mode does not apply unasked).
 */
static void say_unasked(const char *line, int loud, int skipped)
{
	static const char tag[] = "gpumem: advised: ";
	char e[1600], l[1700];

	if (!strncmp(line, tag, sizeof(tag) - 1))
		line += sizeof(tag) - 1;
	snprintf(l, sizeof(l), "gpumem: advised by default: %s%s", skipped ? "advice skipped: " :
		 "", line);
	gpumem_term_clean(l, e, sizeof(e), sizeof(e) - 1);
	if (loud || verbose())
		slurm_info("%s", e);
}

/* The lookup for NAME into A: 0, or -1 with the line in A saying why (site defaults). */
static int lookup(const struct gpumem_site *site, const char *name, struct gpumem_advised *a)
{
	int days = site ? site->advised.days : 30, rc;
	int timeout = site ? site->advised.timeout_s : GPUMEM_ADVISED_TIMEOUT_S;
	char buf[512], *argv[16], err[512], why[200], uid[24];
	char *out = malloc(GPUMEM_ADVISED_SACCT_CAP);

	memset(a, 0, sizeof(*a));
	if (out == NULL) {
		snprintf(a->line, sizeof(a->line), "gpumem: advised: out of memory: site defaults");
		return -1;
	}
	snprintf(uid, sizeof(uid), "%lu", (unsigned long)getuid());
	if (gpumem_advised_argv(name, uid, days, buf, sizeof(buf), argv,
				sizeof(argv) / sizeof(argv[0]), why, sizeof(why)) < 0) {
		snprintf(a->line, sizeof(a->line), "gpumem: advised: %s: site defaults", why);
		free(out);
		return -1;
	}
	/* As this process's user, no shell (proc.c's runner); its first stderr line says why. */
	rc = gpumem_run_capture(argv, out, GPUMEM_ADVISED_SACCT_CAP, err, sizeof(err), timeout);
	if (rc != 0) {
		snprintf(a->line, sizeof(a->line), "gpumem: advised: Slurm's accounting did not "
			 "answer (sacct: %.300s); advised needs accounting (slurmdbd): site defaults",
			 err[0] ? err : "no message");
		free(out);
		return -1;
	}
	rc = gpumem_advised_read(out, name, gpumem_site_advice(site), a);
	free(out);
	if (rc < 0) {
		snprintf(a->line, sizeof(a->line), "gpumem: advised: out of memory: site defaults");
		return -1;
	}
	gpumem_advised_choose(a, name, days);
	return 0;
}

/*
 * May the advice A be applied to a job that asked for nothing?  Under
 * advised.by_default: gain, only a rule whose policy promises the job a
 * gain (advise.h); else A's line becomes why it was not.
 */
static int unasked_may(const struct gpumem_site *site, struct gpumem_advised *a)
{
	const struct gpumem_advice_table *t = gpumem_site_advice(site);

	if (gpumem_advice_unasked(t, site->advised.by_default, a->rule))
		return 1;
	snprintf(a->line, sizeof(a->line), "gpumem: advised: job %lld advises %s (%s), which "
		 "promises no speed-up: not applied unasked (advised.by_default: gain; "
		 "--gpumem-policy=advised applies it): site defaults", a->from, a->policy, a->rule);
	return 0;
}

/* FWD's label and SRC's fields of an advice applied to a job that named no policy. */
static void mark_unasked(char *fwd, size_t flen, char *src, size_t slen)
{
	struct gpumem_advsrc s;
	char err[200], *json;

	if (gpumem_advsrc_parse(src, &s, err, sizeof(err)) < 0)
		return;
	s.unasked = 1;
	json = gpumem_advsrc_json(&s);
	if (json && strlen(json) < slen) {
		snprintf(src, slen, "%s", json);
		gpumem_advsrc_label(&s, fwd, flen);
	}
	free(json);
}

int gpumem_advised_policy(spank_t sp, const struct gpumem_site *site, int unasked, char *policy,
			  size_t plen, char *fwd, size_t flen, char *src, size_t slen)
{
	struct gpumem_advised a;
	char *name;
	int found, apply = 0;

	policy[0] = fwd[0] = src[0] = '\0';
	/* A step in a job that exists: its policy was decided when the job was submitted. */
	if (getenv("SLURM_JOB_ID") && spank_context() == S_CTX_LOCAL)
		return 0;
	name = job_name(sp);
	if (name == NULL) {
		if (unasked)
			say_unasked("gpumem: advised: the job has no name (--job-name): site "
				    "defaults", 0, 0);
		else
			say("gpumem: advised: the job has no name (--job-name): site defaults");
		return 0;
	}
	found = lookup(site, name, &a) == 0;
	if (found && a.policy[0])
		apply = !unasked || unasked_may(site, &a);
	if (apply) {
		snprintf(policy, plen, "%s", a.policy);
		snprintf(fwd, flen, "%s", a.fwd_name);
		snprintf(src, slen, "%s", a.src_json);
		if (unasked)
			mark_unasked(fwd, flen, src, slen);
	}
	/* Unasked, only a policy applied or the advice skipped is worth a line on every job. */
	if (unasked)
		say_unasked(a.line, apply || !found, !found);
	else
		say(a.line);
	gpumem_advised_free(&a);
	free(name);
	return 0;
}

/* "zerocopy" of "zerocopy.yaml", "/a/b/zerocopy.yml", "zerocopy". */
static void base_name(const char *in, char *out, size_t len)
{
	const char *b = strrchr(in, '/') ? strrchr(in, '/') + 1 : in;
	size_t n = strlen(b);

	if (n > 5 && !strcmp(b + n - 5, ".yaml"))
		n -= 5;
	else if (n > 4 && !strcmp(b + n - 4, ".yml"))
		n -= 4;
	snprintf(out, len, "%.*s", (int)n, b);
}

/*
 * The user's own record of the names the hint is done with:
 * $XDG_CACHE_HOME/gpumem/hints (else ~/.cache/gpumem/hints), made 0700/0600
 * by the user (its real uid, never root) from directory descriptors, never
 * followed through a link (gpumem_cache_dir_open), a line per name by its
 * FNV-1a hash (no name is kept): "HASH" once the lookup found a profiled
 * job of the name (hinted or not: said once per name), "HASH DAY" while it
 * found none on that day (days since 1970): the name is looked up again
 * the next day it is submitted, not at once, so a name costs at most one
 * query a day until its first profiled job, then none.
 */
struct hintfile {
	int dfd;                /* the cache directory (gpumem_cache_dir_open) */
	char hash[20];          /* "%016llx" */
};

/*
 * 0 with H's directory open and NAME's hash; -1 where there is no place:
 * root's srun keeps no hint file (a root command carrying a user's HOME
 * must not make a file where the user's links point).
 */
static int hint_file(const char *name, struct hintfile *h)
{
	/* The hint files' own seed (one digit short of FNV's basis): kept, so
	 * that the hashes already in users' files still match. */
	uint64_t v = gpumem_fnv1a(1469598103934665603ULL, name, strlen(name));
	char why[300];

	snprintf(h->hash, sizeof(h->hash), "%016llx", (unsigned long long)v);
	if (getuid() == 0)
		return -1;
	h->dfd = gpumem_cache_dir_open(why, sizeof(why));
	return h->dfd < 0 ? -1 : 0;
}

/* The hints file in H's directory: made 0600, never through a link, the caller's own. */
static int hint_open(const struct hintfile *h)
{
	struct stat st;
	int fd = openat(h->dfd, "hints", O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC |
			O_NONBLOCK, 0600);

	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid())) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static long today(void)
{
	return (long)(time(NULL) / 86400);
}

/*
 * 1 when NAME is due a lookup (H's directory left open for hint_note); 0
 * when the hint is done with it, or was looked up today without a profiled
 * job, or the file cannot be used (no hint rather than a query every time).
 */
static int hint_due(const char *name, struct hintfile *h)
{
	char line[48], buf[64 * 1024];
	ssize_t n;
	int fd, due = 0;

	if (hint_file(name, h) < 0)
		return 0;
	if ((fd = hint_open(h)) < 0) {
		close(h->dfd);
		return 0;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	if (n >= 0 && (size_t)n < sizeof(buf) - 1) {
		buf[n] = '\0';
		snprintf(line, sizeof(line), "%s\n", h->hash);
		due = strstr(buf, line) == NULL;
		snprintf(line, sizeof(line), "%s %ld\n", h->hash, today());
		due = due && strstr(buf, line) == NULL;
	}
	close(fd);
	if (!due)
		close(h->dfd);
	return due;
}

/* What the lookup found for H's name: DONE (a profiled job), or none today. */
static void hint_note(const struct hintfile *h, int done)
{
	char line[48];
	int fd = hint_open(h), len;

	if (fd < 0)
		return;
	len = done ? snprintf(line, sizeof(line), "%s\n", h->hash) :
		snprintf(line, sizeof(line), "%s %ld\n", h->hash, today());
	if (write(fd, line, (size_t)len) != len) {
		/* a line not written: the name is looked up again, no worse */
	}
	close(fd);
}

/* Did the lookup find a profiled job of the name (the hint's question settled)? */
static int found_profiled(const struct gpumem_advised *a)
{
	for (size_t i = 0; i < a->njobs; i++)
		if (a->jobs[i].profiled)
			return 1;
	return 0;
}

void gpumem_advised_hint(spank_t sp, const struct gpumem_site *site, const char *asked)
{
	struct gpumem_advised a;
	struct hintfile hf;
	char want[80], got[80], *name;

	if (site == NULL || !site->advised.hint || getenv("GPUMEM_NO_HINT") ||
	    (getenv("SLURM_JOB_ID") && spank_context() == S_CTX_LOCAL))
		return;
	name = job_name(sp);
	/* The user's own file decides before any query is made. */
	if (name == NULL || !hint_due(name, &hf)) {
		free(name);
		return;
	}
	/* Accounting down counts as nothing found today: at most one query a day. */
	hint_note(&hf, lookup(site, name, &a) == 0 && found_profiled(&a));
	close(hf.dfd);
	if (a.policy[0]) {
		base_name(a.policy, want, sizeof(want));
		base_name(asked ? asked : "", got, sizeof(got));
		if (strcmp(want, got) != 0) {
			char line[1700];

			snprintf(line, sizeof(line), "gpumem: hint: jobs named %s were last advised %s "
				 "(%s, from job %lld); you asked for %s; --gpumem-policy=advised "
				 "follows the advice (said once per name; GPUMEM_NO_HINT=1 hides it)",
				 name, a.policy, a.rule, a.from, asked ? asked : "the site's defaults");
			say(line);
		}
	}
	gpumem_advised_free(&a);
	free(name);
}
