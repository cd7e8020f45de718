/* SPDX-License-Identifier: MIT */
/*
 * The UDP path: where every UDP query starts.
 *
 * UDP is served in batches: one recvmmsg fills up to UDP_BATCH query
 * contexts, the handler (answer.c, through net_handler) answers each into
 * its own tx buffer, and one sendmmsg sends the replies from the socket
 * they arrived on.  Contexts, buffers, message headers and arenas are made
 * once in udp_new(), so a datagram costs no allocation and no syscall of
 * its own.
 *
 * Sockets bound to a wildcard address (0.0.0.0, ::) ask for the packet's
 * destination address (IP_PKTINFO / IPV6_RECVPKTINFO) and answer from it,
 * so a multi-homed host replies from the address the client asked.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/conf/log.h"
#include "core/net/loop.h"
#include "core/net/net_internal.h"
#include "core/wire/arena.h"
#include "core/wire/query.h"

#define UDP_BATCH 32
/* recvmmsg batches per socket per wakeup, so a UDP flood cannot starve
 * TCP and the timers; the level-triggered loop comes back for the rest. */
#define UDP_ROUNDS 8

/* Room for either an IPv4 or an IPv6 packet-info control message. */
union udp_ctl {
	struct cmsghdr align;
	uint8_t buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
};

struct udp_socket {
	struct udp *u;
	int fd;
	bool pktinfo;        /* bound to a wildcard address */
	char name[NET_NAME_MAX];
};

struct udp {
	struct loop *loop;
	const struct net_handler *h;
	uint16_t max_size;

	struct udp_socket *socks;
	size_t n_socks, max_socks;

	/* The batch, made at start. */
	unsigned rx_dirty;                      /* headers the last recvmmsg filled */
	size_t rx_ctl_len;                      /* control room they were set up with */
	uint8_t *bufs;                          /* UDP_BATCH rx + tx buffers */
	struct query qs[UDP_BATCH];
	struct sockaddr_storage names[UDP_BATCH];
	struct mmsghdr rx_msgs[UDP_BATCH];
	struct iovec rx_iov[UDP_BATCH];
	union udp_ctl rx_ctl[UDP_BATCH];
	struct mmsghdr tx_msgs[UDP_BATCH];
	struct iovec tx_iov[UDP_BATCH];
	union udp_ctl tx_ctl[UDP_BATCH];
};

/* Each batch slot: rx (a maximal datagram, rounded up so tx starts
 * aligned) then tx. */
#define UDP_RX_SIZE (QUERY_MSG_MAX + 1)
#define UDP_SLOT_SIZE ((UDP_RX_SIZE + NET_TX_SIZE + 63) & ~(size_t)63)

/* Copies the arrival address into the reply's control message, so the
 * reply leaves from the address the query was sent to. */
static size_t reply_pktinfo(const struct msghdr *rx, union udp_ctl *out)
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

static void udp_send(struct udp *u, int fd, unsigned count)
{
	static struct log_limit lim;
	unsigned sent = 0;
	while (sent < count) {
		int r = sendmmsg(fd, u->tx_msgs + sent, count - sent, 0);
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

/* Fills slot i's query context from the datagram recvmmsg put there. */
static struct query *udp_query(struct udp *u, unsigned i)
{
	const struct msghdr *h = &u->rx_msgs[i].msg_hdr;
	struct query *q = &u->qs[i];

	query_reset(q);
	q->rx = u->rx_iov[i].iov_base;
	q->rx_len = u->rx_msgs[i].msg_len;
	memcpy(&q->client, &u->names[i], h->msg_namelen);
	q->client_len = h->msg_namelen;
	q->transport = QUERY_UDP;
	q->tx = u->bufs + (size_t)i * UDP_SLOT_SIZE + UDP_RX_SIZE;
	q->tx_cap = NET_TX_SIZE;
	q->max_size = u->max_size;
	return q;
}

static void udp_read(struct loop *l, int fd, int events, void *arg)
{
	static struct log_limit lim;
	struct udp_socket *s = arg;
	struct udp *u = s->u;

	for (int round = 0; round < UDP_ROUNDS; round++) {
		/*
		 * recvmmsg rewrites the name and control lengths of the headers
		 * it filled, and only those: restore just them (a batch at
		 * moderate load is a datagram or two, and this loop over all 32
		 * was a visible share of a query's instructions).
		 */
		size_t ctl = s->pktinfo ? sizeof(u->rx_ctl[0]) : 0;
		unsigned dirty = u->rx_dirty > UDP_BATCH ? UDP_BATCH : u->rx_dirty;
		if (ctl != u->rx_ctl_len) {
			u->rx_ctl_len = ctl;   /* another socket's kind: all of them */
			dirty = UDP_BATCH;
		}
		for (unsigned i = 0; i < dirty; i++) {
			struct msghdr *h = &u->rx_msgs[i].msg_hdr;
			h->msg_namelen = sizeof(u->names[i]);
			h->msg_controllen = ctl;
			h->msg_flags = 0;
		}
		u->rx_dirty = 0;
		int got = recvmmsg(fd, u->rx_msgs, UDP_BATCH, 0, NULL);
		if (got > 0)
			u->rx_dirty = (unsigned)got;
		if (got <= 0) {
			if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				log_limited(&lim, LOG_WARN, "udp %s: recvmmsg: %s", s->name,
				            strerror(errno));
			return;
		}

		unsigned k = 0;
		for (unsigned i = 0; i < (unsigned)got; i++) {
			const struct msghdr *h = &u->rx_msgs[i].msg_hdr;
			if (h->msg_flags & MSG_TRUNC)
				continue;   /* cannot happen with 64 KiB buffers; never answer a partial message */
			struct query *q = udp_query(u, i);
			u->h->fn(u->h->ctx, q);
			if (q->tx_len == 0)
				continue;
			if (q->tx_len > q->tx_cap) {
				log_limited(&lim, LOG_ERROR, "udp: handler wrote %zu bytes into %zu",
				            q->tx_len, q->tx_cap);
				continue;
			}
			struct msghdr *o = &u->tx_msgs[k].msg_hdr;
			u->tx_iov[k].iov_base = q->tx;
			u->tx_iov[k].iov_len = q->tx_len;
			o->msg_name = &u->names[i];
			o->msg_namelen = h->msg_namelen;
			o->msg_controllen = s->pktinfo ? reply_pktinfo(h, &u->tx_ctl[k]) : 0;
			o->msg_control = o->msg_controllen ? u->tx_ctl[k].buf : NULL;
			o->msg_flags = 0;
			k++;
		}
		if (k)
			udp_send(u, fd, k);
		if (got < UDP_BATCH)
			return;   /* drained */
	}
}

struct udp *udp_new(struct loop *l, const struct net_handler *h, uint16_t max_size,
                    size_t max_sockets)
{
	struct udp *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->loop = l;
	u->h = h;
	u->max_size = max_size;
	u->max_socks = max_sockets;
	u->socks = calloc(max_sockets ? max_sockets : 1, sizeof(*u->socks));
	u->bufs = malloc((size_t)UDP_BATCH * UDP_SLOT_SIZE);
	if (!u->socks || !u->bufs)
		goto fail;
	for (unsigned i = 0; i < UDP_BATCH; i++) {
		u->qs[i].arena = arena_new(NET_ARENA_CHUNK);
		if (!u->qs[i].arena)
			goto fail;
		u->rx_iov[i].iov_base = u->bufs + (size_t)i * UDP_SLOT_SIZE;
		u->rx_iov[i].iov_len = QUERY_MSG_MAX;
		struct msghdr *m = &u->rx_msgs[i].msg_hdr;
		m->msg_name = &u->names[i];
		m->msg_iov = &u->rx_iov[i];
		m->msg_iovlen = 1;
		m->msg_control = u->rx_ctl[i].buf;
		m->msg_namelen = sizeof(u->names[i]);
		u->tx_msgs[i].msg_hdr.msg_iov = &u->tx_iov[i];
		u->tx_msgs[i].msg_hdr.msg_iovlen = 1;
	}
	return u;
fail:
	udp_free(u);
	return NULL;
}

int udp_listen(struct udp *u, int fd, bool pktinfo, const char *name)
{
	if (u->n_socks >= u->max_socks) {
		close(fd);
		return -ENOSPC;
	}
	struct udp_socket *s = &u->socks[u->n_socks];
	*s = (struct udp_socket){ .u = u, .fd = fd, .pktinfo = pktinfo };
	snprintf(s->name, sizeof(s->name), "%s", name);
	int rc = loop_add_fd(u->loop, fd, LOOP_READ, udp_read, s);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	u->n_socks++;
	return 0;
}

void udp_free(struct udp *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->n_socks; i++) {
		loop_del_fd(u->loop, u->socks[i].fd);
		close(u->socks[i].fd);
	}
	for (unsigned i = 0; i < UDP_BATCH; i++)
		arena_free(u->qs[i].arena);
	free(u->bufs);
	free(u->socks);
	free(u);
}
