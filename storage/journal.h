/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The IXFR journal of an ACME zone, in the zone's database (table journal,
 * db.h): each change of the served zone (an UPDATE, a stale purge, a
 * re-signing) as the difference between the snapshot before and the one
 * after (core/zone/zone_diff.h: deleted and added records, both SOA
 * serials).  A difference is written in the same transaction as the
 * records it describes, so the two never disagree, even after kill -9.
 *
 * Capped by count and by bytes; the oldest entries go first, in that same
 * transaction.  Storage keeps the blobs opaque: it does not parse them.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct change_list;
struct db;

struct journal_entry {
	uint32_t serial_from, serial_to;
	const uint8_t *diff;
	size_t len;
};

struct journal_caps {
	uint32_t max_changes;     /* 0: keep no history */
	uint32_t max_bytes;
};

/*
 * Applies the change list and, when `e` is not NULL, appends its
 * difference; with `reset`, empties the journal first (the history no
 * longer describes what secondaries may hold, e.g. after a restart re-signed
 * the zone).  One transaction, committed before returning: durably with
 * synchronous=FULL, or, when wal_sync.h has set NORMAL, once its next
 * sync completes (records_apply() is this without an entry; caps is read only
 * with one).  An entry larger than max_bytes, or any
 * entry with max_changes 0, empties the journal instead.  -EIO on error,
 * -EBUSY when another process holds the write lock (nothing changed
 * either way; no wait: db.h).
 */
int journal_commit(struct db *db, const struct change_list *cl, const struct journal_entry *e,
                   bool reset, const struct journal_caps *caps);
/*
 * The same, and in the same transaction `file` applied to the stored zone
 * file (zonefile.h): a zone-file edit and the records it changes are
 * written together or not at all.  `file` may be NULL.
 */
int journal_commit_file(struct db *db, const struct change_list *cl,
                        const struct journal_entry *e, bool reset,
                        const struct journal_caps *caps, const struct change_list *file);

/*
 * Appends n differences, in order, in a transaction of their own, with no
 * records: a change committed earlier without one (journal_commit with e
 * NULL), whose difference could only be computed later, beside the loop
 * (acme/compact.h, a build with a committed change).  Should the server
 * stop in between, the journal ends before the zone's serial: the history
 * no longer reaches the served snapshot, so IXFRs get the whole zone and
 * the next difference starts it over (xfr/xfr.c) — a gap, never a wrong
 * answer.  The same caps; -EBUSY / -EIO as journal_commit().
 */
int journal_append(struct db *db, const struct journal_entry *e, size_t n,
                   const struct journal_caps *caps);

/*
 * The same commit in stages, for a change too large for one loop round
 * (acme/staged.h): journal_stage_begin() opens the write transaction
 * (BEGIN IMMEDIATE; -EBUSY at once when another process holds the lock),
 * journal_stage_records() writes n of cl's records from `from` in it
 * (their pages to the WAL at once, uncommitted: COMMIT writes little),
 * journal_stage_commit() appends the difference as journal_commit() does
 * and commits, journal_stage_abandon() rolls back whatever was written.
 * A stage that fails (-EIO) has rolled back already.  While the
 * transaction is open, nothing else may begin one on this db: the caller
 * keeps its other writers waiting.  Until COMMIT nothing of it is
 * committed for anyone (its pages in the WAL are past the last commit):
 * a crash meanwhile leaves the database as it was.
 */
int journal_stage_begin(struct db *db);
int journal_stage_records(struct db *db, const struct change_list *cl, size_t from, size_t n);
int journal_stage_commit(struct db *db, const struct journal_entry *e, bool reset,
                         const struct journal_caps *caps);
void journal_stage_abandon(struct db *db);

/*
 * Calls fn for every entry, oldest first; pointers are valid during the
 * call only.  A non-zero return from fn stops the walk and is returned.
 */
typedef int (*journal_fn)(void *arg, const struct journal_entry *e);
int journal_load(struct db *db, journal_fn fn, void *arg);
