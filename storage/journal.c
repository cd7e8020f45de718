/* SPDX-License-Identifier: MIT */
/*
 * The IXFR journal (see journal.h).
 */
#include <errno.h>

#include "core/conf/log.h"
#include "core/wire/change.h"
#include "storage/journal.h"
#include "storage/storage_internal.h"

static int append(struct db *db, const struct journal_entry *e, const struct journal_caps *caps)
{
	if (!caps->max_changes || e->len > caps->max_bytes)
		return db_step_done(db, db->journal_clear, "emptying the journal");
	sqlite3_stmt *st = db->journal_insert;
	sqlite3_bind_int64(st, 1, e->serial_from);
	sqlite3_bind_int64(st, 2, e->serial_to);
	sqlite3_bind_blob(st, 3, e->diff, (int)e->len, SQLITE_STATIC);
	if (db_step_done(db, st, "appending to the journal") < 0)
		return -EIO;
	sqlite3_bind_int64(db->journal_prune_count, 1, caps->max_changes);
	if (db_step_done(db, db->journal_prune_count, "pruning the journal") < 0)
		return -EIO;
	sqlite3_bind_int64(db->journal_prune_bytes, 1, caps->max_bytes);
	return db_step_done(db, db->journal_prune_bytes, "pruning the journal");
}

int journal_commit(struct db *db, const struct change_list *cl, const struct journal_entry *e,
                   bool reset, const struct journal_caps *caps)
{
	return journal_commit_file(db, cl, e, reset, caps, NULL);
}

/* In an open transaction: the difference appended (or the journal emptied), then COMMIT. */
static int finish(struct db *db, const struct journal_entry *e, bool reset,
                  const struct journal_caps *caps)
{
	if ((reset && db_step_done(db, db->journal_clear, "emptying the journal") < 0) ||
	    (e && append(db, e, caps) < 0)) {
		db_rollback(db);
		return -EIO;
	}
	/*
	 * With synchronous=FULL, COMMIT returns once the WAL is synced; with
	 * NORMAL (wal_sync.h) the caller waits for the next sync before it
	 * acknowledges anything.
	 */
	if (db_commit(db) < 0) {
		db_rollback(db);
		return -EIO;
	}
	return 0;
}

int journal_commit_file(struct db *db, const struct change_list *cl,
                        const struct journal_entry *e, bool reset,
                        const struct journal_caps *caps, const struct change_list *file)
{
	int ret = db_begin(db);
	if (ret < 0)
		return ret;   /* -EBUSY: locked by another process, nothing done */
	if (records_apply_in_tx(db, cl) < 0 || (file && zonefile_apply_in_tx(db, file) < 0)) {
		db_rollback(db);
		return -EIO;
	}
	return finish(db, e, reset, caps);
}

int journal_append(struct db *db, const struct journal_entry *e, size_t n,
                   const struct journal_caps *caps)
{
	int ret = db_begin(db);
	if (ret < 0)
		return ret;   /* -EBUSY: locked by another process, nothing done */
	for (size_t i = 0; i + 1 < n; i++) {
		if (append(db, &e[i], caps) < 0) {
			db_rollback(db);
			return -EIO;
		}
	}
	return finish(db, n ? &e[n - 1] : NULL, false, caps);
}

int journal_stage_begin(struct db *db)
{
	return db_begin(db);
}

int journal_stage_records(struct db *db, const struct change_list *cl, size_t from, size_t n)
{
	/* A view of part of the list: never cleared. */
	struct change_list part = { .v = cl->v + from, .n = n, .cap = n };
	if (records_apply_in_tx(db, &part) < 0) {
		db_rollback(db);
		return -EIO;
	}
	/*
	 * This slice's dirty pages go to the WAL now, uncommitted (readers
	 * and a crash ignore frames past the last commit): else COMMIT wrote
	 * them all in one round, 900 pages and 27.5 ms for 2 000 records
	 * (bench/stall.sh big-update).  SQLITE_BUSY (a lock it could not
	 * take; in WAL mode the open write transaction holds all it needs):
	 * they stay in memory until COMMIT, as before.
	 */
	int rc = sqlite3_db_cacheflush(db->sql);
	if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY) {
		log_error("%s: writing a large change's pages: %s", db->path, sqlite3_errmsg(db->sql));
		db_rollback(db);
		return -EIO;
	}
	return 0;
}

int journal_stage_commit(struct db *db, const struct journal_entry *e, bool reset,
                         const struct journal_caps *caps)
{
	return finish(db, e, reset, caps);
}

void journal_stage_abandon(struct db *db)
{
	db_rollback(db);
}

int journal_load(struct db *db, journal_fn fn, void *arg)
{
	sqlite3_stmt *st = db->journal_load;
	int rc, ret = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct journal_entry e = {
			.serial_from = (uint32_t)sqlite3_column_int64(st, 0),
			.serial_to = (uint32_t)sqlite3_column_int64(st, 1),
			.diff = sqlite3_column_blob(st, 2),
			.len = (size_t)sqlite3_column_bytes(st, 2),
		};
		if (!e.diff)
			continue;
		if ((ret = fn(arg, &e)) != 0)
			break;
	}
	if (!ret && rc != SQLITE_DONE) {
		log_error("%s: loading the journal: %s", db->path, sqlite3_errmsg(db->sql));
		ret = -EIO;
	}
	sqlite3_reset(st);
	return ret;
}
