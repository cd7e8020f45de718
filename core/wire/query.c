/* SPDX-License-Identifier: MIT */
/* Per-query context reset. */
#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>

#include "core/wire/arena.h"
#include "core/wire/query.h"

void query_reset(struct query *q)
{
	/*
	 * Clear only the per-message fields.  The buffers and the arena stay;
	 * arena_reset keeps its first chunk, so a warm query costs no malloc.
	 */
	q->rx = NULL;
	q->rx_len = 0;
	q->xdp = false;
	q->id = 0;
	q->flags = 0;
	q->opcode = 0;
	q->qdcount = q->ancount = q->nscount = q->arcount = 0;
	q->qname_len = 0;
	q->qtype = q->qclass = 0;
	q->question_end = 0;
	memset(&q->edns, 0, sizeof(q->edns));
	q->opt_offset = 0;
	q->tsig_offset = 0;
	q->tx_len = 0;
	q->rcode = 0;
	q->question_ok = false;
	q->edns_ok = false;
	q->cookie_valid = false;
	q->cookie_out_set = false;
	q->tc = false;
	q->stream = (struct query_stream){ NULL, NULL, NULL };
	q->later = (struct query_later){ NULL, NULL };
	q->nsid_out = NULL;
	q->nsid_out_len = 0;
	if (q->arena)
		arena_reset(q->arena);
}

void query_addr_from(struct query_addr *out, const struct sockaddr_storage *sa)
{
	memset(out, 0, sizeof(*out));
	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
		out->family = 4;
		out->port = ntohs(sin->sin_port);
		memcpy(out->addr, &sin->sin_addr, 4);
	} else if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		bool mapped = IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr);
		out->family = mapped ? 4 : 6;
		out->port = ntohs(sin6->sin6_port);
		memcpy(out->addr, sin6->sin6_addr.s6_addr + (mapped ? 12 : 0), mapped ? 4 : 16);
	}
}

int query_client_addr(const struct query *q, uint8_t addr[16])
{
	if (q->client.ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)&q->client;
		memcpy(addr, &sin->sin_addr, 4);
		return 4;
	}
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&q->client;
	if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
		memcpy(addr, sin6->sin6_addr.s6_addr + 12, 4);
		return 4;
	}
	memcpy(addr, &sin6->sin6_addr, 16);
	return 6;
}
