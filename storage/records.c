/* SPDX-License-Identifier: MIT */
/*
 * Loading and changing records with the statements db.c prepared.
 */
#include <errno.h>

#include "core/conf/log.h"
#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "storage/journal.h"
#include "storage/records.h"
#include "storage/storage_internal.h"

int records_load(struct db *db, records_fn fn, void *arg)
{
	return records_walk(db->load, db->path, fn, arg);
}

int records_walk(sqlite3_stmt *st, const char *path, records_fn fn, void *arg)
{
	int rc, ret = 0;
	long skipped = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct records_row row;
		row.name = sqlite3_column_blob(st, 0);
		int name_len = sqlite3_column_bytes(st, 0);
		sqlite3_int64 type = sqlite3_column_int64(st, 1);
		sqlite3_int64 rclass = sqlite3_column_int64(st, 2);
		sqlite3_int64 ttl = sqlite3_column_int64(st, 3);
		row.rdata = sqlite3_column_blob(st, 4);
		int rdlen = sqlite3_column_bytes(st, 4);
		row.created_at = sqlite3_column_int64(st, 5);
		if (!db_name_valid(row.name, name_len) ||
		    type <= 0 || type > 65535 || rclass <= 0 || rclass > 65535 ||
		    ttl < 0 || ttl > UINT32_MAX || rdlen > 65535) {
			skipped++;
			continue;
		}
		row.type = (uint16_t)type;
		row.rclass = (uint16_t)rclass;
		row.ttl = (uint32_t)ttl;
		row.rdlen = (uint16_t)rdlen;
		if (!row.rdata)
			row.rdata = (const uint8_t *)"";
		ret = fn(arg, &row);
		if (ret)
			break;
	}
	if (!ret && rc != SQLITE_DONE) {
		log_error("%s: loading records: %s", path, sqlite3_errmsg(sqlite3_db_handle(st)));
		ret = -EIO;
	}
	sqlite3_reset(st);
	if (skipped)
		log_warn("%s: skipped %ld malformed record rows", path, skipped);
	return ret;
}

static int apply_one(struct db *db, const struct change *c)
{
	sqlite3_stmt *st;
	if (c->op == CHANGE_DEL) {
		st = db->delete_one;
		sqlite3_bind_blob(st, 1, c->name, c->name_len, SQLITE_STATIC);
		sqlite3_bind_int(st, 2, c->type);
		sqlite3_bind_blob(st, 3, c->rdata, c->rdlen, SQLITE_STATIC);
		return db_step_done(db, st, "deleting a record");
	}
	st = db->insert;
	sqlite3_bind_blob(st, 1, c->name, c->name_len, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, c->type);
	sqlite3_bind_int64(st, 3, c->ttl);
	sqlite3_bind_blob(st, 4, c->rdata, c->rdlen, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, c->created_at);
	return db_step_done(db, st, "adding a record");
}

int records_apply_in_tx(struct db *db, const struct change_list *cl)
{
	for (size_t i = 0; i < cl->n; i++)
		if (apply_one(db, &cl->v[i]) < 0)
			return -EIO;
	return 0;
}

int records_apply(struct db *db, const struct change_list *cl)
{
	/* One transaction, durable before returning: journal_commit without an entry. */
	return journal_commit(db, cl, NULL, false, NULL);
}

int64_t records_count(struct db *db)
{
	sqlite3_stmt *st = db->count;
	int64_t n = -EIO;
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return n;
}
