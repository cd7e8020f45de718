/* SPDX-License-Identifier: MIT */
/*
 * A zone's compaction built on a helper thread (see compact.h).
 */
#include "acme/compact.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acme/acme_internal.h"
#include "acme/commit.h"
#include "core/conf/log.h"
#include "core/conf/side_thread.h"
#include "core/conf/sysclock.h"
#include "core/net/loop.h"
#include "core/net/loop_job.h"
#include "core/test_hooks.h"
#include "core/wire/change.h"
#include "core/zone/recset.h"
#include "core/zone/zone.h"
#include "core/zone/zone_patch.h"
#include "core/zone/zone_table.h"
#include "acme/staged.h"
#include "core/zone/zone_diff.h"
#include "storage/db.h"
#include "storage/journal.h"
#include "storage/records.h"

struct compact {
	struct acme_zone *az;
	/* The thread, detached; its end calls on_done on the loop. */
	struct loop_job job;
	bool done;                   /* no job running; loop side */
	bool stale;                  /* the served snapshot was replaced meanwhile */
	bool rekey;                  /* built for new keys: on_rekeyed once served (compact_rekey) */
	bool rekey_restart;          /* ... while a build with the old keys ran: build again */
	struct change_list noted;    /* names committed since the start (no rdata) */
	size_t commits;              /* how many commits noted them */
	struct timespec started;
	/* The thread's, until loop_job_finish(). */
	char *path;
	uint8_t apex[DNAME_MAX];
	char name[DNAME_MAX * 4 + 2];
	struct zone_signer signer;
	bool has_signer;
	bool holding;                /* signer.building(on) called, not yet off */
	/*
	 * A build with a committed change whose difference goes on in the IXFR
	 * history (acme_zone's cut_history): the served snapshot it is taken
	 * from, held by the loop (a re-signing pass waits while it is held, so
	 * nothing changes it in place), read on the thread; the difference
	 * base -> z, the thread's, journaled at the swap.
	 */
	struct zone *base;
	uint8_t *diff;
	size_t diff_len;
	uint32_t delay_ms;           /* GEOACME_TEST_COMPACT_DELAY_MS */
	struct zone *z;
	size_t records;
	double build_ms;
	char err[256];
};

static size_t due_bytes(void)
{
	/* A test hook (core/test_hooks.h): compaction due at this growth, so a
	 * test of a few names can see one. */
	const char *v = test_hook(TEST_HOOK_COMPACT_BYTES);
	return v ? (size_t)strtoull(v, NULL, 10) : 0;
}

bool compact_due(const struct zone *z)
{
	size_t hook = due_bytes();
	return hook ? zone_patch_growth(z) > hook : recset_compaction_due(z);
}

bool compact_running(const struct acme_zone *az)
{
	return az->compact && !az->compact->done;
}

bool compact_rekeying(const struct acme_zone *az)
{
	return compact_running(az) && az->compact->rekey;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	sysclock_mono_ts(&t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

struct load {
	struct compact *c;
	struct recset *rs;
};

static int load_row(void *arg, const struct records_row *row)
{
	struct load *l = arg;
	return acme_row_into(l->rs, l->c->name, l->c->path, row);
}

/*
 * A test hook (core/test_hooks.h): the snapshot just built is dropped, as
 * if memory ran out, so a test sees what a failed build beside the loop
 * leads to (swap_in).  Read once per build, on its thread.
 */
static void lose_for_test(struct compact *c)
{
	const char *v = test_hook(TEST_HOOK_CUT_FAIL);
	if (!c->z || !v || (strcmp(v, "beside") != 0 && strcmp(v, "all") != 0))
		return;
	zone_free(c->z);
	c->z = NULL;
	acme_errf(c->err, "out of memory (%s)", test_hook_name(TEST_HOOK_CUT_FAIL));
}

/* The thread: the database read on a connection of its own, then built and signed. */
static void *run(void *arg)
{
	struct compact *c = arg;
	/*
	 * The lowest priority (this thread's nice, Linux): the answering thread
	 * comes first.  It shares the signer's lock with the loop, one RRset at
	 * a time; on one core, at the same priority, a patch waited up to 60 ms
	 * for it (the lock went back to this thread while the loop slept).
	 */
	side_thread_lower(19, "compaction");
	struct timespec t0;
	sysclock_mono_ts(&t0);
	struct db *db = db_open(c->path, c->err);
	struct load l = { c, recset_new() };
	if (db && l.rs) {
		int ret = records_load(db, load_row, &l);
		if (ret < 0)
			acme_errf(c->err, "cannot read the records (%s)", strerror(-ret));
		else
			c->z = acme_build(c->apex, c->name, l.rs, c->has_signer ? &c->signer : NULL,
			                  c->path, c->err);
	} else if (db) {
		acme_errf(c->err, "out of memory");
	}
	c->records = l.rs ? recset_count(l.rs) : 0;
	if (c->base && c->z && zone_diff(c->base, c->z, &c->diff, &c->diff_len) < 0) {
		/* Only out of memory: the history starts over at the swap. */
		c->diff = NULL;
		c->diff_len = 0;
	}
	/* Freed here: 100 000 records are no work for the loop. */
	recset_free(l.rs);
	db_close(db);
	c->build_ms = ms_since(&t0);
	if (c->delay_ms && c->z) {
		/* A test hook: built, not yet swapped in, so a test can send
		 * UPDATEs and see them answered from the old snapshot meanwhile. */
		side_thread_sleep_ms(c->delay_ms);
	}
	lose_for_test(c);
	loop_job_finish(&c->job);   /* the last touch of c */
	return NULL;
}

static void *free_old(void *arg)
{
	side_thread_lower(19, "compaction's free");
	zone_free(arg);
	return NULL;
}

/*
 * Let go of on the loop; when ours was the last hold, freed on a detached
 * thread of its own (a joined reaper made the next swap wait for it).
 */
static void release_beside(struct zone *z)
{
	pthread_t t;
	if (!z || zone_refs(z) > 1 || side_thread_start(&t, free_old, z) != 0)
		zone_free(z);
	else
		pthread_detach(t);
}


/* The signer's cache keeps what patches replace while the thread builds. */
static void hold_cache(struct compact *c, bool on)
{
	if (c->has_signer && c->signer.building && c->holding != on)
		c->signer.building(c->signer.ctx, on);
	c->holding = on;
}

/* The job ends on the loop, its thread done: what it made dropped. */
static void finish(struct compact *c)
{
	hold_cache(c, false);
	zone_free(c->z);
	c->z = NULL;
	release_beside(c->base);
	c->base = NULL;
	free(c->diff);
	c->diff = NULL;
	change_list_clear(&c->noted);
	c->done = true;
}

/*
 * The built snapshot brought up to the served one: every name noted since
 * the start gets its contents from the mirror, in one patch.  0, or
 * -EAGAIN: build again.  `diff` (NULL: not wanted): the patch's difference,
 * when it moves the serial (the commits the build did not read).
 */
static int catch_up(struct compact *c, uint64_t *made, uint8_t **diff, size_t *diff_len)
{
	struct acme_zone *az = c->az;
	*made = zone_signatures_made(c->z);
	if (!c->noted.n)
		return 0;
	if (c->noted.n > COMPACT_REPLAY_MAX)
		return -EAGAIN;
	struct zone_patch *p;
	char err[256] = "";
	int ret = recset_prepare_patch_any(c->z, az->rs, &c->noted,
	                                   az->has_signer ? &az->signer : NULL, &p, err);
	if (ret < 0) {
		log_info("%s: the changes made during the compaction cannot be patched onto it (%s); "
		         "building it again", az->name, err[0] ? err : strerror(-ret));
		return -EAGAIN;
	}
	*made += zone_patch_signatures_made(p);
	if (diff && zone_patch_serial(p) != zone_serial(c->z) &&
	    zone_diff_patch(c->z, p, diff, diff_len) < 0)
		*diff = NULL;   /* out of memory: the history starts over */
	/* Not served yet: patched with no one watching. */
	zone_patch_apply(p);
	zone_patch_free(p);
	return 0;
}

/* The new keys' signatures are served: the rollover may go on (acme_zone.h). */
static void rekeyed(struct compact *c)
{
	struct acme_zone *az = c->az;
	c->rekey = false;
	if (az->a->on_rekeyed)
		az->a->on_rekeyed(az->a->on_rekeyed_ctx, az->apex);
}

/* A re-keying that cannot be swapped in: built whole on the loop, as before. */
static void rekey_on_loop(struct compact *c)
{
	struct acme_zone *az = c->az;
	char err[256] = "";
	log_warn("%s: re-signing with the new keys on the loop instead", az->name);
	if (commit_rekey_whole(az, err) < 0)
		log_error("%s: re-signing with the new keys failed: %s", az->name, err);
	else
		rekeyed(c);
}

/* Whether a cut's build can continue the IXFR history from `served` (journal_cut). */
static bool history_continues(const struct compact *c, const struct zone *served, bool rekey)
{
	return c->az->cut_history && !rekey && c->diff && c->base == served;
}

/*
 * The cut's difference (and the catch-up's, `late`) continue the history
 * from the served snapshot to z: journaled, one transaction of their own
 * (the records were committed before, without them).  false: the history
 * starts over, as after a re-keying.  Not written while a large UPDATE's
 * transaction is open, or when SQLite refuses: the in-memory history goes
 * on, and the journal on disk then ends short of the serial, which a
 * restart reads as a gap (storage/journal.h).
 */
static bool journal_cut(struct compact *c, const struct zone *served, const struct zone *z,
                        const uint8_t *late, size_t late_len, bool rekey)
{
	struct acme_zone *az = c->az;
	struct journal_entry e[2];
	uint32_t nd, na;
	if (!history_continues(c, served, rekey) ||
	    zone_diff_header(c->diff, c->diff_len, &e[0].serial_from, &e[0].serial_to, &nd,
	                     &na) < 0 || e[0].serial_from != zone_serial(served))
		return false;
	e[0].diff = c->diff;
	e[0].len = c->diff_len;
	size_t n = 1;
	if (late) {
		if (zone_diff_header(late, late_len, &e[1].serial_from, &e[1].serial_to, &nd, &na) < 0 ||
		    e[1].serial_from != e[0].serial_to)
			return false;
		e[1].diff = late;
		e[1].len = late_len;
		n = 2;
	}
	if (e[n - 1].serial_to != zone_serial(z))
		return false;
	int ret = staged_open(az) ? -EBUSY : journal_append(az->db, e, n, &az->caps);
	if (ret < 0)
		log_warn("%s: the difference of the build with the committed change is not in the "
		         "journal (%s): after a restart, secondaries older than serial %u get the whole "
		         "zone", az->name, ret == -EBUSY ? "the database is busy" : "cannot write it",
		         zone_serial(z));
	return true;
}

static void swap_in(struct compact *c)
{
	struct acme_zone *az = c->az;
	struct timespec t0;
	sysclock_mono_ts(&t0);
	const struct zone *served = zone_table_get(az->a->t, az->apex);
	uint64_t made = 0;
	uint8_t *late = NULL;        /* the catch-up's difference (cut) */
	size_t late_len = 0;
	size_t commits = c->commits;
	bool again = false, rekey = c->rekey, failed = false, cut = az->cut_owed;
	const char *what = cut ? "build with the committed change" : rekey ? "re-keying" : "compaction";
	if (cut && (c->stale || !c->z) && !c->rekey_restart) {
		/* The served snapshot lags the committed records: never dropped.
		 * Stale (built meanwhile, but not from the mirror): again; failed:
		 * on the loop (commit_cut_failed). */
		if (c->z) {
			log_info("%s: the %s is stale; building it again", az->name, what);
			again = true;
		} else {
			log_error("%s: the %s failed (%s)", az->name, what, c->err);
			finish(c);
			commit_cut_failed(az);
			if (rekey)
				rekeyed(c);
			return;
		}
	} else if (c->rekey_restart) {
		c->rekey_restart = false;
		again = true;
		log_info("%s: the build under way began before the last key change; building it again "
		         "with the new keys", az->name);
	} else if (rekey && c->stale && served) {
		/* Built whole on the loop meanwhile (a change a patch does not
		 * make), so with the new keys: served already. */
		log_info("%s: the re-keying is dropped: the snapshot was built whole with the new keys "
		         "meanwhile", az->name);
		rekeyed(c);
	} else if (c->stale || !served || (zone_resigning(served) && !rekey && !cut)) {
		log_info("%s: the %s is dropped: the snapshot was built or re-signed meanwhile",
		         az->name, what);
		failed = rekey;
	} else if (!c->z) {
		log_error("%s: the %s failed (%s); patches go on", az->name, what, c->err);
		failed = rekey;
	} else if (catch_up(c, &made, cut && history_continues(c, served, rekey) ? &late : NULL,
	                    &late_len) < 0) {
		again = true;   /* (`late`, the catch-up's difference, only for a history that goes on) */
	} else if (!cut && zone_serial(c->z) != zone_serial(served)) {
		/* Cannot happen: every commit since the start was noted. */
		log_error("%s: the %s snapshot has serial %u, the served one %u; dropped",
		          az->name, rekey ? "re-keyed" : "compacted", zone_serial(c->z),
		          zone_serial(served));
		failed = rekey;
	} else if (cut) {
		/*
		 * The committed records, a new serial: swapped in between two
		 * queries, the IXFR history continued with the difference the
		 * thread computed (or started over: secondaries get the zone),
		 * NOTIFY sent; then the replies that waited for it.  The old
		 * snapshot is freed beside the loop.
		 */
		struct zone *z = c->z;
		c->z = NULL;
		uint32_t from = zone_serial(served);
		bool history = journal_cut(c, served, z, late, late_len, rekey);
		struct zone *old = zone_table_swap(az->a->t, z);
		zone_table_patched(az->a->t, z, history ? c->diff : NULL, history ? c->diff_len : 0);
		if (history && late)
			zone_table_patched(az->a->t, z, late, late_len);
		size_t diff_bytes = history ? c->diff_len + late_len : 0;
		/* Held for the difference (it is `old`): let go of first. */
		zone_free(c->base);
		c->base = NULL;
		release_beside(old);
		char how[64] = "the IXFR history starts over";
		if (history)
			snprintf(how, sizeof(how), "the IXFR history goes on: %zu bytes of difference",
			         diff_bytes);
		log_info("%s: built with the committed change beside the loop: %zu records built and "
		         "signed in %.0f ms, %zu commit%s made meanwhile patched in, swapped in on the "
		         "loop in %.2f ms, serial %u -> %u (%s)", az->name, c->records, c->build_ms,
		         commits, commits == 1 ? "" : "s", ms_since(&t0), from, zone_serial(z), how);
		commit_cut_served(az, true);
		if (rekey)
			rekeyed(c);
	} else {
		struct zone *z = c->z, *old = NULL;
		c->z = NULL;
		/* A re-keying's signatures may all come from the cache (a build
		 * with the new keys before it put them there) and still differ
		 * from the served ones: new signatures, always. */
		made += rekey && !made;
		if (made == 0) {
			/* Record for record the served zone, signatures included:
			 * nothing for the IXFR history or NOTIFY to hear of. */
			old = zone_table_swap(az->a->t, z);
		} else if (zone_table_replace(az->a->t, z) < 0) {
			zone_free(z);
		}
		release_beside(old);   /* a transfer may hold it too: the last holder frees it */
		log_info("%s: %s beside the loop: %zu records built and signed in %.0f ms, "
		         "%zu commit%s made meanwhile patched in, swapped in on the loop in %.2f ms (%s)",
		         az->name, rekey ? "re-signed with the new keys" : "compacted", c->records,
		         c->build_ms, commits, commits == 1 ? "" : "s",
		         ms_since(&t0), made ? "new signatures: the serial follows"
		                             : "the same signatures, the same serial");
		if (made && az->serial_per_signing) {
			char err[256] = "";
			if (commit_bump_serial(az, true, err) < 0)
				log_error("%s: %s; secondaries get the new signatures with the next change",
				          az->name, err);
		}
		if (rekey)
			rekeyed(c);
	}
	free(late);
	finish(c);
	if (again && compact_start(az) < 0) {
		log_warn("%s: cannot build the %s again; patches go on", az->name, what);
		failed = rekey;
		if (az->cut_owed) {
			commit_cut_failed(az);   /* built on the loop, with the keys as they are */
			if (rekey)
				rekeyed(c);
			failed = false;
		}
	}
	if (failed)
		rekey_on_loop(c);
}

static void on_done(void *arg)
{
	struct compact *c = arg;
	if (!c->done)
		swap_in(c);
}

static struct compact *job_new(struct acme_zone *az)
{
	struct compact *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->az = az;
	c->done = true;
	change_list_init(&c->noted);
	c->job.efd = -1;   /* no job yet: loop_job_wait() returns at once */
	c->path = strdup(az->journal_path);
	if (!c->path) {
		free(c);
		return NULL;
	}
	memcpy(c->apex, az->apex, sizeof(c->apex));
	memcpy(c->name, az->name, sizeof(c->name));
	const char *delay = test_hook(TEST_HOOK_COMPACT_DELAY);
	c->delay_ms = delay ? (uint32_t)strtoul(delay, NULL, 10) : 0;
	return c;
}

static int start(struct acme_zone *az, bool rekey)
{
	if (!az->a->l || !az->attached)
		return -ENOTSUP;
	if (compact_running(az))
		return 0;
	if (!az->compact && !(az->compact = job_new(az))) {
		log_error("%s: out of memory for a compaction; patches go on", az->name);
		return -ENOMEM;
	}
	struct compact *c = az->compact;
	c->rekey = c->rekey || rekey;
	c->signer = az->signer;
	c->has_signer = az->has_signer;
	c->stale = false;
	c->commits = 0;
	c->err[0] = '\0';
	c->z = NULL;
	/* finish() let go of the last one's. */
	const struct zone *served = zone_table_get(az->a->t, az->apex);
	c->base = az->cut_owed && az->cut_history && served ? zone_hold(served) : NULL;
	c->done = false;
	/* From the records' read on: a commit meanwhile must not drop from
	 * the cache the signatures of what the build reads (its catch-up
	 * replaces them; made anew, they would look like new signatures). */
	hold_cache(c, true);
	sysclock_mono_ts(&c->started);
	char err[256];
	int ret = loop_job_start(&c->job, az->a->l, run, on_done, c, err);
	if (ret < 0) {
		log_error("%s: cannot compact the snapshot beside the loop (%s); patches go on",
		          az->name, err);
		hold_cache(c, false);
		zone_free(c->base);   /* the served one: never the last hold */
		c->base = NULL;
		c->done = true;
		return ret;
	}
	if (az->cut_owed)
		log_info("%s: building the snapshot with the committed change beside the loop%s",
		         az->name, c->rekey ? " (with the new keys)" : "");
	else if (c->rekey)
		log_info("%s: re-signing with the new keys beside the loop", az->name);
	else
		log_info("%s: compacting the snapshot beside the loop (patches added %zu bytes)",
		         az->name, zone_patch_growth(zone_table_get(az->a->t, az->apex)));
	return 0;
}

int compact_start(struct acme_zone *az)
{
	return start(az, false);
}

int compact_rekey(struct acme_zone *az)
{
	if (!az->a->l || !az->attached)
		return -ENOTSUP;
	if (compact_running(az)) {
		/* Its result, signed with the keys as they were, is dropped at its
		 * end and the build starts over (swap_in). */
		az->compact->rekey = true;
		az->compact->rekey_restart = true;
		log_info("%s: re-signing with the new keys once the compaction under way ends",
		         az->name);
		return 1;
	}
	int ret = start(az, true);
	if (ret < 0 && az->compact)
		az->compact->rekey = false;
	return ret < 0 ? ret : 1;
}

void compact_note(struct acme_zone *az, const struct change_list *cl)
{
	struct compact *c = az->compact;
	if (!compact_running(az) || c->stale)
		return;
	c->commits++;
	for (size_t i = 0; i < cl->n; i++) {
		if (change_list_add(&c->noted, CHANGE_ADD, cl->v[i].name, cl->v[i].type, 0, NULL, 0,
		                    0) < 0) {
			log_error("%s: out of memory noting a change for the compaction; it is dropped",
			          az->name);
			c->stale = true;
			return;
		}
	}
}

void compact_stale(struct acme_zone *az)
{
	if (compact_running(az))
		az->compact->stale = true;
}

int compact_cut(struct acme_zone *az, const struct change_list *cl)
{
	if (compact_running(az)) {
		/* Its read may predate the change: noted, patched in at its end
		 * when a patch can, else built again (swap_in). */
		compact_note(az, cl);
		log_info("%s: the compaction under way becomes the build with the committed change",
		         az->name);
		return 0;
	}
	return start(az, false);
}

void compact_resigning(struct acme_zone *az)
{
	if (compact_running(az) && !az->compact->rekey && !az->cut_owed)
		az->compact->stale = true;
}

void compact_detach(struct acme_zone *az)
{
	if (az->compact)
		loop_job_unwatch(&az->compact->job);
}

void compact_free(struct acme_zone *az)
{
	struct compact *c = az->compact;
	if (!c)
		return;
	/* A thread still building: waited for (the zone leaves, its job with it). */
	loop_job_unwatch(&c->job);
	loop_job_wait(&c->job);
	hold_cache(c, false);
	zone_free(c->z);
	zone_free(c->base);
	free(c->diff);
	change_list_clear(&c->noted);
	free(c->path);
	free(c);
	az->compact = NULL;
}
