/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Group commit: replies held until the commits they acknowledge are on
 * disk (one per zone database; the disk side is storage/wal_sync.h).
 *
 * Commits return before they are durable; a reply that speaks of the
 * database's state (an UPDATE's NOERROR, or any UPDATE reply while a commit
 * is not yet durable) is held, first in first out, until an fdatasync that
 * STARTED after the last commit before it has completed.  One sync is in
 * flight at a time: it covers every commit made before it started; when it
 * completes, every reply it covers is released, in order, and if commits
 * arrived meanwhile the next sync is to be started, covering them all at
 * once (so a burst of UPDATEs costs two syncs, not one each).
 *
 * This file only keeps the books (no I/O, unit-tested on its own); the
 * caller starts syncs and sends what is released.
 */
#include <stdbool.h>

struct durable;

/* Called for each released item, in the order held: ok false when the
 * sync failed (what was committed may not be on disk). */
typedef void (*durable_release_fn)(void *ctx, void *item, bool ok);

struct durable *durable_new(durable_release_fn fn, void *ctx);   /* NULL: out of memory */
/* NULL-safe; items still held are released with ok false. */
void durable_free(struct durable *d);

/* A commit returned.  True when a sync must be started now (none in flight). */
bool durable_committed(struct durable *d);
/* Some commit is not yet covered by a completed sync. */
bool durable_pending(const struct durable *d);
/* A sync is in flight. */
bool durable_syncing(const struct durable *d);
/*
 * Holds `item` until every commit made so far is durable (call only while
 * durable_pending).  0, or -ENOMEM (the item was not taken).
 */
int durable_hold(struct durable *d, void *item);
/* Calls fn(ctx, item) for every item still held, oldest first (fn must
 * not hold or release): to mark them, e.g. for a build they waited for
 * that failed while they waited for the disk (acme/commit.c). */
void durable_each(struct durable *d, void (*fn)(void *ctx, void *item), void *ctx);
/* A sync was started: it covers every commit made so far. */
void durable_sync_started(struct durable *d);
/*
 * The sync in flight completed (ok) or failed: releases every item it
 * covers, in order (the release callback may commit, and start a sync,
 * again).  True when commits made since need the next sync started.
 */
bool durable_sync_done(struct durable *d, bool ok);
