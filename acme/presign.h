/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A large UPDATE's signatures made ahead, in slices (issue #26.1).  An
 * UPDATE of 2 000 records patched the served snapshot in one loop round of
 * 508 ms, most of it ECDSA: the new RRsets, the NSEC records around every
 * new name and their signatures.  An UPDATE with PRESIGN_MIN changes or
 * more, to a signed zone, is instead held (acme/lockwait.h, as for a
 * locked database: its reply waits, and so do the UPDATEs of the zone
 * that come after it, in turn) while loop timers prepare patches of the
 * served snapshot for PRESIGN_SLICE of its names at a time, in canonical
 * order, each given its contents as the UPDATE leaves them, and throw them
 * away: what stays is their signatures, in the signer's cache, keyed by
 * RRset content (dnssec/sigcache.h).  Then the UPDATE is handled again
 * from the start (prerequisites checked against the zone as it is then),
 * committed and patched as any other: its patch finds its signatures
 * cached (each slice also holds the next one's first name, so the NSEC
 * records at the slices' edges are the final ones too), and is answered once that commit is on disk, as any UPDATE (commit.h).
 * RFC 2136 3.7's atomicity holds: nothing of it is served or committed
 * before all of it is.
 *
 * The patches thrown away cost arena growth, as much again as the UPDATE's
 * own patch (compaction reclaims it, compact.h).  While an UPDATE is held
 * for this, lockwait's 2 s bound does not run out.
 */
#include <stdbool.h>

struct acme_zone;
struct change_list;

#define PRESIGN_MIN 64
/* Names per loop round: about three signatures each, a few ms. */
#define PRESIGN_SLICE 24

/*
 * Whether cl, about to be committed, should have its signatures made
 * ahead.  False also right after they were (presign_start's work is done:
 * that flag is used up here, so the handling again commits).
 */
bool presign_wanted(struct acme_zone *az, const struct change_list *cl);
/* Starts making them: 0, or a negative errno (commit at once instead). */
int presign_start(struct acme_zone *az, const struct change_list *cl);
/* An UPDATE of the zone is held while they are made. */
bool presign_busy(const struct acme_zone *az);
/* On the loop, when the zone leaves it: the timer cancelled, what was made freed. */
void presign_cancel(struct acme_zone *az);
