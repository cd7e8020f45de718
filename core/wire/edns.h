/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * EDNS(0) as seen by the answer logic (RFC 6891), with Client Subnet
 * (RFC 7871) parsed into a fixed struct: no allocation.
 */
#include <stdbool.h>
#include <stdint.h>

#define EDNS_UDP_DEFAULT 1232     /* our cap on UDP responses unless configured */
#define EDNS_OPT_NSID 3          /* RFC 5001 */
#define EDNS_OPT_ECS 8
#define EDNS_OPT_COOKIE 10

struct edns_ecs {
	bool present;
	uint16_t family;        /* 1 = IPv4, 2 = IPv6 */
	uint8_t source_prefix;
	uint8_t scope_prefix;   /* always 0: a query with another is malformed (RFC 7871 6) */
	uint8_t addr[16];       /* zero-filled past the prefix */
};

struct edns {
	bool present;
	uint8_t version;
	bool do_bit;
	uint16_t udp_size;      /* as advertised by the client */
	struct edns_ecs ecs;
	bool nsid;              /* the client asked who answers (RFC 5001) */
	bool cookie_present;
	uint8_t cookie_len;
	uint8_t cookie[40];
	/* A known option (ECS, COOKIE) was malformed: the query gets FORMERR
	 * with an OPT that echoes neither option (ecs and cookie are cleared). */
	bool bad_option;
};

/*
 * Parses OPT rdata (the options).  Returns -EBADMSG when the options'
 * framing is broken (a length past the end): the OPT itself is malformed.
 * A malformed ECS (unknown family, source prefix longer than the address,
 * bits set beyond the prefix, non-zero scope, a second ECS) or COOKIE
 * (RFC 7873 5.2.2) returns 0 with e->bad_option set: RFC 7871 and 7873 say
 * FORMERR, and RFC 6891 7 wants an OPT in that answer.
 */
int edns_parse_options(struct edns *e, const uint8_t *rdata, uint16_t rdlen);
/* Only the framing (RFC 6891 6.1.2): 0, or -EBADMSG when an option runs
 * past the RDATA. */
int edns_check_options(const uint8_t *rdata, uint16_t rdlen);
