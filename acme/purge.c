/* SPDX-License-Identifier: MIT */
/*
 * The stale TXT purge (see purge.h).
 */
#include <errno.h>
#include <string.h>

#include "acme/acme_internal.h"
#include "acme/commit.h"
#include "acme/purge.h"
#include "acme/staged.h"
#include "core/conf/log.h"
#include "core/conf/metrics.h"
#include "core/net/loop.h"
#include "core/wire/change.h"
#include "core/wire/rrset.h"
#include "core/zone/recset.h"

/* How often the purge looks for stale TXT records, at most. */
#define PURGE_PERIOD_MAX_S 60
/*
 * Records removed per commit.  Each removal re-signs the NSEC of the name
 * before it, on the loop (about 25 us of ECDSA each): the 2 000 records of
 * bench/stall.sh's big-update, purged in one commit, were 50 ms of signing
 * in one loop round (issue #26).  More than this many are
 * removed in several commits, one per loop turn (the timer fires again at
 * once), each with its own serial.
 */
#define PURGE_SLICE 64

struct purge_ctx {
	struct change_list *cl;
	int64_t cutoff;
	int err;
	bool more;   /* stale records left for the next commit */
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
		if (p->cl->n >= PURGE_SLICE) {
			p->more = true;
			return 1;
		}
		if (change_list_add(p->cl, CHANGE_DEL, n->name, RR_TXT, r->ttl, r->rdata, r->rdlen,
		                    r->created_at) < 0)
			return p->err = -ENOMEM;
	}
	return 0;
}

int purge_stale(struct acme_zone *az, int64_t now)
{
	if (!az->stale_age)
		return 0;
	/* A large UPDATE's transaction is open (staged.h): the next period. */
	if (staged_open(az))
		return 0;
	struct change_list cl;
	change_list_init(&cl);
	struct purge_ctx p = { &cl, now - (int64_t)az->stale_age, 0, false };
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
		ret = commit_change(az, &cl, &serial, false, false);
		if (ret == 0)
			metrics.stale_txt_purged += n;
		if (ret == 0)
			log_info("%s: removed %zu stale TXT records (older than %u s), serial %u, "
			         "snapshot %s in %.2f ms (SQLite commit %.2f ms)", az->name, n, az->stale_age,
			         serial, az->last_patched ? "patched" : "rebuilt", az->last_ms,
			         az->last_commit_ms);
	}
	change_list_clear(&cl);
	az->purge_more = ret == 0 && p.more;
	return ret < 0 ? ret : (int)n;
}

static void purge_timer(struct loop *l, void *arg);

void purge_schedule(struct acme_zone *az)
{
	if (!az->a->l || !az->stale_age)
		return;
	uint64_t period = az->stale_age < PURGE_PERIOD_MAX_S ? az->stale_age : PURGE_PERIOD_MAX_S;
	/* The rest of a purge cut at PURGE_SLICE: on the next loop turn. */
	int64_t id = loop_timer_add(az->a->l, az->purge_more ? 0 : period * 1000, purge_timer, az);
	az->purge_timer = id > 0 ? id : 0;
	if (id <= 0)
		log_error("%s: cannot schedule the stale purge", az->name);
}

static void purge_timer(struct loop *l, void *arg)
{
	struct acme_zone *az = arg;
	(void)l;
	az->purge_timer = 0;
	int ret = purge_stale(az, (int64_t)acme_now(az->a));
	if (ret < 0)
		log_error("%s: stale purge failed (%s); retrying later", az->name, strerror(-ret));
	purge_schedule(az);
}


void purge_cancel(struct acme_zone *az)
{
	if (az->purge_timer > 0 && az->a->l)
		loop_timer_cancel(az->a->l, az->purge_timer);
	az->purge_timer = 0;
}
