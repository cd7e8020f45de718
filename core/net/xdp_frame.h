/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The frames of the AF_XDP path (xdp.c): what the XDP program hands over
 * is a whole Ethernet frame.  xdp_frame_parse() finds the UDP datagram in
 * it (Ethernet II, IPv4 without options and unfragmented, or IPv6 whose
 * next header is UDP); xdp_frame_reply() turns the same frame, in place,
 * into the reply: addresses and ports swapped, the DNS answer as payload,
 * lengths and checksums (IPv4 header, UDP over the pseudo-header; RFC 768,
 * RFC 8200 8.1) computed afresh.  Pure functions on bytes: the fuzz target
 * tests/fuzz/fuzz_xdp_frame.c drives them.
 *
 * VLAN-tagged frames (802.1Q, 802.1ad) are not ours: the XDP program
 * passes them to the kernel, and the parser refuses them.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/wire/query.h"

#define XDP_FRAME_ETH_LEN 14
#define XDP_FRAME_IP4_LEN 20
#define XDP_FRAME_IP6_LEN 40
#define XDP_FRAME_UDP_LEN 8
/* Headers in front of the payload, by family. */
#define XDP_FRAME_HDR4 (XDP_FRAME_ETH_LEN + XDP_FRAME_IP4_LEN + XDP_FRAME_UDP_LEN)
#define XDP_FRAME_HDR6 (XDP_FRAME_ETH_LEN + XDP_FRAME_IP6_LEN + XDP_FRAME_UDP_LEN)

struct xdp_frame {
	int family;              /* AF_INET or AF_INET6 */
	size_t payload_off;      /* the DNS message: frame + payload_off */
	size_t payload_len;
};

/*
 * Finds the UDP datagram to `port` (host order) in frame[0 .. len).
 * Returns 0, -EBADMSG when the frame is malformed (lengths, versions, the
 * IPv4 header checksum, a UDP checksum that is neither valid nor the
 * pseudo-header sum a local sender's checksum offload leaves), or
 * -ENOENT when it is well formed but not a UDP datagram to `port`
 * (VLAN tagged, another protocol or port, a fragment, IPv4 options, IPv6
 * extension headers).
 */
int xdp_frame_parse(const uint8_t *frame, size_t len, uint16_t port, struct xdp_frame *out);

/* The client's address and port, as a socket would give them. */
void xdp_frame_client(const uint8_t *frame, const struct xdp_frame *f,
                      struct sockaddr_storage *ss, socklen_t *ss_len);

/* Our side: the address and port the query was sent to (dnstap's
 * response_address and response_port), as the socket path records them. */
void xdp_frame_local(const uint8_t *frame, const struct xdp_frame *f, struct query_addr *local);

/*
 * Rewrites the parsed frame (cap bytes of room from its start) into the
 * reply carrying payload[0 .. len): Ethernet and IP addresses and UDP
 * ports swapped, IPv4 id `ip_id` with DF clear (as the socket path's
 * IP_PMTUDISC_OMIT sends), TTL / hop limit 64.  payload may not overlap
 * the frame's header.  Returns the frame's length, or 0 when it does not
 * fit in cap.
 */
size_t xdp_frame_reply(uint8_t *frame, size_t cap, const struct xdp_frame *f,
                       const uint8_t *payload, size_t len, uint16_t ip_id);
