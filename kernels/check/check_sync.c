/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The meeting points of gpumem-check's threads: the monotonic clock every
 * timing uses, the "future" by which the hwloc and NVML threads hand their
 * result to whoever needs it, and the count of GPU threads still creating
 * their context (NVML waits for it: both take the driver's locks).  Shared
 * by main() and the GPU threads, so it belongs to neither.
 */
#include <config.h>

#include <string.h>
#include <time.h>

#include "check_gpu.h"

double gpumem_check_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void gpumem_check_future_init(struct gpumem_check_future *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
}

void gpumem_check_future_set(struct gpumem_check_future *f, void *value)
{
	pthread_mutex_lock(&f->mu);
	f->value = value;
	f->done = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

void *gpumem_check_future_wait(struct gpumem_check_future *f)
{
	void *v;

	pthread_mutex_lock(&f->mu);
	while (!f->done)
		pthread_cond_wait(&f->cv, &f->mu);
	v = f->value;
	pthread_mutex_unlock(&f->mu);
	return v;
}

void gpumem_check_ctx_done(struct gpumem_check_shared *sh)
{
	pthread_mutex_lock(&sh->ctx_mu);
	if (sh->ctx_pending > 0 && --sh->ctx_pending == 0)
		pthread_cond_broadcast(&sh->ctx_cv);
	pthread_mutex_unlock(&sh->ctx_mu);
}

void gpumem_check_ctx_wait(struct gpumem_check_shared *sh)
{
	pthread_mutex_lock(&sh->ctx_mu);
	while (sh->ctx_pending > 0)
		pthread_cond_wait(&sh->ctx_cv, &sh->ctx_mu);
	pthread_mutex_unlock(&sh->ctx_mu);
}
