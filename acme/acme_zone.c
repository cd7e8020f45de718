/* SPDX-License-Identifier: MIT */
/*
 * The ACME zones: setup (open the database, seed it once, load, build the
 * first snapshot, keys, timers) and the entry points of acme_zone.h.  The
 * TSIG handler is tsig_handler.c, the update path commit.c, the stale
 * purge purge.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acme/acme_internal.h"
#include "acme/acme_zone.h"
#include "acme/commit.h"
#include "acme/compact.h"
#include "acme/file_diff.h"
#include "acme/lockwait.h"
#include "acme/policy.h"
#include "acme/presign.h"
#include "acme/staged.h"
#include "acme/purge.h"
#include "acme/tsig_handler.h"
#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/net/loop.h"
#include "core/tsig/replay.h"
#include "core/tsig/tsig.h"
#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "core/wire/rdata_check.h"
#include "core/wire/rrset.h"
#include "core/zone/recset.h"
#include "core/wire/serial.h"
#include "core/zone/zone.h"
#include "core/zone/zone_diff.h"
#include "core/zone/zone_table.h"
#include "storage/checkpoint.h"
#include "storage/db.h"
#include "storage/journal.h"
#include "storage/records.h"
#include "storage/seed.h"
#include "storage/zonefile.h"

struct acme_zone *acme_find_zone(const struct acme *a, const uint8_t *apex)
{
	size_t len = dname_len(apex);
	for (size_t i = 0; i < a->n; i++)
		if (dname_len(a->zones[i]->apex) == len && memcmp(a->zones[i]->apex, apex, len) == 0)
			return a->zones[i];
	return NULL;
}

void acme_name_str(const uint8_t *name, char *out, size_t cap)
{
	if (dname_to_str(name, out, cap) < 0)
		snprintf(out, cap, "(unprintable)");
}

void acme_errf(char err[256], const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, 256, fmt, ap);
	va_end(ap);
}

uint64_t acme_now(const struct acme *a)
{
	return (uint64_t)loop_wall_s(a->l);
}

/* --- what acme_zone.h offers, done by the other files --- */

int acme_resign(struct acme *a, const uint8_t *apex, bool keys, char err[256])
{
	struct acme_zone *az = acme_find_zone(a, apex);
	if (!az) {
		acme_errf(err, "not an ACME zone");
		return -ENOENT;
	}
	return keys ? commit_rekey(az, err) : commit_rebuild(az, err);
}

int acme_purge_stale(struct acme *a, const uint8_t *apex, int64_t now)
{
	struct acme_zone *az = acme_find_zone(a, apex);
	return az ? purge_stale(az, now) : -ENOENT;
}

bool acme_rekeying(const struct acme *a, const uint8_t *apex)
{
	const struct acme_zone *az = acme_find_zone(a, apex);
	return az && compact_rekeying(az);
}

void acme_on_rekeyed(struct acme *a, acme_durable_fn fn, void *ctx)
{
	a->on_rekeyed = fn;
	a->on_rekeyed_ctx = ctx;
}

void acme_on_durable(struct acme *a, acme_durable_fn fn, void *ctx)
{
	a->on_durable = fn;
	a->on_durable_ctx = ctx;
}

bool acme_durable(const struct acme *a, const uint8_t *apex)
{
	const struct acme_zone *az = a ? acme_find_zone(a, apex) : NULL;
	return !az || commit_durable(az);
}

struct update_handler acme_update_handler(struct acme *a, struct process_env *env)
{
	a->env = env;
	return (struct update_handler){ .ctx = a, .handle = tsig_handler_handle };
}

/* --- setup --- */

struct acme *acme_new(struct zone_table *t, struct loop *l, char err[256])
{
	struct acme *a = calloc(1, sizeof(*a));
	if (!a) {
		acme_errf(err, "out of memory");
		return NULL;
	}
	a->t = t;
	a->l = l;
	if (tsig_handler_setup(a) < 0) {
		acme_errf(err, "out of memory");
		free(a);
		return NULL;
	}
	return a;
}

/* What the loop knows of a zone: timers, waiting UPDATEs, the sync's fd. */
static void zone_detach_acme(struct acme_zone *az)
{
	purge_cancel(az);
	acme_capture_stop_zone(az);
	compact_detach(az);
	presign_cancel(az);
	staged_cancel(az);
	if (az->resign_timer > 0 && az->a->l)
		loop_timer_cancel(az->a->l, az->resign_timer);
	az->resign_timer = 0;
	lockwait_forget(az->a->lw, az);
	commit_durable_clear(az);
}

static void zone_free_acme(struct acme_zone *az)
{
	if (!az)
		return;
	if (!az->a->detached)
		zone_detach_acme(az);
	for (size_t i = 0; i < az->n_keys; i++) {
		policy_clear(&az->keys[i].pol);
		replay_free(az->keys[i].replay);
	}
	free(az->keys);
	compact_free(az);   /* before the signer goes: its thread may still sign */
	commit_durable_free(az);
	checkpoint_free(az->ckpt);
	recset_free(az->rs);
	db_close(az->db);
	free(az->journal_path);
	if (az->edit)
		file_diff_clear(az->edit);
	free(az->edit);
	free(az->zone_path);
	free(az);
}

void acme_detach(struct acme *a)
{
	if (!a || a->detached)
		return;
	for (size_t i = 0; i < a->n; i++)
		zone_detach_acme(a->zones[i]);
	lockwait_free(a->lw);
	a->lw = NULL;
	a->detached = true;
}

void acme_free(struct acme *a)
{
	if (!a)
		return;
	acme_detach(a);
	for (size_t i = 0; i < a->n; i++)
		zone_free_acme(a->zones[i]);
	free(a->zones);
	free(a);
}

void acme_keep_replay(struct acme *a, const struct acme *prev)
{
	for (size_t i = 0; a && prev && i < a->n; i++) {
		const struct acme_zone *old = acme_find_zone(prev, a->zones[i]->apex);
		for (size_t k = 0; old && k < a->zones[i]->n_keys; k++) {
			struct acme_key *ak = &a->zones[i]->keys[k];
			for (size_t j = 0; j < old->n_keys; j++) {
				const struct tsig_key *o = &old->keys[j].tk;
				if (o->alg == ak->tk.alg && dname_len(o->name) == dname_len(ak->tk.name) &&
				    memcmp(o->name, ak->tk.name, dname_len(o->name)) == 0)
					replay_copy(ak->replay, old->keys[j].replay);
			}
		}
	}
}

int acme_load_row(void *arg, const struct records_row *row)
{
	struct acme_zone *az = arg;
	return acme_row_into(az->rs, az->name, az->journal_path, row);
}

int acme_row_into(struct recset *rs, const char *zname, const char *path,
                  const struct records_row *row)
{
	if (row->rclass != CLASS_IN) {
		log_warn("%s: ignoring a record of class %u in %s", zname, (unsigned)row->rclass,
		         path);
		return 0;
	}
	/*
	 * A row is trusted no more than an UPDATE: one edited by hand (or by a
	 * bug) must not make the answer path read past its rdata.
	 */
	const char *why = NULL;
	if (rdata_check(row->type, row->rdata, row->rdlen, &why) < 0) {
		char n[DNAME_MAX * 4 + 2], t[16];
		acme_name_str(row->name, n, sizeof(n));
		log_warn("%s: skipping a malformed %s record at %s in %s: %s", zname,
		         rrset_type_to_str(row->type, t), n, path, why);
		return 0;
	}
	return recset_add(rs, row->name, row->type, row->ttl, row->rdata, row->rdlen,
	                  row->created_at);
}

/* First start: the zone file, checked by building it, then written once. */
static int seed(struct acme_zone *az, const struct config_zone *zc, struct zone **z,
                char err[256])
{
	if (!zc->zone_path) {
		acme_errf(err, "%s is empty and no zone_path is configured to seed it",
		         az->journal_path);
		return -EINVAL;
	}
	struct change_list cl;
	struct diag d;
	change_list_init(&cl);
	diag_init(&d);
	int ret = seed_read(zc->zone_path, az->apex, &cl, &d, NULL);
	if (ret < 0) {
		for (size_t i = 0; i < d.n; i++)
			log_error("%s", d.msgs[i]);
		acme_errf(err, "%s", d.n ? d.msgs[0] : "cannot read the zone file");
		goto out;
	}
	ret = recset_apply(az->rs, &cl, false);
	if (ret < 0) {
		acme_errf(err, "out of memory");
		goto out;
	}
	*z = commit_build(az, err);
	if (!*z) {
		ret = -EINVAL;
		goto out;
	}
	ret = seed_commit(az->db, &cl, az->apex, zc->zone_path, (int64_t)acme_now(az->a));
	if (ret < 0) {
		acme_errf(err, "%s: cannot write the seeded records", az->journal_path);
		zone_free(*z);
		*z = NULL;
		goto out;
	}
	log_info("%s: seeded %s with %zu records from %s", az->name, az->journal_path, cl.n,
	         zc->zone_path);
out:
	change_list_clear(&cl);
	diag_clear(&d);
	return ret;
}

/*
 * A later start: the zone file compared with what it said when last
 * applied (file_diff.h).  An edit is kept in az->edit for
 * acme_apply_file_edits(); a bad one fails the setup, nothing changed.
 */
static int find_edit(struct acme_zone *az, const char *path, char err[256])
{
	if (access(path, F_OK) < 0 && errno == ENOENT) {
		log_warn("%s: zone file %s is not there; serving the database as it is", az->name,
		         path);
		return 0;
	}
	const struct recset_rrset *soa = recset_name_rrset(recset_find(az->rs, az->apex), RR_SOA);
	if (!soa || soa->count != 1) {
		acme_errf(err, "%s: the database holds no SOA record at the apex", az->journal_path);
		return -EINVAL;
	}
	struct change_list stored;
	struct diag d;
	change_list_init(&stored);
	diag_init(&d);
	int ret = zonefile_load(az->db, file_diff_collect, &stored);
	if (ret < 0) {
		acme_errf(err, "%s: cannot read the stored zone file", az->journal_path);
		goto out;
	}
	if (!(az->edit = malloc(sizeof(*az->edit)))) {
		acme_errf(err, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	file_diff_init(az->edit);
	ret = file_diff_compute(path, az->apex, &stored, soa->rr[0].rdata, soa->rr[0].rdlen,
	                        soa->rr[0].ttl, az->edit, &d);
	if (ret < 0) {
		for (size_t i = 0; i < d.n; i++)
			log_error("%s", d.msgs[i]);
		acme_errf(err, "the edit of the zone file is refused, nothing changed: %s",
		          d.n ? d.msgs[0] : "cannot read it");
	} else if (ret == 1 && !(az->zone_path = strdup(path))) {
		acme_errf(err, "out of memory");
		ret = -ENOMEM;
	}
	if (ret <= 0) {
		file_diff_clear(az->edit);
		free(az->edit);
		az->edit = NULL;
	}
out:
	change_list_clear(&stored);
	diag_clear(&d);
	return ret < 0 ? ret : 0;
}

int acme_apply_file_edits(struct acme *a, bool beside, char err[256])
{
	for (size_t i = 0; i < a->n; i++) {
		struct acme_zone *az = a->zones[i];
		if (!az->edit)
			continue;
		/* Computed against the SOA the build read; UPDATEs replayed since,
		 * or a signed zone's bump, moved it on (file_diff_rebase). */
		const struct recset_rrset *soa =
			recset_name_rrset(recset_find(az->rs, az->apex), RR_SOA);
		if (!soa || soa->count != 1) {
			acme_errf(err, "%s: the database holds no SOA record at the apex",
			          az->journal_path);
			return -EINVAL;
		}
		int ret = file_diff_rebase(az->edit, soa->rr[0].rdata, soa->rr[0].rdlen,
		                           soa->rr[0].ttl);
		if (ret == 0) {
			a->edits_beside = beside;   /* read by the commit (commit.c) */
			ret = commit_file_edit(az, az->edit, false);
			a->edits_beside = false;
		}
		if (ret < 0) {
			acme_errf(err, "%s: the edit of %s could not be applied (%s); nothing changed",
			          az->name, az->zone_path, ret == -EPERM ? "a DS record where none may be"
			          : ret == -EBUSY ? "another process holds the database's lock"
			          : ret == -ENOMEM ? "out of memory" : "see the log");
			return ret;
		}
		log_info("%s: zone file %s applied as a difference: %zu record%s removed, %zu added%s, "
		         "serial %u -> %u%s", az->name, az->zone_path, az->edit->n_del,
		         az->edit->n_del == 1 ? "" : "s", az->edit->n_add,
		         az->edit->soa ? ", SOA changed" : "", az->edit->serial_from,
		         az->edit->serial_to, az->last_beside ? "; committed, served once built "
		         "beside the loop" : "");
		file_diff_clear(az->edit);
		free(az->edit);
		az->edit = NULL;
	}
	return 0;
}

int acme_edits_lock_free(const struct acme *a, const char **zone)
{
	for (size_t i = 0; a && i < a->n; i++) {
		struct acme_zone *az = a->zones[i];
		if (az->edit && db_write_lock_free(az->db) == -EBUSY) {
			*zone = az->name;
			return -EBUSY;
		}
	}
	return 0;
}

static int add_keys(struct acme_zone *az, const struct config_zone *zc, char err[256])
{
	if (!zc->n_tsig_keys)
		return 0;
	az->keys = calloc(zc->n_tsig_keys, sizeof(*az->keys));
	if (!az->keys) {
		acme_errf(err, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < zc->n_tsig_keys; i++) {
		const struct config_tsig_key *k = &zc->tsig_keys[i];
		struct acme_key *ak = &az->keys[i];
		if (tsig_key_init(&ak->tk, k->name, k->algorithm, k->secret, k->secret_len, k->fudge,
		                  err) < 0)
			return -EINVAL;
		/* n_keys counts it from here: zone_free_acme() clears what it made. */
		az->n_keys = i + 1;
		if (policy_init(&ak->pol, zc, k, az->apex, err) < 0)
			return -EINVAL;
		if (!(ak->replay = replay_new(acme_now(az->a)))) {
			acme_errf(err, "out of memory");
			return -ENOMEM;
		}
		ak->zone = az;
	}
	return 0;
}

int acme_load_zone(struct acme *a, const struct config *c, const struct config_zone *zc,
                   const struct zone_signer *signer, char err[256])
{
	(void)c;
	struct acme_zone *az = calloc(1, sizeof(*az));
	struct zone *z = NULL;
	int ret = -ENOMEM;
	if (!az) {
		acme_errf(err, "out of memory");
		return -ENOMEM;
	}
	az->a = a;
	if (dname_from_str(zc->zone, az->apex) < 0) {
		acme_errf(err, "'%s' is not a valid zone name", zc->zone);
		ret = -EINVAL;
		goto fail;
	}
	dname_lower(az->apex);
	acme_name_str(az->apex, az->name, sizeof(az->name));
	if (zone_table_get(a->t, az->apex) || acme_find_zone(a, az->apex)) {
		acme_errf(err, "zone %s is configured twice", az->name);
		ret = -EEXIST;
		goto fail;
	}
	if (!zc->journal_path) {
		acme_errf(err, "zone %s: a sqlite store needs journal_path", az->name);
		ret = -EINVAL;
		goto fail;
	}
	if (!(az->journal_path = strdup(zc->journal_path)) || !(az->rs = recset_new())) {
		acme_errf(err, "out of memory");
		goto fail;
	}
	if (signer) {
		az->signer = *signer;
		az->has_signer = true;
	}
	az->allow_update = zc->allow_update;
	az->serial_per_signing = signer && zc->axfr_policy != AXFR_DENY;
	az->caps = (struct journal_caps){ zc->ixfr_max_changes, zc->ixfr_max_bytes };
	az->stale_age = zc->stale_txt_age_s;
	az->checkpoint_pages = zc->checkpoint_pages;
	if ((ret = add_keys(az, zc, err)) < 0)
		goto fail;

	az->db = db_open(zc->journal_path, err);
	if (!az->db) {
		ret = -EIO;
		goto fail;
	}
	uint8_t owner[DNAME_MAX];
	ret = db_apex(az->db, owner);
	if (ret > 0 && ((size_t)ret != dname_len(az->apex) || memcmp(owner, az->apex, (size_t)ret))) {
		char other[DNAME_MAX * 4 + 2];
		acme_name_str(owner, other, sizeof(other));
		acme_errf(err, "%s holds zone %s, not %s", zc->journal_path, other, az->name);
		ret = -EINVAL;
		goto fail;
	}
	ret = seed_needed(az->db);
	if (ret < 0) {
		acme_errf(err, "%s: cannot read the database", zc->journal_path);
		goto fail;
	}
	if (ret == 1) {
		if ((ret = seed(az, zc, &z, err)) < 0)
			goto fail;
	} else {
		ret = records_load(az->db, acme_load_row, az);
		if (ret < 0) {
			acme_errf(err, "%s: cannot load the records (%s)", zc->journal_path,
			         strerror(-ret));
			goto fail;
		}
		if (zc->zone_path && (ret = find_edit(az, zc->zone_path, err)) < 0)
			goto fail;
		if (!(z = commit_build(az, err))) {
			ret = -EINVAL;
			goto fail;
		}
	}
	struct acme_zone **v = realloc(a->zones, (a->n + 1) * sizeof(*v));
	if (!v) {
		acme_errf(err, "out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	a->zones = v;
	ret = zone_table_add(a->t, z);
	if (ret < 0) {
		acme_errf(err, "zone %s is configured twice", az->name);
		goto fail;
	}
	a->zones[a->n++] = az;
	if (a->l) {
		/* What the loop will use, made here, beside it while a reload builds:
		 * the disk sync (its io_setup and probe) and the checkpoint thread
		 * with its connection (tens of ms, measured in the swap before). */
		char why[256];
		commit_durable_prepare(az);
		if (!(az->ckpt = checkpoint_new(az->db, az->checkpoint_pages, why)))
			log_warn("%s: %s; SQLite checkpoints on the loop", az->name, why);
	}
	if (az->allow_update && !az->n_keys)
		log_warn("%s: allow_update without TSIG keys: every UPDATE will be refused", az->name);
	log_info("%s: %zu records from %s, serial %u%s", az->name, recset_count(az->rs),
	         az->journal_path, zone_serial(z), az->has_signer ? ", signed" : "");
	return 0;
fail:
	zone_free(z);
	zone_free_acme(az);
	return ret < 0 ? ret : -EINVAL;
}

/*
 * The changes `old` (the same zone, the same database, in the generation
 * still serving) committed while this one was built, and that the build
 * did not read: each commit bumps the serial, so they are the captured
 * ones with a serial newer than the snapshot's.  Applied like a commit
 * that is already on disk (commit_replay).  -ENOMEM when a change was not
 * captured: the new generation would lack it, so it is not served.
 * -EAGAIN, from commit_replay, when one cannot be patched in.
 */
static int replay_captured(struct acme_zone *az, const struct acme_zone *old, char err[256])
{
	if (!old || !old->a->capturing || strcmp(old->journal_path, az->journal_path) != 0)
		return 0;
	if (!old->captured || old->captured->lost) {
		acme_errf(err, "zone %s: a change committed during the reload could not be kept "
		          "for the new configuration (out of memory); reload again", az->name);
		return -ENOMEM;
	}
	const struct zone *z = zone_table_get(az->a->t, az->apex);
	uint32_t loaded = z ? zone_serial(z) : 0;
	size_t n = 0;
	for (const struct acme_change *c = old->captured->head; c; c = c->next) {
		if (!serial_newer(c->serial, loaded))
			continue;   /* the build read it from the database */
		int ret = commit_replay(az, &c->cl, err);
		if (ret < 0)
			return ret;
		n++;
	}
	if (n)
		log_info("%s: %zu change%s committed during the reload's build applied to the new "
		         "configuration, serial %u", az->name, n, n == 1 ? "" : "s",
		         zone_serial(zone_table_get(az->a->t, az->apex)));
	return 0;
}

/*
 * The changes made meanwhile, before anything of the zone is attached:
 * acme_attach() does this for every zone first, so that a change that
 * fails the generation or sends it back to be built again (-EAGAIN) finds
 * no zone that wrote to its database already (a serial bump would then be
 * in the database and not in the serving generation's mirror, whose next
 * commit would take the same serial).
 */
static int catch_up_zone(struct acme_zone *az, const struct acme *prev, char err[256])
{
	if (az->attached)
		return 0;
	/*
	 * Signed anew at start, and at a reload that made new signatures (a new
	 * key or signature settings, a new signer; or some came due): what the
	 * journal says about signatures is then out of date, so the serial is
	 * bumped and the journal starts over.  A reload that took every
	 * signature from the signer's cache serves the very signatures the
	 * secondaries hold: the journal stays true and they go on by IXFR.
	 * Asked of the build, before the changes are applied to it.
	 */
	const struct zone *built = zone_table_get(az->a->t, az->apex);
	az->built_signing = !prev || !built || zone_signatures_made(built) > 0;
	return replay_captured(az, prev ? acme_find_zone(prev, az->apex) : NULL, err);
}

/* What a zone needs of the loop once caught up: syncs, serial, timers. */
static int attach_zone(struct acme_zone *az, char err[256])
{
	if (az->attached)
		return 0;
	bool resigned = az->built_signing;
	az->attached = true;
	/*
	 * From here on commits sync off the loop (commit.h), the serial bump
	 * below too.  When that cannot be set up (-EIO, the reason logged
	 * there) the database stays as db_open() left it, synchronous=FULL,
	 * and no reply is held: every COMMIT syncs on the loop before its
	 * UPDATE is answered.  Slower, not less durable, so the zone is
	 * served; say which mode it runs in.
	 */
	if (commit_durable_setup(az) < 0)
		log_warn("%s: UPDATEs commit with synchronous=FULL, on the loop", az->name);
	if (az->serial_per_signing && resigned && commit_bump_serial(az, true, err) < 0) {
		/* Served as loaded; secondaries get the new signatures at the next change. */
		log_error("%s: %s", az->name, err);
	}
	if (az->a->l && !az->ckpt) {
		/* Checkpoints too (storage/checkpoint.h); failing that, SQLite's own. */
		char why[256];
		if (!(az->ckpt = checkpoint_new(az->db, az->checkpoint_pages, why)))
			log_warn("%s: %s; SQLite checkpoints on the loop", az->name, why);
	}
	purge_schedule(az);
	return 0;
}

int acme_add_zone(struct acme *a, const struct config *c, const struct config_zone *zc,
                  const struct zone_signer *signer, char err[256])
{
	int ret = acme_load_zone(a, c, zc, signer, err);
	struct acme_zone *az = ret < 0 ? NULL : a->zones[a->n - 1];
	if (az && (ret = catch_up_zone(az, NULL, err)) == 0)
		ret = attach_zone(az, err);
	return ret;
}

int acme_attach(struct acme *a, const struct acme *prev, char err[256])
{
	for (size_t i = 0; i < a->n; i++) {
		int ret = catch_up_zone(a->zones[i], prev, err);
		if (ret < 0)
			return ret;
	}
	for (size_t i = 0; i < a->n; i++) {
		int ret = attach_zone(a->zones[i], err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

void acme_replay_on_loop(struct acme *a, bool on)
{
	if (a)
		a->replay_on_loop = on;
}

void acme_capture_start(struct acme *a)
{
	for (size_t i = 0; a && i < a->n; i++) {
		acme_capture_stop_zone(a->zones[i]);
		a->zones[i]->captured = calloc(1, sizeof(*a->zones[i]->captured));
		if (!a->zones[i]->captured)
			log_error("%s: out of memory: a reload now would not keep this zone's changes",
			          a->zones[i]->name);
	}
	if (a)
		a->capturing = true;
}

void acme_capture_stop(struct acme *a)
{
	for (size_t i = 0; a && i < a->n; i++)
		acme_capture_stop_zone(a->zones[i]);
	if (a)
		a->capturing = false;
}

void acme_capture_stop_zone(struct acme_zone *az)
{
	if (!az->captured)
		return;
	for (struct acme_change *c = az->captured->head, *n; c; c = n) {
		n = c->next;
		change_list_clear(&c->cl);
		free(c);
	}
	free(az->captured);
	az->captured = NULL;
}

struct journal_visit {
	int (*fn)(void *arg, const uint8_t *apex, const uint8_t *diff, size_t len);
	void *arg;
	const uint8_t *apex;
};

static int journal_visit(void *arg, const struct journal_entry *e)
{
	struct journal_visit *v = arg;
	return v->fn(v->arg, v->apex, e->diff, e->len);
}

int acme_journal_foreach(struct acme *a, const uint8_t *apex,
                         int (*fn)(void *arg, const uint8_t *apex, const uint8_t *diff,
                                   size_t len),
                         void *arg)
{
	struct acme_zone *az = acme_find_zone(a, apex);
	if (!az)
		return -ENOENT;
	struct journal_visit v = { fn, arg, az->apex };
	return journal_load(az->db, journal_visit, &v);
}
