/* SPDX-License-Identifier: MIT */
/*
 * A secondary's copy built whole on a helper thread (see copy_build.h).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/conf/side_thread.h"
#include "core/conf/sysclock.h"
#include "core/net/loop.h"
#include "core/net/loop_job.h"
#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/serial.h"
#include "core/wire/wire.h"
#include "core/zone/recset.h"
#include "core/zone/zone.h"
#include "core/zone/zone_diff.h"
#include "storage/copy.h"
#include "storage/db.h"
#include "xfr/copy_build.h"
#include "xfr/copy_mirror.h"
#include "xfr/xfr_internal.h"

struct copy_build {
	copy_build_done_fn fn;
	void *ctx;
	/* The thread, detached; its end calls on_done on the loop. */
	struct loop_job job;
	struct copy_build_in in;
	uint8_t apex[DNAME_MAX];
	char *path;
	atomic_bool stop;                /* set by the loop: give up as soon as it can */
	/* Written by the thread before loop_job_finish(), read by the loop after. */
	struct copy_build_out out;
};

struct feed {
	struct zone_builder *b;
	const atomic_bool *stop;
};

/* A recset_fn: one name into the builder, unless the build is to stop. */
static int feed_name(void *arg, const struct recset_name *n)
{
	struct feed *f = arg;
	if (f->stop && atomic_load_explicit(f->stop, memory_order_relaxed))
		return -ECANCELED;
	return recset_add_to_builder(f->b, n);
}

/* A snapshot of rs as received (presigned: RRSIGs attached as they came); NULL with err. */
static struct zone *build_zone(const uint8_t *apex, const struct recset *rs, const char *path,
                               const atomic_bool *stop, char err[256])
{
	struct zone_builder *b = zone_builder_new(apex);
	if (!b) {
		xfr_errf(err, "out of memory");
		return NULL;
	}
	zone_builder_set_presigned(b);
	struct feed f = { b, stop };
	int ret = recset_foreach(rs, feed_name, &f);
	if (ret < 0) {
		zone_builder_free(b);
		if (ret == -ECANCELED)
			xfr_errf(err, "stopped");
		else
			xfr_errf(err, "a received record cannot be served (%s)", strerror(-ret));
		return NULL;
	}
	struct diag d;
	diag_init(&d);
	struct zone *z = zone_builder_finish(b, NULL, path, &d);
	if (!z)
		xfr_errf(err, "%s", d.n ? d.msgs[0] : "cannot build the zone");
	diag_clear(&d);
	return z;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	sysclock_mono_ts(&t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static bool stopping(struct copy_build *cb)
{
	return atomic_load_explicit(&cb->stop, memory_order_relaxed);
}

/* The records of an AXFR as a new recset; NULL with err. */
static struct recset *received(struct copy_build *cb)
{
	struct recset *rs = recset_new();
	if (!rs || recset_apply(rs, cb->in.cl, false) < 0) {
		recset_free(rs);
		xfr_errf(cb->out.err, "out of memory");
		return NULL;
	}
	return rs;
}

/* The copy's SOA expire, or -1 when it has no single SOA at the apex. */
static int64_t soa_expire(const struct recset *rs, const uint8_t *apex)
{
	const struct recset_rrset *s = recset_name_rrset(recset_find(rs, apex), RR_SOA);
	if (!s || s->count != 1 || s->rr[0].rdlen < 22)
		return -1;
	return wire_get_u32(s->rr[0].rdata + s->rr[0].rdlen - 8);
}

/*
 * The stored copy, read for a start or a reload: the database opened
 * (out->db), its rows (out->rs) and refreshed_at.  false with out->err.
 */
static bool load(struct copy_build *cb)
{
	struct copy_build_out *out = &cb->out;
	char err[256] = "";
	out->db = db_open_stoppable(cb->path, &cb->stop, err);
	if (!out->db) {
		xfr_errf(out->err, "%s", err);
		return false;
	}
	uint8_t owner[DNAME_MAX];
	int ret = db_apex(out->db, owner);
	if (ret > 0 && ((size_t)ret != dname_len(cb->apex) || memcmp(owner, cb->apex, (size_t)ret))) {
		/* Checked on the loop before (secondary_add_zone), unless the file
		 * was replaced since: the database is not used. */
		xfr_errf(out->err, "%s holds another zone", cb->path);
		db_close(out->db);
		out->db = NULL;
		return false;
	}
	if ((ret = copy_mirror_load(out->db, &out->rs, &cb->stop)) < 0) {
		xfr_errf(out->err, "cannot load the copy (%s)",
		         ret == -ECANCELED ? "stopped" : strerror(-ret));
		return false;
	}
	if (copy_refreshed_at(out->db, &out->refreshed_at) < 0)
		out->refreshed_at = 0;
	copy_sigs_scan(&out->sigs, out->rs, cb->in.now);
	int64_t expire = soa_expire(out->rs, cb->apex);
	out->expired = expire >= 0 && cb->in.now - out->refreshed_at >= expire;
	return true;
}

static void run(struct copy_build *cb)
{
	struct copy_build_out *out = &cb->out;
	struct timespec t0;
	sysclock_mono_ts(&t0);
	if (cb->in.store_only) {
		/* An IXFR's commit, durable (synchronous=FULL) here, not on the loop. */
		out->stored = copy_apply(cb->in.db, cb->in.cl, cb->in.now) == 0;
		out->store_ms = ms_since(&t0);
		if (!out->stored)
			xfr_errf(out->err, "storage");
		return;
	}
	struct recset *rs = NULL;
	const struct recset *from = cb->in.base;
	if (cb->in.load) {
		bool ok = load(cb);
		out->load_ms = ms_since(&t0);
		/* No copy (none stored yet: no SOA) or an expired one: nothing to build. */
		if (!ok || out->expired || soa_expire(out->rs, cb->apex) < 0)
			return;
		from = out->rs;
		sysclock_mono_ts(&t0);
	} else if (!from && !(from = rs = received(cb))) {
		return;
	}
	struct zone *z = build_zone(cb->apex, from, cb->path, &cb->stop, out->err);
	out->build_ms = ms_since(&t0);
	if (!z || stopping(cb)) {
		if (z)
			xfr_errf(out->err, "stopped");
		zone_free(z);
		recset_free(rs);
		return;
	}
	/* Stored before it is served, so what is stored is always servable. */
	sysclock_mono_ts(&t0);
	int ret = 0;
	if (cb->in.store == COPY_STORE_REPLACE)
		ret = copy_replace(cb->in.db, cb->in.cl, cb->apex, cb->in.now);
	else if (cb->in.store == COPY_STORE_APPLY)
		ret = copy_apply(cb->in.db, cb->in.cl, cb->in.now);
	out->store_ms = ms_since(&t0);
	if (cb->in.store == COPY_STORE_REPLACE)
		change_list_clear(cb->in.cl);
	if (ret < 0 || stopping(cb)) {
		xfr_errf(out->err, "%s", ret < 0 ? "storage" : "stopped");
		zone_free(z);
		recset_free(rs);
		return;
	}
	if (rs)
		copy_sigs_scan(&out->sigs, rs, cb->in.now);
	if (cb->in.dispose) {
		recset_free(cb->in.dispose);
		out->disposed = true;
	}
	/* The IXFR history's entry, as the zone table's watcher would make it
	 * on the loop (xfr_zone_changed): only for a serial that moved forward
	 * (RFC 1982).  The old snapshot is not changed meanwhile: a secondary's
	 * copy is patched only by its own transfers, and none runs. */
	const struct zone *old = cb->in.old;
	if (old && zone_serial(old) != zone_serial(z) &&
	    serial_newer(zone_serial(z), zone_serial(old))) {
		out->newer = true;
		if (zone_diff(old, z, &out->diff, &out->diff_len) < 0)
			out->diff = NULL;
	}
	out->z = z;
	if (rs)
		out->rs = rs;   /* with load, out->rs is the one read */
}

static void *thread_main(void *arg)
{
	struct copy_build *cb = arg;
	/* Below the loop's priority (Linux: nice is per thread), so that where
	 * both share a core the loop's rounds come first. */
	side_thread_lower(10, "copy build");
	run(cb);
	if (cb->in.delay_ms && cb->out.z) {
		/* A test hook: the copy is built and stored but not yet served, so
		 * a test can see the old copy answer (and NOTIFYs arrive) meanwhile.
		 * Slept in short steps, so a stop does not wait for it. */
		uint32_t left = cb->in.delay_ms;
		while (left > 0 && !stopping(cb)) {
			uint32_t step = left < 50 ? left : 50;
			struct timespec ts = { 0, (long)step * 1000000L };
			nanosleep(&ts, NULL);
			left -= step;
		}
	}
	loop_job_finish(&cb->job);   /* the last touch of cb */
	return NULL;
}

static void release(struct copy_build *cb)
{
	free(cb->path);
	free(cb);
}

static void on_done(void *arg)
{
	struct copy_build *cb = arg;
	cb->fn(cb->ctx, &cb->out);
	free(cb->out.diff);
	release(cb);
}

struct copy_build *copy_build_start(struct loop *l, const struct copy_build_in *in,
                                    copy_build_done_fn fn, void *ctx, char err[256])
{
	struct copy_build *cb = calloc(1, sizeof(*cb));
	char *path = in->path ? strdup(in->path) : NULL;
	if (!cb || (in->path && !path)) {
		free(cb);
		free(path);
		xfr_errf(err, "out of memory");
		return NULL;
	}
	cb->fn = fn;
	cb->ctx = ctx;
	cb->in = *in;
	cb->path = path;
	memcpy(cb->apex, in->apex, dname_len(in->apex));
	cb->in.apex = cb->apex;
	cb->in.path = path;
	atomic_init(&cb->stop, false);
	if (loop_job_start(&cb->job, l, thread_main, on_done, cb, err) < 0) {
		release(cb);
		return NULL;
	}
	return cb;
}

bool copy_build_cancel(struct copy_build *cb)
{
	if (!cb)
		return false;
	atomic_store(&cb->stop, true);
	/* A statement under way fails at once (SQLITE_INTERRUPT) and
	 * copy_replace/copy_apply roll their transaction back. */
	db_interrupt(cb->in.db);
	loop_job_unwatch(&cb->job);
	loop_job_wait(&cb->job);
	zone_free(cb->out.z);
	recset_free(cb->out.rs);
	db_close(cb->out.db);
	free(cb->out.diff);
	bool disposed = cb->out.disposed;
	release(cb);
	return disposed;
}
