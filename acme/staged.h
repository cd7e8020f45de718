/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A large UPDATE committed in stages (issue #26.1).  Its signatures made
 * ahead (presign.h), a 2 000-record UPDATE still took one loop round of
 * 24 ms of CPU to commit: its checks, its SQLite writes, its patch (the
 * most: about 6 ms) and its difference all in one.  An UPDATE of STAGED_MIN changes
 * or more, when commits are made durable beside the loop (group commit,
 * commit.h), is instead committed in stages while it stays held
 * (lockwait.h, its reply later):
 *
 *   1. checked as any UPDATE, its serial bumped, SQLite's write transaction
 *      opened (BEGIN IMMEDIATE: another process's lock makes it wait as any
 *      UPDATE does, nothing written);
 *   2. its records written in that open transaction, STAGED_SLICE a loop
 *      round, on timers, each slice's pages then written to the WAL,
 *      uncommitted (storage/journal.h), so COMMIT does not write them all
 *      in one round (900 pages, 27.5 ms for 2 000 records before);
 *   3. in one round: the mirror changed, the patch given its names; in
 *      the next, prepared (its signatures cached); the served zone
 *      untouched;
 *   4. in the next: the difference appended, COMMIT, the disk sync
 *      started, the patch applied (commit.c's path, the records written
 *      already; prepared again if the snapshot was swapped in between,
 *      and a re-signing step waits meanwhile);
 *   5. the held UPDATE is then handled again: its outcome taken, not
 *      worked out again, and its reply held until the sync covers it.
 *
 * RFC 2136 3.7: until step 4's COMMIT nothing of it is committed for
 * anyone (its pages in the WAL are past the last commit, which readers and
 * a crash ignore: a crash loses all of it, and it was not acknowledged), and until its patch
 * applies every query and transfer sees the zone as it was; step 4 does
 * both in one round, so no reader sees part of it.  While the transaction
 * is open, every other commit of the zone is refused with -EBUSY before it
 * changes anything: the UPDATEs after it wait their turn (lockwait.h), the
 * purge skips its turn.  A stage that fails rolls the transaction back:
 * the UPDATE is answered SERVFAIL, nothing changed.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct acme_zone;
struct change_list;

/* Below this, one round as before: the common case (Lego) is small and fast. */
#define STAGED_MIN 200
/* Records written per loop round: about 1.5 ms of SQLite. */
#define STAGED_SLICE 400

/* Whether cl, checked and about to be committed, is committed in stages. */
bool staged_wanted(const struct acme_zone *az, const struct change_list *cl);
/*
 * Starts: the serial bumped in cl, which the stage takes over (cl is left
 * empty), the transaction opened; `what` says what it changes, for the
 * log.  0; -EBUSY when another process holds the database (nothing done:
 * wait and try again), -EIO or -ENOMEM.  The caller holds the UPDATE
 * (lockwait.h), or cancels the stage when it cannot.
 */
int staged_start(struct acme_zone *az, struct change_list *cl, const char *what);
/* A stage is under way: the held UPDATE waits, and so does every other commit. */
bool staged_busy(const struct acme_zone *az);
/* The transaction is open: no other commit may begin one. */
bool staged_open(const struct acme_zone *az);
/*
 * For an UPDATE of the zone handled again: 1 when a stage is done, with its
 * outcome (0 or a negative errno from the commit), its serial and what it
 * changed, the stage forgotten; 0 when none is.  It is that UPDATE's:
 * lockwait.h hands the zone's held UPDATEs back in turn, and the staged
 * one is first (every later one waits behind it).
 */
int staged_take(struct acme_zone *az, int *result, uint32_t *serial, char *what,
                size_t what_cap);
/* The zone leaves the loop: the transaction rolled back, the stage freed. */
void staged_cancel(struct acme_zone *az);
