/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The served zones, found by longest suffix.  Process lifetime; the zones
 * in it are snapshots that zone_table_replace() swaps between queries (we
 * are single-threaded, so the old snapshot can be freed at once).
 */
#include <stddef.h>
#include <stdint.h>

struct zone;

struct zone_table;

struct zone_table *zone_table_new(void);
/* Frees the table and every zone in it. */
void zone_table_free(struct zone_table *t);
/* Adds a zone (takes ownership); -EEXIST when the apex is already served. */
int zone_table_add(struct zone_table *t, struct zone *z);
/* Swaps the zone with the same apex for `z` and frees the old one. */
int zone_table_replace(struct zone_table *t, struct zone *z);
/*
 * The same, for a snapshot whose IXFR difference from the one it replaces
 * was made beside the loop (a secondary's copy built whole, xfr/copy_build.h):
 * the patch watcher gets it (diff NULL: the history starts over) instead of
 * the replace watcher, which would compare the two snapshots on the loop.
 */
int zone_table_replace_diffed(struct zone_table *t, struct zone *z, const uint8_t *diff,
                              size_t len);
/*
 * Puts z in place of the zone with its apex without telling the watchers,
 * and returns the one it replaces (the caller frees it; NULL when the apex
 * was not served and z was added, watchers told).  Only for a snapshot
 * that serves the same records and signatures at the same serial (an ACME
 * zone's compaction, acme/compact.h): the IXFR history and NOTIFY have
 * nothing to hear.
 */
struct zone *zone_table_swap(struct zone_table *t, struct zone *z);
/* Stops serving a zone and frees its snapshot (a secondary's copy expired); -ENOENT. */
int zone_table_remove(struct zone_table *t, const uint8_t *apex);
/* The zone whose apex is the longest suffix of `name`, or NULL. */
const struct zone *zone_table_find(const struct zone_table *t, const uint8_t *name);
/*
 * The same for a name whose labels are already known (the question:
 * struct query keeps them), so no walk over it is needed: `len` bytes,
 * `labels` labels starting at label_off[0..labels-1].
 */
const struct zone *zone_table_find_labels(const struct zone_table *t, const uint8_t *name,
                                          size_t len, unsigned labels,
                                          const uint8_t *label_off);
/* The zone with exactly this apex, or NULL. */
const struct zone *zone_table_get(const struct zone_table *t, const uint8_t *apex);
/* The same, to patch in place between queries (core/zone/zone_patch.h). */
struct zone *zone_table_edit(struct zone_table *t, const uint8_t *apex);
size_t zone_table_count(const struct zone_table *t);
/*
 * Calls fn after every add (old NULL) and replace with the snapshot
 * replaced and the one now served; `old` is freed after the call.  The IXFR
 * history and NOTIFY out watch zones this way.  One watcher; NULL removes it.
 */
typedef void (*zone_table_watch_fn)(void *ctx, const struct zone *old, const struct zone *z);
void zone_table_watch(struct zone_table *t, zone_table_watch_fn fn, void *ctx);
/*
 * A zone patched in place (core/zone/zone_patch.h) is no replace: its
 * patcher calls zone_table_patched() after the patch is applied, and the
 * watcher set here (same ctx as zone_table_watch) gets the zone and the
 * patch's IXFR difference (a zone_diff blob; NULL when none was made).
 */
typedef void (*zone_table_patch_fn)(void *ctx, const struct zone *z, const uint8_t *diff,
                                    size_t len);
void zone_table_watch_patches(struct zone_table *t, zone_table_patch_fn fn);
void zone_table_patched(struct zone_table *t, const struct zone *z, const uint8_t *diff,
                        size_t len);
const struct zone *zone_table_at(const struct zone_table *t, size_t i);
