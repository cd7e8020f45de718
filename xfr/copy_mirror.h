/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A secondary's copy in memory: the recset (core/zone/recset.h) that mirrors
 * the rows of its database (storage/copy.h), kept equal to them through
 * every received transfer.
 *
 * A received IXFR is applied strictly.  RFC 1995 says what a difference
 * is, not what a client does with one that does not fit its copy; we call
 * these a divergence (the primary's version of our serial is not our
 * copy) and the caller takes the whole zone instead:
 *  - a deletion of a record the copy does not hold;
 *  - a difference that does not end at the serial the primary announced.
 * Adding a record the copy already holds is not one: it is how a TTL moves
 * in a condensed difference, and the mirror keeps one record either way.
 *
 * When taking a change back fails (out of memory), the mirror is read
 * again from the database, which never saw the change, as the ACME commit
 * path does with its own mirror (acme/commit.c).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct change_list;
struct db;
struct recset;

/*
 * A new mirror of the rows in db (class IN only).  0 with *out, or -errno;
 * -ECANCELED as soon as *stop is set (NULL: never), which a load on the
 * build's thread (copy_build.h) checks between rows.
 */
int copy_mirror_load(struct db *db, struct recset **out, const atomic_bool *stop);

/*
 * Applies a received IXFR (deletions and additions, in order) to *rs and
 * checks that it leaves the SOA at apex with `serial`.  Returns 0 when
 * applied; -ESTALE for a divergence, described in err, with *rs as it was;
 * -ENOMEM when not applied; -EIO when *rs could not be put back and was
 * read again from db (or, if that failed too, no longer matches db: take
 * an AXFR, which replaces it), with err saying which.
 */
int copy_mirror_apply_ixfr(struct recset **rs, struct db *db, const struct change_list *cl,
                           const uint8_t *apex, uint32_t serial, char err[256]);

/*
 * Takes back the last copy_mirror_apply_ixfr() of cl, which the database
 * never saw.  Returns 0 when undone exactly; 1 when the undo ran out of
 * memory and *rs was read again from db instead; -errno when neither
 * worked (*rs does not match db: take an AXFR, which replaces it).
 */
int copy_mirror_undo(struct recset **rs, struct db *db, const struct change_list *cl);
