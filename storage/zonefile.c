/* SPDX-License-Identifier: MIT */
/*
 * The zone file as last applied (see zonefile.h).
 */
#include <errno.h>
#include <stdio.h>

#include "core/wire/change.h"
#include "storage/storage_internal.h"
#include "storage/zonefile.h"

int zonefile_load(struct db *db, records_fn fn, void *arg)
{
	return records_walk(db->zonefile_load, db->path, fn, arg);
}

int zonefile_apply_in_tx(struct db *db, const struct change_list *cl)
{
	for (size_t i = 0; i < cl->n; i++) {
		const struct change *c = &cl->v[i];
		sqlite3_stmt *st = c->op == CHANGE_DEL ? db->zonefile_delete : db->zonefile_insert;
		sqlite3_bind_blob(st, 1, c->name, c->name_len, SQLITE_STATIC);
		sqlite3_bind_int(st, 2, c->type);
		if (c->op == CHANGE_DEL) {
			sqlite3_bind_blob(st, 3, c->rdata, c->rdlen, SQLITE_STATIC);
		} else {
			sqlite3_bind_int64(st, 3, c->ttl);
			sqlite3_bind_blob(st, 4, c->rdata, c->rdlen, SQLITE_STATIC);
		}
		if (db_step_done(db, st, "storing the zone file") < 0)
			return -EIO;
	}
	return 0;
}

static int peek_walk(sqlite3 *sql, const char *path, const char *q, records_fn fn, void *arg,
                     char err[256])
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(sql, q, -1, &st, NULL) != SQLITE_OK) {
		snprintf(err, 256, "%s: %s", path, sqlite3_errmsg(sql));
		return -EIO;
	}
	int ret = records_walk(st, path, fn, arg);
	sqlite3_finalize(st);
	if (ret < 0)
		snprintf(err, 256, "%s: cannot read the records", path);
	return ret;
}

int zonefile_peek(const char *db_path, records_fn file, records_fn records, void *arg,
                  char err[256])
{
	sqlite3 *sql = NULL;
	if (sqlite3_open_v2(db_path, &sql, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		snprintf(err, 256, "%s: cannot open it read-only: %s", db_path,
		         sql ? sqlite3_errmsg(sql) : "out of memory");
		sqlite3_close(sql);
		return -EIO;
	}
	sqlite3_busy_timeout(sql, 2000);
	sqlite3_stmt *st;
	int version = 0;
	if (sqlite3_prepare_v2(sql, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			version = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	/* Before schema 5, what the migration will copy (db.c). */
	const char *q = version >= 5
	                    ? "SELECT name, type, class, ttl, rdata, 0 FROM zonefile"
	                    : "SELECT name, type, class, ttl, rdata, 0 FROM records"
	                      " WHERE created_at = 0";
	int ret = peek_walk(sql, db_path, q, file, arg, err);
	if (ret == 0)
		ret = peek_walk(sql, db_path,
		                "SELECT name, type, class, ttl, rdata, created_at FROM records", records,
		                arg, err);
	sqlite3_close(sql);
	return ret;
}
