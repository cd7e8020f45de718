/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Every node of a snapshot as it was when the walk began, in slices over
 * several loop rounds, while patches (zone_patch.h) are applied in between.
 *
 * Why: a zone transfer lists a big zone a slice per loop round, so the loop
 * keeps answering; an UPDATE or a purge patches the snapshot the transfer
 * holds meanwhile.  The transfer must still send one version of the zone
 * (the one it started with, RFC 5936 2.2), and it must neither start over
 * after each patch (a stream of UPDATEs would starve it, or force the rest
 * of the list into one long round) nor copy the zone.
 *
 * How: the walk goes over the hash table by whole buckets, so where it is
 * is one bucket number.  zone_patch_apply() tells every walk under way of
 * the nodes it is about to change: a node the walk has not reached yet is
 * handed to `fn` right then, as it still is, and skipped when the walk gets
 * there; a node the patch adds is skipped too.  A patch that grows the hash
 * table moves every node: the buckets walked so far are remembered by the
 * old table's mask, and the walk goes over the new table skipping them.
 *
 * `fn` sees each node of that version once, in no particular order; it
 * must take what it needs from the node then (its RRsets pointer and
 * count), as zone_patch.h says a holder may keep.  It may be called from
 * inside zone_patch_apply(): it must not patch, free or step a walk.  A
 * non-zero return from `fn` ends the walk with that value.
 *
 * Loop thread only, like patches.  The walk holds the snapshot (zone_hold)
 * until it is freed.
 */
#include <stddef.h>

struct zone;
struct zone_node;
struct zone_walk;

typedef int (*zone_walk_fn)(void *arg, const struct zone_node *n);

/* A walk over z from now on; NULL when out of memory. */
struct zone_walk *zone_walk_new(struct zone *z, zone_walk_fn fn, void *arg);

/*
 * Walks on for about `budget` nodes (whole buckets: a little more; empty
 * buckets count for a little).
 * Returns 1 when more remains, 0 when every node was seen, or what `fn`
 * returned (or -ENOMEM) when the walk failed; it stays failed.
 */
int zone_walk_step(struct zone_walk *w, size_t budget);

/* How many patches were applied to the snapshot since the walk began. */
unsigned zone_walk_patches(const struct zone_walk *w);

/* Ends the walk (finished or not) and lets go of its snapshot. */
void zone_walk_free(struct zone_walk *w);
