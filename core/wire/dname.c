/* SPDX-License-Identifier: MIT */
/* Domain names in wire form. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/wire/dname.h"
#include "core/wire/wire.h"

static inline uint8_t lower(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') ? (uint8_t)(c + 32) : c;
}

int dname_unpack(const uint8_t *msg, size_t msg_len, size_t *pos, uint8_t *out)
{
	size_t p = *pos;
	size_t out_len = 0;
	size_t end = 0;         /* where the name ends in the message, once known */
	bool jumped = false;
	/*
	 * Pointers must point strictly backwards, to an offset before the
	 * start of the label run that used them: that forbids every loop
	 * without keeping a visited set.
	 */
	size_t limit = p;

	for (;;) {
		if (p >= msg_len)
			return -EBADMSG;
		uint8_t len = msg[p];
		if ((len & 0xC0) == 0xC0) {
			if (p + 1 >= msg_len)
				return -EBADMSG;
			size_t target = (size_t)(len & 0x3F) << 8 | msg[p + 1];
			if (!jumped)
				end = p + 2;
			if (target >= limit)
				return -EBADMSG;
			jumped = true;
			limit = target;
			p = target;
			continue;
		}
		if (len & 0xC0)
			return -EBADMSG;   /* 0x40 and 0x80 label types are obsolete */
		if (out_len + 1 + len > DNAME_MAX)
			return -EBADMSG;
		if (p + 1 + len > msg_len)
			return -EBADMSG;
		out[out_len++] = len;
		if (len == 0) {
			if (!jumped)
				end = p + 1;
			break;
		}
		memcpy(out + out_len, msg + p + 1, len);
		out_len += len;
		p += 1 + (size_t)len;
	}
	*pos = end;
	return (int)out_len;
}

int dname_read(struct wire *w, uint8_t out[DNAME_MAX])
{
	if (w->err)
		return w->err;
	int n = dname_unpack(w->buf, w->cap, &w->pos, out);
	if (n < 0)
		w->err = -EBADMSG;
	return n < 0 ? -EBADMSG : n;
}

size_t dname_len(const uint8_t *name)
{
	const uint8_t *p = name;
	while (*p)
		p += *p + 1;
	return (size_t)(p - name) + 1;
}

int dname_label_count(const uint8_t *name)
{
	int n = 0;
	while (*name) {
		n++;
		name += *name + 1;
	}
	return n;
}

void dname_lower(uint8_t *name)
{
	while (*name) {
		uint8_t len = *name++;
		for (uint8_t i = 0; i < len; i++)
			name[i] = lower(name[i]);
		name += len;
	}
}

bool dname_equal(const uint8_t *a, const uint8_t *b)
{
	for (;;) {
		if (*a != *b)
			return false;
		uint8_t len = *a;
		if (len == 0)
			return true;
		for (uint8_t i = 1; i <= len; i++)
			if (lower(a[i]) != lower(b[i]))
				return false;
		a += len + 1;
		b += len + 1;
	}
}

const uint8_t *dname_skip_labels(const uint8_t *name, int n)
{
	while (n-- > 0 && *name)
		name += *name + 1;
	return name;
}

bool dname_is_subdomain(const uint8_t *name, const uint8_t *zone)
{
	int nl = dname_label_count(name), zl = dname_label_count(zone);
	if (nl < zl)
		return false;
	return dname_equal(dname_skip_labels(name, nl - zl), zone);
}

int dname_canonical_cmp(const uint8_t *a, const uint8_t *b)
{
	/* Compare label by label from the right (RFC 4034 6.1). */
	const uint8_t *la[DNAME_LABELS_MAX], *lb[DNAME_LABELS_MAX];
	int na = 0, nb = 0;
	for (const uint8_t *p = a; *p && na < DNAME_LABELS_MAX; p += *p + 1)
		la[na++] = p;
	for (const uint8_t *p = b; *p && nb < DNAME_LABELS_MAX; p += *p + 1)
		lb[nb++] = p;
	while (na > 0 && nb > 0) {
		const uint8_t *x = la[--na], *y = lb[--nb];
		uint8_t lx = x[0], ly = y[0];
		uint8_t m = lx < ly ? lx : ly;
		for (uint8_t i = 1; i <= m; i++) {
			uint8_t cx = lower(x[i]), cy = lower(y[i]);
			if (cx != cy)
				return cx < cy ? -1 : 1;
		}
		if (lx != ly)
			return lx < ly ? -1 : 1;
	}
	if (na == nb)
		return 0;
	return na < nb ? -1 : 1;
}

static inline uint64_t load_word(const uint8_t *p, size_t n)
{
	uint64_t w = 0;
	memcpy(&w, p, n);
	return w;
}

/*
 * dname_hash works a word at a time (the byte-serial FNV-1a it replaced
 * was a tenth of a static answer's instructions) and ends with a full
 * avalanche (MurmurHash3's fmix64) because the table indexes by the low
 * bits.  Not keyed: the table holds our own names, queries only look up.
 * The last word is zero-padded; dname_unpack_question computes the same
 * value while it lowercases.
 */
static inline uint64_t hash_step(uint64_t h, uint64_t w)
{
	h ^= w;
	return (h << 27 | h >> 37) * 0x87C37B91114253D5u;
}

static inline uint32_t hash_final(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xFF51AFD7ED558CCDu;
	h ^= h >> 33;
	h *= 0xC4CEB9FE1A85EC53u;
	h ^= h >> 33;
	return (uint32_t)h;
}

uint32_t dname_hash(const uint8_t *name, size_t len)
{
	uint64_t h = len * 0x9E3779B97F4A7C15u;
	size_t i = 0;
	for (; i + 8 <= len; i += 8)
		h = hash_step(h, load_word(name + i, 8));
	if (i < len)
		h = hash_step(h, load_word(name + i, len - i));
	return hash_final(h);
}

/*
 * Lowercases 8 bytes at once: a byte is upper case when its top bit is
 * clear and its low seven bits lie in 'A'..'Z'; adding 0x20 is setting
 * bit 5.  Length octets (0..63) are never in that range, so a whole wire
 * name can be lowercased as one byte string.
 */
static inline uint64_t lower_word(uint64_t x)
{
	const uint64_t ones = 0x0101010101010101u, high = ones * 0x80;
	uint64_t low7 = x & ~high;
	uint64_t ge_a = low7 + ones * (0x80 - 'A');      /* top bit: >= 'A' */
	uint64_t gt_z = low7 + ones * (0x80 - 'Z' - 1);  /* top bit: > 'Z' */
	uint64_t upper = ge_a & ~gt_z & ~x & high;
	return x | upper >> 2;
}

int dname_unpack_question(const uint8_t *msg, size_t msg_len, size_t *pos, uint8_t *orig,
                          uint8_t *lower, uint8_t *label_off, uint8_t *labels, uint32_t *hash)
{
	/*
	 * Questions are nearly always uncompressed (a pointer could only aim
	 * into the header): find the end and the labels in one walk, then copy
	 * and lowercase in one pass of 8-byte words; anything unusual goes
	 * through dname_unpack.  One bound serves the walk: the message's end
	 * or DNAME_MAX bytes, whichever comes first.
	 */
	size_t start = *pos, p = start;
	if (start >= msg_len)
		return -EBADMSG;
	size_t end = msg_len - start > DNAME_MAX ? start + DNAME_MAX : msg_len;
	const uint8_t *src = msg + start;
	size_t len;
	uint8_t n = 0;
	for (;;) {
		if (p >= end)
			return -EBADMSG;
		uint8_t l = msg[p];
		if (l == 0) {
			len = p + 1 - start;
			*pos = p + 1;
			break;
		}
		if (l & 0xC0) {
			int r = dname_unpack(msg, msg_len, pos, orig);
			if (r < 0)
				return r;
			len = (size_t)r;
			src = orig;
			/* Labels from the copy: a compressed name's offsets are its own. */
			n = 0;
			for (size_t o = 0; orig[o]; o += orig[o] + 1u)
				label_off[n++] = (uint8_t)o;
			break;
		}
		label_off[n++] = (uint8_t)(p - start);
		p += 1 + (size_t)l;
	}
	*labels = n;
	/* Whole words, then the tail as a word zero-padded past the name (the
	 * hash's convention): loaded so that it ends at the name's last byte,
	 * never past the message, when the name is at least a word long. */
	uint64_t h = len * 0x9E3779B97F4A7C15u, w;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		memcpy(&w, src + i, 8);
		memcpy(orig + i, &w, 8);
		w = lower_word(w);
		memcpy(lower + i, &w, 8);
		h = hash_step(h, w);
	}
	if (i < len) {
		size_t rest = len - i;
		if (len >= 8) {
			memcpy(&w, src + len - 8, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			w >>= 8 * (8 - rest);
#else
			w <<= 8 * (8 - rest);
#endif
		} else {
			w = load_word(src, rest);
		}
		memcpy(orig + i, &w, 8);
		w = lower_word(w);
		memcpy(lower + i, &w, 8);
		h = hash_step(h, w);
	}
	*hash = hash_final(h);
	return (int)len;
}

int dname_from_str(const char *s, uint8_t *out)
{
	size_t out_len = 0;
	if (s[0] == '.' && s[1] == '\0') {
		out[0] = 0;
		return 1;
	}
	if (s[0] == '\0')
		return -EINVAL;
	while (*s) {
		size_t label_at = out_len++;
		uint8_t len = 0;
		while (*s && *s != '.') {
			uint8_t c;
			if (*s == '\\') {
				s++;
				if (s[0] >= '0' && s[0] <= '9') {
					if (!(s[1] >= '0' && s[1] <= '9' && s[2] >= '0' && s[2] <= '9'))
						return -EINVAL;
					int v = (s[0] - '0') * 100 + (s[1] - '0') * 10 + (s[2] - '0');
					if (v > 255)
						return -EINVAL;
					c = (uint8_t)v;
					s += 3;
				} else if (*s) {
					c = (uint8_t)*s++;
				} else {
					return -EINVAL;
				}
			} else {
				c = (uint8_t)*s++;
			}
			if (len == DNAME_LABEL_MAX || out_len + 1 >= DNAME_MAX)
				return -EINVAL;
			out[out_len++] = lower(c);
			len++;
		}
		if (len == 0)
			return -EINVAL;   /* empty label: "a..b" or a leading dot */
		out[label_at] = len;
		if (*s == '.')
			s++;
	}
	if (out_len + 1 > DNAME_MAX)
		return -EINVAL;
	out[out_len++] = 0;
	return (int)out_len;
}

int dname_to_str(const uint8_t *name, char *out, size_t cap)
{
	size_t n = 0;
	if (*name == 0) {
		if (cap < 2)
			return -ENOSPC;
		out[0] = '.';
		out[1] = '\0';
		return 1;
	}
	while (*name) {
		uint8_t len = *name++;
		for (uint8_t i = 0; i < len; i++) {
			uint8_t c = name[i];
			char buf[5];
			int k;
			if (c == '.' || c == '\\' || c == '"' || c == '(' || c == ')' || c == ';' ||
			    c == '@' || c == '$')
				k = snprintf(buf, sizeof(buf), "\\%c", c);
			else if (c <= 0x20 || c >= 0x7f)
				k = snprintf(buf, sizeof(buf), "\\%03u", c);
			else
				k = snprintf(buf, sizeof(buf), "%c", c);
			if (n + (size_t)k + 1 > cap)
				return -ENOSPC;
			memcpy(out + n, buf, (size_t)k);
			n += (size_t)k;
		}
		name += len;
		if (n + 2 > cap)
			return -ENOSPC;
		out[n++] = '.';
	}
	out[n] = '\0';
	return (int)n;
}
