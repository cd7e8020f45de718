/* SPDX-License-Identifier: MIT */
/* The message cursor: sticky errors, network byte order. */
#include <errno.h>
#include <string.h>

#include "core/wire/wire.h"

void wire_seek(struct wire *w, size_t pos)
{
	if (pos <= w->cap) {
		w->pos = pos;
		if (w->err == -ENOSPC)
			w->err = 0;
	}
}

/* n more bytes fit; else the sticky error becomes -ENOSPC (first one wins).
 * The readers' twin, wire_can_read, is inline in wire.h. */
static bool can_write(struct wire *w, size_t n)
{
	if (w->err)
		return false;
	if (w->cap - w->pos < n) {
		w->err = -ENOSPC;
		return false;
	}
	return true;
}

void wire_read_bytes(struct wire *w, void *out, size_t n)
{
	if (!wire_can_read(w, n))
		return;
	memcpy(out, w->buf + w->pos, n);
	w->pos += n;
}

void wire_write_u16(struct wire *w, uint16_t v)
{
	if (can_write(w, 2)) {
		wire_set_u16(w->buf + w->pos, v);
		w->pos += 2;
	}
}

void wire_write_u32(struct wire *w, uint32_t v)
{
	if (can_write(w, 4)) {
		wire_set_u32(w->buf + w->pos, v);
		w->pos += 4;
	}
}

void wire_write_bytes(struct wire *w, const void *p, size_t n)
{
	if (can_write(w, n)) {
		if (n)
			memcpy(w->buf + w->pos, p, n);
		w->pos += n;
	}
}

void wire_put_u16_at(struct wire *w, size_t at, uint16_t v)
{
	if (at + 2 <= w->cap)
		wire_set_u16(w->buf + at, v);
}
