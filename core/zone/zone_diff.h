/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The difference between two snapshots of one zone, as a zone transfer
 * sees them: every record, each RRSIG as a record of its own, and a geo
 * name's transfer fallback A/AAAA (geo_sets_fallback).  This is what an
 * IXFR (RFC 1995) sends and what the journal keeps.
 *
 * Because signatures are cached by RRset content, a rebuild after one
 * UPDATE changes only the touched RRset, its RRSIG, the NSEC records (and
 * their RRSIGs) around it, and the SOA with its RRSIG: the difference stays
 * small whatever the zone's size.
 *
 * The blob is self-contained and position-independent (it is stored in
 * SQLite as is):
 *
 *   "ZD1\0"  u32 serial_from  u32 serial_to  u32 n_del  u32 n_add
 *   then n_del + n_add records: owner (uncompressed wire name), u16 type,
 *   u32 ttl, u16 rdlength, rdata
 *
 * all big-endian.  The first deleted record is the old SOA and the first
 * added one is the new SOA, as in an IXFR.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct zone;
struct zone_patch;

#define ZONE_DIFF_HEADER 20

/*
 * Computes the difference old -> new into a malloc'd blob (*out, *len; the
 * caller frees it).  Returns 0, -ENOMEM, or -EINVAL when the two are not
 * the same zone.
 */
int zone_diff(const struct zone *old, const struct zone *new, uint8_t **out, size_t *len);
/*
 * The same for a patch prepared on `old` and not yet applied
 * (core/zone/zone_patch.h): only the names the patch changes are compared,
 * each before and after, so the cost is the change's, not the zone's.
 */
int zone_diff_patch(const struct zone *old, const struct zone_patch *p, uint8_t **out,
                    size_t *len);

struct zone_diff_rr {
	bool add;                  /* false: deleted */
	const uint8_t *owner;      /* points into the blob */
	uint16_t type;
	uint32_t ttl;
	uint16_t rdlen;
	const uint8_t *rdata;      /* points into the blob */
};

/* The header fields; -EBADMSG when the blob is not one. */
int zone_diff_header(const uint8_t *blob, size_t len, uint32_t *from, uint32_t *to,
                     uint32_t *n_del, uint32_t *n_add);
/*
 * Calls fn for each record, deletions first, in blob order.  A non-zero
 * return from fn stops the walk and is returned; -EBADMSG when the blob is
 * malformed (checked before any call).
 */
typedef int (*zone_diff_fn)(void *arg, const struct zone_diff_rr *rr);
int zone_diff_walk(const uint8_t *blob, size_t len, zone_diff_fn fn, void *arg);
