/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The persisting-L2 A/B of one GPU (--l2-ab): the same streaming kernel
 * with and without an access-policy window over a hot array, alternated,
 * at the job's set-aside (--l2-setaside) or else the most the GPU allows.
 * With a job's set-aside it first measures that set-aside's own cost:
 * triad, no window, with no set-aside and with the job's, alternated.  A
 * set-aside taxes every kernel, with a window or without, so the window
 * A/B alone (both arms under it) never shows it.  Run last, after every
 * other figure, as it changes the context's L2 set-aside (and sets it
 * back to 0).
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_gpu_ctx.h"

static int set_window(struct gpumem_check_ctx *c, void *base, size_t bytes)
{
	cudaStreamAttrValue v;

	memset(&v, 0, sizeof(v));
	v.accessPolicyWindow.base_ptr = base;
	v.accessPolicyWindow.num_bytes = bytes;
	v.accessPolicyWindow.hitRatio = bytes ? 1.0f : 0.0f;
	v.accessPolicyWindow.hitProp = bytes ? cudaAccessPropertyPersisting : cudaAccessPropertyNormal;
	v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
	return cudaStreamSetAttribute(c->st, cudaStreamAttributeAccessPolicyWindow, &v) ==
		cudaSuccess ? 0 : -1;
}

/*
 * The set-aside of the A/B: the job's (--l2-setaside, capped at what the
 * GPU allows), else the whole set-aside the GPU allows.
 */
static size_t l2ab_setaside(const struct gpumem_check_ctx *c)
{
	const struct gpumem_check_device *d = c->d;
	uint64_t want = c->o->l2_setaside_bytes;

	if (c->o->l2_setaside_pct > 0)
		want = (uint64_t)(c->o->l2_setaside_pct * (double)d->l2_bytes / 100.0);
	if (want == 0 || want > d->persisting_max)
		want = d->persisting_max;
	return (size_t)want;
}

/*
 * Reserve SETASIDE bytes of persisting L2; -1 with l2ab.error filled where
 * the GPU or the driver offers none.
 */
static int l2ab_reserve(struct gpumem_check_ctx *c, size_t setaside, int *maxwin)
{
	struct gpumem_check_device *d = c->d;
	struct gpumem_check_l2ab *l = &d->l2ab;
	cudaError_t e;

	if (!d->persisting_max) {
		snprintf(l->error, sizeof(l->error), "the GPU has no persisting L2 (persistingL2CacheMaxSize 0)");
		return -1;
	}
	if (cudaDeviceGetAttribute(maxwin, cudaDevAttrMaxAccessPolicyWindowSize, d->ordinal) !=
	    cudaSuccess || *maxwin <= 0) {
		snprintf(l->error, sizeof(l->error), "no access-policy window support");
		cudaGetLastError();
		return -1;
	}
	e = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, setaside);
	if (e != cudaSuccess) {
		/* e.g. refused under MPS: not a fault of the GPU */
		snprintf(l->error, sizeof(l->error), "cudaDeviceSetLimit(persisting L2 %zu): %s",
			 setaside, cudaGetErrorString(e));
		cudaGetLastError();
		return -1;
	}
	return 0;
}

/*
 * Enqueue the warm-up pair and the timed pairs, arms alternating; *refused
 * when the driver will not set or clear the window.
 */
static cudaError_t l2ab_enqueue(struct gpumem_check_ctx *c, size_t hot, int *refused)
{
	int r, arm, k = 0;
	cudaError_t e;

	e = cudaSuccess;
	/* r = 0 is the warm-up pair */
	for (r = 0; r <= L2AB_REPEATS && e == cudaSuccess && !*refused; r++)
		for (arm = 0; arm < 2 && e == cudaSuccess && !*refused; arm++, k += 2) {
			if (arm == 0) {
				/*
				 * The reset acts when called, not in stream order:
				 * wait for the previous "with" run first.
				 */
				e = cudaStreamSynchronize(c->st);
				if (e != cudaSuccess)
					break;
				*refused = set_window(c, NULL, 0) < 0 ||
					cudaCtxResetPersistingL2Cache() != cudaSuccess;
			} else {
				*refused = set_window(c, c->a, hot) < 0;
			}
			if (*refused)
				break;
			e = cudaEventRecord(c->ev[k], c->st);
			if (e == cudaSuccess)
				e = (cudaError_t)gpumem_check_launch_hotstream(c->st, c->g, c->a, hot / 16,
									       c->b, c->n, c->ctl);
			if (e == cudaSuccess)
				e = cudaEventRecord(c->ev[k + 1], c->st);
		}
	return e;
}

/* The medians of both arms, once the stream is synchronised. */
static void l2ab_collect(struct gpumem_check_ctx *c)
{
	struct gpumem_check_l2ab *l = &c->d->l2ab;
	double t[2][L2AB_REPEATS];
	int r, arm;

	for (r = 1; r <= L2AB_REPEATS; r++)
		for (arm = 0; arm < 2; arm++) {
			int i = 2 * (2 * r + arm);
			t[arm][r - 1] = elapsed_ms(c->ev[i], c->ev[i + 1]);
		}
	l->ms_without = gpumem_check_median(t[0], L2AB_REPEATS);
	l->ms_with = gpumem_check_median(t[1], L2AB_REPEATS);
	l->speedup = l->ms_with > 0 ? l->ms_without / l->ms_with : 0;
	l->repeats = L2AB_REPEATS;
	l->run = l->ms_without > 0 && l->ms_with > 0;
	if (!l->run)
		snprintf(l->error, sizeof(l->error), "no valid timing");
}

/*
 * One arm of the set-aside's cost: the limit LIMIT (once the stream is
 * idle: it acts when called), a warm-up triad, a timed one, into *GBPS.
 * *REFUSED when the driver would not set the limit.
 */
static cudaError_t sa_arm(struct gpumem_check_ctx *c, size_t limit, double *gbps, int *refused)
{
	cudaError_t e = cudaStreamSynchronize(c->st);
	double ms;
	int k;

	if (e != cudaSuccess)
		return e;
	*refused = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, limit) != cudaSuccess;
	if (*refused)
		return cudaSuccess;
	for (k = 0; k < 2 && e == cudaSuccess; k++) {
		if (k)
			e = cudaEventRecord(c->ev[0], c->st);
		if (e == cudaSuccess)
			e = (cudaError_t)gpumem_check_launch_triad(c->st, c->a, c->b, c->c, 0.5, c->n);
	}
	if (e == cudaSuccess)
		e = cudaEventRecord(c->ev[1], c->st);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(c->st);
	ms = e == cudaSuccess ? elapsed_ms(c->ev[0], c->ev[1]) : 0;
	*gbps = ms > 0 ? 3.0 * (double)c->arr_bytes / (ms * 1e6) : 0;
	return e;
}

/*
 * The set-aside's own cost: triad with no set-aside and with SETASIDE
 * bytes, arms alternated (without first) so that drift favours neither,
 * the medians and their ratio.  Leaves the limit at SETASIDE or 0.
 */
static void setaside_cost(struct gpumem_check_ctx *c, size_t setaside)
{
	struct gpumem_check_setaside *sa = &c->d->l2ab.sa;
	double t[2][L2AB_REPEATS];
	int r, arm, refused = 0;
	cudaError_t e = cudaSuccess;

	sa->bytes = setaside;
	sa->percent = c->d->l2_bytes ? 100.0 * (double)setaside / (double)c->d->l2_bytes : 0;
	if (!setaside) {
		snprintf(sa->error, sizeof(sa->error), "the GPU has no persisting L2 "
			 "(persistingL2CacheMaxSize 0)");
		return;
	}
	for (r = 0; r < L2AB_REPEATS && e == cudaSuccess && !refused; r++)
		for (arm = 0; arm < 2 && e == cudaSuccess && !refused; arm++)
			e = sa_arm(c, arm ? setaside : 0, &t[arm][r], &refused);
	if (e != cudaSuccess) {
		cuda_fail(c, sa->error, NULL, "L2 set-aside cost", e);
		return;
	}
	if (refused) {
		snprintf(sa->error, sizeof(sa->error), "cudaDeviceSetLimit(persisting L2 %zu) refused",
			 setaside);
		cudaGetLastError();
		return;
	}
	sa->gbps_without = gpumem_check_median(t[0], L2AB_REPEATS);
	sa->gbps_with = gpumem_check_median(t[1], L2AB_REPEATS);
	sa->repeats = L2AB_REPEATS;
	sa->run = sa->gbps_without > 0 && sa->gbps_with > 0;
	sa->ratio = sa->run ? sa->gbps_with / sa->gbps_without : 0;
	if (!sa->run)
		snprintf(sa->error, sizeof(sa->error), "no valid timing");
}

/*
 * The persisting-L2 A/B.  Arms alternate (without, with, without, ...) so
 * clock or thermal drift cannot favour one; persisting lines are reset
 * before each "without" run so the previous "with" run cannot help it.
 * The limit is set back to 0 at the end.
 */
void gpumem_check_l2_ab(struct gpumem_check_ctx *c)
{
	struct gpumem_check_device *d = c->d;
	struct gpumem_check_l2ab *l = &d->l2ab;
	int maxwin = 0, refused = 0;
	size_t setaside, hot;
	cudaError_t e;

	l->l2_bytes = d->l2_bytes;
	setaside = l2ab_setaside(c);
	/* From here on the limit may be set: every way out goes through 'fail'. */
	if (l->sa.asked)
		setaside_cost(c, setaside);
	if (c->dead || l2ab_reserve(c, setaside, &maxwin) < 0)
		goto fail;
	hot = setaside < (size_t)maxwin ? setaside : (size_t)maxwin;
	hot &= ~(size_t)15;
	if (hot > c->arr_bytes)
		hot = c->arr_bytes;
	l->setaside_bytes = setaside;
	l->hot_bytes = hot;
	l->stream_bytes = c->arr_bytes;
	e = l2ab_enqueue(c, hot, &refused);
	if (e == cudaSuccess && !refused)
		e = cudaStreamSynchronize(c->st);
	if (e != cudaSuccess) {
		cuda_fail(c, l->error, NULL, "L2 A/B", e);
		goto fail;
	}
	if (refused) {
		snprintf(l->error, sizeof(l->error), "access-policy window refused by the driver");
		cudaGetLastError();
		goto fail;
	}
	l2ab_collect(c);
fail:
	if (!c->dead) {
		set_window(c, NULL, 0);
		cudaCtxResetPersistingL2Cache();
		cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
		cudaGetLastError();
	}
}
