/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The job's record (plugin/spank/state/statedir.c) and its policy part
 * (jobpolicy.c): what the job prolog decides goes into the record and comes
 * back the same in a step or the epilog, the effective policy and the site
 * file as the prolog read it, with no file but the record read.  The state
 * directory's own checks (root's files only) are the real-Slurm tests'; the
 * file round trip needs root, as the record must be root's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "jobpolicy.h"
#include "statedir.h"
#include "tap.h"
#include "core_base.h"

static const char site_yaml[] =
	"version: 1\n"
	"defaults:\n"
	"  mps:\n"
	"    active_thread_percentage: 30\n"
	"  check:\n"
	"    after: true\n"
	"limits:\n"
	"  l2_max_percent: 40\n"
	"  l2_model_max_percent: {NVIDIA H200: 30, other: 20}\n"
	"  mps_max_active_thread_percentage: 50\n"
	"  um_max_gpu_fraction: 0.5\n"
	"  um_placements: [none, stripe]\n"
	"report:\n"
	"  dir: /var/lib/gpumem/reports\n"
	"drain:\n"
	"  enabled: true\n"
	"check:\n"
	"  timeout: 20\n"
	"  min_interval: 7\n"
	"references:\n"
	"  NVIDIA H200:\n"
	"    triad: 4127\n";

static const char user_yaml[] =
	"version: 1\n"
	"l2:\n"
	"  persisting_limit: 60%\n"
	"mps:\n"
	"  active_thread_percentage: 80\n"
	"unified_memory:\n"
	"  placement: stripe\n"
	"  gpu_fraction: 0.9\n";

/* The user's policy over the site's, as the prolog decides it. */
static int decide(const char *site_text, const char *user_text, struct gpumem_site *s,
		  struct gpumem_policy *eff)
{
	struct gpumem_diags d = { 0 };
	struct gpumem_policy u;
	int rv;

	gpumem_site_init(s);
	rv = gpumem_site_parse(site_text, strlen(site_text), "site.yaml", s, &d) |
		gpumem_policy_parse(user_text, strlen(user_text), "user.yaml", &u, &d) |
		gpumem_policy_effective(s, &u, "user.yaml", eff, &d);
	gpumem_diags_free(&d);
	return rv;
}

/* The caps per GPU model two policies carry are alike. */
static int same_caps(const struct gpumem_l2caps *a, const struct gpumem_l2caps *b)
{
	if (a->n != b->n || a->other != b->other)
		return 0;
	for (int i = 0; i < a->n; i++)
		if (strcmp(a->m[i].model, b->m[i].model) || a->m[i].percent != b->m[i].percent)
			return 0;
	return 1;
}

/* Two policies alike: every key (set or not), the set and section bits, the carried limits. */
static int same_policy(const struct gpumem_policy *a, const struct gpumem_policy *b)
{
	char *fa = gpumem_policy_format(a, GPUMEM_FMT_JSON, 0);
	char *fb = gpumem_policy_format(b, GPUMEM_FMT_JSON, 0);
	int same = fa && fb && !strcmp(fa, fb) && a->set == b->set && a->sections == b->sections &&
		a->l2.site_max_percent == b->l2.site_max_percent &&
		same_caps(&a->l2.site_caps, &b->l2.site_caps) &&
		a->um.site_max_fraction == b->um.site_max_fraction;

	if (!same)
		printf("#   %s\n#   %s\n", fa ? fa : "(null)", fb ? fb : "(null)");
	free(fa);
	free(fb);
	return same;
}

static void test_in_memory(void)
{
	struct gpumem_jobrec rec = { 0 };
	struct gpumem_diags d = { 0 };
	struct gpumem_site s, back_site;
	struct gpumem_policy eff, back;
	int have_site = 0;

	ok(decide(site_yaml, user_yaml, &s, &eff) == 0, "the prolog decides the effective policy");
	is_int(eff.mps.active_thread_percentage, 50, "... clamped to the site's limit");
	ok(gpumem_jobpolicy_record(&eff, site_yaml, "site.yaml", &rec, &d) == 0,
	   "the effective policy and the site file go into the record");
	is_str(rec.site, site_yaml, "... the site file's text as read");
	is_int(gpumem_jobpolicy_recall(&rec, &back, &back_site, &have_site, &d), 1,
	       "a step recalls them from the record alone");
	ok(have_site && same_policy(&eff, &back), "... the same effective policy, limits carried");
	ok(back.l2.site_caps.n == 1 && back.l2.site_caps.m[0].percent == 30 &&
	   back.l2.site_caps.other == 20, "... the site's caps per GPU model among them");
	is_str(back_site.report.dir, "/var/lib/gpumem/reports", "... the site's report.dir");
	is_int(back_site.check_min_interval_min * 100 + back_site.check_timeout_s, 720,
	       "... its check.min_interval and check.timeout");
	ok(back_site.drain.enabled && back_site.nrefs == 1 &&
	   gpumem_site_ref(&back_site, "NVIDIA H200") &&
	   gpumem_site_ref(&back_site, "NVIDIA H200")->triad == 4127,
	   "... its drain setting and reference figures");
	is_int(back_site.limits.mps_max_pct, 50, "... and its limits, for a step's own policy");
	is_int(d.nerrors, 0, "no errors");
	gpumem_site_free(&back_site);
	gpumem_jobrec_free(&rec);

	/* No site file: the built-in defaults under the user's policy. */
	ok(gpumem_policy_effective(NULL, NULL, NULL, &eff, &d) == 0 &&
	   gpumem_jobpolicy_record(&eff, NULL, NULL, &rec, &d) == 0 &&
	   gpumem_jobpolicy_recall(&rec, &back, &back_site, &have_site, &d) == 1 && !have_site &&
	   same_policy(&eff, &back), "no site file: the effective policy alone comes back");
	gpumem_site_free(&back_site);
	gpumem_jobrec_free(&rec);

	/* A record that holds no policy (the site file was unusable at the prolog). */
	rec.rejected = strdup("site file unusable");
	is_int(gpumem_jobpolicy_recall(&rec, &back, &back_site, &have_site, &d), 0,
	       "a record without a policy: nothing to apply");
	gpumem_site_free(&back_site);
	gpumem_jobrec_free(&rec);
	gpumem_site_free(&s);
	gpumem_diags_free(&d);
}

static void test_refused(void)
{
	static const char site_advice[] =
		"version: 1\ndefaults:\n  unified_memory:\n    preferred_location: cpu\n"
		"limits:\n  um_placements: [none, stripe]\n";
	static const char user_stripe[] = "version: 1\nunified_memory:\n  placement: stripe\n";
	struct gpumem_jobrec rec = { 0 };
	struct gpumem_diags d = { 0 };
	struct gpumem_site s, back_site;
	struct gpumem_policy eff, back;
	char *msg;
	int have_site;

	decide(site_advice, user_stripe, &s, &eff);
	ok(gpumem_jobpolicy_record(&eff, site_advice, "site.yaml", &rec, &d) < 0,
	   "an effective policy that would not read back in a step is refused at the prolog");
	msg = gpumem_diags_join(&d, 1);
	like(msg, "placement: stripe sets the preferred location", "... saying why");
	free(msg);
	gpumem_diags_free(&d);
	gpumem_jobrec_free(&rec);
	gpumem_site_free(&s);

	rec.effective = strdup("{\"version\":1,\"mps\":{\"active_thread_percentage\":30}}");
	rec.site = strdup("version: 9\n");
	is_int(gpumem_jobpolicy_recall(&rec, &back, &back_site, &have_site, &d), -1,
	       "a recorded site file the parser refuses: the recall fails (fail closed)");
	gpumem_site_free(&back_site);
	gpumem_jobrec_free(&rec);
	gpumem_diags_free(&d);
}

/* The steps' record of JOB: named after this host, made safe. */
static const char *steps_rec(unsigned job)
{
	static char name[128];
	char host[65] = "";

	gethostname(host, sizeof(host) - 1);
	gpumem_safe_name(host);
	snprintf(name, sizeof(name), "job%u.%s.rec", job, host);
	return name;
}

/* Write the steps' record of JOB in DIR with TEXT (a record from elsewhere). */
static void put(int dfd, unsigned job, const char *text)
{
	int fd = openat(dfd, steps_rec(job), O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			perror("write");
		close(fd);
	}
}

static void test_file(void)
{
	char dir[] = "/tmp/gpumem-jobrec.XXXXXX", why[256], *big;
	struct gpumem_jobrec rec = { 0 }, got;
	struct gpumem_diags d = { 0 };
	struct gpumem_site s;
	struct gpumem_policy eff;
	size_t n = 0;
	int dfd;

	if (geteuid() != 0) {
		ok(1, "# SKIP the record must be root's: the file round trip needs root");
		return;
	}
	if (mkdtemp(dir) == NULL || (dfd = open(dir, O_RDONLY | O_DIRECTORY)) < 0) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		exit(1);
	}
	/* The largest site file the parser takes, mostly a comment. */
	big = malloc(GPUMEM_MAX_FILE_BYTES + 1);
	n = (size_t)snprintf(big, GPUMEM_MAX_FILE_BYTES + 1, "%s# ", site_yaml);
	memset(big + n, '"', GPUMEM_MAX_FILE_BYTES - n - 1);
	big[GPUMEM_MAX_FILE_BYTES - 1] = '\n';
	big[GPUMEM_MAX_FILE_BYTES] = '\0';
	ok(decide(big, user_yaml, &s, &eff) == 0, "a 64 KiB site file is one the parser takes");
	rec.name = strdup("user.yaml");
	rec.policy = strdup("{\"version\":1}");
	rec.mps = strdup("start");
	ok(gpumem_jobpolicy_record(&eff, big, "site.yaml", &rec, &d) == 0 &&
	   gpumem_jobrec_write(dfd, 7, "gpu/01", &rec) == 0,
	   "a record with a 64 KiB site file is written");
	ok(faccessat(dfd, steps_rec(7), F_OK, 0) == 0 &&
	   gpumem_jobrec_read(dfd, 7, NULL, &got, why, sizeof(why)) == 0,
	   "... and read back by the steps (named after the host)");
	ok(got.site && !strcmp(got.site, big) && got.effective &&
	   !strcmp(got.effective, rec.effective) && !strcmp(got.site_path, "site.yaml") &&
	   !strcmp(got.name, "user.yaml") && !strcmp(got.mps, "start") && got.rejected == NULL,
	   "... every member the same");
	gpumem_jobrec_free(&got);
	ok(gpumem_jobrec_read(dfd, 7, "gpu/01", &got, why, sizeof(why)) == 0 && got.site &&
	   !strcmp(got.site, big), "... and the node's own copy, for its epilog");
	gpumem_jobrec_free(&got);
	ok(faccessat(dfd, "job7.gpu_01.rec", F_OK, 0) == 0, "... named after the node, made safe");

	put(dfd, 8, "{\"v\":1,\"name\":null,\"policy\":null}");
	ok(gpumem_jobrec_read(dfd, 8, NULL, &got, why, sizeof(why)) < 0, "a record of the older format is refused");
	like(why, "written by another version of gpumem", "... saying so");
	put(dfd, 9, "{\"v\":2,\"site\":7}");
	ok(gpumem_jobrec_read(dfd, 9, NULL, &got, why, sizeof(why)) < 0, "a record whose site is no string is refused");
	ok(gpumem_jobrec_read(dfd, 10, "n1", &got, why, sizeof(why)) < 0, "no record: refused");
	like(why, "no record of job 10", "... saying so");

	gpumem_jobrec_forget(dfd, 7, "gpu/01");
	ok(faccessat(dfd, steps_rec(7), F_OK, 0) < 0 && faccessat(dfd, "job7.gpu_01.rec", F_OK, 0) < 0,
	   "the epilog removes both");
	unlinkat(dfd, steps_rec(8), 0);
	unlinkat(dfd, steps_rec(9), 0);
	close(dfd);
	rmdir(dir);
	free(big);
	gpumem_jobrec_free(&rec);
	gpumem_site_free(&s);
	gpumem_diags_free(&d);
}

int main(void)
{
	test_in_memory();
	test_refused();
	test_file();
	return tap_done();
}
