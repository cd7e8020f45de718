/* SPDX-License-Identifier: MIT */
/*
 * The HTTP endpoint: accept, read one request head, call the handler, write
 * the response, close.  See http.h for the limits.
 */
#include "core/net/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/conf/log.h"
#include "core/net/loop.h"
#include "core/net/sock_drain.h"

#define HTTP_LISTEN_MAX 8

static struct log_limit http_lim;

struct http_conn {
	struct http *h;
	int fd;                          /* -1: free slot */
	int64_t timer;
	uint64_t seq;                    /* accept order: the lowest is the oldest */
	struct sockaddr_storage peer;    /* the client's address (its port zeroed) */
	char req[HTTP_REQUEST_MAX + 1];
	size_t req_len;
	char *resp;                      /* malloc'd response (head + body) */
	size_t resp_len, resp_sent;
	bool draining;                   /* response sent: read to EOF, then close */
};

struct http {
	struct loop *loop;
	http_handler_fn fn;
	void *ctx;
	int listen_fd[HTTP_LISTEN_MAX];
	size_t n_listen;
	unsigned port;
	uint64_t seq;
	struct http_conn conn[HTTP_CONN_MAX];
};

static void conn_close(struct http_conn *c)
{
	if (c->fd < 0)
		return;
	loop_del_fd(c->h->loop, c->fd);
	close(c->fd);
	loop_timer_cancel(c->h->loop, c->timer);
	free(c->resp);
	c->resp = NULL;
	c->fd = -1;
}

static void conn_write(struct loop *l, int fd, int events, void *arg)
{
	struct http_conn *c = arg;
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
	/*
	 * Sent.  Closing now, with request bytes still unread (a 431, a body
	 * after a 405), would make the kernel send RST and the client could lose
	 * the response: half-close, read what is left, close at EOF or deadline.
	 */
	if (shutdown(fd, SHUT_WR) < 0) {
		conn_close(c);   /* ENOTCONN: the client is gone already */
		return;
	}
	c->draining = true;
	if (loop_mod_fd(l, fd, LOOP_READ) < 0)
		conn_close(c);
}

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	default: return "Error";
	}
}

/* Builds the whole response and starts writing it. */
static void respond(struct http_conn *c, int status, const char *type, const char *body,
                    size_t body_len, bool head_only)
{
	char *out = NULL;
	size_t out_len = 0;
	FILE *f = open_memstream(&out, &out_len);
	if (!f) {
		conn_close(c);
		return;
	}
	fprintf(f, "HTTP/1.1 %d %s\r\n", status, reason(status));
	fprintf(f, "Content-Type: %s\r\n", type);
	fprintf(f, "Content-Length: %zu\r\n", body_len);
	/* Nothing on the page may come from elsewhere: no scripts, no fetches. */
	fprintf(f, "Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; "
	           "img-src 'self' data:; frame-ancestors 'none'\r\n");
	fprintf(f, "X-Content-Type-Options: nosniff\r\n");
	fprintf(f, "Cache-Control: no-store\r\n");
	if (status == 405)
		fprintf(f, "Allow: GET, HEAD\r\n");
	fprintf(f, "Connection: close\r\n\r\n");
	if (!head_only && body_len)
		fwrite(body, 1, body_len, f);
	if (fclose(f) != 0) {
		free(out);
		conn_close(c);
		return;
	}
	c->resp = out;
	c->resp_len = out_len;
	c->resp_sent = 0;
	if (loop_mod_fd(c->h->loop, c->fd, LOOP_WRITE) < 0) {
		conn_close(c);
		return;
	}
	conn_write(c->h->loop, c->fd, LOOP_WRITE, c);
}

static void respond_error(struct http_conn *c, int status)
{
	char body[64];
	int n = snprintf(body, sizeof(body), "%d %s\n", status, reason(status));
	respond(c, status, "text/plain; charset=utf-8", body, (size_t)n, false);
}

/* The request head is complete: parse the request line and answer. */
static void serve(struct http_conn *c)
{
	char *line_end = strstr(c->req, "\r\n");
	char method[8], target[1024], version[16];
	if (!line_end || line_end - c->req > 1100) {
		respond_error(c, 400);
		return;
	}
	*line_end = '\0';
	if (sscanf(c->req, "%7s %1023s %15s", method, target, version) != 3 ||
	    strncmp(version, "HTTP/1.", 7) != 0 || target[0] != '/') {
		respond_error(c, 400);
		return;
	}
	bool head = strcmp(method, "HEAD") == 0;
	if (!head && strcmp(method, "GET") != 0) {
		respond_error(c, 405);
		return;
	}
	char *query = strchr(target, '?');
	if (query)
		*query++ = '\0';
	char *body = NULL;
	size_t body_len = 0;
	FILE *f = open_memstream(&body, &body_len);
	if (!f) {
		respond_error(c, 500);
		return;
	}
	const char *type = "text/plain; charset=utf-8";
	int status = c->h->fn(c->h->ctx, target, query ? query : "", f, &type);
	if (fclose(f) != 0)
		status = 500;
	if (status == 200)
		respond(c, 200, type, body, body_len, head);
	else
		respond_error(c, status);
	free(body);
}

static void conn_drain(struct http_conn *c)
{
	if (!sock_drain(c->fd))
		conn_close(c);
}

static void conn_read(struct loop *l, int fd, int events, void *arg)
{
	struct http_conn *c = arg;
	if (c->draining) {
		conn_drain(c);
		return;
	}
	for (;;) {
		if (c->req_len == HTTP_REQUEST_MAX) {
			respond_error(c, 431);
			return;
		}
		ssize_t n = recv(fd, c->req + c->req_len, HTTP_REQUEST_MAX - c->req_len, 0);
		if (n > 0) {
			c->req_len += (size_t)n;
			c->req[c->req_len] = '\0';
			if (memchr(c->req, '\0', c->req_len)) {
				respond_error(c, 400);
				return;
			}
			if (strstr(c->req, "\r\n\r\n")) {
				serve(c);
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

static void conn_timeout(struct loop *l, void *arg)
{
	struct http_conn *c = arg;
	c->timer = 0;
	conn_close(c);
}

/* The address without the port: the key of the per-client cap. */
static void client_key(struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = 0;
	else if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = 0;
}

static bool same_client(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		              &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return true;   /* AF_UNIX and the like: one client */
}

/*
 * Makes room for one more connection from `peer`: a client already holding
 * HTTP_CONN_PER_CLIENT slots gives up its oldest (so one address cannot
 * hold every slot, and a client whose old connection hangs still gets in);
 * otherwise the first free slot.  NULL when every slot is held by others.
 */
static struct http_conn *conn_slot(struct http *h, const struct sockaddr_storage *peer)
{
	struct http_conn *free_slot = NULL, *oldest = NULL;
	unsigned mine = 0;
	for (size_t i = 0; i < HTTP_CONN_MAX; i++) {
		struct http_conn *c = &h->conn[i];
		if (c->fd < 0) {
			if (!free_slot)
				free_slot = c;
			continue;
		}
		if (!same_client(&c->peer, peer))
			continue;
		mine++;
		if (!oldest || c->seq < oldest->seq)
			oldest = c;
	}
	if (mine >= HTTP_CONN_PER_CLIENT) {
		log_limited(&http_lim, LOG_INFO, "http: a client has %u connections "
		            "(at most %d per address): closing its oldest", mine, HTTP_CONN_PER_CLIENT);
		conn_close(oldest);
		return oldest;
	}
	return free_slot;
}

static void on_accept(struct loop *l, int fd, int events, void *arg)
{
	struct http *h = arg;
	for (;;) {
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);
		memset(&peer, 0, sizeof(peer));
		int cfd = accept4(fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0)
			return;   /* EAGAIN, or an error the next readiness will show again */
		client_key(&peer);
		struct http_conn *c = conn_slot(h, &peer);
		if (!c) {
			/* Full: this endpoint is for an operator and a scraper. */
			close(cfd);
			continue;
		}
		c->fd = cfd;
		c->peer = peer;
		c->seq = ++h->seq;
		c->req_len = 0;
		c->req[0] = '\0';
		c->resp = NULL;
		c->draining = false;
		c->timer = loop_timer_add(l, HTTP_IDLE_MS, conn_timeout, c);
		if (c->timer < 0 || loop_add_fd(l, cfd, LOOP_READ, conn_read, c) < 0) {
			if (c->timer > 0)
				loop_timer_cancel(l, c->timer);
			close(cfd);
			c->fd = -1;
		}
	}
}

/* "127.0.0.1:9153" or "[::1]:9153" -> a bound, listening socket. */
static int listen_on(const char *spec, unsigned *port_out, char err[256])
{
	char host[128];
	const char *port;
	if (spec[0] == '[') {
		const char *end = strchr(spec, ']');
		if (!end || end[1] != ':' || (size_t)(end - spec - 1) >= sizeof(host))
			goto bad;
		memcpy(host, spec + 1, (size_t)(end - spec - 1));
		host[end - spec - 1] = '\0';
		port = end + 2;
	} else {
		const char *colon = strrchr(spec, ':');
		if (!colon || (size_t)(colon - spec) >= sizeof(host) || strchr(spec, ':') != colon)
			goto bad;
		memcpy(host, spec, (size_t)(colon - spec));
		host[colon - spec] = '\0';
		port = colon + 1;
	}
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
	                          .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	if (!*port || getaddrinfo(host, port, &hints, &res) != 0 || !res)
		goto bad;
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	/* Rebind at once after a restart; an IPv6 listener takes IPv6 only. */
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (res->ai_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 16) < 0) {
		snprintf(err, 256, "http_listen \"%s\": %s", spec, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return -1;
	}
	freeaddrinfo(res);
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
		*port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
		                                           : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
bad:
	snprintf(err, 256, "http_listen \"%s\": expected \"address:port\" or \"[v6]:port\" "
	         "with a numeric address", spec);
	return -1;
}

struct http *http_new(struct loop *l, char *const *addrs, size_t n_addrs, http_handler_fn fn,
                      void *ctx, char err[256])
{
	if (n_addrs > HTTP_LISTEN_MAX) {
		snprintf(err, 256, "http_listen: at most %d addresses", HTTP_LISTEN_MAX);
		return NULL;
	}
	struct http *h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(err, 256, "http: out of memory");
		return NULL;
	}
	h->loop = l;
	h->fn = fn;
	h->ctx = ctx;
	for (size_t i = 0; i < HTTP_CONN_MAX; i++) {
		h->conn[i].fd = -1;
		h->conn[i].h = h;
	}
	for (size_t i = 0; i < n_addrs; i++) {
		unsigned port = 0;
		int fd = listen_on(addrs[i], &port, err);
		if (fd < 0)
			goto fail;
		h->listen_fd[h->n_listen++] = fd;
		if (i == 0)
			h->port = port;
		int rc = loop_add_fd(l, fd, LOOP_READ, on_accept, h);
		if (rc < 0) {
			snprintf(err, 256, "http_listen \"%s\": %s", addrs[i], strerror(-rc));
			goto fail;
		}
		log_info("http: listening on %s (port %u)", addrs[i], port);
	}
	return h;
fail:
	http_free(h);
	return NULL;
}

void http_free(struct http *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < HTTP_CONN_MAX; i++)
		conn_close(&h->conn[i]);
	for (size_t i = 0; i < h->n_listen; i++) {
		loop_del_fd(h->loop, h->listen_fd[i]);
		close(h->listen_fd[i]);
	}
	free(h);
}
