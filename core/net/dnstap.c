/* SPDX-License-Identifier: MIT */
/*
 * The dnstap writer: a buffer of encoded frames, the Frame Streams
 * handshake and non-blocking writes on the loop.  See dnstap.h.
 */
#include "core/net/dnstap.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/conf/log.h"
#include "core/conf/metrics.h"
#include "core/net/dnstap_encode.h"
#include "core/net/loop.h"
#include "core/wire/query.h"
#include "core/wire/wire.h"

#define DNSTAP_BUF (1u << 20)      /* encoded frames waiting: 1 MiB */
#define DNSTAP_FRAMES 8192         /* frames waiting, at most */
#define DNSTAP_RETRY_MIN_MS 100
#define DNSTAP_RETRY_MAX_MS 5000
#define CONTENT_TYPE "protobuf:dnstap.Dnstap"

enum { FS_ACCEPT = 1, FS_START = 2, FS_STOP = 3, FS_READY = 4, FS_FINISH = 5 };
enum { FS_FIELD_CONTENT_TYPE = 1 };

enum state { DISCONNECTED, HANDSHAKE, STREAMING };

struct dnstap {
	struct loop *loop;
	struct sockaddr_un addr;
	uint32_t sample;
	bool queries, responses, updates;
	char identity[256];
	char version[64];
	uint64_t seen;               /* exchanges since start, for the 1-in-N choice */

	enum state state;
	int fd;
	bool want_write;             /* LOOP_WRITE registered */
	int64_t retry_timer;
	uint32_t retry_ms;
	bool failing;                /* said so in the log: quiet until it works again */
	uint8_t rbuf[256];           /* the collector's ACCEPT */
	size_t rlen;

	/* Frames waiting, buf[head, tail), each ending at an offset in ends[]. */
	uint8_t *buf;
	size_t head, tail;
	uint32_t ends[DNSTAP_FRAMES];
	size_t first_end, n_ends;
};

static void connect_now(struct loop *l, void *arg);

static void count_dropped(uint64_t n)
{
	metrics.dnstap_dropped += n;
}

/* A control frame: escape, length, type, and the content type if asked. */
static size_t control_frame(uint8_t *out, uint32_t type, bool content_type)
{
	size_t ct = strlen(CONTENT_TYPE);
	uint32_t len = 4 + (content_type ? 8 + (uint32_t)ct : 0);
	wire_set_u32(out, 0);
	wire_set_u32(out + 4, len);
	wire_set_u32(out + 8, type);
	if (content_type) {
		wire_set_u32(out + 12, FS_FIELD_CONTENT_TYPE);
		wire_set_u32(out + 16, (uint32_t)ct);
		memcpy(out + 20, CONTENT_TYPE, ct);
	}
	return 8 + len;
}

/* A control frame on a fresh socket: small enough to go at once, or the
 * connection is given up. */
static int send_control(struct dnstap *d, uint32_t type, bool content_type)
{
	uint8_t f[64];
	size_t n = control_frame(f, type, content_type);
	ssize_t w = send(d->fd, f, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	return w == (ssize_t)n ? 0 : -EIO;
}

static void set_write(struct dnstap *d, bool on)
{
	if (d->want_write == on || d->fd < 0)
		return;
	if (loop_mod_fd(d->loop, d->fd, LOOP_READ | (on ? LOOP_WRITE : 0)) == 0)
		d->want_write = on;
}

/* Everything queued is lost: a frame half written cannot be resumed on
 * another connection. */
static void discard_queue(struct dnstap *d)
{
	count_dropped(d->n_ends);
	d->head = d->tail = 0;
	d->first_end = d->n_ends = 0;
}

static void schedule_retry(struct dnstap *d)
{
	d->retry_timer = loop_timer_add(d->loop, d->retry_ms, connect_now, d);
	d->retry_ms = d->retry_ms * 2 > DNSTAP_RETRY_MAX_MS ? DNSTAP_RETRY_MAX_MS : d->retry_ms * 2;
}

static void disconnect(struct dnstap *d, const char *why)
{
	if (d->fd >= 0) {
		loop_del_fd(d->loop, d->fd);
		close(d->fd);
		d->fd = -1;
	}
	if (!d->failing)
		log_warn("dnstap: %s: %s; frames are dropped until it is back (retrying)",
		         d->addr.sun_path, why);
	d->failing = true;
	d->state = DISCONNECTED;
	d->want_write = false;
	d->rlen = 0;
	discard_queue(d);
	schedule_retry(d);
}

/* Sends what is queued, as far as the socket takes it. */
static void flush(struct dnstap *d)
{
	while (d->head < d->tail) {
		ssize_t w = send(d->fd, d->buf + d->head, d->tail - d->head, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			disconnect(d, strerror(errno));
			return;
		}
		d->head += (size_t)w;
	}
	while (d->n_ends && d->ends[d->first_end] <= d->head) {
		metrics.dnstap_sent++;
		d->first_end = (d->first_end + 1) % DNSTAP_FRAMES;
		d->n_ends--;
	}
	if (d->head == d->tail)
		d->head = d->tail = 0;
	set_write(d, d->head < d->tail);
}

/* The collector's ACCEPT must name our content type (Frame Streams:
 * a reader lists the types it takes). */
static bool accepts(const uint8_t *f, size_t len)
{
	if (len < 4 || wire_get_u32(f) != FS_ACCEPT)
		return false;
	size_t ct = strlen(CONTENT_TYPE);
	for (size_t i = 4; i + 8 <= len;) {
		uint32_t type = wire_get_u32(f + i), flen = wire_get_u32(f + i + 4);
		if (flen > len - i - 8)
			return false;
		if (type == FS_FIELD_CONTENT_TYPE && flen == ct && memcmp(f + i + 8, CONTENT_TYPE, ct) == 0)
			return true;
		i += 8 + flen;
	}
	return false;
}

static void on_read(struct dnstap *d)
{
	uint8_t scratch[256];
	bool handshake = d->state == HANDSHAKE;
	uint8_t *to = handshake ? d->rbuf + d->rlen : scratch;
	size_t room = handshake ? sizeof(d->rbuf) - d->rlen : sizeof(scratch);
	ssize_t n = recv(d->fd, to, room, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		disconnect(d, n == 0 ? "the collector closed the connection" : strerror(errno));
		return;
	}
	if (!handshake)
		return;   /* nothing is expected while streaming (FINISH comes after STOP) */
	d->rlen += (size_t)n;
	if (d->rlen < 8)
		return;
	uint32_t len = wire_get_u32(d->rbuf + 4);
	if (wire_get_u32(d->rbuf) != 0 || len > sizeof(d->rbuf) - 8) {
		disconnect(d, "the collector's answer is not a Frame Streams control frame");
		return;
	}
	if (d->rlen < 8 + len)
		return;
	if (!accepts(d->rbuf + 8, len)) {
		disconnect(d, "the collector does not accept " CONTENT_TYPE);
		return;
	}
	if (send_control(d, FS_START, true) < 0) {
		disconnect(d, "cannot send START");
		return;
	}
	d->state = STREAMING;
	d->retry_ms = DNSTAP_RETRY_MIN_MS;
	d->failing = false;
	log_info("dnstap: streaming to %s", d->addr.sun_path);
	flush(d);
}

static void on_io(struct loop *l, int fd, int events, void *arg)
{
	(void)l;
	(void)fd;
	struct dnstap *d = arg;
	if (events & LOOP_READ) {
		on_read(d);
		if (d->state == DISCONNECTED)
			return;
	}
	if ((events & LOOP_WRITE) && d->state == STREAMING)
		flush(d);
}

static void connect_now(struct loop *l, void *arg)
{
	(void)l;
	struct dnstap *d = arg;
	d->retry_timer = 0;
	d->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (d->fd < 0) {
		disconnect(d, strerror(errno));
		return;
	}
	/* A Unix socket connects at once, or fails (EAGAIN: the collector's
	 * backlog is full; retried like any other failure). */
	if (connect(d->fd, (const struct sockaddr *)&d->addr, sizeof(d->addr)) < 0) {
		disconnect(d, strerror(errno));
		return;
	}
	if (loop_add_fd(d->loop, d->fd, LOOP_READ, on_io, d) < 0) {
		close(d->fd);
		d->fd = -1;
		disconnect(d, "cannot watch the socket");
		return;
	}
	if (send_control(d, FS_READY, true) < 0) {
		disconnect(d, "cannot send READY");
		return;
	}
	d->state = HANDSHAKE;
}

struct dnstap *dnstap_new(struct loop *l, const struct dnstap_config *c, char err[256])
{
	if (strlen(c->path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(err, 256, "dnstap_socket: the path is longer than a Unix socket path can be "
		         "(%zu bytes)", sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		return NULL;
	}
	struct dnstap *d = calloc(1, sizeof(*d));
	if (!d || !(d->buf = malloc(DNSTAP_BUF))) {
		free(d);
		snprintf(err, 256, "dnstap: out of memory");
		return NULL;
	}
	d->loop = l;
	d->addr.sun_family = AF_UNIX;
	memcpy(d->addr.sun_path, c->path, strlen(c->path) + 1);
	d->sample = c->sample ? c->sample : 1;
	d->queries = c->queries;
	d->responses = c->responses;
	d->updates = c->updates;
	if (c->identity)
		snprintf(d->identity, sizeof(d->identity), "%s", c->identity);
	else if (gethostname(d->identity, sizeof(d->identity) - 1) < 0)
		d->identity[0] = '\0';
	snprintf(d->version, sizeof(d->version), "%s", c->version ? c->version : "geoacme");
	d->fd = -1;
	d->retry_ms = DNSTAP_RETRY_MIN_MS;
	connect_now(l, d);
	return d;
}

void dnstap_free(struct dnstap *d)
{
	if (!d)
		return;
	if (d->state == STREAMING) {
		flush(d);
		if (d->state == STREAMING && d->head == d->tail)
			(void)send_control(d, FS_STOP, false);
	}
	if (d->fd >= 0) {
		loop_del_fd(d->loop, d->fd);
		close(d->fd);
	}
	if (d->retry_timer > 0)
		loop_timer_cancel(d->loop, d->retry_timer);
	count_dropped(d->n_ends);
	free(d->buf);
	free(d);
}

void dnstap_clock(const struct dnstap *d, struct timespec *ts)
{
	loop_wall_ts(d->loop, ts);
}

/* Moves what waits to the front of the buffer, so the free space is one piece. */
static void compact(struct dnstap *d)
{
	if (!d->head)
		return;
	memmove(d->buf, d->buf + d->head, d->tail - d->head);
	for (size_t i = 0, k = d->first_end; i < d->n_ends; i++, k = (k + 1) % DNSTAP_FRAMES)
		d->ends[k] -= (uint32_t)d->head;
	d->tail -= d->head;
	d->head = 0;
}

/* Encodes one frame at the tail: its length, then the protobuf. */
static void append(struct dnstap *d, const struct dnstap_msg *m)
{
	if (d->state == DISCONNECTED || d->n_ends == DNSTAP_FRAMES) {
		count_dropped(1);
		return;
	}
	int n = -ENOSPC;
	for (int attempt = 0; attempt < 2 && n == -ENOSPC; attempt++) {
		if (attempt)
			compact(d);
		if (DNSTAP_BUF - d->tail > 4)
			n = dnstap_encode(d->buf + d->tail + 4, DNSTAP_BUF - d->tail - 4, d->identity,
			                  d->version, m);
		if (n != -ENOSPC || !d->head)
			break;
	}
	if (n < 0) {
		count_dropped(1);
		return;
	}
	wire_set_u32(d->buf + d->tail, (uint32_t)n);
	d->tail += 4 + (size_t)n;
	d->ends[(d->first_end + d->n_ends) % DNSTAP_FRAMES] = (uint32_t)d->tail;
	d->n_ends++;
	if (d->state == STREAMING)
		set_write(d, true);   /* sent once epoll says the socket takes it */
}

void dnstap_note(struct dnstap *d, const struct query *q, const struct timespec *received)
{
	bool update = q->rx_len >= 3 && ((q->rx[2] >> 3) & 0x0F) == OPCODE_UPDATE;
	bool want_q = update ? d->updates : d->queries;
	bool want_r = (update ? d->updates : d->responses) && q->tx_len > 0;
	if (!want_q && !want_r)
		return;
	if (++d->seen % d->sample != 0)
		return;

	struct dnstap_msg m = { 0 };
	if (q->client.ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)&q->client;
		m.query_port = ntohs(sin->sin_port);
	} else {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&q->client;
		m.query_port = ntohs(sin6->sin6_port);
	}
	m.family = query_client_addr(q, m.query_addr);
	/* Our side: the address the query arrived on (a wildcard socket's from
	 * its packet info), unknown only when the kernel did not say. */
	if (q->local.family == m.family) {
		m.has_response_addr = true;
		memcpy(m.response_addr, q->local.addr, sizeof(m.response_addr));
		m.response_port = q->local.port;
	}
	m.tcp = q->transport == QUERY_TCP;
	m.query_sec = (uint64_t)received->tv_sec;
	m.query_nsec = (uint32_t)received->tv_nsec;
	if (want_q) {
		m.type = update ? DNSTAP_UPDATE_QUERY : DNSTAP_AUTH_QUERY;
		m.query = q->rx;
		m.query_len = q->rx_len;
		append(d, &m);
	}
	if (want_r) {
		struct timespec now;
		dnstap_clock(d, &now);
		m.type = update ? DNSTAP_UPDATE_RESPONSE : DNSTAP_AUTH_RESPONSE;
		m.query = NULL;
		m.query_len = 0;
		m.has_response_time = true;
		m.response_sec = (uint64_t)now.tv_sec;
		m.response_nsec = (uint32_t)now.tv_nsec;
		m.response = q->tx;
		m.response_len = q->tx_len;
		append(d, &m);
	}
}
