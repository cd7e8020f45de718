/* SPDX-License-Identifier: MIT */
/*
 * The zone file seeds an empty database (see seed.h).
 */
#include <errno.h>
#include <stdbool.h>

#include "core/conf/diag.h"
#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/zone/zone_file.h"
#include "storage/seed.h"
#include "storage/storage_internal.h"

int seed_needed(struct db *db)
{
	sqlite3_stmt *st = db->meta_get;
	sqlite3_bind_text(st, 1, "seeded_at", -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? 1 : -EIO;
}

struct seed_ctx {
	struct change_list *cl;
	const char *path;
	const uint8_t *apex;
	struct diag *d;
	int err;
	int soa_line;
};

static int seed_rr(void *arg, const uint8_t *owner, uint16_t type, uint32_t ttl,
                   const uint8_t *rdata, uint16_t rdlen, int line)
{
	struct seed_ctx *s = arg;
	/*
	 * An ACME zone takes what its UPDATE policy takes (acme/policy.c): no
	 * '*' label, no DNAME.  A wildcard there would answer every
	 * _acme-challenge name nobody has published, and a DNAME would make
	 * later UPDATEs below it unservable.
	 */
	bool star = false;
	for (const uint8_t *p = owner; *p; p += *p + 1)
		star |= p[0] == 1 && p[1] == '*';
	if (star || type == RR_DNAME) {
		char name[DNAME_MAX * 4 + 1];
		dname_to_str(owner, name, sizeof(name));
		diag_add(s->d, s->path, line, 0, "%s: an ACME zone takes no %s (its UPDATE "
		         "policy refuses them too: doc/zones.md)", name,
		         star ? "wildcard or '*' label" : "DNAME");
		return 1;
	}
	if (type == RR_SOA && dname_equal(owner, s->apex)) {
		if (s->soa_line) {
			diag_add(s->d, s->path, line, 0, "a second SOA record at the apex (the first is "
			         "at line %d): a zone has exactly one", s->soa_line);
			return 1;
		}
		s->soa_line = line;
	}
	int ret = change_list_add(s->cl, CHANGE_ADD, owner, type, ttl, rdata, rdlen, 0);
	if (ret < 0)
		s->err = ret;
	return ret;
}

int seed_read(const char *path, const uint8_t *apex, struct change_list *cl, struct diag *d,
              int *soa_line)
{
	struct seed_ctx s = { .cl = cl, .path = path, .apex = apex, .d = d, .err = 0 };
	int ret = zone_file_read(path, apex, seed_rr, &s, d);
	if (soa_line)
		*soa_line = s.soa_line;
	if (s.err) {
		diag_add(d, path, 0, 0, "out of memory while reading records");
		return s.err;
	}
	return ret < 0 ? -EINVAL : 0;
}

int seed_commit(struct db *db, const struct change_list *cl, const uint8_t *apex,
                const char *path, int64_t now)
{
	if (db_begin(db) < 0)
		return -EIO;
	if (records_apply_in_tx(db, cl) < 0 || zonefile_apply_in_tx(db, cl) < 0 ||
	    db_meta_set_blob(db, "apex", apex, (int)dname_len(apex)) < 0 ||
	    db_meta_set_text(db, "seeded_from", path) < 0 ||
	    db_meta_set_int(db, "seeded_at", now) < 0 ||
	    db_commit(db) < 0) {
		db_rollback(db);
		return -EIO;
	}
	return 0;
}
