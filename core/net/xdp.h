/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The AF_XDP path (`[server] xdp_listen`, doc/config.md): UDP queries to
 * our port on our addresses are taken off the listed interfaces by an XDP
 * program (xdp_prog.bpf.c) before the kernel's IP stack sees them, read
 * from one AF_XDP socket per receive queue, answered by the same handler
 * the socket path calls (so the same bytes), and sent back as frames
 * (xdp_frame.c).  Everything else on those interfaces (TCP, ICMP, ARP,
 * other ports, UPDATE, NOTIFY) passes to the kernel and so to the sockets.
 *
 * It never stops the server from starting: an interface that cannot be
 * served (no such interface, no capability, a driver or kernel that
 * refuses, another program attached) is logged once and left to the
 * sockets, which are bound on it anyway.
 *
 * Built only with GEOACME_XDP (CMake, on where libxdp and libbpf are
 * found); without it xdp_new() logs that the key is ignored.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loop;
struct net_handler;

struct xdp_config {
	const char *const *ifaces;
	size_t n_ifaces;
	const char *const *addrs;   /* the listen addresses: what the program takes */
	size_t n_addrs;
	uint16_t port;              /* the port bound (host order) */
	uint16_t max_size;          /* udp_max_size */
};

struct xdp;

/* NULL when no interface is served (each reason logged once). */
struct xdp *xdp_new(struct loop *l, const struct net_handler *h, const struct xdp_config *cfg);
/* Detaches every program and closes every socket.  NULL-safe. */
void xdp_free(struct xdp *x);

/* The locked memory serving `ifname` takes (one UMEM per receive queue,
 * xdp_memlock.h); 0 for no such interface or a build without AF_XDP. */
size_t xdp_memlock_need(const char *ifname);

/* Whether this binary was built with the AF_XDP path. */
bool xdp_built(void);
