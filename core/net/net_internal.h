/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Shared between net.c (listening sockets), udp.c (the UDP batch) and
 * tcp.c (TCP connections) only.  net.c binds every socket and hands each
 * one to udp.c or tcp.c, which owns it from then on.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/net/net.h"
#include "core/wire/query.h"

struct loop;

/* The handler as net_set_handler() left it; read again for every message,
 * so a reload takes effect on the next query, also on open connections. */
struct net_handler {
	net_handler_fn fn;
	void *ctx;
};

/* Response buffers: a full message plus slack for the writer's last RR
 * (it marks, writes, and rolls back on overflow, so it may probe past
 * max_size before truncating). */
#define NET_TX_SIZE (QUERY_MSG_MAX + 4096)
/* First chunk of each query arena, allocated at start: big enough that a
 * normal answer never grows it. */
#define NET_ARENA_CHUNK 16384

/* "127.0.0.1:53", "[::1]:53" */
#define NET_NAME_MAX (46 + 16)

struct udp;

/* max_size: the UDP payload limit without EDNS's (1232 by default);
 * max_sockets: how many udp_listen() calls will come.  NULL when out of
 * memory. */
struct udp *udp_new(struct loop *l, const struct net_handler *h, uint16_t max_size,
                    size_t max_sockets);
/* Takes ownership of a bound, non-blocking UDP socket (closed on failure
 * too); pktinfo: answer from the address each datagram arrived at.
 * Returns 0 or a negative errno. */
int udp_listen(struct udp *u, int fd, bool pktinfo, const char *name);
/* Closes every socket.  NULL-safe. */
void udp_free(struct udp *u);

struct tcp;

/* max_conns, max_per_prefix and idle_ms must be > 0; max_listeners is how
 * many tcp_listen() calls will come.  Returns NULL when out of memory. */
struct tcp *tcp_new(struct loop *l, const struct net_handler *h, uint32_t max_conns,
                    uint32_t max_per_prefix, uint32_t idle_ms, uint32_t lifetime_ms,
                    size_t max_listeners);
/* Takes ownership of a bound, listening, non-blocking socket (closed on
 * failure too).  Returns 0 or a negative errno. */
int tcp_listen(struct tcp *t, int fd);
/* Closes every connection and listener.  NULL-safe. */
void tcp_free(struct tcp *t);

/* --- replies sent later (reply_later.c; the public side is reply_later.h) --- */

struct reply_later;
struct tcp_conn;

/* Room for the control message of a UDP reply (an IPv4 or IPv6 packet info). */
#define NET_REPLY_CTL_MAX 64

/*
 * After the handler set q->later: makes the token and hands it to
 * q->later.take (NULL when out of memory), then clears q->later.  UDP:
 * `fd` the socket, ctl[0 .. ctl_len) the control message a reply from it
 * carries (udp.c's packet info; none on a socket with a specific address).
 * TCP: returns the token (or NULL) for the connection to wait on.
 */
void reply_later_udp(struct query *q, int fd, const void *ctl, size_t ctl_len);
struct reply_later *reply_later_tcp(struct query *q, struct tcp_conn *c);
/* tcp.c: the connection closes; the token stays its owner's, now dead. */
void reply_later_tcp_closed(struct reply_later *r);
/* reply_later.c: the reply (len 0: none) of the message the connection
 * waits on; it goes on answering.  The connection may close in here. */
void tcp_later_done(struct tcp_conn *c, const uint8_t *msg, size_t len);
