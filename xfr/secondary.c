/* SPDX-License-Identifier: MIT */
/*
 * geoacme as a secondary (see secondary.h): SOA timers, NOTIFY in, and the
 * transfer client, a small state machine on a non-blocking TCP socket.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/conf/metrics.h"
#include "core/conf/sysclock.h"
#include "core/net/loop.h"
#include "core/net/source.h"
#include "core/test_hooks.h"
#include "core/tsig/tsig.h"
#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "core/wire/msg.h"
#include "core/wire/packet.h"
#include "core/wire/query.h"
#include "core/wire/rrset.h"
#include "core/wire/serial.h"
#include "core/wire/wire.h"
#include "core/zone/recset.h"
#include "core/zone/zone.h"
#include "core/zone/zone_diff.h"
#include "core/zone/zone_patch.h"
#include "core/zone/zone_table.h"
#include "storage/copy.h"
#include "storage/db.h"
#include "storage/records.h"
#include "xfr/copy_build.h"
#include "xfr/copy_mirror.h"
#include "xfr/copy_sigs.h"
#include "xfr/secondary.h"
#include "xfr/xfr_internal.h"

/*
 * A transfer is judged once a window: one that received less than
 * SEC_PROGRESS_RATE bytes a second over its last window (nothing at all
 * included) is abandoned; one that keeps coming goes on however long it
 * takes.  A fixed limit cut big copies over slow links: at 30 s, a
 * 1M-record zone (about 125 MB) needed 33 Mbit/s (issue #26 point 4; the
 * same rule as a connection's lifetime on the serving side, core/net/tcp.c).
 */
#define SEC_WINDOW_MS 30000
#define SEC_PROGRESS_RATE 1024      /* bytes a second, averaged over a window */
#define SEC_IN_MAX (2 + 65535)      /* one framed message */
#define SEC_REQ_MAX 1024
#define SEC_RETRY_MIN_S 1           /* floors, so a zero in a SOA cannot spin */
#define SEC_REFRESH_MIN_S 1
#define SEC_SOA_MAX (2 * DNAME_MAX + 20)   /* canonical SOA rdata */
/*
 * The response is taken apart for at most this long in one loop round;
 * the rest waits for the next (a 0 ms timer), so the queries of every
 * zone are answered in between.  Bounded by time, not bytes: what a
 * message costs varies with its records (names to decompress and
 * lowercase, TSIG) and with the machine (issue #26, bench/stall.sh
 * secondary-copy: 64 KiB rounds of up to 27 ms).
 */
#define SEC_ROUND_BUDGET_US 1000

/* Where the response to our request stands (RFC 1995 4, RFC 5936 2.2). */
enum sec_state {
	ST_FIRST,        /* nothing yet: the first record is the primary's SOA */
	ST_AFTER_FIRST,  /* the second record tells IXFR (a SOA) from AXFR */
	ST_AXFR,         /* every record until the closing SOA */
	ST_DELS,         /* IXFR: deletions of one difference, until its new SOA */
	ST_ADDS,         /* IXFR: additions, until the next difference or the end */
	ST_DONE,
};

struct sec_zone;

struct sec_conn {
	struct sec_zone *sz;
	int fd;
	const struct config_addr *primary;
	char who[INET6_ADDRSTRLEN + 8];
	uint8_t req[SEC_REQ_MAX];
	size_t req_len, req_off;
	uint8_t *in;
	size_t in_len;
	uint16_t id;
	bool ixfr;
	uint8_t mac[TSIG_MAC_MAX];   /* the request's, then each message's */
	size_t mac_len;
	bool first_msg;
	int64_t timer;
	enum sec_state st;
	uint32_t serial;             /* the primary's (first SOA) */
	uint8_t soa[SEC_SOA_MAX];    /* ... and that SOA's rdata, which must close an AXFR */
	uint16_t soa_len;
	bool incremental;
	bool not_newer;              /* the first SOA is not newer than the copy: stop there */
	size_t records, messages, bytes;
	uint64_t read_total;         /* bytes read from the primary, ... */
	uint64_t read_at_window;     /* ... and as many at the window's start */
	struct change_list cl;       /* AXFR: the zone; IXFR: deletions and additions in order */
	/* The message being taken apart (c->in + 2), its header and TSIG
	 * checked, when in_msg: where its next record starts and how many
	 * are left (take).  resume: the timer that goes on with it. */
	bool in_msg;
	size_t rr_pos;
	unsigned rr_next, rr_count;
	int64_t resume;
	size_t rounds;               /* loop rounds the response was read in */
};

struct sec_zone {
	struct secondary *s;
	uint8_t apex[DNAME_MAX];
	char name[DNAME_MAX * 4 + 2];
	struct config_addr *primaries;
	size_t n_primaries;
	bool has_key;
	struct tsig_key key;
	char *path;
	struct db *db;
	struct recset *rs;
	struct rrsig_expiry sigs;       /* the earliest RRSIG expiration of rs */
	bool have_data;
	uint32_t serial, refresh, retry, expire;
	int64_t refreshed_at;        /* unix s: the copy was last confirmed current */
	bool serving;
	bool force_axfr;             /* the last IXFR could not be applied */
	bool force_serial;           /* `ctl zone-retransfer --force`: the next AXFR at any serial */
	int64_t timer;
	int64_t next_at;             /* unix s of the next scheduled check (0: none) */
	struct sec_conn *conn;
	size_t next_primary, tries;
	bool again;                  /* a NOTIFY came during a transfer or a build */
	/* A copy built whole beside the loop (copy_build.h), and what the loop
	 * finishes with when it is done; sz->rs (the base of an IXFR's build),
	 * sz->cl and sz->db are the thread's until then. */
	struct copy_build *build;
	struct zone *held;           /* the copy served when the build started, held */
	struct change_list cl;       /* the transfer's records, taken from its conn */
	struct zone_patch *patch;    /* an IXFR's patch, applied once its store is durable */
	int64_t load_timer;          /* the stored copy's load starts (secondary_add_zone) */
	bool no_db;                  /* the database could not be opened: no checks until a reload */
	struct sec_done {
		bool incremental, confirm_only;
		bool load;                   /* the stored copy read (start, reload) */
		bool store_only;             /* an IXFR stored; sz->patch serves it */
		char who[INET6_ADDRSTRLEN + 8];
		uint32_t serial;             /* the primary's */
		size_t records, messages, bytes;
		int64_t now;
		struct timespec t0;
	} done;
	bool outdated;               /* in an episode of older offers (logged once) */
	uint32_t max_records, max_bytes;   /* caps on one received transfer */
	uint64_t *mx;                /* metrics_secondary(): by enum metrics_secondary */
};

struct secondary {
	struct zone_table *t;
	struct loop *l;
	struct net_source src;       /* where requests leave from (core/net/source.h) */
	struct sec_zone **zones;
	size_t n;
	uint32_t build_delay_ms;     /* GEOACME_TEST_XFR_BUILD_DELAY_MS (core/test_hooks.h) */
	uint32_t window_ms;          /* SEC_WINDOW_MS, or GEOACME_TEST_XFR_IN_WINDOW_MS */
	uint32_t budget_us;          /* SEC_ROUND_BUDGET_US, or GEOACME_TEST_XFR_IN_BUDGET_US */
};

static struct log_limit lim_notify;


/* Unix seconds through the loop's one clock (loop.h), so a test clock
 * drives refresh, expiry and TSIG time like every other timer. */
static int64_t now_s(const struct secondary *s)
{
	return loop_wall_s(s->l);
}

static struct sec_zone *find_zone(const struct secondary *s, const uint8_t *apex)
{
	size_t len = dname_len(apex);
	for (size_t i = 0; i < s->n; i++)
		if (dname_len(s->zones[i]->apex) == len && memcmp(s->zones[i]->apex, apex, len) == 0)
			return s->zones[i];
	return NULL;
}

/*
 * A transfer, a build or a store is under way, or the stored copy is not
 * read yet (no database until then): a check waits for it (sz->again).
 */
static bool busy(const struct sec_zone *sz)
{
	return sz->conn || sz->build || !sz->db;
}

/* --- the copy --- */

static const struct recset_rr *soa_of(const struct recset *rs, const uint8_t *apex)
{
	const struct recset_rrset *s = recset_name_rrset(recset_find(rs, apex), RR_SOA);
	return s && s->count == 1 && s->rr[0].rdlen >= 22 ? &s->rr[0] : NULL;
}

/* Serial and timers from the copy's SOA. */
static void read_soa(struct sec_zone *sz)
{
	const struct recset_rr *soa = soa_of(sz->rs, sz->apex);
	sz->have_data = soa != NULL;
	if (!soa)
		return;
	const uint8_t *p = soa->rdata + soa->rdlen - 20;
	sz->serial = wire_get_u32(p);
	sz->refresh = wire_get_u32(p + 4);
	sz->retry = wire_get_u32(p + 8);
	sz->expire = wire_get_u32(p + 12);
}

/*
 * The served copy's patch for a difference already applied to sz->rs,
 * prepared but not applied: the names the difference touches, each with
 * all its records now, in time proportional to the difference.  NULL when
 * the copy is to be built whole (not served yet, grown enough to compact,
 * or a change a patch does not make: core/zone/zone_patch.h; a copy an
 * outgoing transfer holds is patched too); the served copy is untouched
 * either way.
 */
static struct zone_patch *prepare_patch(struct sec_zone *sz, const struct change_list *cl)
{
	struct zone *z = sz->serving ? zone_table_edit(sz->s->t, sz->apex) : NULL;
	if (!z)
		return NULL;
	struct zone_patch *p;
	char err[256] = "";
	int ret = recset_prepare_patch(z, sz->rs, cl, NULL, &p, err);
	if (ret == -E2BIG)
		log_info("%s: compacting the copy (patches added %zu bytes)", sz->name,
		         zone_patch_growth(z));
	else if (ret < 0)
		log_debug("%s: the copy is built whole (%s)", sz->name,
		          ret == -EAGAIN ? "not a change a patch makes" : err[0] ? err : strerror(-ret));
	return p;
}

/*
 * Makes a prepared patch visible, between queries, and tells the zone
 * table's watchers (the IXFR history we serve our own secondaries, NOTIFY
 * out) with its difference, as a replace would with the whole snapshot.
 */
static void apply_patch(struct sec_zone *sz, struct zone_patch *p)
{
	struct zone *z = zone_table_edit(sz->s->t, sz->apex);
	uint8_t *diff = NULL;
	size_t len = 0;
	if (zone_diff_patch(z, p, &diff, &len) < 0)
		diff = NULL;   /* the history starts over: our secondaries take an AXFR */
	zone_patch_apply(p);
	zone_patch_free(p);
	zone_table_patched(sz->s->t, z, diff, len);
	free(diff);
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	sysclock_mono_ts(&t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static void serve(struct sec_zone *sz, struct zone *z)
{
	int ret = sz->serving ? zone_table_replace(sz->s->t, z) : zone_table_add(sz->s->t, z);
	if (ret < 0) {
		log_error("%s: cannot serve the copy (%s)", sz->name, strerror(-ret));
		zone_free(z);
		return;
	}
	sz->serving = true;
}

/* Past expire since the copy was last confirmed: stop answering for it. */
static void check_expiry(struct sec_zone *sz)
{
	if (!sz->serving || !sz->have_data)
		return;
	int64_t age = now_s(sz->s) - sz->refreshed_at;
	if (age < (int64_t)sz->expire)
		return;
	zone_table_remove(sz->s->t, sz->apex);
	sz->serving = false;
	log_error("%s: the copy expired (not confirmed for %lld s, SOA expire %u s); no longer "
	          "served until a primary answers", sz->name, (long long)age, sz->expire);
}

/* --- timers --- */

static void start_refresh(struct sec_zone *sz);

static void on_timer(struct loop *l, void *arg)
{
	struct sec_zone *sz = arg;
	(void)l;
	sz->timer = 0;
	check_expiry(sz);
	start_refresh(sz);
}

static void schedule(struct sec_zone *sz, uint32_t delay_s)
{
	struct loop *l = sz->s->l;
	if (sz->timer > 0)
		loop_timer_cancel(l, sz->timer);
	int64_t id = loop_timer_add(l, (uint64_t)delay_s * 1000, on_timer, sz);
	sz->timer = id > 0 ? id : 0;
	sz->next_at = id > 0 ? now_s(sz->s) + (int64_t)delay_s : 0;
}

/* --- the transfer --- */

static void conn_close(struct sec_conn *c)
{
	struct sec_zone *sz = c->sz;
	struct loop *l = sz->s->l;
	if (c->fd >= 0) {
		loop_del_fd(l, c->fd);
		close(c->fd);
	}
	if (c->timer > 0)
		loop_timer_cancel(l, c->timer);
	if (c->resume > 0)
		loop_timer_cancel(l, c->resume);
	change_list_clear(&c->cl);
	free(c->in);
	free(c);
	sz->conn = NULL;
}

static void conn_open(struct sec_zone *sz);

/* Done with this round: the next check, sooner when a NOTIFY came meanwhile. */
static void round_end(struct sec_zone *sz, bool ok)
{
	sz->tries = 0;
	if (sz->again) {
		sz->again = false;
		schedule(sz, 0);
		return;
	}
	/* Without a copy there is no SOA to take timers from: ask every 5 s. */
	uint32_t delay = !sz->have_data ? 5 : ok ? sz->refresh : sz->retry;
	uint32_t floor = ok ? SEC_REFRESH_MIN_S : SEC_RETRY_MIN_S;
	schedule(sz, delay < floor ? floor : delay);
}

/* After a check that did not confirm the copy: the next primary, once each per round. */
static void next_primary(struct sec_zone *sz)
{
	check_expiry(sz);
	if (++sz->tries < sz->n_primaries) {
		sz->next_primary = (sz->next_primary + 1) % sz->n_primaries;
		conn_open(sz);
		return;
	}
	round_end(sz, false);
}

/* Ends the transfer without taking it; `refused` (enum metrics_secondary) or -1. */
static void conn_fail_v(struct sec_conn *c, int refused, const char *fmt, va_list ap)
{
	struct sec_zone *sz = c->sz;
	char why[256];
	vsnprintf(why, sizeof(why), fmt, ap);
	if (refused >= 0) {
		log_warn("%s: transfer from %s refused: %s; the copy (serial %u) is kept", sz->name,
		         c->who, why, sz->serial);
		METRICS_INC(sz->mx[refused]);
	} else {
		log_warn("%s: transfer from %s failed: %s", sz->name, c->who, why);
	}
	METRICS_INC(metrics.xfr_in[METRICS_XFRIN_FAILED]);
	conn_close(c);
	next_primary(sz);
}

__attribute__((format(printf, 2, 3)))
static void conn_fail(struct sec_conn *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	conn_fail_v(c, -1, fmt, ap);
	va_end(ap);
}

/* A transfer refused for what it holds (a cap, a bad closing SOA, ...). */
__attribute__((format(printf, 3, 4)))
static void conn_refuse(struct sec_conn *c, enum metrics_secondary why, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	conn_fail_v(c, (int)why, fmt, ap);
	va_end(ap);
}

/*
 * A primary offered `serial`, which is not newer than the copy's (RFC 1982
 * 3.2: older, or 2^31 away, which has no order): not taken, since a copy
 * never moves back (RFC 1034 4.3.5).  Counted each time, logged once per
 * episode; the episode ends when a newer serial is offered.
 */
static void outdated_offer(struct sec_zone *sz, const char *route, const char *who,
                           uint32_t serial)
{
	METRICS_INC(sz->mx[METRICS_SEC_OUTDATED]);
	enum serial_order o = serial_compare(serial, sz->serial);
	if (sz->outdated) {
		log_debug("%s: %s from %s offers serial %u, %s than our %u: still outdated", sz->name,
		          route, who, serial, serial_order_name(o), sz->serial);
		return;
	}
	sz->outdated = true;
	log_warn("%s: %s from %s offers serial %u, %s than our copy's %u (RFC 1982): the primary "
	         "is outdated; copy kept, not logged again until a newer serial is offered (a primary "
	         "whose serial was reset: doc/operations.md)", sz->name, route, who, serial,
	         o == SERIAL_UNDEFINED ? "2^31 away, no order," : "older", sz->serial);
}

/* A newer serial was offered: an episode of outdated offers is over. */
static void newer_offer(struct sec_zone *sz, const char *who, uint32_t serial)
{
	if (!sz->outdated)
		return;
	sz->outdated = false;
	log_info("%s: %s offers serial %u, newer than our %u, again", sz->name, who, serial,
	         sz->serial);
}

/* Takes a difference back out of the copy in memory (the database never saw it). */
static void unapply(struct sec_zone *sz, const struct change_list *cl)
{
	int ret = copy_mirror_undo(&sz->rs, sz->db, cl);
	if (ret == 1) {
		log_warn("%s: the copy in memory could not be put back (out of memory); read again "
		         "from %s", sz->name, sz->path);
	} else if (ret < 0) {
		log_error("%s: the copy in memory could not be put back nor read again from %s (%s); "
		          "the next transfer is an AXFR", sz->name, sz->path, strerror(-ret));
		sz->force_axfr = true;
	}
}

/*
 * The copy is current again with what the transfer brought (sz->rs and the
 * database hold it): its timers, and the news in the log.
 */
static void taken(struct sec_zone *sz, const struct rrsig_expiry *sigs, bool patched, double loop_ms,
                  const char *beside)
{
	const struct sec_done *dn = &sz->done;
	uint32_t old = sz->serial;
	bool had = sz->have_data;
	read_soa(sz);
	if (sigs)
		sz->sigs = *sigs;   /* an AXFR's, read on the build's thread */
	else
		copy_sigs_applied(&sz->sigs, sz->rs, &sz->cl, dn->now);
	sz->refreshed_at = dn->now;
	sz->force_axfr = false;
	sz->force_serial = false;
	METRICS_INC(metrics.xfr_in[dn->incremental ? METRICS_XFRIN_IXFR : METRICS_XFRIN_AXFR]);
	if (patched)
		METRICS_INC(metrics.xfr_in_patched);
	log_info("%s: %s from %s, serial %u -> %u: %zu records in %zu messages, %zu bytes; copy %s "
	         "in %.1f ms%s", sz->name, dn->incremental ? "IXFR" : "AXFR", dn->who,
	         had ? old : 0, sz->serial, dn->records, dn->messages, dn->bytes,
	         patched ? "patched" : "built whole", loop_ms, beside);
}

/*
 * Serves a copy built beside the loop.  Its IXFR history entry was made
 * there too (out->diff), so the swap does not compare the two snapshots
 * on the loop: the served one is replaced with the difference, or with
 * none when the serial did not move forward (the history starts over), as
 * the zone table's watcher would.
 */
static void serve_built(struct sec_zone *sz, struct copy_build_out *out)
{
	struct zone *z = out->z;
	out->z = NULL;
	bool moved = sz->held && zone_serial(sz->held) != zone_serial(z);
	if (!sz->serving || !moved) {
		serve(sz, z);   /* added, or the same serial: the watcher has nothing to compare */
		return;
	}
	int ret = zone_table_replace_diffed(sz->s->t, z, out->newer ? out->diff : NULL,
	                                    out->newer ? out->diff_len : 0);
	if (ret < 0) {
		log_error("%s: cannot serve the copy (%s)", sz->name, strerror(-ret));
		zone_free(z);
	}
}

/* Not served any more (a copy that expired, or cannot be read). */
static void unserve(struct sec_zone *sz)
{
	if (sz->serving)
		zone_table_remove(sz->s->t, sz->apex);
	sz->serving = false;
}

/*
 * The stored copy was read beside the loop (a start or a reload): its
 * database, mirror and timers are the zone's from now on, and its
 * snapshot replaces the previous generation's copy that answered
 * meanwhile (or is served for the first time).
 */
static void loaded(struct sec_zone *sz, struct copy_build_out *out)
{
	if (!out->db) {
		log_error("%s: the copy in %s cannot be used (%s); the zone is not served, nor "
		          "transferred, until a reload", sz->name, sz->path, out->err);
		unserve(sz);
		zone_free(sz->held);
		sz->held = NULL;
		sz->have_data = false;
		sz->no_db = true;
		return;
	}
	sz->db = out->db;
	out->db = NULL;
	if (out->rs) {
		recset_free(sz->rs);
		sz->rs = out->rs;
		out->rs = NULL;
		sz->sigs = out->sigs;
	} else {
		/* The database is there, its rows could not be read: a whole
		 * transfer replaces them. */
		log_error("%s: %s: %s; the next transfer is an AXFR", sz->name, sz->path, out->err);
		sz->force_axfr = true;
	}
	read_soa(sz);
	sz->refreshed_at = out->refreshed_at;
	int64_t age = now_s(sz->s) - sz->refreshed_at;
	if (out->z) {
		serve_built(sz, out);
		log_info("%s: serving the copy from %s, serial %u, confirmed %lld s ago (expires "
		         "after %u s; read beside the loop in %.1f ms, built in %.1f ms)", sz->name,
		         sz->path, sz->serial, (long long)age, sz->expire, out->load_ms, out->build_ms);
	} else {
		unserve(sz);
		if (out->expired)
			log_warn("%s: the copy in %s (serial %u) has expired; waiting for a primary",
			         sz->name, sz->path, sz->serial);
		else if (sz->have_data)
			log_error("%s: the copy in %s (serial %u) cannot be served (%s); waiting for a "
			          "primary", sz->name, sz->path, sz->serial, out->err);
	}
	zone_free(sz->held);
	sz->held = NULL;
	round_end(sz, true);   /* sz->again: the first check, now */
}

/*
 * An IXFR's commit ended beside the loop: once it is durable, the patch
 * prepared before makes the served copy the new serial; else the copy is
 * as it was, in memory too, and the next transfer is an AXFR.
 */
static void stored(struct sec_zone *sz, struct copy_build_out *out)
{
	const struct sec_done *dn = &sz->done;
	struct zone_patch *p = sz->patch;
	sz->patch = NULL;
	if (!out->stored) {
		zone_patch_free(p);   /* never applied: the served copy is as it was */
		unapply(sz, &sz->cl);
		change_list_clear(&sz->cl);
		sz->force_axfr = true;
		log_warn("%s: transfer from %s failed: the difference cannot be applied (%s)",
		         sz->name, dn->who, out->err);
		METRICS_INC(metrics.xfr_in[METRICS_XFRIN_FAILED]);
		next_primary(sz);
		return;
	}
	apply_patch(sz, p);
	char beside[64];
	snprintf(beside, sizeof(beside), " (stored beside the loop in %.1f ms)", out->store_ms);
	taken(sz, NULL, true, ms_since(&dn->t0), beside);
	change_list_clear(&sz->cl);
	round_end(sz, true);
}

/* A build beside the loop ended (copy_build.h): serve its copy, or say why not. */
static void build_done(void *ctx, struct copy_build_out *out)
{
	struct sec_zone *sz = ctx;
	const struct sec_done *dn = &sz->done;
	sz->build = NULL;
	if (dn->load) {
		loaded(sz, out);
		return;
	}
	if (dn->store_only) {
		stored(sz, out);
		return;
	}
	if (dn->confirm_only) {
		zone_free(sz->held);
		sz->held = NULL;
		if (out->z)
			serve(sz, out->z);
		else
			log_error("%s: the stored copy cannot be served (%s)", sz->name, out->err);
		change_list_clear(&sz->cl);
		round_end(sz, out->z != NULL);
		return;
	}
	if (!out->z) {
		zone_free(sz->held);
		sz->held = NULL;
		if (dn->incremental) {
			unapply(sz, &sz->cl);   /* the database never saw it */
			sz->force_axfr = true;
		}
		change_list_clear(&sz->cl);
		log_warn("%s: transfer from %s failed: %s (%s)", sz->name, dn->who,
		         dn->incremental ? "the difference cannot be applied"
		                         : "the zone cannot be stored or served", out->err);
		METRICS_INC(metrics.xfr_in[METRICS_XFRIN_FAILED]);
		next_primary(sz);
		return;
	}
	bool axfr = out->rs != NULL;
	if (axfr) {
		if (!out->disposed)
			recset_free(sz->rs);
		sz->rs = out->rs;
		out->rs = NULL;
	}
	/* The swap's time on the loop is logged, the old copy's free with it
	 * (under a millisecond at 1M records: bench/stall.sh secondary-copy). */
	struct timespec t0;
	sysclock_mono_ts(&t0);
	serve_built(sz, out);
	zone_free(sz->held);
	sz->held = NULL;
	char beside[160];
	snprintf(beside, sizeof(beside), " (beside the loop: built in %.1f ms, stored in %.1f ms; "
	         "swapped in on the loop in %.2f ms)", out->build_ms, out->store_ms, ms_since(&t0));
	/* The difference is still the one sz->rs last applied (copy_sigs.h). */
	taken(sz, axfr ? &out->sigs : NULL, false, ms_since(&dn->t0), beside);
	change_list_clear(&sz->cl);
	round_end(sz, true);
}

/*
 * Builds the copy whole beside the loop from `base` (NULL: from sz->cl, an
 * AXFR), then stores it as `store` says; build_done() serves it.  false
 * when no build could start (err says why).
 */
static bool start_build(struct sec_zone *sz, const struct recset *base,
                        enum copy_build_store store, char err[256])
{
	struct copy_build_in in = {
		.apex = sz->apex, .path = sz->path, .db = sz->db, .base = base, .cl = &sz->cl,
		.store = store, .now = sz->done.now, .delay_ms = sz->s->build_delay_ms,
	};
	const struct zone *served = sz->serving ? zone_table_get(sz->s->t, sz->apex) : NULL;
	sz->held = served ? zone_hold(served) : NULL;
	in.old = sz->held;
	if (store == COPY_STORE_REPLACE)
		in.dispose = sz->rs;   /* sz->rs is not read meanwhile: no transfer runs */
	sz->build = copy_build_start(sz->s->l, &in, build_done, sz, err);
	if (!sz->build) {
		zone_free(sz->held);
		sz->held = NULL;
		return false;
	}
	const struct sec_done *dn = &sz->done;
	if (dn->confirm_only)
		log_info("%s: building the stored copy (serial %u) beside the loop, to serve it "
		         "again", sz->name, sz->serial);
	else
		log_info("%s: %s from %s, serial %u: %zu records received; building the copy whole "
		         "beside the loop (%s meanwhile)", sz->name, dn->incremental ? "IXFR" : "AXFR",
		         dn->who, dn->serial, dn->records,
		         sz->serving ? "the old copy answers" : "not served");
	return true;
}

/*
 * Stores an IXFR (sz->cl, already in sz->rs) beside the loop, durably;
 * stored() then applies sz->patch.  false when no thread could start.
 */
static bool start_store(struct sec_zone *sz, char err[256])
{
	struct copy_build_in in = {
		.apex = sz->apex, .path = sz->path, .db = sz->db, .cl = &sz->cl,
		.store = COPY_STORE_APPLY, .store_only = true, .now = sz->done.now,
	};
	sz->done.store_only = true;
	sz->build = copy_build_start(sz->s->l, &in, build_done, sz, err);
	if (!sz->build)
		sz->done.store_only = false;
	return sz->build != NULL;
}

/*
 * Reads the stored copy beside the loop (copy_build.h, `load`): the
 * database is opened there, so sz->db is NULL until loaded().  The copy
 * served meanwhile (the previous generation's, adopted) is held for the
 * IXFR history's difference.
 */
static bool start_load(struct sec_zone *sz, char err[256])
{
	sz->done = (struct sec_done){ .load = true };
	struct copy_build_in in = {
		.apex = sz->apex, .path = sz->path, .load = true, .now = now_s(sz->s),
		.delay_ms = sz->s->build_delay_ms,
	};
	const struct zone *served = sz->serving ? zone_table_get(sz->s->t, sz->apex) : NULL;
	sz->held = served ? zone_hold(served) : NULL;
	in.old = sz->held;
	sz->build = copy_build_start(sz->s->l, &in, build_done, sz, err);
	if (!sz->build) {
		zone_free(sz->held);
		sz->held = NULL;
		return false;
	}
	return true;
}

static void on_load_timer(struct loop *l, void *arg)
{
	struct sec_zone *sz = arg;
	char err[256] = "";
	(void)l;
	sz->load_timer = 0;
	if (!start_load(sz, err)) {
		log_error("%s: cannot read the stored copy (%s); the zone is not served, nor "
		          "transferred, until a reload", sz->name, err);
		unserve(sz);
		sz->no_db = true;
	}
}

/* What conn_done needs to know of c once it is gone; c->cl moves to sz->cl. */
static void keep_done(struct sec_zone *sz, struct sec_conn *c, int64_t now,
                      const struct timespec *t0)
{
	struct sec_done *dn = &sz->done;
	*dn = (struct sec_done){
		.incremental = c->incremental, .serial = c->serial, .records = c->records,
		.messages = c->messages, .bytes = c->bytes, .now = now, .t0 = *t0,
	};
	memcpy(dn->who, c->who, sizeof(dn->who));
	change_list_clear(&sz->cl);
	sz->cl = c->cl;
	change_list_init(&c->cl);
}

/*
 * The transfer is complete: store it, then serve it.  A patch (the cost of
 * the difference) is made here; a copy built whole is built and stored
 * beside the loop (start_build), which serves it when done.
 */
static void conn_done(struct sec_conn *c)
{
	struct sec_zone *sz = c->sz;
	char err[256] = "";
	int64_t now = now_s(sz->s);
	struct timespec t0;
	sysclock_mono_ts(&t0);
	if (c->st != ST_DONE) {
		conn_fail(c, "the response ended early");
		return;
	}
	if (c->records == 1) {
		/* The SOA alone, or the first SOA of a transfer that stopped there
		 * (feed): we are current (RFC 1995 4), the primary is behind us, or
		 * it wants an AXFR. */
		enum serial_order o = sz->have_data ? serial_compare(c->serial, sz->serial)
		                                    : SERIAL_GREATER;
		if (o == SERIAL_EQUAL) {
			if (copy_touch(sz->db, now) == 0)
				sz->refreshed_at = now;
			log_debug("%s: serial %u is current (%s)", sz->name, c->serial, c->who);
			METRICS_INC(metrics.xfr_in[METRICS_XFRIN_CURRENT]);
			if (!sz->serving) {
				/* A copy that had expired is confirmed: served again once built. */
				keep_done(sz, c, now, &t0);
				sz->done.confirm_only = true;
				conn_close(c);
				if (!start_build(sz, sz->rs, COPY_STORE_NONE, err)) {
					log_error("%s: the stored copy cannot be served (%s)", sz->name, err);
					round_end(sz, false);
				}
				return;
			}
			conn_close(c);
			round_end(sz, true);
			return;
		}
		if (o != SERIAL_GREATER) {
			outdated_offer(sz, c->ixfr ? "the IXFR answer" : "the AXFR answer", c->who, c->serial);
			METRICS_INC(metrics.xfr_in[METRICS_XFRIN_FAILED]);
			conn_close(c);
			next_primary(sz);   /* another primary may have the newer copy */
			return;
		}
		sz->force_axfr = true;
		conn_fail(c, "the SOA alone, for serial %u: asking for the whole zone", c->serial);
		return;
	}
	keep_done(sz, c, now, &t0);
	struct change_list *cl = &sz->cl;
	if (!c->incremental) {
		if (!start_build(sz, NULL, COPY_STORE_REPLACE, err)) {
			change_list_clear(cl);
			conn_fail(c, "the zone cannot be stored or served (%s)", err);
			return;
		}
		conn_close(c);
		return;
	}
	/* The served copy patched in place when it can be (the cost of the
	 * difference), else built whole beside the loop; either before the
	 * copy is stored, so what is stored is always servable. */
	int ret = copy_mirror_apply_ixfr(&sz->rs, sz->db, cl, sz->apex, c->serial, err);
	if (ret == -ESTALE) {
		/* RFC 1995 gives no recovery; the whole zone is the safe one. */
		log_warn("%s: IXFR from %s, serial %u -> %u, diverges from our copy: %s; asking "
		         "for the whole zone (AXFR)", sz->name, c->who, sz->serial, c->serial, err);
		METRICS_INC(sz->mx[METRICS_SEC_DIVERGED]);
		METRICS_INC(metrics.xfr_in[METRICS_XFRIN_FAILED]);
		change_list_clear(cl);
		sz->force_axfr = true;
		conn_close(c);
		conn_open(sz);   /* the same primary, at once */
		return;
	}
	struct zone_patch *p = ret == 0 ? prepare_patch(sz, cl) : NULL;
	if (ret == 0 && !p) {
		if (start_build(sz, sz->rs, COPY_STORE_APPLY, err)) {
			conn_close(c);
			return;
		}
		ret = -ENOMEM;
		unapply(sz, cl);
	} else if (ret == 0) {
		/* The commit and its disk sync on the build's thread; the patch is
		 * applied when it is durable (stored), so no serial is served that
		 * a crash could take back from the database. */
		sz->patch = p;
		if (start_store(sz, err)) {
			conn_close(c);
			return;
		}
		sz->patch = NULL;
		zone_patch_free(p);   /* never applied: the served copy is as it was */
		unapply(sz, cl);
		ret = -ENOMEM;
	}
	if (ret < 0) {
		change_list_clear(cl);
		sz->force_axfr = true;
		conn_fail(c, "the difference cannot be applied (%s)", err[0] ? err : "storage");
		return;
	}
}

static uint32_t soa_serial(const uint8_t *rdata, uint16_t rdlen)
{
	return rdlen >= 22 ? wire_get_u32(rdata + rdlen - 20) : 0;
}

/*
 * The SOA that ends an AXFR: RFC 5936 2.2 has the answer open and close
 * with the same SOA; one that differs means the zone changed (or was cut
 * and spliced) on the way, and the records between are no one version.
 */
static int closing_soa(struct sec_conn *c, uint32_t serial, const uint8_t *rdata, uint16_t rdlen)
{
	if (rdlen != c->soa_len || memcmp(rdata, c->soa, rdlen) != 0) {
		conn_refuse(c, METRICS_SEC_CLOSING_SOA, "the closing SOA (serial %u) differs from the "
		            "opening one (serial %u), RFC 5936 2.2", serial, c->serial);
		return -ECANCELED;
	}
	c->st = ST_DONE;
	return 0;
}

/*
 * One record of the response, through the state machine.  -EBADMSG: not a
 * transfer; -ECANCELED: refused, and c is gone.
 */
static int feed(struct sec_conn *c, const struct msg_rr *rr, const uint8_t *rdata, uint16_t rdlen)
{
	struct sec_zone *sz = c->sz;
	bool soa = rr->type == RR_SOA;
	if (soa && (rr->name_len != dname_len(sz->apex) || memcmp(rr->name, sz->apex, rr->name_len)))
		return -EBADMSG;
	if (!dname_is_subdomain(rr->name, sz->apex) || rr->rclass != CLASS_IN)
		return -EBADMSG;
	uint32_t serial = soa ? soa_serial(rdata, rdlen) : 0;
	enum change_op op = CHANGE_ADD;
	if (++c->records > sz->max_records) {
		conn_refuse(c, METRICS_SEC_RECORDS_CAP, "more than %u records (xfr_in_max_records)",
		            sz->max_records);
		return -ECANCELED;
	}
	switch (c->st) {
	case ST_FIRST:
		if (!soa || rdlen > sizeof(c->soa))
			return -EBADMSG;
		c->serial = serial;
		memcpy(c->soa, rdata, rdlen);
		c->soa_len = rdlen;
		c->st = ST_AFTER_FIRST;
		if (sz->have_data) {
			/* RFC 1034 4.3.5, RFC 1982: only a newer serial is taken.  An
			 * AXFR we asked for (the copy could not follow by IXFR) may
			 * also bring the same serial, to repair the copy. */
			enum serial_order o = serial_compare(serial, sz->serial);
			if (o == SERIAL_GREATER) {
				newer_offer(sz, c->who, serial);
			} else if (sz->force_serial && !c->ixfr) {
				log_warn("%s: AXFR from %s: taking serial %u, not newer than our %u, as "
				         "asked (geoacme ctl zone-retransfer --force)", sz->name, c->who,
				         serial, sz->serial);
			} else if (o != SERIAL_EQUAL || c->ixfr) {
				c->not_newer = true;   /* nothing to read further: conn_done says why */
				c->st = ST_DONE;
				return 0;
			}
		}
		/* Kept for an AXFR; an IXFR's differences carry their own SOAs. */
		return change_list_add(&c->cl, CHANGE_ADD, rr->name, rr->type, rr->ttl, rdata, rdlen, 0);
	case ST_AFTER_FIRST:
		if (soa && c->ixfr && serial != c->serial) {
			c->incremental = true;
			change_list_clear(&c->cl);
			change_list_init(&c->cl);
			c->st = ST_DELS;
			op = CHANGE_DEL;
			break;
		}
		if (soa)
			return closing_soa(c, serial, rdata, rdlen);   /* a zone of its SOA alone */
		c->st = ST_AXFR;
		break;
	case ST_AXFR:
		if (soa)
			return closing_soa(c, serial, rdata, rdlen);
		break;
	case ST_DELS:
		if (soa)
			c->st = ST_ADDS;
		else
			op = CHANGE_DEL;
		break;
	case ST_ADDS:
		if (soa && serial == c->serial) {
			c->st = ST_DONE;
			return 0;
		}
		if (soa) {
			c->st = ST_DELS;
			op = CHANGE_DEL;
		}
		break;
	case ST_DONE:
		return -EBADMSG;   /* records after the end */
	}
	return change_list_add(&c->cl, op, rr->name, rr->type, rr->ttl, rdata, rdlen, 0);
}

/*
 * A whole message of the response arrived: its header, TSIG and question
 * are checked, and its records are left for take_records.  0, or -1 after
 * conn_fail().
 */
static int open_message(struct sec_conn *c, const uint8_t *msg, size_t len)
{
	struct sec_zone *sz = c->sz;
	if (len < MSG_HEADER_LEN || wire_get_u16(msg) != c->id || !(msg[2] & 0x80) ||
	    ((msg[2] >> 3) & 0xf) != OPCODE_QUERY) {
		conn_fail(c, "not a response to our request");
		return -1;
	}
	unsigned rcode = msg[3] & 0xf;
	if (sz->has_key) {
		struct tsig_rr t;
		int found = tsig_find(msg, len, &t);
		if (found <= 0) {
			conn_fail(c, found < 0 ? "malformed message" : "a message without TSIG (rcode %u)",
			          rcode);
			return -1;
		}
		uint16_t error;
		int rc = tsig_verify_response(msg, &t, &sz->key, c->mac, c->mac_len, !c->first_msg,
		                              (uint64_t)now_s(sz->s), &error);
		int v = rc == -EBADMSG ? rc : error;
		if (rc < 0) {
			conn_fail(c, "TSIG of the response: %s (error %d, rcode %u)",
			          v == TSIG_BADKEY ? "BADKEY" : v == TSIG_BADSIG ? "BADSIG"
			          : v == TSIG_BADTIME ? "BADTIME" : "refused", v, rcode);
			return -1;
		}
		memcpy(c->mac, t.mac, t.mac_len);
		c->mac_len = t.mac_len;
	}
	if (rcode != RCODE_NOERROR) {
		conn_fail(c, "the primary answered rcode %u%s", rcode,
		          rcode == RCODE_REFUSED ? " (REFUSED: check its transfer policy and key)" : "");
		return -1;
	}
	c->first_msg = false;
	c->messages++;
	c->bytes += len;
	if (c->bytes > sz->max_bytes) {
		conn_refuse(c, METRICS_SEC_BYTES_CAP, "more than %u bytes (xfr_in_max_bytes)",
		            sz->max_bytes);
		return -1;
	}
	struct wire w;
	wire_init_read(&w, msg, len);
	wire_skip(&w, 4);                           /* ID, flags */
	unsigned qd = wire_read_u16(&w), an = wire_read_u16(&w);
	wire_skip(&w, 4);                           /* NSCOUNT, ARCOUNT */
	for (unsigned i = 0; i < qd && !w.err; i++) {
		uint8_t name[DNAME_MAX];
		uint16_t type, rclass;
		msg_read_question(&w, name, &type, &rclass);
	}
	if (w.err) {
		conn_fail(c, "malformed question");
		return -1;
	}
	c->in_msg = true;
	c->rr_pos = w.pos;
	c->rr_next = 0;
	c->rr_count = an;
	return 0;
}

static bool past(const struct timespec *end)
{
	struct timespec now;
	sysclock_mono_ts(&now);
	return now.tv_sec > end->tv_sec || (now.tv_sec == end->tv_sec && now.tv_nsec >= end->tv_nsec);
}

/*
 * The records of the open message, until its last or until `end`: 0 when
 * the message is done, 1 when time is up with records left (at least one
 * was taken), -1 after conn_fail() or a refusal (c is gone).
 */
static int take_records(struct sec_conn *c, const uint8_t *msg, size_t len,
                        const struct timespec *end)
{
	struct wire w;
	wire_init_read(&w, msg, len);
	w.pos = c->rr_pos;
	static uint8_t rdata[2 * 65535];
	while (c->rr_next < c->rr_count) {
		struct msg_rr rr;
		if (msg_read_rr(&w, &rr) < 0) {
			conn_fail(c, "malformed record");
			return -1;
		}
		int n = msg_rdata_canonical(msg, len, &rr, rdata, sizeof(rdata));
		int ret = n < 0 || n > UINT16_MAX ? -EBADMSG : feed(c, &rr, rdata, (uint16_t)n);
		if (ret == -ECANCELED)
			return -1;   /* refused; c is gone */
		if (ret < 0) {
			conn_fail(c, "unexpected record %u in message %zu", c->rr_next, c->messages);
			return -1;
		}
		c->rr_next++;
		if (c->not_newer)
			break;   /* the first SOA said enough; the rest is not read */
		if (c->rr_next < c->rr_count && past(end)) {
			c->rr_pos = w.pos;
			return 1;
		}
	}
	c->in_msg = false;
	/* An IXFR answered with the SOA alone ends with its first message. */
	if (c->ixfr && c->st == ST_AFTER_FIRST && c->records == 1)
		c->st = ST_DONE;
	return 0;
}

static void on_resume(struct loop *l, void *arg);

/*
 * Takes apart what was read, message by message and record by record, for
 * at most the round's budget (SEC_ROUND_BUDGET_US); what is left waits for
 * the next round (on_resume), and nothing more is read until it is taken.
 * Ends the transfer (conn_done) at its last record.
 */
static void take(struct sec_conn *c)
{
	struct timespec end;
	sysclock_mono_ts(&end);
	uint64_t ns = (uint64_t)end.tv_nsec + (uint64_t)c->sz->s->budget_us * 1000;
	end.tv_sec += (time_t)(ns / 1000000000);
	end.tv_nsec = (long)(ns % 1000000000);
	c->rounds++;
	for (;;) {
		if (c->in_len < 2)
			return;
		size_t len = (size_t)c->in[0] << 8 | c->in[1];
		if (c->in_len < 2 + len)
			return;
		int r = c->in_msg ? 0 : open_message(c, c->in + 2, len);
		if (r == 0)
			r = take_records(c, c->in + 2, len, &end);
		if (r < 0)
			return;   /* c is gone */
		if (r == 0) {
			memmove(c->in, c->in + 2 + len, c->in_len - 2 - len);
			c->in_len -= 2 + len;
			if (c->st == ST_DONE) {
				log_debug("%s: the response from %s was read in %zu loop rounds", c->sz->name,
				          c->who, c->rounds);
				conn_done(c);
				return;
			}
			if (!past(&end))
				continue;
			if (c->in_len < 2 || c->in_len < 2 + ((size_t)c->in[0] << 8 | c->in[1]))
				return;   /* nothing whole left: the socket brings the rest */
		}
		int64_t id = loop_timer_add(c->sz->s->l, 0, on_resume, c);
		if (id <= 0) {
			conn_fail(c, "out of memory");
			return;
		}
		c->resume = id;
		return;
	}
}

static void on_resume(struct loop *l, void *arg)
{
	struct sec_conn *c = arg;
	(void)l;
	c->resume = 0;
	take(c);
}

static void on_io(struct loop *l, int fd, int events, void *arg)
{
	struct sec_conn *c = arg;
	(void)events;
	if (c->req_off < c->req_len) {
		ssize_t n = send(fd, c->req + c->req_off, c->req_len - c->req_off, MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EINPROGRESS || errno == EINTR))
			return;
		if (n <= 0) {
			conn_fail(c, "sending the request: %s", n < 0 ? strerror(errno) : "closed");
			return;
		}
		c->req_off += (size_t)n;
		/* Still watched for writing, the loop would spin until the answer. */
		if (c->req_off == c->req_len && loop_mod_fd(l, fd, LOOP_READ) < 0)
			conn_fail(c, "waiting for the answer: %s", strerror(errno));
		return;
	}
	/* What was read is still being taken apart (on_resume): the socket
	 * keeps the rest meanwhile, and the loop calls again (level-triggered). */
	if (c->resume > 0)
		return;
	ssize_t n = read(fd, c->in + c->in_len, SEC_IN_MAX - c->in_len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_fail(c, "%s", n < 0 ? strerror(errno) : "the primary closed the connection");
		return;
	}
	c->in_len += (size_t)n;
	c->read_total += (uint64_t)n;
	take(c);
}

static void on_window(struct loop *l, void *arg)
{
	struct sec_conn *c = arg;
	uint32_t window_ms = c->sz->s->window_ms;
	c->timer = 0;
	uint64_t got = c->read_total - c->read_at_window;
	if (got >= (uint64_t)window_ms * SEC_PROGRESS_RATE / 1000) {
		c->read_at_window = c->read_total;
		int64_t id = loop_timer_add(l, window_ms, on_window, c);
		if (id > 0) {
			c->timer = id;
			return;
		}
	}
	if (!c->read_total)
		conn_fail(c, "no answer in %u s", window_ms / 1000);
	else
		conn_fail(c, "%llu bytes received in the last %u s, less than %u a second",
		          (unsigned long long)got, window_ms / 1000, SEC_PROGRESS_RATE);
}

/* The request: IXFR with our SOA when we have a copy, else AXFR; signed with the key. */
static int build_request(struct sec_conn *c)
{
	struct sec_zone *sz = c->sz;
	const struct recset_rr *soa = soa_of(sz->rs, sz->apex);
	c->ixfr = soa && !sz->force_axfr;
	uint16_t id;
	if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
		id = (uint16_t)loop_now_ms(sz->s->l);
	c->id = id;
	struct wire w;
	wire_init(&w, c->req + 2, sizeof(c->req) - 2);
	wire_write_u16(&w, id);
	wire_write_u16(&w, 0);
	wire_write_u16(&w, 1);
	wire_write_u16(&w, 0);
	wire_write_u16(&w, c->ixfr ? 1 : 0);
	wire_write_u16(&w, 0);
	wire_write_bytes(&w, sz->apex, dname_len(sz->apex));
	wire_write_u16(&w, c->ixfr ? RR_IXFR : RR_AXFR);
	wire_write_u16(&w, CLASS_IN);
	if (c->ixfr) {
		wire_write_bytes(&w, sz->apex, dname_len(sz->apex));
		wire_write_u16(&w, RR_SOA);
		wire_write_u16(&w, CLASS_IN);
		wire_write_u32(&w, soa->ttl);
		wire_write_u16(&w, soa->rdlen);
		wire_write_bytes(&w, soa->rdata, soa->rdlen);
	}
	if (w.err)
		return w.err;
	size_t len = wire_pos(&w);
	if (sz->has_key) {
		struct tsig_rr f;
		tsig_rr_init(&f, &sz->key, (uint64_t)now_s(sz->s), id);
		int n = tsig_append(c->req + 2, &len, sizeof(c->req) - 2, &f, &sz->key, NULL, 0, c->mac);
		if (n < 0)
			return n;
		c->mac_len = (size_t)n;
	}
	wire_set_u16(c->req, (uint16_t)len);
	c->req_len = 2 + len;
	return 0;
}

static void conn_open(struct sec_zone *sz)
{
	struct sec_conn *c = calloc(1, sizeof(*c));
	if (!c || !(c->in = malloc(SEC_IN_MAX))) {
		free(c);
		log_error("%s: out of memory starting a transfer", sz->name);
		round_end(sz, false);
		return;
	}
	c->sz = sz;
	c->fd = -1;
	c->first_msg = true;
	change_list_init(&c->cl);
	sz->conn = c;
	c->primary = &sz->primaries[sz->next_primary % sz->n_primaries];
	struct sockaddr_storage sa;
	socklen_t sa_len;
	memset(&sa, 0, sizeof(sa));
	char host[INET6_ADDRSTRLEN];
	if (c->primary->family == 4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&sa;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(c->primary->port);
		memcpy(&sin->sin_addr, c->primary->addr, 4);
		sa_len = sizeof(*sin);
		inet_ntop(AF_INET, c->primary->addr, host, sizeof(host));
		snprintf(c->who, sizeof(c->who), "%s:%u", host, c->primary->port);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&sa;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(c->primary->port);
		memcpy(&sin6->sin6_addr, c->primary->addr, 16);
		sa_len = sizeof(*sin6);
		inet_ntop(AF_INET6, c->primary->addr, host, sizeof(host));
		snprintf(c->who, sizeof(c->who), "[%s]:%u", host, c->primary->port);
	}
	if (build_request(c) < 0) {
		conn_fail(c, "cannot build the request");
		return;
	}
	int fd = net_source_socket(&sz->s->src, sa.ss_family, true);
	if (fd < 0) {
		conn_fail(c, "no socket from the source address: %s", strerror(-fd));
		return;
	}
	c->fd = fd;
	if (connect(c->fd, (struct sockaddr *)&sa, sa_len) < 0 && errno != EINPROGRESS) {
		conn_fail(c, "connect: %s", strerror(errno));
		return;
	}
	if (loop_add_fd(sz->s->l, c->fd, LOOP_WRITE, on_io, c) < 0) {
		close(c->fd);
		c->fd = -1;
		conn_fail(c, "cannot watch the socket");
		return;
	}
	int64_t id = loop_timer_add(sz->s->l, sz->s->window_ms, on_window, c);
	c->timer = id > 0 ? id : 0;
	log_debug("%s: %s from %s (our serial %u)", sz->name, c->ixfr ? "IXFR" : "AXFR", c->who,
	          sz->serial);
}

static void start_refresh(struct sec_zone *sz)
{
	if (busy(sz)) {
		sz->again = true;
		return;
	}
	sz->tries = 0;
	conn_open(sz);
}

bool secondary_zone_state(const struct secondary *s, const uint8_t *apex,
                          struct secondary_state *out)
{
	const struct sec_zone *sz = find_zone(s, apex);
	if (!sz)
		return false;
	*out = (struct secondary_state){
		.have_copy = sz->have_data, .serving = sz->serving, .serial = sz->serial,
		.refresh = sz->refresh, .retry = sz->retry, .expire = sz->expire,
		.refreshed_at = sz->refreshed_at,
		.next_check_at = sz->conn || sz->build ? 0 : sz->next_at,
		.checking = sz->conn != NULL || sz->build != NULL,
		.signature_expiry = sz->sigs.earliest,
	};
	return true;
}

int secondary_refresh(struct secondary *s, const uint8_t *apex, bool axfr, bool force)
{
	struct sec_zone *sz = find_zone(s, apex);
	if (!sz)
		return -ENOENT;
	if (axfr)
		sz->force_axfr = true;
	if (axfr && force)
		sz->force_serial = true;
	log_info("%s: %s asked for (geoacme ctl)", sz->name,
	         !axfr ? "a refresh" : force ? "a full transfer at any serial" : "a full transfer");
	start_refresh(sz);
	return 0;
}

/* --- NOTIFY in --- */

static bool from_primary(const struct sec_zone *sz, const struct query *q)
{
	uint8_t addr[16];
	int family = query_client_addr(q, addr);
	for (size_t i = 0; i < sz->n_primaries; i++)
		if (sz->primaries[i].family == family &&
		    memcmp(sz->primaries[i].addr, addr, family == 4 ? 4 : 16) == 0)
			return true;
	return false;
}

static int notify_reply(struct query *q, uint8_t rcode, const struct tsig_rr *req,
                        const struct tsig_key *key, uint16_t error, uint64_t now)
{
	q->rcode = rcode;
	packet_write_error(q);
	if (q->tx_len && rcode == RCODE_NOERROR)
		q->tx[2] |= 0x04;   /* AA: we serve the zone */
	if (q->tx_len && req) {
		size_t limit = q->max_size < q->tx_cap ? q->max_size : q->tx_cap;
		if (tsig_sign_reply(q->tx, &q->tx_len, limit, req, key, error, now) < 0)
			q->tx_len = 0;
	}
	return 0;
}

/* The serial of the zone's SOA in a NOTIFY's answer section (RFC 1996 3.7), or -1. */
static int64_t notify_serial(const struct query *q, const uint8_t *apex)
{
	struct wire w;
	wire_init_read(&w, q->rx, q->rx_len);
	wire_skip(&w, 4);
	unsigned qd = wire_read_u16(&w), an = wire_read_u16(&w);
	wire_skip(&w, 4);
	for (unsigned i = 0; i < qd && !w.err; i++) {
		uint8_t name[DNAME_MAX];
		uint16_t type, rclass;
		msg_read_question(&w, name, &type, &rclass);
	}
	for (unsigned i = 0; i < an && !w.err; i++) {
		struct msg_rr rr;
		if (msg_read_rr(&w, &rr) < 0)
			return -1;
		if (rr.type == RR_SOA && rr.rdlen >= 22 && rr.name_len == dname_len(apex) &&
		    memcmp(rr.name, apex, rr.name_len) == 0)
			return wire_get_u32(q->rx + rr.rdata_off + rr.rdlen - 20);
	}
	return -1;
}

static int notify_handle(void *ctx, struct query *q)
{
	struct secondary *s = ctx;
	uint64_t now = (uint64_t)now_s(s);
	char who[INET6_ADDRSTRLEN], zname[DNAME_MAX * 4 + 2];
	uint8_t addr[16];
	int family = query_client_addr(q, addr);
	if (!inet_ntop(family == 4 ? AF_INET : AF_INET6, addr, who, sizeof(who)))
		snprintf(who, sizeof(who), "?");
	if (dname_to_str(q->qname, zname, sizeof(zname)) < 0)
		snprintf(zname, sizeof(zname), "?");
	q->tx_len = 0;
	struct sec_zone *sz = find_zone(s, q->qname);
	struct tsig_rr t;
	const struct tsig_rr *req = NULL;
	const struct tsig_key *key = NULL;
	if (q->tsig_offset) {
		int found = tsig_find(q->rx, q->rx_len, &t);
		if (found < 0)
			return notify_reply(q, RCODE_FORMERR, NULL, NULL, 0, now);
		if (found) {
			key = sz && sz->has_key ? &sz->key : NULL;
			uint16_t error;
			if (tsig_verify(q->rx, &t, key, now, &error) == -EBADMSG)
				return notify_reply(q, RCODE_FORMERR, NULL, NULL, 0, now);
			int v = error;   /* the TSIG error, TSIG_NOERROR when it verified */
			req = &t;
			if (v != TSIG_NOERROR) {
				log_limited(&lim_notify, LOG_WARN, "NOTIFY for %s from %s: bad TSIG (%d)",
				            zname, who, v);
				bool signed_err = v == TSIG_BADTIME || v == TSIG_BADTRUNC;
				return notify_reply(q, RCODE_NOTAUTH, req, signed_err ? key : NULL,
				                    (uint16_t)v, now);
			}
		}
	}
	if (!sz || q->qtype != RR_SOA || q->qclass != CLASS_IN) {
		log_limited(&lim_notify, LOG_INFO, "NOTIFY for %s from %s: not a zone we copy", zname,
		            who);
		return notify_reply(q, RCODE_NOTAUTH, req, key, 0, now);
	}
	if (!from_primary(sz, q)) {
		log_limited(&lim_notify, LOG_WARN, "NOTIFY for %s from %s refused: not one of its "
		            "primaries", zname, who);
		return notify_reply(q, RCODE_REFUSED, req, key, 0, now);
	}
	/* RFC 1996 3.7: the answer section's SOA is a hint, not secured, so it
	 * never stops the check; one that is not newer is still an offer of an
	 * older serial, logged and counted as such. */
	int64_t hint = notify_serial(q, sz->apex);
	if (hint >= 0 && sz->have_data && serial_compare((uint32_t)hint, sz->serial) != SERIAL_EQUAL &&
	    !serial_newer((uint32_t)hint, sz->serial))
		outdated_offer(sz, "NOTIFY", who, (uint32_t)hint);
	log_info("%s: NOTIFY from %s%s; checking %s", sz->name, who, req ? " (TSIG)" : "",
	         sz->build ? "once the copy under way is built" : sz->no_db ? "never: the copy's "
	         "database could not be opened" : !sz->db ? "once the stored copy is read" : "now");
	if (busy(sz))
		sz->again = true;
	else
		schedule(sz, 0);
	return notify_reply(q, RCODE_NOERROR, req, key, 0, now);
}

struct xfr_handler secondary_notify_handler(struct secondary *s)
{
	return (struct xfr_handler){ .ctx = s, .handle = notify_handle };
}

/* --- setup --- */

struct secondary *secondary_new(struct zone_table *t, struct loop *l,
                                const struct net_source *src, char err[256])
{
	struct secondary *s = calloc(1, sizeof(*s));
	if (!s) {
		xfr_errf(err, "out of memory");
		return NULL;
	}
	s->t = t;
	s->l = l;
	s->src = *src;
	const char *delay = test_hook(TEST_HOOK_XFR_BUILD_DELAY);
	if (delay)
		s->build_delay_ms = (uint32_t)strtoul(delay, NULL, 10);
	s->window_ms = SEC_WINDOW_MS;
	s->budget_us = SEC_ROUND_BUDGET_US;
	const char *budget = test_hook(TEST_HOOK_XFR_IN_BUDGET);
	if (budget)
		s->budget_us = (uint32_t)strtoul(budget, NULL, 10);
	const char *window = test_hook(TEST_HOOK_XFR_IN_WINDOW);
	if (window && strtoul(window, NULL, 10) > 0)
		s->window_ms = (uint32_t)strtoul(window, NULL, 10);
	return s;
}

static void zone_free_sec(struct sec_zone *sz)
{
	if (!sz)
		return;
	if (sz->conn)
		conn_close(sz->conn);
	if (sz->build) {
		/* Stopped and joined before the recset and database it uses go. */
		if (copy_build_cancel(sz->build))
			sz->rs = NULL;   /* freed with the build: its own went too */
		sz->build = NULL;
	}
	zone_free(sz->held);
	zone_patch_free(sz->patch);   /* a store was under way: never applied */
	change_list_clear(&sz->cl);
	if (sz->timer > 0)
		loop_timer_cancel(sz->s->l, sz->timer);
	if (sz->load_timer > 0)
		loop_timer_cancel(sz->s->l, sz->load_timer);
	explicit_bzero(&sz->key, sizeof(sz->key));
	recset_free(sz->rs);
	db_close(sz->db);
	free(sz->primaries);
	free(sz->path);
	free(sz);
}

void secondary_free(struct secondary *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		zone_free_sec(s->zones[i]);
	free(s->zones);
	free(s);
}

size_t secondary_count(const struct secondary *s)
{
	return s ? s->n : 0;
}

/*
 * The copy the previous generation serves for this zone, from the same
 * database, served here too until the stored copy is read again: what it
 * knows of the copy (serial, timers, when it was confirmed) comes along.
 */
static void adopt(struct sec_zone *sz, const struct secondary *prev)
{
	const struct sec_zone *p = prev ? find_zone(prev, sz->apex) : NULL;
	const struct zone *z = p && p->serving ? zone_table_get(prev->t, sz->apex) : NULL;
	if (!z || !p->path || strcmp(p->path, sz->path) != 0)
		return;
	if (zone_table_add(sz->s->t, zone_hold(z)) < 0) {
		zone_free((struct zone *)z);   /* the hold just taken */
		return;
	}
	sz->serving = true;
	sz->have_data = p->have_data;
	sz->serial = p->serial;
	sz->refresh = p->refresh;
	sz->retry = p->retry;
	sz->expire = p->expire;
	sz->refreshed_at = p->refreshed_at;
	sz->sigs = p->sigs;
	sz->outdated = p->outdated;
}

int secondary_add_zone(struct secondary *s, const struct config_zone *zc,
                       const struct secondary *prev, char err[256])
{
	struct sec_zone *sz = calloc(1, sizeof(*sz));
	struct sec_zone **v = realloc(s->zones, (s->n + 1) * sizeof(*v));
	if (v)
		s->zones = v;
	if (!sz || !v) {
		free(sz);
		xfr_errf(err, "out of memory");
		return -ENOMEM;
	}
	sz->s = s;
	change_list_init(&sz->cl);
	int ret = -EINVAL;
	if (dname_from_str(zc->zone, sz->apex) < 0) {
		xfr_errf(err, "'%s' is not a valid zone name", zc->zone);
		goto fail;
	}
	dname_lower(sz->apex);
	dname_to_str(sz->apex, sz->name, sizeof(sz->name));
	if (zone_table_get(s->t, sz->apex) || find_zone(s, sz->apex)) {
		xfr_errf(err, "zone %s is configured twice", sz->name);
		goto fail;
	}
	ret = -ENOMEM;
	sz->primaries = malloc(zc->n_primaries * sizeof(*sz->primaries));
	sz->path = zc->journal_path ? strdup(zc->journal_path) : NULL;
	sz->rs = recset_new();   /* empty until the stored copy is read */
	if (!sz->primaries || !sz->path || !sz->rs) {
		xfr_errf(err, "out of memory");
		goto fail;
	}
	memcpy(sz->primaries, zc->primaries, zc->n_primaries * sizeof(*sz->primaries));
	sz->n_primaries = zc->n_primaries;
	sz->max_records = zc->xfr_in_max_records;
	sz->max_bytes = zc->xfr_in_max_bytes;
	sz->mx = metrics_secondary(sz->name);
	/* The first key that may transfer signs our requests and checks NOTIFYs. */
	for (size_t i = 0; i < zc->n_tsig_keys && !sz->has_key; i++) {
		const struct config_tsig_key *k = &zc->tsig_keys[i];
		if (!k->allow_axfr)
			continue;
		if ((ret = tsig_key_init(&sz->key, k->name, k->algorithm, k->secret, k->secret_len,
		                         k->fudge, err)) < 0)
			goto fail;
		sz->has_key = true;
	}
	/* What a glance at the file tells (a few pages, read only) is checked
	 * here, so that a wrong path fails the start or the reload; opening it
	 * (a quick_check reads the whole file), reading the copy and building
	 * it are done beside the loop, once this generation serves
	 * (start_load): the previous generation's copy answers meanwhile, and
	 * at start, before anything is read, the zone is REFUSED. */
	struct db_info info;
	if ((ret = db_identify(sz->path, &info, err)) < 0)
		goto fail;
	if (info.state == DB_OURS && info.apex_len > 0 &&
	    ((size_t)info.apex_len != dname_len(sz->apex) ||
	     memcmp(info.apex, sz->apex, (size_t)info.apex_len) != 0)) {
		xfr_errf(err, "%s holds another zone, not %s", sz->path, sz->name);
		ret = -EINVAL;
		goto fail;
	}
	/* A timer, not now: the previous generation may still be storing a
	 * transfer into the same database; it is stopped (or done) once this
	 * generation is swapped in, before the timer runs. */
	int64_t id = loop_timer_add(s->l, 0, on_load_timer, sz);
	if (id <= 0) {
		xfr_errf(err, "cannot add a timer");
		ret = -ENOMEM;
		goto fail;
	}
	sz->load_timer = id;
	sz->again = true;   /* the first check follows the load */
	adopt(sz, prev);
	s->zones[s->n++] = sz;
	return 0;
fail:
	zone_free_sec(sz);
	return ret < 0 ? ret : -EINVAL;
}
