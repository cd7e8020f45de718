/* SPDX-License-Identifier: MIT */
/*
 * A secondary's copy of a zone (see copy.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "storage/copy.h"
#include "storage/storage_internal.h"

static int refreshed(struct db *db, int64_t now)
{
	return db_meta_set_int(db, "refreshed_at", now);
}

/* SQLite's order of BLOBs: memcmp, then the shorter first. */
static int blob_cmp(const uint8_t *a, size_t la, const uint8_t *b, size_t lb)
{
	int c = memcmp(a, b, la < lb ? la : lb);
	return c ? c : (la > lb) - (la < lb);
}

/* The records table's key order (name, type, class, rdata), then the
 * list's order, so that of two equal keys the later is inserted later. */
static int key_cmp(const void *x, const void *y)
{
	const struct change *a = *(const struct change *const *)x;
	const struct change *b = *(const struct change *const *)y;
	int c = blob_cmp(a->name, a->name_len, b->name, b->name_len);
	if (!c)
		c = (a->type > b->type) - (a->type < b->type);
	if (!c)
		c = blob_cmp(a->rdata, a->rdlen, b->rdata, b->rdlen);
	return c ? c : (a > b) - (a < b);
}

/*
 * Every row of a transfer inserted in the table's key order: the B-tree
 * (and the records_stale index, by type) then grows at its end.  In the
 * order a transfer brings them (canonical DNS order, or any) each insert
 * lands on another page, and once the transaction outgrows SQLite's page
 * cache every insert spills and re-reads pages: at 100 000 signed names
 * (400 000 records) 12.5 s of CPU against 1.9 s sorted (issue #26).
 */
static int insert_sorted(struct db *db, const struct change_list *adds)
{
	const struct change **order = malloc((adds->n ? adds->n : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < adds->n; i++)
		order[i] = &adds->v[i];
	qsort(order, adds->n, sizeof(*order), key_cmp);
	int ret = 0;
	for (size_t i = 0; i < adds->n && ret == 0; i++) {
		struct change_list one = { .v = (struct change *)order[i], .n = 1, .cap = 1 };
		ret = records_apply_in_tx(db, &one);
	}
	free(order);
	return ret;
}

int copy_replace(struct db *db, const struct change_list *adds, const uint8_t *apex,
                 int64_t now)
{
	if (db_begin(db) < 0)
		return -EIO;
	if (db_step_done(db, db->records_clear, "emptying the records") < 0 ||
	    insert_sorted(db, adds) < 0 ||
	    db_meta_set_blob(db, "apex", apex, (int)dname_len(apex)) < 0 ||
	    refreshed(db, now) < 0 || db_commit(db) < 0) {
		db_rollback(db);
		return -EIO;
	}
	return 0;
}

int copy_apply(struct db *db, const struct change_list *cl, int64_t now)
{
	if (db_begin(db) < 0)
		return -EIO;
	if (records_apply_in_tx(db, cl) < 0 || refreshed(db, now) < 0 || db_commit(db) < 0) {
		db_rollback(db);
		return -EIO;
	}
	return 0;
}

int copy_touch(struct db *db, int64_t now)
{
	/* No disk sync and no checkpoint inside this COMMIT: it runs on the
	 * loop (issue #26).  SQLite's synchronous setting is the connection's
	 * and may change between transactions; FULL again after it, for the
	 * transfers' commits on the build thread, whose sync covers this one. */
	sqlite3_exec(db->sql, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
	sqlite3_wal_autocheckpoint(db->sql, 0);
	int ret = 0;
	if (db_begin(db) < 0) {
		ret = -EIO;
	} else if (refreshed(db, now) < 0 || db_commit(db) < 0) {
		db_rollback(db);
		ret = -EIO;
	}
	sqlite3_wal_autocheckpoint(db->sql, 1000);
	if (sqlite3_exec(db->sql, "PRAGMA synchronous=FULL", NULL, NULL, NULL) != SQLITE_OK)
		ret = -EIO;   /* the next commit must not return before it is durable */
	return ret;
}

int copy_refreshed_at(struct db *db, int64_t *at)
{
	return db_meta_get_int(db, "refreshed_at", at);
}
