/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The records of one zone in memory (an ACME zone's, or a secondary's
 * copy: xfr/copy_mirror.h): an exact mirror of its SQLite
 * table (loaded once at start, then changed with the same change lists
 * that are committed), indexed by owner name.  UPDATE prerequisites are
 * evaluated here and new snapshots are built from here, so no query ever
 * reads the database.  Process lifetime; malloc'd.
 *
 * The fields are exposed read-only to their users: change them only
 * through recset_apply().
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct change_list;

struct recset_rr {
	uint8_t *rdata;          /* canonical wire form, owned */
	uint16_t rdlen;
	uint32_t ttl;
	int64_t created_at;      /* 0 = from the zone file */
};

struct recset_rrset {
	uint16_t type;
	uint16_t count, cap;
	struct recset_rr *rr;    /* in no particular order */
};

struct recset_name {
	uint8_t *name;           /* lowercase wire form, owned */
	uint8_t name_len;
	uint16_t nsets, capsets;
	uint32_t nrecords;       /* over every type */
	struct recset_rrset *sets;
	struct recset_name *next;   /* hash chain */
	/* Names holding records with a created_at (added by UPDATE), listed so
	 * the stale purge visits those only, not every name of the zone. */
	uint32_t ndated;
	struct recset_name *dated_prev, *dated_next;
};

struct recset;

struct recset *recset_new(void);
void recset_free(struct recset *rs);   /* NULL-safe */

/*
 * Forward: applies the changes in order.  Deleting a missing record is a
 * no-op; adding an existing one replaces its TTL and created_at, as the
 * database does.  Returns 0; -ENOMEM after undoing what it did; -EIO when
 * even the undo ran out of memory (the mirror no longer matches the
 * database: read it again).
 *
 * Reverse: undoes the last forward apply of this same list exactly (what
 * it deleted comes back with its TTL and age, what it replaced gets its
 * old TTL and age back, what it skipped stays as it is).  Returns 0, -EIO
 * when a deleted record could not be re-added (out of memory: read the
 * mirror again), or -EINVAL when `cl` is not the list last applied.
 */
int recset_apply(struct recset *rs, const struct change_list *cl, bool reverse);

/*
 * After a forward recset_apply() of cl (and before anything else changes
 * the set): the index in cl of its first deletion that found no record to
 * delete, or -1 when every deletion removed one (or cl was not the list
 * last applied).  A secondary calls a received IXFR that does this a
 * divergence (xfr/copy_mirror.h).
 */
long recset_first_missed_delete(const struct recset *rs, const struct change_list *cl);
/*
 * After a forward recset_apply() of cl (and before anything else changes
 * the set): what its change i did to the set, 1 added a record, -1 removed
 * one, 0 neither (a deletion that found nothing, an addition that only
 * set a TTL); -EINVAL when cl was not the list last applied.  Lets a caller
 * keep figures over the set in time proportional to the change
 * (xfr/copy_sigs.h).
 */
int recset_change_effect(const struct recset *rs, const struct change_list *cl, size_t i);

/* Adds one record, as a CHANGE_ADD would (used to load the database). */
int recset_add(struct recset *rs, const uint8_t *name, uint16_t type, uint32_t ttl,
               const uint8_t *rdata, uint16_t rdlen, int64_t created_at);

const struct recset_name *recset_find(const struct recset *rs, const uint8_t *name);
const struct recset_rrset *recset_name_rrset(const struct recset_name *n, uint16_t type);
/* The record with this rdata, or NULL. */
const struct recset_rr *recset_rrset_find(const struct recset_rrset *s, const uint8_t *rdata,
                                          uint16_t rdlen);
size_t recset_count(const struct recset *rs);

/* Visits every name; a non-zero return stops the walk and is returned. */
typedef int (*recset_fn)(void *arg, const struct recset_name *n);
int recset_foreach(const struct recset *rs, recset_fn fn, void *arg);
/* A recset_fn: adds every record of the name to a zone_builder (`builder`). */
int recset_add_to_builder(void *builder, const struct recset_name *n);
/*
 * Gives a patch of the served snapshot (core/zone/zone_patch.h) the full
 * contents of `name` as the set holds them now (none: the name goes).
 * Returns 0 (also when the name was declared already), or -errno.
 */
struct zone_patch;
int recset_patch_name(struct zone_patch *p, const struct recset *rs, const uint8_t *name);
/*
 * Patches add to a served zone's arena (zone_patch.h); once they have added
 * as much as its build held, and at least this much, the zone is to be built
 * whole again, which compacts it.
 */
#define RECSET_COMPACT_MIN (4u << 20)
/*
 * A patch of z that gives every name cl changes its full contents in rs now,
 * prepared (signed with signer; NULL for a presigned copy) but not applied:
 * in time proportional to the change.  Returns 0 with the patch in *out;
 * -E2BIG when patches have grown z past RECSET_COMPACT_MIN and its built
 * size (build it whole instead); -EAGAIN for a change a patch does not make
 * (zone_patch.h); another -errno with err filled when it can say more.  On
 * failure *out is NULL; z is untouched either way.
 */
struct zone;
struct zone_signer;
int recset_prepare_patch(struct zone *z, const struct recset *rs, const struct change_list *cl,
                         const struct zone_signer *signer, struct zone_patch **out,
                         char err[256]);
/* Patches grew z past RECSET_COMPACT_MIN and its built size. */
bool recset_compaction_due(const struct zone *z);
/*
 * recset_prepare_patch() whatever z's growth (never -E2BIG): for an owner
 * that compacts beside the loop and patches meanwhile (acme/compact.h).
 */
/*
 * Its first half: the patch of z given the new contents of every name cl
 * touches, not prepared yet (zone_patch_prepare() is the second).
 */
int recset_patch_names(struct zone *z, const struct recset *rs, const struct change_list *cl,
                       struct zone_patch **out);
int recset_prepare_patch_any(struct zone *z, const struct recset *rs,
                             const struct change_list *cl, const struct zone_signer *signer,
                             struct zone_patch **out, char err[256]);
/* Visits only the names with at least one record whose created_at is not 0. */
int recset_foreach_dated(const struct recset *rs, recset_fn fn, void *arg);
