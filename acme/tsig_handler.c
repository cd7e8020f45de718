/* SPDX-License-Identifier: MIT */
/*
 * TSIG for the ACME zones' handler (see tsig_handler.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acme/acme_internal.h"
#include "acme/commit.h"
#include "acme/lockwait.h"
#include "acme/presign.h"
#include "acme/staged.h"
#include "acme/tsig_handler.h"
#include "core/conf/log.h"
#include "core/conf/metrics.h"
#include "core/tsig/replay.h"
#include "core/tsig/tsig.h"
#include "core/wire/dname.h"
#include "core/wire/msg.h"
#include "core/wire/packet.h"
#include "core/wire/query.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/process.h"

/* The key named by a TSIG: the UPDATE's own zone first, then every zone. */
static const struct acme_key *find_key(const struct acme *a, const struct tsig_rr *t,
                                       const uint8_t *zone_hint)
{
	enum tsig_alg alg = tsig_alg_from_name(t->alg_name);
	size_t len = dname_len(t->key_name);
	const struct acme_zone *first = zone_hint ? acme_find_zone(a, zone_hint) : NULL;
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
		packet_write_truncated(q);
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
	process_query(q, a->env);
	q->max_size = saved;
	if (!q->tx_len)
		return;
	if (append_tsig(q, r, limit) < 0)
		q->tx_len = 0;
}

/*
 * geoacme_updates_total{result}: every UPDATE's outcome, counted where its
 * reply is written (the TSIG verdict first, then the RCODE).
 */
static enum metrics_update_result update_result(uint8_t rcode, uint16_t tsig_error)
{
	switch (tsig_error) {
	case TSIG_NOERROR: break;
	case TSIG_BADKEY: return METRICS_UPDATE_BADKEY;
	case TSIG_BADSIG: return METRICS_UPDATE_BADSIG;
	case TSIG_BADTIME: return METRICS_UPDATE_BADTIME;
	default: return METRICS_UPDATE_OTHER;
	}
	switch (rcode) {
	case RCODE_NOERROR: return METRICS_UPDATE_ACCEPTED;
	case RCODE_FORMERR: return METRICS_UPDATE_FORMERR;
	case RCODE_REFUSED: return METRICS_UPDATE_POLICY;
	case RCODE_YXDOMAIN: case RCODE_YXRRSET: case RCODE_NXDOMAIN: case RCODE_NXRRSET:
		return METRICS_UPDATE_PREREQ;
	default: return METRICS_UPDATE_OTHER;
	}
}

static int reply_counted(struct query *q, uint8_t rcode, struct reply_tsig *r)
{
	if (q->opcode == OPCODE_UPDATE)
		METRICS_INC(metrics.updates[update_result(rcode, r->error)]);
	return reply(q, rcode, r);
}

/*
 * The reply to an UPDATE while a commit of its zone is not on disk yet
 * (its own, or one it may have seen): made and signed now, sent once the
 * disk has it (commit.h), or a SERVFAIL, made now too, if it never does.
 */
static int reply_held(struct acme_zone *az, struct query *q, struct reply_tsig *r)
{
	uint8_t rcode = q->rcode;
	uint8_t *fail = NULL;
	size_t fail_len = 0;
	if (reply(q, RCODE_SERVFAIL, r) == 0 && q->tx_len && (fail = malloc(q->tx_len))) {
		memcpy(fail, q->tx, q->tx_len);
		fail_len = q->tx_len;
	}
	int ret = reply_counted(q, rcode, r);
	if (q->tx_len && commit_hold_reply(az, q, fail, fail_len) < 0) {
		/* Out of memory: no reply rather than one before the disk has it. */
		log_error("out of memory holding an UPDATE's reply; it is dropped");
		q->tx_len = 0;
	}
	free(fail);
	return ret;
}

/* An UPDATE handled (commit_update): its reply now, or held for the disk. */
static int update_reply(struct acme *a, struct query *q, struct reply_tsig *r)
{
	struct acme_zone *az = commit_waiting_zone(a, q);
	if (!az)
		return reply_counted(q, q->rcode, r);
	return reply_held(az, q, r);
}

/*
 * An UPDATE whose zone's database another process has locked: held
 * (lockwait.h) and handled again once the lock is free, or answered
 * SERVFAIL at the bound.  Without room to hold it, SERVFAIL now.
 */
static int update_wait(struct acme *a, struct acme_zone *az, struct query *q,
                       struct reply_tsig *r, bool staging)
{
	static struct log_limit lim;
	if (a->lw && lockwait_hold(a->lw, az, q, r->key) == 0) {
		if (presign_busy(az))
			log_info("update for %s waits while a large UPDATE's signatures are made ahead",
			         az->name);
		else if (commit_cut_owed(az))
			log_info("update for %s waits while the snapshot with a committed change is "
			         "built beside the loop", az->name);
		else if (staged_busy(az))
			log_info("update for %s waits while a large UPDATE is committed in stages",
			         az->name);
		else
			log_limited(&lim, LOG_INFO, "update for %s waits: %s is locked by another process "
			            "(at most %d ms)", az->name, az->journal_path, LOCKWAIT_MS);
		return 0;
	}
	if (staging)
		staged_cancel(az);   /* it was never to be answered: nothing committed */
	q->rcode = RCODE_SERVFAIL;
	return update_reply(a, q, r);
}

/* lockwait_fn: a held UPDATE, handled again (its TSIG was verified when it came). */
static int update_again(void *ctx, struct query *q, const struct acme_key *key, bool give_up)
{
	struct acme *a = ctx;
	uint64_t now = acme_now(a);
	struct tsig_rr t;
	if (tsig_find(q->rx, q->rx_len, &t) != 1)
		return 0;   /* cannot happen: it was found in these bytes before; no reply */
	struct reply_tsig r = { &t, key, TSIG_NOERROR, now };
	int rc = commit_update(a, q, key, now);
	if (rc == -EINPROGRESS)
		return -EBUSY;   /* committed in stages (staged.h): past the bound too */
	if (rc == -EBUSY) {
		if (!give_up)
			return -EBUSY;
		static struct log_limit lim;
		log_limited(&lim, LOG_WARN, "update for %s: %s stayed locked by another process for "
		            "%d ms; answered SERVFAIL, nothing changed", key->zone->name,
		            key->zone->journal_path, LOCKWAIT_MS);
	}
	return update_reply(a, q, &r);
}

int tsig_handler_setup(struct acme *a)
{
	if (!a->l || a->lw)
		return 0;
	a->lw = lockwait_new(a->l, update_again, a);
	return a->lw ? 0 : -ENOMEM;
}

int tsig_handler_handle(void *ctx, struct query *q)
{
	struct acme *a = ctx;
	uint64_t now = acme_now(a);
	struct tsig_rr t;
	struct reply_tsig r = { NULL, NULL, TSIG_NOERROR, now };
	q->tx_len = 0;
	if (q->rx_len < MSG_HEADER_LEN)
		return 0;
	int found = tsig_find(q->rx, q->rx_len, &t);
	if (found < 0)
		return reply_counted(q, RCODE_FORMERR, &r);
	if (found) {
		char kname[DNAME_MAX * 4 + 2];
		acme_name_str(t.key_name, kname, sizeof(kname));
		const struct acme_key *key = find_key(a, &t, q->opcode == OPCODE_UPDATE ? q->qname : NULL);
		uint16_t error;
		int v = tsig_verify(q->rx, &t, key ? &key->tk : NULL, now, &error);
		/* Anyone can send these: rate limited so they cannot flood the log. */
		static struct log_limit lim_size, lim_key, lim_time;
		if (v == -EBADMSG) {
			log_limited(&lim_size, LOG_WARN, "TSIG from key %s: MAC size %u not allowed", kname,
			            t.mac_len);
			return reply_counted(q, RCODE_FORMERR, &r);
		}
		r.req = &t;
		r.error = error;
		if (error == TSIG_BADKEY || error == TSIG_BADSIG) {
			log_limited(&lim_key, LOG_WARN, "TSIG from key %s: %s", kname,
			            error == TSIG_BADKEY ? "unknown key or algorithm (BADKEY)"
			                                 : "wrong MAC (BADSIG)");
			return reply_counted(q, RCODE_NOTAUTH, &r);
		}
		r.key = key;
		if (v < 0) {
			/* The MAC was right: these come from a key holder, but may repeat. */
			if (error == TSIG_BADTIME)
				log_limited(&lim_time, LOG_WARN,
				            "TSIG from key %s: time %llu is %lld s off our clock (BADTIME)",
				            kname, (unsigned long long)t.time_signed,
				            (long long)(t.time_signed - now));
			else
				log_limited(&lim_time, LOG_WARN,
				            "TSIG from key %s: MAC truncated to %u bytes (BADTRUNC)", kname,
				            t.mac_len);
			return reply_counted(q, RCODE_NOTAUTH, &r);
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
			return reply_counted(q, RCODE_NOTAUTH, &r);
		}
	}
	if (q->opcode != OPCODE_UPDATE)
		return reply_counted(q, RCODE_NOTIMP, &r);
	/* Behind an UPDATE of its zone that waits for the lock: in turn. */
	/* So does one while a change committed before it is built beside the
	 * loop: handled after the swap, against the zone that shows it. */
	if (r.key && acme_find_zone(a, q->qname) == r.key->zone &&
	    (lockwait_waiting(a->lw, r.key->zone) || (a->lw && commit_cut_owed(r.key->zone))))
		return update_wait(a, r.key->zone, q, &r, false);
	/* The errno is logged there; the RCODE is on q. */
	int rc = commit_update(a, q, r.key, now);
	if (rc == -EBUSY || rc == -EINPROGRESS)
		return update_wait(a, r.key->zone, q, &r, rc == -EINPROGRESS);
	return update_reply(a, q, &r);
}
