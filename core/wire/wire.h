/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Cursor over a DNS message buffer, for reading and for writing.
 * The error is sticky (Knot's wire_ctx): after the first overrun every call
 * is a no-op and `err` keeps the first error, so a writer can emit a whole
 * header and check once.  Reading past the end sets -EBADMSG; writing past
 * the capacity sets -ENOSPC.  All multi-byte values are network order.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct wire {
	uint8_t *buf;
	size_t pos;
	size_t cap;   /* bytes readable (reader) or writable (writer) */
	int err;      /* 0, -EBADMSG or -ENOSPC */
};

static inline void wire_init(struct wire *w, uint8_t *buf, size_t cap)
{
	w->buf = buf;
	w->pos = 0;
	w->cap = cap;
	w->err = 0;
}
/*
 * A reader over len bytes nobody writes through (a received message): the
 * cursor's buffer is not const because it also writes, but a reader's
 * calls never store into it.
 */
static inline void wire_init_read(struct wire *w, const uint8_t *buf, size_t len)
{
	wire_init(w, (uint8_t *)buf, len);
}
/* Where the cursor is, for the caller that keeps a pointer (rdata). */
static inline const uint8_t *wire_here(const struct wire *w) { return w->buf + w->pos; }
static inline size_t wire_pos(const struct wire *w) { return w->pos; }
static inline size_t wire_left(const struct wire *w) { return w->err ? 0 : w->cap - w->pos; }
/* Moves the cursor back to a mark (rollback) and clears -ENOSPC. */
void wire_seek(struct wire *w, size_t pos);

/*
 * Network-order values at any alignment.  One load or store and a byte
 * swap: the compiler did not merge the byte-at-a-time stores these once
 * were (two or four stores and shifts per field on the writer's path).
 */
static inline uint16_t wire_get_u16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap16(v);
#endif
	return v;
}
static inline uint32_t wire_get_u32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}
static inline void wire_set_u16(uint8_t *p, uint16_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap16(v);
#endif
	memcpy(p, &v, 2);
}
static inline void wire_set_u32(uint8_t *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	memcpy(p, &v, 4);
}

/*
 * The readers are inline: a query's parse reads a dozen fields, and a call
 * per field cost more than the read.  wire_can_read sets the sticky error.
 */
static inline bool wire_can_read(struct wire *w, size_t n)
{
	if (w->err)
		return false;
	if (w->cap - w->pos < n) {
		w->err = -EBADMSG;
		return false;
	}
	return true;
}
static inline uint8_t wire_read_u8(struct wire *w)
{
	return wire_can_read(w, 1) ? w->buf[w->pos++] : 0;
}
static inline uint16_t wire_read_u16(struct wire *w)
{
	if (!wire_can_read(w, 2))
		return 0;
	uint16_t v = wire_get_u16(w->buf + w->pos);
	w->pos += 2;
	return v;
}
static inline uint32_t wire_read_u32(struct wire *w)
{
	if (!wire_can_read(w, 4))
		return 0;
	uint32_t v = wire_get_u32(w->buf + w->pos);
	w->pos += 4;
	return v;
}
void wire_read_bytes(struct wire *w, void *out, size_t n);
static inline void wire_skip(struct wire *w, size_t n)
{
	if (wire_can_read(w, n))
		w->pos += n;
}

void wire_write_u16(struct wire *w, uint16_t v);
void wire_write_u32(struct wire *w, uint32_t v);
void wire_write_bytes(struct wire *w, const void *p, size_t n);
/* Overwrites a u16 already written at `at` (lengths, counts). */
void wire_put_u16_at(struct wire *w, size_t at, uint16_t v);

