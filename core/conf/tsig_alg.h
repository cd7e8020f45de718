/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The TSIG algorithms (RFC 8945 section 6), in one table: the name an
 * operator writes, the wire name, the digest OpenSSL's HMAC takes, and the
 * MAC size.  The config parser reads names with it, core/tsig/tsig.c signs and
 * verifies with it, `geoacme keygen` sizes new secrets with it.  It lives
 * in core/conf because the config names algorithms; it links no crypto.
 */
#include <stddef.h>
#include <stdint.h>

enum tsig_alg {
	TSIG_HMAC_SHA1 = 1, TSIG_HMAC_SHA224, TSIG_HMAC_SHA256, TSIG_HMAC_SHA384, TSIG_HMAC_SHA512,
};

/* What Lego sends and keygen makes secrets for (one MAC's worth of bytes,
 * as RFC 8945 section 6 recommends). */
#define TSIG_ALG_DEFAULT TSIG_HMAC_SHA256
#define TSIG_MAC_MAX 64            /* the largest MAC in the table: SHA-512 */
#define TSIG_SECRET_MAX 128        /* longest secret a key may have, bytes */
#define TSIG_FUDGE_DEFAULT 300     /* seconds, RFC 8945 section 10 */

/* "hmac-sha256", any case, with or without a trailing dot; 0 when unknown. */
enum tsig_alg tsig_alg_from_str(const char *s);
/* The algorithm named by a lowercase wire name ("\x0bhmac-sha256"), or 0. */
enum tsig_alg tsig_alg_from_name(const uint8_t *name);
/* The wire name of an algorithm ("" when unknown). */
const uint8_t *tsig_alg_name(enum tsig_alg alg);
const char *tsig_alg_str(enum tsig_alg alg);        /* "hmac-sha256"; "unknown" */
const char *tsig_alg_digest(enum tsig_alg alg);     /* "SHA256"; NULL when unknown */
size_t tsig_alg_mac_size(enum tsig_alg alg);        /* full MAC bytes; 0 when unknown */
/* "hmac-sha1, hmac-sha224, ... or hmac-sha512", for messages. */
const char *tsig_alg_list(void);
