/* SPDX-License-Identifier: MIT */
/*
 * Listening sockets: parses the configured addresses, binds a UDP and a
 * TCP socket on each, and hands them to udp.c and tcp.c, which own them
 * from then on.  The query path starts in udp.c (or tcp.c).
 */
#include "core/net/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/conf/config.h"
#include "core/conf/log.h"
#include "core/net/loop.h"
#include "core/net/net_internal.h"
#include "core/net/xdp.h"
#include "core/wire/edns.h"

#define NET_UDP_RCVBUF (4 << 20)
#define NET_LISTEN_BACKLOG 1024
#define NET_BIND_TRIES 8   /* port 0: another program may take the port between binds */
/* A fixed port in use is tried again for this long, every 10 ms: a previous
 * instance killed a moment ago (kill -9, a crash) may still hold it while
 * the kernel tears its sockets down. */
#define NET_BIND_WAIT_MS 2000
#define NET_BIND_PAUSE_MS 10

struct net_listener {
	int udp_fd;          /* -1 once handed to udp.c */
	int tcp_fd;          /* -1 once handed to tcp.c */
	int family;
	bool pktinfo;        /* bound to a wildcard address */
	char name[NET_NAME_MAX];   /* "127.0.0.1:53", "[::1]:53" */
};

struct net {
	struct loop *loop;
	struct net_handler h;
	uint16_t port;

	struct net_listener *ls;
	size_t n_ls;
	struct udp *udp;
	struct tcp *tcp;
	struct xdp *xdp;     /* NULL: no interface answered through AF_XDP */
};

/* --- addresses and sockets --- */

static void format_addr(const struct sockaddr *sa, uint16_t port, char *out, size_t cap)
{
	char host[INET6_ADDRSTRLEN] = "?";
	if (sa->sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof(host));
		snprintf(out, cap, "[%s]:%u", host, port);
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, host, sizeof(host));
		snprintf(out, cap, "%s:%u", host, port);
	}
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

static bool is_wildcard(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
}

/* Numeric only (no DNS at start); getaddrinfo also takes "fe80::1%eth0". */
static int parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len,
                      char err[256])
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_PASSIVE,
	                          .ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM };
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(s, NULL, &hints, &res);
	if (rc != 0 || !res || res->ai_addrlen > sizeof(*ss)) {
		snprintf(err, 256, "listen address \"%s\": not a numeric IPv4 or IPv6 address", s);
		if (res)
			freeaddrinfo(res);
		return -EINVAL;
	}
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static int open_socket(struct sockaddr_storage *ss, socklen_t len, int type, bool pktinfo,
                       char err[256])
{
	const char *proto = type == SOCK_DGRAM ? "udp" : "tcp";
	char name[INET6_ADDRSTRLEN + 16];
	uint16_t port = ntohs(ss->ss_family == AF_INET6 ? ((struct sockaddr_in6 *)ss)->sin6_port
	                                                 : ((struct sockaddr_in *)ss)->sin_port);
	format_addr((struct sockaddr *)ss, port, name, sizeof(name));

	int fd = socket(ss->ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		int e = errno;
		snprintf(err, 256, "socket %s (%s): %s", name, proto, strerror(e));
		return -e;
	}
	int one = 1;
	/* TCP: rebind at once after a restart despite TIME_WAIT.  Not for UDP,
	 * where SO_REUSEADDR would let a second instance share the port
	 * silently instead of failing. */
	if (type == SOCK_STREAM && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0) {
		int e = errno;
		snprintf(err, 256, "setsockopt SO_REUSEADDR %s: %s", name, strerror(e));
		close(fd);
		return -e;
	}
	/* Separate IPv4 and IPv6 sockets: each family is configured on its own. */
	if (ss->ss_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) {
		int e = errno;
		snprintf(err, 256, "setsockopt IPV6_V6ONLY %s: %s", name, strerror(e));
		close(fd);
		return -e;
	}
	if (type == SOCK_DGRAM) {
		/* A deep receive queue absorbs bursts; best effort (the kernel
		 * caps SO_RCVBUF at rmem_max unless we may force it). */
		int sz = NET_UDP_RCVBUF;
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0 &&
		    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)) < 0)
			log_warn("udp %s: SO_RCVBUF: %s (the kernel's default queue is used)", name,
			         strerror(errno));
		/* Replies are sized to the interface MTU, never to a path MTU
		 * learnt from ICMP "fragmentation needed": a forged one would
		 * make the kernel fragment our answers, which is what
		 * fragment-based cache poisoning needs (RFC 9715: DNS over UDP
		 * avoids IP fragmentation; Linux added this mode for DNS
		 * servers).  Linux 3.15+; best effort. */
		int omit = ss->ss_family == AF_INET6 ? IPV6_PMTUDISC_OMIT : IP_PMTUDISC_OMIT;
		int pmtu = ss->ss_family == AF_INET6
		    ? setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &omit, sizeof(omit))
		    : setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &omit, sizeof(omit));
		if (pmtu < 0)
			log_warn("udp %s: cannot ignore ICMP path MTU (PMTUDISC_OMIT): %s; a forged "
			         "\"fragmentation needed\" could make the kernel fragment answers", name,
			         strerror(errno));
		if (pktinfo) {
			int rc = ss->ss_family == AF_INET6
			    ? setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one))
			    : setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
			if (rc < 0) {
				int e = errno;
				snprintf(err, 256, "setsockopt PKTINFO %s: %s", name, strerror(e));
				close(fd);
				return -e;
			}
		}
	}
	if (bind(fd, (struct sockaddr *)ss, len) < 0) {
		int e = errno;
		snprintf(err, 256, "bind %s (%s): %s", name, proto, strerror(e));
		close(fd);
		return -e;
	}
	if (type == SOCK_STREAM && listen(fd, NET_LISTEN_BACKLOG) < 0) {
		int e = errno;
		snprintf(err, 256, "listen %s (tcp): %s", name, strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

static void close_listeners(struct net *n)
{
	for (size_t i = 0; i < n->n_ls; i++) {
		struct net_listener *ls = &n->ls[i];
		if (ls->udp_fd >= 0)
			close(ls->udp_fd);
		if (ls->tcp_fd >= 0)
			close(ls->tcp_fd);
		ls->udp_fd = ls->tcp_fd = -1;
	}
}

/* Binds a UDP and a TCP socket on every address.  With port 0 the first
 * socket picks the port and every other one follows it. */
static int bind_all(struct net *n, const struct net_config *cfg, char err[256])
{
	uint16_t port = cfg->port;
	for (size_t i = 0; i < cfg->n_addrs; i++) {
		struct net_listener *ls = &n->ls[i];
		struct sockaddr_storage ss;
		socklen_t len;
		int rc = parse_addr(cfg->addrs[i], &ss, &len, err);
		if (rc < 0)
			return rc;
		ls->family = ss.ss_family;
		ls->pktinfo = is_wildcard(&ss);
		for (int t = 0; t < 2; t++) {
			int type = t == 0 ? SOCK_DGRAM : SOCK_STREAM;
			set_port(&ss, port);
			int fd = open_socket(&ss, len, type, ls->pktinfo, err);
			if (fd < 0)
				return fd;
			if (t == 0)
				ls->udp_fd = fd;
			else
				ls->tcp_fd = fd;
			if (port == 0) {
				struct sockaddr_storage got;
				socklen_t glen = sizeof(got);
				if (getsockname(fd, (struct sockaddr *)&got, &glen) < 0) {
					int e = errno;
					snprintf(err, 256, "getsockname: %s", strerror(e));
					return -e;
				}
				port = ntohs(got.ss_family == AF_INET6
				             ? ((struct sockaddr_in6 *)&got)->sin6_port
				             : ((struct sockaddr_in *)&got)->sin_port);
			}
		}
		format_addr((struct sockaddr *)&ss, port, ls->name, sizeof(ls->name));
	}
	n->port = port;
	return 0;
}

/* --- public --- */

struct net *net_new(struct loop *l, const struct net_config *cfg, net_handler_fn fn,
                    void *ctx, char err[256])
{
	if (!cfg->n_addrs) {
		snprintf(err, 256, "no listen addresses");
		return NULL;
	}
	struct net *n = calloc(1, sizeof(*n));
	if (!n)
		goto oom;
	n->loop = l;
	n->h.fn = fn;
	n->h.ctx = ctx;
	n->ls = calloc(cfg->n_addrs, sizeof(*n->ls));
	if (!n->ls)
		goto oom;
	n->n_ls = cfg->n_addrs;
	for (size_t i = 0; i < n->n_ls; i++)
		n->ls[i].udp_fd = n->ls[i].tcp_fd = -1;

	int rc = -EADDRINUSE;
	int tries = cfg->port ? NET_BIND_WAIT_MS / NET_BIND_PAUSE_MS : NET_BIND_TRIES;
	for (int t = 0; t < tries && rc == -EADDRINUSE; t++) {
		if (t && cfg->port)
			nanosleep(&(struct timespec){ .tv_nsec = NET_BIND_PAUSE_MS * 1000000L }, NULL);
		close_listeners(n);
		rc = bind_all(n, cfg, err);
	}
	if (rc < 0)
		goto fail;

	n->udp = udp_new(l, &n->h, cfg->udp_max_size ? cfg->udp_max_size : EDNS_UDP_DEFAULT, n->n_ls);
	n->tcp = tcp_new(l, &n->h,
	                 cfg->tcp_max_connections ? cfg->tcp_max_connections : CONFIG_TCP_MAX_DEFAULT,
	                 cfg->tcp_max_per_prefix ? cfg->tcp_max_per_prefix
	                                         : CONFIG_TCP_PER_PREFIX_DEFAULT,
	                 cfg->tcp_idle_timeout_ms ? cfg->tcp_idle_timeout_ms : CONFIG_TCP_IDLE_MS_DEFAULT,
	                 cfg->tcp_lifetime_ms ? cfg->tcp_lifetime_ms : CONFIG_TCP_LIFETIME_MS_DEFAULT,
	                 n->n_ls);
	if (!n->udp || !n->tcp)
		goto oom;
	for (size_t i = 0; i < n->n_ls; i++) {
		struct net_listener *ls = &n->ls[i];
		int fd = ls->udp_fd;
		ls->udp_fd = -1;   /* udp.c owns it now, also on failure */
		rc = udp_listen(n->udp, fd, ls->pktinfo, ls->name);
		if (rc < 0) {
			snprintf(err, 256, "%s (udp): cannot watch socket: %s", ls->name, strerror(-rc));
			goto fail;
		}
		fd = ls->tcp_fd;
		ls->tcp_fd = -1;   /* tcp.c owns it now, also on failure */
		rc = tcp_listen(n->tcp, fd);
		if (rc < 0) {
			snprintf(err, 256, "%s (tcp): cannot watch socket: %s", ls->name, strerror(-rc));
			goto fail;
		}
	}
	for (size_t i = 0; i < n->n_ls; i++)
		log_info("listening on %s (udp, tcp)", n->ls[i].name);
	/* After the sockets: whatever the XDP program passes on, and every
	 * interface it cannot take, they answer.  Never fails the start. */
	struct xdp_config xc = {
		.ifaces = cfg->xdp_ifaces, .n_ifaces = cfg->n_xdp_ifaces,
		.addrs = cfg->addrs, .n_addrs = cfg->n_addrs,
		.port = n->port,
		.max_size = cfg->udp_max_size ? cfg->udp_max_size : EDNS_UDP_DEFAULT,
	};
	n->xdp = xdp_new(l, &n->h, &xc);
	return n;

oom:
	snprintf(err, 256, "net: out of memory");
fail:
	net_free(n);
	return NULL;
}

void net_free(struct net *n)
{
	if (!n)
		return;
	xdp_free(n->xdp);
	tcp_free(n->tcp);
	udp_free(n->udp);
	if (n->ls)
		close_listeners(n);
	free(n->ls);
	free(n);
}

void net_set_handler(struct net *n, net_handler_fn fn, void *ctx)
{
	n->h.fn = fn;
	n->h.ctx = ctx;
}

uint16_t net_bound_port(const struct net *n)
{
	return n->port;
}
