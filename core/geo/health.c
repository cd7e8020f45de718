/* SPDX-License-Identifier: MIT */
/*
 * One state machine per checked site, driven by the loop:
 *
 *   IDLE --timer--> CONNECTING --writable--> (no http_path) done
 *                              \--> SENDING --sent--> READING --status line--> done
 *
 * A timeout timer runs from the connect to the end of the check; whichever
 * of "done" and "timeout" comes first ends the check, closes the socket
 * and schedules the next one.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/conf/config.h"
#include "core/conf/log.h"
#include "core/conf/metrics.h"
#include "core/geo/geo_sites.h"
#include "core/geo/health.h"
#include "core/net/loop.h"

enum check_state { IDLE, CONNECTING, SENDING, READING };

struct site_check {
	struct health *h;
	size_t site;
	const char *name;            /* owned by geo_sites */
	struct sockaddr_storage addr;
	socklen_t addr_len;
	uint16_t port;
	char *request;               /* NULL: a TCP connect is the whole check */
	size_t request_len;
	uint32_t interval_ms, timeout_ms, rise, fall;

	enum check_state state;
	int fd;
	int64_t next_timer;          /* starts the next check; 0 when none */
	int64_t timeout_timer;       /* bounds the running check; 0 when none */
	uint64_t started_ms;
	size_t sent;
	char status[64];             /* first bytes of the response */
	size_t got;
	uint32_t ok_run, fail_run;
	unsigned long done;
	char last[96];               /* the last verdict: "ok" or why it failed */
};

struct health {
	struct loop *l;
	struct geo_sites *sites;
	size_t n;
	struct site_check *c;
	health_change_fn on_change;
	void *on_change_arg;
};

static void start_check(struct loop *l, void *arg);

static void schedule_next(struct site_check *sc)
{
	uint64_t now = loop_now_ms(sc->h->l);
	uint64_t elapsed = now > sc->started_ms ? now - sc->started_ms : 0;
	uint64_t delay = elapsed < sc->interval_ms ? sc->interval_ms - elapsed : 0;
	int64_t id = loop_timer_add(sc->h->l, delay, start_check, sc);

	sc->next_timer = id > 0 ? id : 0;
	if (id <= 0)
		log_error("health: site %s: cannot schedule the next check: %s", sc->name,
		          strerror((int)-id));
}

static void close_socket(struct site_check *sc)
{
	if (sc->fd >= 0) {
		if (sc->state != IDLE)
			loop_del_fd(sc->h->l, sc->fd);
		close(sc->fd);
		sc->fd = -1;
	}
	if (sc->timeout_timer) {
		loop_timer_cancel(sc->h->l, sc->timeout_timer);
		sc->timeout_timer = 0;
	}
	sc->state = IDLE;
}

static void set_alive(struct site_check *sc, bool alive)
{
	geo_site_set_alive(sc->h->sites, sc->site, alive);
	if (sc->h->on_change)
		sc->h->on_change(sc->h->on_change_arg, sc->site, alive);
}

/* Ends the running check with a verdict and counts it toward rise/fall. */
static void finish(struct site_check *sc, bool ok, const char *reason)
{
	bool alive = geo_site_alive(sc->h->sites, sc->site);

	close_socket(sc);
	sc->done++;
	snprintf(sc->last, sizeof(sc->last), "%s", ok ? "ok" : reason);
	if (ok)
		metrics.probes_ok++;
	else
		metrics.probes_failed++;
	if (ok) {
		sc->fail_run = 0;
		sc->ok_run++;
		log_debug("health: site %s: check passed", sc->name);
		if (!alive && sc->ok_run >= sc->rise) {
			log_info("health: site %s is up: %u consecutive checks passed", sc->name,
			         sc->ok_run);
			set_alive(sc, true);
		}
	} else {
		sc->ok_run = 0;
		sc->fail_run++;
		log_debug("health: site %s: check failed: %s", sc->name, reason);
		if (alive && sc->fail_run >= sc->fall) {
			log_warn("health: site %s is down: %s (%u consecutive checks failed)",
			         sc->name, reason, sc->fail_run);
			set_alive(sc, false);
		}
	}
	schedule_next(sc);
}

static void fail_errno(struct site_check *sc, const char *what, int err)
{
	char reason[128];

	snprintf(reason, sizeof(reason), "%s: %s", what, strerror(err));
	finish(sc, false, reason);
}

/* "HTTP/1.x 2xx" at the start of the response. */
static bool status_ok(const char *s, size_t n)
{
	return n >= 12 && memcmp(s, "HTTP/1.", 7) == 0 && s[7] >= '0' && s[7] <= '9' &&
	       s[8] == ' ' && s[9] == '2' && s[10] >= '0' && s[10] <= '9' && s[11] >= '0' &&
	       s[11] <= '9';
}

static void read_status(struct site_check *sc)
{
	for (;;) {
		if (sc->got == sizeof(sc->status) - 1)
			break;
		ssize_t r = recv(sc->fd, sc->status + sc->got, sizeof(sc->status) - 1 - sc->got,
		                 MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;   /* wait for more */
			fail_errno(sc, "receive", errno);
			return;
		}
		if (r == 0)
			break;
		sc->got += (size_t)r;
		if (memchr(sc->status, '\n', sc->got) || sc->got >= 12)
			break;
	}
	sc->status[sc->got] = '\0';
	if (status_ok(sc->status, sc->got)) {
		finish(sc, true, NULL);
		return;
	}
	char reason[96];
	size_t len = strcspn(sc->status, "\r\n");
	if (sc->got == 0)
		snprintf(reason, sizeof(reason), "connection closed without a response");
	else
		snprintf(reason, sizeof(reason), "HTTP status line \"%.*s\"",
		         (int)(len > 40 ? 40 : len), sc->status);
	finish(sc, false, reason);
}

static void send_request(struct site_check *sc)
{
	while (sc->sent < sc->request_len) {
		ssize_t r = send(sc->fd, sc->request + sc->sent, sc->request_len - sc->sent,
		                 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;   /* still LOOP_WRITE */
			fail_errno(sc, "send", errno);
			return;
		}
		sc->sent += (size_t)r;
	}
	sc->state = READING;
	loop_mod_fd(sc->h->l, sc->fd, LOOP_READ);
}

static void on_io(struct loop *l, int fd, int events, void *arg)
{
	struct site_check *sc = arg;

	switch (sc->state) {
	case CONNECTING: {
		int err = 0;
		socklen_t len = sizeof(err);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err) {
			fail_errno(sc, "connect", err);
			return;
		}
		if (!sc->request) {
			finish(sc, true, NULL);
			return;
		}
		sc->state = SENDING;
		send_request(sc);
		return;
	}
	case SENDING:
		send_request(sc);
		return;
	case READING:
		read_status(sc);
		return;
	case IDLE:
		return;
	}
}

static void on_timeout(struct loop *l, void *arg)
{
	struct site_check *sc = arg;
	char reason[64];

	sc->timeout_timer = 0;   /* fired: nothing to cancel */
	snprintf(reason, sizeof(reason), "no %s within %u ms",
	         sc->state == CONNECTING ? "connection" : "response", sc->timeout_ms);
	finish(sc, false, reason);
}

static void start_check(struct loop *l, void *arg)
{
	struct site_check *sc = arg;

	sc->next_timer = 0;
	sc->started_ms = loop_now_ms(l);
	sc->sent = 0;
	sc->got = 0;
	sc->fd = socket(sc->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (sc->fd < 0) {
		fail_errno(sc, "socket", errno);
		return;
	}
	int r = connect(sc->fd, (const struct sockaddr *)&sc->addr, sc->addr_len);
	if (r < 0 && errno != EINPROGRESS) {
		fail_errno(sc, "connect", errno);
		return;
	}
	/* Even an immediate connect reports through writability, one path. */
	sc->state = CONNECTING;
	r = loop_add_fd(l, sc->fd, LOOP_WRITE, on_io, sc);
	if (r < 0) {
		sc->state = IDLE;
		fail_errno(sc, "event loop", -r);
		return;
	}
	int64_t id = loop_timer_add(l, sc->timeout_ms, on_timeout, sc);
	if (id <= 0) {
		fail_errno(sc, "timer", (int)-id);
		return;
	}
	sc->timeout_timer = id;
}

static char *make_request(const char *path, const char *host)
{
	const char *fmt = "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: geoacme-health\r\n"
	                  "Connection: close\r\n\r\n";
	int n = snprintf(NULL, 0, fmt, path, host);
	char *s = n > 0 ? malloc((size_t)n + 1) : NULL;

	if (s)
		snprintf(s, (size_t)n + 1, fmt, path, host);
	return s;
}

struct health *health_new(struct loop *l, struct geo_sites *sites, const struct config *c,
                          char err[256])
{
	struct health *h = calloc(1, sizeof(*h));

	if (!h)
		goto nomem;
	h->l = l;
	h->sites = sites;
	if (c->n_sites) {
		h->c = calloc(c->n_sites, sizeof(*h->c));
		if (!h->c)
			goto nomem;
	}
	for (size_t i = 0; i < c->n_sites; i++) {
		const struct config_site *cs = &c->sites[i];
		const struct config_health *ch = &cs->health;
		int idx = geo_sites_find(sites, cs->name);

		if (idx < 0) {
			snprintf(err, 256, "health: site \"%s\" is not in the site table", cs->name);
			goto fail;
		}
		if (!ch->enabled || !cs->enabled) {
			/* Nothing will ever mark it dead. */
			geo_site_set_alive(sites, (size_t)idx, true);
			continue;
		}
		struct site_check *sc = &h->c[h->n];
		sc->h = h;
		sc->site = (size_t)idx;
		sc->name = geo_site_name(sites, (size_t)idx);
		sc->fd = -1;
		sc->port = ch->port;
		if (cs->has_v4) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&sc->addr;
			sin->sin_family = AF_INET;
			sin->sin_port = htons(ch->port);
			memcpy(&sin->sin_addr, cs->v4, 4);
			sc->addr_len = sizeof(*sin);
		} else if (cs->has_v6) {
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&sc->addr;
			sin6->sin6_family = AF_INET6;
			sin6->sin6_port = htons(ch->port);
			memcpy(&sin6->sin6_addr, cs->v6, 16);
			sc->addr_len = sizeof(*sin6);
		} else {
			snprintf(err, 256, "health: site \"%s\" has no address to check", cs->name);
			goto fail;
		}
		if (ch->port == 0) {
			snprintf(err, 256, "health: site \"%s\": no port to check", cs->name);
			goto fail;
		}
		if (ch->http_path && ch->http_path[0]) {
			sc->request = make_request(ch->http_path,
			                           ch->http_host ? ch->http_host : cs->name);
			if (!sc->request)
				goto nomem;
			sc->request_len = strlen(sc->request);
		}
		/* Guard against zeros a hand-made config could carry. */
		sc->interval_ms = ch->interval_ms ? ch->interval_ms : 10000;
		sc->timeout_ms = ch->timeout_ms ? ch->timeout_ms : 3000;
		sc->rise = ch->rise ? ch->rise : 1;
		sc->fall = ch->fall ? ch->fall : 1;
		h->n++;
	}
	for (size_t k = 0; k < h->n; k++) {
		struct site_check *sc = &h->c[k];
		/* Staggered so a few dozen sites do not connect in one burst. */
		uint64_t delay = (uint64_t)(k * 7) % (sc->interval_ms ? sc->interval_ms : 1);
		int64_t id = loop_timer_add(l, delay, start_check, sc);
		if (id <= 0) {
			snprintf(err, 256, "health: cannot add a timer: %s", strerror((int)-id));
			goto fail;
		}
		sc->next_timer = id;
	}
	return h;
nomem:
	snprintf(err, 256, "out of memory");
fail:
	health_free(h);
	return NULL;
}

void health_free(struct health *h)
{
	if (!h)
		return;
	for (size_t k = 0; k < h->n; k++) {
		struct site_check *sc = &h->c[k];
		close_socket(sc);
		if (sc->next_timer)
			loop_timer_cancel(h->l, sc->next_timer);
		free(sc->request);
	}
	free(h->c);
	free(h);
}

void health_on_change(struct health *h, health_change_fn fn, void *arg)
{
	h->on_change = fn;
	h->on_change_arg = arg;
}

unsigned long health_checks_done(const struct health *h, size_t site)
{
	for (size_t k = 0; k < h->n; k++)
		if (h->c[k].site == site)
			return h->c[k].done;
	return 0;
}

const char *health_last_result(const struct health *h, size_t site)
{
	for (size_t i = 0; h && i < h->n; i++)
		if (h->c[i].site == site)
			return h->c[i].done ? h->c[i].last : "pending";
	return NULL;
}
