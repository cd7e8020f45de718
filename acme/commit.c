/* SPDX-License-Identifier: MIT */
/*
 * The update path: check an UPDATE, commit it, rebuild the snapshot (see
 * commit.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acme/acme_internal.h"
#include "acme/commit.h"
#include "acme/recset.h"
#include "acme/update.h"
#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/wire/query.h"
#include "core/wire/rrset.h"
#include "core/zone/zone.h"
#include "core/zone/zone_diff.h"
#include "core/zone/zone_table.h"
#include "storage/change.h"
#include "storage/journal.h"
#include "storage/records.h"

static int add_name(void *arg, const struct recset_name *n)
{
	struct zone_builder *b = arg;
	for (uint16_t k = 0; k < n->nsets; k++) {
		const struct recset_rrset *s = &n->sets[k];
		for (uint16_t j = 0; j < s->count; j++) {
			int ret = zone_builder_add(b, n->name, s->type, s->rr[j].ttl, s->rr[j].rdata,
			                           s->rr[j].rdlen);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

struct zone *commit_build(struct acme_zone *az, char err[256])
{
	struct zone_builder *b = zone_builder_new(az->apex);
	if (!b) {
		acme_errf(err, "out of memory");
		return NULL;
	}
	int ret = recset_foreach(az->rs, add_name, b);
	if (ret < 0) {
		zone_builder_free(b);
		acme_errf(err, "%s: a record cannot be served (%s)", az->name, strerror(-ret));
		return NULL;
	}
	struct diag d;
	diag_init(&d);
	struct zone *z = zone_builder_finish(b, az->has_signer ? &az->signer : NULL,
	                                     az->journal_path, &d);
	if (!z) {
		for (size_t i = 0; i < d.n; i++)
			log_error("%s", d.msgs[i]);
		acme_errf(err, "%s", d.n ? d.msgs[0] : "cannot build the zone");
	}
	diag_clear(&d);
	return z;
}

/*
 * Reads the mirror again from the database, the truth: for when a change
 * applied in memory could not be undone there (out of memory).  Until it
 * succeeds every commit is refused.
 */
static int reload_mirror(struct acme_zone *az)
{
	struct recset *old = az->rs;
	az->rs = recset_new();
	int ret = az->rs ? records_load(az->db, acme_load_row, az) : -ENOMEM;
	if (ret < 0) {
		recset_free(az->rs);
		az->rs = old;
		az->mirror_stale = true;
		log_error("%s: cannot read the records again from %s (%s); refusing changes until it "
		          "works", az->name, az->journal_path, strerror(-ret));
		return ret;
	}
	recset_free(old);
	az->mirror_stale = false;
	log_warn("%s: records read again from %s", az->name, az->journal_path);
	return 0;
}

/* Takes back a change applied to the mirror only (the database never saw it). */
static void unapply(struct acme_zone *az, const struct change_list *cl)
{
	if (recset_apply(az->rs, cl, true) == 0)
		return;
	log_error("%s: cannot undo the change in memory", az->name);
	reload_mirror(az);
}

int commit_change(struct acme_zone *az, struct change_list *cl, uint32_t *serial, bool reset)
{
	char err[256] = "";
	if (az->mirror_stale) {
		/* This change was worked out on a mirror that may be wrong:
		 * refused (SERVFAIL, the client retries); the next one sees the
		 * records read again. */
		reload_mirror(az);
		return -EIO;
	}
	int ret = update_bump_serial(az->rs, az->apex, cl, serial);
	if (ret < 0) {
		log_error("%s: cannot bump the serial: %s", az->name, strerror(-ret));
		return ret;
	}
	ret = recset_apply(az->rs, cl, false);
	if (ret < 0) {
		log_error("%s: out of memory applying a change", az->name);
		if (ret == -EIO)
			reload_mirror(az);
		return ret;
	}
	struct zone *z = commit_build(az, err);
	if (!z) {
		unapply(az, cl);
		log_error("%s: the change was not applied: %s", az->name, err);
		return -EINVAL;
	}
	/*
	 * Durable before anyone hears about it: the response is written only
	 * after this returns.  A client that got NOERROR acts on it (Lego tells
	 * the CA to look at the TXT record now), so an acknowledged change must
	 * survive a crash or a power cut the very next moment; journal_commit()
	 * returns once SQLite has synced the WAL (synchronous=FULL).
	 */
	const struct zone *old = zone_table_get(az->a->t, az->apex);
	uint8_t *diff = NULL;
	size_t diff_len = 0;
	struct journal_entry e = { 0 };
	if (old && !reset && az->caps.max_changes) {
		if (zone_diff(old, z, &diff, &diff_len) < 0) {
			log_warn("%s: cannot compute the change for the journal; it starts over",
			         az->name);
			reset = true;
		} else {
			e = (struct journal_entry){ zone_serial(old), zone_serial(z), diff, diff_len };
		}
	}
	ret = journal_commit(az->db, cl, diff ? &e : NULL, reset, &az->caps);
	free(diff);
	if (ret < 0) {
		unapply(az, cl);
		zone_free(z);
		log_error("%s: the change was not committed to %s", az->name, az->journal_path);
		return ret;
	}
	ret = zone_table_replace(az->a->t, z);
	if (ret < 0) {
		/* Only if the zone vanished from the table: nothing serves it anyway. */
		zone_free(z);
		log_error("%s: committed, but the zone is no longer in the table", az->name);
	}
	return 0;
}

int commit_bump_serial(struct acme_zone *az, bool reset, char err[256])
{
	/*
	 * Secondaries copy this zone: new signatures need a new serial, or
	 * they would keep the old ones until those expire.  The bump is a
	 * change like any other (durable, journaled, announced).
	 */
	struct change_list cl;
	uint32_t serial = 0;
	change_list_init(&cl);
	int ret = commit_change(az, &cl, &serial, reset);
	change_list_clear(&cl);
	if (ret < 0)
		acme_errf(err, "cannot commit the serial of the new signatures");
	return ret;
}

int commit_rebuild(struct acme_zone *az, char err[256])
{
	if (az->serial_per_signing)
		return commit_bump_serial(az, false, err);
	struct zone *z = commit_build(az, err);
	if (!z)
		return -EINVAL;
	return zone_table_replace(az->a->t, z);
}

/* The RCODE goes on the query as data; the errno back to the caller. */
static int answer(struct query *q, uint8_t rcode, int err)
{
	q->rcode = rcode;
	return err;
}

int commit_update(struct acme *a, struct query *q, const struct acme_key *key, uint64_t now)
{
	/* Refusals anyone can cause are rate limited: they must not flood the log. */
	static struct log_limit lim_notauth, lim_static, lim_unsigned;
	struct update_msg m;
	uint8_t rcode;
	char zone[DNAME_MAX * 4 + 2] = "?", kname[DNAME_MAX * 4 + 2] = "(unsigned)";
	if (key)
		acme_name_str(key->tk.name, kname, sizeof(kname));
	/*
	 * The zone section first (RFC 2136 3.1), from the question core has
	 * parsed: whoever is refused costs us no parsing of the rest.
	 */
	if (q->qdcount != 1 || q->qtype != RR_SOA)
		return answer(q, RCODE_FORMERR, -EBADMSG);
	acme_name_str(q->qname, zone, sizeof(zone));
	if (q->qclass != CLASS_IN || !zone_table_get(a->t, q->qname)) {
		log_limited(&lim_notauth, LOG_INFO, "update for %s from key %s: not a zone we serve",
		            zone, kname);
		return answer(q, RCODE_NOTAUTH, -ENOENT);
	}
	struct acme_zone *az = acme_find_zone(a, q->qname);
	if (!az || !az->allow_update) {
		log_limited(&lim_static, LOG_WARN,
		            "update for %s from key %s refused: the zone does not allow updates", zone,
		            kname);
		return answer(q, RCODE_REFUSED, -EACCES);
	}
	if (!key) {
		log_limited(&lim_unsigned, LOG_WARN, "update for %s refused: not signed with TSIG",
		            zone);
		return answer(q, RCODE_REFUSED, -EACCES);
	}
	if (key->zone != az) {
		log_warn("update for %s refused: key %s belongs to %s", zone, kname, key->zone->name);
		return answer(q, RCODE_REFUSED, -EACCES);
	}
	if (!q->arena)
		return answer(q, RCODE_SERVFAIL, -ENOMEM);
	int rc = update_parse(q->rx, q->rx_len, q->arena, &m, &rcode);
	if (rc < 0) {
		log_info("update for %s from key %s: malformed (rcode %d)", zone, kname, rcode);
		return answer(q, rcode, rc);
	}
	rc = update_prereq(zone_table_get(a->t, az->apex), az->apex, &m, &rcode);
	if (rc < 0) {
		log_info("update for %s from key %s: prerequisite not met (rcode %d)", zone, kname,
		         rcode);
		return answer(q, rcode, rc);
	}
	rc = update_prescan(az->apex, &m, &rcode);
	if (rc < 0) {
		log_info("update for %s from key %s: prescan failed (rcode %d)", zone, kname, rcode);
		return answer(q, rcode, rc);
	}
	if ((rc = policy_check_request(&key->pol, &m)) < 0)
		return answer(q, RCODE_REFUSED, rc);

	struct change_list cl;
	change_list_init(&cl);
	rcode = RCODE_NOERROR;
	if ((rc = update_compute(az->rs, az->apex, &m, (int64_t)now, &cl)) < 0) {
		log_error("update for %s: out of memory", zone);
		rcode = RCODE_SERVFAIL;
	} else if (cl.n == 0) {
		log_info("update for %s from key %s: nothing to change", zone, kname);
	} else if ((rc = policy_check_changes(&key->pol, az->rs, &cl)) < 0) {
		rcode = RCODE_REFUSED;
	} else {
		size_t dels = 0, adds = 0;
		for (size_t i = 0; i < cl.n; i++) {
			if (cl.v[i].op == CHANGE_ADD)
				adds++;
			else
				dels++;
		}
		uint32_t serial = 0;
		if ((rc = commit_change(az, &cl, &serial, false)) < 0)
			rcode = RCODE_SERVFAIL;
		else
			log_info("update for %s from key %s: %zu added, %zu deleted, serial %u", zone,
			         kname, adds, dels, serial);
	}
	change_list_clear(&cl);
	return answer(q, rcode, rc < 0 ? rc : 0);
}
