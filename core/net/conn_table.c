/* SPDX-License-Identifier: MIT */
/*
 * One request and one answer per connection: accept, read, write, drain,
 * close, the idle limit.  See conn_table.h.
 */
#include "core/net/conn_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/net/loop.h"

struct conn {
	struct conn_table *t;
	int fd;                  /* -1: free slot */
	int64_t timer;           /* the idle limit; 0: none */
	char *req;               /* request_max + 1 bytes, NUL-terminated */
	size_t req_len;
	char *resp;              /* malloc'd answer (conn_respond) */
	size_t resp_len, resp_sent;
	bool draining;           /* answered: read to EOF, then close */
	bool held;               /* answered later (conn_hold) */
};

struct conn_table {
	struct loop *loop;
	struct conn_table_ops ops;
	size_t n, request_max;
	uint64_t idle_ms;
	struct conn *conn;       /* n slots */
	char *bufs;              /* their request buffers, one block */
};

void conn_close(struct conn *c)
{
	if (c->fd < 0)
		return;
	loop_del_fd(c->t->loop, c->fd);
	close(c->fd);
	if (c->timer > 0)
		loop_timer_cancel(c->t->loop, c->timer);
	c->timer = 0;
	free(c->resp);
	c->resp = NULL;
	c->fd = -1;
	c->held = false;
}

static void on_write(struct loop *l, int fd, int events, void *arg)
{
	struct conn *c = arg;
	(void)events;
	while (c->resp_sent < c->resp_len) {
		ssize_t n = send(fd, c->resp + c->resp_sent, c->resp_len - c->resp_sent, MSG_NOSIGNAL);
		if (n > 0) {
			c->resp_sent += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;   /* resumed when the socket is writable again */
		conn_close(c);   /* the client went away */
		return;
	}
	/* Sent: half-close so the client reads it all, then wait for its EOF. */
	if (shutdown(fd, SHUT_WR) < 0) {
		conn_close(c);   /* ENOTCONN: the client is gone already */
		return;
	}
	c->draining = true;
	if (loop_mod_fd(l, fd, LOOP_READ) < 0)
		conn_close(c);
}

void conn_respond(struct conn *c, char *buf, size_t len)
{
	if (!buf || c->fd < 0 || c->resp) {
		free(buf);
		conn_close(c);
		return;
	}
	c->held = false;
	c->resp = buf;
	c->resp_len = len;
	c->resp_sent = 0;
	if (loop_mod_fd(c->t->loop, c->fd, LOOP_WRITE) < 0) {
		conn_close(c);
		return;
	}
	on_write(c->t->loop, c->fd, LOOP_WRITE, c);
}

/* Reads what is queued and drops it; at the peer's EOF (or an error) closes. */
static void drain(struct conn *c)
{
	char scratch[4096];
	for (;;) {
		ssize_t n = recv(c->fd, scratch, sizeof(scratch), 0);
		if (n > 0 || (n < 0 && errno == EINTR))
			continue;
		if (!(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)))
			conn_close(c);
		return;
	}
}

static void on_read(struct loop *l, int fd, int events, void *arg)
{
	struct conn *c = arg;
	struct conn_table *t = c->t;
	(void)l;
	(void)events;
	if (c->draining || c->held) {
		drain(c);
		return;
	}
	for (;;) {
		if (c->req_len == t->request_max) {
			t->ops.bad(t->ops.ctx, c, CONN_TOO_LONG);
			return;
		}
		ssize_t n = recv(fd, c->req + c->req_len, t->request_max - c->req_len, 0);
		if (n > 0) {
			c->req_len += (size_t)n;
			c->req[c->req_len] = '\0';
			if (memchr(c->req, '\0', c->req_len)) {
				t->ops.bad(t->ops.ctx, c, CONN_NUL);
				return;
			}
			char *end = t->ops.request_end(c->req);
			if (end) {
				t->ops.request(t->ops.ctx, c, c->req, end);
				return;
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		conn_close(c);   /* closed or failed before a whole request */
		return;
	}
}

static void on_idle(struct loop *l, void *arg)
{
	struct conn *c = arg;
	(void)l;
	c->timer = 0;
	if (c->resp || c->draining || !c->t->ops.idle)
		conn_close(c);
	else
		c->t->ops.idle(c->t->ops.ctx, c);
}

void conn_idle_restart(struct conn *c)
{
	if (c->fd < 0)
		return;
	if (c->timer > 0)
		loop_timer_cancel(c->t->loop, c->timer);
	int64_t id = loop_timer_add(c->t->loop, c->t->idle_ms, on_idle, c);
	c->timer = id > 0 ? id : 0;
}

void conn_hold(struct conn *c)
{
	if (c->timer > 0)
		loop_timer_cancel(c->t->loop, c->timer);
	c->timer = 0;
	c->held = true;
}

static void on_accept(struct loop *l, int fd, int events, void *arg)
{
	struct conn_table *t = arg;
	(void)events;
	for (;;) {
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);
		memset(&peer, 0, sizeof(peer));
		int cfd = accept4(fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0)
			return;   /* EAGAIN, or an error the next readiness shows again */
		struct conn *c = t->ops.admit(t->ops.ctx, cfd, &peer);
		if (!c || c->fd >= 0) {
			close(cfd);   /* full, or refused */
			continue;
		}
		c->fd = cfd;
		c->req_len = 0;
		c->req[0] = '\0';
		c->resp = NULL;
		c->draining = false;
		c->held = false;
		c->timer = loop_timer_add(l, t->idle_ms, on_idle, c);
		if (c->timer < 0 || loop_add_fd(l, cfd, LOOP_READ, on_read, c) < 0) {
			if (c->timer > 0)
				loop_timer_cancel(l, c->timer);
			c->timer = 0;
			close(cfd);
			c->fd = -1;
			continue;
		}
		if (t->ops.opened)
			t->ops.opened(t->ops.ctx, c);
	}
}

int conn_table_listen(struct conn_table *t, int fd)
{
	return loop_add_fd(t->loop, fd, LOOP_READ, on_accept, t);
}

struct conn_table *conn_table_new(struct loop *l, size_t max_conns, size_t request_max,
                                  uint64_t idle_ms, const struct conn_table_ops *ops)
{
	struct conn_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->loop = l;
	t->ops = *ops;
	t->n = max_conns;
	t->request_max = request_max;
	t->idle_ms = idle_ms;
	t->conn = calloc(max_conns, sizeof(*t->conn));
	t->bufs = malloc(max_conns * (request_max + 1));
	if (!t->conn || !t->bufs) {
		free(t->conn);
		free(t->bufs);
		free(t);
		return NULL;
	}
	for (size_t i = 0; i < max_conns; i++) {
		t->conn[i].t = t;
		t->conn[i].fd = -1;
		t->conn[i].req = t->bufs + i * (request_max + 1);
	}
	return t;
}

void conn_table_free(struct conn_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		conn_close(&t->conn[i]);
	free(t->conn);
	free(t->bufs);
	free(t);
}

struct conn *conn_table_slot(struct conn_table *t, size_t i)
{
	return i < t->n ? &t->conn[i] : NULL;
}

struct conn *conn_table_free_slot(struct conn_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->conn[i].fd < 0)
			return &t->conn[i];
	return NULL;
}

size_t conn_index(const struct conn *c)
{
	return (size_t)(c - c->t->conn);
}

bool conn_is_open(const struct conn *c)
{
	return c->fd >= 0;
}
