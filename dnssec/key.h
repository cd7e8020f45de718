/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The zone signing key: one ECDSA P-256 key per zone (DNSSEC algorithm 13,
 * RFC 6605), used as a combined signing key (flags 257: zone key + SEP), so
 * the DS in the parent points at the same key that signs every RRset.
 *
 * DNSKEY rdata (RFC 4034 section 2.1), 68 bytes for this algorithm:
 *   flags (2) = 257 | protocol (1) = 3 | algorithm (1) = 13 | public key (64)
 * where the public key is the curve point's X and Y, each 32 bytes
 * big-endian (RFC 6605 section 4; no 0x04 "uncompressed" prefix).
 *
 * Process lifetime: loaded at start, freed at exit.
 */
#include <stddef.h>
#include <stdint.h>

#define KEY_FLAGS 257
#define KEY_PROTOCOL 3
#define KEY_ALGORITHM 13        /* ECDSAP256SHA256 */
#define KEY_PUBLIC_LEN 64
#define KEY_DNSKEY_LEN (4 + KEY_PUBLIC_LEN)

struct key;
struct evp_pkey_st;             /* OpenSSL's EVP_PKEY */

/*
 * Loads a P-256 private key from a PEM file: PKCS#8 ("BEGIN PRIVATE KEY",
 * as `openssl genpkey` and `geoacme keygen` write it) or SEC1 ("BEGIN EC
 * PRIVATE KEY").  Refuses a file that group or other users can access, an
 * encrypted key, and any other key type or curve.  Returns NULL with a
 * message naming the file (and the fix) in err.
 */
struct key *key_load(const char *path, char err[256]);
void key_free(struct key *k);   /* NULL-safe */

/*
 * Creates a new P-256 key and writes it as unencrypted PKCS#8 PEM to
 * `path`, created with mode 0600.  Refuses to overwrite an existing file.
 * Returns 0, or a negative errno with a message in err.
 */
int key_generate(const char *path, char err[256]);

/* The DNSKEY rdata, KEY_DNSKEY_LEN bytes. */
const uint8_t *key_dnskey(const struct key *k);
uint16_t key_tag(const struct key *k);
/* The key, for sign.c; owned by `k`. */
struct evp_pkey_st *key_pkey(const struct key *k);

/* RFC 4034 Appendix B key tag of any DNSKEY rdata (not algorithm 1). */
uint16_t key_tag_of(const uint8_t *dnskey, size_t len);
