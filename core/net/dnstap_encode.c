/* SPDX-License-Identifier: MIT */
/*
 * dnstap messages as protobuf, written by hand.  See dnstap_encode.h for
 * the schema and why there is no library here.
 */
#include "core/net/dnstap_encode.h"

#include <errno.h>
#include <string.h>

enum { PB_VARINT = 0, PB_LEN = 2, PB_FIXED32 = 5 };

/* A sticky cursor, like core/wire/wire.h's, for protobuf's little-endian
 * and varint fields. */
struct pb {
	uint8_t *buf;
	size_t cap, pos;
	bool err;
};

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void put_varint(struct pb *p, uint64_t v)
{
	if (p->err || p->cap - p->pos < varint_len(v)) {
		p->err = true;
		return;
	}
	while (v >= 0x80) {
		p->buf[p->pos++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p->buf[p->pos++] = (uint8_t)v;
}

static void put_key(struct pb *p, unsigned field, unsigned wire_type)
{
	put_varint(p, (uint64_t)field << 3 | wire_type);
}

static void put_uint(struct pb *p, unsigned field, uint64_t v)
{
	put_key(p, field, PB_VARINT);
	put_varint(p, v);
}

static void put_fixed32(struct pb *p, unsigned field, uint32_t v)
{
	put_key(p, field, PB_FIXED32);
	if (p->err || p->cap - p->pos < 4) {
		p->err = true;
		return;
	}
	for (int i = 0; i < 4; i++)
		p->buf[p->pos++] = (uint8_t)(v >> (8 * i));
}

static void put_bytes(struct pb *p, unsigned field, const void *data, size_t len)
{
	put_key(p, field, PB_LEN);
	put_varint(p, len);
	if (p->err || p->cap - p->pos < len) {
		p->err = true;
		return;
	}
	memcpy(p->buf + p->pos, data, len);
	p->pos += len;
}

/* Sizes of the same fields (every field number here is below 16: a
 * one-byte key). */
static size_t size_uint(uint64_t v) { return 1 + varint_len(v); }
static size_t size_bytes(size_t len) { return 1 + varint_len(len) + len; }

static size_t message_size(const struct dnstap_msg *m)
{
	size_t alen = m->family == 4 ? 4 : 16;
	size_t n = size_uint(m->type) + size_uint(m->family == 4 ? 1 : 2) + size_uint(m->tcp ? 2 : 1) +
	           size_bytes(alen) + size_uint(m->query_port);
	if (m->has_response_addr)
		n += size_bytes(alen) + size_uint(m->response_port);
	n += size_uint(m->query_sec) + 5;
	if (m->query)
		n += size_bytes(m->query_len);
	if (m->has_response_time)
		n += size_uint(m->response_sec) + 5;
	if (m->response)
		n += size_bytes(m->response_len);
	return n;
}

int dnstap_encode(uint8_t *out, size_t cap, const char *identity, const char *version,
                  const struct dnstap_msg *m)
{
	struct pb p = { out, cap, 0, false };
	size_t alen = m->family == 4 ? 4 : 16;

	if (identity)
		put_bytes(&p, 1, identity, strlen(identity));
	if (version)
		put_bytes(&p, 2, version, strlen(version));
	put_key(&p, 14, PB_LEN);
	put_varint(&p, message_size(m));
	size_t start = p.pos;
	put_uint(&p, 1, m->type);
	put_uint(&p, 2, m->family == 4 ? 1 : 2);   /* INET, INET6 */
	put_uint(&p, 3, m->tcp ? 2 : 1);           /* TCP, UDP */
	put_bytes(&p, 4, m->query_addr, alen);
	if (m->has_response_addr)
		put_bytes(&p, 5, m->response_addr, alen);
	put_uint(&p, 6, m->query_port);
	if (m->has_response_addr)
		put_uint(&p, 7, m->response_port);
	put_uint(&p, 8, m->query_sec);
	put_fixed32(&p, 9, m->query_nsec);
	if (m->query)
		put_bytes(&p, 10, m->query, m->query_len);
	if (m->has_response_time) {
		put_uint(&p, 12, m->response_sec);
		put_fixed32(&p, 13, m->response_nsec);
	}
	if (m->response)
		put_bytes(&p, 14, m->response, m->response_len);
	if (!p.err && p.pos - start != message_size(m))
		return -EINVAL;   /* message_size() and the fields above disagree: a bug */
	put_uint(&p, 15, 1);   /* Dnstap.Type MESSAGE */
	if (p.err)
		return -ENOSPC;
	return (int)p.pos;
}
