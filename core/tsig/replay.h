/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Refusing replayed TSIG-signed UPDATEs, one memory per key.
 *
 * A captured signed UPDATE verifies again for as long as its time signed
 * is within the fudge (300 s by default): replaying Lego's cleanup deletes
 * a challenge published since.  RFC 8945 section 5.2.3 suggests keeping
 * the last time signed per key and refusing anything older; but Lego sends
 * several UPDATEs within one second, and two clients sharing a key may
 * have clocks a second apart, so "strictly later" would refuse fresh
 * messages.  Instead each key remembers the MACs of the UPDATEs it
 * accepted until their time signed leaves the window (after which the
 * time check refuses them anyway), and refuses a MAC it has seen.  A MAC
 * is compared on the bytes both copies have, so a replay with the MAC cut
 * shorter (still long enough to verify) is caught too.
 *
 * Memory is bounded: past REPLAY_MAX remembered MACs the one signed
 * earliest is forgotten and its time signed becomes a floor: from then on
 * nothing signed at or before it is accepted, since it can no longer be
 * told apart from a replay.  A new memory's floor is the moment it is
 * made (process start): a message signed before it may have been accepted
 * by the process before a restart.  A reload keeps the memory
 * (replay_copy()), so only a restart costs clients anything, and then
 * only a message signed in the seconds before it.
 */
#include <stddef.h>
#include <stdint.h>

#define REPLAY_MAX 1024

struct replay;

/* A memory accepting messages signed at `floor` (unix seconds) or later.  NULL: no memory. */
struct replay *replay_new(uint64_t floor);
void replay_free(struct replay *r);   /* NULL-safe */

/*
 * For an UPDATE whose TSIG has just verified (time signed within `window`
 * seconds of `now`): returns 0 and remembers the MAC, -EALREADY when this
 * MAC was accepted before (a replay), or -ESTALE when it was signed before
 * the floor.
 */
int replay_check(struct replay *r, uint64_t time_signed, uint64_t window, const uint8_t *mac,
                 size_t mac_len, uint64_t now);

/* Makes dst remember what src does (a reload keeps a key's memory). */
void replay_copy(struct replay *dst, const struct replay *src);
