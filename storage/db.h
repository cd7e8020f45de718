/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The ACME zone's SQLite database (one file per zone, `journal_path`).
 *
 * After the first start the database, not the zone file, is the truth
 * (Hickory's semantics): the zone file only seeds an empty database
 * (seed.h).  Every UPDATE is one transaction (records.h), committed
 * durably before the response is sent, so a crash at any moment loses
 * nothing that was acknowledged and never leaves half an update.
 *
 * Durability: WAL journal.  db_open() sets synchronous=FULL, which syncs
 * the WAL in every COMMIT: a commit that returned is on disk.  In WAL
 * mode NORMAL syncs only at checkpoints, so a power cut could lose
 * transactions that returned; the server uses NORMAL all the same, but
 * only together with wal_sync.h, which makes the WAL durable itself
 * (fdatasync through Linux AIO, off the event loop) before any UPDATE
 * that depends on it is acknowledged (acme/commit.h: group commit).  The
 * database stays consistent either way: NORMAL still syncs at checkpoints
 * and when the WAL starts over.
 *
 * Schema (PRAGMA user_version = DB_SCHEMA_VERSION), upgraded by forward
 * migrations at open, one transaction per step:
 *
 *   records(name BLOB, type INTEGER, class INTEGER, ttl INTEGER,
 *           rdata BLOB, created_at INTEGER,
 *           PRIMARY KEY (name, type, class, rdata)) WITHOUT ROWID
 *     name        owner, uncompressed lowercase wire form (exact, nothing
 *                 to escape; read it with hex(name) in the sqlite3 shell)
 *     rdata       canonical wire form: uncompressed, names inside lowercase
 *     created_at  unix seconds when an UPDATE added the record; 0 for
 *                 records seeded from the zone file (never purged as stale)
 *   meta(key TEXT PRIMARY KEY, value)       'apex' (wire BLOB),
 *                                            'seeded_from', 'seeded_at'
 *   v2: index records_stale ON records(type, created_at)
 *   v3: PRAGMA application_id = DB_APPLICATION_ID
 *   v4: journal(seq INTEGER PRIMARY KEY, serial_from INTEGER,
 *               serial_to INTEGER, diff BLOB)
 *     one row per change of the served zone, oldest first: the IXFR
 *     history (journal.h; diff is a core/zone/zone_diff.h blob)
 *   v5: zonefile(name, type, class, rdata, ttl)   like records, no created_at
 *     what the zone file said when it was last applied (zonefile.h): the
 *     side an edit of the file is compared with; filled, when a seeded
 *     database is migrated, from its records with created_at 0
 *
 * The serial is not stored apart: it is the apex SOA row's.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DB_SCHEMA_VERSION 5
/* PRAGMA application_id of our files since schema 3: "geoa" in ASCII. */
#define DB_APPLICATION_ID 0x67656f61

struct db;

/*
 * What is at journal_path, found without writing anything (the file is
 * opened with SQLITE_OPEN_READONLY, no PRAGMA that writes): absent (its
 * folder exists and is writable), an empty database, or ours (our
 * application_id, or schema 1..2 from before it, with our tables).
 */
enum db_state { DB_ABSENT, DB_EMPTY, DB_OURS };
struct db_info {
	enum db_state state;
	int version;                /* user_version */
	uint8_t apex[255];          /* meta 'apex' in wire form, when apex_len > 0 */
	int apex_len;
	bool seeded;                /* seeded from the zone file already (DB_OURS) */
};
/*
 * 0 with info filled, or a negative errno with the reason in err: the
 * folder is missing or not writable, the file not readable and writable,
 * not SQLite, foreign (a Hickory journal is named as such), or from a
 * newer geoacme.  Access is checked for the effective user.
 */
int db_identify(const char *path, struct db_info *info, char err[256]);
/* PRAGMA quick_check on a read-only connection: 0, or -EIO with the first problem. */
int db_quick_check(const char *path, char err[256]);

/*
 * Opens or creates the database, sets WAL + synchronous=FULL (wal_sync.h
 * may lower it to NORMAL and sync itself), migrates the
 * schema to DB_SCHEMA_VERSION and prepares every statement.  Opening
 * waits up to 2 s for a lock another process holds; after that the
 * connection never waits (no busy timeout, issue #26.2): a call that
 * meets a lock fails at once with -EBUSY, having changed nothing, and the
 * caller tries again later (acme/lockwait.h).  Refuses a
 * database from a newer geoacme and a file that holds foreign tables
 * (a Hickory journal, say) rather than guessing, and does so after
 * db_identify(), before anything is written to the file.  A database of
 * ours that fails PRAGMA quick_check is refused too (err names the first
 * problem): reads that miss the damage must not make us seed it again.
 */
struct db *db_open(const char *path, char err[256]);
/* The same on a helper thread: the quick_check, which reads the whole
 * file, stops as soon as *stop is set (then NULL, err says interrupted). */
struct db *db_open_stoppable(const char *path, const atomic_bool *stop, char err[256]);
void db_close(struct db *db);   /* NULL-safe */
/*
 * Makes the statement running on db (on another thread) fail at once with
 * SQLITE_INTERRUPT, so its caller rolls back: how a copy built beside the
 * loop is stopped (xfr/copy_build.h).  The one call here that may come
 * from a thread other than the connection's user.  NULL-safe.
 */
void db_interrupt(struct db *db);

/*
 * 0 when a write transaction could start now, -EBUSY when another
 * connection (an operator's sqlite3) holds the write lock, -EIO on another
 * error.  One BEGIN IMMEDIATE and ROLLBACK: no wait, nothing written.
 */
int db_write_lock_free(struct db *db);

/* PRAGMA user_version, or a negative errno. */
int db_schema_version(struct db *db);
/* PRAGMA integrity_check: 0 when "ok", else -EIO with the first problem in err. */
int db_integrity_check(struct db *db, char err[256]);
/*
 * The zone this database belongs to ('apex' in meta), copied to
 * out[DNAME_MAX]: its length, 0 when not recorded yet, or a negative errno.
 */
int db_apex(struct db *db, uint8_t *out);
