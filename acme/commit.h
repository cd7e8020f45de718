/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The update path of an ACME zone: an UPDATE checked (zone, key, RFC 2136
 * prerequisites, policy), turned into a change list, committed to SQLite,
 * and the served snapshot patched (or a new one built from the in-memory
 * mirror, signed, and swapped in); the response goes once the commit is
 * on disk (group commit, below).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct acme;
struct acme_key;
struct acme_zone;
struct change_list;
struct query;
struct zone;

/* A new snapshot from the in-memory records (which mirror the database);
 * NULL with err when it cannot be served. */
struct zone *commit_build(struct acme_zone *az, char err[256]);
/*
 * Makes a change: the serial bump is appended, the mirror changed, the
 * served snapshot's patch prepared or, without a loop, a new snapshot
 * built (so a change that cannot be served is not committed; with a loop
 * such a change is built beside it after the commit: commit_cut_owed), the difference computed, the
 * records and the difference committed in one transaction (its disk sync
 * started: see group commit below), and only then the patch applied or
 * the snapshot swapped in.  Any failure
 * leaves the database, the mirror and the served zone as they were.
 * `reset` empties the journal instead of appending to it (the first
 * signing after a start, or a re-signing pass: secondaries hold
 * signatures that no difference describes).  `whole` builds the snapshot
 * whole even where a patch would do (a serial bump that must re-sign).
 * Returns 0 (serial: the new one) or a negative errno: -EPERM when the
 * change would leave a DS record at a name that is not a delegation (RFC
 * 4035 2.4), logged, nothing changed; -EBUSY when another process holds
 * the database's write lock (not logged: the caller waits, lockwait.h).
 */
int commit_change(struct acme_zone *az, struct change_list *cl, uint32_t *serial, bool reset,
                  bool whole);
/*
 * A large UPDATE committed in stages (staged.h): commit_stage_ready()
 * bumps the serial in cl as commit_change() does (-EIO when the mirror
 * must be read again first).  Once staged.h wrote cl's records in its open
 * transaction, the rest of commit_change() in three loop rounds, the
 * served zone untouched until the last: commit_staged_names() changes the
 * mirror and gives the patch its names, commit_staged_prepare() prepares
 * it (signs, from the cache), commit_staged_finish() appends the
 * difference, commits, and applies the patch (each made again if the
 * snapshot was swapped in between).  Each ends the transaction, frees cs
 * and leaves the mirror as before when it fails; commit_staged_abandon()
 * undoes one under way.
 */
struct commit_staged;
int commit_stage_ready(struct acme_zone *az, struct change_list *cl, uint32_t *serial);
int commit_staged_names(struct acme_zone *az, struct change_list *cl, struct commit_staged **out);
int commit_staged_prepare(struct acme_zone *az, struct change_list *cl, struct commit_staged *cs);
int commit_staged_finish(struct acme_zone *az, struct change_list *cl, struct commit_staged *cs);
void commit_staged_abandon(struct acme_zone *az, struct change_list *cl,
                           struct commit_staged *cs);
/*
 * A zone-file edit (file_diff.h) made as commit_change() makes a change,
 * with two differences: its change list already replaces the SOA, with
 * the serial the edit chose, so no bump is added; and the stored zone
 * file (storage/zonefile.h) is written in the same transaction.
 */
struct file_diff;
int commit_file_edit(struct acme_zone *az, struct file_diff *fd, bool reset);
/*
 * A change another connection already committed to the zone's database
 * (the serving generation's, while a reload built this one: acme_attach),
 * applied to the mirror and the snapshot (patched) only; nothing is
 * written or announced.  0, or a negative errno with err.  A change a
 * patch cannot make: -EAGAIN (err empty), the generation is built again,
 * unless acme_replay_on_loop() asked for it built whole here, on the loop.
 */
int commit_replay(struct acme_zone *az, const struct change_list *cl, char err[256]);
/*
 * A change of nothing but the serial (durable, journaled, announced), the
 * SOA patched: signatures made anew (at start, by a re-signing pass) need
 * a new serial when secondaries copy the zone.
 */
int commit_bump_serial(struct acme_zone *az, bool reset, char err[256]);
/*
 * Renews the snapshot's due signatures: in slices over loop rounds, in
 * place (zone_patch.h), when it can, and then, when secondaries copy the
 * zone, one serial bump with the journal started over; else rebuilt and
 * re-signed whole and swapped in (with a new serial, journaled, when
 * secondaries copy the zone).
 */
int commit_rebuild(struct acme_zone *az, char err[256]);
/*
 * The signer's keys changed: built and signed with them beside the loop
 * and swapped in (compact_rekey, compact.h): returns 1, and the acme's
 * on_rekeyed callback says when the new signatures are served.  Without a
 * loop (or a thread), commit_rekey_whole: built whole and re-signed on the
 * loop, swapped in (with a new serial, journaled as a difference, when
 * secondaries copy the zone), served when it returns 0.  Or a negative
 * errno with err.
 */
int commit_rekey(struct acme_zone *az, char err[256]);
int commit_rekey_whole(struct acme_zone *az, char err[256]);
/*
 * Handles an UPDATE whose TSIG (if any) was verified and matched to `key`
 * (NULL: unsigned).  The response's RCODE goes in q->rcode; returns 0
 * (NOERROR: committed, or nothing to change) or a negative errno:
 * -EBADMSG FORMERR, -ENOENT NOTAUTH (not our zone) or a prerequisite's
 * NXDOMAIN/NXRRSET, -EEXIST YXDOMAIN/YXRRSET, -ERANGE NOTZONE, -EACCES
 * REFUSED, -ENOMEM or the commit's error SERVFAIL (-EBUSY: the database is
 * locked by another process and nothing changed; the caller may hold the
 * UPDATE and handle it again, lockwait.h).
 */
int commit_update(struct acme *a, struct query *q, const struct acme_key *key, uint64_t now);

/*
 * Group commit (durable.h, storage/wal_sync.h).  With a loop, a commit
 * returns before it is on disk and an fdatasync of the WAL runs in the
 * kernel (Linux AIO); replies that speak of the zone's state wait for it,
 * the loop does not.  Without a loop, with GEOACME_TEST_SYNC=blocking (a
 * test knob) or where AIO cannot fsync, SQLite syncs in every COMMIT, on
 * the loop, as before.
 *
 * commit_durable_prepare: the sync made (io_setup and a probe), on the
 * builder thread while a reload builds, or by commit_durable_setup; it
 * touches no loop.  commit_durable_setup: on the loop, after the zone is
 * loaded, before its first commit; 0 or -EIO (logged).
 * commit_durable_clear, on the loop: what still waits is synced on the
 * spot and answered; the sync's fd leaves the loop.  commit_durable_free
 * then closes the sync, on any thread.  NULL-safe fields, may run twice.
 */
void commit_durable_prepare(struct acme_zone *az);
int commit_durable_setup(struct acme_zone *az);
void commit_durable_clear(struct acme_zone *az);
void commit_durable_free(struct acme_zone *az);
/* Every commit of the zone is on disk. */
bool commit_durable(const struct acme_zone *az);
/*
 * A change a patch cannot make (zone_patch.h: glue, a cut's names, DNAME,
 * a wildcard, the apex of a signed zone, ...) is committed (journal
 * started over: secondaries get the zone by AXFR), and the snapshot with
 * it is built whole beside the loop as a compaction (compact_cut); until
 * it is swapped in, queries are answered from the snapshot as it was,
 * the zone's UPDATEs wait (lockwait.h) and the replies of the changes
 * committed wait too, in order: a client that got NOERROR can query its
 * change.  commit_cut_owed: such a build is owed.  commit_cut_served: it
 * is served (ok), or it cannot be (the replies go SERVFAIL); the replies
 * still waiting for the disk go after it (SERVFAIL too if it cannot be
 * served).  commit_cut_failed: the build
 * beside the loop failed: built on the loop instead, or SERVFAIL.
 */
bool commit_cut_owed(const struct acme_zone *az);
void commit_cut_served(struct acme_zone *az, bool ok);
void commit_cut_failed(struct acme_zone *az);
/*
 * The zone of an UPDATE (q, handled by commit_update) whose reply must
 * wait: some commit of it is not on disk yet.  NULL: reply at once.
 */
struct acme_zone *commit_waiting_zone(struct acme *a, const struct query *q);
/*
 * Holds the reply in q->tx until every commit so far is durable, and
 * fail[0 .. fail_len) to send instead if the sync fails (0: no reply):
 * copies both, sets q->tx_len 0 and q->later (core/wire/query.h).
 * 0, or -ENOMEM (nothing held, q unchanged).
 */
int commit_hold_reply(struct acme_zone *az, struct query *q, const uint8_t *fail,
                      size_t fail_len);
