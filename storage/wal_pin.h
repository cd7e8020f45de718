/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Keeping a database's WAL and wal-index in memory, so that a COMMIT on the
 * loop never waits for a disk read (issue #26.2).
 *
 * SQLite writes a WAL frame (a 24-byte header and a page: 4120 bytes) in
 * place, and starts again from the file's beginning after each complete
 * checkpoint.  Frames do not fall on the file system's 4096-byte blocks, so
 * almost every write covers part of a block.  When the kernel has dropped
 * that block's page from its cache (memory pressure, or proactive reclaim:
 * on the VMs we measure on, DAMON pages out what was not read for about a
 * minute, and writes do not count as reads), the write first reads the
 * block back, synchronously.  Measured: COMMITs of 16-22 ms on the loop,
 * asleep in ext4_block_write_begin -> wait_on_buffer (doc/performance.md).
 * The -shm file (the wal-index SQLite maps and reads at every transaction)
 * is on disk too and can be dropped the same way.
 *
 * A pin is a read-only shared mapping of the WAL's first bytes, up to `cap`
 * or the file's end, locked with mlock (locked pages stay in the page
 * cache, dirty or clean), and a lock of the wal-index regions where SQLite
 * mapped them (the -shm file is never opened here: see pin_index()).  The WAL is pinned only up
 * to `cap` (the checkpoint threshold's size): a WAL that grows past it
 * (one large transaction, or a reader that holds checkpoints back) is
 * written past its old end, which needs no read.  The mappings are never
 * read or written through, so a file that shrinks under them (an operator's
 * sqlite3 with journal_size_limit) costs nothing.
 *
 * Locked memory counts against RLIMIT_MEMLOCK unless the process has
 * CAP_IPC_LOCK (8 MiB is common; contrib/geoacme.service sets 64 MiB).
 * When mlock is refused the pin says why once and the database works
 * exactly as before, unpinned.
 *
 * Not thread-safe: one thread updates a pin (the checkpoint helper's).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct db;
struct wal_pin;
struct sqlite3;

/* For `db`'s files (it need not outlive the pin); NULL when out of memory. */
struct wal_pin *wal_pin_new(const struct db *db, size_t cap);
/*
 * Pins what the files hold now: the WAL up to cap (mapped again when it
 * grew or was replaced), and the wal-index regions `sql` (a connection to
 * the database, used on the caller's thread) finds mapped.  0 when pinned
 * (or when there is nothing yet); -errno when mlock was refused, with
 * `why` (the WAL's pin then stays empty and later calls return the same
 * error at once).
 */
int wal_pin_update(struct wal_pin *p, struct sqlite3 *sql, char why[256]);
/* True once mlock was refused (wal_pin_update said why, and pins nothing more). */
bool wal_pin_refused(const struct wal_pin *p);
/* The WAL bytes pinned now (0 when none). */
size_t wal_pin_wal_bytes(const struct wal_pin *p);
void wal_pin_free(struct wal_pin *p);   /* NULL-safe; unlocks and unmaps */
