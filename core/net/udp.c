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
 * Two ways to move the datagrams, the same answers either way:
 * - io_uring (udp_io = "io_uring", where the kernel allows it; uring.h): each
 *   socket has a multishot receive that lands datagrams in provided
 *   buffers and posts them as completions; each reply is a send entry
 *   from its own slot (query context, tx buffer, header, address,
 *   control).  The loop submits the replies and waits for the next
 *   datagram in one system call.  A send is marked MSG_DONTWAIT, so the
 *   kernel finishes it inside that call (sent, or failed with EAGAIN like
 *   sendmmsg when the socket buffer is full) instead of parking it, and
 *   posts a completion only on failure (IOSQE_CQE_SKIP_SUCCESS): once the
 *   replies are submitted, every slot is free again.
 * - epoll: recvmmsg when the socket is readable, sendmmsg for the batch
 *   (the default, udp_io = "epoll"; and when io_uring is unavailable).
 *   A socket whose read fills UDP_BUSY_BATCH or more is busy: it leaves
 *   the epoll set and the loop blocks in its recvmmsg instead until it
 *   goes quiet (busy_enter below, loop_set_waiter in loop.h), which spares
 *   the kernel's call of the epoll waiter for every datagram and reply.
 *   The default because it meets the user-space instruction targets of
 *   doc/performance.md (the ring's own bookkeeping costs about 230
 *   instructions a datagram) while the ring's fewer system calls pay only
 *   at saturation, and because io_uring is often disabled on hardened
 *   hosts; doc/performance.md, "The kernel's side", has the numbers.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
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
#include "core/net/uring.h"
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

/* The ring: its size, and its provided buffers (one datagram each, with
 * the kernel's recvmsg header, the address and the control message in
 * front). */
#define UDP_RING_ENTRIES 128
#define UDP_RING_GROUP 1
#define UDP_RING_BUFS UDP_BATCH
/* user_data of a send and of a cancel; a receive's is its socket's index. */
#define UDP_RING_SEND (UINT64_C(1) << 40)
#define UDP_RING_CANCEL (UINT64_C(1) << 41)
/* The spare slot: answers a datagram if the replies queued could not all
 * be submitted (their slots still in use); sent at once with sendmsg(). */
#define UDP_SPARE UDP_BATCH

/* Room for either an IPv4 or an IPv6 packet-info control message. */
union udp_ctl {
	struct cmsghdr align;
	uint8_t buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
};

struct udp_socket {
	struct udp *u;
	int fd;
	bool pktinfo;        /* bound to a wildcard address */
	bool on_ring;        /* served by the ring's multishot receive */
	bool armed;          /* that receive is in the kernel */
	bool can_block;      /* has its receive timeout: may be waited on (busy_enter) */
	struct msghdr ring_msg;   /* the receive's layout: address and control room */
	char name[NET_NAME_MAX];
};

struct udp {
	struct loop *loop;
	const struct net_handler *h;
	uint16_t max_size;

	struct udp_socket *socks;
	size_t n_socks, max_socks;

	/* The ring (NULL: the epoll path) and its reply slots. */
	struct uring *ring;
	struct uring_bufs *ring_bufs;
	int ring_owner;
	uint64_t ring_epoch;         /* uring_epoch() when ring_used was counted */
	unsigned ring_used;          /* slots holding replies not yet submitted */
	bool ring_stopping;          /* udp_free: receives being cancelled */

	/* The busy socket the loop waits on (busy_enter), and its batch. */
	struct udp_socket *busy_sock;
	struct loop_waiter busy;
	unsigned busy_got;

	/* The batch (epoll) or the reply slots (ring), made at start; one
	 * more slot than a batch: the ring's spare. */
	unsigned rx_dirty;                      /* headers the last recvmmsg filled */
	size_t rx_ctl_len;                      /* control room they were set up with */
	uint8_t *bufs;                          /* UDP_BATCH + 1 rx + tx buffers */
	struct query qs[UDP_BATCH + 1];
	struct sockaddr_storage names[UDP_BATCH];   /* epoll: where recvmmsg puts the addresses */
	struct mmsghdr rx_msgs[UDP_BATCH];
	struct iovec rx_iov[UDP_BATCH + 1];
	union udp_ctl rx_ctl[UDP_BATCH];
	struct mmsghdr tx_msgs[UDP_BATCH + 1];
	struct iovec tx_iov[UDP_BATCH + 1];
	union udp_ctl tx_ctl[UDP_BATCH + 1];
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

/* Fills slot i's query context: the datagram rx, from address name. */
static struct query *udp_query(struct udp *u, unsigned i, const uint8_t *rx, size_t rx_len,
                               const void *name, socklen_t namelen)
{
	struct query *q = &u->qs[i];

	query_reset(q);
	q->rx = rx;
	q->rx_len = rx_len;
	memcpy(&q->client, name, namelen);
	q->client_len = namelen;
	q->transport = QUERY_UDP;
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
 * of its own on the socket, outside any batch or ring. */
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
		struct query *q = udp_query(u, i, u->rx_iov[i].iov_base, u->rx_msgs[i].msg_len,
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
 * at a time: false when another one is busy already, or on the ring.
 */
static bool busy_enter(struct udp_socket *s)
{
	struct udp *u = s->u;
	if (u->ring || !s->can_block || loop_has_waiter(u->loop))
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

/* --- the ring path --- */

static void ring_to_epoll(struct udp_socket *s, const char *why)
{
	log_warn("udp %s: io_uring receive failed (%s): served by epoll (recvmmsg) from now on",
	         s->name, why);
	s->on_ring = false;
	int rc = loop_add_fd(s->u->loop, s->fd, LOOP_READ, udp_read, s);
	if (rc < 0)
		log_error("udp %s: cannot watch socket: %s", s->name, strerror(-rc));
}

/* The socket's multishot receive: one entry, completions until it ends. */
static void ring_arm(struct udp *u, struct udp_socket *s)
{
	struct io_uring_sqe *sqe = uring_sqe(u->ring, u->ring_owner, (uint64_t)(s - u->socks));
	if (!sqe) {
		ring_to_epoll(s, "submission queue full");
		return;
	}
	s->armed = true;
	sqe->opcode = IORING_OP_RECVMSG;
	sqe->fd = s->fd;
	sqe->addr = (uint64_t)(uintptr_t)&s->ring_msg;
	sqe->len = 1;
	sqe->ioprio = IORING_RECV_MULTISHOT;
	sqe->flags = IOSQE_BUFFER_SELECT;
	sqe->buf_group = UDP_RING_GROUP;
}

/* A reply slot: the next one not queued since the last submission.  When
 * all are (a burst answered in one pass), submit them: their sends are
 * done when that returns.  UDP_SPARE if even that fails. */
static unsigned ring_slot(struct udp *u)
{
	if (u->ring_used == UDP_BATCH)
		uring_submit(u->ring);
	uint64_t epoch = uring_epoch(u->ring);
	if (epoch != u->ring_epoch) {
		u->ring_epoch = epoch;
		u->ring_used = 0;
	}
	return u->ring_used < UDP_BATCH ? u->ring_used++ : UDP_SPARE;
}

/* Answers the datagram in provided buffer buf (len bytes used), queueing
 * the reply from a reply slot. */
static void ring_answer(struct udp *u, struct udp_socket *s, const uint8_t *buf, size_t len)
{
	static struct log_limit lim;
	const struct io_uring_recvmsg_out *o = (const void *)buf;
	const uint8_t *name = buf + sizeof(*o);
	const uint8_t *ctl = name + s->ring_msg.msg_namelen;
	const uint8_t *payload = ctl + s->ring_msg.msg_controllen;
	if (len < (size_t)(payload - buf) || (o->flags & MSG_TRUNC) ||
	    o->namelen > s->ring_msg.msg_namelen || o->payloadlen > len - (size_t)(payload - buf))
		return;   /* cannot happen with 64 KiB buffers; never answer a partial message */
	unsigned i = ring_slot(u);
	socklen_t namelen = o->namelen;
	struct query *q = udp_query(u, i, payload, o->payloadlen, name, namelen);
	u->h->fn(u->h->ctx, q);
	struct msghdr rx = { .msg_control = (void *)ctl, .msg_controllen = o->controllen };
	if (udp_later(s, q, &rx) || !udp_has_reply(q))
		return;   /* the slot is taken until the next submission all the same */
	/* The reply goes to the copy of the address in the query context
	 * (the buffer goes back to the kernel before the send is submitted). */
	udp_reply(u, i, &q->client, namelen, q, s->pktinfo ? &rx : NULL);
	if (i != UDP_SPARE) {
		struct io_uring_sqe *sqe = uring_sqe(u->ring, u->ring_owner, UDP_RING_SEND);
		if (uring_epoch(u->ring) != u->ring_epoch) {
			/* The queue was full and uring_sqe() submitted it after slot
			 * i was taken: no slot is handed out again until this send
			 * is submitted too. */
			u->ring_epoch = uring_epoch(u->ring);
			u->ring_used = UDP_BATCH;
		}
		if (sqe) {
			sqe->opcode = IORING_OP_SENDMSG;
			sqe->fd = s->fd;
			sqe->addr = (uint64_t)(uintptr_t)&u->tx_msgs[i].msg_hdr;
			sqe->len = 1;
			sqe->msg_flags = MSG_DONTWAIT;
			sqe->flags = IOSQE_CQE_SKIP_SUCCESS;
			return;
		}
	}
	/* No slot or no room to queue: send it now. */
	if (sendmsg(s->fd, &u->tx_msgs[i].msg_hdr, MSG_DONTWAIT) < 0)
		log_limited(&lim, LOG_WARN, "udp %s: sendmsg: %s", s->name, strerror(errno));
}

static void ring_recv(struct udp *u, struct udp_socket *s, const struct io_uring_cqe *c)
{
	if (c->flags & IORING_CQE_F_BUFFER) {
		unsigned id = c->flags >> IORING_CQE_BUFFER_SHIFT;
		const uint8_t *buf = uring_buf(u->ring_bufs, id);
		if (buf && c->res > 0 && !u->ring_stopping)
			ring_answer(u, s, buf, (size_t)c->res);
		if (buf)
			uring_buf_put(u->ring_bufs, id);   /* the reply is in the slot now */
	}
	if (c->flags & IORING_CQE_F_MORE)
		return;
	s->armed = false;
	if (u->ring_stopping)
		return;
	/* The receive ended: out of buffers (a burst longer than the ring)
	 * or interrupted is routine, arm it again; anything else means this
	 * socket cannot be served by the ring. */
	if (c->res >= 0 || c->res == -ENOBUFS || c->res == -EINTR || c->res == -EAGAIN)
		ring_arm(u, s);
	else
		ring_to_epoll(s, strerror(-c->res));
}

/* Only failed sends post a completion: EAGAIN is a full socket buffer, as
 * with sendmmsg; UDP clients retry a dropped reply. */
static void ring_send_failed(int res)
{
	static struct log_limit lim;
	if (res == -EAGAIN)
		log_limited(&lim, LOG_WARN, "udp: send buffer full, reply dropped");
	else if (res < 0)
		log_limited(&lim, LOG_WARN, "udp: send: %s, reply dropped", strerror(-res));
}

static void ring_complete(void *arg, const struct io_uring_cqe *c)
{
	struct udp *u = arg;
	uint64_t d = c->user_data & URING_DATA_MASK;
	if (d & UDP_RING_SEND)
		ring_send_failed(c->res);
	else if (d & UDP_RING_CANCEL)
		return;
	else if (d < u->n_socks)
		ring_recv(u, &u->socks[d], c);
}

/* Makes the ring, its buffers and slots, and has the loop wait in it. */
static int ring_start(struct udp *u, char err[256])
{
	u->ring = uring_new(UDP_RING_ENTRIES, err);
	if (!u->ring)
		return -EOPNOTSUPP;
	size_t size = sizeof(struct io_uring_recvmsg_out) + sizeof(struct sockaddr_storage) +
	              sizeof(union udp_ctl) + QUERY_MSG_MAX;
	size = (size + 4095) & ~(size_t)4095;
	u->ring_bufs = uring_bufs_new(u->ring, UDP_RING_GROUP, UDP_RING_BUFS, size, err);
	if (!u->ring_bufs)
		return -EOPNOTSUPP;
	u->ring_owner = uring_owner_add(u->ring, ring_complete, u);
	int rc = u->ring_owner < 0 ? u->ring_owner : loop_set_ring(u->loop, u->ring);
	if (rc < 0) {
		snprintf(err, 256, "io_uring: %s", strerror(-rc));
		return rc;
	}
	return 0;
}

/*
 * Closing the ring would end the receives in the background, and each
 * holds its socket (and so its port) until then: a server restarted at
 * once could not bind.  Cancel them and wait for their last completions.
 */
static void ring_cancel(struct udp *u)
{
	u->ring_stopping = true;
	for (size_t i = 0; i < u->n_socks; i++) {
		struct udp_socket *s = &u->socks[i];
		if (!s->armed)
			continue;
		struct io_uring_sqe *sqe = uring_sqe(u->ring, u->ring_owner, UDP_RING_CANCEL);
		if (!sqe)
			break;
		sqe->opcode = IORING_OP_ASYNC_CANCEL;
		sqe->fd = s->fd;
		sqe->cancel_flags = IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ALL;
	}
	for (int tries = 0; tries < 100; tries++) {
		size_t armed = 0;
		for (size_t i = 0; i < u->n_socks; i++)
			armed += u->socks[i].armed;
		if (!armed)
			return;
		int rc = uring_wait(u->ring, 10);
		if (rc < 0 && rc != -ETIME && rc != -EINTR)
			return;
		uring_dispatch(u->ring, UINT32_MAX);
	}
	log_warn("udp: io_uring receives not cancelled in time");
}

static void ring_stop(struct udp *u)
{
	if (!u->ring)
		return;
	ring_cancel(u);
	loop_set_ring(u->loop, NULL);
	/* Closing the ring ends its requests; the buffers go after it. */
	uring_free(u->ring);
	uring_bufs_free(NULL, u->ring_bufs);
	u->ring = NULL;
	u->ring_bufs = NULL;
}

struct udp *udp_new(struct loop *l, const struct net_handler *h, uint16_t max_size,
                    size_t max_sockets, bool try_ring)
{
	struct udp *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->loop = l;
	u->h = h;
	u->max_size = max_size;
	u->max_socks = max_sockets;
	u->socks = calloc(max_sockets ? max_sockets : 1, sizeof(*u->socks));
	u->bufs = malloc((size_t)(UDP_BATCH + 1) * UDP_SLOT_SIZE);
	if (!u->socks || !u->bufs)
		goto fail;
	for (unsigned i = 0; i <= UDP_BATCH; i++) {
		u->qs[i].arena = arena_new(NET_ARENA_CHUNK);
		if (!u->qs[i].arena)
			goto fail;
		u->rx_iov[i].iov_base = u->bufs + (size_t)i * UDP_SLOT_SIZE;
		u->rx_iov[i].iov_len = QUERY_MSG_MAX;
		u->tx_msgs[i].msg_hdr.msg_iov = &u->tx_iov[i];
		u->tx_msgs[i].msg_hdr.msg_iovlen = 1;
		if (i == UDP_BATCH)
			break;
		struct msghdr *m = &u->rx_msgs[i].msg_hdr;
		m->msg_name = &u->names[i];
		m->msg_iov = &u->rx_iov[i];
		m->msg_iovlen = 1;
		m->msg_control = u->rx_ctl[i].buf;
		m->msg_namelen = sizeof(u->names[i]);
	}
	char err[256] = "udp_io = \"epoll\"";
	if (try_ring && ring_start(u, err) < 0)
		ring_stop(u);
	if (u->ring)
		log_info("udp: served by io_uring (multishot receive, %u buffers, one system call "
		         "per wake-up)", UDP_RING_BUFS);
	else
		log_info("udp: served by epoll (recvmmsg/sendmmsg): %s", err);
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
	/* Only a blocking read uses it (busy_wait); the others do not wait. */
	struct timeval idle = { .tv_sec = 0, .tv_usec = UDP_IDLE_US };
	s->can_block = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof(idle)) == 0;
	if (u->ring) {
		/* The kernel reads only the two lengths: the room it leaves for
		 * the address and the control message in each buffer. */
		s->ring_msg.msg_namelen = sizeof(struct sockaddr_storage);
		s->ring_msg.msg_controllen = pktinfo ? sizeof(union udp_ctl) : 0;
		s->on_ring = true;
		u->n_socks++;
		ring_arm(u, s);
		return 0;
	}
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
	ring_stop(u);
	if (u->busy_sock)
		loop_set_waiter(u->loop, NULL);
	for (size_t i = 0; i < u->n_socks; i++) {
		if (!u->socks[i].on_ring)
			loop_del_fd(u->loop, u->socks[i].fd);
		close(u->socks[i].fd);
	}
	for (unsigned i = 0; i <= UDP_BATCH; i++)
		arena_free(u->qs[i].arena);
	free(u->bufs);
	free(u->socks);
	free(u);
}
