/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Record data checked against its type's wire format (the formats live in
 * the one record type table, core/wire/rrset.c; rdata_check.c walks them),
 * which every way into a zone goes through: an UPDATE
 * (core/wire/msg.c canonicalises with it, acme/update.c checks with it), a zone
 * file line (zone_file.c), a row read back from SQLite (acme_zone.c) and,
 * last, zone_builder_add().  The answer path then reads the names inside
 * NS, CNAME, PTR, MX, SOA and SRV rdata without bounds of its own, and a
 * client drops a whole response over one malformed record, so nothing
 * reaches a snapshot without matching its format:
 *
 * - a name-bearing field is exactly one well-formed name (labels up to 63
 *   bytes, 255 in all, the root label inside the field), never compressed
 *   in stored rdata;
 * - a fixed-size field has exactly its size;
 * - variable fields (character-strings, counted blobs, type bitmaps, SVCB
 *   parameters, APL items, gateways) are walked by their own lengths;
 * - the fields consume the rdata exactly: nothing missing, nothing left.
 *
 * Types the table does not list are opaque (RFC 3597): any bytes.
 */
#include <stddef.h>
#include <stdint.h>

/*
 * Stored (canonical) rdata: returns 0, or -EBADMSG and points *why (when
 * not NULL) at a static sentence saying what is wrong.
 */
int rdata_check(uint16_t type, const uint8_t *rdata, size_t len, const char **why);

/*
 * Rdata as it sits in a message, at msg[off .. off + len): checks it as
 * rdata_check() does, except that names in the types RFC 3597 section 4
 * lets a sender compress may point back into the message, and writes the
 * canonical form to out (RFC 4034 section 6.2: names uncompressed, and
 * lowercased in the types that section lists).  Returns the canonical
 * length, or -EBADMSG (with *why), or -ENOSPC when cap is too small
 * (rdata_check_cap() is always enough).
 */
int rdata_check_canonical(uint16_t type, const uint8_t *msg, size_t msg_len, size_t off,
                          size_t len, uint8_t *out, size_t cap, const char **why);

/* Room rdata_check_canonical() may need: what decompressing can add. */
size_t rdata_check_cap(uint16_t type, size_t len);
