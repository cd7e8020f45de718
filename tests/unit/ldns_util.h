/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Helpers the DNSSEC unit tests share (header-only, like check.h): names
 * from text, and one RR in wire form handed to ldns, the independent
 * validator the tests check our output against.
 */
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"

/* A name in wire form; eight buffers in rotation, so that a call's result
 * stays valid across the next seven calls. */
static inline uint8_t *name(const char *s)
{
	static uint8_t bufs[8][DNAME_MAX];
	static int next;
	uint8_t *p = bufs[next++ % 8];
	if (dname_from_str(s, p) < 0)
		abort();
	return p;
}

/* One RR in wire form, parsed by ldns (NULL when ldns refuses it). */
static inline ldns_rr *to_ldns(const uint8_t *owner, uint16_t type, uint32_t ttl, const uint8_t *rd,
                               uint16_t len)
{
	static uint8_t buf[DNAME_MAX + 10 + 65535];
	size_t n = dname_len(owner);
	memcpy(buf, owner, n);
	wire_set_u16(buf + n, type);
	wire_set_u16(buf + n + 2, CLASS_IN);
	wire_set_u32(buf + n + 4, ttl);
	wire_set_u16(buf + n + 8, len);
	memcpy(buf + n + 10, rd, len);
	ldns_rr *rr = NULL;
	size_t pos = 0;
	if (ldns_wire2rr(&rr, buf, n + 10 + len, &pos, LDNS_SECTION_ANSWER) != LDNS_STATUS_OK)
		return NULL;
	return rr;
}
