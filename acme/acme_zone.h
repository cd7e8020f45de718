/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The ACME zones: zones kept in SQLite and changed by TSIG-signed RFC 2136
 * UPDATE (Lego's rfc2136 provider), replacing Hickory DNS's sqlite store.
 *
 * Each zone's records live in its database (storage/) and, mirrored, in
 * memory (recset.h).  An UPDATE is checked against the mirror, the change
 * to the served snapshot is prepared (a patch of the changed names,
 * core/zone/zone_patch.h, signed through the zone_signer hook; or, for what
 * a patch does not do, a new snapshot built from the mirror), committed to
 * SQLite in one transaction, then applied (or swapped into the zone
 * table), and the response is sent once that transaction is on disk
 * (commit.h: group commit; the disk sync runs off the event loop).  The difference
 * between the served snapshots goes into the database's IXFR journal in
 * the same transaction (storage/journal.h).  A timer removes TXT
 * records older than stale_txt_age_s the same way.
 *
 * The update handler also answers TSIG-signed queries for any zone: it
 * verifies the TSIG, answers through core (process_query) and signs the
 * response.
 */
#include <stdbool.h>
#include <stdint.h>

#include "core/hooks.h"

struct acme;
struct process_env;
struct config;
struct config_zone;
struct loop;
struct zone_signer;
struct zone_table;

/*
 * The zones are added to `t` (which must outlive the acme); `l` runs the
 * stale purge timers and may be NULL (no purge).
 */
struct acme *acme_new(struct zone_table *t, struct loop *l, char err[256]);
/* Cancels the timers and closes the databases; the zones stay in the table.  NULL-safe. */
void acme_free(struct acme *a);
/*
 * acme_free's first half, on the loop: the timers cancelled, the UPDATEs
 * waiting for a lock dropped, the replies waiting for a disk sync synced
 * on the spot and sent, the syncs' fds out of the loop.  acme_free() may
 * then run on another thread (a reload frees the old generation on the
 * builder's, cmd/builder.h): what is left is memory, the databases'
 * connections and the checkpoint threads.  NULL-safe; once.
 */
void acme_detach(struct acme *a);

/*
 * Opens (creating) the zone's database at zc->journal_path, seeds it from
 * zc->zone_path on first start; on a later one, compares zc->zone_path with
 * what it said when last applied and keeps the edit for
 * acme_apply_file_edits() (a bad edit: an error here), builds and signs the first snapshot,
 * adds it to the table and starts the purge timer.  `signer` may be NULL
 * (unsigned zone) and is copied; what it points to must outlive the acme.
 * Returns 0, or a negative errno with err.  acme_load_zone() then
 * acme_attach().
 */
int acme_add_zone(struct acme *a, const struct config *c, const struct config_zone *zc,
                  const struct zone_signer *signer, char err[256]);

/*
 * Applies the zone-file edits acme_add_zone() found (acme/file_diff.h),
 * each as one change through the update path: new serial, IXFR journal,
 * NOTIFY (through the zone table's watchers), signatures.  Called once the
 * rest of a configuration has been set up, so a configuration that fails
 * changes no database.  With `beside` (a reload: the previous generation
 * is serving), an edit a patch cannot make is committed and its snapshot
 * built beside the loop, swapped in a moment after the reload (the log
 * says when; the IXFR history goes on); without (at start, before anything
 * is served) it is built here, so "ready" serves it.  0, or a negative
 * errno with err (that zone's edit and those after it are not applied;
 * -EBUSY: its database was locked, by another process or a write of this
 * one under way, and nothing of that zone changed).
 */
int acme_apply_file_edits(struct acme *a, bool beside, char err[256]);

/*
 * Whether acme_apply_file_edits() would find every database it writes to
 * free now: -EBUSY with *zone set to the first locked one's name (a
 * reload waits for it, cmd/serve.c), else 0.  One BEGIN IMMEDIATE +
 * ROLLBACK per zone with an edit, no wait; none without one.
 */
int acme_edits_lock_free(const struct acme *a, const char **zone);

/*
 * A reload in two halves (cmd/builder.h).  acme_load_zone: the database
 * opened (seeded on first start), its records read, the snapshot built
 * and signed, added to the table; it touches no loop and nothing another
 * acme uses, so it may run on the builder thread while the running
 * generation answers.  acme_attach, on the loop, before the new
 * generation serves: the changes `prev` (the serving generation, or NULL)
 * committed while it was built are applied to each zone loaded from the
 * same database (prev must have called acme_capture_start() before the
 * build began), then the serial bump of a signed transferred zone, the
 * durable commits, checkpoints and the purge timer.  Both 0 or a negative
 * errno with err; on error the acme is only fit for acme_free().
 * acme_attach returns -EAGAIN (err empty) when a change committed meanwhile
 * cannot be patched into the new snapshot (zone_patch.h: glue, an apex
 * change in a signed zone, ...): building it whole there would take
 * seconds on the loop, so the caller builds the generation again instead
 * (it reads the change from the database).  All changes are applied before
 * any zone is attached, so an -EAGAIN (or any error in them) leaves every
 * database as it was.
 */
int acme_load_zone(struct acme *a, const struct config *c, const struct config_zone *zc,
                   const struct zone_signer *signer, char err[256]);
int acme_attach(struct acme *a, const struct acme *prev, char err[256]);
/*
 * on: acme_attach builds such a snapshot whole on the loop, as before,
 * rather than answer -EAGAIN: for a reload that was built again several
 * times for it already, so a stream of such UPDATEs cannot keep it from
 * ever being served.  Off at first.  NULL-safe.
 */
void acme_replay_on_loop(struct acme *a, bool on);
/*
 * On the loop, before a reload's build starts: from now on every commit of
 * a's zones is also kept (a copy of its change list), for acme_attach() of
 * the generation being built.  acme_capture_stop: keeps no more and drops
 * what was kept (a failed build; acme_free does it too).  NULL-safe.
 */
void acme_capture_start(struct acme *a);
void acme_capture_stop(struct acme *a);

/*
 * Renews the signatures near their refresh point.  With a loop and a signer
 * that renews in place, in slices over the next loop rounds (a few ms each;
 * the log says when the pass is done; zone->resigning is set until then);
 * otherwise by building the snapshot whole.  0 also when a pass is already
 * under way.  `keys`: the signer's key set changed (a rollover step): every
 * RRset is signed with the new keys and the DNSKEY RRset follows them, which
 * renewing in place does not do (it renews only what is due, with the
 * apex's keys as they were), so the snapshot is built whole: beside the
 * loop, returning 1, and the on_rekeyed callback is called with the apex
 * once it is served (acme_on_rekeyed); without a loop, on it, served when
 * this returns 0.  -ENOENT: not ours.
 */
int acme_resign(struct acme *a, const uint8_t *apex, bool keys, char err[256]);

/*
 * Removes the zone's TXT records added by UPDATE at least stale_txt_age_s
 * ago (as of `now`, unix seconds), in one transaction with a serial bump.
 * The timer calls it; tests call it with their own clock.  Returns the
 * number removed, or a negative errno.
 */
int acme_purge_stale(struct acme *a, const uint8_t *apex, int64_t now);

/*
 * After a reload: each key that `prev` also had (same zone, name and
 * algorithm) keeps its memory of the UPDATEs it accepted, so a reload
 * opens no window for replays (replay.h).  NULL-safe.
 */
void acme_keep_replay(struct acme *a, const struct acme *prev);

/*
 * Calls fn with each difference of the zone's IXFR journal, oldest first
 * (zone_diff blobs, valid during the call): how the transfer history
 * survives a restart.  -ENOENT: not an ACME zone.
 */
int acme_journal_foreach(struct acme *a, const uint8_t *apex,
                         int (*fn)(void *arg, const uint8_t *apex, const uint8_t *diff,
                                   size_t len),
                         void *arg);

/*
 * Durable commits (commit.c, storage/wal_sync.h): with a loop, a commit
 * returns before it is on disk, an fdatasync of the database's WAL runs in
 * the kernel (Linux AIO) while the loop answers queries, and the UPDATE's
 * reply waits for it.  acme_durable() is false while some commit of the
 * zone is not yet on disk; NOTIFY waits for that (a secondary is told only
 * of durable serials), and fn is called with the zone's apex whenever all
 * its commits have become durable.  One callback; NULL removes it.
 */
typedef void (*acme_durable_fn)(void *ctx, const uint8_t *apex);
void acme_on_durable(struct acme *a, acme_durable_fn fn, void *ctx);
/* A re-keying of the zone runs beside the loop (acme_resign): not failed, awaited. */
bool acme_rekeying(const struct acme *a, const uint8_t *apex);
/* One callback for acme_resign's re-keyings beside the loop; NULL removes it. */
void acme_on_rekeyed(struct acme *a, acme_durable_fn fn, void *ctx);
/* True also for a zone that is not ours. */
bool acme_durable(const struct acme *a, const uint8_t *apex);

/*
 * The handler for core (hooks.h).  `env` answers signed queries
 * (process_query); it may be NULL, and signed queries are then REFUSED.
 */
struct update_handler acme_update_handler(struct acme *a, struct process_env *env);
