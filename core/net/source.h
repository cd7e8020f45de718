/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Where outgoing DNS leaves from: NOTIFY, SOA checks, transfer requests, and
 * a key rollover's DS queries and DS push to the parent (issue #21.1).  Peers' ACLs name exact addresses (geoacme's axfr_from and
 * primaries, Knot's acl, NSD's allow-notify and request-xfr, BIND's
 * allow-notify), so a host that answers on 192.0.2.53 must also ask from
 * it, not from whichever address the kernel's route picks.  Per family:
 *
 *   - [server] source_ipv4 / source_ipv6 when set;
 *   - else the first address of listen_addrs_ipv4 / listen_addrs_ipv6;
 *   - a wildcard (0.0.0.0, ::), or no listen address of the family: the
 *     kernel picks, as before.
 *
 * net_source_init() binds each chosen address once, on a UDP socket with
 * port 0 (nothing is sent, the socket is closed at once): an address this
 * host does not have is an error at start and in `check`, with the config
 * position, instead of a NOTIFY that silently never leaves.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct diag;

struct net_source {
	bool has4, has6;            /* false: the kernel picks */
	uint8_t addr4[4];
	uint8_t addr6[16];
	bool explicit4, explicit6;  /* from source_ipv4/6, not a listen address (for the log) */
};

/* Fills `s` from `c` and tries each address; problems go to `d` (c->path:line:col). */
int net_source_init(struct net_source *s, const struct config *c, struct diag *d);

/*
 * Binds `fd` (a fresh socket of `family`, AF_INET or AF_INET6) to the
 * source address with port 0; nothing to do when the kernel picks.  For a
 * stream socket the port is left to connect() (IP_BIND_ADDRESS_NO_PORT),
 * so outgoing transfers do not use up ephemeral ports.  0 or -errno.
 */
int net_source_bind(const struct net_source *s, int fd, int family, bool stream);

/*
 * A new non-blocking, close-on-exec socket of `family` (a datagram socket,
 * or a stream socket when `stream`) bound by net_source_bind: what every
 * outgoing query, NOTIFY and transfer request is sent from.  The fd or
 * -errno.
 */
int net_source_socket(const struct net_source *s, int family, bool stream);

/* "127.0.0.11 (IPv4, first listen address), kernel's choice (IPv6)": one log line. */
void net_source_describe(const struct net_source *s, char *buf, size_t size);
