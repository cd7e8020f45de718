/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * DS records (RFC 4034 section 5, RFC 4509 SHA-256, RFC 6605 SHA-384):
 * what the parent zone publishes to vouch for our DNSKEY.
 *
 * DS rdata: key tag (2) | algorithm (1) | digest type (1) | digest, where
 * digest = H(owner name in canonical wire form | DNSKEY rdata).
 *
 * Two presentations:
 *  - text, as `dnssec-dsfromkey -2 -f - ZONE` prints it:
 *      example.com. IN DS 12345 13 2 9C0F...   (uppercase hex)
 *  - the JSON body of a deSEC RRset API request (POST or PUT to
 *    /api/v1/domains/PARENT/rrsets/):
 *      {"subname": "acme", "type": "DS", "ttl": 3600, "records": ["12345 13 2 9c0f..."]}
 *    deSEC hosts the registered domain and its subnames, so we assume the
 *    parent is the zone minus its first label (acme.example.com lives in
 *    example.com; subname "acme"); records use lowercase hex, which is
 *    how deSEC canonicalises them.  A one-label zone gets subname "".
 */
#include <stddef.h>
#include <stdint.h>

enum { DS_DIGEST_SHA256 = 2, DS_DIGEST_SHA384 = 4 };

#define DS_RDATA_MAX (4 + 48)
#define DS_TEXT_MAX 1200    /* owner (escaped) + fields + 96 hex digits */

/*
 * DS rdata for `dnskey` (rdata) at `owner` (wire form; lowercased for the
 * digest).  Returns the length, -EINVAL for an unknown digest type or a
 * DNSKEY shorter than 4 bytes, -ENOSPC, or -EIO.
 */
int ds_rdata(const uint8_t *owner, const uint8_t *dnskey, size_t dnskey_len,
             uint8_t digest_type, uint8_t *out, size_t cap);

/* "<owner> IN DS <tag> <alg> <type> <HEX>" (no newline).  Length or -ENOSPC. */
int ds_format_text(const uint8_t *owner, const uint8_t *ds, size_t len, char *out, size_t cap);

/*
 * deSEC (https://desec.io) hosts registered domains and the names under
 * them, never a top-level domain.  Its bulk endpoint, PATCH
 * /api/v1/domains/<parent>/rrsets/, takes an array of RRset objects whose
 * `subname` is the owner relative to <parent>.
 *
 * ds_format_desec writes one such object (no brackets, no newline) for the
 * DS at `owner`, which must be strictly below `parent`.  Length, -EINVAL
 * or -ENOSPC.
 */
int ds_format_desec(const uint8_t *owner, const uint8_t *parent, const uint8_t *ds, size_t len,
                    uint32_t ttl, char *out, size_t cap);

/*
 * The deSEC domain that holds the delegation of `owner`, without a public
 * suffix list: the name minus its first label (acme.example.net ->
 * example.net), written to parent[DNAME_MAX].  -EDOM when that would be a
 * top-level domain or the root (example.com: its DS goes to the registry,
 * through the registrar, not to deSEC).  Under a multi-label public suffix
 * (example.co.uk) the rule cannot tell: the caller lets the user name the
 * parent.  Returns the parent's wire length.
 */
int ds_desec_parent(const uint8_t *owner, uint8_t *parent);

/* A name in presentation form without the final dot ("." for the root). */
int ds_desec_name(const uint8_t *name, char *out, size_t cap);
