/* SPDX-License-Identifier: MIT */
/* EDNS(0) options: Client Subnet (RFC 7871) and cookies (RFC 7873). */
#include <errno.h>
#include <string.h>

#include "core/wire/edns.h"
#include "core/wire/wire.h"

static int parse_ecs(struct edns_ecs *ecs, const uint8_t *p, uint16_t len)
{
	if (len < 4)
		return -EBADMSG;
	uint16_t family = wire_get_u16(p);
	uint8_t source = p[2], scope = p[3];
	/* RFC 7871 6: SCOPE PREFIX-LENGTH MUST be 0 in queries; BIND answers
	 * FORMERR when it is not, and so do we. */
	if (scope != 0)
		return -EBADMSG;
	size_t max_bits;
	if (family == 1)
		max_bits = 32;
	else if (family == 2)
		max_bits = 128;
	else
		return -EBADMSG;           /* unknown family: FORMERR (7871 7.1.2) */
	if (source > max_bits)
		return -EBADMSG;
	size_t addr_len = len - 4u;
	/* The address is exactly ceil(source/8) bytes. */
	if (addr_len != ((size_t)source + 7) / 8)
		return -EBADMSG;
	memset(ecs->addr, 0, sizeof(ecs->addr));
	memcpy(ecs->addr, p + 4, addr_len);
	if (source % 8) {
		uint8_t mask = (uint8_t)(0xFF >> (source % 8));
		if (ecs->addr[addr_len - 1] & mask)
			return -EBADMSG;       /* bits set beyond the prefix */
	}
	ecs->present = true;
	ecs->family = family;
	ecs->source_prefix = source;
	ecs->scope_prefix = 0;
	return 0;
}

int edns_parse_options(struct edns *e, const uint8_t *rdata, uint16_t rdlen)
{
	size_t pos = 0;
	while (pos < rdlen) {
		if (rdlen - pos < 4)
			return -EBADMSG;
		uint16_t code = wire_get_u16(rdata + pos);
		uint16_t len = wire_get_u16(rdata + pos + 2);
		pos += 4;
		if (len > rdlen - pos)
			return -EBADMSG;
		const uint8_t *p = rdata + pos;
		/*
		 * A malformed option inside a well-framed OPT is noted and
		 * dropped (not echoed), and the walk goes on: the message is
		 * answered FORMERR, but with an OPT (RFC 6891 7).
		 */
		if (code == EDNS_OPT_ECS) {
			if (e->ecs.present || parse_ecs(&e->ecs, p, len) < 0) {
				/* more than one ECS option, or a malformed one */
				memset(&e->ecs, 0, sizeof(e->ecs));
				e->bad_option = true;
			}
		} else if (code == EDNS_OPT_NSID) {
			/* RFC 5001 2.1: empty in a query; whatever it holds is ignored. */
			e->nsid = true;
		} else if (code == EDNS_OPT_COOKIE) {
			/* Client cookie 8 bytes, optional server cookie 8..32 bytes. */
			if (len != 8 && (len < 16 || len > 40)) {
				e->bad_option = true;
			} else {
				e->cookie_present = true;
				e->cookie_len = (uint8_t)len;
				memcpy(e->cookie, p, len);
			}
		}
		pos += len;
	}
	if (e->bad_option) {
		memset(&e->ecs, 0, sizeof(e->ecs));
		e->cookie_present = false;
		e->cookie_len = 0;
	}
	return 0;
}
