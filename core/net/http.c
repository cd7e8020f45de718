/* SPDX-License-Identifier: MIT */
/*
 * The HTTP endpoint: a slot for each connection within the limits, the
 * request line parsed, the handler called, the response built.  The
 * connections' bytes (accept, read, write, idle limit, close) are
 * conn_table.c's.  See http.h for the limits.
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
#include "core/net/conn_table.h"
#include "core/net/loop.h"

#define HTTP_LISTEN_MAX 8

static struct log_limit http_lim;

/* What the endpoint keeps of a connection; the bytes are the table's. */
struct http_conn {
	uint64_t seq;                    /* accept order: the lowest is the oldest */
	struct sockaddr_storage peer;    /* the client's address (its port zeroed) */
};

struct http {
	struct loop *loop;
	http_handler_fn fn;
	void *ctx;
	int listen_fd[HTTP_LISTEN_MAX];
	size_t n_listen;
	unsigned port;
	uint64_t seq;
	struct conn_table *conns;
	struct http_conn conn[HTTP_CONN_MAX];   /* by conn_index() */
};

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
static void respond(struct conn *c, int status, const char *type, const char *body,
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
		out = NULL;
	}
	conn_respond(c, out, out_len);
}

static void respond_error(struct conn *c, int status)
{
	char body[64];
	int n = snprintf(body, sizeof(body), "%d %s\n", status, reason(status));
	respond(c, status, "text/plain; charset=utf-8", body, (size_t)n, false);
}

/* The request head is complete: parse the request line and answer. */
static void serve(void *arg, struct conn *c, char *req, char *head_end)
{
	struct http *h = arg;
	(void)head_end;
	char *line_end = strstr(req, "\r\n");
	char method[8], target[1024], version[16];
	if (!line_end || line_end - req > 1100) {
		respond_error(c, 400);
		return;
	}
	*line_end = '\0';
	if (sscanf(req, "%7s %1023s %15s", method, target, version) != 3 ||
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
	int status = h->fn(h->ctx, target, query ? query : "", f, &type);
	if (fclose(f) != 0)
		status = 500;
	if (status == 200)
		respond(c, 200, type, body, body_len, head);
	else
		respond_error(c, status);
	free(body);
}

static char *head_end(char *req)
{
	return strstr(req, "\r\n\r\n");
}

static void bad_request(void *arg, struct conn *c, enum conn_bad why)
{
	(void)arg;
	respond_error(c, why == CONN_TOO_LONG ? 431 : 400);
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
static struct conn *conn_slot(struct http *h, const struct sockaddr_storage *peer)
{
	struct conn *free_slot = NULL, *oldest = NULL;
	unsigned mine = 0;
	for (size_t i = 0; i < HTTP_CONN_MAX; i++) {
		struct conn *c = conn_table_slot(h->conns, i);
		if (!conn_is_open(c)) {
			if (!free_slot)
				free_slot = c;
			continue;
		}
		if (!same_client(&h->conn[i].peer, peer))
			continue;
		mine++;
		if (!oldest || h->conn[i].seq < h->conn[conn_index(oldest)].seq)
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

static struct conn *admit(void *arg, int fd, const struct sockaddr_storage *addr)
{
	struct http *h = arg;
	(void)fd;
	struct sockaddr_storage peer = *addr;
	client_key(&peer);
	struct conn *c = conn_slot(h, &peer);
	if (!c)
		return NULL;   /* full: this endpoint is for an operator and a scraper */
	h->conn[conn_index(c)] = (struct http_conn){ .seq = ++h->seq, .peer = peer };
	return c;
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
	const struct conn_table_ops ops = {
		.ctx = h, .admit = admit, .request_end = head_end, .request = serve,
		.bad = bad_request,   /* idle: closed */
	};
	h->conns = conn_table_new(l, HTTP_CONN_MAX, HTTP_REQUEST_MAX, HTTP_IDLE_MS, &ops);
	if (!h->conns) {
		snprintf(err, 256, "http: out of memory");
		free(h);
		return NULL;
	}
	for (size_t i = 0; i < n_addrs; i++) {
		unsigned port = 0;
		int fd = listen_on(addrs[i], &port, err);
		if (fd < 0)
			goto fail;
		h->listen_fd[h->n_listen++] = fd;
		if (i == 0)
			h->port = port;
		int rc = conn_table_listen(h->conns, fd);
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
	conn_table_free(h->conns);
	for (size_t i = 0; i < h->n_listen; i++) {
		loop_del_fd(h->loop, h->listen_fd[i]);
		close(h->listen_fd[i]);
	}
	free(h);
}
