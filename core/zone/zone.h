/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A zone snapshot: looked up by the query path, replaced whole when a
 * reload changes it.  Between queries (one thread: none is in flight) an
 * ACME UPDATE or purge may patch it in place instead, in time proportional
 * to the change: core/zone/zone_patch.h says what a patch changes and how
 * it keeps a query from ever seeing half of one.
 *
 * Building: zone_builder_new() collects records (from a zone file, from
 * SQLite, from geo config), then zone_builder_finish() sorts every RRset,
 * adds empty non-terminals, marks delegations and glue, and calls the
 * optional signer hook, which may add records (DNSKEY, NSEC, CDS) and attach
 * an RRSIG to every authoritative RRset before the snapshot is frozen.
 * Everything lives in the snapshot's own arena and is freed by zone_free().
 *
 * Lookup: exact names through a hash table (cost does not grow with zone
 * size); the canonical order of names is kept for NSEC denial.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/wire/rrset.h"

struct arena;
struct diag;
struct geo_sets;
struct metrics_zone;
struct zone_signer;

enum zone_node_flags {
	ZONE_NODE_APEX = 1 << 0,
	ZONE_NODE_DELEGATION = 1 << 1, /* has NS and is not the apex: a zone cut */
	ZONE_NODE_GLUE = 1 << 2,       /* strictly below a zone cut: not authoritative */
	ZONE_NODE_ENT = 1 << 3,        /* empty non-terminal: exists, holds nothing */
	ZONE_NODE_GEO = 1 << 4,        /* A/AAAA are chosen per client by `geo` */
	ZONE_NODE_NSEC = 1 << 5,       /* carries an NSEC: one of zone->nsec_order */
};

struct zone_node {
	const uint8_t *name;          /* lowercase wire form */
	uint8_t name_len;
	uint8_t flags;
	uint16_t rrset_count;
	struct rrset *rrsets;         /* sorted by type; includes NSEC once signed */
	const struct zone_node *cut;  /* for GLUE nodes: the delegation above */
	const struct geo_sets *geo;   /* for GEO nodes: the answer sets; NULL otherwise */
	struct zone_node *hash_next;
};

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
	/* Authoritative nodes that carry an NSEC, in canonical order. */
	const struct zone_node **nsec_order;
	const uint8_t **nsec_keys;     /* canonical sort keys of nsec_order (see zone.c) */
	uint16_t *nsec_key_len;
	uint32_t nsec_count;
	bool signed_zone;
	uint32_t serial;
	uint64_t expires_at;           /* earliest RRSIG refresh point (unix s); 0 unsigned */
	void *owner_data;              /* opaque pointer for whoever built the zone (acme) */
	struct metrics_zone *metrics;  /* its query counters (process lifetime, by name) */
	double build_seconds;          /* from zone_builder_new() to the frozen snapshot */
	uint32_t refs;                 /* holders: the zone table, and transfers still sending it */
	size_t built_bytes;            /* arena bytes at build; patches only add (zone_patch.h) */
	void *nsec_heap;               /* the NSEC arrays once a patch remade them (malloc'd
	                                  block, freed by zone_free); NULL: in the arena */
	bool resigning;                /* signatures being renewed in slices (zone_patch.h) */
	uint64_t resign_floor;         /* ... and the earliest refresh point patches made meanwhile */
};

/* --- lookup (query path; allocation-free) --- */

const struct zone_node *zone_find(const struct zone *z, const uint8_t *name, size_t len);
/* The same with dname_hash(name, len) already worked out (the question's). */
const struct zone_node *zone_find_hashed(const struct zone *z, const uint8_t *name, size_t len,
                                         uint32_t hash);
const struct rrset *zone_node_rrset(const struct zone_node *n, uint16_t type);
/*
 * Predecessor for NSEC denial: the authoritative node with an NSEC whose
 * name sorts last at or before `name` in canonical order (wraps to the
 * last node when `name` sorts before the apex, which cannot happen for
 * names inside the zone).  NULL for unsigned zones.
 */
const struct zone_node *zone_nsec_covering(const struct zone *z, const uint8_t *name);

/*
 * Every node once, in no particular order: pass NULL for the first.  For
 * zone transfers, not the query path.
 */
const struct zone_node *zone_node_next(const struct zone *z, const struct zone_node *prev);

/*
 * A snapshot is freed when its last holder lets go.  The zone table holds
 * the one it serves; a zone transfer holds the snapshot it is sending, so a
 * swap in the middle of a transfer leaves the transfer consistent.  The
 * count is the one mutable field of a snapshot (single-threaded).
 */
struct zone *zone_hold(const struct zone *z);
void zone_free(struct zone *z);   /* drops one hold; NULL-safe */

/* --- building --- */

struct zone_builder;

/*
 * Adds the snapshot's own records to a builder: every RRset but those a
 * signer makes at each build (DNSKEY, CDS, CDNSKEY, NSEC; signatures are
 * not records here), and not the geo answer sets (geo names come from the
 * configuration).  So a snapshot is re-signed from memory, never by reading
 * its zone file again.  Returns 0 or a negative errno.
 */
int zone_copy_loaded(const struct zone *z, struct zone_builder *b);

struct zone_builder *zone_builder_new(const uint8_t *apex);
void zone_builder_free(struct zone_builder *b);   /* NULL-safe; after finish too */
/* The arena the finished zone will own; hooks allocate signatures here. */
struct arena *zone_builder_arena(struct zone_builder *b);
/*
 * Adds one record.  Names are lowercased, rdata copied.  Records outside
 * the apex, meta types and wrong classes are rejected with -EINVAL, rdata
 * that does not match its type's format (core/wire/rdata_check.h) with
 * -EBADMSG; an RRset whose records disagree on TTL takes the lowest (RFC
 * 2181 5.2).
 */
int zone_builder_add(struct zone_builder *b, const uint8_t *owner, uint16_t type,
                     uint32_t ttl, const uint8_t *rdata, uint16_t rdlen);
/* True when `owner` already holds records or is a geo name. */
bool zone_builder_has_name(struct zone_builder *b, const uint8_t *owner);
/*
 * A zone served as received (a secondary's copy): zone_builder_add then
 * takes RRSIG records too, and finish attaches each to the RRset it covers
 * instead of signing; with any, the zone is served as signed (its NSEC
 * records make the denial chain).  Call before adding records.
 */
void zone_builder_set_presigned(struct zone_builder *b);
/*
 * Raises the apex SOA serial to `floor` when floor is newer (RFC 1982),
 * e.g. the clock for a signed zone that secondaries copy: every signing
 * then has a serial of its own.  -ENOENT without an apex.
 */
int zone_builder_raise_serial(struct zone_builder *b, uint32_t floor);
/* Marks `owner` as a geo name; `sets` must live in zone_builder_arena(b). */
int zone_builder_add_geo(struct zone_builder *b, const uint8_t *owner,
                         struct geo_sets *sets);

/* Called by the signer during finish, once names are final. */
typedef int (*zone_rrset_fn)(void *arg, const uint8_t *owner, struct rrset *rrset);
/* Visits every authoritative RRset (not glue, not delegation NS). */
int zone_builder_foreach_rrset(struct zone_builder *b, zone_rrset_fn fn, void *arg);
/* The sorted authoritative names (apex first, canonical order), for NSEC. */
size_t zone_builder_names(struct zone_builder *b, const uint8_t ***names);
/* The types present at an authoritative name, sorted (for NSEC bitmaps). */
size_t zone_builder_types(struct zone_builder *b, const uint8_t *name, uint16_t *types, size_t cap);

/*
 * Freezes the snapshot.  Returns NULL and adds to `d` when the zone is not
 * servable (no SOA at the apex, CNAME beside other data, wildcard in a
 * signed zone, ...).  The builder is consumed either way.
 */
struct zone *zone_builder_finish(struct zone_builder *b, const struct zone_signer *signer,
                                 const char *file, struct diag *d);
