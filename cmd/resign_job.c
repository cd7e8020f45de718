/* SPDX-License-Identifier: MIT */
/*
 * A zone from a file re-signed on a helper thread (see resign_job.h).
 */
#include "cmd/resign_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/conf/config.h"
#include "core/conf/log.h"
#include "core/conf/side_thread.h"
#include "core/conf/sysclock.h"
#include "core/net/loop_job.h"
#include "core/test_hooks.h"
#include "core/wire/serial.h"
#include "core/zone/zone.h"
#include "core/zone/zone_diff.h"
#include "core/zone/zone_load.h"

struct resign_job {
	struct loop_job job;
	resign_job_done_fn fn;
	void *ctx;
	struct resign_job_in in;    /* in.cur held (zone_hold) until the job is freed */
	struct resign_job_out out;  /* the thread's, read by the loop once it finished */
	uint32_t delay_ms;          /* GEOACME_TEST_RESIGN_DELAY_MS (core/test_hooks.h) */
};

static void run(struct resign_job *j)
{
	struct resign_job_out *out = &j->out;
	struct timespec t0, t1;
	sysclock_mono_ts(&t0);
	struct zone *z = zone_load_resign(j->in.cfg, j->in.zc, j->in.cur, j->in.sites, j->in.signer,
	                                  &out->d);
	/* The IXFR history's entry, as the zone table's watcher would make it
	 * on the loop (xfr_zone_changed): for a serial that moved forward. */
	const struct zone *old = j->in.cur;
	if (z && j->in.diff && serial_newer(zone_serial(z), zone_serial(old)) &&
	    zone_diff(old, z, &out->diff, &out->diff_len) < 0) {
		log_error("%s: cannot record the re-signing for IXFR; secondaries will use AXFR",
		          j->in.zc->zone);
		out->diff = NULL;
	}
	out->z = z;
	sysclock_mono_ts(&t1);
	out->ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
}

static void *thread_main(void *arg)
{
	struct resign_job *j = arg;
	/* Below the loop's priority (Linux: nice is per thread), so that where
	 * both share a core the loop's rounds come first. */
	side_thread_lower(10, "re-signing");
	run(j);
	if (j->delay_ms) {
		/* A test hook: the zone is re-signed but not yet served, so a test
		 * can see the old signatures answer (and the rollover wait). */
		side_thread_sleep_ms(j->delay_ms);
	}
	/* The last touch of j: the loop may free it at once. */
	loop_job_finish(&j->job);
	return NULL;
}

void resign_job_detach(struct resign_job *j)
{
	if (j)
		loop_job_unwatch(&j->job);
}

void resign_job_free(struct resign_job *j)
{
	if (!j)
		return;
	resign_job_detach(j);
	loop_job_wait(&j->job);   /* the thread is done with j */
	zone_free(j->out.z);
	free(j->out.diff);
	diag_clear(&j->out.d);
	zone_free((struct zone *)j->in.cur);
	free(j);
}

/* On the loop once the thread finished (loop_job.h: not joined). */
static void on_done(void *arg)
{
	struct resign_job *j = arg;
	struct timespec t0, t1, t2;
	sysclock_mono_ts(&t0);
	bool served = j->out.z != NULL;
	j->fn(j->ctx, &j->out);
	served = served && !j->out.z;
	sysclock_mono_ts(&t1);
	/* Whatever the callback did not take. */
	zone_free(j->out.z);
	free(j->out.diff);
	diag_clear(&j->out.d);
	zone_free((struct zone *)j->in.cur);
	sysclock_mono_ts(&t2);
	if (served)
		log_info("%s: the re-signed snapshot swapped in on the loop in %.1f ms, the old one "
		         "let go in %.1f ms", j->in.zc->zone,
		         (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
		         (double)(t2.tv_sec - t1.tv_sec) * 1e3 + (double)(t2.tv_nsec - t1.tv_nsec) / 1e6);
	free(j);
}

struct resign_job *resign_job_start(struct loop *l, const struct resign_job_in *in,
                                    resign_job_done_fn fn, void *ctx, char err[256])
{
	struct resign_job *j = calloc(1, sizeof(*j));
	if (!j) {
		snprintf(err, 256, "out of memory");
		return NULL;
	}
	*j = (struct resign_job){ .fn = fn, .ctx = ctx, .in = *in };
	diag_init(&j->out.d);
	const char *delay = test_hook(TEST_HOOK_RESIGN_DELAY);
	if (delay)
		j->delay_ms = (uint32_t)strtoul(delay, NULL, 10);
	j->in.cur = zone_hold(in->cur);
	if (loop_job_start(&j->job, l, thread_main, on_done, j, err) < 0) {
		zone_free((struct zone *)j->in.cur);
		free(j);
		return NULL;
	}
	return j;
}
