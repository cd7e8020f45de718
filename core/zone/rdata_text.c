/* SPDX-License-Identifier: MIT */
/*
 * IPSECKEY and CERT from their presentation form (see rdata_text.h).
 */
#include "core/zone/rdata_text.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/conf/base64.h"
#include "core/conf/decimal.h"
#include "core/wire/dname.h"

#define TOKEN_MAX 1024

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The next blank-separated token into tok[TOKEN_MAX]; its length, 0 at the end, -1 too long. */
static int token(const char **p, char tok[TOKEN_MAX])
{
	const char *s = *p;
	size_t n = 0;
	while (is_blank(*s))
		s++;
	while (*s && !is_blank(*s)) {
		if (n + 1 >= TOKEN_MAX)
			return -1;
		tok[n++] = *s++;
	}
	tok[n] = '\0';
	*p = s;
	return (int)n;
}

/* A mnemonic from the table, or a number up to max. */
struct mnemonic {
	const char *name;
	unsigned value;
};

static bool number_or_name(const char *s, const struct mnemonic *names, unsigned long max,
                           unsigned long *out)
{
	for (const struct mnemonic *m = names; m->name; m++) {
		if (strcasecmp(s, m->name) == 0) {
			*out = m->value;
			return true;
		}
	}
	return decimal_parse(s, max, out);
}

/*
 * A name: absolute, "@", or relative to origin (ldns made "gw" the root's
 * child gw. instead of gw.<origin>).  Lowercased by dname_from_str(), like
 * every name the server stores (ldns kept the case).  Its length or -EINVAL.
 */
static int name(const char *tok, const uint8_t *origin, uint8_t out[DNAME_MAX])
{
	size_t n = strlen(tok);
	if (strcmp(tok, "@") == 0) {
		size_t ol = dname_len(origin);
		memcpy(out, origin, ol);
		return (int)ol;
	}
	size_t bs = 0;   /* backslashes before a final dot: escaped when odd */
	for (size_t i = n - 1; n >= 2 && i > 0 && tok[i - 1] == '\\'; i--)
		bs++;
	bool absolute = n > 0 && tok[n - 1] == '.' && bs % 2 == 0;
	int len = dname_from_str(tok, out);
	if (len < 0)
		return -EINVAL;
	if (!absolute) {
		size_t ol = dname_len(origin);
		if ((size_t)len - 1 + ol > DNAME_MAX)
			return -EINVAL;
		memcpy(out + len - 1, origin, ol);
		len = (int)((size_t)len - 1 + ol);
	}
	return len;
}

/*
 * The rest of the text as base64, blanks between pieces allowed; its decoded
 * length at out[0..cap), 0 when there is none, -1 malformed, -2 too long.
 */
static int base64_rest(const char *p, uint8_t *out, size_t cap)
{
	static char joined[65536 * 4 / 3 + 8];   /* loading is single-threaded */
	size_t n = 0;
	for (; *p; p++) {
		if (is_blank(*p))
			continue;
		if (n + 1 >= sizeof(joined))
			return -2;
		joined[n++] = *p;
	}
	if (!n)
		return 0;
	return base64_decode(joined, n, out, cap);
}

/* RFC 4025 3.1: precedence gateway-type algorithm gateway public-key */
static int ipseckey(const char *p, const uint8_t *origin, uint8_t *out, size_t cap,
                    char err[256])
{
	char tok[TOKEN_MAX];
	unsigned long prec, gtype, alg;
	if (cap < 3 + DNAME_MAX)
		return -EINVAL;
	if (token(&p, tok) <= 0 || !decimal_parse(tok, 255, &prec)) {
		snprintf(err, 256, "expected the precedence, a number from 0 to 255");
		return -EINVAL;
	}
	if (token(&p, tok) <= 0 || !decimal_parse(tok, 3, &gtype)) {
		snprintf(err, 256, "expected the gateway type, 0 (none), 1 (IPv4), 2 (IPv6) or 3 (a name)");
		return -EINVAL;
	}
	if (token(&p, tok) <= 0 || !decimal_parse(tok, 255, &alg)) {
		snprintf(err, 256, "expected the algorithm, a number from 0 to 255");
		return -EINVAL;
	}
	out[0] = (uint8_t)prec;
	out[1] = (uint8_t)gtype;
	out[2] = (uint8_t)alg;
	size_t n = 3;
	int tl = token(&p, tok);
	bool ok = tl > 0;
	if (ok && gtype == 0)
		ok = strcmp(tok, ".") == 0;
	else if (ok && gtype == 1)
		ok = inet_pton(AF_INET, tok, out + n) == 1 && (n += 4);
	else if (ok && gtype == 2)
		ok = inet_pton(AF_INET6, tok, out + n) == 1 && (n += 16);
	else if (ok) {
		int len = name(tok, origin, out + n);
		ok = len > 0 && (n += (size_t)len);
	}
	if (!ok) {
		static const char *const what[] = { "\".\"", "an IPv4 address", "an IPv6 address",
		                                    "a domain name" };
		snprintf(err, 256, "expected the gateway: %s for gateway type %lu", what[gtype], gtype);
		return -EINVAL;
	}
	int klen = base64_rest(p, out + n, cap - n);
	if (klen < 0 || (klen == 0 && alg != 0) || (klen > 0 && alg == 0)) {
		snprintf(err, 256, alg == 0 ? "expected no public key with algorithm 0"
		                            : "expected the public key in base64");
		return -EINVAL;
	}
	return (int)(n + (size_t)klen);
}

/* RFC 4398 2.1 */
static const struct mnemonic cert_types[] = {
	{ "PKIX", 1 }, { "SPKI", 2 }, { "PGP", 3 }, { "IPKIX", 4 }, { "ISPKI", 5 }, { "IPGP", 6 },
	{ "ACPKIX", 7 }, { "IACPKIX", 8 }, { "URI", 253 }, { "OID", 254 }, { NULL, 0 },
};

/* The DNSSEC algorithm numbers (IANA registry), by their mnemonics. */
static const struct mnemonic algorithms[] = {
	{ "RSAMD5", 1 }, { "DH", 2 }, { "DSA", 3 }, { "RSASHA1", 5 }, { "DSA-NSEC3-SHA1", 6 },
	{ "RSASHA1-NSEC3-SHA1", 7 }, { "RSASHA256", 8 }, { "RSASHA512", 10 }, { "ECC-GOST", 12 },
	{ "ECDSAP256SHA256", 13 }, { "ECDSAP384SHA384", 14 }, { "ED25519", 15 }, { "ED448", 16 },
	{ "INDIRECT", 252 }, { "PRIVATEDNS", 253 }, { "PRIVATEOID", 254 }, { NULL, 0 },
};

/* RFC 4398 2.2: type key-tag algorithm certificate */
static int cert(const char *p, uint8_t *out, size_t cap, char err[256])
{
	char tok[TOKEN_MAX];
	unsigned long type, tag, alg;
	if (cap < 5)
		return -EINVAL;
	if (token(&p, tok) <= 0 || !number_or_name(tok, cert_types, 65535, &type)) {
		snprintf(err, 256, "expected the certificate type, a mnemonic (PKIX, PGP, ...) or a "
		         "number from 0 to 65535");
		return -EINVAL;
	}
	if (token(&p, tok) <= 0 || !decimal_parse(tok, 65535, &tag)) {
		snprintf(err, 256, "expected the key tag, a number from 0 to 65535");
		return -EINVAL;
	}
	if (token(&p, tok) <= 0 || !number_or_name(tok, algorithms, 255, &alg)) {
		snprintf(err, 256, "expected the algorithm, a mnemonic (RSASHA256, ...) or a number "
		         "from 0 to 255");
		return -EINVAL;
	}
	out[0] = (uint8_t)(type >> 8);
	out[1] = (uint8_t)type;
	out[2] = (uint8_t)(tag >> 8);
	out[3] = (uint8_t)tag;
	out[4] = (uint8_t)alg;
	int clen = base64_rest(p, out + 5, cap - 5);
	if (clen <= 0) {
		snprintf(err, 256, "expected the certificate in base64");
		return -EINVAL;
	}
	return 5 + clen;
}

bool rdata_text_handles(uint16_t type)
{
	return type == RDATA_TEXT_IPSECKEY || type == RDATA_TEXT_CERT;
}

int rdata_text_parse(uint16_t type, const char *text, const uint8_t *origin, uint8_t *out,
                     size_t cap, char err[256])
{
	if (type == RDATA_TEXT_IPSECKEY)
		return ipseckey(text, origin, out, cap, err);
	if (type == RDATA_TEXT_CERT)
		return cert(text, out, cap, err);
	snprintf(err, 256, "no parser for type %u", (unsigned)type);
	return -EINVAL;
}
