/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Compaction beside the loop (issue #26.1).  Patches grow a served
 * snapshot's arena (core/zone/zone_patch.h); once they have added as much
 * as the build held, the snapshot is built whole again.  That build took
 * 2.9 s at 100 000 signed names, on the loop.  Here it runs on a helper
 * thread of the zone's own while the loop keeps answering from the
 * current snapshot and keeps patching it:
 *
 *   1. compact_start (on the loop, from the commit that found the growth
 *      due): a thread opens its own connection to the zone's database,
 *      reads the records (a consistent read: one SELECT, WAL), builds and
 *      signs the snapshot through the zone's signer (its cache is locked,
 *      dnssec/signer.c), and signals an eventfd.
 *   2. compact_note (on the loop, by every commit meanwhile): the change
 *      lists committed after the start are kept.
 *   3. On the loop when the thread is done: every name those changes
 *      touched gets its contents as the in-memory mirror holds them now,
 *      in one patch of the new (not yet served) snapshot, the SOA
 *      included; so the new snapshot holds exactly the served records at
 *      the served serial.  Built changes were read already, and patching
 *      them again is a no-op (a name's whole contents are given).  When a
 *      patch cannot do it (more than COMPACT_REPLAY_MAX changes, or a
 *      change a patch does not make), the build starts over instead.
 *   4. The swap: when the build and that patch took every signature from
 *      the signer's cache, the new snapshot is the served one record for
 *      record, signatures included, so it replaces it without a word to
 *      the IXFR history or NOTIFY (zone_table_swap): secondaries hold the
 *      same zone and follow by IXFR as before.  When some signature had
 *      to be made anew (the cache dropped it, or it was due), it is
 *      swapped in as a rebuild and, for a zone secondaries copy, one
 *      serial bump starts the journal over, as a re-signing pass ends.
 *      The old snapshot is freed on the thread's successor (a short
 *      thread) when nothing else holds it.
 *
 * A whole build of the served snapshot on the loop (zone_table_replace)
 * or a re-signing pass while the thread builds makes its result stale:
 * it is dropped, and the next commit that finds the growth due starts
 * another.  One compaction per zone at a time.
 */
#include <stdbool.h>
#include <stddef.h>

struct acme_zone;
struct change_list;
struct zone;

/* At most this many changes are patched onto the built snapshot at the
 * swap; beyond, it is built again (a few ms of patching per 1 000 names). */
#define COMPACT_REPLAY_MAX 20000

/* Patches grew z enough to build it whole again (test hook: earlier). */
bool compact_due(const struct zone *z);
/*
 * Starts the zone's compaction: 0 (also when one runs), or a negative
 * errno (logged; the caller patches on, the next commit tries again).
 */
int compact_start(struct acme_zone *az);
bool compact_running(const struct acme_zone *az);
/* A build for new keys runs (compact_rekey): the rollover awaits its swap. */
bool compact_rekeying(const struct acme_zone *az);
/*
 * A committed change a patch cannot make (commit.h, commit_cut_owed): the
 * snapshot is built whole beside the loop, the changes committed meanwhile
 * patched in (or built again), and swapped in on the loop; then
 * commit_cut_served.  The IXFR history goes on when it can (acme_zone's
 * cut_history): the thread also computes the difference from the served
 * snapshot, held for it, and the swap journals it (storage/journal.h
 * journal_append); otherwise it starts over there.  A compaction under way
 * becomes that build (it notes cl; the history then starts over).  Never
 * dropped while owed: a stale result is built again, a failed
 * one on the loop (commit_cut_failed).  0, or a negative errno: not started.
 */
int compact_cut(struct acme_zone *az, const struct change_list *cl);
/* A commit under way: its change is kept for the swap.  Out of memory:
 * the compaction is dropped (it would lack the change). */
void compact_note(struct acme_zone *az, const struct change_list *cl);
/* The served snapshot was replaced meanwhile: the result is dropped. */
void compact_stale(struct acme_zone *az);
/* A re-signing pass in slices starts: a compaction's result is dropped
 * (built with the signatures it renews); a re-keying's is not (it signs
 * everything anew, and the pass ends when it finds the snapshot replaced). */
void compact_resigning(struct acme_zone *az);
/*
 * The signer's keys changed (a rollover step, `ctl key-roll`): the snapshot
 * is built and signed with them beside the loop, as a compaction is, the
 * changes committed meanwhile patched onto it (the served snapshot is
 * patched with the new keys meanwhile: a rollover by double signature
 * publishes a key before and withdraws it after it signs, so what they sign
 * validates with either DNSKEY set), and swapped in on the loop (for a
 * zone secondaries copy, with one serial bump that starts the journal
 * over, as a re-signing pass ends).  Then the zone's acme on_rekeyed
 * callback is called (acme_zone.h).  A compaction under way, built with
 * the old keys, is dropped and started over with the new ones.  Should
 * the build fail, the snapshot is built whole on the loop as before.
 * 1: under way; a negative errno: not started (no loop), build it now.
 */
int compact_rekey(struct acme_zone *az);
/* On the loop, when the zone leaves it: the eventfd leaves the loop. */
void compact_detach(struct acme_zone *az);
/* Joins a running thread and frees what it made; any thread.  NULL-safe. */
void compact_free(struct acme_zone *az);
