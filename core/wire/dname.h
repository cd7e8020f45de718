/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Domain names in uncompressed wire form: length-prefixed labels ending with
 * the root label 0, at most DNAME_MAX (255) bytes, labels at most 63 bytes.
 * Inside the server every stored name is lowercase, so equality is memcmp;
 * only the question keeps the client's case (we echo it).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DNAME_MAX 255
#define DNAME_LABEL_MAX 63
#define DNAME_LABELS_MAX 128

/*
 * Whether a and b, both len bytes, are the same (stored names are
 * lowercase, so this is name equality).  Inline, in 8-byte words, the last
 * one overlapping the one before so nothing past either name is read: the
 * lookups of the query path compare a name or two per query, and a call to
 * memcmp cost more than the comparison.
 */
static inline uint64_t dname_word_(const uint8_t *p)
{
	uint64_t w;
	__builtin_memcpy(&w, p, 8);
	return w;
}
static inline bool dname_same(const uint8_t *a, const uint8_t *b, size_t len)
{
	if (len < 8) {
		for (size_t i = 0; i < len; i++)
			if (a[i] != b[i])
				return false;
		return true;
	}
	for (size_t i = 0; i + 8 < len; i += 8)
		if (dname_word_(a + i) != dname_word_(b + i))
			return false;
	return dname_word_(a + len - 8) == dname_word_(b + len - 8);
}

/*
 * Reads a possibly compressed name from a message starting at *pos, writes
 * the uncompressed name to out[DNAME_MAX] and advances *pos past the name as
 * it sits in the message.  Rejects pointer loops, forward pointers, labels
 * over 63 bytes, names over 255 bytes and the 0x40/0x80 label types.
 * Returns the name's length or -EBADMSG.
 */
int dname_unpack(const uint8_t *msg, size_t msg_len, size_t *pos, uint8_t *out);
/*
 * The same through a reading cursor (core/wire/wire.h) over the whole
 * message: a bad name sets its sticky error to -EBADMSG.  Returns the
 * length, or the cursor's error (nothing read once it has one).
 */
struct wire;
int dname_read(struct wire *w, uint8_t out[DNAME_MAX]);

/* Length of a valid uncompressed name (including the root label). */
size_t dname_len(const uint8_t *name);
int dname_label_count(const uint8_t *name);    /* root = 0 */
void dname_lower(uint8_t *name);               /* in place */
bool dname_equal(const uint8_t *a, const uint8_t *b);   /* case-insensitive */
/* Pointer to the suffix of `name` that drops its first `n` labels. */
const uint8_t *dname_skip_labels(const uint8_t *name, int n);
/* True when `name` equals `zone` or lies below it (case-insensitive). */
bool dname_is_subdomain(const uint8_t *name, const uint8_t *zone);
/* RFC 4034 section 6.1 canonical order of two lowercase names: <0, 0, >0. */
int dname_canonical_cmp(const uint8_t *a, const uint8_t *b);
/* Hash of a lowercase name for the zone's lookup table. */
uint32_t dname_hash(const uint8_t *name, size_t len);

/*
 * The question name, read once for the whole query path: reads the name at
 * msg[*pos] like dname_unpack, writes it as sent to `orig` and lowercased
 * to `lower` (both DNAME_BUF bytes: whole 8-byte words are processed), the
 * offset of each label in `label_off` (DNAME_LABELS_MAX entries), the
 * label count to *labels and dname_hash(lower, length) to *hash.  Returns
 * the length or -EBADMSG.
 */
#define DNAME_BUF 256
int dname_unpack_question(const uint8_t *msg, size_t msg_len, size_t *pos, uint8_t *orig,
                          uint8_t *lower, uint8_t *label_off, uint8_t *labels, uint32_t *hash);

/*
 * Presentation <-> wire.  dname_from_str accepts "a.b.c", "a.b.c." and "."
 * with \DDD and \X escapes, and lowercases.  Returns length or -EINVAL.
 * dname_to_str writes at most `cap` bytes with a trailing dot and escapes;
 * returns the string length or -ENOSPC.
 */
int dname_from_str(const char *s, uint8_t *out);
int dname_to_str(const uint8_t *name, char *out, size_t cap);
