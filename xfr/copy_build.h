/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A secondary's copy built whole beside the loop (issue #26.1): a received
 * AXFR, or an IXFR the served copy cannot be patched with (compaction, a
 * copy not served yet), is turned into a snapshot and written to its
 * database on a helper thread, while the loop keeps answering from the old
 * copy (or REFUSED for a zone not served yet); the loop then only swaps
 * the snapshot in.  One detached thread per build, whose end the loop
 * hears of through core/net/loop_job.h (no join on the loop).
 *
 * The same thread does the two other slow parts of a copy's life: reading
 * the stored copy at start and on every reload (the database opened and
 * checked, its rows read, the snapshot built: `load`), and the durable
 * commit of an IXFR whose patch the loop prepared (`store_only`: the loop
 * applies the patch once the commit is on disk, so no served serial is one
 * a crash could take back).
 *
 * What the thread touches: the job's inputs, which the caller leaves
 * alone until the done callback (the change list, the base recset, the
 * database connection: the loop uses none of them meanwhile), what it
 * makes itself (a new recset, the snapshot), the metrics registry (locked)
 * and the log.  Never the zone table or anything the loop serves.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xfr/copy_sigs.h"

struct change_list;
struct db;
struct loop;
struct recset;
struct zone;

/* What is written to the database once the snapshot is built. */
enum copy_build_store {
	COPY_STORE_NONE,      /* nothing: the database holds the copy already */
	COPY_STORE_REPLACE,   /* an AXFR: every row replaced by cl (storage/copy.h) */
	COPY_STORE_APPLY,     /* an IXFR already applied to base: cl applied to the rows */
};

struct copy_build_in {
	const uint8_t *apex;
	const char *path;                /* the database (opened there with load), for messages */
	struct db *db;                   /* used by the thread only, until done; NULL with load */
	/* Read the copy from the database first (start, reload): the thread
	 * opens it (db_open: its quick_check reads the whole file), reads its
	 * rows into a new recset and its refreshed_at, and builds the snapshot
	 * unless the copy has expired at `now`.  base, cl and dispose are
	 * NULL, store is COPY_STORE_NONE. */
	bool load;
	/* Only the store, no snapshot: an IXFR the loop patches the served
	 * copy with once it is durable (store is COPY_STORE_APPLY). */
	bool store_only;
	const struct recset *base;       /* build from this (read only); NULL: from cl */
	/* COPY_STORE_REPLACE: the zone, emptied by the thread when it is done
	 * with it (its records are in the new recset then; freeing 400 000 of
	 * them is no work for the loop); else the difference, left as it is. */
	struct change_list *cl;
	enum copy_build_store store;
	int64_t now;                     /* unix s: the copy's refreshed_at */
	/* The copy served now, held (zone_hold) by the caller until done: the
	 * IXFR history's difference from it is made on the thread too.  NULL:
	 * none is served. */
	const struct zone *old;
	/* COPY_STORE_REPLACE: the recset the new one replaces, freed by the
	 * thread once the build and the store succeeded (out->disposed); the
	 * loop's free of 400 000 records took over a second.  The caller
	 * must not use it meanwhile. */
	struct recset *dispose;
	uint32_t delay_ms;               /* a test hook: held this long before done */
};

/* What a build made, for the done callback to take (it owns rs and z then). */
struct copy_build_out {
	struct zone *z;                  /* NULL when the build or the store failed */
	struct recset *rs;               /* a new recset when base was NULL and z is set */
	struct rrsig_expiry sigs;           /* with rs: its earliest RRSIG expiration */
	char err[256];                   /* why z is NULL */
	/* With z and old: whether the serial moved forward from old's, and
	 * then z's difference from old (zone_diff.h; NULL when it failed). */
	bool newer;
	bool disposed;                   /* in->dispose was freed */
	/* With load: the database, opened (NULL when it could not be: err),
	 * for the callback to take; the copy's refreshed_at (0: never); and
	 * whether it had expired (then z is NULL, rs is set). */
	struct db *db;
	int64_t refreshed_at;
	bool expired;
	bool stored;                     /* with store_only: the commit is durable */
	uint8_t *diff;
	size_t diff_len;
	double load_ms, build_ms, store_ms;   /* time on the thread */
};

struct copy_build;

/*
 * Called on the loop when the build ends: out is the job's, to be taken;
 * the job is freed after the call returns.
 */
typedef void (*copy_build_done_fn)(void *ctx, struct copy_build_out *out);

/*
 * Starts a build.  The inputs must stay as they are until the callback
 * (or copy_build_cancel).  NULL with err (no thread, no eventfd).
 */
struct copy_build *copy_build_start(struct loop *l, const struct copy_build_in *in,
                                    copy_build_done_fn fn, void *ctx, char err[256]);

/*
 * Stops a build under way (the server stops, the secondary goes away):
 * the thread is told to stop, its database statement interrupted (a
 * transaction is rolled back), and it is joined; what it made is freed
 * (with load, the database it opened is closed) and the callback is not
 * called.  Returns whether in->dispose was freed (the
 * build had succeeded).  NULL-safe.
 */
bool copy_build_cancel(struct copy_build *cb);
