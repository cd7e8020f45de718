/* SPDX-License-Identifier: MIT */
/*
 * Walking a snapshot in slices across patches (see zone_walk.h).
 *
 * Which nodes the walk has seen, without a mark in every node: those in
 * the buckets it has gone past (a bucket number per table size: `past`
 * and `mask`/`bucket`), plus the few a patch made it see early or that a
 * patch added (`early`, a small set of node pointers).
 */
#include "core/zone/zone_walk.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/wire/dname.h"
#include "core/zone/zone.h"
#include "core/zone/zone_internal.h"

/* The table only grows, at least twofold each time: 32 sizes at most. */
#define WALK_SIZES 32

struct zone_walk {
	struct zone *z;
	zone_walk_fn fn;
	void *arg;
	struct zone_walk *next;      /* z->walks */
	int err;
	unsigned patches;            /* applied since the start */
	/* The buckets [0, bucket) of the table of `mask` are walked, and so
	 * were [0, past[i].end) of each smaller table before it grew. */
	uint32_t mask, bucket;
	struct {
		uint32_t mask, end;
	} past[WALK_SIZES];
	unsigned n_past;
	/* Nodes seen out of turn, or added after the start: open addressing. */
	const struct zone_node **early;
	size_t n_early, cap_early;
};

static size_t ptr_slot(const void *p, size_t mask)
{
	uint64_t x = (uint64_t)(uintptr_t)p;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x & mask;
}

static bool early_has(const struct zone_walk *w, const struct zone_node *n)
{
	if (!w->cap_early)
		return false;
	size_t mask = w->cap_early - 1;
	for (size_t i = ptr_slot(n, mask); w->early[i]; i = (i + 1) & mask)
		if (w->early[i] == n)
			return true;
	return false;
}

static int early_add(struct zone_walk *w, const struct zone_node *n)
{
	if ((w->n_early + 1) * 2 > w->cap_early) {
		size_t cap = w->cap_early ? w->cap_early * 2 : 64;
		const struct zone_node **v = calloc(cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (size_t k = 0; k < w->cap_early; k++) {
			if (!w->early[k])
				continue;
			size_t i = ptr_slot(w->early[k], cap - 1);
			while (v[i])
				i = (i + 1) & (cap - 1);
			v[i] = w->early[k];
		}
		free(w->early);
		w->early = v;
		w->cap_early = cap;
	}
	size_t mask = w->cap_early - 1;
	size_t i = ptr_slot(n, mask);
	while (w->early[i])
		i = (i + 1) & mask;
	w->early[i] = n;
	w->n_early++;
	return 0;
}

/* Whether a bucket of the current table lies wholly in a smaller table's
 * walked part: its nodes' hashes agree with it on the smaller mask. */
static bool bucket_walked_before(const struct zone_walk *w, uint32_t b)
{
	for (unsigned i = 0; i < w->n_past; i++)
		if ((b & w->past[i].mask) < w->past[i].end)
			return true;
	return false;
}

static bool seen(const struct zone_walk *w, const struct zone_node *n)
{
	uint32_t h = dname_hash(n->name, n->name_len);
	if ((h & w->mask) < w->bucket || bucket_walked_before(w, h & w->mask))
		return true;
	return early_has(w, n);
}

struct zone_walk *zone_walk_new(struct zone *z, zone_walk_fn fn, void *arg)
{
	struct zone_walk *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->z = zone_hold(z);
	w->fn = fn;
	w->arg = arg;
	w->mask = z->bucket_mask;
	w->next = z->walks;
	z->walks = w;
	return w;
}

void zone_walk_free(struct zone_walk *w)
{
	if (!w)
		return;
	for (struct zone_walk **pp = &w->z->walks; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	zone_free(w->z);
	free(w->early);
	free(w);
}

/* A node costs what its callback does; an empty bucket a pointer read
 * (the table has 2 to 4 buckets a node): counted as 1/WALK_BUCKET_SHARE. */
#define WALK_BUCKET_SHARE 16

int zone_walk_step(struct zone_walk *w, size_t budget)
{
	const struct zone *z = w->z;
	size_t cost = 0, limit = budget > SIZE_MAX / WALK_BUCKET_SHARE ? SIZE_MAX
	                                                                : budget * WALK_BUCKET_SHARE;
	while (w->err == 0 && w->bucket <= w->mask && cost < limit) {
		uint32_t b = w->bucket;
		cost++;
		if (!bucket_walked_before(w, b)) {
			for (const struct zone_node *n = z->buckets[b]; n && w->err == 0; n = n->hash_next) {
				cost += WALK_BUCKET_SHARE;
				if (early_has(w, n))
					continue;
				int rc = w->fn(w->arg, n);
				if (rc)
					w->err = rc;
			}
		}
		/* Only now: a failure above leaves the walk failed anyway. */
		w->bucket = b + 1;
	}
	if (w->err)
		return w->err;
	return w->bucket <= w->mask ? 1 : 0;
}

unsigned zone_walk_patches(const struct zone_walk *w)
{
	return w->patches;
}

/* --- what zone_patch_apply() tells the walks --- */

static void walk_before_node(void *arg, const struct zone_node *n, bool added)
{
	struct zone_walk *w = arg;
	if (w->err || (!added && seen(w, n)))
		return;
	if (added) {
		/* Not in the version walked.  Only a node already in the table
		 * can be met by the walk, and an added one cannot be there yet. */
		if (early_add(w, n) < 0)
			w->err = -ENOMEM;
		return;
	}
	/* Before the patch changes it: as it is in the version walked (a node
	 * changed by an earlier patch is in `early` already). */
	int rc = w->fn(w->arg, n);
	if (rc == 0)
		rc = early_add(w, n);
	if (rc)
		w->err = rc;
}

void zone_walks_before_patch(struct zone *z, const struct zone_patch *p)
{
	uint32_t grown = zone_patch_new_mask(p);
	for (struct zone_walk *w = z->walks; w; w = w->next) {
		w->patches++;
		zone_patch_foreach_node(p, walk_before_node, w);
		if (!grown || w->err)
			continue;
		if (w->n_past == WALK_SIZES) {
			w->err = -E2BIG;   /* cannot happen: the mask has 32 bits */
			continue;
		}
		w->past[w->n_past].mask = w->mask;
		w->past[w->n_past].end = w->bucket;
		w->n_past++;
		w->mask = grown;
		w->bucket = 0;
	}
}
