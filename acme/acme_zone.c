/* SPDX-License-Identifier: MIT */
/*
 * The ACME zones: setup, the UPDATE/TSIG handler, snapshot rebuilds and
 * the stale-challenge purge (see acme_zone.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acme/acme_zone.h"
#include "acme/msg.h"
#include "acme/policy.h"
#include "acme/recset.h"
#include "acme/replay.h"
#include "acme/tsig.h"
#include "acme/update.h"
#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/net/loop.h"
#include "core/wire/dname.h"
#include "core/wire/packet.h"
#include "core/wire/query.h"
#include "core/wire/rdata_check.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/answer.h"
#include "core/zone/zone.h"
#include "core/zone/zone_diff.h"
#include "core/zone/zone_patch.h"
#include "core/zone/zone_table.h"
#include "storage/change.h"
#include "storage/db.h"
#include "storage/journal.h"
#include "storage/records.h"
#include "storage/seed.h"

/*
 * Patches add to the served snapshot's arena (zone_patch.h); once they
 * have added as much as the build held, and at least this much, the next
 * change builds the snapshot whole again, which compacts it.
 */
#define PATCH_GROWTH_MIN (4u << 20)

/*
 * Renewing signatures in slices (zone_patch.h): at most this many new
 * signatures per loop round (about 2 ms of ECDSA), then the loop answers
 * what arrived before the next slice.
 */
#define RESIGN_SLICE 100

/* How often the purge looks for stale TXT records, at most. */
#define PURGE_PERIOD_MAX_S 60

struct acme_zone;

struct acme_key {
	struct tsig_key tk;
	struct policy pol;
	struct replay *replay;       /* the UPDATEs it signed lately (replay.h) */
	struct acme_zone *zone;
};

struct acme_zone {
	struct acme *a;
	uint8_t apex[DNAME_MAX];
	char name[DNAME_MAX * 4 + 2];    /* presentation, for logs */
	char *journal_path;
	struct db *db;
	struct recset *rs;
	struct zone_signer signer;
	bool has_signer;
	bool allow_update;
	bool serial_per_signing;         /* signed and transferred: see acme_resign */
	struct journal_caps caps;        /* the IXFR journal's */
	uint32_t stale_age;
	int64_t purge_timer;
	/* A signature renewal pass in slices, while resign_timer is set. */
	struct zone_resign resign;
	const struct zone *resign_zone;   /* the snapshot the pass renews */
	int64_t resign_timer;
	struct timespec resign_started;
	struct acme_key *keys;
	size_t n_keys;
	bool mirror_stale;           /* rs may differ from the database: reload first */
	/* How the last commit changed the served snapshot, for the log. */
	bool last_patched;           /* patched in place (else built whole) */
	double last_ms;              /* from the change list to the committed, served change */
	double last_commit_ms;       /* ... of which SQLite's durable commit */
};

struct acme {
	struct zone_table *t;
	struct loop *l;
	struct answer_env *env;
	struct acme_zone **zones;
	size_t n;
};

/* Fills err; names may be long, and a cut message is better than none. */
__attribute__((format(printf, 2, 3)))
static void errf(char err[256], const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, 256, fmt, ap);
	va_end(ap);
}

/* The loop's clock (a test may step it), the system clock without a loop. */
static uint64_t now_s(const struct acme *a)
{
	return (uint64_t)loop_wall_s(a->l);
}

static struct acme_zone *find_zone(const struct acme *a, const uint8_t *apex)
{
	size_t len = dname_len(apex);
	for (size_t i = 0; i < a->n; i++)
		if (dname_len(a->zones[i]->apex) == len && memcmp(a->zones[i]->apex, apex, len) == 0)
			return a->zones[i];
	return NULL;
}

/* --- snapshots --- */

static int add_name(void *arg, const struct recset_name *n)
{
	struct zone_builder *b = arg;
	for (uint16_t k = 0; k < n->nsets; k++) {
		const struct recset_rrset *s = &n->sets[k];
		for (uint16_t j = 0; j < s->count; j++) {
			int ret = zone_builder_add(b, n->name, s->type, s->rr[j].ttl, s->rr[j].rdata,
			                           s->rr[j].rdlen);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

/* A new snapshot from the in-memory records (which mirror the database). */
static struct zone *build(struct acme_zone *az, char err[256])
{
	struct zone_builder *b = zone_builder_new(az->apex);
	if (!b) {
		errf(err, "out of memory");
		return NULL;
	}
	int ret = recset_foreach(az->rs, add_name, b);
	if (ret < 0) {
		zone_builder_free(b);
		errf(err, "%s: a record cannot be served (%s)", az->name, strerror(-ret));
		return NULL;
	}
	struct diag d;
	diag_init(&d);
	struct zone *z = zone_builder_finish(b, az->has_signer ? &az->signer : NULL,
	                                     az->journal_path, &d);
	if (!z) {
		for (size_t i = 0; i < d.n; i++)
			log_error("%s", d.msgs[i]);
		errf(err, "%s", d.n ? d.msgs[0] : "cannot build the zone");
	} else {
		z->owner_data = az;
	}
	diag_clear(&d);
	return z;
}

static int load_row(void *arg, const struct records_row *row);

/*
 * Reads the mirror again from the database, the truth: for when a change
 * applied in memory could not be undone there (out of memory).  Until it
 * succeeds every commit is refused.
 */
static int reload_mirror(struct acme_zone *az)
{
	struct recset *old = az->rs;
	az->rs = recset_new();
	int ret = az->rs ? records_load(az->db, load_row, az) : -ENOMEM;
	if (ret < 0) {
		recset_free(az->rs);
		az->rs = old;
		az->mirror_stale = true;
		log_error("%s: cannot read the records again from %s (%s); refusing changes until it "
		          "works", az->name, az->journal_path, strerror(-ret));
		return ret;
	}
	recset_free(old);
	az->mirror_stale = false;
	log_warn("%s: records read again from %s", az->name, az->journal_path);
	return 0;
}

/* Takes back a change applied to the mirror only (the database never saw it). */
static void unapply(struct acme_zone *az, const struct change_list *cl)
{
	if (recset_apply(az->rs, cl, true) == 0)
		return;
	log_error("%s: cannot undo the change in memory", az->name);
	reload_mirror(az);
}

/* Gives a patch the full new contents of one changed name, from the mirror. */
static int patch_name(struct zone_patch *p, const struct recset *rs, const uint8_t *name)
{
	int ret = zone_patch_name(p, name);
	if (ret <= 0)
		return ret;
	const struct recset_name *n = recset_find(rs, name);
	for (uint16_t k = 0; n && k < n->nsets; k++) {
		const struct recset_rrset *s = &n->sets[k];
		for (uint16_t j = 0; j < s->count; j++) {
			ret = zone_patch_add(p, n->name, s->type, s->rr[j].ttl, s->rr[j].rdata,
			                     s->rr[j].rdlen);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

/*
 * The served snapshot's patch for a change already in the mirror, prepared
 * but not applied; or NULL when the snapshot is to be built whole (not
 * signed, grown enough to compact, or a change a patch does not make:
 * zone_patch.h).  Either way the served zone is untouched.
 */
static struct zone_patch *prepare_patch(struct acme_zone *az, const struct change_list *cl)
{
	struct zone *z = az->has_signer ? zone_table_edit(az->a->t, az->apex) : NULL;
	if (!z)
		return NULL;
	size_t growth = zone_patch_growth(z);
	if (growth > z->built_bytes && growth > PATCH_GROWTH_MIN) {
		log_info("%s: compacting the snapshot (patches added %zu bytes)", az->name, growth);
		return NULL;
	}
	struct zone_patch *p = zone_patch_new(z);
	int ret = p ? 0 : -ENOMEM;
	for (size_t i = 0; i < cl->n && ret == 0; i++)
		ret = patch_name(p, az->rs, cl->v[i].name);
	char err[256] = "";
	if (ret == 0)
		ret = zone_patch_prepare(p, &az->signer, err);
	if (ret < 0) {
		if (ret != -EAGAIN)
			log_warn("%s: cannot patch the snapshot (%s); building it whole", az->name,
			         err[0] ? err : strerror(-ret));
		zone_patch_free(p);
		return NULL;
	}
	return p;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/*
 * Makes a change: the serial bump is appended, the mirror changed, the
 * served snapshot's patch prepared or a new snapshot built (so a change
 * that cannot be served is never committed), the difference computed, the
 * records and the difference committed durably in one transaction, and
 * only then the patch applied or the snapshot swapped in.  Any failure leaves the database, the mirror and
 * the served zone as they were.  `reset` empties the journal instead of
 * appending to it (the first signing after a start: secondaries hold the
 * signatures of the previous run, which no difference describes).  `whole`
 * builds the snapshot whole even where a patch would do (re-signing: every
 * due signature is renewed).
 */
static int commit(struct acme_zone *az, struct change_list *cl, uint32_t *serial, bool reset,
                  bool whole)
{
	char err[256] = "";
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (az->mirror_stale) {
		/* This change was worked out on a mirror that may be wrong:
		 * refused (SERVFAIL, the client retries); the next one sees the
		 * records read again. */
		reload_mirror(az);
		return -EIO;
	}
	int ret = update_bump_serial(az->rs, az->apex, cl, serial);
	if (ret < 0) {
		log_error("%s: cannot bump the serial: %s", az->name, strerror(-ret));
		return ret;
	}
	ret = recset_apply(az->rs, cl, false);
	if (ret < 0) {
		log_error("%s: out of memory applying a change", az->name);
		if (ret == -EIO)
			reload_mirror(az);
		return ret;
	}
	/* Patched in place when it can be, in time proportional to the change;
	 * built whole otherwise.  Either is made before the commit, so a
	 * change that cannot be served is never committed. */
	struct zone_patch *p = whole ? NULL : prepare_patch(az, cl);
	struct zone *z = p ? NULL : build(az, err);
	if (!p && !z) {
		unapply(az, cl);
		log_error("%s: the change was not applied: %s", az->name, err);
		return -EINVAL;
	}
	/*
	 * Durable before anyone hears about it: the response is written only
	 * after this returns.  A client that got NOERROR acts on it (Lego tells
	 * the CA to look at the TXT record now), so an acknowledged change must
	 * survive a crash or a power cut the very next moment; journal_commit()
	 * returns once SQLite has synced the WAL (synchronous=FULL).
	 */
	const struct zone *old = zone_table_get(az->a->t, az->apex);
	uint8_t *diff = NULL;
	size_t diff_len = 0;
	struct journal_entry e = { 0 };
	if (old && !reset && az->caps.max_changes) {
		/* A patch knows what it changes: its difference costs what the
		 * change does, not a walk of both snapshots. */
		int dr = p ? zone_diff_patch(old, p, &diff, &diff_len) : zone_diff(old, z, &diff, &diff_len);
		if (dr < 0) {
			log_warn("%s: cannot compute the change for the journal; it starts over",
			         az->name);
			reset = true;
		} else {
			e = (struct journal_entry){ old->serial, p ? zone_patch_serial(p) : z->serial, diff,
			                            diff_len };
		}
	}
	struct timespec tc;
	clock_gettime(CLOCK_MONOTONIC, &tc);
	ret = journal_commit(az->db, cl, diff ? &e : NULL, reset, &az->caps);
	az->last_commit_ms = ms_since(&tc);
	if (ret < 0) {
		free(diff);
		unapply(az, cl);
		zone_patch_free(p);
		zone_free(z);
		log_error("%s: the change was not committed to %s", az->name, az->journal_path);
		return ret;
	}
	az->last_patched = p != NULL;
	if (p) {
		/* Between queries, all at once: no query sees half of it.  Then
		 * the IXFR history and NOTIFY hear of it, with its difference. */
		struct zone *served = zone_table_edit(az->a->t, az->apex);
		zone_patch_apply(p);
		zone_patch_free(p);
		zone_table_patched(az->a->t, served, diff, diff_len);
		free(diff);
		az->last_ms = ms_since(&t0);
		return 0;
	}
	free(diff);
	ret = zone_table_replace(az->a->t, z);
	az->last_ms = ms_since(&t0);
	if (ret < 0) {
		/* Only if the zone vanished from the table: nothing serves it anyway. */
		zone_free(z);
		log_error("%s: committed, but the zone is no longer in the table", az->name);
	}
	return 0;
}

static int bump_serial(struct acme_zone *az, bool reset, char err[256])
{
	/*
	 * Secondaries copy this zone: new signatures need a new serial, or
	 * they would keep the old ones until those expire.  The bump is a
	 * change like any other (durable, journaled, announced).
	 */
	struct change_list cl;
	uint32_t serial = 0;
	change_list_init(&cl);
	int ret = commit(az, &cl, &serial, reset, true);
	change_list_clear(&cl);
	if (ret < 0)
		errf(err, "cannot commit the serial of the new signatures");
	return ret;
}

static int resign_whole(struct acme_zone *az, char err[256])
{
	struct zone *z = build(az, err);
	if (!z)
		return -EINVAL;
	return zone_table_replace(az->a->t, z);
}

static void resign_slice(struct loop *l, void *arg)
{
	struct acme_zone *az = arg;
	(void)l;
	az->resign_timer = 0;
	struct zone *z = zone_table_edit(az->a->t, az->apex);
	if (!z || z != az->resign_zone || !z->resigning)
		return;   /* built whole meanwhile (compaction): signed afresh */
	char err[256] = "";
	int ret = zone_resign_step(z, &az->signer, &az->resign, RESIGN_SLICE, now_s(az->a), err);
	if (ret == 0) {
		int64_t id = loop_timer_add(az->a->l, 0, resign_slice, az);
		if (id > 0) {
			az->resign_timer = id;
			return;
		}
		z->resigning = false;   /* still due: the re-sign check tries again */
		log_error("%s: cannot schedule the next re-signing slice", az->name);
		return;
	}
	if (ret < 0) {
		log_error("%s: re-signing failed (%s); trying again at the next check", az->name, err);
		return;
	}
	log_info("%s: re-signed in slices: %llu signatures renewed, %llu still good, in %.0f ms",
	         az->name, (unsigned long long)az->resign.renewed,
	         (unsigned long long)az->resign.kept, ms_since(&az->resign_started));
}

int acme_resign(struct acme *a, const uint8_t *apex, char err[256])
{
	struct acme_zone *az = find_zone(a, apex);
	if (!az) {
		errf(err, "not an ACME zone");
		return -ENOENT;
	}
	if (az->serial_per_signing)
		/* Secondaries must see the new signatures: a serial bump with the
		 * snapshot built whole, journaled like any change. */
		return bump_serial(az, false, err);
	struct zone *z = zone_table_edit(a->t, apex);
	if (!a->l || !z || !az->has_signer || !az->signer.renew)
		return resign_whole(az, err);
	if (az->resign_timer > 0 || z->resigning)
		return 0;   /* a pass is under way */
	/* In slices, between queries, rather than one whole build that would
	 * hold the loop for seconds at 100 000 records.  The serial stays, as
	 * when the snapshot was rebuilt whole for it. */
	zone_resign_begin(z, &az->resign);
	az->resign_zone = z;
	clock_gettime(CLOCK_MONOTONIC, &az->resign_started);
	int64_t id = loop_timer_add(a->l, 0, resign_slice, az);
	if (id <= 0) {
		z->resigning = false;
		errf(err, "cannot schedule re-signing");
		return -ENOMEM;
	}
	az->resign_timer = id;
	return 0;
}

/* --- stale purge --- */

struct purge_ctx {
	struct change_list *cl;
	int64_t cutoff;
	int err;
};

static int collect_stale(void *arg, const struct recset_name *n)
{
	struct purge_ctx *p = arg;
	const struct recset_rrset *s = recset_name_rrset(n, RR_TXT);
	for (uint16_t j = 0; s && j < s->count; j++) {
		const struct recset_rr *r = &s->rr[j];
		/* created_at 0: from the zone file, meant to stay. */
		if (r->created_at <= 0 || r->created_at > p->cutoff)
			continue;
		if (change_list_add(p->cl, CHANGE_DEL, n->name, RR_TXT, r->ttl, r->rdata, r->rdlen,
		                    r->created_at) < 0)
			return p->err = -ENOMEM;
	}
	return 0;
}

static int purge_zone(struct acme_zone *az, int64_t now)
{
	if (!az->stale_age)
		return 0;
	struct change_list cl;
	change_list_init(&cl);
	struct purge_ctx p = { &cl, now - (int64_t)az->stale_age, 0 };
	/* Only the names holding records added by UPDATE: the scan costs what
	 * Lego left behind, not the size of the zone. */
	recset_foreach_dated(az->rs, collect_stale, &p);
	if (p.err) {
		change_list_clear(&cl);
		return p.err;
	}
	size_t n = cl.n;
	int ret = 0;
	if (n) {
		uint32_t serial = 0;
		ret = commit(az, &cl, &serial, false, false);
		if (ret == 0)
			log_info("%s: removed %zu stale TXT records (older than %u s), serial %u, "
			         "snapshot %s in %.2f ms (SQLite commit %.2f ms)", az->name, n, az->stale_age,
			         serial, az->last_patched ? "patched" : "rebuilt", az->last_ms,
			         az->last_commit_ms);
	}
	change_list_clear(&cl);
	return ret < 0 ? ret : (int)n;
}

int acme_purge_stale(struct acme *a, const uint8_t *apex, int64_t now)
{
	struct acme_zone *az = find_zone(a, apex);
	return az ? purge_zone(az, now) : -ENOENT;
}

static void purge_timer(struct loop *l, void *arg);

static void schedule_purge(struct acme_zone *az)
{
	if (!az->a->l || !az->stale_age)
		return;
	uint64_t period = az->stale_age < PURGE_PERIOD_MAX_S ? az->stale_age : PURGE_PERIOD_MAX_S;
	int64_t id = loop_timer_add(az->a->l, period * 1000, purge_timer, az);
	az->purge_timer = id > 0 ? id : 0;
	if (id <= 0)
		log_error("%s: cannot schedule the stale purge", az->name);
}

static void purge_timer(struct loop *l, void *arg)
{
	struct acme_zone *az = arg;
	(void)l;
	az->purge_timer = 0;
	int ret = purge_zone(az, (int64_t)now_s(az->a));
	if (ret < 0)
		log_error("%s: stale purge failed (%s); retrying later", az->name, strerror(-ret));
	schedule_purge(az);
}

/* --- the handler --- */

/* The key named by a TSIG: the UPDATE's own zone first, then every zone. */
static const struct acme_key *find_key(const struct acme *a, const struct tsig_rr *t,
                                       const uint8_t *zone_hint)
{
	enum tsig_alg alg = tsig_alg_from_name(t->alg_name);
	size_t len = dname_len(t->key_name);
	const struct acme_zone *first = zone_hint ? find_zone(a, zone_hint) : NULL;
	for (size_t pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < a->n; i++) {
			const struct acme_zone *az = a->zones[i];
			if ((pass == 0) != (az == first))
				continue;
			for (size_t k = 0; k < az->n_keys; k++) {
				const struct tsig_key *tk = &az->keys[k].tk;
				if (tk->alg == alg && dname_len(tk->name) == len &&
				    memcmp(tk->name, t->key_name, len) == 0)
					return &az->keys[k];
			}
		}
	}
	return NULL;
}

static void name_str(const uint8_t *name, char *out, size_t cap)
{
	if (dname_to_str(name, out, cap) < 0)
		snprintf(out, cap, "(unprintable)");
}

/* What the response's TSIG must be. */
struct reply_tsig {
	const struct tsig_rr *req;       /* NULL: the request was not signed */
	const struct acme_key *key;      /* sign with it; NULL: unsigned error TSIG */
	uint16_t error;
	uint64_t now;
};

static int append_tsig(struct query *q, const struct reply_tsig *r, size_t limit)
{
	const struct tsig_rr *req = r->req;
	uint8_t other[6];
	struct tsig_rr f;
	memset(&f, 0, sizeof(f));
	memcpy(f.key_name, req->key_name, dname_len(req->key_name));
	memcpy(f.alg_name, req->alg_name, dname_len(req->alg_name));
	f.fudge = req->fudge;
	f.orig_id = wire_get_u16(q->tx);
	f.error = r->error;
	f.time_signed = r->now;
	if (r->error == TSIG_BADTIME) {
		/* Section 5.2.3: the client's time signed back, ours in Other Data. */
		f.time_signed = req->time_signed;
		wire_set_u16(other, (uint16_t)(r->now >> 32));
		wire_set_u32(other + 2, (uint32_t)r->now);
		f.other = other;
		f.other_len = 6;
	}
	if (!r->key) {
		/* BADKEY/BADSIG: unsigned, and no request MAC we could vouch for. */
		f.time_signed = req->time_signed;
	}
	return tsig_append(q->tx, &q->tx_len, limit, &f, r->key ? &r->key->tk : NULL, req->mac,
	                   req->mac_len, NULL);
}

/*
 * Header, echoed zone/question and OPT (core's error writer), then the
 * TSIG.  When the TSIG does not fit the client's size (long key and
 * algorithm names in a BADKEY answer over UDP), the sections go and TC is
 * set; if even that does not fit, the answer is a bare TC header.
 */
static int reply(struct query *q, uint8_t rcode, const struct reply_tsig *r)
{
	q->rcode = rcode;
	packet_write_error(q);
	if (!q->tx_len || !r->req)
		return 0;
	size_t limit = q->max_size < q->tx_cap ? q->max_size : q->tx_cap;
	int ret = append_tsig(q, r, limit);
	if (ret == -ENOSPC) {
		q->tx[2] |= 0x02;   /* TC */
		memset(q->tx + 4, 0, 8);
		q->tx_len = MSG_HEADER_LEN;
		ret = append_tsig(q, r, limit);
		if (ret == -ENOSPC)
			return 0;
	}
	if (ret < 0) {
		log_error("cannot sign a response (%s)", strerror(-ret));
		q->tx_len = 0;
		return ret;
	}
	return 0;
}

static uint8_t do_update(struct acme *a, struct query *q, const struct acme_key *key, uint64_t now)
{
	/* Refusals anyone can cause are rate limited: they must not flood the log. */
	static struct log_limit lim_notauth, lim_static, lim_unsigned;
	struct update_msg m;
	char zone[DNAME_MAX * 4 + 2] = "?", kname[DNAME_MAX * 4 + 2] = "(unsigned)";
	if (key)
		name_str(key->tk.name, kname, sizeof(kname));
	/*
	 * The zone section first (RFC 2136 3.1), from the question core has
	 * parsed: whoever is refused costs us no parsing of the rest.
	 */
	if (q->qdcount != 1 || q->qtype != RR_SOA)
		return RCODE_FORMERR;
	name_str(q->qname, zone, sizeof(zone));
	if (q->qclass != CLASS_IN || !zone_table_get(a->t, q->qname)) {
		log_limited(&lim_notauth, LOG_INFO, "update for %s from key %s: not a zone we serve",
		            zone, kname);
		return RCODE_NOTAUTH;
	}
	struct acme_zone *az = find_zone(a, q->qname);
	if (!az || !az->allow_update) {
		log_limited(&lim_static, LOG_WARN,
		            "update for %s from key %s refused: the zone does not allow updates", zone,
		            kname);
		return RCODE_REFUSED;
	}
	if (!key) {
		log_limited(&lim_unsigned, LOG_WARN, "update for %s refused: not signed with TSIG",
		            zone);
		return RCODE_REFUSED;
	}
	if (key->zone != az) {
		log_warn("update for %s refused: key %s belongs to %s", zone, kname, key->zone->name);
		return RCODE_REFUSED;
	}
	if (!q->arena)
		return RCODE_SERVFAIL;
	int rc = update_parse(q->rx, q->rx_len, q->arena, &m);
	if (rc != RCODE_NOERROR) {
		log_info("update for %s from key %s: malformed (rcode %d)", zone, kname, rc);
		return (uint8_t)rc;
	}
	rc = update_prereq(zone_table_get(a->t, az->apex), az->apex, &m);
	if (rc != RCODE_NOERROR) {
		log_info("update for %s from key %s: prerequisite not met (rcode %d)", zone, kname, rc);
		return (uint8_t)rc;
	}
	rc = update_prescan(az->apex, &m);
	if (rc != RCODE_NOERROR) {
		log_info("update for %s from key %s: prescan failed (rcode %d)", zone, kname, rc);
		return (uint8_t)rc;
	}
	if (policy_check_request(&key->pol, &m) < 0)
		return RCODE_REFUSED;

	struct change_list cl;
	change_list_init(&cl);
	uint8_t ret = RCODE_NOERROR;
	if (update_compute(az->rs, az->apex, &m, (int64_t)now, &cl) < 0) {
		log_error("update for %s: out of memory", zone);
		ret = RCODE_SERVFAIL;
	} else if (cl.n == 0) {
		log_info("update for %s from key %s: nothing to change", zone, kname);
	} else if (policy_check_changes(&key->pol, az->rs, &cl) < 0) {
		ret = RCODE_REFUSED;
	} else {
		size_t dels = 0, adds = 0;
		for (size_t i = 0; i < cl.n; i++) {
			if (cl.v[i].op == CHANGE_ADD)
				adds++;
			else
				dels++;
		}
		uint32_t serial = 0;
		if (commit(az, &cl, &serial, false, false) < 0)
			ret = RCODE_SERVFAIL;
		else
			log_info("update for %s from key %s: %zu added, %zu deleted, serial %u, "
			         "snapshot %s in %.2f ms (SQLite commit %.2f ms)", zone, kname, adds, dels,
			         serial, az->last_patched ? "patched" : "rebuilt", az->last_ms,
			         az->last_commit_ms);
	}
	change_list_clear(&cl);
	return ret;
}

/* A verified signed query: answered by core, with room kept for the TSIG. */
static void signed_query(struct acme *a, struct query *q, const struct reply_tsig *r)
{
	if (!a->env || q->opcode != OPCODE_QUERY) {
		reply(q, a->env ? RCODE_NOTIMP : RCODE_REFUSED, r);
		return;
	}
	size_t limit = q->max_size < q->tx_cap ? q->max_size : q->tx_cap;
	size_t reserve = tsig_space(&r->key->tk);
	size_t saved = q->max_size;
	if (limit > reserve + MSG_HEADER_LEN)
		q->max_size = limit - reserve;
	answer_query(q, a->env);
	q->max_size = saved;
	if (!q->tx_len)
		return;
	if (append_tsig(q, r, limit) < 0)
		q->tx_len = 0;
}

static int handle(void *ctx, struct query *q)
{
	struct acme *a = ctx;
	uint64_t now = now_s(a);
	struct tsig_rr t;
	struct reply_tsig r = { NULL, NULL, TSIG_NOERROR, now };
	q->tx_len = 0;
	if (q->rx_len < MSG_HEADER_LEN)
		return 0;
	int found = tsig_find(q->rx, q->rx_len, &t);
	if (found < 0)
		return reply(q, RCODE_FORMERR, &r);
	if (found) {
		char kname[DNAME_MAX * 4 + 2];
		name_str(t.key_name, kname, sizeof(kname));
		const struct acme_key *key = find_key(a, &t, q->opcode == OPCODE_UPDATE ? q->qname : NULL);
		int v = tsig_verify(q->rx, &t, key ? &key->tk : NULL, now);
		/* Anyone can send these: rate limited so they cannot flood the log. */
		static struct log_limit lim_size, lim_key, lim_time;
		if (v < 0) {
			log_limited(&lim_size, LOG_WARN, "TSIG from key %s: MAC size %u not allowed", kname,
			            t.mac_len);
			return reply(q, RCODE_FORMERR, &r);
		}
		r.req = &t;
		r.error = (uint16_t)v;
		if (v == TSIG_BADKEY || v == TSIG_BADSIG) {
			log_limited(&lim_key, LOG_WARN, "TSIG from key %s: %s", kname,
			            v == TSIG_BADKEY ? "unknown key or algorithm (BADKEY)"
			                             : "wrong MAC (BADSIG)");
			return reply(q, RCODE_NOTAUTH, &r);
		}
		r.key = key;
		if (v != TSIG_NOERROR) {
			/* The MAC was right: these come from a key holder, but may repeat. */
			if (v == TSIG_BADTIME)
				log_limited(&lim_time, LOG_WARN,
				            "TSIG from key %s: time %llu is %lld s off our clock (BADTIME)",
				            kname, (unsigned long long)t.time_signed,
				            (long long)(t.time_signed - now));
			else
				log_limited(&lim_time, LOG_WARN,
				            "TSIG from key %s: MAC truncated to %u bytes (BADTRUNC)", kname,
				            t.mac_len);
			return reply(q, RCODE_NOTAUTH, &r);
		}
		if (q->opcode != OPCODE_UPDATE) {
			signed_query(a, q, &r);
			return 0;
		}
		/*
		 * A replayed UPDATE verifies like the original.  Refused as
		 * RFC 8945 5.2.3 refuses a time signed earlier than the last
		 * one seen: NOTAUTH, BADTIME, signed, our clock in Other Data.
		 * Signed queries change nothing, so they are not remembered.
		 */
		uint64_t window = t.fudge < key->tk.fudge ? t.fudge : key->tk.fudge;
		int seen = replay_check(key->replay, t.time_signed, window, t.mac, t.mac_len, now);
		if (seen < 0) {
			static struct log_limit lim_replay;
			log_limited(&lim_replay, LOG_WARN, "TSIG from key %s: %s (BADTIME)", kname,
			            seen == -EALREADY ? "a replayed UPDATE: its MAC was accepted before"
			                              : "an UPDATE signed before this server could remember "
			                                "it, refused as a possible replay");
			r.error = TSIG_BADTIME;
			return reply(q, RCODE_NOTAUTH, &r);
		}
	}
	if (q->opcode != OPCODE_UPDATE)
		return reply(q, RCODE_NOTIMP, &r);
	return reply(q, do_update(a, q, r.key, now), &r);
}

struct update_handler acme_update_handler(struct acme *a, struct answer_env *env)
{
	a->env = env;
	return (struct update_handler){ .ctx = a, .handle = handle };
}

/* --- setup --- */

struct journal_visit {
	int (*fn)(void *arg, const uint8_t *apex, const uint8_t *diff, size_t len);
	void *arg;
	const uint8_t *apex;
};

static int journal_visit(void *arg, const struct journal_entry *e)
{
	struct journal_visit *v = arg;
	return v->fn(v->arg, v->apex, e->diff, e->len);
}

struct acme *acme_new(struct zone_table *t, struct loop *l, char err[256])
{
	struct acme *a = calloc(1, sizeof(*a));
	if (!a) {
		errf(err, "out of memory");
		return NULL;
	}
	a->t = t;
	a->l = l;
	return a;
}

static void zone_free_acme(struct acme_zone *az)
{
	if (!az)
		return;
	if (az->purge_timer > 0 && az->a->l)
		loop_timer_cancel(az->a->l, az->purge_timer);
	if (az->resign_timer > 0 && az->a->l)
		loop_timer_cancel(az->a->l, az->resign_timer);
	for (size_t i = 0; i < az->n_keys; i++) {
		policy_clear(&az->keys[i].pol);
		replay_free(az->keys[i].replay);
	}
	free(az->keys);
	recset_free(az->rs);
	db_close(az->db);
	free(az->journal_path);
	free(az);
}

void acme_free(struct acme *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		zone_free_acme(a->zones[i]);
	free(a->zones);
	free(a);
}

void acme_keep_replay(struct acme *a, const struct acme *prev)
{
	for (size_t i = 0; a && prev && i < a->n; i++) {
		const struct acme_zone *old = find_zone(prev, a->zones[i]->apex);
		for (size_t k = 0; old && k < a->zones[i]->n_keys; k++) {
			struct acme_key *ak = &a->zones[i]->keys[k];
			for (size_t j = 0; j < old->n_keys; j++) {
				const struct tsig_key *o = &old->keys[j].tk;
				if (o->alg == ak->tk.alg && dname_len(o->name) == dname_len(ak->tk.name) &&
				    memcmp(o->name, ak->tk.name, dname_len(o->name)) == 0)
					replay_copy(ak->replay, old->keys[j].replay);
			}
		}
	}
}

static int load_row(void *arg, const struct records_row *row)
{
	struct acme_zone *az = arg;
	if (row->rclass != CLASS_IN) {
		log_warn("%s: ignoring a record of class %u in %s", az->name, (unsigned)row->rclass,
		         az->journal_path);
		return 0;
	}
	/*
	 * A row is trusted no more than an UPDATE: one edited by hand (or by a
	 * bug) must not make the answer path read past its rdata.
	 */
	const char *why = NULL;
	if (rdata_check(row->type, row->rdata, row->rdlen, &why) < 0) {
		char n[DNAME_MAX * 4 + 2], t[16];
		name_str(row->name, n, sizeof(n));
		log_warn("%s: skipping a malformed %s record at %s in %s: %s", az->name,
		         policy_type_str(row->type, t), n, az->journal_path, why);
		return 0;
	}
	return recset_add(az->rs, row->name, row->type, row->ttl, row->rdata, row->rdlen,
	                  row->created_at);
}

/* First start: the zone file, checked by building it, then written once. */
static int seed(struct acme_zone *az, const struct config_zone *zc, struct zone **z,
                char err[256])
{
	if (!zc->zone_path) {
		errf(err, "%s is empty and no zone_path is configured to seed it",
		         az->journal_path);
		return -EINVAL;
	}
	struct change_list cl;
	struct diag d;
	change_list_init(&cl);
	diag_init(&d);
	int ret = seed_read(zc->zone_path, az->apex, &cl, &d);
	if (ret < 0) {
		for (size_t i = 0; i < d.n; i++)
			log_error("%s", d.msgs[i]);
		errf(err, "%s", d.n ? d.msgs[0] : "cannot read the zone file");
		goto out;
	}
	ret = recset_apply(az->rs, &cl, false);
	if (ret < 0) {
		errf(err, "out of memory");
		goto out;
	}
	*z = build(az, err);
	if (!*z) {
		ret = -EINVAL;
		goto out;
	}
	ret = seed_commit(az->db, &cl, az->apex, zc->zone_path, (int64_t)now_s(az->a));
	if (ret < 0) {
		errf(err, "%s: cannot write the seeded records", az->journal_path);
		zone_free(*z);
		*z = NULL;
		goto out;
	}
	log_info("%s: seeded %s with %zu records from %s", az->name, az->journal_path, cl.n,
	         zc->zone_path);
out:
	change_list_clear(&cl);
	diag_clear(&d);
	return ret;
}

static int add_keys(struct acme_zone *az, const struct config_zone *zc, char err[256])
{
	if (!zc->n_tsig_keys)
		return 0;
	az->keys = calloc(zc->n_tsig_keys, sizeof(*az->keys));
	if (!az->keys) {
		errf(err, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < zc->n_tsig_keys; i++) {
		const struct config_tsig_key *k = &zc->tsig_keys[i];
		struct acme_key *ak = &az->keys[i];
		if (tsig_key_init(&ak->tk, k->name, k->algorithm, k->secret, k->secret_len, k->fudge,
		                  err) < 0)
			return -EINVAL;
		/* n_keys counts it from here: zone_free_acme() clears what it made. */
		az->n_keys = i + 1;
		if (policy_init(&ak->pol, zc, k, az->apex, err) < 0)
			return -EINVAL;
		if (!(ak->replay = replay_new(now_s(az->a)))) {
			errf(err, "out of memory");
			return -ENOMEM;
		}
		ak->zone = az;
	}
	return 0;
}

int acme_add_zone(struct acme *a, const struct config *c, const struct config_zone *zc,
                  const struct zone_signer *signer, char err[256])
{
	(void)c;
	struct acme_zone *az = calloc(1, sizeof(*az));
	struct zone *z = NULL;
	int ret = -ENOMEM;
	if (!az) {
		errf(err, "out of memory");
		return -ENOMEM;
	}
	az->a = a;
	if (dname_from_str(zc->zone, az->apex) < 0) {
		errf(err, "'%s' is not a valid zone name", zc->zone);
		ret = -EINVAL;
		goto fail;
	}
	dname_lower(az->apex);
	name_str(az->apex, az->name, sizeof(az->name));
	if (zone_table_get(a->t, az->apex) || find_zone(a, az->apex)) {
		errf(err, "zone %s is configured twice", az->name);
		ret = -EEXIST;
		goto fail;
	}
	if (!zc->journal_path) {
		errf(err, "zone %s: a sqlite store needs journal_path", az->name);
		ret = -EINVAL;
		goto fail;
	}
	if (!(az->journal_path = strdup(zc->journal_path)) || !(az->rs = recset_new())) {
		errf(err, "out of memory");
		goto fail;
	}
	if (signer) {
		az->signer = *signer;
		az->has_signer = true;
	}
	az->allow_update = zc->allow_update;
	az->serial_per_signing = signer && zc->axfr_policy != AXFR_DENY;
	az->caps = (struct journal_caps){ zc->ixfr_max_changes, zc->ixfr_max_bytes };
	az->stale_age = zc->stale_txt_age_s;
	if ((ret = add_keys(az, zc, err)) < 0)
		goto fail;

	az->db = db_open(zc->journal_path, err);
	if (!az->db) {
		ret = -EIO;
		goto fail;
	}
	uint8_t owner[DNAME_MAX];
	ret = db_apex(az->db, owner);
	if (ret > 0 && ((size_t)ret != dname_len(az->apex) || memcmp(owner, az->apex, (size_t)ret))) {
		char other[DNAME_MAX * 4 + 2];
		name_str(owner, other, sizeof(other));
		errf(err, "%s holds zone %s, not %s", zc->journal_path, other, az->name);
		ret = -EINVAL;
		goto fail;
	}
	ret = seed_needed(az->db);
	if (ret < 0) {
		errf(err, "%s: cannot read the database", zc->journal_path);
		goto fail;
	}
	if (ret == 1) {
		if ((ret = seed(az, zc, &z, err)) < 0)
			goto fail;
	} else {
		ret = records_load(az->db, load_row, az);
		if (ret < 0) {
			errf(err, "%s: cannot load the records (%s)", zc->journal_path,
			         strerror(-ret));
			goto fail;
		}
		if (!(z = build(az, err))) {
			ret = -EINVAL;
			goto fail;
		}
	}
	struct acme_zone **v = realloc(a->zones, (a->n + 1) * sizeof(*v));
	if (!v) {
		errf(err, "out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	a->zones = v;
	ret = zone_table_add(a->t, z);
	if (ret < 0) {
		errf(err, "zone %s is configured twice", az->name);
		goto fail;
	}
	a->zones[a->n++] = az;
	if (az->allow_update && !az->n_keys)
		log_warn("%s: allow_update without TSIG keys: every UPDATE will be refused", az->name);
	log_info("%s: %zu records from %s, serial %u%s", az->name, recset_count(az->rs),
	         az->journal_path, z->serial, az->has_signer ? ", signed" : "");
	/* Signed anew: what the journal says about signatures is from the last run. */
	if (az->serial_per_signing && bump_serial(az, true, err) < 0) {
		/* Served as loaded; secondaries get the new signatures at the next change. */
		log_error("%s: %s", az->name, err);
	}
	schedule_purge(az);
	return 0;
fail:
	zone_free(z);
	zone_free_acme(az);
	return ret < 0 ? ret : -EINVAL;
}

int acme_journal_foreach(struct acme *a, const uint8_t *apex,
                         int (*fn)(void *arg, const uint8_t *apex, const uint8_t *diff,
                                   size_t len),
                         void *arg)
{
	struct acme_zone *az = find_zone(a, apex);
	if (!az)
		return -ENOENT;
	struct journal_visit v = { fn, arg, az->apex };
	return journal_load(az->db, journal_visit, &v);
}
