/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The update path of an ACME zone: an UPDATE checked (zone, key, RFC 2136
 * prerequisites, policy), turned into a change list, committed to SQLite
 * durably, and the new snapshot built from the in-memory mirror, signed,
 * and swapped into the zone table — before the response is written.
 */
#include <stdbool.h>
#include <stdint.h>

struct acme;
struct acme_key;
struct acme_zone;
struct change_list;
struct query;
struct zone;

/* A new snapshot from the in-memory records (which mirror the database);
 * NULL with err when it cannot be served. */
struct zone *commit_build(struct acme_zone *az, char err[256]);
/*
 * Makes a change: the serial bump is appended, the mirror changed, the
 * served snapshot's patch prepared or a new snapshot built (so a change
 * that cannot be served is never committed), the difference computed, the
 * records and the difference committed durably in one transaction, and
 * only then the patch applied or the snapshot swapped in.  Any failure
 * leaves the database, the mirror and the served zone as they were.
 * `reset` empties the journal instead of appending to it (the first
 * signing after a start: secondaries hold the signatures of the previous
 * run, which no difference describes).  `whole` builds the snapshot whole
 * even where a patch would do (a serial bump for new signatures).
 * Returns 0 (serial: the new one) or a negative errno.
 */
int commit_change(struct acme_zone *az, struct change_list *cl, uint32_t *serial, bool reset,
                  bool whole);
/*
 * A change of nothing but the serial (durable, journaled, announced): new
 * signatures need a new serial when secondaries copy the zone.
 */
int commit_bump_serial(struct acme_zone *az, bool reset, char err[256]);
/*
 * Renews the snapshot's due signatures: in slices over loop rounds, in
 * place (zone_patch.h), when it can; else rebuilt and re-signed whole and
 * swapped in (with a new serial, journaled, when secondaries copy the zone).
 */
int commit_rebuild(struct acme_zone *az, char err[256]);
/*
 * Handles an UPDATE whose TSIG (if any) was verified and matched to `key`
 * (NULL: unsigned).  The response's RCODE goes in q->rcode; returns 0
 * (NOERROR: committed, or nothing to change) or a negative errno:
 * -EBADMSG FORMERR, -ENOENT NOTAUTH (not our zone) or a prerequisite's
 * NXDOMAIN/NXRRSET, -EEXIST YXDOMAIN/YXRRSET, -ERANGE NOTZONE, -EACCES
 * REFUSED, -ENOMEM or the commit's error SERVFAIL.
 */
int commit_update(struct acme *a, struct query *q, const struct acme_key *key, uint64_t now);
