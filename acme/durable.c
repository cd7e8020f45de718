/* SPDX-License-Identifier: MIT */
/*
 * Group commit's books (see durable.h).  Commits are counted; an item
 * remembers the count when it was held, a sync the count when it started.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "acme/durable.h"

struct durable_item {
	struct durable_item *next;
	void *item;
	uint64_t seq;            /* commits made when it was held */
};

struct durable {
	durable_release_fn fn;
	void *ctx;
	uint64_t committed;      /* commits made */
	uint64_t covered;        /* commits the sync in flight covers */
	uint64_t durable;        /* commits known to be on disk */
	bool syncing;
	struct durable_item *head, *tail;
};

struct durable *durable_new(durable_release_fn fn, void *ctx)
{
	struct durable *d = calloc(1, sizeof(*d));
	if (d) {
		d->fn = fn;
		d->ctx = ctx;
	}
	return d;
}

/* Releases the held items with seq <= upto, oldest first. */
static void release(struct durable *d, uint64_t upto, bool ok)
{
	struct durable_item *it;
	while ((it = d->head) && it->seq <= upto) {
		d->head = it->next;
		if (!d->head)
			d->tail = NULL;
		void *item = it->item;
		free(it);
		d->fn(d->ctx, item, ok);
	}
}

void durable_free(struct durable *d)
{
	if (!d)
		return;
	release(d, UINT64_MAX, false);
	free(d);
}

bool durable_committed(struct durable *d)
{
	d->committed++;
	return !d->syncing;
}

bool durable_pending(const struct durable *d)
{
	return d->durable < d->committed;
}

bool durable_syncing(const struct durable *d)
{
	return d->syncing;
}

int durable_hold(struct durable *d, void *item)
{
	struct durable_item *it = malloc(sizeof(*it));
	if (!it)
		return -ENOMEM;
	*it = (struct durable_item){ NULL, item, d->committed };
	if (d->tail)
		d->tail->next = it;
	else
		d->head = it;
	d->tail = it;
	return 0;
}

void durable_each(struct durable *d, void (*fn)(void *ctx, void *item), void *ctx)
{
	for (struct durable_item *it = d->head; it; it = it->next)
		fn(ctx, it->item);
}

void durable_sync_started(struct durable *d)
{
	d->syncing = true;
	d->covered = d->committed;
}

bool durable_sync_done(struct durable *d, bool ok)
{
	d->syncing = false;
	/* A failed sync settles nothing on disk, but its commits are given
	 * up all the same: their clients hear SERVFAIL, and a later sync that
	 * succeeds does not make them acknowledged after the fact. */
	d->durable = d->covered;
	release(d, d->covered, ok);
	/* What was released may have committed again, and started a sync. */
	return !d->syncing && d->durable < d->committed;
}
