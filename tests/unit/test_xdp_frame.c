/* SPDX-License-Identifier: MIT */
/*
 * The AF_XDP path's frames (core/net/xdp_frame.h): queries built here with
 * checksums from a plain word-by-word RFC 1071 sum are parsed, a changed
 * byte is refused, and every reply's IPv4 header and UDP checksums check
 * out by the same plain sum, for every payload length up to 300 bytes (so
 * each length of the tail the summing loop leaves), over IPv4 and IPv6.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

#include "core/net/xdp_frame.h"
#include "tests/unit/check.h"

#define PORT 5353

/* The oracle: 16-bit big-endian words, one at a time, folded. */
static unsigned ref_sum(const uint8_t *p, size_t len, uint32_t sum)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

static unsigned ref_udp_sum(const uint8_t *ip, int family, const uint8_t *udp, size_t udp_len)
{
	size_t alen = family == AF_INET ? 4 : 16;
	const uint8_t *src = ip + (family == AF_INET ? 12 : 8);
	uint32_t s = ref_sum(src, 2 * alen, 0) + 17 + (uint32_t)udp_len;   /* src and dst are adjacent */
	return ref_sum(udp, udp_len, s);
}

static uint32_t rnd = 12345;
static uint8_t next_byte(void)
{
	rnd = rnd * 1103515245u + 12345u;
	return (uint8_t)(rnd >> 16);
}

/* A query frame of `len` payload bytes, checksums by the oracle; its length. */
static size_t make_query(uint8_t *f, int family, size_t len)
{
	size_t hdr = family == AF_INET ? XDP_FRAME_HDR4 : XDP_FRAME_HDR6;
	memset(f, 0, hdr);
	for (int i = 0; i < 12; i++)
		f[i] = next_byte();
	f[12] = family == AF_INET ? 0x08 : 0x86;
	f[13] = family == AF_INET ? 0x00 : 0xdd;
	uint8_t *ip = f + XDP_FRAME_ETH_LEN;
	uint8_t *udp = f + hdr - XDP_FRAME_UDP_LEN;
	size_t udp_len = XDP_FRAME_UDP_LEN + len;
	if (family == AF_INET) {
		ip[0] = 0x45;
		ip[2] = (uint8_t)((20 + udp_len) >> 8);
		ip[3] = (uint8_t)(20 + udp_len);
		ip[8] = 64;
		ip[9] = 17;
		for (int i = 12; i < 20; i++)
			ip[i] = next_byte();
		unsigned c = ~ref_sum(ip, 20, 0) & 0xffff;
		ip[10] = (uint8_t)(c >> 8);
		ip[11] = (uint8_t)c;
	} else {
		ip[0] = 0x60;
		ip[4] = (uint8_t)(udp_len >> 8);
		ip[5] = (uint8_t)udp_len;
		ip[6] = 17;
		ip[7] = 64;
		for (int i = 8; i < 40; i++)
			ip[i] = next_byte();
	}
	udp[0] = next_byte();
	udp[1] = next_byte();
	udp[2] = PORT >> 8;
	udp[3] = PORT & 0xff;
	udp[4] = (uint8_t)(udp_len >> 8);
	udp[5] = (uint8_t)udp_len;
	for (size_t i = 0; i < len; i++)
		udp[8 + i] = next_byte();
	unsigned c = ~ref_udp_sum(ip, family, udp, udp_len) & 0xffff;
	if (!c)
		c = 0xffff;
	udp[6] = (uint8_t)(c >> 8);
	udp[7] = (uint8_t)c;
	return hdr + len;
}

static void one_family(int family)
{
	const char *fam = family == AF_INET ? "IPv4" : "IPv6";
	size_t hdr = family == AF_INET ? XDP_FRAME_HDR4 : XDP_FRAME_HDR6;
	int bad_parse = 0, bad_refused = 0, bad_reply = 0;
	for (size_t len = 0; len <= 300; len++) {
		uint8_t frame[2048], answer[2 * 300 + 1];   /* alen below: up to 601 */
		size_t flen = make_query(frame, family, len);
		struct xdp_frame f;
		if (xdp_frame_parse(frame, flen, PORT, &f) != 0 || f.payload_len != len ||
		    f.payload_off != hdr) {
			bad_parse++;
			continue;
		}
		if (len) {
			uint8_t changed[2048];
			memcpy(changed, frame, flen);
			changed[hdr + len / 2] ^= 0x40;
			struct xdp_frame g;
			if (xdp_frame_parse(changed, flen, PORT, &g) != -EBADMSG)
				bad_refused++;
		}
		size_t alen = 2 * len + 1;   /* odd and even, short and long */
		for (size_t i = 0; i < alen; i++)
			answer[i] = next_byte();
		size_t out = xdp_frame_reply(frame, sizeof(frame), &f, answer, alen, (uint16_t)len);
		const uint8_t *ip = frame + XDP_FRAME_ETH_LEN;
		const uint8_t *udp = frame + hdr - XDP_FRAME_UDP_LEN;
		size_t udp_len = XDP_FRAME_UDP_LEN + alen;
		bool good = out == hdr + alen && memcmp(frame + hdr, answer, alen) == 0 &&
		            (udp[6] | udp[7]) != 0 && ref_udp_sum(ip, family, udp, udp_len) == 0xffff;
		if (family == AF_INET)
			good = good && ref_sum(ip, 20, 0) == 0xffff;
		/* And our own parser takes the reply (as a query to its port). */
		struct xdp_frame r;
		good = good && xdp_frame_parse(frame, out, (uint16_t)(udp[2] << 8 | udp[3]), &r) == 0 &&
		       r.payload_len == alen;
		if (!good)
			bad_reply++;
	}
	is_int(bad_parse, 0, "%s: every query of 0..300 bytes parses", fam);
	is_int(bad_refused, 0, "%s: a changed payload byte fails the UDP checksum", fam);
	is_int(bad_reply, 0, "%s: every reply's checksums check out by the plain sum", fam);
}

int main(void)
{
	one_family(AF_INET);
	one_family(AF_INET6);
	return done_testing();
}
