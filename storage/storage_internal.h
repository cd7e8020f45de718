/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Shared inside storage/ only: the database handle and its statements,
 * prepared once at open (db.c) and used by records.c and seed.c.
 */
#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "storage/db.h"
#include "storage/records.h"

struct db {
	sqlite3 *sql;
	char *path;
	sqlite3_stmt *begin, *commit, *rollback;
	sqlite3_stmt *load;          /* every record */
	sqlite3_stmt *insert;        /* name, type, ttl, rdata, created_at */
	sqlite3_stmt *delete_one;    /* name, type, rdata */
	sqlite3_stmt *count;
	sqlite3_stmt *meta_get;      /* key -> value */
	sqlite3_stmt *meta_set;      /* key, value */
	sqlite3_stmt *journal_insert;       /* serial_from, serial_to, diff */
	sqlite3_stmt *journal_load;
	sqlite3_stmt *journal_clear;
	sqlite3_stmt *journal_prune_count;  /* keep the newest ?1 */
	sqlite3_stmt *journal_prune_bytes;  /* keep the newest adding up to ?1 bytes */
	sqlite3_stmt *records_clear;        /* every record (a secondary's AXFR) */
	sqlite3_stmt *zonefile_load;        /* the zone file as last applied (zonefile.h) */
	sqlite3_stmt *zonefile_insert;      /* name, type, ttl, rdata */
	sqlite3_stmt *zonefile_delete;      /* name, type, rdata */
};

/* BEGIN IMMEDIATE / COMMIT / ROLLBACK through the prepared statements. */
int db_begin(struct db *db);
int db_commit(struct db *db);
void db_rollback(struct db *db);
/* "<path>-wal", the database's WAL file (malloc'd; NULL when out of memory). */
char *db_wal_path(const struct db *db);
/* True when p[0 .. n) is exactly one uncompressed wire name (stored blobs are not trusted). */
bool db_name_valid(const uint8_t *p, int n);
/* Runs a prepared statement that returns no rows, then resets it: 0,
 * -EBUSY (another process holds the lock; logged by no one) or -EIO. */
int db_step_done(struct db *db, sqlite3_stmt *st, const char *what);
/* Meta values, inside the caller's transaction; 0 or -EIO. */
int db_meta_set_blob(struct db *db, const char *key, const void *p, int n);
int db_meta_set_text(struct db *db, const char *key, const char *value);
int db_meta_set_int(struct db *db, const char *key, int64_t value);
/* 0 and *out, -ENOENT when the key is not set, or -EIO. */
int db_meta_get_int(struct db *db, const char *key, int64_t *out);
/* records.c: applies a change list inside the caller's transaction. */
struct change_list;
int records_apply_in_tx(struct db *db, const struct change_list *cl);
/* zonefile.c: applies a change list to the stored zone file, likewise. */
int zonefile_apply_in_tx(struct db *db, const struct change_list *cl);
/* records.c: the rows of a statement that selects name, type, class, ttl,
 * rdata, created_at, checked as records_load() checks them (`path` names
 * the database in log lines); the statement is reset afterwards. */
int records_walk(sqlite3_stmt *st, const char *path, records_fn fn, void *arg);
