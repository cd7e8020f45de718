/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Making a database's commits durable without blocking the caller (db.h).
 *
 * SQLite's durable commit (WAL, synchronous=FULL) is an fsync of the WAL
 * inside COMMIT: 1-2 ms typically, up to ~15 ms on a busy disk, and the
 * server is one single-threaded loop.  In asynchronous mode the database
 * is switched to synchronous=NORMAL, so COMMIT only writes the WAL frames
 * into the page cache (still atomic and consistent: SQLite syncs the WAL
 * itself at checkpoints and when it starts the WAL over, which is rare),
 * and this module makes them durable: an fdatasync of the WAL file through
 * Linux native AIO (io_submit with IOCB_CMD_FDSYNC, Linux >= 4.18), run by
 * the kernel while the caller goes on, its completion signalled on an
 * eventfd the caller watches.  No thread: the process stays single-threaded.
 * An fdatasync that starts after a COMMIT returned covers that commit (any
 * descriptor of the inode flushes its pages; we keep our own, read-only,
 * on "<db>-wal", and open it again if SQLite ever deletes the file).  Each
 * time it is opened the WAL's folder is synced too: SQLite does that at
 * its first sync of a new WAL, which in NORMAL mode is the first
 * checkpoint, and until then a power cut could lose the file's name.
 *
 * Where AIO cannot fsync (no io_setup, a file system without it such as
 * tmpfs, old kernels) or when the caller asks for it, the mode is
 * blocking: the database keeps synchronous=FULL and every COMMIT returns
 * durable, exactly as without this module.
 */
#include <stdbool.h>

struct db;
struct wal_sync;

/*
 * For `db` (which must outlive it).  With `async`, tries the AIO path: a
 * first fdatasync through it is made and waited for here, so a file system
 * that cannot do it is found at start.  When that fails the mode is
 * blocking and `why` says why (empty when asynchronous, or when blocking
 * was asked for).  NULL when out of memory or when the synchronous setting
 * cannot be changed (why says so).
 */
struct wal_sync *wal_sync_new(struct db *db, bool async, char why[256]);
void wal_sync_free(struct wal_sync *ws);   /* NULL-safe; waits for a sync in flight */

/* Asynchronous: commits return before they are durable; use the calls below. */
bool wal_sync_async(const struct wal_sync *ws);
/* The eventfd that becomes readable when a started sync completes; -1 when blocking. */
int wal_sync_event_fd(const struct wal_sync *ws);
/*
 * Starts making every commit returned so far durable.  Returns 0 when
 * started: wait for the event fd, then wal_sync_finish (when AIO refuses
 * one, an fdatasync is made on the spot and its result reported the same
 * way); 1 in blocking mode (durable already).  One sync at a time: not
 * called again before wal_sync_finish returned non-zero.
 */
int wal_sync_start(struct wal_sync *ws);
/*
 * After the event fd was readable: 1 the sync completed (everything
 * committed before wal_sync_start is durable), 0 not yet, or a negative
 * errno: the sync failed.
 */
int wal_sync_finish(struct wal_sync *ws);
/* Waits for a sync in flight and returns as wal_sync_finish (1 when none). */
int wal_sync_wait(struct wal_sync *ws);
/* Waits for a sync in flight, then makes everything durable on the spot
 * (a blocking fdatasync; at shutdown): 1 or a negative errno. */
int wal_sync_flush(struct wal_sync *ws);
