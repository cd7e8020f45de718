/* SPDX-License-Identifier: MIT */
/* Ethernet / IPv4 / IPv6 / UDP frames of the AF_XDP path (xdp_frame.h). */
#include "core/net/xdp_frame.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>

#define ETH_IP4 0x0800
#define ETH_IP6 0x86dd
#define ETH_VLAN 0x8100
#define ETH_QINQ 0x88a8
#define IP_UDP 17
#define HOP_LIMIT 64

static unsigned get16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/*
 * The ones' complement sum of p[0 .. len) as big-endian 16-bit words
 * (RFC 1071), added to sum, unfolded.  Every query's datagram and every
 * reply is summed, so it takes eight bytes an addition: native loads
 * summed with the end-around carry, folded to 16 bits and swapped to
 * network order give the same sum (RFC 1071 2.(A) and (B): the sum does
 * not depend on the words' order or byte order).  The last 0-7 bytes
 * are summed as words, as before.
 */
static uint32_t sum16(const uint8_t *p, size_t len, uint32_t sum)
{
	uint64_t acc = 0;
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		acc += w;
		acc += acc < w;   /* the end-around carry */
	}
	acc = (acc & 0xffffffff) + (acc >> 32);
	acc = (acc & 0xffffffff) + (acc >> 32);
	acc = (acc & 0xffff) + (acc >> 16);
	acc = (acc & 0xffff) + (acc >> 16);
	acc = (acc & 0xffff) + (acc >> 16);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	acc = (acc >> 8 | acc << 8) & 0xffff;
#endif
	sum += (uint32_t)acc;
	for (; len > 1; p += 2, len -= 2)
		sum += get16(p);
	if (len)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

static unsigned fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

/* The UDP pseudo-header's sum (RFC 768; RFC 8200 8.1): the addresses,
 * the protocol and the UDP length. */
static uint32_t pseudo_sum(const uint8_t *src, const uint8_t *dst, size_t alen, size_t udp_len)
{
	uint32_t s = sum16(src, alen, 0);
	s = sum16(dst, alen, s);
	return s + IP_UDP + (uint32_t)udp_len;
}

/*
 * RFC 1122 4.1.3.4: a non-zero, wrong UDP checksum is dropped.  A frame
 * from a sender on this host (a veth peer, a container) may still carry
 * CHECKSUM_PARTIAL's field: the pseudo-header sum alone, for the NIC to
 * finish, which no NIC did.  That one is taken as it is (the kernel's own
 * receive path trusts it the same way); anything else must check out.
 */
static bool udp_sum_ok(const uint8_t *udp, size_t udp_len, uint32_t pseudo)
{
	unsigned field = get16(udp + 6);
	if (fold(sum16(udp, udp_len, pseudo)) == 0xffff)
		return true;
	return field == fold(pseudo);
}

int xdp_frame_parse(const uint8_t *frame, size_t len, uint16_t port, struct xdp_frame *out)
{
	if (len < XDP_FRAME_ETH_LEN)
		return -EBADMSG;
	unsigned type = get16(frame + 12);
	if (type == ETH_VLAN || type == ETH_QINQ)
		return -ENOENT;   /* the kernel's, with its VLAN devices */
	const uint8_t *ip = frame + XDP_FRAME_ETH_LEN;
	size_t room = len - XDP_FRAME_ETH_LEN;
	const uint8_t *udp;
	size_t udp_room;
	uint32_t pseudo;
	if (type == ETH_IP4) {
		if (room < XDP_FRAME_IP4_LEN || ip[0] >> 4 != 4)
			return -EBADMSG;
		if ((ip[0] & 15) != 5)
			return (ip[0] & 15) < 5 ? -EBADMSG : -ENOENT;   /* options: the kernel's */
		size_t total = get16(ip + 2);
		if (total < XDP_FRAME_IP4_LEN || total > room)
			return -EBADMSG;
		if (fold(sum16(ip, XDP_FRAME_IP4_LEN, 0)) != 0xffff)
			return -EBADMSG;
		if (get16(ip + 6) & 0x3fff)
			return -ENOENT;   /* a fragment (MF or an offset): reassembly is the kernel's */
		if (ip[9] != IP_UDP)
			return -ENOENT;
		udp = ip + XDP_FRAME_IP4_LEN;
		udp_room = total - XDP_FRAME_IP4_LEN;   /* Ethernet padding is not payload */
		out->family = AF_INET;
		if (udp_room < XDP_FRAME_UDP_LEN)
			return -EBADMSG;
		pseudo = pseudo_sum(ip + 12, ip + 16, 4, get16(udp + 4));
	} else if (type == ETH_IP6) {
		if (room < XDP_FRAME_IP6_LEN || ip[0] >> 4 != 6)
			return -EBADMSG;
		size_t plen = get16(ip + 4);
		if (plen > room - XDP_FRAME_IP6_LEN)
			return -EBADMSG;
		if (ip[6] != IP_UDP)
			return -ENOENT;   /* extension headers (or a jumbogram): the kernel's */
		udp = ip + XDP_FRAME_IP6_LEN;
		udp_room = plen;
		out->family = AF_INET6;
		if (udp_room < XDP_FRAME_UDP_LEN)
			return -EBADMSG;
		pseudo = pseudo_sum(ip + 8, ip + 24, 16, get16(udp + 4));
	} else {
		return -ENOENT;
	}
	if (get16(udp + 2) != port)
		return -ENOENT;
	size_t udp_len = get16(udp + 4);
	if (udp_len < XDP_FRAME_UDP_LEN || udp_len > udp_room)
		return -EBADMSG;
	if (get16(udp + 6) == 0) {
		if (out->family == AF_INET6)
			return -EBADMSG;   /* RFC 8200 8.1: a zero UDP checksum is invalid over IPv6 */
	} else if (!udp_sum_ok(udp, udp_len, pseudo)) {
		return -EBADMSG;
	}
	out->payload_off = (size_t)(udp - frame) + XDP_FRAME_UDP_LEN;
	out->payload_len = udp_len - XDP_FRAME_UDP_LEN;
	return 0;
}

void xdp_frame_client(const uint8_t *frame, const struct xdp_frame *f,
                      struct sockaddr_storage *ss, socklen_t *ss_len)
{
	const uint8_t *ip = frame + XDP_FRAME_ETH_LEN;
	const uint8_t *udp = frame + f->payload_off - XDP_FRAME_UDP_LEN;
	memset(ss, 0, sizeof(*ss));
	if (f->family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;
		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, ip + 12, 4);
		memcpy(&in->sin_port, udp, 2);
		*ss_len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, ip + 8, 16);
		memcpy(&in6->sin6_port, udp, 2);
		*ss_len = sizeof(*in6);
	}
}

void xdp_frame_local(const uint8_t *frame, const struct xdp_frame *f, struct query_addr *local)
{
	const uint8_t *ip = frame + XDP_FRAME_ETH_LEN;
	const uint8_t *udp = frame + f->payload_off - XDP_FRAME_UDP_LEN;
	memset(local, 0, sizeof(*local));
	if (f->family == AF_INET) {
		local->family = 4;
		memcpy(local->addr, ip + 16, 4);
	} else {
		local->family = 6;
		memcpy(local->addr, ip + 24, 16);
	}
	local->port = (uint16_t)get16(udp + 2);
}

static void swap(uint8_t *a, uint8_t *b, size_t n)
{
	uint8_t t[16];
	memcpy(t, a, n);
	memcpy(a, b, n);
	memcpy(b, t, n);
}

size_t xdp_frame_reply(uint8_t *frame, size_t cap, const struct xdp_frame *f,
                       const uint8_t *payload, size_t len, uint16_t ip_id)
{
	size_t hdr = f->family == AF_INET ? XDP_FRAME_HDR4 : XDP_FRAME_HDR6;
	size_t udp_len = XDP_FRAME_UDP_LEN + len;
	if (hdr > cap || len > cap - hdr || udp_len > 0xffff)
		return 0;
	swap(frame, frame + 6, 6);   /* back to where it came from: no route lookup */
	uint8_t *ip = frame + XDP_FRAME_ETH_LEN;
	uint8_t *udp = frame + hdr - XDP_FRAME_UDP_LEN;
	uint32_t pseudo;
	if (f->family == AF_INET) {
		if (XDP_FRAME_IP4_LEN + udp_len > 0xffff)
			return 0;
		swap(ip + 12, ip + 16, 4);
		ip[0] = 0x45;
		ip[1] = 0;                              /* TOS: what the socket path sends */
		put16(ip + 2, XDP_FRAME_IP4_LEN + udp_len);
		put16(ip + 4, ip_id);
		put16(ip + 6, 0);                       /* DF clear, no offset (IP_PMTUDISC_OMIT) */
		ip[8] = HOP_LIMIT;
		ip[9] = IP_UDP;
		put16(ip + 10, 0);
		put16(ip + 10, ~fold(sum16(ip, XDP_FRAME_IP4_LEN, 0)) & 0xffff);
		pseudo = pseudo_sum(ip + 12, ip + 16, 4, udp_len);
	} else {
		swap(ip + 8, ip + 24, 16);
		ip[0] = 0x60;                           /* version 6, traffic class 0, no flow label */
		ip[1] = ip[2] = ip[3] = 0;
		put16(ip + 4, udp_len);
		ip[6] = IP_UDP;
		ip[7] = HOP_LIMIT;
		pseudo = pseudo_sum(ip + 8, ip + 24, 16, udp_len);
	}
	swap(udp, udp + 2, 2);
	put16(udp + 4, udp_len);
	put16(udp + 6, 0);
	memmove(udp + XDP_FRAME_UDP_LEN, payload, len);
	unsigned sum = ~fold(sum16(udp, udp_len, pseudo)) & 0xffff;
	put16(udp + 6, sum ? sum : 0xffff);   /* 0 means "none": sent as all ones (RFC 768) */
	return hdr + len;
}
