/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * RFC 2136 UPDATE, as pure functions over a parsed message and the zone's
 * records in memory (recset.h; the served snapshot for prerequisites), in
 * the RFC's order: parse (FORMERR), zone
 * section (done by the caller: NOTAUTH/REFUSED), prerequisites (section
 * 3.2), permissions (policy.h), prescan (3.4.1), then the updates (3.4.2)
 * turned into a change list.  Nothing here touches the database or the
 * served snapshot, so a refused or failed UPDATE changes nothing.
 *
 * Errors: each step returns 0 or a negative errno, and puts the response's
 * RCODE in *rcode (RCODE_NOERROR with 0): -EBADMSG FORMERR, -ERANGE
 * NOTZONE (a name outside the zone), -ENOENT NXDOMAIN or NXRRSET, -EEXIST
 * YXDOMAIN or YXRRSET, -ENOMEM SERVFAIL.
 *
 * Decisions where the RFC leaves room:
 * - Adding an RR to an RRset whose TTL differs sets the whole RRset to the
 *   new TTL (RFC 2181 5.2 wants one TTL per RRset; BIND and Knot do the
 *   same).  Adding an identical RR with the same TTL is a no-op; with
 *   another TTL it is that TTL change.
 * - Re-adding an RR that exists keeps its created_at (its age for the
 *   stale purge): the update is a no-op and must not bump the serial.
 * - CNAME: adding a CNAME where other data exists, or other data where a
 *   CNAME exists, is ignored; a CNAME replaces an existing CNAME.
 * - At the apex, deleting the SOA or NS RRset, the SOA record, or the last
 *   NS record is ignored (3.4.2.3-3.4.2.5); the policy refuses SOA, apex
 *   NS and DNSSEC types before it comes to that.
 * - The serial is bumped by one (RFC 1982: 0xFFFFFFFF + 1 = 0) once per
 *   UPDATE that changes something, by update_bump_serial().
 */
#include <stddef.h>
#include <stdint.h>

#include "core/wire/dname.h"

struct arena;
struct change_list;
struct recset;
struct zone;

struct update_rr {
	const uint8_t *name;         /* lowercase wire form, in the arena */
	uint16_t type, rclass;
	uint32_t ttl;
	const uint8_t *rdata;        /* canonical wire form, in the arena */
	uint16_t rdlen;
};

struct update_msg {
	uint8_t zone[DNAME_MAX];     /* ZNAME, lowercase */
	uint16_t ztype, zclass;
	size_t zone_end;             /* offset just past the zone section */
	struct update_rr *prereq;
	size_t n_prereq;
	struct update_rr *upd;
	size_t n_upd;
};

/*
 * Parses the header counts and the zone, prerequisite and update sections
 * (the additional section is not looked at).  -EBADMSG (FORMERR) for a
 * malformed message, ZOCOUNT other than 1 or a ZTYPE other than SOA;
 * -ENOMEM (SERVFAIL).  Memory comes from `a` (the query arena).
 */
int update_parse(const uint8_t *msg, size_t len, struct arena *a, struct update_msg *m,
                 uint8_t *rcode);

/*
 * Section 3.2, against the zone as served (`served`, the current snapshot;
 * NULL: an empty zone): the signer's DNSKEY, CDS, CDNSKEY, NSEC and RRSIG
 * records count like stored ones.  FORMERR, NOTZONE, NXDOMAIN, YXDOMAIN,
 * NXRRSET or YXRRSET.
 */
int update_prereq(const struct zone *served, const uint8_t *apex, const struct update_msg *m,
                  uint8_t *rcode);

/* Section 3.4.1: FORMERR or NOTZONE. */
int update_prescan(const uint8_t *apex, const struct update_msg *m, uint8_t *rcode);

/*
 * Section 3.4.2: appends to cl the deletions and additions that the
 * updates make, in order, against rs (which is not changed).  New records
 * get created_at = now.  Empty cl: the UPDATE changes nothing.  Returns 0
 * or -ENOMEM.
 */
int update_compute(const struct recset *rs, const uint8_t *apex, const struct update_msg *m,
                   int64_t now, struct change_list *cl);

/* RFC 1982 serial addition of 1. */
uint32_t update_serial_next(uint32_t serial);
/*
 * Appends the apex SOA's replacement with the next serial to cl and sets
 * *serial to it.  Returns 0, -ENOENT when the zone has no single SOA, or
 * -ENOMEM.
 */
int update_bump_serial(const struct recset *rs, const uint8_t *apex, struct change_list *cl,
                       uint32_t *serial);
