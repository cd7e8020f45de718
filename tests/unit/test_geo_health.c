/* SPDX-License-Identifier: MIT */
/*
 * The health checks (core/geo/health.h), driven by the test's own loop
 * against tiny HTTP servers on loopback: a site that refuses, one that
 * answers 200, one 503, one that never answers, and what each probe
 * verdict does to the site's liveness.  Moved out of test_geo.c.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/conf/config.h"
#include "core/conf/log.h"
#include "core/geo/geo_sites.h"
#include "core/geo/health.h"
#include "core/net/loop.h"
#include "tests/unit/check.h"
#include "tests/unit/geo_sites_example.h"

/* A tiny HTTP server on the test's loop: answers each request with `reply`. */
struct http_srv {
	int fd;
	uint16_t port;
	const char *reply;
	char last_request[512];
	size_t got;
	int conn;
};

static void srv_conn(struct loop *l, int fd, int events, void *arg)
{
	struct http_srv *srv = arg;
	ssize_t r = recv(fd, srv->last_request + srv->got, sizeof(srv->last_request) - 1 - srv->got,
	                 MSG_DONTWAIT);
	if (r > 0) {
		srv->got += (size_t)r;
		srv->last_request[srv->got] = 0;
		if (!strstr(srv->last_request, "\r\n\r\n"))
			return;
		ssize_t w = send(fd, srv->reply, strlen(srv->reply), MSG_NOSIGNAL);
		(void)w;
	}
	loop_del_fd(l, fd);
	close(fd);
	srv->conn = -1;
}

static void srv_accept(struct loop *l, int fd, int events, void *arg)
{
	struct http_srv *srv = arg;
	int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (c < 0)
		return;
	srv->got = 0;
	srv->conn = c;
	loop_add_fd(l, c, LOOP_READ, srv_conn, srv);
}

static int listen_local(uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 8) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) < 0)
		return -1;
	*port = ntohs(sin.sin_port);
	return fd;
}

struct changes {
	int n;
	size_t site[8];
	bool alive[8];
};

static void on_change(void *arg, size_t site, enum geo_family f, bool alive)
{
	struct changes *c = arg;
	(void)f;
	if (c->n < 8) {
		c->site[c->n] = site;
		c->alive[c->n] = alive;
	}
	c->n++;
}

struct watch {
	struct geo_sites *s;
	struct health *h;
	int rounds;
};

/* Stops the loop once every scenario has settled (or after 3 s). */
static void poll_done(struct loop *l, void *arg)
{
	struct watch *w = arg;
	bool settled = !geo_site_alive(w->s, 0, GEO_IPV4) && geo_site_alive(w->s, 1, GEO_IPV4) &&
	               !geo_site_alive(w->s, 2, GEO_IPV4) && !geo_site_alive(w->s, 3, GEO_IPV4) &&
	               health_checks_done(w->h, 1) >= 4;
	if (settled || ++w->rounds > 300)
		loop_stop(l);
	else
		loop_timer_add(l, 10, poll_done, w);
}

static void test_health(void)
{
	char err[256] = "";
	struct loop *l = loop_new(err);
	if (!ok(l != NULL, "loop_new: %s", err))
		return;
	/* Site 0: nothing listens (a port we bound and closed). */
	uint16_t closed_port;
	int tmp = listen_local(&closed_port);
	close(tmp);
	/* Site 1: HTTP 200, starts dead.  Site 2: HTTP 503.  Site 3: never answers. */
	struct http_srv ok200 = { .reply = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" };
	struct http_srv bad503 = { .reply = "HTTP/1.0 503 Service Unavailable\r\n\r\n" };
	ok200.fd = listen_local(&ok200.port);
	bad503.fd = listen_local(&bad503.port);
	uint16_t silent_port;
	int silent = listen_local(&silent_port);   /* never accepted: the backlog connects */
	loop_add_fd(l, ok200.fd, LOOP_READ, srv_accept, &ok200);
	loop_add_fd(l, bad503.fd, LOOP_READ, srv_accept, &bad503);

	struct site_def d[] = {
		{ "closed", 0, 0, "127.0.0.1", NULL },
		{ "up.example", 0, 1, "127.0.0.1", NULL },
		{ "failing", 0, 2, "127.0.0.1", NULL },
		{ "silent", 0, 3, "127.0.0.1", NULL },
		{ "unchecked", 0, 4, "127.0.0.1", NULL },
	};
	struct test_config tc;
	make_config(&tc, d, 5);
	struct config_health base = { .enabled = true, .interval_ms = 20, .timeout_ms = 150,
	                              .rise = 2, .fall = 2 };
	for (int i = 0; i < 4; i++)
		tc.s[i].health = base;
	tc.s[0].health.port = closed_port;
	tc.s[1].health.port = ok200.port;
	tc.s[1].health.http_path = "/health";
	tc.s[2].health.port = bad503.port;
	tc.s[2].health.http_path = "/";
	tc.s[2].health.http_host = "www.example.com";
	tc.s[2].health.fall = 1;
	tc.s[3].health.port = silent_port;
	tc.s[3].health.http_path = "/";
	tc.s[3].health.fall = 1;
	tc.s[3].health.timeout_ms = 60;

	struct geo_sites *s = geo_sites_new(&tc.c, err);
	/* As after a reload: every site's liveness carried over (alive), so
	 * rise and fall count from the first check. */
	geo_sites_copy_alive(s, s);
	geo_site_set_alive(s, 1, GEO_IPV4, false);   /* as if carried over dead from a reload */
	geo_site_set_alive(s, 4, GEO_IPV4, false);   /* no checks: must come back alive */
	struct health *h = health_new(l, s, &tc.c, err);
	if (!ok(h != NULL, "health_new: %s", err))
		goto out;
	ok(geo_site_alive(s, 4, GEO_IPV4), "a site without checks is alive");
	struct changes ch = { 0 };
	health_on_change(h, on_change, &ch);
	struct watch w = { .s = s, .h = h };
	loop_timer_add(l, 10, poll_done, &w);
	log_set_level(LOG_ERROR);   /* the state changes are expected */
	loop_run(l);
	log_set_level(LOG_INFO);

	ok(w.rounds <= 300, "settled within 3 s");
	ok(!geo_site_alive(s, 0, GEO_IPV4), "closed port: down");
	ok(geo_site_alive(s, 1, GEO_IPV4), "HTTP 200: up");
	ok(!geo_site_alive(s, 2, GEO_IPV4), "HTTP 503: down");
	ok(!geo_site_alive(s, 3, GEO_IPV4), "no response: down (timeout)");
	ok(geo_site_alive(s, 4, GEO_IPV4), "unchecked: still alive");
	ok(health_checks_done(h, 0) >= 2, "closed: at least fall=2 checks (%lu)",
	   health_checks_done(h, 0));
	ok(health_checks_done(h, 4) == 0, "unchecked site never checked");
	is_int(ch.n, 4, "four state changes reported");
	int downs = 0, ups = 0;
	for (int i = 0; i < ch.n && i < 8; i++) {
		if (ch.alive[i])
			ups += ch.site[i] == 1;
		else
			downs += ch.site[i] == 0 || ch.site[i] == 2 || ch.site[i] == 3;
	}
	ok(ups == 1 && downs == 3, "one up (site 1), three down (0, 2, 3)");
	ok(strncmp(ok200.last_request, "GET /health HTTP/1.1\r\nHost: up.example\r\n", 40) == 0,
	   "request line and default Host header");
	ok(strstr(ok200.last_request, "Connection: close\r\n") != NULL, "Connection: close");
	ok(strstr(bad503.last_request, "Host: www.example.com\r\n") != NULL, "configured Host");
out:
	health_free(h);
	if (ok200.conn > 0)
		close(ok200.conn);
	if (bad503.conn > 0)
		close(bad503.conn);
	loop_del_fd(l, ok200.fd);
	loop_del_fd(l, bad503.fd);
	close(ok200.fd);
	close(bad503.fd);
	close(silent);
	loop_free(l);
	geo_sites_free(s);
}

int main(void)
{
	test_health();
	return done_testing();
}
