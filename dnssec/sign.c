/* SPDX-License-Identifier: MIT */
/*
 * RRSIG over a canonical RRset with ECDSA P-256 / SHA-256 (algorithm 13).
 */
#include "dnssec/sign.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>

#include "core/conf/metrics.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "dnssec/key.h"

struct sign_ctx {
	EVP_PKEY *pkey;
	/* Initialised once with the key and SHA-256; each signature starts
	 * from a copy, which skips the provider fetch and key checks that a
	 * fresh EVP_DigestSignInit() would repeat. */
	EVP_MD_CTX *tmpl;
	EVP_MD_CTX *work;
	uint8_t signer[DNAME_MAX];
	size_t signer_len;
	uint16_t tag;
	uint64_t count;
};

uint8_t sign_labels(const uint8_t *owner)
{
	int n = dname_label_count(owner);
	/* A wildcard owner is signed as the name it expands from (RFC 4034
	 * 3.1.3), so the "*" label is not counted. */
	if (n > 0 && owner[0] == 1 && owner[1] == '*')
		n--;
	return (uint8_t)n;
}

struct sign_ctx *sign_ctx_new(const struct key *k, const uint8_t *signer, char err[256])
{
	struct sign_ctx *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, 256, "out of memory");
		return NULL;
	}
	s->signer_len = dname_len(signer);
	memcpy(s->signer, signer, s->signer_len);
	dname_lower(s->signer);
	s->tag = key_tag(k);
	s->pkey = key_pkey(k);
	if (!EVP_PKEY_up_ref(s->pkey)) {
		s->pkey = NULL;
		snprintf(err, 256, "cannot reference the signing key");
		goto fail;
	}
	s->tmpl = EVP_MD_CTX_new();
	s->work = EVP_MD_CTX_new();
	if (!s->tmpl || !s->work ||
	    EVP_DigestSignInit(s->tmpl, NULL, EVP_sha256(), NULL, s->pkey) != 1) {
		unsigned long e = ERR_get_error();
		char why[160] = "out of memory";
		if (e)
			ERR_error_string_n(e, why, sizeof(why));
		snprintf(err, 256, "cannot set up ECDSA signing: %s", why);
		goto fail;
	}
	return s;
fail:
	ERR_clear_error();
	sign_ctx_free(s);
	return NULL;
}

void sign_ctx_free(struct sign_ctx *s)
{
	if (!s)
		return;
	EVP_MD_CTX_free(s->tmpl);
	EVP_MD_CTX_free(s->work);
	EVP_PKEY_free(s->pkey);
	free(s);
}

uint64_t sign_count(const struct sign_ctx *s) { return s->count; }

/* One DER INTEGER (short-form length) into a 32-byte big-endian field. */
static int der_integer(const uint8_t **pp, const uint8_t *end, uint8_t out[32])
{
	const uint8_t *p = *pp;
	if (end - p < 2 || p[0] != 0x02 || (p[1] & 0x80) || p[1] == 0)
		return -EBADMSG;
	size_t len = p[1];
	p += 2;
	if ((size_t)(end - p) < len)
		return -EBADMSG;
	*pp = p + len;
	if (p[0] & 0x80)
		return -EBADMSG;   /* negative: never produced for r, s */
	while (len > 0 && p[0] == 0) {   /* the sign byte (and any padding) */
		p++;
		len--;
	}
	if (len > 32)
		return -EBADMSG;
	memset(out, 0, 32 - len);
	memcpy(out + 32 - len, p, len);
	return 0;
}

int sign_der_to_raw(const uint8_t *der, size_t len, uint8_t out[SIGN_ECDSA_LEN])
{
	/* SEQUENCE; P-256 signatures are at most 72 bytes, so the length is
	 * always the one-byte short form. */
	if (len < 2 || der[0] != 0x30 || (der[1] & 0x80) || (size_t)der[1] + 2 != len)
		return -EBADMSG;
	const uint8_t *p = der + 2, *end = der + len;
	if (der_integer(&p, end, out) < 0 || der_integer(&p, end, out + 32) < 0)
		return -EBADMSG;
	return p == end ? 0 : -EBADMSG;
}

int sign_rrset(struct sign_ctx *s, const uint8_t *owner, const struct rrset *rrset,
               uint32_t inception, uint32_t expiration, uint8_t *out, size_t cap)
{
	size_t head = SIGN_RRSIG_FIXED + s->signer_len;
	if (rrset->count == 0 || !rrset->rr)
		return -EINVAL;
	if (cap < head + SIGN_ECDSA_LEN)
		return -ENOSPC;

	/* The canonical record prefix: owner | type | class | TTL | rdlength. */
	uint8_t rr_head[DNAME_MAX + 10];
	size_t olen = dname_len(owner);
	memcpy(rr_head, owner, olen);
	dname_lower(rr_head);
	wire_set_u16(rr_head + olen, rrset->type);
	wire_set_u16(rr_head + olen + 2, CLASS_IN);
	wire_set_u32(rr_head + olen + 4, rrset->ttl);

	wire_set_u16(out, rrset->type);
	out[2] = KEY_ALGORITHM;
	out[3] = sign_labels(rr_head);
	wire_set_u32(out + 4, rrset->ttl);
	wire_set_u32(out + 8, expiration);
	wire_set_u32(out + 12, inception);
	wire_set_u16(out + 16, s->tag);
	memcpy(out + SIGN_RRSIG_FIXED, s->signer, s->signer_len);

	/* Streamed into the digest: no buffer for the signed data, however
	 * large the RRset. */
	if (EVP_MD_CTX_copy_ex(s->work, s->tmpl) != 1 ||
	    EVP_DigestSignUpdate(s->work, out, head) != 1)
		goto fail;
	for (uint16_t i = 0; i < rrset->count; i++) {
		const struct rdata *rd = &rrset->rr[i];
		wire_set_u16(rr_head + olen + 8, rd->len);
		if (EVP_DigestSignUpdate(s->work, rr_head, olen + 10) != 1 ||
		    (rd->len && EVP_DigestSignUpdate(s->work, rd->data, rd->len) != 1))
			goto fail;
	}
	uint8_t der[80];
	size_t der_len = sizeof(der);
	if (EVP_DigestSignFinal(s->work, der, &der_len) != 1)
		goto fail;
	if (sign_der_to_raw(der, der_len, out + head) < 0)
		return -EIO;
	s->count++;
	__atomic_fetch_add(&metrics.signatures_made, 1, __ATOMIC_RELAXED);   /* also from the reload builder */
	return (int)(head + SIGN_ECDSA_LEN);
fail:
	ERR_clear_error();
	return -EIO;
}
