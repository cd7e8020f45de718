/* SPDX-License-Identifier: MIT */
/*
 * The AF_XDP path's frame parser and builder (core/net/xdp_frame.c): any
 * bytes as the frame the XDP program hands over (Ethernet, VLAN tags,
 * IPv4, IPv6, UDP headers), parsed for port 53.
 *
 * Properties checked besides the sanitizers: a parsed datagram lies inside
 * the frame; the reply built from it (the payload echoed, as a DNS answer
 * would be) parses again, as a datagram to the client's port, with a
 * valid UDP checksum (not the offload form the parser tolerates) and the
 * payload intact; the client address is the frame's source; our side
 * (dnstap's response address and port) is where the reply comes from.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "core/net/xdp_frame.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ROOM 4096

static unsigned get16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

/* The UDP checksum of a reply, verified in full: a sum of 0xffff. */
static bool sum_ok(const uint8_t *f, const struct xdp_frame *x)
{
	const uint8_t *ip = f + XDP_FRAME_ETH_LEN;
	const uint8_t *udp = f + x->payload_off - XDP_FRAME_UDP_LEN;
	size_t alen = x->family == AF_INET ? 4 : 16;
	const uint8_t *src = x->family == AF_INET ? ip + 12 : ip + 8;
	uint32_t s = 0;
	for (size_t i = 0; i < 2 * alen; i += 2)
		s += get16(src + i);
	size_t ulen = get16(udp + 4);
	s += 17 + (uint32_t)ulen;
	for (size_t i = 0; i + 1 < ulen; i += 2)
		s += get16(udp + i);
	if (ulen & 1)
		s += (uint32_t)udp[ulen - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s == 0xffff;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[ROOM], payload[ROOM];
	if (size > ROOM)
		return 0;
	memcpy(frame, data, size);
	struct xdp_frame f;
	int rc = xdp_frame_parse(frame, size, 53, &f);
	if (rc == -EBADMSG || rc == -ENOENT)
		return 0;
	if (rc != 0)
		fuzz_fail("xdp_frame_parse: an error it does not document", data, size, NULL, 0);
	if (f.payload_off > size || f.payload_len > size - f.payload_off)
		fuzz_fail("payload outside the frame", data, size, NULL, 0);
	struct sockaddr_storage ss;
	socklen_t ss_len;
	xdp_frame_client(frame, &f, &ss, &ss_len);
	uint16_t client_port = f.family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
	                                           : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	if (ss.ss_family != f.family)
		fuzz_fail("client address of another family", data, size, NULL, 0);
	struct query_addr local;
	xdp_frame_local(frame, &f, &local);
	if (local.family != (f.family == AF_INET ? 4 : 6) || local.port != 53)
		fuzz_fail("our side of another family or port", data, size, NULL, 0);
	size_t len = f.payload_len;
	memcpy(payload, frame + f.payload_off, len);
	size_t out = xdp_frame_reply(frame, ROOM, &f, payload, len, 0x1234);
	size_t hdr = f.family == AF_INET ? XDP_FRAME_HDR4 : XDP_FRAME_HDR6;
	if (out != hdr + len)
		fuzz_fail("reply of the wrong length", data, size, frame, out);
	struct xdp_frame g;
	if (xdp_frame_parse(frame, out, client_port, &g) != 0)
		fuzz_fail("the reply does not parse", data, size, frame, out);
	if (g.family != f.family || g.payload_len != len || memcmp(frame + g.payload_off, payload, len))
		fuzz_fail("the reply's payload changed", data, size, frame, out);
	if (get16(frame + g.payload_off - 2) != 0 && !sum_ok(frame, &g))
		fuzz_fail("the reply's UDP checksum is wrong", data, size, frame, out);
	if (get16(frame + g.payload_off - 2) == 0)
		fuzz_fail("the reply has no UDP checksum", data, size, frame, out);
	struct sockaddr_storage from;
	xdp_frame_client(frame, &g, &from, &ss_len);
	const void *from_addr = g.family == AF_INET ? (const void *)&((struct sockaddr_in *)&from)->sin_addr
	                                            : (const void *)&((struct sockaddr_in6 *)&from)->sin6_addr;
	uint16_t from_port = g.family == AF_INET ? ntohs(((struct sockaddr_in *)&from)->sin_port)
	                                         : ntohs(((struct sockaddr_in6 *)&from)->sin6_port);
	if (memcmp(from_addr, local.addr, local.family == 4 ? 4 : 16) || from_port != local.port)
		fuzz_fail("the reply does not come from the address asked", data, size, frame, out);
	return 0;
}
