/*
 * Listening sockets and the UDP path.
 *
 * UDP is served in batches: one recvmmsg fills up to NET_BATCH query
 * contexts, the handler answers each into its own tx buffer, and one
 * sendmmsg sends the replies from the socket they arrived on.  Contexts,
 * buffers, message headers and arenas are made once in net_new(), so a
 * datagram costs no allocation and no syscall of its own.
 *
 * Sockets bound to a wildcard address (0.0.0.0, ::) ask for the packet's
 * destination address (IP_PKTINFO / IPV6_RECVPKTINFO) and answer from it,
 * so a multi-homed host replies from the address the client asked.
 */
#include "core/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/arena.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/net_internal.h"
#include "core/query.h"

#define NET_BATCH 32
/* recvmmsg batches per socket per wakeup, so a UDP flood cannot starve
 * TCP and the timers; the level-triggered loop comes back for the rest. */
#define NET_UDP_ROUNDS 8
#define NET_UDP_RCVBUF (4 << 20)
#define NET_LISTEN_BACKLOG 1024
#define NET_BIND_TRIES 8   /* port 0: another program may take the port between binds */

/* Room for either an IPv4 or an IPv6 packet-info control message. */
union net_ctl {
	struct cmsghdr align;
	uint8_t buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
};

struct net_listener {
	struct net *n;
	int udp_fd;
	int tcp_fd;          /* -1 once handed to tcp.c */
	int family;
	bool pktinfo;        /* bound to a wildcard address */
	bool udp_registered;
	char name[INET6_ADDRSTRLEN + 16];   /* "127.0.0.1:53", "[::1]:53" */
};

struct net {
	struct loop *loop;
	struct net_handler h;
	uint16_t port;
	uint16_t udp_max_size;

	struct net_listener *ls;
	size_t n_ls;
	struct tcp *tcp;

	/* The UDP batch, made at start. */
	uint8_t *bufs;                          /* NET_BATCH rx + tx buffers */
	struct query qs[NET_BATCH];
	struct sockaddr_storage names[NET_BATCH];
	struct mmsghdr rx_msgs[NET_BATCH];
	struct iovec rx_iov[NET_BATCH];
	union net_ctl rx_ctl[NET_BATCH];
	struct mmsghdr tx_msgs[NET_BATCH];
	struct iovec tx_iov[NET_BATCH];
	union net_ctl tx_ctl[NET_BATCH];
};

/* Each batch slot: rx (a maximal datagram, rounded up so tx starts
 * aligned) then tx. */
#define NET_RX_SIZE (QUERY_MSG_MAX + 1)
#define NET_SLOT_SIZE ((NET_RX_SIZE + NET_TX_SIZE + 63) & ~(size_t)63)

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
	if (type == SOCK_STREAM)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
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
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
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
		if (ls->udp_fd >= 0) {
			if (ls->udp_registered)
				loop_del_fd(n->loop, ls->udp_fd);
			close(ls->udp_fd);
		}
		if (ls->tcp_fd >= 0)
			close(ls->tcp_fd);
		ls->udp_fd = ls->tcp_fd = -1;
		ls->udp_registered = false;
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

/* --- UDP --- */

/* Copies the arrival address into the reply's control message, so the
 * reply leaves from the address the query was sent to. */
static size_t reply_pktinfo(const struct msghdr *rx, union net_ctl *out)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(rx); c; c = CMSG_NXTHDR((struct msghdr *)rx, c)) {
		struct cmsghdr *o = &out->align;
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo in, pi = { 0 };
			memcpy(&in, CMSG_DATA(c), sizeof(in));
			pi.ipi_spec_dst = in.ipi_addr;   /* source = where it arrived */
			o->cmsg_level = IPPROTO_IP;
			o->cmsg_type = IP_PKTINFO;
			o->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(CMSG_DATA(o), &pi, sizeof(pi));
			return CMSG_SPACE(sizeof(pi));
		}
		if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;
			/* Keep the interface too: link-local sources need it. */
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			o->cmsg_level = IPPROTO_IPV6;
			o->cmsg_type = IPV6_PKTINFO;
			o->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(CMSG_DATA(o), &pi, sizeof(pi));
			return CMSG_SPACE(sizeof(pi));
		}
	}
	return 0;
}

static void udp_send(struct net *n, int fd, unsigned count)
{
	static struct log_limit lim;
	unsigned sent = 0;
	while (sent < count) {
		int r = sendmmsg(fd, n->tx_msgs + sent, count - sent, 0);
		if (r > 0) {
			sent += (unsigned)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* Socket buffer full: drop the rest, UDP clients retry. */
			log_limited(&lim, LOG_WARN, "udp: send buffer full, %u replies dropped",
			            count - sent);
			return;
		}
		/* sendmmsg reports an error only for the first message it
		 * could not send (bad destination, too big): skip that one. */
		log_limited(&lim, LOG_WARN, "udp: sendmmsg: %s", r < 0 ? strerror(errno) : "sent 0");
		sent++;
	}
}

static void udp_read(struct loop *l, int fd, int events, void *arg)
{
	static struct log_limit lim;
	struct net_listener *ls = arg;
	struct net *n = ls->n;

	for (int round = 0; round < NET_UDP_ROUNDS; round++) {
		for (unsigned i = 0; i < NET_BATCH; i++) {
			struct msghdr *h = &n->rx_msgs[i].msg_hdr;
			h->msg_namelen = sizeof(n->names[i]);
			h->msg_controllen = ls->pktinfo ? sizeof(n->rx_ctl[i]) : 0;
			h->msg_flags = 0;
		}
		int got = recvmmsg(fd, n->rx_msgs, NET_BATCH, 0, NULL);
		if (got <= 0) {
			if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				log_limited(&lim, LOG_WARN, "udp %s: recvmmsg: %s", ls->name,
				            strerror(errno));
			return;
		}

		unsigned k = 0;
		for (unsigned i = 0; i < (unsigned)got; i++) {
			const struct msghdr *h = &n->rx_msgs[i].msg_hdr;
			if (h->msg_flags & MSG_TRUNC)
				continue;   /* cannot happen with 64 KiB buffers; never answer a partial message */
			struct query *q = &n->qs[i];
			query_reset(q);
			q->rx = n->rx_iov[i].iov_base;
			q->rx_len = n->rx_msgs[i].msg_len;
			memcpy(&q->client, &n->names[i], h->msg_namelen);
			q->client_len = h->msg_namelen;
			q->transport = QUERY_UDP;
			q->tx = n->bufs + (size_t)i * NET_SLOT_SIZE + NET_RX_SIZE;
			q->tx_cap = NET_TX_SIZE;
			q->max_size = n->udp_max_size;
			n->h.fn(n->h.ctx, q);
			if (q->tx_len == 0)
				continue;
			if (q->tx_len > q->tx_cap) {
				log_limited(&lim, LOG_ERROR, "udp: handler wrote %zu bytes into %zu",
				            q->tx_len, q->tx_cap);
				continue;
			}
			struct msghdr *o = &n->tx_msgs[k].msg_hdr;
			n->tx_iov[k].iov_base = q->tx;
			n->tx_iov[k].iov_len = q->tx_len;
			o->msg_name = &n->names[i];
			o->msg_namelen = h->msg_namelen;
			o->msg_controllen = ls->pktinfo ? reply_pktinfo(h, &n->tx_ctl[k]) : 0;
			o->msg_control = o->msg_controllen ? n->tx_ctl[k].buf : NULL;
			o->msg_flags = 0;
			k++;
		}
		if (k)
			udp_send(n, fd, k);
		if (got < NET_BATCH)
			return;   /* drained */
	}
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
	n->udp_max_size = cfg->udp_max_size ? cfg->udp_max_size : 1232;
	n->ls = calloc(cfg->n_addrs, sizeof(*n->ls));
	n->bufs = malloc((size_t)NET_BATCH * NET_SLOT_SIZE);
	if (!n->ls || !n->bufs)
		goto oom;
	n->n_ls = cfg->n_addrs;
	for (size_t i = 0; i < n->n_ls; i++) {
		n->ls[i].n = n;
		n->ls[i].udp_fd = n->ls[i].tcp_fd = -1;
	}
	for (unsigned i = 0; i < NET_BATCH; i++) {
		n->qs[i].arena = arena_new(NET_ARENA_CHUNK);
		if (!n->qs[i].arena)
			goto oom;
		n->rx_iov[i].iov_base = n->bufs + (size_t)i * NET_SLOT_SIZE;
		n->rx_iov[i].iov_len = QUERY_MSG_MAX;
		struct msghdr *h = &n->rx_msgs[i].msg_hdr;
		h->msg_name = &n->names[i];
		h->msg_iov = &n->rx_iov[i];
		h->msg_iovlen = 1;
		h->msg_control = n->rx_ctl[i].buf;
		n->tx_msgs[i].msg_hdr.msg_iov = &n->tx_iov[i];
		n->tx_msgs[i].msg_hdr.msg_iovlen = 1;
	}

	int rc = -EADDRINUSE;
	for (int t = 0; t < (cfg->port ? 1 : NET_BIND_TRIES) && rc == -EADDRINUSE; t++) {
		close_listeners(n);
		rc = bind_all(n, cfg, err);
	}
	if (rc < 0)
		goto fail;

	n->tcp = tcp_new(l, &n->h,
	                 cfg->tcp_max_connections ? cfg->tcp_max_connections : NET_TCP_DEFAULT_MAX,
	                 cfg->tcp_max_per_prefix ? cfg->tcp_max_per_prefix
	                                         : NET_TCP_DEFAULT_PER_PREFIX,
	                 cfg->tcp_idle_timeout_ms ? cfg->tcp_idle_timeout_ms : NET_TCP_DEFAULT_IDLE_MS,
	                 n->n_ls);
	if (!n->tcp)
		goto oom;
	for (size_t i = 0; i < n->n_ls; i++) {
		struct net_listener *ls = &n->ls[i];
		rc = loop_add_fd(l, ls->udp_fd, LOOP_READ, udp_read, ls);
		if (rc < 0) {
			snprintf(err, 256, "%s (udp): cannot watch socket: %s", ls->name, strerror(-rc));
			goto fail;
		}
		ls->udp_registered = true;
		int fd = ls->tcp_fd;
		ls->tcp_fd = -1;   /* tcp.c owns it now, also on failure */
		rc = tcp_listen(n->tcp, fd);
		if (rc < 0) {
			snprintf(err, 256, "%s (tcp): cannot watch socket: %s", ls->name, strerror(-rc));
			goto fail;
		}
	}
	for (size_t i = 0; i < n->n_ls; i++)
		log_info("listening on %s (udp, tcp)", n->ls[i].name);
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
	tcp_free(n->tcp);
	if (n->ls)
		close_listeners(n);
	for (unsigned i = 0; i < NET_BATCH; i++)
		arena_free(n->qs[i].arena);
	free(n->bufs);
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
