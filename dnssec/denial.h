/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The NSEC chain of a snapshot (RFC 4034 section 4, RFC 4035 section 2.3).
 *
 * NSEC rdata: next owner name (lowercase, uncompressed) | type bitmap.
 * The bitmap (RFC 4034 section 4.1.2) splits the 16-bit type space into
 * 256 windows by the high byte; each window present is written as
 *   window number (1) | bitmap length 1..32 (1) | bitmap
 * where bit 0 (the top bit of the first byte) is type low-byte 0, and the
 * bitmap is cut after its last non-zero byte.  Windows come in increasing
 * order and empty ones are left out.
 *
 * Every authoritative name gets one NSEC pointing at the next name in
 * canonical order; the last points back at the apex.  Its bitmap lists the
 * types at the name plus RRSIG and NSEC; at a delegation (NS below the
 * apex) only NS, DS, RRSIG and NSEC, since anything else there is not ours.
 * Names without any type (empty non-terminals) get no NSEC: they are
 * covered by their neighbours.
 */
#include <stddef.h>
#include <stdint.h>

struct zone_builder;
struct zone_patch;

/* Longest bitmap: 256 windows of 2 + 32 bytes. */
#define DENIAL_BITMAP_MAX (256 * 34)

/*
 * Writes the type bitmap of `types` (any order, duplicates allowed) to out.
 * Returns its length (0 for no types), or -ENOSPC.
 */
int denial_bitmap(const uint16_t *types, size_t n, uint8_t *out, size_t cap);

/* NSEC rdata: `next` (lowercased on copy) then the bitmap of `types`. */
int denial_nsec_rdata(const uint8_t *next, const uint16_t *types, size_t n,
                      uint8_t *out, size_t cap);

/*
 * Adds the NSEC chain to a zone being finished, with the given TTL (the
 * caller passes min(SOA TTL, SOA minimum), RFC 9077).  Call after every
 * other record (DNSKEY, CDS, ...) is in, so the bitmaps include them.
 * Returns 0 or a negative errno with a message in err.
 */
int denial_build(struct zone_builder *b, uint32_t ttl, char err[256]);

/*
 * The same for a patch of a served snapshot (core/zone/zone_patch.h): writes
 * the NSEC of each name the patch lists (a changed name, or one whose next
 * name changed), from its types in the patched state.  0 or -errno with err.
 */
int denial_patch(struct zone_patch *p, const uint8_t *apex, uint32_t ttl, char err[256]);
