/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The earliest RRSIG expiration of a secondary's copy: the moment its
 * first signature stops validating (core/wire/rrsig_expiry.h says why the
 * earliest of all, and how it is read).  A copy is served as received, so
 * this is the primary's signing as it reached us: a primary that stopped
 * re-signing, or a copy kept past its refreshes, shows here before it
 * breaks.
 *
 * Kept as the copy changes, in time proportional to the change; only a
 * change that removes the last RRSIG at the earliest time reads the whole
 * copy again (a primary that re-signed them all sent them all, so that
 * costs what the transfer did).  Computed when the copy is built or
 * patched, never per scrape.
 */
#include <stdint.h>

#include "core/wire/rrsig_expiry.h"

struct change_list;
struct recset;

/* Reads every RRSIG of rs (a copy loaded, or taken whole by AXFR). */
void copy_sigs_scan(struct rrsig_expiry *s, const struct recset *rs, int64_t now);

/*
 * After a forward recset_apply() of cl to rs (core/zone/recset.h), and
 * before anything else changes rs: s follows what cl added and removed.
 * Falls back to copy_sigs_scan() when cl is not the list rs last applied.
 */
void copy_sigs_applied(struct rrsig_expiry *s, const struct recset *rs,
                       const struct change_list *cl, int64_t now);
