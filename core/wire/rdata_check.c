/* SPDX-License-Identifier: MIT */
/*
 * Rdata wire formats: one table, one walker over it (see rdata_check.h).
 *
 * The walker both checks stored rdata and canonicalises rdata read from a
 * message, so what an UPDATE may store and what a zone may serve are the
 * same rules by construction.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "core/wire/dname.h"
#include "core/wire/rdata_check.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"

/*
 * One letter per field, in order:
 *   n  a domain name                   N  zero or more names, to the end
 *   1 2 4 6 8  that many bytes         a  16 bytes (an IPv6 address)
 *   z  one byte that must be 0 (a format version)
 *   s  a character-string              o  an optional character-string, last
 *   S  one or more character-strings, to the end
 *   x  the rest, possibly empty        X  the rest, at least one byte
 *   b  a 1-byte length and that many bytes; B the same with a length >= 1
 *   t  an NSEC type bitmap, to the end (RFC 4034 4.1.2)
 *   c  a CAA tag: 1-byte length >= 1, then letters and digits (RFC 8659 4.1)
 *   d  a DS digest, whose length the digest type just before it sets
 *   g  an IPSECKEY gateway, of the gateway type two bytes before it (RFC 4025 2.5)
 *   r  an AMTRELAY relay, of the type in the byte before it (RFC 8777 4.2.3)
 *   p  SVCB parameters, to the end (RFC 9460 2.2 and 7)
 *   l  APL items, to the end (RFC 3123 4)
 *   h  the HIP HIT and public key with their lengths (RFC 8005 5)
 *   y  the A6 prefix length, address suffix and prefix name (RFC 2874 3.1.1)
 * Types not listed are opaque (RFC 3597): any bytes are their rdata.
 */
struct format {
	const char *fields;
	uint8_t flags;
};

/* The type's format, from the one record type table (core/wire/rrset.c). */
static struct format format_of(uint16_t type)
{
	struct format f;
	f.fields = rrset_type_rdata_format(type, &f.flags);
	return f;
}

/* One pass over one rdata: reading from msg[pos .. end), writing to out. */
struct walk {
	const uint8_t *msg;
	size_t pos, end;
	bool compressed_ok;
	bool lower;
	uint8_t *out;            /* NULL: check only */
	size_t o, cap;
	const char *why;
	int err;
};

static bool fail(struct walk *w, const char *why)
{
	if (!w->err) {
		w->err = -EBADMSG;
		w->why = why;
	}
	return false;
}

static const char *const SHORT = "the rdata ends before its type's format does";
static const char *const OVERRUN = "a length runs past the end of the rdata";

static bool emit(struct walk *w, const uint8_t *p, size_t n)
{
	if (!w->out)
		return true;
	if (w->o + n > w->cap) {
		w->err = -ENOSPC;
		w->why = "no room for the canonical form";
		return false;
	}
	memcpy(w->out + w->o, p, n);
	w->o += n;
	return true;
}

/* Copies n bytes as they are. */
static bool take(struct walk *w, size_t n, const char *why)
{
	if (w->end - w->pos < n)
		return fail(w, why);
	if (!emit(w, w->msg + w->pos, n))
		return false;
	w->pos += n;
	return true;
}

static bool left(const struct walk *w)
{
	return w->pos < w->end;
}

static bool name(struct walk *w)
{
	uint8_t buf[DNAME_MAX];
	size_t at = w->pos;
	if (!left(w))
		return fail(w, SHORT);
	/* Bounded by the rdata's end: a name never reads past it. */
	int n = dname_unpack(w->msg, w->end, &w->pos, buf);
	if (n < 0)
		return fail(w, "a name is malformed or runs past the end of the rdata");
	/* Uncompressed exactly when it took as many bytes as it has. */
	if (w->pos - at != (size_t)n && !w->compressed_ok)
		return fail(w, "a name is compressed where the format allows none");
	if (w->lower)
		dname_lower(buf);
	return emit(w, buf, (size_t)n);
}

static bool string(struct walk *w)
{
	if (!left(w))
		return fail(w, SHORT);
	return take(w, 1 + (size_t)w->msg[w->pos], "a character-string runs past the end of the rdata");
}

static bool counted(struct walk *w, bool nonempty)
{
	if (!left(w))
		return fail(w, SHORT);
	size_t n = w->msg[w->pos];
	if (nonempty && n == 0)
		return fail(w, "a length that must not be 0 is 0");
	return take(w, 1 + n, OVERRUN);
}

static bool bitmap(struct walk *w)
{
	int prev = -1;
	while (left(w)) {
		if (w->end - w->pos < 2)
			return fail(w, "the type bitmap is cut short");
		int window = w->msg[w->pos];
		size_t n = w->msg[w->pos + 1];
		if (window <= prev)
			return fail(w, "the type bitmap's windows are out of order");
		if (n == 0 || n > 32)
			return fail(w, "a type bitmap window is not 1 to 32 bytes long");
		if (w->end - w->pos < 2 + n)
			return fail(w, OVERRUN);
		if (w->msg[w->pos + 1 + n] == 0)
			return fail(w, "a type bitmap window ends with a zero byte");
		prev = window;
		if (!take(w, 2 + n, OVERRUN))
			return false;
	}
	return true;
}

static bool caa_tag(struct walk *w)
{
	if (!left(w))
		return fail(w, SHORT);
	size_t n = w->msg[w->pos];
	if (n == 0 || w->end - w->pos < 1 + n)
		return fail(w, n ? OVERRUN : "the CAA tag is empty");
	for (size_t i = 1; i <= n; i++) {
		uint8_t c = w->msg[w->pos + i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			return fail(w, "the CAA tag is not letters and digits");
	}
	return take(w, 1 + n, OVERRUN);
}

/* Digest types of the DS registry with a fixed digest size. */
static bool ds_digest(struct walk *w)
{
	uint8_t alg = w->msg[w->pos - 2], digest_type = w->msg[w->pos - 1];
	size_t n = w->end - w->pos, want = 0;
	switch (digest_type) {
	case 0:
		/* Only the "delete DS" CDS of RFC 8078 section 4: 0 0 0 00. */
		if (alg != 0 || n != 1 || w->msg[w->pos] != 0)
			return fail(w, "DS digest type 0 is reserved");
		want = 1;
		break;
	case 1: want = 20; break;   /* SHA-1 */
	case 2: want = 32; break;   /* SHA-256 */
	case 3: want = 32; break;   /* GOST R 34.11-94 */
	case 4: want = 48; break;   /* SHA-384 */
	default:
		if (n == 0)
			return fail(w, SHORT);
		want = n;
		break;
	}
	if (n != want)
		return fail(w, "the DS digest's length does not match its digest type");
	return take(w, n, OVERRUN);
}

/* IPSECKEY gateways and AMTRELAY relays share their types: none, IPv4, IPv6, name. */
static bool gateway(struct walk *w, uint8_t kind)
{
	switch (kind) {
	case 0: return true;
	case 1: return take(w, 4, SHORT);
	case 2: return take(w, 16, SHORT);
	case 3: return name(w);
	default: return fail(w, "unknown gateway type");
	}
}

/* RFC 9460 section 7: the values of the keys it defines. */
static bool svc_value_ok(uint16_t key, const uint8_t *v, size_t n)
{
	switch (key) {
	case 0:   /* mandatory: one or more keys */
		return n > 0 && n % 2 == 0;
	case 1: { /* alpn: one or more non-empty character-strings */
		size_t p = 0;
		if (n == 0)
			return false;
		while (p < n) {
			if (v[p] == 0 || p + 1 + v[p] > n)
				return false;
			p += 1 + (size_t)v[p];
		}
		return true;
	}
	case 2:   /* no-default-alpn */
		return n == 0;
	case 3:   /* port */
		return n == 2;
	case 4:   /* ipv4hint */
		return n > 0 && n % 4 == 0;
	case 6:   /* ipv6hint */
		return n > 0 && n % 16 == 0;
	case 65535:   /* reserved, "invalid key" */
		return false;
	default:
		return true;
	}
}

static bool svc_params(struct walk *w)
{
	long prev = -1;
	while (left(w)) {
		if (w->end - w->pos < 4)
			return fail(w, "an SVCB parameter is cut short");
		uint16_t key = wire_get_u16(w->msg + w->pos);
		size_t n = wire_get_u16(w->msg + w->pos + 2);
		if ((long)key <= prev)
			return fail(w, "SVCB parameter keys are not in increasing order");
		if (w->end - w->pos - 4 < n)
			return fail(w, OVERRUN);
		if (!svc_value_ok(key, w->msg + w->pos + 4, n))
			return fail(w, "an SVCB parameter's value does not match its key");
		prev = key;
		if (!take(w, 4 + n, OVERRUN))
			return false;
	}
	return true;
}

static bool apl_items(struct walk *w)
{
	while (left(w)) {
		if (w->end - w->pos < 4)
			return fail(w, "an APL item is cut short");
		uint16_t family = wire_get_u16(w->msg + w->pos);
		uint8_t prefix = w->msg[w->pos + 2];
		size_t n = w->msg[w->pos + 3] & 0x7F;
		if ((family == 1 && (prefix > 32 || n > 4)) || (family == 2 && (prefix > 128 || n > 16)))
			return fail(w, "an APL item's prefix or address is too long for its family");
		if (!take(w, 4 + n, OVERRUN))
			return false;
	}
	return true;
}

static bool hip_keys(struct walk *w)
{
	if (w->end - w->pos < 4)
		return fail(w, SHORT);
	size_t hit = w->msg[w->pos];
	size_t pk = wire_get_u16(w->msg + w->pos + 2);
	if (hit == 0)
		return fail(w, "the HIP HIT is empty");
	return take(w, 4 + hit + pk, OVERRUN);
}

static bool a6(struct walk *w)
{
	if (!left(w))
		return fail(w, SHORT);
	uint8_t prefix = w->msg[w->pos];
	if (prefix > 128)
		return fail(w, "the A6 prefix length is over 128");
	if (!take(w, 1 + (size_t)(128 - prefix + 7) / 8, SHORT))
		return false;
	return prefix == 0 || name(w);
}

static bool field(struct walk *w, char f)
{
	switch (f) {
	case 'n': return name(w);
	case 'N':
		while (left(w))
			if (!name(w))
				return false;
		return true;
	case '1': case '2': case '4': case '6': case '8':
		return take(w, (size_t)(f - '0'), SHORT);
	case 'a': return take(w, 16, SHORT);
	case 'z':
		if (left(w) && w->msg[w->pos] != 0)
			return fail(w, "the format version is not 0");
		return take(w, 1, SHORT);
	case 's': return string(w);
	case 'o': return !left(w) || string(w);
	case 'S':
		if (!left(w))
			return fail(w, SHORT);
		while (left(w))
			if (!string(w))
				return false;
		return true;
	case 'x': return take(w, w->end - w->pos, SHORT);
	case 'X':
		if (!left(w))
			return fail(w, SHORT);
		return take(w, w->end - w->pos, SHORT);
	case 'b': return counted(w, false);
	case 'B': return counted(w, true);
	case 't': return bitmap(w);
	case 'c': return caa_tag(w);
	case 'd': return ds_digest(w);
	case 'g': return gateway(w, w->msg[w->pos - 2]);
	case 'r': return gateway(w, w->msg[w->pos - 1] & 0x7F);
	case 'p': return svc_params(w);
	case 'l': return apl_items(w);
	case 'h': return hip_keys(w);
	case 'y': return a6(w);
	default: return fail(w, "internal: unknown field letter");
	}
}

static int run(const struct format *f, struct walk *w, const char **why)
{
	if (f->fields) {
		for (const char *p = f->fields; *p && !w->err; p++)
			field(w, *p);
		if (!w->err && w->pos != w->end)
			fail(w, "bytes are left over after the last field");
	} else {
		take(w, w->end - w->pos, SHORT);   /* opaque */
	}
	if (why)
		*why = w->err ? w->why : NULL;
	return w->err ? w->err : (int)w->o;
}

int rdata_check(uint16_t type, const uint8_t *rdata, size_t len, const char **why)
{
	struct walk w = { .msg = rdata, .pos = 0, .end = len };
	struct format f = format_of(type);
	int rc = run(&f, &w, why);
	return rc < 0 ? rc : 0;
}

int rdata_check_canonical(uint16_t type, const uint8_t *msg, size_t msg_len, size_t off,
                          size_t len, uint8_t *out, size_t cap, const char **why)
{
	struct format f = format_of(type);
	if (off > msg_len || msg_len - off < len) {
		if (why)
			*why = OVERRUN;
		return -EBADMSG;
	}
	struct walk w = {
		.msg = msg, .pos = off, .end = off + len,
		.compressed_ok = f.flags & RDATA_DECOMPRESS,
		.lower = f.flags & RDATA_LOWER,
		.out = out, .cap = cap,
	};
	return run(&f, &w, why);
}

size_t rdata_check_cap(uint16_t type, size_t len)
{
	struct format f = format_of(type);
	size_t names = 0;
	if (f.fields && (f.flags & RDATA_DECOMPRESS))
		for (const char *p = f.fields; *p; p++)
			names += *p == 'n';
	/* A 2-byte pointer can stand for up to a whole name. */
	return len + names * DNAME_MAX;
}
