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
 *
 * struct zone is opaque: read it through the accessors below.
 *
 * What a published snapshot may still change, and what it may not:
 *  - Frozen while queries read it: the names, nodes, RRsets, RRSIGs, the
 *    NSEC chain, the apex, SOA, serial and refresh point.  Only between
 *    queries may an ACME change patch them, all at once (zone_patch.h).
 *  - Mutable, written on the query path by the event loop only (one
 *    thread): the geo answer sets hanging off ZONE_NODE_GEO nodes — the
 *    rule's decision cache (core/geo/geo_rule.h) and geo pairs built and
 *    signed on first use into the snapshot's arena (core/zone/geo_sets.h).
 *    They are caches: losing them changes no answer.  That is why
 *    zone_node.geo is const here while geo_sets_choose writes through it.
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
	ZONE_NODE_NSEC = 1 << 5,       /* carries an NSEC: one of the zone's NSEC order (in an
	                                  unsigned zone that keeps one: of its name order) */
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

struct zone;

/* --- lookup (query path; allocation-free) --- */

const struct zone_node *zone_find(const struct zone *z, const uint8_t *name, size_t len);
/* The same with dname_hash(name, len) already worked out (the question's). */
const struct zone_node *zone_find_hashed(const struct zone *z, const uint8_t *name, size_t len,
                                         uint32_t hash);
/* The node's RRset of a type, or NULL.  Inline: every answer asks it at
 * least once, and the call cost as much as the scan. */
static inline const struct rrset *zone_node_rrset(const struct zone_node *n, uint16_t type)
{
	/* A handful of types per node: a linear scan beats a binary search. */
	for (uint16_t i = 0; i < n->rrset_count; i++) {
		if (n->rrsets[i].type == type)
			return &n->rrsets[i];
		if (n->rrsets[i].type > type)
			break;
	}
	return NULL;
}
/*
 * Predecessor for NSEC denial: the authoritative node with an NSEC whose
 * name sorts last at or before `name` in canonical order (wraps to the
 * last node when `name` sorts before the apex, which cannot happen for
 * names inside the zone).  NULL for unsigned zones.
 */
const struct zone_node *zone_nsec_covering(const struct zone *z, const uint8_t *name);

/*
 * Every node once, in no particular order: pass NULL for the first.  Not
 * the query path; a walk spread over loop rounds, with patches in between,
 * is zone_walk.h's.
 */
const struct zone_node *zone_node_next(const struct zone *z, const struct zone_node *prev);

/*
 * A snapshot is freed when its last holder lets go.  The zone table holds
 * the one it serves; a zone transfer holds the snapshot it is sending, so a
 * swap in the middle of a transfer leaves the transfer consistent, and so
 * does a patch (zone_patch.h, "Held snapshots", says what a holder may
 * keep).  The count is changed on the loop only (single-threaded).
 */
struct zone *zone_hold(const struct zone *z);
void zone_free(struct zone *z);   /* drops one hold; NULL-safe */
/* How many hold it: 1 when only its owner does, so it may be freed on
 * another thread (no one else can take a hold of a snapshot not served). */
unsigned zone_refs(const struct zone *z);

/* --- reading a snapshot --- */

const uint8_t *zone_apex(const struct zone *z);        /* lowercase wire form */
size_t zone_apex_len(const struct zone *z);
const char *zone_name(const struct zone *z);           /* presentation, trailing dot */
const struct zone_node *zone_apex_node(const struct zone *z);
const struct rrset *zone_soa(const struct zone *z);    /* the apex SOA, always present */
uint32_t zone_serial(const struct zone *z);
bool zone_is_signed(const struct zone *z);
uint32_t zone_nsec_count(const struct zone *z);        /* names that carry an NSEC */
/* Earliest RRSIG refresh point (unix seconds); 0 for an unsigned zone. */
uint64_t zone_expires_at(const struct zone *z);
/*
 * The earliest Signature Expiration (unix seconds) among the RRSIGs a zone
 * signed here serves: what a validator meets first (core/wire/rrsig_expiry.h).
 * Kept up to date by the build, patches and renewal steps, not computed
 * when asked.  0 for an unsigned zone, and for a copy served as received
 * (the secondary keeps a copy's: xfr/copy_sigs.h).  While a re-sign pass
 * renews the earliest signatures (zone_patch.h), the earliest from before
 * the pass until it ends.  Geo pairs signed on first use (beyond 64 sites,
 * geo_sets.h) are not counted: the snapshot is not told of them.
 */
int64_t zone_signature_expiry(const struct zone *z);
/* Signatures its build made anew rather than took from the signer's cache
 * (0 for an unsigned zone, or one whose every signature was cached). */
uint64_t zone_signatures_made(const struct zone *z);
/* Its query counters (core/conf/metrics.h); NULL when it has no name. */
struct metrics_zone *zone_metrics(const struct zone *z);
/* Seconds from zone_builder_new() to the frozen snapshot. */
double zone_build_seconds(const struct zone *z);
/* Arena bytes the build held (patches add to it: zone_patch_growth()). */
size_t zone_built_bytes(const struct zone *z);
/* True while its signatures are being renewed in slices (zone_patch.h). */
bool zone_resigning(const struct zone *z);
/* Visits every node in no particular order; stops at a non-zero return. */
int zone_foreach_node(const struct zone *z, int (*fn)(void *arg, const struct zone_node *n),
                      void *arg);

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
/*
 * Why adding this record would make the zone unservable, or NULL: a
 * wildcard owning NS or DNAME (RFC 4592 4.2, 4.4), a name below a DNAME,
 * a DNAME beside a CNAME or a second DNAME (RFC 6672 2.4).  For loaders
 * that can say so at the record's line; zone_builder_finish() checks the
 * same rules again for every way in.
 */
const char *zone_builder_conflict(struct zone_builder *b, const uint8_t *owner, uint16_t type,
                                  const uint8_t *rdata, uint16_t rdlen);
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
 * An unsigned zone that will be patched (an ACME zone without `dnssec`,
 * zone_patch.h): finish keeps its authoritative names in canonical order,
 * as a signed zone keeps its NSEC order, so a patch can tell whether a
 * name has names below it.  No NSEC is made; answers are as without it.
 * Costs about 40 bytes a name.  A signed zone keeps its order anyway.
 */
void zone_builder_keep_order(struct zone_builder *b);
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
 * servable (no SOA at the apex, CNAME beside other data, a name below
 * a DNAME, a wildcard geo name, ...).  The builder is consumed either way.
 */
struct zone *zone_builder_finish(struct zone_builder *b, const struct zone_signer *signer,
                                 const char *file, struct diag *d);
