/* SPDX-License-Identifier: MIT */
/*
 * DS digest and its two presentations.
 */
#include "dnssec/ds.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "core/wire/dname.h"
#include "core/wire/wire.h"
#include "dnssec/key.h"

int ds_rdata(const uint8_t *owner, const uint8_t *dnskey, size_t dnskey_len,
             uint8_t digest_type, uint8_t *out, size_t cap)
{
	const EVP_MD *md;
	size_t dlen;
	if (digest_type == DS_DIGEST_SHA256) {
		md = EVP_sha256();
		dlen = 32;
	} else if (digest_type == DS_DIGEST_SHA384) {
		md = EVP_sha384();
		dlen = 48;
	} else {
		return -EINVAL;
	}
	if (dnskey_len < 4)
		return -EINVAL;
	if (cap < 4 + dlen)
		return -ENOSPC;

	uint8_t name[DNAME_MAX];
	size_t nlen = dname_len(owner);
	memcpy(name, owner, nlen);
	dname_lower(name);

	wire_set_u16(out, key_tag_of(dnskey, dnskey_len));
	out[2] = dnskey[3];
	out[3] = digest_type;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int got = 0;
	bool good = ctx && EVP_DigestInit_ex(ctx, md, NULL) == 1 &&
	            EVP_DigestUpdate(ctx, name, nlen) == 1 &&
	            EVP_DigestUpdate(ctx, dnskey, dnskey_len) == 1 &&
	            EVP_DigestFinal_ex(ctx, out + 4, &got) == 1 && got == dlen;
	EVP_MD_CTX_free(ctx);
	return good ? (int)(4 + dlen) : -EIO;
}

/* Appends formatted text at *pos; sets *pos past cap on overflow. */
static void put(char *out, size_t cap, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *out, size_t cap, size_t *pos, const char *fmt, ...)
{
	if (*pos >= cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out + *pos, cap - *pos, fmt, ap);
	va_end(ap);
	*pos = n < 0 ? cap : *pos + (size_t)n;
}

static void put_hex(char *out, size_t cap, size_t *pos, const uint8_t *p, size_t n, bool upper)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	if (*pos >= cap)
		return;
	size_t i = 0;
	for (; i < n && *pos + 2 < cap; i++) {
		out[(*pos)++] = digits[p[i] >> 4];
		out[(*pos)++] = digits[p[i] & 15];
		out[*pos] = '\0';
	}
	if (i < n)
		*pos = cap;   /* did not fit */
}

/* "<tag> <alg> <type> <hex>" */
static void put_fields(char *out, size_t cap, size_t *pos, const uint8_t *ds, size_t len,
                       bool upper)
{
	put(out, cap, pos, "%u %u %u ", (unsigned)wire_get_u16(ds), ds[2], ds[3]);
	put_hex(out, cap, pos, ds + 4, len - 4, upper);
}

int ds_format_text(const uint8_t *owner, const uint8_t *ds, size_t len, char *out, size_t cap)
{
	if (len < 5 || cap == 0)
		return -EINVAL;
	char name[DS_TEXT_MAX];
	if (dname_to_str(owner, name, sizeof(name)) < 0)
		return -ENOSPC;
	size_t pos = 0;
	put(out, cap, &pos, "%s IN DS ", name);
	put_fields(out, cap, &pos, ds, len, true);
	return pos < cap ? (int)pos : -ENOSPC;
}

int ds_desec_parent(const uint8_t *owner, uint8_t *parent)
{
	int labels = dname_label_count(owner);
	if (labels < 3)
		return -EDOM;   /* the parent is a top-level domain, or the root */
	const uint8_t *p = dname_skip_labels(owner, 1);
	size_t n = dname_len(p);
	memcpy(parent, p, n);
	return (int)n;
}

int ds_desec_name(const uint8_t *name, char *out, size_t cap)
{
	char s[DS_TEXT_MAX];
	int n = dname_to_str(name, s, sizeof(s));
	if (n < 0)
		return -ENOSPC;
	if (n > 1 && s[n - 1] == '.')
		s[--n] = '\0';
	if ((size_t)n >= cap)
		return -ENOSPC;
	memcpy(out, s, (size_t)n + 1);
	return n;
}

/* A JSON string body: presentation escapes (\. \DDD) keep their
 * backslash, which JSON must escape in turn. */
static void put_json_string(char *out, size_t cap, size_t *pos, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			put(out, cap, pos, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			put(out, cap, pos, "\\u%04x", c);
		else
			put(out, cap, pos, "%c", c);
	}
}

int ds_format_desec(const uint8_t *owner, const uint8_t *parent, const uint8_t *ds, size_t len,
                    uint32_t ttl, char *out, size_t cap)
{
	if (len < 5 || cap == 0 || !dname_is_subdomain(owner, parent) || dname_equal(owner, parent))
		return -EINVAL;
	/* subname: the owner's labels above the parent, in presentation form. */
	int keep = dname_label_count(owner) - dname_label_count(parent);
	uint8_t rel[DNAME_MAX];
	size_t pos = 0;
	const uint8_t *l = owner;
	for (int i = 0; i < keep; i++, l += *l + 1) {
		memcpy(rel + pos, l, (size_t)*l + 1);
		pos += (size_t)*l + 1;
	}
	rel[pos] = 0;
	char sub[DS_TEXT_MAX];
	if (ds_desec_name(rel, sub, sizeof(sub)) < 0)
		return -ENOSPC;
	pos = 0;
	put(out, cap, &pos, "{\"subname\": \"");
	put_json_string(out, cap, &pos, sub);
	put(out, cap, &pos, "\", \"type\": \"DS\", \"ttl\": %u, \"records\": [\"", (unsigned)ttl);
	put_fields(out, cap, &pos, ds, len, false);
	put(out, cap, &pos, "\"]}");
	return pos < cap ? (int)pos : -ENOSPC;
}
