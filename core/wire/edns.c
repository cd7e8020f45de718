/* SPDX-License-Identifier: MIT */
/* EDNS(0) options: Client Subnet (RFC 7871) and cookies (RFC 7873). */
#include <errno.h>
#include <string.h>

#include "core/wire/edns.h"
#include "core/wire/wire.h"

static int parse_ecs(struct edns_ecs *ecs, const uint8_t *p, uint16_t len)
{
	struct wire w;
	wire_init_read(&w, p, len);
	uint16_t family = wire_read_u16(&w);
	uint8_t source = wire_read_u8(&w);
	uint8_t scope = wire_read_u8(&w);
	if (w.err)
		return -EBADMSG;
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
	/* The address is exactly ceil(source/8) bytes: what is left. */
	size_t addr_len = wire_left(&w);
	if (addr_len != ((size_t)source + 7) / 8)
		return -EBADMSG;
	memset(ecs->addr, 0, sizeof(ecs->addr));
	wire_read_bytes(&w, ecs->addr, addr_len);
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

int edns_check_options(const uint8_t *rdata, uint16_t rdlen)
{
	struct wire w;
	wire_init_read(&w, rdata, rdlen);
	while (wire_left(&w) > 0) {
		wire_skip(&w, 2);          /* code */
		wire_skip(&w, wire_read_u16(&w));
		if (w.err)
			return -EBADMSG;
	}
	return 0;
}

int edns_parse_options(struct edns *e, const uint8_t *rdata, uint16_t rdlen)
{
	struct wire w;
	wire_init_read(&w, rdata, rdlen);
	while (wire_left(&w) > 0) {
		uint16_t code = wire_read_u16(&w);
		uint16_t len = wire_read_u16(&w);
		const uint8_t *p = wire_here(&w);
		wire_skip(&w, len);
		if (w.err)
			return -EBADMSG;       /* an option running past the OPT */
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
	}
	if (e->bad_option) {
		memset(&e->ecs, 0, sizeof(e->ecs));
		e->cookie_present = false;
		e->cookie_len = 0;
	}
	return 0;
}
