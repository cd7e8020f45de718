/* SPDX-License-Identifier: MIT */
/*
 * The update path: check an UPDATE, commit it, patch or rebuild the
 * snapshot; and re-signing (see commit.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acme/acme_internal.h"
#include "acme/commit.h"
#include "acme/compact.h"
#include "acme/durable.h"
#include "acme/presign.h"
#include "acme/staged.h"
#include "acme/file_diff.h"
#include "acme/update.h"
#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/conf/sysclock.h"
#include "core/net/loop.h"
#include "core/net/reply_later.h"
#include "core/test_hooks.h"
#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "core/wire/query.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/recset.h"
#include "core/zone/zone.h"
#include "core/zone/zone_diff.h"
#include "core/zone/zone_patch.h"
#include "core/zone/zone_table.h"
#include "storage/journal.h"
#include "storage/records.h"
#include "storage/wal_sync.h"

/*
 * Renewing signatures in slices (zone_patch.h): at most this many new
 * signatures per loop round (about 2 ms of ECDSA), then the loop answers
 * what arrived before the next slice.
 */
#define RESIGN_SLICE 100
/* While a transfer holds the snapshot, the pass looks again this often. */
#define RESIGN_WAIT_MS 50

struct zone *acme_build(const uint8_t *apex, const char *zname, const struct recset *rs,
                        const struct zone_signer *signer, const char *path, char err[256])
{
	struct zone_builder *b = zone_builder_new(apex);
	if (!b) {
		acme_errf(err, "out of memory");
		return NULL;
	}
	/* Unsigned too, an ACME zone is patched, not built whole, per change:
	 * the patch needs its names in order (zone_patch.h). */
	zone_builder_keep_order(b);
	int ret = recset_foreach(rs, recset_add_to_builder, b);
	if (ret < 0) {
		zone_builder_free(b);
		acme_errf(err, "%s: a record cannot be served (%s)", zname, strerror(-ret));
		return NULL;
	}
	struct diag d;
	diag_init(&d);
	struct zone *z = zone_builder_finish(b, signer, path, &d);
	if (!z) {
		for (size_t i = 0; i < d.n; i++)
			log_error("%s", d.msgs[i]);
		acme_errf(err, "%s", d.n ? d.msgs[0] : "cannot build the zone");
	}
	diag_clear(&d);
	return z;
}

struct zone *commit_build(struct acme_zone *az, char err[256])
{
	return acme_build(az->apex, az->name, az->rs, az->has_signer ? &az->signer : NULL,
	                  az->journal_path, err);
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

/*
 * The served snapshot's patch for a change already in the mirror, prepared
 * but not applied; or NULL when the snapshot is to be built whole (a change
 * a patch does not make: zone_patch.h).  Signed or not: an unsigned zone is
 * patched with no signer (it was built with its name order for that, and a
 * whole build per UPDATE took seconds on the loop at 100 000 names).
 * Either way the
 * served zone is untouched.  A snapshot that patches grew enough is
 * compacted beside the loop (compact.h) and patched meanwhile; built whole
 * here only when that cannot be (no loop, no thread).
 */
static void patch_failed(struct acme_zone *az, const struct zone *z, int ret, const char *err)
{
	if (ret == -E2BIG)
		log_info("%s: compacting the snapshot on the loop (patches added %zu bytes)", az->name,
		         zone_patch_growth(z));
	else if (ret < 0 && ret != -EAGAIN)
		log_warn("%s: cannot patch the snapshot (%s); building it whole", az->name,
		         err[0] ? err : strerror(-ret));
}

/* prepare_patch()'s first half: the names given, not prepared (NULL: build whole). */
static struct zone_patch *patch_names(struct acme_zone *az, const struct change_list *cl)
{
	struct zone *z = zone_table_edit(az->a->t, az->apex);
	if (!z)
		return NULL;
	struct zone_patch *p = NULL;
	bool due = compact_due(z) && compact_start(az) < 0;
	int ret = due ? -E2BIG : recset_patch_names(z, az->rs, cl, &p);
	patch_failed(az, z, ret, "");
	return p;
}

/* Its second half: p (NULL-safe) prepared, or freed and NULL. */
static struct zone_patch *patch_ready(struct acme_zone *az, struct zone_patch *p)
{
	char err[256] = "";
	int ret = p ? zone_patch_prepare(p, az->has_signer ? &az->signer : NULL, err) : 0;
	if (ret < 0) {
		patch_failed(az, zone_table_get(az->a->t, az->apex), ret, err);
		zone_patch_free(p);
		return NULL;
	}
	return p;
}

static struct zone_patch *prepare_patch(struct acme_zone *az, const struct change_list *cl)
{
	return patch_ready(az, patch_names(az, cl));
}

static void commit_durable_started(struct acme_zone *az);

/*
 * A name the change leaves with a DS record where none may be (RFC 4035
 * 2.4: "A DS RRset MUST NOT appear at a non-delegation point or at a
 * zone's apex"): the apex, or a name without NS records; NULL when there is
 * none.  Looked up in the mirror with the change applied, so a DS and the
 * NS of its new cut may come in one UPDATE, and an UPDATE that deletes a
 * cut's NS but not its DS is caught too.
 */
static const uint8_t *ds_misplaced(const struct acme_zone *az, const struct change_list *cl)
{
	for (size_t i = 0; i < cl->n; i++) {
		const struct recset_name *n = recset_find(az->rs, cl->v[i].name);
		const struct recset_rrset *ds = n ? recset_name_rrset(n, RR_DS) : NULL;
		if (!ds || !ds->count)
			continue;
		const struct recset_rrset *ns = recset_name_rrset(n, RR_NS);
		if (dname_equal(n->name, az->apex) || !ns || !ns->count)
			return n->name;
	}
	return NULL;
}

/*
 * A reload builds beside us (acme_capture_start): the new generation gets
 * this committed change too (acme_attach).  A copy that cannot be made
 * marks the capture lost, and that reload fails rather than lose it.
 */
static void capture(struct acme_zone *az, const struct change_list *cl, uint32_t serial)
{
	struct acme_capture *cap = az->captured;
	if (!az->a->capturing || !cap || cap->lost)
		return;
	struct acme_change *c = calloc(1, sizeof(*c));
	if (!c) {
		cap->lost = true;
		return;
	}
	c->serial = serial;
	change_list_init(&c->cl);
	for (size_t i = 0; i < cl->n; i++) {
		const struct change *e = &cl->v[i];
		if (change_list_add(&c->cl, (enum change_op)e->op, e->name, e->type, e->ttl, e->rdata,
		                    e->rdlen, e->created_at) < 0) {
			change_list_clear(&c->cl);
			free(c);
			cap->lost = true;
			return;
		}
	}
	if (!cap->head)
		cap->tail = &cap->head;
	*cap->tail = c;
	cap->tail = &c->next;
}

int commit_replay(struct acme_zone *az, const struct change_list *cl, char err[256])
{
	int ret = recset_apply(az->rs, cl, false);
	if (ret < 0) {
		acme_errf(err, "%s: out of memory applying a change made during the reload", az->name);
		return ret;
	}
	/* The snapshot is not served yet: patched with no one watching. */
	struct zone_patch *p = prepare_patch(az, cl);
	if (p) {
		zone_patch_apply(p);
		zone_patch_free(p);
		return 0;
	}
	/*
	 * Built whole here it would be seconds on the loop at 100 000 names;
	 * the reload builds its generation again instead, beside the loop,
	 * from the database that has this change (cmd/serve.c), unless it did
	 * that often enough already.  The mirror keeps the change: the
	 * generation is thrown away.
	 */
	if (!az->a->replay_on_loop)
		return -EAGAIN;
	log_warn("%s: building the snapshot with a change committed during the reload's build on "
	         "the loop: such changes came during every build of this reload", az->name);
	struct zone *z = commit_build(az, err);
	if (!z)
		return -EINVAL;
	ret = zone_table_replace(az->a->t, z);
	if (ret < 0) {
		zone_free(z);
		acme_errf(err, "%s: the zone is no longer in the table", az->name);
	}
	return ret;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	sysclock_mono_ts(&t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/*
 * commit_change() once the change list replaces the SOA: `file`, when not
 * NULL, goes to the stored zone file in the same transaction.  `staged`:
 * cl's records are written already, in the transaction staged.h opened.
 */
static int commit_prepared(struct acme_zone *az, struct change_list *cl, bool reset, bool whole,
                           const struct change_list *file, const struct timespec *t0,
                           bool staged);

int commit_change(struct acme_zone *az, struct change_list *cl, uint32_t *serial, bool reset,
                  bool whole)
{
	struct timespec t0;
	sysclock_mono_ts(&t0);
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
	return commit_prepared(az, cl, reset, whole, NULL, &t0, false);
}

int commit_stage_ready(struct acme_zone *az, struct change_list *cl, uint32_t *serial)
{
	if (az->mirror_stale) {
		reload_mirror(az);   /* as commit_change: refused, the next one sees it */
		return -EIO;
	}
	int ret = update_bump_serial(az->rs, az->apex, cl, serial);
	if (ret < 0)
		log_error("%s: cannot bump the serial: %s", az->name, strerror(-ret));
	return ret;
}


int commit_file_edit(struct acme_zone *az, struct file_diff *fd, bool reset)
{
	struct timespec t0;
	sysclock_mono_ts(&t0);
	if (az->mirror_stale) {
		reload_mirror(az);
		return -EIO;
	}
	return commit_prepared(az, &fd->records, reset, false, &fd->file, &t0, false);
}

/* The serial the mirror holds (the zone's as committed); 0 when it has none. */
static uint32_t mirror_serial(const struct acme_zone *az)
{
	const struct recset_rrset *soa = recset_name_rrset(recset_find(az->rs, az->apex), RR_SOA);
	if (!soa || soa->count != 1)
		return 0;
	const uint8_t *d = soa->rr[0].rdata;
	size_t len = soa->rr[0].rdlen, m = dname_len(d);
	size_t r = m < len ? dname_len(d + m) : 0;
	return m + r + 4 <= len ? wire_get_u32(d + m + r) : 0;
}

/*
 * A change a patch cannot make, committed: the snapshot with it is built
 * whole beside the loop (compact_cut) rather than on it, where it took
 * seconds at 100 000 names.  Only for a zone in the loop (an attached one:
 * the compaction needs its thread and eventfd).
 */
static bool build_beside(const struct acme_zone *az)
{
	return az->a->l && az->attached;
}

static void cut_on_loop(struct acme_zone *az);

/*
 * What a commit serves, made before it: a patch of the served snapshot
 * (`base`), a snapshot built whole, or a build owed beside the loop.
 */
struct commit_prep {
	struct zone_patch *p;
	struct zone *z;
	bool beside;
	const struct zone *base;
};

/* cl, in the mirror, made into what will serve it: -EINVAL with err when nothing can. */
static int make_snapshot(struct acme_zone *az, const struct change_list *cl, bool whole,
                         const struct change_list *file, struct commit_prep *cp, char err[256],
                         struct zone_patch *named)
{
	/* `named`: patch_names() made it a round before (staged.h). */
	if (named && (whole || az->cut_owed)) {
		zone_patch_free(named);
		named = NULL;
	}
	struct zone_patch *p = whole || az->cut_owed || az->served_behind ? NULL
	                       : named ? patch_ready(az, named) : prepare_patch(az, cl);
	/* A zone-file edit at a reload too (not at start: "ready" serves it):
	 * its difference is computed beside the loop with the build, and
	 * journaled at the swap (compact.c). */
	bool beside = !p && !whole && (!file || az->a->edits_beside) && build_beside(az);
	struct zone *z = p || beside ? NULL : commit_build(az, err);
	*cp = (struct commit_prep){ p, z, beside, zone_table_get(az->a->t, az->apex) };
	return p || z || beside ? 0 : -EINVAL;
}

/* cl in the mirror, if no DS lands where none may be. */
static int apply_mirror(struct acme_zone *az, struct change_list *cl, bool staged)
{
	/* A large UPDATE's transaction is open (staged.h): this one waits. */
	if (!staged && staged_open(az))
		return -EBUSY;
	int ret = recset_apply(az->rs, cl, false);
	if (ret < 0) {
		if (staged)
			journal_stage_abandon(az->db);
		log_error("%s: out of memory applying a change", az->name);
		if (ret == -EIO)
			reload_mirror(az);
		return ret;
	}
	const uint8_t *bad_ds = ds_misplaced(az, cl);
	if (bad_ds) {
		char name[DNAME_MAX * 4 + 2];
		acme_name_str(bad_ds, name, sizeof(name));
		log_warn("%s: change refused: it leaves a DS record at %s, which is not a delegation "
		         "(RFC 4035 2.4: a DS belongs at a name below the apex with NS records)",
		         az->name, name);
		unapply(az, cl);
		if (staged)
			journal_stage_abandon(az->db);
		return -EPERM;
	}
	return 0;
}

/* The first half of commit_prepared(): cl in the mirror, its snapshot made. */
static int prepare_half(struct acme_zone *az, struct change_list *cl, bool whole,
                        const struct change_list *file, bool staged, struct commit_prep *cp)
{
	char err[256] = "";
	*cp = (struct commit_prep){ 0 };
	int ret = apply_mirror(az, cl, staged);
	if (ret < 0)
		return ret;
	/*
	 * Patched in place when it can be, in time proportional to the change,
	 * the patch made before the commit.  Otherwise built whole: beside the
	 * loop after the commit (the served snapshot and the replies wait for
	 * it, compact.h), or, without a loop or for a bump that must re-sign
	 * (`whole`), here before it.  While such a build is owed the served
	 * snapshot lags the mirror: no patch of it (it would show this change
	 * before the owed one), the change is noted for the build instead.
	 */
	ret = make_snapshot(az, cl, whole, file, cp, err, NULL);
	if (ret < 0) {
		unapply(az, cl);
		if (staged)
			journal_stage_abandon(az->db);
		log_error("%s: the change was not applied: %s", az->name, err);
	}
	return ret;
}

/* The second half: the commit, then what it serves served. */
static int finish_half(struct acme_zone *az, struct change_list *cl, bool reset,
                       const struct change_list *file, const struct timespec *t0, bool staged,
                       struct commit_prep *cp)
{
	struct zone_patch *p = cp->p;
	struct zone *z = cp->z;
	bool beside = cp->beside;
	int ret;
	/*
	 * Durable before anyone hears about it.  A client that got NOERROR acts
	 * on it (Lego tells the CA to look at the TXT record now), so an
	 * acknowledged change must survive a crash or a power cut the very
	 * next moment.  Without a loop (or in blocking mode) journal_commit()
	 * returns once SQLite has synced the WAL (synchronous=FULL); with one,
	 * it returns before, the WAL's fdatasync runs in the kernel while the
	 * loop goes on, and the reply waits for it (below: group commit).
	 */
	const struct zone *old = zone_table_get(az->a->t, az->apex);
	uint8_t *diff = NULL;
	size_t diff_len = 0;
	struct journal_entry e = { 0 };
	if (beside) {
		/*
		 * Built beside the loop: the build computes the difference there
		 * from the served snapshot (the one before the first such commit:
		 * none is patched meanwhile), and its swap journals it; these
		 * commits write none.  When the build cannot do that (a compaction
		 * under way becomes it, with no snapshot held to compare), or a
		 * commit meanwhile starts the history over, it starts over now and
		 * secondaries get the zone.
		 */
		if (!az->cut_owed)
			az->cut_history = !reset && old && az->caps.max_changes && !compact_running(az);
		else if (reset)
			az->cut_history = false;
		reset = reset || !az->cut_history;
	}
	if (old && !reset && !beside && az->caps.max_changes) {
		/* A patch knows what it changes: its difference costs what the
		 * change does, not a walk of both snapshots. */
		int dr = p ? zone_diff_patch(old, p, &diff, &diff_len)
		           : zone_diff(old, z, &diff, &diff_len);
		if (dr < 0) {
			log_warn("%s: cannot compute the change for the journal; it starts over",
			         az->name);
			reset = true;
		} else {
			e = (struct journal_entry){ zone_serial(old), p ? zone_patch_serial(p) : zone_serial(z),
			                            diff, diff_len };
		}
	}
	struct timespec tc;
	sysclock_mono_ts(&tc);
	ret = staged ? journal_stage_commit(az->db, diff ? &e : NULL, reset, &az->caps)
	             : journal_commit_file(az->db, cl, diff ? &e : NULL, reset, &az->caps, file);
	az->last_commit_ms = ms_since(&tc);
	if (ret < 0) {
		free(diff);
		unapply(az, cl);
		zone_patch_free(p);
		zone_free(z);
		/* -EBUSY: another process holds the lock; the caller waits (lockwait.h). */
		if (ret != -EBUSY)
			log_error("%s: the change was not committed to %s", az->name, az->journal_path);
		return ret;
	}
	commit_durable_started(az);
	capture(az, cl, p ? zone_patch_serial(p) : z ? zone_serial(z) : mirror_serial(az));
	if (beside) {
		/* The first such change starts the build (or marks the compaction
		 * under way as one: it notes this change, and builds again when
		 * it cannot patch it in); the later ones are noted for it. */
		bool first = !az->cut_owed;
		az->cut_owed = true;
		if (first ? compact_cut(az, cl) < 0 : (compact_note(az, cl), false))
			cut_on_loop(az);
		az->last_patched = false;
		az->last_beside = true;
		az->last_ms = ms_since(t0);
		return 0;
	}
	az->last_beside = false;
	/* A compaction under way gets this change too; a whole build makes it moot. */
	if (p)
		compact_note(az, cl);
	else
		compact_stale(az);
	az->last_patched = p != NULL;
	if (p) {
		/* Between queries, all at once: no query sees half of it.  Then
		 * the IXFR history and NOTIFY hear of it, with its difference. */
		struct zone *served = zone_table_edit(az->a->t, az->apex);
		zone_patch_apply(p);
		zone_patch_free(p);
		zone_table_patched(az->a->t, served, diff, diff_len);
		free(diff);
		az->last_ms = ms_since(t0);
		return 0;
	}
	free(diff);
	ret = zone_table_replace(az->a->t, z);
	az->served_behind = false;   /* built from the mirror: it shows every commit */
	az->last_ms = ms_since(t0);
	if (ret < 0) {
		/* Only if the zone vanished from the table: nothing serves it anyway. */
		zone_free(z);
		log_error("%s: committed, but the zone is no longer in the table", az->name);
	}
	/* Built from the mirror: whatever a build beside the loop owed is served. */
	if (az->cut_owed)
		commit_cut_served(az, true);
	return 0;
}

static int commit_prepared(struct acme_zone *az, struct change_list *cl, bool reset, bool whole,
                           const struct change_list *file, const struct timespec *t0,
                           bool staged)
{
	struct commit_prep cp;
	int ret = prepare_half(az, cl, whole, file, staged, &cp);
	return ret < 0 ? ret : finish_half(az, cl, reset, file, t0, staged, &cp);
}

struct commit_staged {
	struct commit_prep cp;       /* once prepared */
	struct zone_patch *named;    /* given its names, not prepared yet */
	const struct zone *named_base;
	bool made;
	struct timespec t0;
};

int commit_staged_names(struct acme_zone *az, struct change_list *cl, struct commit_staged **out)
{
	struct commit_staged *cs = calloc(1, sizeof(*cs));
	if (!cs) {
		journal_stage_abandon(az->db);
		return -ENOMEM;
	}
	sysclock_mono_ts(&cs->t0);
	int ret = apply_mirror(az, cl, true);
	if (ret < 0) {
		free(cs);
		return ret;
	}
	cs->named = az->cut_owed ? NULL : patch_names(az, cl);
	cs->named_base = zone_table_get(az->a->t, az->apex);
	*out = cs;
	return 0;
}

int commit_staged_prepare(struct acme_zone *az, struct change_list *cl, struct commit_staged *cs)
{
	if (zone_table_get(az->a->t, az->apex) != cs->named_base) {
		zone_patch_free(cs->named);   /* swapped meanwhile: made afresh below */
		cs->named = NULL;
	}
	char err[256] = "";
	int ret = make_snapshot(az, cl, false, NULL, &cs->cp, err, cs->named);
	cs->named = NULL;
	if (ret < 0) {
		unapply(az, cl);
		journal_stage_abandon(az->db);
		log_error("%s: the change was not applied: %s", az->name, err);
		free(cs);
		return ret;
	}
	cs->made = true;
	return 0;
}

int commit_staged_finish(struct acme_zone *az, struct change_list *cl, struct commit_staged *cs)
{
	int ret = 0;
	if (zone_table_get(az->a->t, az->apex) != cs->cp.base) {
		/* Swapped meanwhile (a compaction, a re-keying): made again for
		 * the snapshot served now. */
		char err[256] = "";
		zone_patch_free(cs->cp.p);
		zone_free(cs->cp.z);
		ret = make_snapshot(az, cl, false, NULL, &cs->cp, err, NULL);
		if (ret < 0) {
			unapply(az, cl);
			journal_stage_abandon(az->db);
			log_error("%s: the change was not applied: %s", az->name, err);
		}
	}
	if (ret == 0)
		ret = finish_half(az, cl, false, NULL, &cs->t0, true, &cs->cp);
	free(cs);
	return ret;
}

void commit_staged_abandon(struct acme_zone *az, struct change_list *cl,
                           struct commit_staged *cs)
{
	zone_patch_free(cs->named);
	if (cs->made) {
		zone_patch_free(cs->cp.p);
		zone_free(cs->cp.z);
	}
	unapply(az, cl);
	journal_stage_abandon(az->db);
	free(cs);
}

/*
 * Secondaries copy this zone: new signatures need a new serial, or they
 * would keep the old ones until those expire.  The bump is a change like
 * any other (durable, journaled, announced).  `whole`: the snapshot is
 * built (and so re-signed) whole with it; else only the SOA is patched,
 * for signatures that are new already.
 */
static int bump_serial(struct acme_zone *az, bool reset, bool whole, char err[256])
{
	struct change_list cl;
	uint32_t serial = 0;
	change_list_init(&cl);
	int ret = commit_change(az, &cl, &serial, reset, whole);
	change_list_clear(&cl);
	if (ret < 0)
		acme_errf(err, "cannot commit the serial of the new signatures");
	return ret;
}

int commit_bump_serial(struct acme_zone *az, bool reset, char err[256])
{
	return bump_serial(az, reset, false, err);
}

static int resign_whole(struct acme_zone *az, char err[256])
{
	compact_stale(az);
	struct zone *z = commit_build(az, err);
	if (!z)
		return -EINVAL;
	int ret = zone_table_replace(az->a->t, z);
	if (ret == 0 && az->cut_owed)
		commit_cut_served(az, true);   /* built from the mirror: it shows the change */
	return ret;
}

static void resign_slice(struct loop *l, void *arg)
{
	struct acme_zone *az = arg;
	(void)l;
	az->resign_timer = 0;
	struct zone *z = zone_table_edit(az->a->t, az->apex);
	if (!z || z != az->resign_zone || !zone_resigning(z))
		return;   /* built whole meanwhile (compaction): signed afresh */
	char err[256] = "";
	/* A large UPDATE's patch is prepared (staged.h): it copied RRsets
	 * this step would renew in place; the step waits as for a transfer. */
	int ret = staged_busy(az) ? ZONE_RESIGN_WAIT
	                          : zone_resign_step(z, &az->signer, &az->resign, RESIGN_SLICE,
	                                             acme_now(az->a), err);
	if (ret == 0 || ret == ZONE_RESIGN_WAIT) {
		/* The next slice at once; while a transfer holds the snapshot, a
		 * little later (a 0 ms timer would spin the loop until it ends). */
		int64_t id = loop_timer_add(az->a->l, ret == 0 ? 0 : RESIGN_WAIT_MS, resign_slice, az);
		if (id > 0) {
			az->resign_timer = id;
			return;
		}
		zone_resign_abandon(z);   /* still due: the re-sign check tries again */
		log_error("%s: cannot schedule the next re-signing slice", az->name);
		return;
	}
	if (ret < 0) {
		log_error("%s: re-signing failed (%s); trying again at the next check", az->name, err);
		return;
	}
	log_info("%s: re-signed in slices: %llu signature%s renewed, %llu still good, in %.0f ms",
	         az->name, (unsigned long long)az->resign.renewed, az->resign.renewed == 1 ? "" : "s",
	         (unsigned long long)az->resign.kept, ms_since(&az->resign_started));
	/*
	 * Secondaries must see the new signatures: one serial bump, the SOA
	 * patched, and the journal started over.  An IXFR of a whole pass
	 * would carry every signature of the zone twice, old and new; a
	 * secondary asking for one from an older serial is sent the zone
	 * (RFC 1995 4: AXFR when the history is not there).
	 */
	if (az->serial_per_signing && commit_bump_serial(az, true, err) < 0)
		log_error("%s: %s; secondaries get the new signatures with the next change",
		          az->name, err);
}

int commit_rekey_whole(struct acme_zone *az, char err[256])
{
	/* A pass renewing in place ends when it finds the snapshot replaced. */
	return az->serial_per_signing ? bump_serial(az, false, true, err) : resign_whole(az, err);
}

int commit_rekey(struct acme_zone *az, char err[256])
{
	/* Beside the loop, as a compaction: at 100 000 names the whole build
	 * on the loop was seconds of silence (compact.h). */
	if (compact_rekey(az) > 0)
		return 1;
	return commit_rekey_whole(az, err);
}

int commit_rebuild(struct acme_zone *az, char err[256])
{
	struct zone *z = zone_table_edit(az->a->t, az->apex);
	if (!az->a->l || !z || !az->has_signer || !az->signer.renew)
		/* Built whole; for secondaries with a new serial, journaled. */
		return az->serial_per_signing ? bump_serial(az, false, true, err)
		                              : resign_whole(az, err);
	if (az->resign_timer > 0 || zone_resigning(z))
		return 0;   /* a pass is under way */
	/* In slices, between queries, rather than one whole build that would
	 * hold the loop for seconds at 100 000 records.  The serial stays,
	 * unless secondaries copy the zone: then the pass ends with one serial
	 * bump (resign_slice). */
	zone_resign_begin(z, &az->resign);
	compact_resigning(az);   /* built with the signatures this pass renews */
	az->resign_zone = z;
	sysclock_mono_ts(&az->resign_started);
	int64_t id = loop_timer_add(az->a->l, 0, resign_slice, az);
	if (id <= 0) {
		zone_resign_abandon(z);
		acme_errf(err, "cannot schedule re-signing");
		return -ENOMEM;
	}
	az->resign_timer = id;
	return 0;
}

/*
 * "+_acme-challenge.www.example.net. TXT, -old.example.net. TXT (and 3
 * more)": what an UPDATE changed, for the log line that says it was done.
 */
static void describe_changes(const struct change_list *cl, char *out, size_t cap)
{
	size_t n = 0, shown = 0;
	out[0] = '\0';
	for (size_t i = 0; i < cl->n && n + 80 < cap; i++, shown++) {
		char name[DNAME_MAX * 4 + 2], type[16];
		acme_name_str(cl->v[i].name, name, sizeof(name));
		int w = snprintf(out + n, cap - n, "%s%c%s %s", i ? ", " : "",
		                 cl->v[i].op == CHANGE_ADD ? '+' : '-', name,
		                 rrset_type_to_str(cl->v[i].type, type));
		if (w < 0 || (size_t)w >= cap - n) {
			out[n] = '\0';
			break;
		}
		n += (size_t)w;
	}
	if (shown < cl->n)
		snprintf(out + n, cap - n, " (and %zu more)", cl->n - shown);
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
	/* Committed in stages while it was held (staged.h): its outcome. */
	int rc;
	uint32_t staged_serial = 0;
	char staged_what[512];
	if (staged_take(az, &rc, &staged_serial, staged_what, sizeof(staged_what))) {
		if (rc == 0)
			log_info("update for %s from key %s: %s; serial %u, snapshot %s in %.2f ms "
			         "(SQLite commit %.2f ms), in stages", zone, kname, staged_what,
			         staged_serial, az->last_patched ? "patched" : az->last_beside
			         ? "to be built beside the loop (the reply waits for it), committed"
			         : "rebuilt", az->last_ms, az->last_commit_ms);
		return answer(q, rc == 0 ? RCODE_NOERROR : rc == -EPERM ? RCODE_REFUSED
		                                                        : RCODE_SERVFAIL, rc);
	}
	rc = update_parse(q->rx, q->rx_len, q->arena, &m, &rcode);
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
		rcode = rc == -ENOMEM ? RCODE_SERVFAIL : RCODE_REFUSED;
	} else if (presign_wanted(az, &cl) && presign_start(az, &cl) == 0) {
		/* Held (lockwait.h) while its signatures are made in slices, then
		 * handled again from the start: nothing is committed yet. */
		rc = -EBUSY;
	} else if (staged_wanted(az, &cl)) {
		/* Held while it is committed in stages (staged.h), then taken
		 * above: -EINPROGRESS, which waits past lockwait's bound. */
		char what[512];
		describe_changes(&cl, what, sizeof(what));
		rc = staged_start(az, &cl, what);
		if (rc == 0)
			rc = -EINPROGRESS;
		else if (rc != -EBUSY)
			rcode = RCODE_SERVFAIL;
	} else {
		char what[512];
		describe_changes(&cl, what, sizeof(what));
		uint32_t serial = 0;
		/* -EPERM: a change no zone may hold (a DS at a name that is not a
		 * delegation, RFC 4035 2.4).  REFUSED, not FORMERR: the message is
		 * well formed (RFC 2136 3.4.1.2's prescan takes it); the server
		 * declines to make the change, as for its other rules (RFC 2136
		 * 3.3).  Nothing was committed. */
		if ((rc = commit_change(az, &cl, &serial, false, false)) < 0)
			rcode = rc == -EPERM ? RCODE_REFUSED : RCODE_SERVFAIL;
		else
			log_info("update for %s from key %s: %s; serial %u, snapshot %s in %.2f ms "
			         "(SQLite commit %.2f ms)", zone, kname, what, serial,
			         az->last_patched ? "patched" : az->last_beside
			         ? "to be built beside the loop (the reply waits for it), committed"
			         : "rebuilt", az->last_ms, az->last_commit_ms);
	}
	change_list_clear(&cl);
	return answer(q, rcode, rc < 0 ? rc : 0);
}

/* --- group commit: replies wait for the disk, the loop does not --- */

/*
 * An UPDATE's reply held until the commits before it are durable: the
 * reply as it goes when they are, and the SERVFAIL sent instead when the
 * sync fails (both made, and TSIG-signed, when the UPDATE was handled).
 */
struct held_reply {
	struct held_reply *next;     /* waiting for a build beside the loop (cut_held) */
	bool after_cut;              /* held while one was owed: its change may need it */
	bool cut_failed;             /* ... and it failed while this waited for the disk */
	struct reply_later *token;   /* set by take(); NULL: nobody to send to */
	size_t ok_len, fail_len;
	uint8_t bytes[];             /* ok, then fail */
};

/* Waits, after the disk, for the build beside the loop to be served. */
static void hold_for_cut(struct acme_zone *az, struct held_reply *h)
{
	h->next = NULL;
	if (!az->cut_held)
		az->cut_tail = &az->cut_held;
	*az->cut_tail = h;
	az->cut_tail = &h->next;
}

static void release_reply(void *ctx, void *item, bool ok)
{
	struct held_reply *h = item;
	struct acme_zone *az = ctx;
	ok = ok && !h->cut_failed;
	if (ok && az->cut_owed && h->after_cut) {
		hold_for_cut(az, h);
		return;
	}
	if (ok)
		reply_later_send(h->token, h->bytes, h->ok_len);
	else if (h->fail_len)
		reply_later_send(h->token, h->bytes + h->ok_len, h->fail_len);
	else
		reply_later_drop(h->token);
	free(h);
}

static void sync_start(struct acme_zone *az)
{
	durable_sync_started(az->dur);
	wal_sync_start(az->ws);   /* 0: its completion comes through the eventfd */
}

/* A sync completed (r 1) or failed (r < 0). */
static void sync_settle(struct acme_zone *az, int r)
{
	if (r < 0) {
		log_error("%s: fdatasync of %s-wal failed (%s): the last changes may not be on disk; "
		          "their UPDATEs are answered SERVFAIL", az->name, az->journal_path,
		          strerror(-r));
		reload_mirror(az);
	}
	if (durable_sync_done(az->dur, r > 0))
		sync_start(az);
	else if (!durable_pending(az->dur) && az->a->on_durable)
		az->a->on_durable(az->a->on_durable_ctx, az->apex);
}

static void settle_late(struct loop *l, void *arg)
{
	struct acme_zone *az = arg;
	(void)l;
	az->sync_late_timer = 0;
	sync_settle(az, az->sync_late_result);
}

static void on_synced(struct loop *l, int fd, int events, void *arg)
{
	struct acme_zone *az = arg;
	(void)fd;
	(void)events;
	int r = wal_sync_finish(az->ws);
	if (r == 0)
		return;
	if (az->sync_fail)
		r = -EIO;   /* the test knob: a disk that fails */
	if (az->sync_hold_ms) {
		/* The test knob: a slow disk, seen from the loop. */
		az->sync_late_result = r;
		int64_t id = loop_timer_add(l, az->sync_hold_ms, settle_late, az);
		if (id > 0) {
			az->sync_late_timer = id;
			return;
		}
	}
	sync_settle(az, r);
}

/* A commit returned: the first since the last sync starts one now. */
static void commit_durable_started(struct acme_zone *az)
{
	if (az->dur && durable_committed(az->dur))
		sync_start(az);
}

void commit_durable_prepare(struct acme_zone *az)
{
	if (az->ws)
		return;
	/*
	 * A test hook, not a setting (core/test_hooks.h; NULL unless built
	 * with GEOACME_TEST_HOOKS): "blocking" makes every commit durable in
	 * COMMIT, on the loop (the fallback path); "hold=MS" settles each
	 * completed sync MS ms late, so tests can see the window in which a
	 * change is served but its UPDATE not yet answered; "fail" makes
	 * every sync fail as a dying disk would (EIO).
	 */
	const char *knob = test_hook(TEST_HOOK_SYNC);
	bool blocking = !az->a->l || (knob && strcmp(knob, "blocking") == 0);
	if (knob && strncmp(knob, "hold=", 5) == 0)
		az->sync_hold_ms = (uint32_t)strtoul(knob + 5, NULL, 10);
	az->sync_fail = knob && strcmp(knob, "fail") == 0;
	/* io_setup, and a probe that syncs once: tens of ms on a busy disk. */
	az->ws = wal_sync_new(az->db, !blocking, az->sync_why);
	if (!az->ws)
		return;
	if (!az->sync_why[0] && !wal_sync_async(az->ws) && knob)   /* asked by the test hook */
		snprintf(az->sync_why, sizeof(az->sync_why), "%s=%s", test_hook_name(TEST_HOOK_SYNC),
		         knob);
}

int commit_durable_setup(struct acme_zone *az)
{
	static bool told;
	commit_durable_prepare(az);
	if (!az->ws) {
		log_error("%s: %s", az->name, az->sync_why);
		return -EIO;
	}
	if (wal_sync_async(az->ws)) {
		az->dur = durable_new(release_reply, az);
		if (!az->dur || loop_add_fd(az->a->l, wal_sync_event_fd(az->ws), LOOP_READ, on_synced,
		                            az) < 0) {
			log_error("%s: cannot watch the disk syncs; commits sync on the loop", az->name);
			durable_free(az->dur);
			az->dur = NULL;
			wal_sync_free(az->ws);
			az->ws = wal_sync_new(az->db, false, az->sync_why);
			return az->ws ? 0 : -EIO;
		}
		az->ws_watched = true;
		if (!told)
			log_info("durable commits: the WAL's fdatasync runs off the loop (Linux AIO); "
			         "UPDATE replies wait for it");
	} else if (az->a->l && !told) {
		log_info("durable commits: SQLite syncs in COMMIT, on the loop (%s)", az->sync_why);
	}
	told = told || az->a->l;
	return 0;
}

void commit_durable_clear(struct acme_zone *az)
{
	/* Leaving the loop (a reload, the end): the next generation reads the
	 * database, so it serves what these replies acknowledge. */
	if (az->cut_owed)
		commit_cut_served(az, true);
	if (az->sync_late_timer > 0) {
		loop_timer_cancel(az->a->l, az->sync_late_timer);
		az->sync_late_timer = 0;
		durable_sync_done(az->dur, az->sync_late_result > 0);
	}
	if (az->dur) {
		/* Whatever still waits is made durable on the spot and answered. */
		if (durable_pending(az->dur)) {
			durable_sync_started(az->dur);
			int r = wal_sync_flush(az->ws);
			if (r < 0)
				log_error("%s: fdatasync of %s-wal failed (%s)", az->name, az->journal_path,
				          strerror(-r));
			durable_sync_done(az->dur, r > 0);
		}
		durable_free(az->dur);
		az->dur = NULL;
	}
	if (az->ws_watched)
		loop_del_fd(az->a->l, wal_sync_event_fd(az->ws));
	az->ws_watched = false;
}

void commit_durable_free(struct acme_zone *az)
{
	/* io_destroy waits for the kernel: tens of ms, off the loop after a reload. */
	wal_sync_free(az->ws);
	az->ws = NULL;
}

bool commit_durable(const struct acme_zone *az)
{
	return !az->dur || !durable_pending(az->dur);
}

bool commit_cut_owed(const struct acme_zone *az)
{
	return az->cut_owed;
}

/*
 * A reply still waiting for the disk when the build it waited for ended:
 * it waits for the disk only, and goes SERVFAIL if the build failed (its
 * change is not served; after the sync it would have gone NOERROR).
 */
static void cut_settled(void *ctx, void *item)
{
	const bool *ok = ctx;
	struct held_reply *h = item;
	h->cut_failed = h->cut_failed || (h->after_cut && !*ok);
	h->after_cut = false;
}

void commit_cut_served(struct acme_zone *az, bool ok)
{
	az->cut_owed = false;
	az->served_behind = !ok;
	if (az->dur)
		durable_each(az->dur, cut_settled, &ok);
	struct held_reply *h = az->cut_held;
	az->cut_held = NULL;
	az->cut_tail = &az->cut_held;
	while (h) {
		struct held_reply *next = h->next;
		h->after_cut = false;   /* served: a later build owed is not its own */
		/* Still waiting for the disk: after it, in turn. */
		if (!ok || !az->dur || !durable_pending(az->dur) || durable_hold(az->dur, h) < 0)
			release_reply(az, h, ok);
		h = next;
	}
}

/*
 * commit_build, for cut_on_loop; a test hook (core/test_hooks.h) makes it
 * fail as if memory ran out, so a test sees a committed change that cannot
 * be served.
 */
static struct zone *build_on_loop(struct acme_zone *az, char err[256])
{
	const char *v = test_hook(TEST_HOOK_CUT_FAIL);
	if (v && strcmp(v, "all") == 0) {
		acme_errf(err, "out of memory (%s)", test_hook_name(TEST_HOOK_CUT_FAIL));
		return NULL;
	}
	return commit_build(az, err);
}

/*
 * The build beside the loop could not be made or started: built here, on
 * the loop, as before issue #26 (seconds at 100 000 names, but served).
 * When even that fails, the records committed cannot be served: their
 * UPDATEs are answered SERVFAIL (never NOERROR for a change not served)
 * and the zone keeps serving the snapshot it had; its next commit is built
 * whole again rather than patched onto it (served_behind).
 */
static void cut_on_loop(struct acme_zone *az)
{
	char err[256] = "";
	log_warn("%s: building the snapshot with the committed change on the loop instead",
	         az->name);
	compact_stale(az);
	struct zone *z = build_on_loop(az, err);
	if (z && zone_table_replace_diffed(az->a->t, z, NULL, 0) == 0) {
		commit_cut_served(az, true);
		return;
	}
	zone_free(z);
	log_error("%s: the committed change cannot be served (%s); its UPDATEs are answered "
	          "SERVFAIL and the previous snapshot keeps serving", az->name,
	          err[0] ? err : "the zone is no longer in the table");
	commit_cut_served(az, false);
}

void commit_cut_failed(struct acme_zone *az)
{
	cut_on_loop(az);
}

struct acme_zone *commit_waiting_zone(struct acme *a, const struct query *q)
{
	struct acme_zone *az = q->qdcount == 1 ? acme_find_zone(a, q->qname) : NULL;
	return az && (!commit_durable(az) || az->cut_owed) ? az : NULL;
}

static void take_token(void *ctx, struct reply_later *r)
{
	struct held_reply *h = ctx;
	h->token = r;
}

int commit_hold_reply(struct acme_zone *az, struct query *q, const uint8_t *fail,
                      size_t fail_len)
{
	struct held_reply *h = malloc(sizeof(*h) + q->tx_len + fail_len);
	if (!h)
		return -ENOMEM;
	h->token = NULL;
	/* An UPDATE answered before the build was owed was served already. */
	h->after_cut = az->cut_owed;
	h->cut_failed = false;
	h->ok_len = q->tx_len;
	h->fail_len = fail_len;
	memcpy(h->bytes, q->tx, q->tx_len);
	if (fail_len)
		memcpy(h->bytes + q->tx_len, fail, fail_len);
	if (!commit_durable(az)) {
		if (durable_hold(az->dur, h) < 0) {
			free(h);
			return -ENOMEM;
		}
	} else {
		hold_for_cut(az, h);   /* on disk already: waits for the build only */
	}
	/* Until the network layer hands over the token, right after this
	 * handler returns (nothing can complete in between). */
	q->tx_len = 0;
	q->later = (struct query_later){ h, take_token };
	return 0;
}
