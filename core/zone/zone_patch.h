/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Patching a served snapshot in place, in time proportional to the change
 * (an ACME UPDATE, a stale purge): the alternative to building the whole
 * zone again, which costs seconds at 100 000 records.
 *
 * What is mutable when.  A snapshot (zone.h) is read by the query path and
 * changed by nobody while a query is being answered.  The server is one
 * thread: between two queries the loop may run a patch, and a patch only
 * ever changes the snapshot in zone_patch_apply(), in one go that cannot
 * fail.  Everything before that (zone_patch_prepare: the new RRsets, the
 * new NSEC records and their signatures, the new NSEC order) is made off to
 * the side, so a patch that is given up (zone_patch_free without apply:
 * the change was refused, or SQLite did not commit it) leaves the served
 * answers exactly as they were.  What prepare made stays in the snapshot's
 * arena as garbage until the next full build; so does what apply replaces
 * (zone_patch_growth() tells how much, so the owner can rebuild — compact —
 * when it grows).
 *
 * The unit of change is a name: zone_patch_name() says "these are now all
 * the records of this name" (as core/wire/change.h lists change records, the
 * caller gives the full new contents of every name a change list touches).
 * The records a signer makes (DNSKEY, CDS, CDNSKEY at the apex, NSEC) are
 * not given: they are kept, and the NSEC records are rewritten through the
 * signer hook (zone_signer.patch) for the changed names and for each name
 * whose next name in the chain changed.  Empty non-terminals come and go
 * with the names below them.
 *
 * A presigned copy (a secondary's, zone_builder_set_presigned) has no
 * signer: every record is data, its NSEC records, DNSKEY and RRSIGs
 * included, so the caller gives each changed name with ALL its new records
 * (RRSIG records too, as zone_builder_add takes them) and prepare is
 * called with no signer.  The RRSIGs are attached to the RRsets they cover
 * as the whole build does (of several covering one RRset, the last given
 * wins); the NSEC order follows the names whose NSEC record comes or goes.
 * The patched copy equals the one zone_builder_finish would make of the
 * same records.  Beyond the structural limits below, prepare answers
 * -EAGAIN for a copy when a given name holds records but no NSEC (or the
 * copy was built with such names: the NSEC order must hold every name),
 * an RRSIG covers no RRset of its name, or the apex would lose its NS,
 * NSEC or single signed SOA; a copy's apex may otherwise change freely
 * (keys, TTLs: nothing is derived from them here), and so may an existing
 * zone cut's records while it keeps its NS (its NSEC changes with the
 * name after it, its DS with the child's keys).
 *
 * Held snapshots.  A snapshot another holder than the zone table has (a
 * transfer still sending it, zone_hold) is patched like any other: a
 * pinned snapshot never forces a whole build.  The holder still sees the
 * zone as it was when it looked, because a patch only ever writes fresh
 * memory and then swaps pointers: it never rewrites an RRset array, an
 * rdata array, rdata bytes or a name that existed before it (make_sets and
 * copy_sets make new arrays; apply points the nodes at them), and nothing
 * in the arena is freed or reused before the last holder lets go
 * (zone_free).  So a holder may keep, across loop turns, pointers to
 * names, to RRsets and to the rdata they point at, taken while it looked
 * (xfr/xfr.c lists the transfer's records at its start); it must not keep
 * a node, walk the hash table or the NSEC order later, or read a node's
 * rrsets field again: those are what a patch changes.  A walk that spans
 * loop rounds goes through zone_walk.h, which apply tells of the nodes it
 * is about to change, so the walk still sees the version it started with.  Renewal steps, which
 * do replace an RRset's RRSIG in place, still wait while a transfer holds
 * the snapshot.
 *
 * Zone cuts.  A name that gains NS below the apex becomes a zone cut
 * (ZONE_NODE_DELEGATION): its NS is left unsigned, its DS and NSEC are
 * signed (RFC 4035 2.2), and so do a cut's later NS and DS changes.  Not
 * patched (-EAGAIN): a new cut with names below it (they would become
 * glue), a name given below a cut (glue), a cut that loses its NS, data
 * beside a cut's NS and DS in a zone we sign (or at a copy's new cut), and
 * a DS at a name that is not a cut (RFC 4035 2.4: refused before it gets
 * here, acme/commit.c).
 *
 * What a patch does not do: anything else that changes the zone's
 * structure beyond plain names — glue, DNAME,
 * a wildcard, a geo name, a CNAME beside other data, in a zone we sign a
 * change at the apex other than its SOA, an SOA whose TTL or minimum
 * changes (every NSEC's TTL follows them) — and an unsigned zone built
 * without zone_builder_keep_order (zone.h).  zone_patch_prepare() answers
 * -EAGAIN for those: build the zone whole instead, which also reports what
 * is wrong, if anything.
 *
 * An unsigned zone of ours built with zone_builder_keep_order is patched
 * with no signer (pass NULL): its name order stands in for the NSEC order
 * (to find names below a name), nothing is signed, and its apex may
 * change as long as it keeps one SOA and its NS.
 *
 * Cost: the changed names and their neighbours, plus one pass over the
 * NSEC order array (a copy of two pointers and a length per signed name,
 * well under a millisecond at 100 000 names) when names join or leave it.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/zone/zone.h"

struct arena;
struct zone_signer;

struct zone_patch;

/* A patch of `z` (which must stay served and unchanged until apply or free). */
struct zone_patch *zone_patch_new(struct zone *z);
/* Gives the patch up, or frees it after apply.  NULL-safe. */
void zone_patch_free(struct zone_patch *p);

/*
 * Declares that `owner`'s records are replaced by those given for it with
 * zone_patch_add() (none: the name is emptied).  Returns 1, or 0 when it
 * was declared already; -EINVAL when owner is not inside the zone, -ENOMEM.
 */
int zone_patch_name(struct zone_patch *p, const uint8_t *owner);
/*
 * One record of a declared name (any order; duplicates merged; TTLs as the
 * builder).  RRSIG only in a presigned copy.  -EBADMSG for rdata that does
 * not match its type's format (core/wire/rdata_check.h), -EINVAL.
 */
int zone_patch_add(struct zone_patch *p, const uint8_t *owner, uint16_t type, uint32_t ttl,
                   const uint8_t *rdata, uint16_t rdlen);

/*
 * Works out the new state and has `signer` rewrite the NSEC records and
 * sign what changed (a presigned copy: no signer, pass NULL).  Returns 0; -EAGAIN when the change is not one a patch
 * makes (see above: build whole); -EINVAL, -ENOMEM or the signer's error
 * with a message in err.  The served zone is unchanged either way.
 */
int zone_patch_prepare(struct zone_patch *p, const struct zone_signer *signer, char err[256]);
/* Makes the prepared change visible.  Cannot fail. */
void zone_patch_apply(struct zone_patch *p);

/* Signatures its prepare made anew rather than took from the signer's
 * cache (as zone_signatures_made() for a build). */
uint64_t zone_patch_signatures_made(const struct zone_patch *p);
/* The serial the patched zone will have (after a successful prepare). */
uint32_t zone_patch_serial(const struct zone_patch *p);
/*
 * After prepare, before apply: calls fn for each name the patch changes
 * with its node as served now and as it will be (NULL where the name is
 * absent), for the IXFR journal (zone_diff_patch).  `after` is a copy that
 * lives until fn returns.  A non-zero return stops the walk.
 */
typedef int (*zone_patch_change_fn)(void *arg, const struct zone_node *before,
                                    const struct zone_node *after);
int zone_patch_foreach_change(const struct zone_patch *p, zone_patch_change_fn fn, void *arg);

/*
 * Bytes patches added to the snapshot's arena since it was built: the new
 * data, and as much again at most of what it replaced (unreachable until
 * the next full build, which is the compaction).
 */
size_t zone_patch_growth(const struct zone *z);

/*
 * Renewing a served snapshot's signatures in slices, instead of building it
 * whole when they reach their refresh point: each step looks at the RRsets
 * of the next hash buckets and has the signer renew the signatures that are
 * due (zone_signer.renew), in place (the RRSIG pointer of an RRset is
 * replaced between two queries; the old one stays valid until then), at
 * most `budget` new signatures per step, so the loop answers queries
 * between steps.  Patches may run between steps: what they sign is new, and
 * what they keep is in a bucket the pass visits (a pass whose hash table
 * grew starts over; what it renewed already is then skipped).
 *
 * While a pass runs, zone_resigning() is true (the caller's timer must not
 * start another; zone_resign_abandon() ends a pass the caller cannot go on
 * with) and the zone keeps its old refresh point; the step that
 * completes the pass sets the earliest refresh point of all the zone's
 * signatures.  A failed step ends the pass (the zone is still due: the
 * next check retries).  `now` is the signer's clock, for a pass that finds
 * nothing signed.  Returns 1 when the pass is complete, 0 when more
 * remains, ZONE_RESIGN_WAIT when a transfer holds the snapshot (nothing was
 * done: a transfer sends the zone as it was; the caller tries again later,
 * not at once, or it would spin the loop until the transfer ends), or
 * -errno with err.
 */
struct zone_resign {
	uint32_t bucket;          /* next bucket to visit */
	uint32_t mask;            /* the table the pass walks (grown: start over) */
	uint64_t refresh_at;      /* earliest refresh point seen so far */
	uint64_t renewed, kept;   /* signatures renewed / still good, this pass */
};
enum { ZONE_RESIGN_WAIT = 2 };
void zone_resign_begin(struct zone *z, struct zone_resign *r);
void zone_resign_abandon(struct zone *z);
int zone_resign_step(struct zone *z, const struct zone_signer *signer, struct zone_resign *r,
                     size_t budget, uint64_t now, char err[256]);

/* --- for the signer hook, during zone_patch_prepare() --- */

/* The arena signatures go to (the snapshot's). */
struct arena *zone_patch_arena(struct zone_patch *p);
/* The SOA the patched zone will have. */
const struct rrset *zone_patch_soa(const struct zone_patch *p);
/*
 * The names whose NSEC must be written, each with its next name in the new
 * chain; arrays owned by the patch.
 */
size_t zone_patch_nsec_names(struct zone_patch *p, const uint8_t *const **owners,
                             const uint8_t *const **nexts);
/* The types at a name in the new state, sorted, signer-made ones included
 * but not NSEC (as zone_builder_types). */
size_t zone_patch_types(struct zone_patch *p, const uint8_t *owner, uint16_t *types,
                        size_t cap);
/* Sets a name's NSEC (one of zone_patch_nsec_names). */
int zone_patch_set_nsec(struct zone_patch *p, const uint8_t *owner, uint32_t ttl,
                        const uint8_t *rdata, uint16_t rdlen);
/* Visits every RRset of the new state that has no signature yet. */
int zone_patch_foreach_unsigned(struct zone_patch *p, zone_rrset_fn fn, void *arg);
/* Counts signatures made anew (zone_patch_signatures_made). */
void zone_patch_count_made(struct zone_patch *p, uint64_t made);
/* The refresh point of the signatures made; the zone keeps the earliest. */
void zone_patch_set_expiry(struct zone_patch *p, uint64_t refresh_at);
