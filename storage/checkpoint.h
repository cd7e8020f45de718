/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * WAL checkpoints off the event loop (issue #26.2).
 *
 * SQLite copies the WAL back into the database ("checkpoint") on its own
 * after a COMMIT that left the WAL at wal_autocheckpoint pages (1000):
 * inside that COMMIT, on the loop, with an fsync of the WAL and one of the
 * database (measured here: 2-30 ms, more on a busy disk, while every zone
 * goes unanswered).  checkpoint_new() turns that off for `db` and gives
 * the job to a helper thread with a connection of its own: after a commit
 * that leaves the WAL at `pages` pages or more, the loop only wakes the
 * helper (a flag and a condition variable, no wait), which runs a PASSIVE
 * checkpoint: it copies what no reader still needs, never waits for a
 * lock (a reader or the operator's sqlite3 only make it copy less, the
 * next one copies the rest) and syncs as SQLite always does (the WAL
 * before the database is written, the database after), so durability is
 * SQLite's own.  Writers and a checkpoint do not block each other in WAL
 * mode; when a checkpoint has copied everything, the next write starts
 * the WAL over.
 *
 * The helper's only shared state is the request flag (under its mutex);
 * it logs each checkpoint at debug level (pages, time) and failures as
 * errors.  Answering stays on the loop's thread.
 */
#include <stdint.h>

struct checkpoint;
struct db;

/*
 * For `db` (which must outlive it).  NULL with err when the helper cannot
 * be started; the caller then keeps SQLite's automatic checkpoints.
 */
struct checkpoint *checkpoint_new(struct db *db, uint32_t pages, char err[256]);
/* NULL-safe: waits for a checkpoint in progress, stops the helper, and
 * gives `db` its automatic checkpoints back. */
void checkpoint_free(struct checkpoint *c);
