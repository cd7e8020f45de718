/* SPDX-License-Identifier: MIT */
/*
 * UPDATEs waiting for their database's write lock (see lockwait.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acme/acme_internal.h"
#include "acme/commit.h"
#include "acme/lockwait.h"
#include "acme/presign.h"
#include "acme/staged.h"
#include "core/conf/log.h"
#include "core/net/loop.h"
#include "core/net/reply_later.h"
#include "core/wire/arena.h"
#include "core/wire/query.h"
#include "storage/db.h"

struct lockwait_item {
	struct lockwait_item *next;
	struct acme_zone *az;
	const struct acme_key *key;
	struct reply_later *token;   /* set by take(); NULL: nobody to answer */
	uint64_t deadline_ms;
	struct query q;              /* the request's parse, over our own buffers */
	uint8_t *tx;
	uint8_t rx[];
};

struct lockwait {
	struct loop *l;
	lockwait_fn fn;
	void *ctx;
	int64_t timer;
	struct lockwait_item *head;
};

struct lockwait *lockwait_new(struct loop *l, lockwait_fn fn, void *ctx)
{
	struct lockwait *w = calloc(1, sizeof(*w));
	if (w)
		*w = (struct lockwait){ l, fn, ctx, 0, NULL };
	return w;
}

static void item_free(struct lockwait_item *it)
{
	arena_free(it->q.arena);
	free(it->tx);
	free(it);
}

/* Unlinks *pp and ends its token unanswered. */
static void drop(struct lockwait_item **pp)
{
	struct lockwait_item *it = *pp;
	*pp = it->next;
	if (it->token)
		reply_later_drop(it->token);
	item_free(it);
}

void lockwait_free(struct lockwait *w)
{
	if (!w)
		return;
	if (w->timer > 0)
		loop_timer_cancel(w->l, w->timer);
	while (w->head)
		drop(&w->head);
	free(w);
}

void lockwait_forget(struct lockwait *w, const struct acme_zone *az)
{
	if (!w)
		return;
	for (struct lockwait_item **pp = &w->head; *pp;) {
		if ((*pp)->az == az)
			drop(pp);
		else
			pp = &(*pp)->next;
	}
}

bool lockwait_waiting(const struct lockwait *w, const struct acme_zone *az)
{
	for (const struct lockwait_item *it = w ? w->head : NULL; it; it = it->next)
		if (it->az == az)
			return true;
	return false;
}

/* An earlier item of the same zone is still waiting: this one keeps its turn. */
static bool behind(const struct lockwait *w, const struct lockwait_item *it)
{
	for (const struct lockwait_item *p = w->head; p != it; p = p->next)
		if (p->az == it->az)
			return true;
	return false;
}

/* The outcome in it->q goes to the client, as the network layer would send it. */
static void deliver(struct lockwait_item *it)
{
	struct query *q = &it->q;
	if (q->later.take) {
		q->later.take(q->later.ctx, it->token);   /* held for the disk (commit.h) */
		it->token = NULL;
	} else if (it->token && q->tx_len) {
		reply_later_send(it->token, q->tx, q->tx_len);
		it->token = NULL;
	}
}

static void schedule(struct lockwait *w);

static void retry(struct loop *l, void *arg)
{
	struct lockwait *w = arg;
	w->timer = 0;
	uint64_t now = loop_now_ms(l);
	for (struct lockwait_item **pp = &w->head; *pp;) {
		struct lockwait_item *it = *pp;
		/* Signatures made ahead for it (presign.h), its commit in
		 * stages (staged.h), or a snapshot built with a change committed
		 * before it (commit.h), take what they take: the bound is for
		 * another process's lock. */
		bool signing = presign_busy(it->az) || staged_busy(it->az) ||
		               commit_cut_owed(it->az);
		bool give_up = now >= it->deadline_ms && !signing;
		bool wait = behind(w, it) || signing || db_write_lock_free(it->az->db) == -EBUSY;
		if (wait && !give_up) {
			pp = &it->next;
			continue;
		}
		struct query *q = &it->q;
		arena_reset(q->arena);
		q->tx_len = 0;
		q->later = (struct query_later){ 0 };
		int ret = w->fn(w->ctx, q, it->key, give_up);
		if (ret == -EBUSY) {
			pp = &it->next;
			continue;
		}
		*pp = it->next;
		deliver(it);
		if (it->token)
			reply_later_drop(it->token);
		item_free(it);
	}
	schedule(w);
}

static void schedule(struct lockwait *w)
{
	if (!w->head || w->timer > 0)
		return;
	int64_t id = loop_timer_add(w->l, LOCKWAIT_RETRY_MS, retry, w);
	if (id > 0) {
		w->timer = id;
		return;
	}
	log_error("cannot schedule the UPDATEs waiting for the database lock; they are dropped");
	while (w->head)
		drop(&w->head);
}

static void take_token(void *ctx, struct reply_later *r)
{
	struct lockwait_item *it = ctx;
	it->token = r;
}

int lockwait_hold(struct lockwait *w, struct acme_zone *az, struct query *q,
                  const struct acme_key *key)
{
	struct lockwait_item *it = calloc(1, sizeof(*it) + q->rx_len);
	if (!it)
		return -ENOMEM;
	it->q = *q;
	it->q.arena = arena_new(0);
	it->tx = malloc(q->tx_cap);
	if (!it->q.arena || !it->tx) {
		item_free(it);
		return -ENOMEM;
	}
	memcpy(it->rx, q->rx, q->rx_len);
	it->q.rx = it->rx;
	it->q.tx = it->tx;
	it->q.tx_len = 0;
	it->q.stream = (struct query_stream){ 0 };
	it->q.later = (struct query_later){ 0 };
	it->az = az;
	it->key = key;
	it->deadline_ms = loop_now_ms(w->l) + LOCKWAIT_MS;
	struct lockwait_item **pp = &w->head;
	while (*pp)
		pp = &(*pp)->next;
	*pp = it;
	schedule(w);
	if (!w->head) {
		/* schedule() failed and dropped it (no token yet: nothing sent). */
		return -ENOMEM;
	}
	q->tx_len = 0;
	q->later = (struct query_later){ it, take_token };
	return 0;
}
