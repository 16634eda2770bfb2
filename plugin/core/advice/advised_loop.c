/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The advised loop (advised_loop.h): each advised run's verdict in its
 * policy's standing for the name (new, kept, probation, dropped), the one
 * sentence that says it, and the choice for the next job.  The state is
 * recomputed from accounting every time: the record's fields (advsrc.h)
 * say which policy a run tried, the judge (judge.h) what it did.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "advise.h"
#include "advice_history.h"
#include "core_record.h"

/* Where a policy stands after the runs walked so far. */
struct standing {
	int losses;                     /* in a row */
	int kept, dropped;
	const struct gpumem_advised_history *last;      /* the run that decided */
};

/*
 * "2.4x faster: " (a gain rule that gained), "0.77x (slower): ", "not
 * slower than the noise: " (a rule that promised no speed-up, never "N
 * times faster"), "no gain beyond the noise: ", or "" (not judged, or a
 * symptom still there).
 */
static void ratio_text(const struct gpumem_advice_table *t, const struct gpumem_advised_history *h,
		       char *out, size_t len)
{
	const struct gpumem_judgement *j = &h->j;
	int gain = gpumem_judge_gain_rule(t, h->job->from_rule);

	out[0] = '\0';
	if (j->result == GPUMEM_J_NOT_JUDGED || j->ratio <= 0)
		return;
	if ((j->result == GPUMEM_J_LOSS || j->result == GPUMEM_J_HARM) && j->ratio < 1)
		snprintf(out, len, "%.2fx (slower): ", j->ratio);
	else if (j->result == GPUMEM_J_GAINED && gain)
		snprintf(out, len, "%.1fx faster: ", j->ratio);
	else if (j->result == GPUMEM_J_GAINED || (j->result == GPUMEM_J_EVEN && !gain))
		snprintf(out, len, "not slower than the noise: ");
	else if (j->result == GPUMEM_J_EVEN)
		snprintf(out, len, "no gain beyond the noise: ");
}

/* H's verdict after walking it into S, and its sentence. */
static void step(const struct gpumem_advice_table *t, struct standing *s,
		 struct gpumem_advised_history *h)
{
	const struct gpumem_advised_job *k = h->job;
	const char *tail = "";
	char ratio[64];

	switch (h->j.result) {
	case GPUMEM_J_HARM:
		s->dropped = 1;
		h->verdict = GPUMEM_V_DROPPED;
		tail = "clear harm: not advised again";
		break;
	case GPUMEM_J_LOSS:
		s->losses++;
		s->dropped = s->losses >= 2;
		h->verdict = s->dropped ? GPUMEM_V_DROPPED : GPUMEM_V_PROBATION;
		tail = s->dropped ? "a second loss in a row: not advised again" :
			"on probation (one loss; another in a row drops it)";
		break;
	case GPUMEM_J_GAINED:
	case GPUMEM_J_EVEN:
		s->losses = 0;
		s->kept = 1;
		h->verdict = GPUMEM_V_KEPT;
		tail = "kept";
		break;
	default:
		h->verdict = GPUMEM_V_UNKNOWN;
		tail = s->losses ? "still on probation" : s->kept ? "still kept" : "still new";
		break;
	}
	if (h->j.result != GPUMEM_J_NOT_JUDGED)
		s->last = h;
	ratio_text(t, h, ratio, sizeof(ratio));
	snprintf(h->text, sizeof(h->text), "%s tried in job %lld (advised from job %lld, %s): "
		 "%s%s: %s", k->from_policy, k->id, k->from, k->from_rule, ratio, h->j.why, tail);
}

/* The newest profiled job of A: the work the next job is taken to be. */
static const struct gpumem_advised_job *newest(const struct gpumem_advised *a)
{
	for (size_t i = 0; i < a->njobs; i++)
		if (a->jobs[i].profiled)
			return &a->jobs[i];
	return NULL;
}

/* Does J run the work of W (the same GPU count and model, and command where both have one)? */
static int same_work(const struct gpumem_advised_job *j, const struct gpumem_advised_job *w)
{
	return w == NULL || (j->jr.ngpus == w->jr.ngpus && !strcmp(j->jr.model, w->jr.model) &&
			     (!j->jr.cmd || !w->jr.cmd || j->jr.cmd == w->jr.cmd));
}

/* POLICY's standing for the name (advised_loop.h), its history entries' verdicts set. */
static struct standing walk(struct gpumem_advised *a, const char *policy)
{
	const struct gpumem_advised_job *w = newest(a);
	struct standing s = { 0 };

	for (size_t i = a->nhist; i-- > 0;) {
		struct gpumem_advised_history *h = &a->hist[i];

		if (strcmp(h->job->from_policy, policy) != 0 || s.dropped)
			continue;
		if (!same_work(h->job, w)) {
			h->verdict = GPUMEM_V_UNKNOWN;
			snprintf(h->text, sizeof(h->text), "%s tried in job %lld (advised from job "
				 "%lld, %s): not counted: another command, GPU count or model than the name's "
				 "newest run", h->job->from_policy, h->job->id, h->job->from,
				 h->job->from_rule);
			continue;
		}
		step(a->rules, &s, h);
	}
	return s;
}

void gpumem_advised_loop(struct gpumem_advised *a)
{
	/* Every policy tried, walked once; its entries' verdicts and sentences set. */
	for (size_t i = 0; i < a->nhist; i++) {
		struct gpumem_advised_history *h = &a->hist[i];
		int seen = 0;

		for (size_t k = 0; k < i; k++)
			seen |= !strcmp(a->hist[k].job->from_policy, h->job->from_policy);
		if (!seen)
			walk(a, h->job->from_policy);
		if (!h->text[0])
			snprintf(h->text, sizeof(h->text), "%s tried in job %lld (advised from job "
				 "%lld, %s): %s: after the policy was dropped", h->job->from_policy,
				 h->job->id, h->job->from, h->job->from_rule, h->j.why);
	}
}

static void choose_from(struct gpumem_advised *a, const struct gpumem_advised_job *src,
			long long from, const char *policy, const char *rule,
			const char *standing, const char *tail)
{
	struct gpumem_advsrc f = { .job = from };
	char *json;

	snprintf(a->policy, sizeof(a->policy), "%s", policy);
	snprintf(a->rule, sizeof(a->rule), "%s", rule);
	snprintf(a->standing, sizeof(a->standing), "%s", standing);
	snprintf(f.standing, sizeof(f.standing), "%s", standing);
	snprintf(f.policy, sizeof(f.policy), "%s", policy);
	snprintf(f.rule, sizeof(f.rule), "%s", rule);
	a->from = from;
	gpumem_advsrc_label(&f, a->fwd_name, sizeof(a->fwd_name));
	json = gpumem_advsrc_json(&f);
	snprintf(a->src_json, sizeof(a->src_json), "%s", json ? json : "");
	free(json);
	if (src)
		snprintf(a->line, sizeof(a->line), "gpumem: advised: %s, from job %lld on %s (%s: "
			 "%s)%s", policy, from, src->node, rule, src->reason, tail);
	else
		snprintf(a->line, sizeof(a->line), "gpumem: advised: %s, from job %lld (%s; that "
			 "job is out of the window)%s", policy, from, rule, tail);
}

/* The default advice of job J, the newest profiled run: its own line when it has none. */
static int no_policy(struct gpumem_advised *a, const struct gpumem_advised_job *j)
{
	if (strcmp(j->rule, "unsampled") && strcmp(j->rule, "short") && strcmp(j->rule, "idle") &&
	    j->policy[0])
		return 0;
	if (!j->policy[0] && strcmp(j->rule, "idle"))
		snprintf(a->line, sizeof(a->line), "gpumem: advised: job %lld on %s (%s: %s): no "
			 "policy to advise: site defaults", j->id, j->node, j->rule, j->reason);
	else
		snprintf(a->line, sizeof(a->line), "gpumem: advised: job %lld on %s left its GPUs "
			 "idle (%s: %s): no memory policy can use them (ask for fewer GPUs): site "
			 "defaults", j->id, j->node, j->rule, j->reason);
	return 1;
}

void gpumem_advised_choose(struct gpumem_advised *a, const char *name, int days)
{
	const struct gpumem_advised_job *j = newest(a), *src;
	const char *policy, *rule;
	struct standing s;
	char tail[700] = "";
	long long from;

	a->policy[0] = a->fwd_name[0] = a->src_json[0] = '\0';
	if (j == NULL) {
		snprintf(a->line, sizeof(a->line), "gpumem: advised: no profiled job named %s in "
			 "the last %d days%s: site defaults", name, days,
			 a->njobs ? " (its records have no profile, or were refused)" : "");
		return;
	}
	/* An advised run goes on with its source; any other run gives its own advice. */
	if (j->advised) {
		from = j->from;
		policy = j->from_policy;
		rule = j->from_rule;
		src = gpumem_advised_find(a, from);
	} else {
		if (no_policy(a, j))
			return;
		from = j->id;
		policy = j->policy;
		rule = j->rule;
		src = j;
	}
	s = walk(a, policy);
	if (s.dropped) {
		snprintf(a->line, sizeof(a->line), "gpumem: advised: job %lld advises %s (%s), but "
			 "%s: site defaults", from, policy, rule, s.last ? s.last->text : "");
		return;
	}
	if (s.last)
		snprintf(tail, sizeof(tail), "; %s: %s", s.losses ? "on probation" : "kept",
			 s.last->text);
	choose_from(a, src, from, policy, rule, s.losses ? "probation" : s.kept ? "kept" : "new",
		    tail);
}
