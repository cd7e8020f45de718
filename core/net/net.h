/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Sockets: UDP and TCP listeners on every configured address, IPv4 and
 * IPv6.  UDP is served in epoll batches (recvmmsg -> answer each ->
 * sendmmsg), with query contexts and buffers made at start; TCP connections use
 * 2-byte length framing with partial reads and writes, pipelining, an idle
 * timeout and connection caps, in all and per client prefix (at a cap, a
 * connection that never completed a query is closed first, then the one
 * idle longest; see tcp.c).
 *
 * The network layer knows nothing of DNS beyond framing: for each message
 * it fills a struct query (rx, client, transport, tx buffer, max_size) and
 * calls the handler, which sets q->tx_len (0 = send nothing), or asks to
 * reply later (q->later, core/net/reply_later.h: an UPDATE waiting for
 * the disk).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loop;
struct query;

typedef void (*net_handler_fn)(void *ctx, struct query *q);

struct net_config {
	const char *const *addrs;   /* numeric IPv4 or IPv6 addresses */
	size_t n_addrs;
	uint16_t port;
	uint16_t udp_max_size;      /* cap for UDP responses (EDNS may lower it) */
	uint32_t tcp_max_connections;
	uint32_t tcp_idle_timeout_ms;
	uint32_t tcp_max_per_prefix;   /* per IPv4 /24 or IPv6 /56; 0 = the default (16) */
	uint32_t tcp_lifetime_ms;      /* the progress window (tcp.c); 0 = the default (120 s) */
	const char *const *xdp_ifaces; /* UDP through AF_XDP on these too (xdp.h); may fail safe */
	size_t n_xdp_ifaces;
};

struct net;

/* Binds every socket now (so privileges can be dropped after). */
struct net *net_new(struct loop *l, const struct net_config *cfg, net_handler_fn fn,
                    void *ctx, char err[256]);
void net_free(struct net *n);   /* closes every socket; call before loop_free() */
/* Changes the handler context (after a reload); sockets stay. */
void net_set_handler(struct net *n, net_handler_fn fn, void *ctx);
/* The port actually bound (useful with port 0 in tests). */
uint16_t net_bound_port(const struct net *n);
