/* SPDX-License-Identifier: MIT */
/*
 * DNS over TCP (RFC 7766): 2-byte length framing, pipelined queries
 * answered in order, partial reads and writes, an idle timeout, a lifetime
 * that only a connection making progress outlives (below), and connection
 * caps that make room by closing connections in an order that spares real
 * clients:
 *
 * - Per client prefix (IPv4 /24, IPv6 /56): at most max_per_peer
 *   connections.  A new one past that closes one of the same prefix's own
 *   (the oldest that never completed a query, else the idlest), so one
 *   host's connect flood only churns its own connections.
 * - In all: at most max_conns.  A new one past that closes the oldest
 *   connection that never completed a query (a real client sends its
 *   query in the same round trip as the handshake), and only when there
 *   is none, the connection idle longest.  Before this order, one host's
 *   flood closed every honest client idle for 50 ms, and with it the TCP
 *   retry that RRL's slip tells a client to make.
 *
 * Each connection is one allocation made at accept: the state, an input
 * buffer for one maximal message, and an output buffer for TCP_OUT_HIGH
 * bytes of queued responses plus one more response.  The handler writes
 * its answer straight into the output buffer (after room for the length
 * prefix), so answering copies nothing.  While more than TCP_OUT_HIGH bytes
 * wait to be sent, the connection neither answers nor reads: a client that
 * does not read its answers stalls only itself.
 *
 * A handler may answer with a stream of messages (a zone transfer, see
 * struct query_stream): the connection then produces one message each time
 * its queue is below the high mark, so a transfer of any size uses no more
 * memory than one answer does, never blocks the loop, and goes only as
 * fast as the client reads.  Pipelined queries behind it wait their turn.
 * So do they behind a reply that comes later (reply_later.h: an UPDATE
 * acknowledged once its commit is on disk); meanwhile the idle timeout
 * leaves the connection alone, and a connection that closes first makes
 * that reply a no-op.
 *
 * Lifetime.  Every connection is judged once per lifetime window
 * (tcp_lifetime, 120 s): one that sent at least TCP_PROGRESS_RATE bytes a
 * second on average over the window (a zone transfer being read, a busy
 * resolver's pipelined answers) starts another window; any other is
 * closed.  A fixed cap closed every transfer at 120 s, so a secondary on a
 * link slower than about 2.5 Mbit/s could never copy a 100 000-record
 * zone.  RFC 7766 6.2.3 asks servers to close idle connections and leaves
 * the limits to them; the idle timeout still closes a connection that
 * completes no query and reads no message of its stream (a transfer
 * reader that stops), and the window closes one that reads, but too
 * slowly to matter (a few bytes a second holding a connection and a
 * snapshot for hours).  Sent means what the peer's side took: what we
 * handed to the kernel less what still waits in the socket's send queue
 * (SIOCOUTQ), so the kernel's buffer (4 MB on loopback) does not count
 * as progress.  Such a connection, and one closed by the idle timeout
 * with answers still unsent, is aborted (RST): a plain close would leave
 * the kernel trickling its send queue to a reader that does not read.
 *
 * Connections sit on four lists: by last activity (the LRU: the idle
 * timeout and the cap take from its head), by the start of their lifetime
 * window (the progress check takes from its head), those that never completed a query (by accept
 * time: the cap takes from there first), and their prefix's, by last
 * activity.  One timer is armed for the earliest deadline.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/conf/log.h"
#include "core/net/loop.h"
#include "core/net/net_internal.h"
#include "core/wire/arena.h"
#include "core/wire/query.h"
#include "core/wire/siphash.h"

#define TCP_IN_SIZE (2 + QUERY_MSG_MAX)
#define TCP_OUT_HIGH 65536
/*
 * What a stream (a zone transfer) hands the kernel in one loop round at
 * most; then the connection waits for the next round (its socket is
 * writable, so that is the next epoll_wait) and the queries that came
 * meanwhile are answered first.  On loopback the socket takes megabytes
 * at a time: a geoacme primary writing a 1M-record AXFR held the loop
 * 5-55 ms a round, writing up to ~4 MB (bench/stall.sh secondary-copy,
 * issue #26).  256 KiB is 16 messages of 16 KiB, about half a millisecond.
 */
#define TCP_STREAM_ROUND ((uint64_t)256 << 10)
#define TCP_OUT_SIZE (TCP_OUT_HIGH + 2 + NET_TX_SIZE)
#define TCP_PROGRESS_RATE 1024   /* bytes a second, averaged over a lifetime window */
#define TCP_ACCEPT_BUDGET 64
#define TCP_PAUSE_MS 100          /* listeners rest this long when out of descriptors */
#define TCP_SWEEP_SLACK_MAX 250   /* coalesce expiries a little to save wakeups */

#define TCP_PEER_V4_BITS 24
#define TCP_PEER_V6_BITS 56
#define TCP_PEER_KEY 17   /* family, then the prefix zero-padded to 16 bytes */

/* The lists a connection is on (its link[] index). */
enum { TCP_LRU = 0, TCP_AGE = 1, TCP_FRESH = 2, TCP_PEER = 3, TCP_LISTS = 4 };

struct tcp_conn;

struct tcp_link {
	struct tcp_conn *prev, *next;
};

struct tcp_list {
	struct tcp_conn *head, *tail;   /* head = oldest */
};

/* The connections of one client prefix.  A pool of them is made at start. */
struct tcp_peer {
	uint8_t key[TCP_PEER_KEY];
	uint32_t n;
	struct tcp_list conns;       /* by last activity, idlest first */
	struct tcp_peer *next;       /* hash chain, or the free list */
};

struct tcp_conn {
	struct tcp *t;
	int fd;
	int events;          /* what the loop watches for */
	bool eof;            /* the client closed its side: answer what is buffered, then close */
	bool queried;        /* a complete query arrived: off the fresh list */
	struct tcp_peer *pfx;     /* its client prefix's connections */
	struct tcp_link link[TCP_LISTS];
	uint64_t last_active;
	uint64_t window_start;     /* the lifetime window: accept, then each renewal */
	uint64_t sent;             /* bytes handed to the kernel since accept */
	uint64_t read_at_start;    /* peer_read() when the window started */
	struct sockaddr_storage peer;
	socklen_t peer_len;
	struct query_addr local;   /* where it was accepted: our address and port */
	size_t in_len;
	size_t out_off, out_len;   /* unsent bytes are out[out_off .. out_len) */
	struct query_stream stream;   /* next != NULL: a multi-message answer in progress */
	bool stream_later;            /* the stream wants the next loop round (it asked, or
	                               * wrote TCP_STREAM_ROUND bytes in this one) */
	struct reply_later *later;    /* a reply to come (reply_later.h): answer nothing until then */
	uint8_t *in;               /* TCP_IN_SIZE, in the same allocation */
	uint8_t *out;              /* TCP_OUT_SIZE, in the same allocation */
};

struct tcp_listener {
	struct tcp *t;
	int fd;
};

struct tcp {
	struct loop *loop;
	const struct net_handler *h;
	uint32_t max_conns;
	uint32_t max_per_peer;
	uint32_t idle_ms;
	uint32_t lifetime_ms;
	uint32_t n_conns;
	struct tcp_list list[3];   /* TCP_LRU, TCP_AGE, TCP_FRESH */
	struct tcp_peer *peer_pool;      /* max_conns + 1 */
	struct tcp_peer *free_peers;
	struct tcp_peer **peer_tab;      /* hash chains */
	size_t peer_mask;
	uint8_t peer_secret[16];   /* a prefix's chain is not for clients to choose */
	struct tcp_listener *ls;   /* the loop points into it: never reallocated */
	size_t n_ls, max_ls;
	bool paused;
	int64_t sweep_timer;
	int64_t resume_timer;
	struct query q;      /* one message is answered at a time */
};

static struct log_limit tcp_lim;

/* --- lists --- */

static void list_append(struct tcp_list *list, struct tcp_conn *c, int k)
{
	c->link[k].next = NULL;
	c->link[k].prev = list->tail;
	if (list->tail)
		list->tail->link[k].next = c;
	else
		list->head = c;
	list->tail = c;
}

static void list_remove(struct tcp_list *list, struct tcp_conn *c, int k)
{
	if (c->link[k].prev)
		c->link[k].prev->link[k].next = c->link[k].next;
	else
		list->head = c->link[k].next;
	if (c->link[k].next)
		c->link[k].next->link[k].prev = c->link[k].prev;
	else
		list->tail = c->link[k].prev;
	c->link[k].prev = c->link[k].next = NULL;
}

static void move_to_tail(struct tcp_list *list, struct tcp_conn *c, int k)
{
	if (list->tail != c) {
		list_remove(list, c, k);
		list_append(list, c, k);
	}
}

/* A complete query arrived. */
static void touch(struct tcp_conn *c)
{
	struct tcp *t = c->t;
	c->last_active = loop_now_ms(t->loop);
	move_to_tail(&t->list[TCP_LRU], c, TCP_LRU);
	move_to_tail(&c->pfx->conns, c, TCP_PEER);
	if (!c->queried) {
		c->queried = true;
		list_remove(&t->list[TCP_FRESH], c, TCP_FRESH);
	}
}

/* --- client prefixes --- */

static void peer_key(const struct sockaddr_storage *ss, uint8_t key[TCP_PEER_KEY])
{
	const uint8_t *a;
	size_t bytes, bits;
	memset(key, 0, TCP_PEER_KEY);
	if (ss->ss_family == AF_INET6) {
		a = ((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr;
		bytes = 16;
		bits = TCP_PEER_V6_BITS;
		key[0] = 6;
	} else {
		a = (const uint8_t *)&((const struct sockaddr_in *)ss)->sin_addr.s_addr;
		bytes = 4;
		bits = TCP_PEER_V4_BITS;
		key[0] = 4;
	}
	for (size_t i = 0; i < bytes && i * 8 < bits; i++)
		key[1 + i] = bits - i * 8 >= 8 ? a[i] : (uint8_t)(a[i] & (0xFF00 >> (bits - i * 8)));
}

static struct tcp_peer **peer_slot(struct tcp *t, const uint8_t key[TCP_PEER_KEY])
{
	struct tcp_peer **p = &t->peer_tab[siphash24(t->peer_secret, key, TCP_PEER_KEY) &
	                                   t->peer_mask];
	while (*p && memcmp((*p)->key, key, TCP_PEER_KEY) != 0)
		p = &(*p)->next;
	return p;
}

/* The prefix's connections, made on first use from the pool. */
static struct tcp_peer *peer_get(struct tcp *t, const uint8_t key[TCP_PEER_KEY])
{
	struct tcp_peer **slot = peer_slot(t, key);
	if (*slot || !t->free_peers)
		return *slot;
	struct tcp_peer *p = t->free_peers;
	t->free_peers = p->next;
	memset(p, 0, sizeof(*p));
	memcpy(p->key, key, TCP_PEER_KEY);
	*slot = p;
	return p;
}

static void peer_put(struct tcp *t, struct tcp_peer *p)
{
	if (--p->n)
		return;
	struct tcp_peer **slot = peer_slot(t, p->key);
	*slot = p->next;
	p->next = t->free_peers;
	t->free_peers = p;
}

/* --- connections --- */

static void sweep_arm(struct tcp *t);

static void conn_close(struct tcp_conn *c)
{
	struct tcp *t = c->t;
	if (c->stream.release)
		c->stream.release(c->stream.ctx);
	if (c->later)
		reply_later_tcp_closed(c->later);
	loop_del_fd(t->loop, c->fd);
	close(c->fd);
	list_remove(&t->list[TCP_LRU], c, TCP_LRU);
	list_remove(&t->list[TCP_AGE], c, TCP_AGE);
	if (!c->queried)
		list_remove(&t->list[TCP_FRESH], c, TCP_FRESH);
	list_remove(&c->pfx->conns, c, TCP_PEER);
	peer_put(t, c->pfx);
	t->n_conns--;
	free(c);
}

static size_t queued(const struct tcp_conn *c)
{
	return c->out_len - c->out_off;
}

/* Makes room for a length prefix and a full NET_TX_SIZE answer (called
 * only while at most TCP_OUT_HIGH bytes are queued) and points q->tx at it. */
static struct query *out_slot(struct tcp_conn *c)
{
	struct tcp *t = c->t;
	if (TCP_OUT_SIZE - c->out_len < 2 + NET_TX_SIZE) {
		memmove(c->out, c->out + c->out_off, queued(c));
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	struct query *q = &t->q;
	query_reset(q);
	memcpy(&q->client, &c->peer, c->peer_len);
	q->client_len = c->peer_len;
	q->transport = QUERY_TCP;
	q->local = c->local;
	q->tx = c->out + c->out_len + 2;
	q->tx_cap = NET_TX_SIZE;
	q->max_size = QUERY_MSG_MAX;
	return q;
}

/* Puts the length prefix before what the handler wrote at q->tx. */
static void frame(struct tcp_conn *c, struct query *q)
{
	if (q->tx_len == 0)
		return;
	if (q->tx_len > QUERY_MSG_MAX || q->tx != c->out + c->out_len + 2) {
		log_limited(&tcp_lim, LOG_ERROR, "tcp: handler answer of %zu bytes cannot be framed",
		            q->tx_len);
		return;
	}
	c->out[c->out_len] = (uint8_t)(q->tx_len >> 8);
	c->out[c->out_len + 1] = (uint8_t)q->tx_len;
	c->out_len += 2 + q->tx_len;
}

/* Answers one message into the output buffer. */
static void answer(struct tcp_conn *c, const uint8_t *msg, size_t len)
{
	struct tcp *t = c->t;
	struct query *q = out_slot(c);
	q->rx = msg;
	q->rx_len = len;
	t->h->fn(t->h->ctx, q);
	frame(c, q);
	if (q->stream.next) {
		c->stream = q->stream;
		q->stream = (struct query_stream){ NULL, NULL, NULL };
	}
	if (q->later.take)
		c->later = reply_later_tcp(q, c);
}

/* The next message of a stream.  Returns 0, QUERY_STREAM_LATER (the stream
 * wants the next loop round), or a negative errno when the stream failed
 * (the connection must close: the answer is cut short). */
static int stream_step(struct tcp_conn *c)
{
	struct query *q = out_slot(c);
	int rc = c->stream.next(c->stream.ctx, q);
	frame(c, q);
	if (rc == QUERY_STREAM_LATER) {
		c->stream_later = true;
		return rc;
	}
	/* The client read enough for another message: that is activity. */
	touch(c);
	if (rc <= 0) {
		c->stream.release(c->stream.ctx);
		c->stream = (struct query_stream){ NULL, NULL, NULL };
	}
	return rc < 0 ? rc : 0;
}

/* Answers every complete message in the input buffer, in order, until the
 * output is over the high mark.  Returns -EBADMSG on a length below a DNS
 * header (including 0): such a client is broken or hostile, so we close. */
static int conn_process(struct tcp_conn *c)
{
	size_t pos = 0;
	int rc = 0;
	c->stream_later = false;
	while (queued(c) <= TCP_OUT_HIGH && !c->later) {
		if (c->stream.next) {
			if ((rc = stream_step(c)) < 0 || rc == QUERY_STREAM_LATER)
				break;
			continue;
		}
		if (c->in_len - pos < 2)
			break;
		size_t len = (size_t)c->in[pos] << 8 | c->in[pos + 1];
		if (len < 12) {
			rc = -EBADMSG;
			break;
		}
		if (c->in_len - pos - 2 < len)
			break;
		answer(c, c->in + pos + 2, len);
		pos += 2 + len;
	}
	if (pos) {
		memmove(c->in, c->in + pos, c->in_len - pos);
		c->in_len -= pos;
	}
	return rc;
}

static bool has_message(const struct tcp_conn *c)
{
	return c->in_len >= 2 && c->in_len - 2 >= ((size_t)c->in[0] << 8 | c->in[1]);
}

/* Writes what it can.  Returns 0 (also when the socket is full) or a
 * negative errno when the connection is dead. */
static int conn_flush(struct tcp_conn *c)
{
	while (queued(c)) {
		/* MSG_NOSIGNAL: a peer that went away must not SIGPIPE the server. */
		ssize_t n = send(c->fd, c->out + c->out_off, queued(c), MSG_NOSIGNAL);
		if (n > 0) {
			c->out_off += (size_t)n;
			c->sent += (uint64_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		return n < 0 ? -errno : -EPIPE;
	}
	if (c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	return 0;
}

/* Answers, writes, and picks what to wait for next.  Returns false when
 * the connection was closed (c is gone). */
static bool conn_progress(struct tcp_conn *c)
{
	uint64_t sent_before = c->sent;
	for (;;) {
		if (conn_process(c) < 0 || conn_flush(c) < 0) {
			conn_close(c);
			return false;
		}
		/* The flush may have made room for answers held back. */
		if (queued(c) > TCP_OUT_HIGH || c->later || (!has_message(c) && !c->stream.next) ||
		    c->stream_later)
			break;
		if (c->stream.next && c->sent - sent_before >= TCP_STREAM_ROUND) {
			c->stream_later = true;   /* the rest in the next rounds */
			break;
		}
	}
	if (c->eof && !queued(c) && !has_message(c) && !c->stream.next && !c->later) {
		conn_close(c);
		return false;
	}
	int want = 0;
	if (!c->eof && queued(c) <= TCP_OUT_HIGH && c->in_len < TCP_IN_SIZE)
		want |= LOOP_READ;
	/* A stream that works in slices is called again once the socket is
	 * writable, which it is: the next loop round. */
	if (queued(c) || c->stream_later)
		want |= LOOP_WRITE;
	if (want != c->events) {
		if (loop_mod_fd(c->t->loop, c->fd, want) < 0) {
			conn_close(c);
			return false;
		}
		c->events = want;
	}
	return true;
}

static void on_conn(struct loop *l, int fd, int events, void *arg)
{
	struct tcp_conn *c = arg;
	if ((events & LOOP_WRITE) && conn_flush(c) < 0) {
		conn_close(c);
		return;
	}
	if ((events & LOOP_READ) && !c->eof && c->in_len < TCP_IN_SIZE) {
		ssize_t n = read(fd, c->in + c->in_len, TCP_IN_SIZE - c->in_len);
		if (n > 0) {
			c->in_len += (size_t)n;
			/*
			 * Only a complete query counts as activity: a client that
			 * trickles bytes (slow-loris) or drains answers a byte at a
			 * time does not keep its connection alive.
			 */
			if (has_message(c))
				touch(c);
		} else if (n == 0) {
			c->eof = true;
		} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			conn_close(c);
			return;
		}
	}
	conn_progress(c);
}

/* Whom to close when the cap is reached: see the top of the file. */
static struct tcp_conn *victim(struct tcp *t)
{
	return t->list[TCP_FRESH].head ? t->list[TCP_FRESH].head : t->list[TCP_LRU].head;
}

static struct tcp_conn *victim_of(const struct tcp_peer *p)
{
	for (struct tcp_conn *c = p->conns.head; c; c = c->link[TCP_PEER].next)
		if (!c->queried)
			return c;
	return p->conns.head;
}

/* Closes what must go for one more connection from this prefix. */
static void make_room(struct tcp *t, const uint8_t key[TCP_PEER_KEY])
{
	const struct tcp_peer *p = *peer_slot(t, key);
	if (p && p->n >= t->max_per_peer) {
		log_limited(&tcp_lim, LOG_INFO, "tcp: a client prefix has %u connections "
		            "(tcp_max_connections_per_prefix): closing one of its own", p->n);
		conn_close(victim_of(p));
	} else if (t->n_conns >= t->max_conns) {
		conn_close(victim(t));
	}
}

static int conn_new(struct tcp *t, int fd, const struct sockaddr_storage *peer, socklen_t len)
{
	uint8_t key[TCP_PEER_KEY];
	peer_key(peer, key);
	make_room(t, key);
	/* At most max_conns - 1 prefixes hold a connection now: the pool has one free. */
	struct tcp_peer *p = peer_get(t, key);
	if (!p)
		return -ENOMEM;
	struct tcp_conn *c = malloc(sizeof(*c) + TCP_IN_SIZE + TCP_OUT_SIZE);
	if (!c)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	c->t = t;
	c->fd = fd;
	c->in = (uint8_t *)(c + 1);
	c->out = c->in + TCP_IN_SIZE;
	memcpy(&c->peer, peer, len);
	c->peer_len = len;
	struct sockaddr_storage here;
	socklen_t here_len = sizeof(here);
	if (getsockname(fd, (struct sockaddr *)&here, &here_len) == 0)
		query_addr_from(&c->local, &here);
	c->window_start = c->last_active = loop_now_ms(t->loop);
	int rc = loop_add_fd(t->loop, fd, LOOP_READ, on_conn, c);
	if (rc < 0) {
		free(c);
		return rc;
	}
	c->events = LOOP_READ;
	/* Each answer goes out in one send; do not let Nagle hold the next
	 * pipelined answer back until the previous one is acknowledged. */
	int one = 1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		log_limited(&tcp_lim, LOG_WARN, "tcp: TCP_NODELAY: %s (pipelined answers may wait "
		            "for acknowledgements)", strerror(errno));
	list_append(&t->list[TCP_LRU], c, TCP_LRU);
	list_append(&t->list[TCP_AGE], c, TCP_AGE);
	list_append(&t->list[TCP_FRESH], c, TCP_FRESH);
	list_append(&p->conns, c, TCP_PEER);
	c->pfx = p;
	p->n++;
	t->n_conns++;
	sweep_arm(t);
	return 0;
}

/* The reply the connection waited for (reply_later.c), then on with the rest. */
void tcp_later_done(struct tcp_conn *c, const uint8_t *msg, size_t len)
{
	c->later = NULL;
	if (len > QUERY_MSG_MAX) {
		log_limited(&tcp_lim, LOG_ERROR, "tcp: a deferred reply of %zu bytes cannot be framed",
		            len);
		len = 0;
	}
	if (len) {
		/* Room: at most TCP_OUT_HIGH bytes were queued when it was deferred. */
		if (TCP_OUT_SIZE - c->out_len < 2 + len) {
			memmove(c->out, c->out + c->out_off, queued(c));
			c->out_len -= c->out_off;
			c->out_off = 0;
		}
		c->out[c->out_len] = (uint8_t)(len >> 8);
		c->out[c->out_len + 1] = (uint8_t)len;
		memcpy(c->out + c->out_len + 2, msg, len);
		c->out_len += 2 + len;
	}
	touch(c);
	conn_progress(c);
}

/* --- timers --- */

/* Bytes the peer's side has taken: sent, less what waits in our send queue. */
static uint64_t peer_read(const struct tcp_conn *c)
{
	int outq = 0;
	if (ioctl(c->fd, SIOCOUTQ, &outq) < 0 || outq < 0)
		return c->sent;   /* cannot fail on a TCP socket; then count what we sent */
	return (uint64_t)outq < c->sent ? c->sent - (uint64_t)outq : 0;
}

/* Closes with RST, dropping what waits in the send queue (see the top). */
static void conn_abort(struct tcp_conn *c)
{
	struct linger lg = { 1, 0 };
	if (setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0)
		log_limited(&tcp_lim, LOG_WARN, "tcp: SO_LINGER: %s (closing normally)",
		            strerror(errno));
	conn_close(c);
}

static void sweep(struct loop *l, void *arg)
{
	struct tcp *t = arg;
	uint64_t now = loop_now_ms(l);
	t->sweep_timer = 0;
	struct tcp_conn *c;
	while ((c = t->list[TCP_LRU].head) && now - c->last_active >= t->idle_ms) {
		if (c->later)
			touch(c);   /* waiting for its reply (a disk sync): not idle */
		else if (queued(c) || c->stream.next)
			conn_abort(c);   /* a reader that stopped reading */
		else
			conn_close(c);
	}
	/* Renewed ones go to the tail with a fresh start: the loop ends. */
	uint64_t need = (uint64_t)t->lifetime_ms * TCP_PROGRESS_RATE / 1000;
	while ((c = t->list[TCP_AGE].head) && now - c->window_start >= t->lifetime_ms) {
		uint64_t read = peer_read(c);
		if (read < c->read_at_start)
			read = c->read_at_start;
		if (read - c->read_at_start < need) {
			log_limited(&tcp_lim, LOG_INFO, "tcp: closing a connection that sent %llu bytes "
			            "in its last %u s window (less than 1 KiB/s: tcp_lifetime)",
			            (unsigned long long)(read - c->read_at_start), t->lifetime_ms / 1000);
			conn_abort(c);
			continue;
		}
		c->window_start = now;
		c->read_at_start = read;
		move_to_tail(&t->list[TCP_AGE], c, TCP_AGE);
	}
	sweep_arm(t);
}

/* Arms one timer for the earliest idle or lifetime deadline (no wakeups
 * at all without connections).  When the connection at the head has been
 * active since, the timer finds nothing to do and re-arms for later. */
static void sweep_arm(struct tcp *t)
{
	if (t->sweep_timer > 0 || !t->n_conns)
		return;
	uint64_t now = loop_now_ms(t->loop);
	uint64_t next = t->list[TCP_LRU].head->last_active + t->idle_ms;
	uint64_t dead = t->list[TCP_AGE].head->window_start + t->lifetime_ms;
	if (dead < next)
		next = dead;
	uint64_t delay = next > now ? next - now : 0;
	uint64_t slack = t->idle_ms / 16;
	delay += slack < TCP_SWEEP_SLACK_MAX ? slack : TCP_SWEEP_SLACK_MAX;
	int64_t id = loop_timer_add(t->loop, delay, sweep, t);
	t->sweep_timer = id > 0 ? id : 0;
}

/* 0, or the first error (every listener is tried). */
static int listeners_watch(struct tcp *t, int events)
{
	int ret = 0;
	for (size_t i = 0; i < t->n_ls; i++) {
		int rc = loop_mod_fd(t->loop, t->ls[i].fd, events);
		if (rc < 0 && !ret)
			ret = rc;
	}
	return ret;
}

static void resume(struct loop *l, void *arg)
{
	struct tcp *t = arg;
	t->resume_timer = 0;
	int rc = listeners_watch(t, LOOP_READ);
	if (rc < 0) {
		/* A listener left unwatched would never accept again: try later. */
		log_limited(&tcp_lim, LOG_ERROR, "tcp: cannot watch the listeners again: %s",
		            strerror(-rc));
		int64_t id = loop_timer_add(l, TCP_PAUSE_MS, resume, t);
		if (id > 0) {
			t->resume_timer = id;
			return;
		}
	}
	t->paused = false;
}

/* Out of descriptors with no connection of ours to give up: the listener
 * would stay readable and spin the loop, so stop watching it briefly. */
static void pause_accepting(struct tcp *t)
{
	if (t->paused)
		return;
	int64_t id = loop_timer_add(t->loop, TCP_PAUSE_MS, resume, t);
	if (id <= 0)
		return;
	t->paused = true;
	t->resume_timer = id;
	int rc = listeners_watch(t, 0);
	if (rc < 0)   /* the loop may wake for the listener until resume(); nothing is accepted */
		log_limited(&tcp_lim, LOG_WARN, "tcp: cannot pause the listeners: %s", strerror(-rc));
}

static void on_accept(struct loop *l, int fd, int events, void *arg)
{
	struct tcp_listener *ls = arg;
	struct tcp *t = ls->t;
	for (int i = 0; i < TCP_ACCEPT_BUDGET && !t->paused; i++) {
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);
		int cfd = accept4(fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			int e = errno;
			if (e == EAGAIN || e == EWOULDBLOCK)
				return;
			if (e == EINTR || e == ECONNABORTED || e == EPROTO || e == EPERM)
				continue;
			if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
				log_limited(&tcp_lim, LOG_WARN, "tcp: accept: %s", strerror(e));
				if (t->n_conns) {
					conn_close(victim(t));
					continue;
				}
				pause_accepting(t);
				return;
			}
			log_limited(&tcp_lim, LOG_ERROR, "tcp: accept: %s", strerror(e));
			return;
		}
		int rc = conn_new(t, cfd, &peer, len);
		if (rc < 0) {
			log_limited(&tcp_lim, LOG_WARN, "tcp: new connection: %s", strerror(-rc));
			close(cfd);
		}
	}
}

/* --- public (to net.c) --- */

struct tcp *tcp_new(struct loop *l, const struct net_handler *h, uint32_t max_conns,
                    uint32_t max_per_prefix, uint32_t idle_ms, uint32_t lifetime_ms,
                    size_t max_listeners)
{
	struct tcp *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->loop = l;
	t->h = h;
	t->max_conns = max_conns ? max_conns : 1;
	t->max_per_peer = max_per_prefix ? max_per_prefix : 1;
	t->idle_ms = idle_ms ? idle_ms : 1;
	t->lifetime_ms = lifetime_ms ? lifetime_ms : 1;
	t->max_ls = max_listeners;
	size_t chains = 16;
	while (chains < 2 * (size_t)t->max_conns)
		chains <<= 1;
	t->peer_mask = chains - 1;
	t->ls = calloc(max_listeners ? max_listeners : 1, sizeof(*t->ls));
	t->peer_pool = calloc((size_t)t->max_conns + 1, sizeof(*t->peer_pool));
	t->peer_tab = calloc(chains, sizeof(*t->peer_tab));
	t->q.arena = arena_new(NET_ARENA_CHUNK);
	if (!t->ls || !t->peer_pool || !t->peer_tab || !t->q.arena ||
	    getrandom(t->peer_secret, sizeof(t->peer_secret), 0) != (ssize_t)sizeof(t->peer_secret)) {
		arena_free(t->q.arena);
		free(t->peer_tab);
		free(t->peer_pool);
		free(t->ls);
		free(t);
		return NULL;
	}
	for (uint32_t i = 0; i <= t->max_conns; i++) {
		t->peer_pool[i].next = t->free_peers;
		t->free_peers = &t->peer_pool[i];
	}
	return t;
}

int tcp_listen(struct tcp *t, int fd)
{
	if (t->n_ls == t->max_ls) {
		close(fd);
		return -ENOSPC;
	}
	struct tcp_listener *ls = &t->ls[t->n_ls];
	*ls = (struct tcp_listener){ t, fd };
	int rc = loop_add_fd(t->loop, fd, LOOP_READ, on_accept, ls);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	t->n_ls++;
	return 0;
}

void tcp_free(struct tcp *t)
{
	if (!t)
		return;
	while (t->list[TCP_LRU].head)
		conn_close(t->list[TCP_LRU].head);
	loop_timer_cancel(t->loop, t->sweep_timer);
	loop_timer_cancel(t->loop, t->resume_timer);
	for (size_t i = 0; i < t->n_ls; i++) {
		loop_del_fd(t->loop, t->ls[i].fd);
		close(t->ls[i].fd);
	}
	arena_free(t->q.arena);
	free(t->peer_tab);
	free(t->peer_pool);
	free(t->ls);
	free(t);
}
