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
 *
 * The datagrams move on epoll: recvmmsg when the socket is readable,
 * sendmmsg for the batch.  A socket whose read fills UDP_BUSY_BATCH or
 * more is busy: it leaves the epoll set and the loop blocks in its
 * recvmmsg instead until it goes quiet (busy_enter below, loop_set_waiter
 * in loop.h), which spares the kernel's call of the epoll waiter for every
 * datagram and reply.  (An io_uring path was removed: it was
 * slower per query at both loads of bench/run.sh; doc/performance.md.)
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/conf/log.h"
#include "core/conf/metrics.h"
#include "core/net/loop.h"
#include "core/net/net_internal.h"
#include "core/wire/arena.h"
#include "core/wire/query.h"

#define UDP_BATCH 32
/* recvmmsg batches per socket per wakeup, so a UDP flood cannot starve
 * TCP and the timers; the level-triggered loop comes back for the rest. */
#define UDP_ROUNDS 8
/* A batch at least this large says the socket is busy: from then on the
 * loop waits in its recvmmsg (busy_enter), or, when it cannot (another
 * socket is busy already), reads it again at once instead of going back
 * to epoll_wait first.  Under load more has arrived while the batch was
 * answered; on a quiet socket (one or two datagrams a wake-up) an extra
 * read would mostly find nothing, so small batches go back to epoll. */
#define UDP_BUSY_BATCH 8
/* A busy socket's recvmmsg waits this long for a datagram before the
 * socket goes back to epoll.  The kernel rounds it up to its clock tick
 * and then some (8 ms at HZ=250 here): the longest the other descriptors
 * and the timers wait, once, when a busy socket goes quiet. */
#define UDP_IDLE_US 1000

/* Room for either an IPv4 or an IPv6 packet-info control message. */
union udp_ctl {
	struct cmsghdr align;
	uint8_t buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
};

struct udp_socket {
	struct udp *u;
	int fd;
	bool pktinfo;        /* bound to a wildcard address */
	bool can_block;      /* has its receive timeout: may be waited on (busy_enter) */
	struct query_addr local;   /* its address; a wildcard's: the port, family 0 */
	char name[NET_NAME_MAX];
};

struct udp {
	struct loop *loop;
	const struct net_handler *h;
	uint16_t max_size;

	struct udp_socket *socks;
	size_t n_socks, max_socks;

	/* The busy socket the loop waits on (busy_enter), and its batch. */
	struct udp_socket *busy_sock;
	struct loop_waiter busy;
	unsigned busy_got;

	/* The batch, made at start. */
	unsigned rx_dirty;                      /* headers the last recvmmsg filled */
	size_t rx_ctl_len;                      /* control room they were set up with */
	uint8_t *bufs;                          /* UDP_BATCH rx + tx buffers */
	struct query qs[UDP_BATCH];
	struct sockaddr_storage names[UDP_BATCH];   /* where recvmmsg puts the addresses */
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
		/* MSG_DONTWAIT: a busy socket is blocking (busy_enter), and a
		 * full send buffer must drop replies, never hold the loop. */
		int r = sendmmsg(fd, u->tx_msgs + sent, count - sent, MSG_DONTWAIT);
		if (r > 0) {
			sent += (unsigned)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* Socket buffer full: drop the rest, UDP clients retry. */
			log_limited(&lim, LOG_WARN, "udp: send buffer full, %u repl%s dropped",
			            count - sent, count - sent == 1 ? "y" : "ies");
			return;
		}
		/* sendmmsg reports an error only for the first message it
		 * could not send (bad destination, too big): skip that one. */
		log_limited(&lim, LOG_WARN, "udp: sendmmsg: %s", r < 0 ? strerror(errno) : "sent 0");
		sent++;
	}
}

/* A wildcard socket's arrival address, from the packet-info control message. */
static void arrival_addr(const struct msghdr *rx, struct query_addr *local)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(rx); c; c = CMSG_NXTHDR((struct msghdr *)rx, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo in;
			memcpy(&in, CMSG_DATA(c), sizeof(in));
			local->family = 4;
			memcpy(local->addr, &in.ipi_addr, 4);
			return;
		}
		if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			bool mapped = IN6_IS_ADDR_V4MAPPED(&pi.ipi6_addr);
			local->family = mapped ? 4 : 6;
			memcpy(local->addr, pi.ipi6_addr.s6_addr + (mapped ? 12 : 0), mapped ? 4 : 16);
			return;
		}
	}
}

/* Fills slot i's query context: the datagram rx, from address name, to socket s. */
static struct query *udp_query(struct udp *u, const struct udp_socket *s, unsigned i,
                               const uint8_t *rx, size_t rx_len, const void *name,
                               socklen_t namelen)
{
	struct query *q = &u->qs[i];

	query_reset(q);
	q->rx = rx;
	q->rx_len = rx_len;
	memcpy(&q->client, name, namelen);
	q->client_len = namelen;
	q->transport = QUERY_UDP;
	q->local = s->local;
	if (s->pktinfo)
		arrival_addr(&u->rx_msgs[i].msg_hdr, &q->local);
	q->tx = u->bufs + (size_t)i * UDP_SLOT_SIZE + UDP_RX_SIZE;
	q->tx_cap = NET_TX_SIZE;
	q->max_size = u->max_size;
	return q;
}

/* Whether the handler left a reply to send. */
static bool udp_has_reply(const struct query *q)
{
	static struct log_limit lim;
	if (q->tx_len == 0)
		return false;
	if (q->tx_len > q->tx_cap) {
		log_limited(&lim, LOG_ERROR, "udp: handler wrote %zu bytes into %zu", q->tx_len,
		            q->tx_cap);
		return false;
	}
	return true;
}

/* The handler asked to reply later (reply_later.h): hands it a token,
 * with the arrival address on a wildcard socket; the reply is a sendmsg
 * of its own on the socket, outside any batch. */
static bool udp_later(const struct udp_socket *s, struct query *q, const struct msghdr *rx)
{
	if (!q->later.take)
		return false;
	union udp_ctl ctl;
	size_t n = s->pktinfo ? reply_pktinfo(rx, &ctl) : 0;
	reply_later_udp(q, s->fd, ctl.buf, n);
	return true;
}

/* Sets up reply header k for q's reply to name; rx: the query's header
 * with its control messages, when the socket answers from the address
 * asked (pktinfo), else NULL. */
static void udp_reply(struct udp *u, unsigned k, void *name, socklen_t namelen,
                      const struct query *q, const struct msghdr *rx)
{
	struct msghdr *o = &u->tx_msgs[k].msg_hdr;
	u->tx_iov[k].iov_base = q->tx;
	u->tx_iov[k].iov_len = q->tx_len;
	o->msg_name = name;
	o->msg_namelen = namelen;
	o->msg_controllen = rx ? reply_pktinfo(rx, &u->tx_ctl[k]) : 0;
	o->msg_control = o->msg_controllen ? u->tx_ctl[k].buf : NULL;
	o->msg_flags = 0;
}

/* Fills the batch from socket s: flags MSG_DONTWAIT (epoll said it is
 * readable) or MSG_WAITFORONE (busy_wait).  Returns how many datagrams
 * arrived, 0 for none. */
static unsigned udp_recv(struct udp *u, struct udp_socket *s, int flags)
{
	static struct log_limit lim;
	/*
	 * recvmmsg rewrites the name and control lengths of the headers it
	 * filled, and only those: restore just them (a batch at moderate load
	 * is a datagram or two, and this loop over all 32 was a visible share
	 * of a query's instructions).
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
	int got = recvmmsg(s->fd, u->rx_msgs, UDP_BATCH, flags, NULL);
	if (got > 0) {
		u->rx_dirty = (unsigned)got;
		return (unsigned)got;
	}
	if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		log_limited(&lim, LOG_WARN, "udp %s: recvmmsg: %s", s->name, strerror(errno));
	return 0;
}

/* Answers the got datagrams of the batch and sends the replies. */
static void udp_serve(struct udp *u, struct udp_socket *s, unsigned got)
{
	unsigned k = 0;
	for (unsigned i = 0; i < got; i++) {
		const struct msghdr *h = &u->rx_msgs[i].msg_hdr;
		if (h->msg_flags & MSG_TRUNC)
			continue;   /* cannot happen with 64 KiB buffers; never answer a partial message */
		struct query *q = udp_query(u, s, i, u->rx_iov[i].iov_base, u->rx_msgs[i].msg_len,
		                            &u->names[i], h->msg_namelen);
		u->h->fn(u->h->ctx, q);
		if (udp_later(s, q, h) || !udp_has_reply(q))
			continue;
		udp_reply(u, k, &u->names[i], h->msg_namelen, q, s->pktinfo ? h : NULL);
		k++;
	}
	if (k)
		udp_send(u, s->fd, k);
}

/* --- busy: the socket waited on in recvmmsg instead of epoll --- */

static void udp_read(struct loop *l, int fd, int events, void *arg);

/* Back to epoll: the socket went quiet (or its receive failed). */
static void busy_leave(struct udp_socket *s)
{
	struct udp *u = s->u;
	loop_set_waiter(u->loop, NULL);
	u->busy_sock = NULL;
	metrics.udp_busy_now = 0;
	if (fcntl(s->fd, F_SETFL, O_NONBLOCK) < 0)
		log_error("udp %s: cannot make the socket non-blocking again: %s", s->name,
		          strerror(errno));
	int rc = loop_add_fd(u->loop, s->fd, LOOP_READ, udp_read, s);
	if (rc < 0)
		log_error("udp %s: cannot watch socket: %s", s->name, strerror(-rc));
}

/* The socket blocks here (it is blocking while busy): for the first
 * datagram, up to its UDP_IDLE_US receive timeout; MSG_WAITFORONE takes
 * the rest of the batch as it is. */
static bool busy_wait(void *arg)
{
	struct udp_socket *s = arg;
	s->u->busy_got = udp_recv(s->u, s, MSG_WAITFORONE);
	if (s->u->busy_got)
		return true;
	busy_leave(s);
	return false;
}

static void busy_serve(void *arg)
{
	struct udp_socket *s = arg;
	udp_serve(s->u, s, s->u->busy_got);
}

/*
 * A full batch says the socket is busy: it leaves the epoll set, whose
 * waiter the kernel would otherwise call for every datagram and every
 * reply freed, and the loop waits in its recvmmsg until it goes quiet
 * (loop_set_waiter; doc/performance.md, "The kernel's side").  One socket
 * at a time: false when another one is busy already.
 */
static bool busy_enter(struct udp_socket *s)
{
	struct udp *u = s->u;
	if (!s->can_block || loop_has_waiter(u->loop))
		return false;
	if (fcntl(s->fd, F_SETFL, 0) < 0)
		return false;
	u->busy_sock = s;
	u->busy = (struct loop_waiter){ .wait = busy_wait, .serve = busy_serve, .arg = s };
	loop_set_waiter(u->loop, &u->busy);
	loop_del_fd(u->loop, s->fd);
	metrics.udp_busy_entered++;
	metrics.udp_busy_now = 1;
	return true;
}

static void udp_read(struct loop *l, int fd, int events, void *arg)
{
	struct udp_socket *s = arg;
	(void)l, (void)fd, (void)events;
	for (int round = 0; round < UDP_ROUNDS; round++) {
		unsigned got = udp_recv(s->u, s, MSG_DONTWAIT);
		if (!got)
			return;
		udp_serve(s->u, s, got);
		if (got < UDP_BUSY_BATCH || busy_enter(s))
			return;   /* drained, or waited on by the loop from now on */
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
		u->tx_msgs[i].msg_hdr.msg_iov = &u->tx_iov[i];
		u->tx_msgs[i].msg_hdr.msg_iovlen = 1;
		struct msghdr *m = &u->rx_msgs[i].msg_hdr;
		m->msg_name = &u->names[i];
		m->msg_iov = &u->rx_iov[i];
		m->msg_iovlen = 1;
		m->msg_control = u->rx_ctl[i].buf;
		m->msg_namelen = sizeof(u->names[i]);
	}
	log_info("udp: served by epoll (recvmmsg/sendmmsg)");
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
	struct sockaddr_storage sa;
	socklen_t sa_len = sizeof(sa);
	if (getsockname(fd, (struct sockaddr *)&sa, &sa_len) == 0)
		query_addr_from(&s->local, &sa);
	if (pktinfo)
		s->local.family = 0;   /* each datagram says where it arrived */
	/* Only a blocking read uses it (busy_wait); the others do not wait. */
	struct timeval idle = { .tv_sec = 0, .tv_usec = UDP_IDLE_US };
	s->can_block = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof(idle)) == 0;
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
	if (u->busy_sock)
		loop_set_waiter(u->loop, NULL);
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
