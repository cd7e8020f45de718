/* SPDX-License-Identifier: MIT */
/*
 * A secondary's copy in memory (see copy_mirror.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/wire/change.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/recset.h"
#include "storage/records.h"
#include "xfr/copy_mirror.h"
#include "xfr/xfr_internal.h"

struct loading {
	struct recset *rs;
	const atomic_bool *stop;
};

static int load_row(void *arg, const struct records_row *row)
{
	struct loading *ld = arg;
	if (ld->stop && atomic_load_explicit(ld->stop, memory_order_relaxed))
		return -ECANCELED;
	if (row->rclass != CLASS_IN)
		return 0;
	return recset_add(ld->rs, row->name, row->type, row->ttl, row->rdata, row->rdlen, 0);
}

int copy_mirror_load(struct db *db, struct recset **out, const atomic_bool *stop)
{
	*out = NULL;
	struct recset *rs = recset_new();
	if (!rs)
		return -ENOMEM;
	struct loading ld = { rs, stop };
	int ret = records_load(db, load_row, &ld);
	if (ret < 0) {
		recset_free(rs);
		return ret;
	}
	*out = rs;
	return 0;
}

/* Reads the mirror again; 0, or -errno with *rs left as it was. */
static int reload(struct recset **rs, struct db *db)
{
	struct recset *fresh;
	int ret = copy_mirror_load(db, &fresh, NULL);
	if (ret < 0)
		return ret;
	recset_free(*rs);
	*rs = fresh;
	return 0;
}

int copy_mirror_undo(struct recset **rs, struct db *db, const struct change_list *cl)
{
	if (recset_apply(*rs, cl, true) == 0)
		return 0;
	int ret = reload(rs, db);
	return ret < 0 ? ret : 1;
}

/* The serial of the SOA at apex, or -1 when there is not exactly one. */
static int64_t apex_serial(const struct recset *rs, const uint8_t *apex)
{
	const struct recset_rrset *s = recset_name_rrset(recset_find(rs, apex), RR_SOA);
	if (!s || s->count != 1 || s->rr[0].rdlen < 22)
		return -1;
	return wire_get_u32(s->rr[0].rdata + s->rr[0].rdlen - 20);
}

int copy_mirror_apply_ixfr(struct recset **rs, struct db *db, const struct change_list *cl,
                           const uint8_t *apex, uint32_t serial, char err[256])
{
	int ret = recset_apply(*rs, cl, false);
	if (ret == -EIO) {
		/* Half applied and not undone: the database never saw it. */
		ret = reload(rs, db);
		xfr_errf(err, "out of memory applying the difference; %s",
		          ret < 0 ? "the copy in memory could not be read again"
		                  : "the copy in memory was read again");
		return -EIO;
	}
	if (ret < 0) {
		xfr_errf(err, "out of memory applying the difference");
		return ret;
	}
	long missed = recset_first_missed_delete(*rs, cl);
	int64_t now_serial = apex_serial(*rs, apex);
	if (missed < 0 && now_serial == (int64_t)serial)
		return 0;
	if (missed >= 0) {
		const struct change *c = &cl->v[missed];
		char owner[DNAME_MAX * 4 + 2], type[16];
		xfr_name_str(c->name, owner, sizeof(owner));
		xfr_errf(err, "it deletes %s %s (TTL %u), which the copy does not hold", owner,
		          rrset_type_to_str(c->type, type), c->ttl);
	} else if (now_serial < 0) {
		xfr_errf(err, "it leaves no single SOA at the apex");
	} else {
		xfr_errf(err, "it ends at serial %lld, not at the announced %u", (long long)now_serial,
		          serial);
	}
	ret = copy_mirror_undo(rs, db, cl);
	if (ret < 0) {
		size_t n = strlen(err);
		snprintf(err + n, 256 - n, "; the copy in memory could not be put back");
		return -EIO;
	}
	return -ESTALE;
}
