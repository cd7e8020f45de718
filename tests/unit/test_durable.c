/* SPDX-License-Identifier: MIT */
/*
 * acme/durable: group commit's books.  Replies are released in the order
 * held, only by a sync that started after the last commit before them;
 * commits made while a sync is in flight wait for the next one, which
 * covers them all; a failed sync releases what it covers as failed.
 */
#include <stdbool.h>
#include <string.h>

#include "acme/durable.h"
#include "check.h"

struct log {
	int item[64];
	bool ok[64];
	int n;
	struct durable *d;
	bool commit_on_release;   /* a released reply lets its client commit again */
	bool restarted;
};

static void on_release(void *ctx, void *item, bool ok)
{
	struct log *l = ctx;
	l->item[l->n] = (int)(long)item;
	l->ok[l->n] = ok;
	l->n++;
	if (l->commit_on_release) {
		l->commit_on_release = false;
		if (durable_committed(l->d)) {
			durable_sync_started(l->d);
			l->restarted = true;
		}
	}
}

static void visit(void *ctx, void *it)
{
	struct log *l = ctx;
	l->item[l->n++] = (int)(long)it;
}

static void *item(int i)
{
	return (void *)(long)i;
}

int main(void)
{
	struct log l = { 0 };
	struct durable *d = l.d = durable_new(on_release, &l);
	ok(d != NULL, "made");
	ok(!durable_pending(d) && !durable_syncing(d), "nothing committed: nothing pending");

	/* Commit 1: a sync starts at once; its reply waits for it. */
	ok(durable_committed(d), "the first commit starts a sync");
	ok(durable_pending(d), "commit 1 is not on disk yet");
	durable_sync_started(d);
	is_int(durable_hold(d, item(1)), 0, "reply 1 held");

	/* Commits 2 and 3 arrive while it is in flight: no sync of their own. */
	ok(!durable_committed(d), "commit 2: a sync is in flight, none started");
	is_int(durable_hold(d, item(2)), 0, "reply 2 held");
	ok(!durable_committed(d), "commit 3: still none");
	is_int(durable_hold(d, item(3)), 0, "reply 3 held");

	/* The sync started before commit 2: it releases reply 1 only. */
	ok(durable_sync_done(d, true), "done: commits 2 and 3 need the next sync");
	is_int(l.n, 1, "one reply released");
	is_int(l.item[0], 1, "reply 1");
	ok(l.ok[0], "as durable");
	ok(durable_pending(d), "commits 2 and 3 still pending");

	/* One sync covers both. */
	durable_sync_started(d);
	ok(durable_syncing(d), "in flight");
	ok(!durable_sync_done(d, true), "done: nothing left");
	is_int(l.n, 3, "replies 2 and 3 released together");
	is_int(l.item[1], 2, "in the order held (2)");
	is_int(l.item[2], 3, "in the order held (3)");
	ok(!durable_pending(d), "everything on disk");

	/* A reply held while the sync in flight already covers its commit
	 * (an UPDATE that changed nothing, after commit 4) goes with it. */
	ok(durable_committed(d), "commit 4 starts a sync");
	durable_sync_started(d);
	is_int(durable_hold(d, item(4)), 0, "reply 4 held");
	is_int(durable_hold(d, item(5)), 0, "reply 5 (nothing changed) held");
	ok(!durable_committed(d), "commit 6 during the sync");
	is_int(durable_hold(d, item(6)), 0, "reply 6 held");

	/* The sync fails: what it covers is released as failed, the rest waits. */
	ok(durable_sync_done(d, false), "failed: commit 6 needs the next sync");
	is_int(l.n, 5, "replies 4 and 5 released");
	ok(!l.ok[3] && !l.ok[4], "as failed");
	durable_sync_started(d);
	ok(!durable_sync_done(d, true), "the next sync covers commit 6");
	is_int(l.n, 6, "reply 6 released");
	ok(l.ok[5], "as durable: its sync succeeded");

	/* A release that commits again starts the next sync itself: the
	 * caller must not start a second one. */
	ok(durable_committed(d), "commit 7");
	durable_sync_started(d);
	is_int(durable_hold(d, item(7)), 0, "reply 7 held");
	l.commit_on_release = true;
	ok(!durable_sync_done(d, true), "done: the release started the next sync, not the caller");
	ok(l.restarted && durable_syncing(d), "the sync started from the release is in flight");
	is_int(durable_hold(d, item(8)), 0, "reply 8 held");
	ok(!durable_sync_done(d, true), "done");
	is_int(l.n, 8, "replies 7 and 8 released");
	is_int(l.item[7], 8, "reply 8 last");

	/* The items still held are visited, oldest first, and stay held. */
	ok(durable_committed(d), "commit 10");
	durable_sync_started(d);
	is_int(durable_hold(d, item(10)), 0, "reply 10 held");
	is_int(durable_hold(d, item(11)), 0, "reply 11 held");
	struct log seen = { 0 };
	durable_each(d, visit, &seen);
	is_int(seen.n, 2, "two visited");
	ok(seen.item[0] == 10 && seen.item[1] == 11, "in the order held");
	is_int(l.n, 8, "none released");
	ok(!durable_sync_done(d, true), "done");
	is_int(l.n, 10, "replies 10 and 11 released");

	/* Freed with replies waiting: released as failed. */
	ok(durable_committed(d), "commit 12");
	is_int(durable_hold(d, item(9)), 0, "reply 9 held");
	durable_free(d);
	is_int(l.n, 11, "reply 9 released at free");
	ok(!l.ok[10], "as failed");
	durable_free(NULL);
	return done_testing();
}
