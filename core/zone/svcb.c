/* SPDX-License-Identifier: MIT */
/*
 * SVCB/HTTPS rdata: presentation <-> wire, and the wire rules.  See svcb.h.
 */
#include "core/zone/svcb.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/conf/base64.h"
#include "core/wire/dname.h"

#define SVCB_KEY_RESERVED 65535
#define VALUE_MAX 65535
#define PARAMS_MAX 64      /* distinct keys in one record */

static const char *const key_names[] = {
	"mandatory", "alpn", "no-default-alpn", "port", "ipv4hint", "ech", "ipv6hint", "dohpath",
};
#define KEYS_NAMED (sizeof(key_names) / sizeof(key_names[0]))

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* A key mnemonic or keyNNNNN (no leading zeros) of length n; -1 unknown. */
static long key_parse(const char *s, size_t n)
{
	for (size_t k = 0; k < KEYS_NAMED; k++)
		if (strlen(key_names[k]) == n && strncmp(s, key_names[k], n) == 0)
			return (long)k;
	if (n < 4 || n > 8 || strncmp(s, "key", 3) != 0 || (s[3] == '0' && n > 4))
		return -1;
	long v = 0;
	for (size_t i = 3; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v <= 65535 ? v : -1;
}

static void key_text(unsigned key, char *out, size_t cap)
{
	if (key < KEYS_NAMED)
		snprintf(out, cap, "%s", key_names[key]);
	else
		snprintf(out, cap, "key%u", key);
}

/*
 * One <character-string> at *p (quoted or not), escapes decoded into
 * out[cap].  Stops at the closing quote, or at a blank when unquoted.
 * Returns the length or -1 (bad escape, unterminated quote, too long).
 */
static long charstring(const char **p, uint8_t *out, size_t cap)
{
	const char *s = *p;
	bool quoted = *s == '"';
	size_t n = 0;
	if (quoted)
		s++;
	for (;;) {
		char c = *s;
		if (c == '\0') {
			if (quoted)
				return -1;
			break;
		}
		if (quoted ? c == '"' : is_blank(c))
			break;
		uint8_t b;
		if (c == '\\') {
			if (isdigit((unsigned char)s[1])) {
				if (!isdigit((unsigned char)s[2]) || !isdigit((unsigned char)s[3]))
					return -1;
				int v = (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
				if (v > 255)
					return -1;
				b = (uint8_t)v;
				s += 4;
			} else if (s[1]) {
				b = (uint8_t)s[1];
				s += 2;
			} else {
				return -1;
			}
		} else {
			b = (uint8_t)c;
			s++;
		}
		if (n == cap)
			return -1;
		out[n++] = b;
	}
	if (quoted)
		s++;   /* the closing quote */
	*p = s;
	return (long)n;
}

/*
 * The next item of a decoded value-list (Appendix A.1): up to an unescaped
 * comma, with "\," and "\\" (any "\X") unescaped.  Returns its length, -1
 * on a dangling backslash; *pos moves past the comma.
 */
static long list_item(const uint8_t *v, size_t vlen, size_t *pos, uint8_t *out, size_t cap)
{
	size_t i = *pos, n = 0;
	while (i < vlen && v[i] != ',') {
		uint8_t b = v[i++];
		if (b == '\\') {
			if (i == vlen)
				return -1;
			b = v[i++];
		}
		if (n == cap)
			return -1;
		out[n++] = b;
	}
	*pos = i < vlen ? i + 1 : i;
	if (i < vlen && *pos == vlen)
		return -2;   /* a trailing comma: an empty last item */
	return (long)n;
}

struct param {
	uint16_t key;
	uint16_t len;
	uint8_t *val;
};

static int param_cmp(const void *a, const void *b)
{
	const struct param *x = a, *y = b;
	return (int)x->key - (int)y->key;
}

static int u16_cmp(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/* Turns the decoded value of a registered key into its wire value. */
static long encode_value(unsigned key, const uint8_t *v, size_t vlen, uint8_t *out, size_t cap,
                         char err[256])
{
	uint8_t item[VALUE_MAX];
	size_t pos = 0, n = 0;
	const char *name = key_names[key];
	long il;

	switch (key) {
	case SVCB_KEY_MANDATORY:
	case SVCB_KEY_ALPN:
	case SVCB_KEY_IPV4HINT:
	case SVCB_KEY_IPV6HINT:
		if (vlen == 0) {
			snprintf(err, 256, "%s needs a non-empty list", name);
			return -1;
		}
		while (pos < vlen) {
			il = list_item(v, vlen, &pos, item, sizeof(item) - 1);
			if (il == -1) {
				snprintf(err, 256, "%s: bad escape in the list", name);
				return -1;
			}
			if (il <= 0) {
				snprintf(err, 256, "%s: empty item in the list", name);
				return -1;
			}
			item[il] = 0;
			if (key == SVCB_KEY_MANDATORY) {
				long k = key_parse((const char *)item, (size_t)il);
				if (k < 0 || memchr(item, 0, (size_t)il)) {
					snprintf(err, 256, "mandatory: unknown key \"%.40s\"", (const char *)item);
					return -1;
				}
				if (n + 2 > cap)
					goto too_long;
				out[n++] = (uint8_t)(k >> 8);
				out[n++] = (uint8_t)k;
			} else if (key == SVCB_KEY_ALPN) {
				if (il > 255) {
					snprintf(err, 256, "alpn: an id is longer than 255 bytes");
					return -1;
				}
				if (n + 1 + (size_t)il > cap)
					goto too_long;
				out[n++] = (uint8_t)il;
				memcpy(out + n, item, (size_t)il);
				n += (size_t)il;
			} else {
				int af = key == SVCB_KEY_IPV4HINT ? AF_INET : AF_INET6;
				size_t alen = key == SVCB_KEY_IPV4HINT ? 4 : 16;
				if (n + alen > cap)
					goto too_long;
				if (memchr(item, 0, (size_t)il) ||
				    inet_pton(af, (const char *)item, out + n) != 1) {
					snprintf(err, 256, "%s: \"%.60s\" is not an IPv%c address", name,
					         (const char *)item, af == AF_INET ? '4' : '6');
					return -1;
				}
				n += alen;
			}
		}
		if (key == SVCB_KEY_MANDATORY) {
			/* Any order in presentation, ascending on the wire (section 8). */
			uint16_t keys[VALUE_MAX / 2];
			size_t nk = n / 2;
			for (size_t i = 0; i < nk; i++)
				keys[i] = (uint16_t)(out[2 * i] << 8 | out[2 * i + 1]);
			qsort(keys, nk, sizeof(keys[0]), u16_cmp);
			for (size_t i = 0; i < nk; i++) {
				if (i && keys[i] == keys[i - 1]) {
					char kt[16];
					key_text(keys[i], kt, sizeof(kt));
					snprintf(err, 256, "mandatory lists %s twice", kt);
					return -1;
				}
				out[2 * i] = (uint8_t)(keys[i] >> 8);
				out[2 * i + 1] = (uint8_t)keys[i];
			}
		}
		return (long)n;
	case SVCB_KEY_PORT: {
		unsigned long port = 0;
		if (vlen == 0 || vlen > 5) {
			snprintf(err, 256, "port needs a number from 0 to 65535");
			return -1;
		}
		for (size_t i = 0; i < vlen; i++) {
			if (v[i] < '0' || v[i] > '9') {
				snprintf(err, 256, "port needs a number from 0 to 65535");
				return -1;
			}
			port = port * 10 + (v[i] - '0');
		}
		if (port > 65535 || cap < 2) {
			snprintf(err, 256, "port needs a number from 0 to 65535");
			return -1;
		}
		out[0] = (uint8_t)(port >> 8);
		out[1] = (uint8_t)port;
		return 2;
	}
	case SVCB_KEY_ECH: {
		int len = vlen ? base64_decode((const char *)v, vlen, out, cap) : -1;
		if (len <= 0) {
			snprintf(err, 256, "ech needs a non-empty base64 ECHConfigList");
			return -1;
		}
		return len;
	}
	case SVCB_KEY_DOHPATH:
		if (vlen == 0 || v[0] != '/') {
			snprintf(err, 256, "dohpath needs a relative URI template starting with / "
			         "(RFC 9461)");
			return -1;
		}
		if (vlen > cap)
			goto too_long;
		memcpy(out, v, vlen);
		return (long)vlen;
	default:
		return -1;   /* no-default-alpn is handled by the caller */
	}
too_long:
	snprintf(err, 256, "%s: value longer than 65535 bytes", name);
	return -1;
}

/* "\# LEN HEX...": the RFC 3597 generic form. */
static int generic(const char *s, uint8_t *out, size_t cap, char err[256])
{
	char *end = (char *)s;
	s += 2;
	while (is_blank(*s))
		s++;
	/* Digits only: strtoul would take "-1" (wrapped) and "+5". */
	unsigned long len = isdigit((unsigned char)*s) ? strtoul(s, &end, 10) : 0;
	if (!isdigit((unsigned char)*s) || (*end && !is_blank(*end)) || len > 65535) {
		snprintf(err, 256, "\\# needs the rdata length in bytes");
		return -EINVAL;
	}
	size_t n = 0;
	int nibble = -1;
	for (s = end; *s; s++) {
		if (is_blank(*s))
			continue;
		if (!isxdigit((unsigned char)*s)) {
			snprintf(err, 256, "\\# data is not hexadecimal");
			return -EINVAL;
		}
		int v = isdigit((unsigned char)*s) ? *s - '0' : (tolower((unsigned char)*s) - 'a' + 10);
		if (nibble < 0) {
			nibble = v;
			continue;
		}
		if (n == cap) {
			snprintf(err, 256, "\\# data is too long");
			return -EINVAL;
		}
		out[n++] = (uint8_t)(nibble << 4 | v);
		nibble = -1;
	}
	if (nibble >= 0 || n != len) {
		snprintf(err, 256, "\\# says %lu bytes but gives %zu%s", len, n,
		         nibble >= 0 ? " and a half" : "");
		return -EINVAL;
	}
	char why[256];
	if (svcb_check_wire(out, n, why) < 0) {
		snprintf(err, 256, "%s", why);
		return -EINVAL;
	}
	return (int)n;
}

/* The next blank-separated token, copied into tok[cap]; its length or -1. */
static int token(const char **p, char *tok, size_t cap)
{
	const char *s = *p;
	size_t n = 0;
	while (is_blank(*s))
		s++;
	while (*s && !is_blank(*s)) {
		if (*s == '\\' && s[1]) {
			if (n + 2 >= cap)
				return -1;
			tok[n++] = *s++;
		}
		if (n + 1 >= cap)
			return -1;
		tok[n++] = *s++;
	}
	tok[n] = 0;
	*p = s;
	return (int)n;
}

/* The target: absolute, "@", or relative to origin. */
static int target_name(const char *tok, const uint8_t *origin, uint8_t out[DNAME_MAX])
{
	size_t n = strlen(tok);
	if (strcmp(tok, "@") == 0) {
		size_t ol = dname_len(origin);
		memcpy(out, origin, ol);
		dname_lower(out);
		return (int)ol;
	}
	/* Absolute when it ends with a dot that is not escaped. */
	size_t bs = 0;
	for (size_t i = n - 1; n >= 2 && i > 0 && tok[i - 1] == '\\'; i--)
		bs++;
	bool absolute = n > 0 && tok[n - 1] == '.' && bs % 2 == 0;
	int len = dname_from_str(tok, out);
	if (len < 0 || absolute)
		return len;
	size_t ol = dname_len(origin);
	if ((size_t)len - 1 + ol > DNAME_MAX)
		return -EINVAL;
	memcpy(out + len - 1, origin, ol);
	dname_lower(out);
	return (int)((size_t)len - 1 + ol);
}

int svcb_from_text(const char *text, const uint8_t *origin, uint8_t *out, size_t cap,
                   char err[256])
{
	const char *p = text;
	char tok[1024];
	while (is_blank(*p))
		p++;
	if (p[0] == '\\' && p[1] == '#' && (is_blank(p[2]) || !p[2]))
		return generic(p, out, cap, err);

	int tl = token(&p, tok, sizeof(tok));
	char *end;
	unsigned long prio = tl > 0 ? strtoul(tok, &end, 10) : 0;
	if (tl <= 0 || *end || !isdigit((unsigned char)tok[0]) || prio > 65535) {
		snprintf(err, 256, "expected SvcPriority, a number from 0 to 65535");
		return -EINVAL;
	}
	uint8_t target[DNAME_MAX];
	tl = token(&p, tok, sizeof(tok));
	int target_len = tl > 0 ? target_name(tok, origin, target) : -EINVAL;
	if (target_len < 0) {
		snprintf(err, 256, "expected a TargetName after the priority");
		return -EINVAL;
	}

	/* Parameters: decode each into its own slot of one scratch buffer. */
	struct param params[PARAMS_MAX];
	size_t np = 0;
	static uint8_t scratch[2 * 65536];   /* one load at a time: at start, or on the reload builder */
	uint8_t *raw = scratch, *enc = scratch + 65536;
	size_t enc_used = 0;
	for (;;) {
		while (is_blank(*p))
			p++;
		if (!*p)
			break;
		const char *k = p;
		while (*p && *p != '=' && !is_blank(*p))
			p++;
		size_t klen = (size_t)(p - k);
		long key = key_parse(k, klen);
		if (key < 0) {
			snprintf(err, 256, "unknown SvcParamKey \"%.*s\"", (int)(klen > 40 ? 40 : klen), k);
			return -EINVAL;
		}
		char kt[16];
		key_text((unsigned)key, kt, sizeof(kt));
		if (key == SVCB_KEY_RESERVED) {
			snprintf(err, 256, "key65535 is reserved");
			return -EINVAL;
		}
		bool has_value = *p == '=';
		long vlen = 0;
		if (has_value) {
			p++;
			vlen = charstring(&p, raw, 65535);
			if (vlen < 0) {
				snprintf(err, 256, "%s: bad value (escape, quote or length)", kt);
				return -EINVAL;
			}
			if (*p && !is_blank(*p)) {
				snprintf(err, 256, "%s: expected a blank after the value", kt);
				return -EINVAL;
			}
		}
		for (size_t i = 0; i < np; i++) {
			if (params[i].key == key) {
				snprintf(err, 256, "%s appears twice", kt);
				return -EINVAL;
			}
		}
		if (np == PARAMS_MAX) {
			snprintf(err, 256, "more than %d SvcParams", PARAMS_MAX);
			return -EINVAL;
		}
		long wl;
		bool named = klen == strlen(kt) && strncmp(k, kt, klen) == 0 && key < (long)KEYS_NAMED;
		if (!named || key >= (long)KEYS_NAMED) {
			/* keyNNNNN: the value is the raw wire value. */
			if (enc_used + (size_t)vlen > 65536)
				goto too_long;
			memcpy(enc + enc_used, raw, (size_t)vlen);
			wl = vlen;
		} else if (key == SVCB_KEY_NO_DEFAULT_ALPN) {
			if (has_value) {
				snprintf(err, 256, "no-default-alpn takes no value");
				return -EINVAL;
			}
			wl = 0;
		} else {
			if (!has_value) {
				snprintf(err, 256, "%s needs a value", kt);
				return -EINVAL;
			}
			wl = encode_value((unsigned)key, raw, (size_t)vlen, enc + enc_used,
			                  65536 - enc_used, err);
			if (wl < 0)
				return -EINVAL;
		}
		if (wl > VALUE_MAX)
			goto too_long;
		params[np++] = (struct param){ .key = (uint16_t)key, .len = (uint16_t)wl,
		                               .val = enc + enc_used };
		enc_used += (size_t)wl;
	}
	qsort(params, np, sizeof(params[0]), param_cmp);

	size_t n = 0;
	if (cap < 2 + (size_t)target_len)
		goto too_long;
	out[n++] = (uint8_t)(prio >> 8);
	out[n++] = (uint8_t)prio;
	memcpy(out + n, target, (size_t)target_len);
	n += (size_t)target_len;
	for (size_t i = 0; i < np; i++) {
		if (n + 4 + params[i].len > cap || n + 4 + params[i].len > VALUE_MAX)
			goto too_long;
		out[n++] = (uint8_t)(params[i].key >> 8);
		out[n++] = (uint8_t)params[i].key;
		out[n++] = (uint8_t)(params[i].len >> 8);
		out[n++] = (uint8_t)params[i].len;
		memcpy(out + n, params[i].val, params[i].len);
		n += params[i].len;
	}
	char why[256];
	if (svcb_check_wire(out, n, why) < 0) {
		snprintf(err, 256, "%s", why);
		return -EINVAL;
	}
	return (int)n;
too_long:
	snprintf(err, 256, "the record data is longer than 65535 bytes");
	return -EINVAL;
}

/* Length of the uncompressed name at d[0..len), or -1. */
static long name_len(const uint8_t *d, size_t len)
{
	size_t i = 0;
	while (i < len) {
		uint8_t l = d[i];
		if (l == 0)
			return i + 1 <= DNAME_MAX ? (long)(i + 1) : -1;
		if (l > DNAME_LABEL_MAX)
			return -1;
		i += 1 + (size_t)l;
	}
	return -1;
}

/* Checks one value; 0 or -1 with err. */
static int check_value(uint16_t key, const uint8_t *v, uint16_t len, char err[256])
{
	switch (key) {
	case SVCB_KEY_MANDATORY:
		if (len == 0 || len % 2) {
			snprintf(err, 256, "mandatory needs a non-empty list of keys");
			return -1;
		}
		for (uint16_t i = 0; i < len; i += 2) {
			uint16_t k = (uint16_t)(v[i] << 8 | v[i + 1]);
			if (k == SVCB_KEY_MANDATORY) {
				snprintf(err, 256, "mandatory must not list mandatory itself");
				return -1;
			}
			if (i && k <= (uint16_t)(v[i - 2] << 8 | v[i - 1])) {
				snprintf(err, 256, "mandatory keys must be in strictly increasing order, "
				         "without duplicates");
				return -1;
			}
		}
		return 0;
	case SVCB_KEY_ALPN:
		if (len == 0) {
			snprintf(err, 256, "alpn needs a non-empty list");
			return -1;
		}
		for (uint16_t i = 0; i < len; i = (uint16_t)(i + 1 + v[i])) {
			if (v[i] == 0 || (size_t)i + 1 + v[i] > len) {
				snprintf(err, 256, "alpn: malformed id list");
				return -1;
			}
		}
		return 0;
	case SVCB_KEY_NO_DEFAULT_ALPN:
		if (len) {
			snprintf(err, 256, "no-default-alpn takes no value");
			return -1;
		}
		return 0;
	case SVCB_KEY_PORT:
		if (len != 2) {
			snprintf(err, 256, "port needs exactly 2 bytes");
			return -1;
		}
		return 0;
	case SVCB_KEY_IPV4HINT:
	case SVCB_KEY_IPV6HINT: {
		unsigned a = key == SVCB_KEY_IPV4HINT ? 4 : 16;
		if (len == 0 || len % a) {
			snprintf(err, 256, "%s needs a non-empty list of %u-byte addresses",
			         key_names[key], a);
			return -1;
		}
		return 0;
	}
	case SVCB_KEY_ECH:
	case SVCB_KEY_DOHPATH:
		if (len == 0) {
			snprintf(err, 256, "%s needs a value", key_names[key]);
			return -1;
		}
		return 0;
	case SVCB_KEY_RESERVED:
		snprintf(err, 256, "key65535 is reserved");
		return -1;
	default:
		return 0;
	}
}

int svcb_check_wire(const uint8_t *rdata, size_t len, char err[256])
{
	if (len < 3) {
		snprintf(err, 256, "SVCB data shorter than a priority and a name");
		return -EBADMSG;
	}
	long tl = name_len(rdata + 2, len - 2);
	if (tl < 0) {
		snprintf(err, 256, "SVCB TargetName is malformed");
		return -EBADMSG;
	}
	size_t i = 2 + (size_t)tl;
	long prev = -1;
	const uint8_t *mandatory = NULL;
	uint16_t mandatory_len = 0;
	bool has_alpn = false, no_default = false;
	while (i < len) {
		if (len - i < 4) {
			snprintf(err, 256, "SvcParam truncated");
			return -EBADMSG;
		}
		uint16_t key = (uint16_t)(rdata[i] << 8 | rdata[i + 1]);
		uint16_t vl = (uint16_t)(rdata[i + 2] << 8 | rdata[i + 3]);
		if (len - i - 4 < vl) {
			snprintf(err, 256, "SvcParam value runs past the record");
			return -EBADMSG;
		}
		char kt[16];
		key_text(key, kt, sizeof(kt));
		if ((long)key <= prev) {
			snprintf(err, 256, key == prev ? "%s appears twice"
			                               : "SvcParamKeys must be in increasing order (%s)",
			         kt);
			return -EBADMSG;
		}
		if (check_value(key, rdata + i + 4, vl, err) < 0)
			return -EBADMSG;
		if (key == SVCB_KEY_MANDATORY) {
			mandatory = rdata + i + 4;
			mandatory_len = vl;
		}
		has_alpn |= key == SVCB_KEY_ALPN;
		no_default |= key == SVCB_KEY_NO_DEFAULT_ALPN;
		prev = key;
		i += 4 + (size_t)vl;
	}
	if (no_default && !has_alpn) {
		snprintf(err, 256, "no-default-alpn needs alpn in the same record (RFC 9460 7.1.1)");
		return -EBADMSG;
	}
	/* Every mandatory key must be present (section 8). */
	for (uint16_t m = 0; mandatory && m < mandatory_len; m += 2) {
		uint16_t want = (uint16_t)(mandatory[m] << 8 | mandatory[m + 1]);
		bool found = false;
		for (size_t j = 2 + (size_t)tl; j < len;) {
			uint16_t key = (uint16_t)(rdata[j] << 8 | rdata[j + 1]);
			if (key == want)
				found = true;
			j += 4 + (size_t)(rdata[j + 2] << 8 | rdata[j + 3]);
		}
		if (!found) {
			char kt[16];
			key_text(want, kt, sizeof(kt));
			snprintf(err, 256, "mandatory lists %s, which the record does not have", kt);
			return -EBADMSG;
		}
	}
	return 0;
}

/* --- presentation --- */

struct out {
	char *p;
	size_t n, cap;
	bool full;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->n + n >= o->cap) {
		o->full = true;
		return;
	}
	memcpy(o->p + o->n, s, n);
	o->n += n;
	o->p[o->n] = 0;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* One byte inside a quoted char-string; list items also escape ','. */
static void put_byte(struct out *o, uint8_t b, bool in_list)
{
	char buf[8];
	if (b == '"' || b == '\\') {
		snprintf(buf, sizeof(buf), in_list && b == '\\' ? "\\\\\\\\" : "\\%c", b);
	} else if (in_list && b == ',') {
		snprintf(buf, sizeof(buf), "\\\\,");
	} else if (b < 0x21 || b > 0x7e) {
		if (b == ' ')
			snprintf(buf, sizeof(buf), " ");
		else
			snprintf(buf, sizeof(buf), "\\%03u", b);
	} else {
		buf[0] = (char)b;
		buf[1] = 0;
	}
	puts_(o, buf);
}

int svcb_to_text(const uint8_t *rdata, size_t len, char *outp, size_t cap)
{
	struct out o = { outp, 0, cap, cap == 0 };
	char buf[DNAME_MAX * 4 + 8];
	if (cap)
		outp[0] = 0;
	if (len < 3)
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%u ", (unsigned)(rdata[0] << 8 | rdata[1]));
	puts_(&o, buf);
	long tl = name_len(rdata + 2, len - 2);
	if (tl < 0 || dname_to_str(rdata + 2, buf, sizeof(buf)) < 0)
		return -EINVAL;
	puts_(&o, buf);
	for (size_t i = 2 + (size_t)tl; i + 4 <= len;) {
		uint16_t key = (uint16_t)(rdata[i] << 8 | rdata[i + 1]);
		uint16_t vl = (uint16_t)(rdata[i + 2] << 8 | rdata[i + 3]);
		const uint8_t *v = rdata + i + 4;
		i += 4 + (size_t)vl;
		if (i > len)
			return -EINVAL;
		char kt[16];
		key_text(key, kt, sizeof(kt));
		puts_(&o, " ");
		puts_(&o, kt);
		if (key == SVCB_KEY_NO_DEFAULT_ALPN)
			continue;
		puts_(&o, "=\"");
		switch (key) {
		case SVCB_KEY_MANDATORY:
			for (uint16_t k = 0; k + 1 < vl; k += 2) {
				key_text((uint16_t)(v[k] << 8 | v[k + 1]), kt, sizeof(kt));
				if (k)
					puts_(&o, ",");
				puts_(&o, kt);
			}
			break;
		case SVCB_KEY_ALPN:
			for (uint16_t k = 0; k < vl; k = (uint16_t)(k + 1 + v[k])) {
				if (k)
					puts_(&o, ",");
				for (uint16_t j = 1; j <= v[k] && k + j < vl; j++)
					put_byte(&o, v[k + j], true);
			}
			break;
		case SVCB_KEY_PORT:
			snprintf(buf, sizeof(buf), "%u", (unsigned)(v[0] << 8 | v[1]));
			puts_(&o, buf);
			break;
		case SVCB_KEY_IPV4HINT:
		case SVCB_KEY_IPV6HINT: {
			size_t a = key == SVCB_KEY_IPV4HINT ? 4 : 16;
			for (size_t k = 0; k + a <= vl; k += a) {
				if (k)
					puts_(&o, ",");
				inet_ntop(a == 4 ? AF_INET : AF_INET6, v + k, buf, sizeof(buf));
				puts_(&o, buf);
			}
			break;
		}
		case SVCB_KEY_ECH: {
			static const char b64[] =
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
			for (size_t k = 0; k < vl; k += 3) {
				uint32_t x = (uint32_t)v[k] << 16;
				if (k + 1 < vl)
					x |= (uint32_t)v[k + 1] << 8;
				if (k + 2 < vl)
					x |= v[k + 2];
				char q[4] = { b64[x >> 18 & 63], b64[x >> 12 & 63],
				              k + 1 < vl ? b64[x >> 6 & 63] : '=',
				              k + 2 < vl ? b64[x & 63] : '=' };
				put(&o, q, 4);
			}
			break;
		}
		default:
			for (uint16_t k = 0; k < vl; k++)
				put_byte(&o, v[k], false);
			break;
		}
		puts_(&o, "\"");
	}
	return o.full ? -ENOSPC : (int)o.n;
}
