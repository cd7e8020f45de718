/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Shared between zone.c (building, lookup), zone_patch.c (patching a
 * served snapshot) and zone_diff.c (differences for IXFR): the snapshot's
 * layout, the canonical sort key of the NSEC order and the SOA serial.
 * Included only from inside core/zone; everyone else reads a snapshot
 * through zone.h's accessors.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/wire/dname.h"
#include "core/wire/rrsig_expiry.h"

struct arena;
struct metrics_zone;
struct rrset;
struct zone_node;
struct zone_patch;
struct zone_walk;

/* The snapshot (see zone.h for what may change after it is published). */
struct zone {
	struct arena *arena;
	const uint8_t *apex;
	uint8_t apex_len;
	char *name;                    /* presentation, with trailing dot */
	const struct zone_node *apex_node;
	const struct rrset *soa;       /* apex SOA, always present */
	struct zone_node **buckets;
	uint32_t bucket_mask;
	uint32_t node_count;
	/* Authoritative nodes that carry an NSEC, in canonical order (an unsigned
	 * zone built with zone_builder_keep_order: those with records). */
	const struct zone_node **nsec_order;
	const uint8_t **nsec_keys;     /* canonical sort keys of nsec_order (see zone.c) */
	uint16_t *nsec_key_len;
	uint32_t nsec_count;
	bool signed_zone;
	uint32_t serial;
	uint64_t expires_at;           /* earliest RRSIG refresh point (unix s); 0 unsigned */
	struct rrsig_expiry sigs;      /* the served RRSIGs' earliest expiration; a zone
	                                  signed here only (zone_signature_expiry) */
	int64_t sigs_now;              /* the signer's clock when sigs was last read whole */
	bool sigs_stale;               /* a re-sign pass renewed the last RRSIGs at
	                                  sigs.earliest: read again when it ends */
	uint64_t sigs_made;            /* signatures its build made anew (zone_signatures_made) */
	struct metrics_zone *metrics;  /* its query counters (process lifetime, by name) */
	double build_seconds;          /* from zone_builder_new() to the frozen snapshot */
	/* Holders: the zone table, and transfers still sending it.  Atomic: a
	 * reload's old table is let go of on another thread (cmd/builder.h)
	 * while a transfer on the loop may still hold one of its zones. */
	_Atomic uint32_t refs;
	size_t built_bytes;            /* arena bytes at build; patches only add (zone_patch.h) */
	void *nsec_heap;               /* the NSEC arrays once a patch remade them (malloc'd
	                                  block, freed by zone_free); NULL: in the arena */
	bool resigning;                /* signatures being renewed in slices (zone_patch.h) */
	uint64_t resign_floor;         /* ... and the earliest refresh point patches made meanwhile */
	bool presigned;                /* served as received: RRSIGs and NSEC are data (a copy) */
	bool nsec_complete;            /* every authoritative name with records carries an NSEC */
	struct zone_walk *walks;       /* walks under way (zone_walk.h): told of each patch */
};

/*
 * A name's canonical sort key: its labels from the rightmost, each followed
 * by a 0 byte, with 0 and 1 bytes inside labels escaped as 1 1 and 1 2.
 * memcmp order of keys is RFC 4034 canonical order of lowercase names (a
 * shorter label, or fewer labels, sort first), so the NSEC search compares
 * with memcmp instead of splitting both names at every step.
 */
#define ZONE_CANON_KEY_MAX (2 * DNAME_MAX + DNAME_LABELS_MAX)
size_t zone_canonical_key(const uint8_t *name, uint8_t *out);

/* Compares key a (length la) with key b (length lb) in canonical order. */
int zone_key_cmp(const uint8_t *a, size_t la, const uint8_t *b, size_t lb);

/* The serial of an SOA RRset (its first record). */
uint32_t zone_soa_serial(const struct rrset *soa);

/*
 * The served RRSIGs' earliest expiration (zone->sigs), kept by whatever
 * changes them: the build, a patch, a renewal step.  The RRSIGs of n RRsets
 * go in or out (read at `now`, the signer's clock); drop returns true when
 * the last at the earliest time went, and zone_sigs_scan reads every RRSIG
 * the snapshot serves again.
 */
void zone_sigs_add(struct rrsig_expiry *e, const struct rrset *sets, uint16_t n, int64_t now);
bool zone_sigs_drop(struct rrsig_expiry *e, const struct rrset *sets, uint16_t n, int64_t now);
void zone_sigs_scan(struct zone *z, int64_t now);

/*
 * Between zone_patch.c and zone_walk.c: before zone_patch_apply() changes
 * anything, every walk under way over the snapshot hears of the nodes the
 * patch changes (zone_walk.h says why).
 */
void zone_walks_before_patch(struct zone *z, const struct zone_patch *p);
/* Each node a prepared patch changes, removes (`added` false: the node as
 * it is before the patch) or adds (`added` true). */
void zone_patch_foreach_node(const struct zone_patch *p,
                             void (*fn)(void *arg, const struct zone_node *n, bool added),
                             void *arg);
/* The hash table's mask after the patch when it grows the table, else 0. */
uint32_t zone_patch_new_mask(const struct zone_patch *p);
