/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * RRSIG generation (RFC 4034 section 3, RFC 6605 for ECDSA P-256).
 *
 * RRSIG rdata, as stored in rrset->sig and sent on the wire:
 *
 *   off  size  field
 *     0     2  type covered
 *     2     1  algorithm (13)
 *     3     1  labels: owner's label count, not counting the root nor a
 *              leading "*" (so a validator can rebuild a wildcard owner)
 *     4     4  original TTL
 *     8     4  signature expiration  (seconds since 1970, modulo 2^32,
 *    12     4  signature inception    compared with serial arithmetic)
 *    16     2  key tag
 *    18     n  signer name: the zone apex, lowercase, never compressed
 *  18+n    64  signature
 *
 * What is signed is that rdata without the signature, followed by every
 * record of the RRset in canonical form and order (RFC 4034 section 6):
 * owner (lowercase, uncompressed) | type | class IN | original TTL |
 * rdlength | rdata.  struct rrset already keeps rdata canonical (names
 * lowercase, records sorted and unique), so we stream it as it is.
 *
 * The signature.  OpenSSL returns ECDSA signatures DER-encoded:
 *   30 len  02 rlen r...  02 slen s...
 * where r and s are minimal big-endian two's-complement INTEGERs: a 0x00
 * is prepended when the top bit is set (33 bytes), and leading zero bytes
 * are dropped (31 bytes or fewer, about 1 time in 256).  DNSSEC (RFC 6605
 * section 4) wants the fixed-size r || s instead, each exactly 32 bytes, so
 * we strip the sign byte and left-pad with zeros.  The result is always 64
 * bytes, which is what makes the RRSIG size predictable.
 */
#include <stddef.h>
#include <stdint.h>

struct key;
struct rrset;

#define SIGN_ECDSA_LEN 64
#define SIGN_RRSIG_FIXED 18
#define SIGN_RRSIG_MAX (SIGN_RRSIG_FIXED + 255 + SIGN_ECDSA_LEN)

/*
 * Signing context: the key and a digest-sign template, set up once and
 * reused for every signature (process lifetime, one per zone).  `signer`
 * is the zone apex in wire form (lowercased on copy).  Keeps its own
 * reference to the key's EVP_PKEY.
 */
struct sign_ctx;
struct sign_ctx *sign_ctx_new(const struct key *k, const uint8_t *signer, char err[256]);
void sign_ctx_free(struct sign_ctx *s);   /* NULL-safe */

/*
 * Signs `rrset` owned by `owner` (wire form; lowercased internally) with
 * validity [inception, expiration] and writes the RRSIG rdata to out.
 * Returns its length, -ENOSPC when cap is too small, -EINVAL for an empty
 * RRset, or -EIO when OpenSSL fails.
 */
int sign_rrset(struct sign_ctx *s, const uint8_t *owner, const struct rrset *rrset,
               uint32_t inception, uint32_t expiration, uint8_t *out, size_t cap);
/* ECDSA operations made by this context so far. */
uint64_t sign_count(const struct sign_ctx *s);

/* DER ECDSA-Sig-Value -> 64-byte r || s.  0, or -EBADMSG. */
int sign_der_to_raw(const uint8_t *der, size_t len, uint8_t out[SIGN_ECDSA_LEN]);

/* The RRSIG label count of an owner name (see "labels" above). */
uint8_t sign_labels(const uint8_t *owner);
