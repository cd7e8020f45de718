/* SPDX-License-Identifier: MIT */
/*
 * A secondary's copy of a zone (see copy.h).
 */
#include <errno.h>

#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "storage/copy.h"
#include "storage/storage_internal.h"

static int refreshed(struct db *db, int64_t now)
{
	return db_meta_set_int(db, "refreshed_at", now);
}

int copy_replace(struct db *db, const struct change_list *adds, const uint8_t *apex,
                 int64_t now)
{
	if (db_begin(db) < 0)
		return -EIO;
	if (db_step_done(db, db->records_clear, "emptying the records") < 0 ||
	    records_apply_in_tx(db, adds) < 0 ||
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
	if (db_begin(db) < 0)
		return -EIO;
	if (refreshed(db, now) < 0 || db_commit(db) < 0) {
		db_rollback(db);
		return -EIO;
	}
	return 0;
}

int copy_refreshed_at(struct db *db, int64_t *at)
{
	return db_meta_get_int(db, "refreshed_at", at);
}
