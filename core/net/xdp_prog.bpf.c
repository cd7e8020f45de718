/* SPDX-License-Identifier: MIT */
/*
 * The XDP program of the AF_XDP path (xdp.c loads it; CMake compiles it
 * with clang -target bpf and links the object into the binary).
 *
 * It takes only what geoacme answers at once: an untagged Ethernet frame
 * with IPv4 (no options, not a fragment) or IPv6 (UDP as the next header)
 * carrying UDP to our port on one of our addresses, with a DNS header
 * whose QR bit is clear and whose opcode is QUERY.  Those go to the
 * AF_XDP socket of the queue they arrived on; everything else (TCP, ICMP,
 * ARP, neighbour discovery, VLAN tags, other ports, UPDATE and NOTIFY,
 * which may answer later or talk to the disk) passes to the kernel.  So
 * does a queue without a socket: bpf_redirect_map()'s fallback is
 * XDP_PASS, and a socket that closes (the process stopped or was killed)
 * leaves the map by itself.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

/* What xdp.c writes in before it attaches (key 0). */
struct geoacme_xdp_conf {
	__u16 port;      /* network order */
	__u8 any4;       /* a wildcard IPv4 listen address: every IPv4 destination */
	__u8 any6;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct geoacme_xdp_conf);
} geoacme_conf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u8);
} geoacme_addr4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct in6_addr);
	__type(value, __u8);
} geoacme_addr6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} geoacme_xsks SEC(".maps");

#define DNS_HEADER 12

/* The UDP header at udp: ours when it goes to our port and carries a DNS
 * query (QR clear, opcode QUERY). */
static __always_inline int ours(struct xdp_md *ctx, struct udphdr *udp, void *end, __u16 port)
{
	__u8 *dns = (__u8 *)(udp + 1);
	if ((void *)(dns + DNS_HEADER) > end)
		return 0;
	if (udp->dest != port)
		return 0;
	return (dns[2] & 0xf8) == 0;   /* QR 0, opcode 0 */
}

SEC("xdp")
int geoacme_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 zero = 0;
	struct geoacme_xdp_conf *conf = bpf_map_lookup_elem(&geoacme_conf, &zero);
	if (!conf || !conf->port)
		return XDP_PASS;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
		    (ip->frag_off & bpf_htons(0x3fff)))
			return XDP_PASS;
		if (!conf->any4 && !bpf_map_lookup_elem(&geoacme_addr4, &ip->daddr))
			return XDP_PASS;
		if (!ours(ctx, (struct udphdr *)(ip + 1), end, conf->port))
			return XDP_PASS;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			return XDP_PASS;
		if (!conf->any6 && !bpf_map_lookup_elem(&geoacme_addr6, &ip6->daddr))
			return XDP_PASS;
		if (!ours(ctx, (struct udphdr *)(ip6 + 1), end, conf->port))
			return XDP_PASS;
	} else {
		return XDP_PASS;   /* ARP, VLAN tags, anything else */
	}
	return bpf_redirect_map(&geoacme_xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
