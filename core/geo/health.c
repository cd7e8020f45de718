/* SPDX-License-Identifier: MIT */
/*
 * One state machine per probe (site x address family), driven by the loop:
 *
 *   IDLE --timer--> CONNECTING --writable--> [tls] HANDSHAKE --done-->
 *        [http_path] SENDING --sent--> READING --status line--> verdict
 *
 * Steps in brackets are skipped when not configured; a probe with neither
 * passes once connected.  TLS steps wait for whatever readiness OpenSSL
 * asks for (a TLS write may need to read and the other way round), so
 * every state re-arms the descriptor from the call's answer.  A timeout
 * timer runs from the connect to the verdict; whichever of "verdict" and
 * "timeout" comes first ends the check, closes the socket and schedules
 * the next one.
 */
#include <arpa/inet.h>
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
#include "core/geo/health_tls.h"
#include "core/net/loop.h"

enum check_state { IDLE, CONNECTING, HANDSHAKE, SENDING, READING };

struct tls_slot {
	struct tls_slot *next;
	bool verify;
	char *ca_file;
	struct health_tls_ctx *ctx;
};

struct probe {
	struct health *h;
	size_t site;
	enum geo_family family;
	const char *name;            /* owned by geo_sites */
	char where[80];              /* "IPv4 192.0.2.1 port 443", for logs */
	struct sockaddr_storage addr;
	socklen_t addr_len;
	char *request;               /* NULL: no HTTP step */
	size_t request_len;
	uint64_t status_ok[CONFIG_HTTP_STATUS_WORDS];   /* accepted codes, a bit each */
	struct health_tls_ctx *tls_ctx;   /* NULL: no TLS step */
	const char *tls_name;        /* owned by the config */
	uint32_t interval_ms, timeout_ms, rise, fall;

	enum check_state state;
	int fd;
	struct health_tls *tls;
	int64_t next_timer;          /* starts the next check; 0 when none */
	int64_t timeout_timer;       /* bounds the running check; 0 when none */
	uint64_t started_ms;
	size_t sent;
	char status[64];             /* first bytes of the response */
	size_t got;
	uint32_t ok_run, fail_run;
	bool first;                  /* no verdict yet: the first one decides */
	bool both;                   /* the site has a probe in the other family too */
	unsigned long done;
	char last[128];              /* the last verdict: "ok" or why it failed */
};

struct health {
	struct loop *l;
	struct geo_sites *sites;
	size_t n;
	struct probe *p;
	struct tls_slot *tls;
	size_t first_pending;
	health_change_fn on_change;
	void *on_change_arg;
	void (*on_first)(void *arg);
	void *on_first_arg;
};

static const char *family_name(enum geo_family f)
{
	return f == GEO_IPV4 ? "IPv4" : "IPv6";
}

static void start_check(struct loop *l, void *arg);

static void schedule_next(struct probe *p)
{
	uint64_t now = loop_now_ms(p->h->l);
	uint64_t elapsed = now > p->started_ms ? now - p->started_ms : 0;
	uint64_t delay = elapsed < p->interval_ms ? p->interval_ms - elapsed : 0;
	int64_t id = loop_timer_add(p->h->l, delay, start_check, p);

	p->next_timer = id > 0 ? id : 0;
	if (id <= 0)
		log_error("health: site %s (%s): cannot schedule the next check: %s", p->name,
		          p->where, strerror((int)-id));
}

static void close_socket(struct probe *p)
{
	health_tls_free(p->tls);
	p->tls = NULL;
	if (p->fd >= 0) {
		if (p->state != IDLE)
			loop_del_fd(p->h->l, p->fd);
		close(p->fd);
		p->fd = -1;
	}
	if (p->timeout_timer) {
		loop_timer_cancel(p->h->l, p->timeout_timer);
		p->timeout_timer = 0;
	}
	p->state = IDLE;
}

static void set_alive(struct probe *p, bool alive)
{
	if (geo_site_alive(p->h->sites, p->site, p->family) == alive)
		return;
	geo_site_set_alive(p->h->sites, p->site, p->family, alive);
	if (p->h->on_change)
		p->h->on_change(p->h->on_change_arg, p->site, p->family, alive);
}

/* Ends the running check with a verdict and counts it toward rise/fall. */
static void finish(struct probe *p, bool ok, const char *reason)
{
	bool alive = geo_site_alive(p->h->sites, p->site, p->family);

	close_socket(p);
	p->done++;
	if (ok)
		snprintf(p->last, sizeof(p->last), "ok");
	else if (p->both)
		snprintf(p->last, sizeof(p->last), "%s: %s", family_name(p->family), reason);
	else
		snprintf(p->last, sizeof(p->last), "%s", reason);
	if (ok)
		metrics.probes_ok++;
	else
		metrics.probes_failed++;
	if (ok) {
		p->fail_run = 0;
		p->ok_run++;
		log_debug("health: site %s: check passed (%s)", p->name, p->where);
		if (p->first) {
			log_info("health: site %s is in service: first check passed (%s)", p->name, p->where);
			set_alive(p, true);
		} else if (!alive && p->ok_run >= p->rise) {
			log_info("health: site %s is up: %u consecutive checks passed (%s)", p->name,
			         p->ok_run, p->where);
			set_alive(p, true);
		}
	} else {
		p->ok_run = 0;
		p->fail_run++;
		log_debug("health: site %s: check failed: %s (%s)", p->name, reason, p->where);
		if (p->first) {
			log_warn("health: site %s is down: %s: %s (first check)", p->name, p->where,
			         reason);
			set_alive(p, false);
		} else if (alive && p->fail_run >= p->fall) {
			log_warn("health: site %s is down: %s: %s (%u consecutive checks failed)",
			         p->name, p->where, reason, p->fail_run);
			set_alive(p, false);
		}
	}
	if (p->first) {
		p->first = false;
		struct health *h = p->h;
		if (h->first_pending && --h->first_pending == 0 && h->on_first) {
			void (*fn)(void *) = h->on_first;
			h->on_first = NULL;
			fn(h->on_first_arg);
		}
	}
	schedule_next(p);
}

static void fail_errno(struct probe *p, const char *what, int err)
{
	char reason[128];

	snprintf(reason, sizeof(reason), "%s: %s", what, strerror(err));
	finish(p, false, reason);
}

/* Waits for what the last call asked (TLS) or for `events`. */
static void want(struct probe *p, int events)
{
	int r = loop_mod_fd(p->h->l, p->fd, events);
	if (r < 0)
		fail_errno(p, "event loop", -r);
}

/* "HTTP/1.x NNN" at the start of the response, NNN accepted. */
static bool status_ok(const struct probe *p, const char *s, size_t n)
{
	if (n < 12 || memcmp(s, "HTTP/1.", 7) != 0 || s[7] < '0' || s[7] > '9' || s[8] != ' ')
		return false;
	int code = 0;
	for (int i = 9; i < 12; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		code = code * 10 + (s[i] - '0');
	}
	if (n > 12 && s[12] != ' ' && s[12] != '\r' && s[12] != '\n')
		return false;
	return (p->status_ok[code / 64] >> (code % 64)) & 1;
}

static void verdict_on_status(struct probe *p)
{
	p->status[p->got] = '\0';
	if (status_ok(p, p->status, p->got)) {
		finish(p, true, NULL);
		return;
	}
	char reason[96];
	size_t len = strcspn(p->status, "\r\n");
	if (p->got == 0)
		snprintf(reason, sizeof(reason), "connection closed without a response");
	else
		snprintf(reason, sizeof(reason), "HTTP status line \"%.*s\"",
		         (int)(len > 40 ? 40 : len), p->status);
	finish(p, false, reason);
}

static bool tls_waits(ssize_t r)
{
	return r == HEALTH_TLS_WANT_READ || r == HEALTH_TLS_WANT_WRITE;
}

/*
 * After a TLS call: true when r is a result to use; false when the probe
 * now waits for the socket the TLS layer wants, or has failed (reason).
 */
static bool tls_ok(struct probe *p, ssize_t r, const char *reason)
{
	if (tls_waits(r)) {
		want(p, r == HEALTH_TLS_WANT_READ ? LOOP_READ : LOOP_WRITE);
		return false;
	}
	if (r < 0) {
		finish(p, false, reason);
		return false;
	}
	return true;
}

/*
 * After a plain recv or send failed (errno set): true to try again
 * (interrupted); false when the probe now waits for `events` on the
 * socket or has failed.
 */
static bool plain_retry(struct probe *p, const char *what, int events)
{
	if (errno == EINTR)
		return true;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		want(p, events);
	else
		fail_errno(p, what, errno);
	return false;
}

static void read_status(struct probe *p)
{
	char reason[160] = "";
	for (;;) {
		if (p->got == sizeof(p->status) - 1)
			break;
		ssize_t r;
		if (p->tls) {
			r = health_tls_read(p->tls, p->status + p->got, sizeof(p->status) - 1 - p->got,
			                    reason, sizeof(reason));
			/* A server may close without close_notify once it has sent
			 * the status line: what arrived is enough. */
			if (r < 0 && !tls_waits(r) && p->got >= 12)
				break;
			if (!tls_ok(p, r, reason))
				return;
		} else {
			r = recv(p->fd, p->status + p->got, sizeof(p->status) - 1 - p->got,
			         MSG_DONTWAIT);
			if (r < 0) {
				if (plain_retry(p, "receive", LOOP_READ))
					continue;
				return;
			}
		}
		if (r == 0)
			break;
		p->got += (size_t)r;
		if (memchr(p->status, '\n', p->got) || p->got >= 13)
			break;
	}
	verdict_on_status(p);
}

static void send_request(struct probe *p)
{
	char reason[160] = "";
	while (p->sent < p->request_len) {
		ssize_t r;
		if (p->tls) {
			r = health_tls_write(p->tls, p->request + p->sent, p->request_len - p->sent,
			                     reason, sizeof(reason));
			if (!tls_ok(p, r, reason))
				return;
		} else {
			r = send(p->fd, p->request + p->sent, p->request_len - p->sent,
			         MSG_DONTWAIT | MSG_NOSIGNAL);
			if (r < 0) {
				if (plain_retry(p, "send", LOOP_WRITE))
					continue;
				return;
			}
		}
		p->sent += (size_t)r;
	}
	p->state = READING;
	read_status(p);
}

/* After connect or handshake: the next configured step, or the verdict. */
static void after_transport(struct probe *p)
{
	if (!p->request) {
		finish(p, true, NULL);
		return;
	}
	p->state = SENDING;
	send_request(p);
}

static void handshake(struct probe *p)
{
	char reason[160] = "";
	int r = health_tls_handshake(p->tls, reason, sizeof(reason));
	if (tls_ok(p, r, reason))
		after_transport(p);
}

static void on_io(struct loop *l, int fd, int events, void *arg)
{
	struct probe *p = arg;
	(void)l;
	(void)events;

	switch (p->state) {
	case CONNECTING: {
		int err = 0;
		socklen_t len = sizeof(err);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err) {
			fail_errno(p, "connect", err);
			return;
		}
		if (!p->tls_ctx) {
			after_transport(p);
			return;
		}
		char e[256] = "";
		p->tls = health_tls_new(p->tls_ctx, p->fd, p->tls_name, e);
		if (!p->tls) {
			finish(p, false, e);
			return;
		}
		p->state = HANDSHAKE;
		handshake(p);
		return;
	}
	case HANDSHAKE:
		handshake(p);
		return;
	case SENDING:
		send_request(p);
		return;
	case READING:
		read_status(p);
		return;
	case IDLE:
		return;
	}
}

static void on_timeout(struct loop *l, void *arg)
{
	struct probe *p = arg;
	char reason[64];
	(void)l;

	p->timeout_timer = 0;   /* fired: nothing to cancel */
	snprintf(reason, sizeof(reason), "no %s within %u ms",
	         p->state == CONNECTING ? "connection"
	         : p->state == HANDSHAKE ? "TLS handshake"
	                                 : "response",
	         p->timeout_ms);
	finish(p, false, reason);
}

static void start_check(struct loop *l, void *arg)
{
	struct probe *p = arg;

	p->next_timer = 0;
	p->started_ms = loop_now_ms(l);
	p->sent = 0;
	p->got = 0;
	p->fd = socket(p->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->fd < 0) {
		fail_errno(p, "socket", errno);
		return;
	}
	int r = connect(p->fd, (const struct sockaddr *)&p->addr, p->addr_len);
	if (r < 0 && errno != EINPROGRESS) {
		fail_errno(p, "connect", errno);
		return;
	}
	/* Even an immediate connect reports through writability, one path. */
	p->state = CONNECTING;
	r = loop_add_fd(l, p->fd, LOOP_WRITE, on_io, p);
	if (r < 0) {
		p->state = IDLE;
		fail_errno(p, "event loop", -r);
		return;
	}
	int64_t id = loop_timer_add(l, p->timeout_ms, on_timeout, p);
	if (id <= 0) {
		fail_errno(p, "timer", (int)-id);
		return;
	}
	p->timeout_timer = id;
}

static char *make_request(const char *path, const char *host)
{
	const char *fmt = "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: geoacme-health\r\n"
	                  "Accept: */*\r\nConnection: close\r\n\r\n";
	int n = snprintf(NULL, 0, fmt, path, host);
	char *s = n > 0 ? malloc((size_t)n + 1) : NULL;

	if (s)
		snprintf(s, (size_t)n + 1, fmt, path, host);
	return s;
}

/* One TLS context per distinct (verify, ca_file): loading a CA store is not free. */
static struct health_tls_ctx *tls_context(struct health *h, bool verify, const char *ca_file,
                                          char err[256])
{
	for (struct tls_slot *s = h->tls; s; s = s->next)
		if (s->verify == verify && ((!s->ca_file && !ca_file) ||
		                            (s->ca_file && ca_file && strcmp(s->ca_file, ca_file) == 0)))
			return s->ctx;
	struct tls_slot *s = calloc(1, sizeof(*s));
	if (!s || (ca_file && !(s->ca_file = strdup(ca_file)))) {
		if (s)
			free(s);
		snprintf(err, 256, "out of memory");
		return NULL;
	}
	s->verify = verify;
	s->ctx = health_tls_ctx_new(verify, ca_file, err);
	if (!s->ctx) {
		free(s->ca_file);
		free(s);
		return NULL;
	}
	s->next = h->tls;
	h->tls = s;
	return s->ctx;
}

static int add_probe(struct health *h, const struct config_site *cs, size_t idx,
                     enum geo_family f, char err[256])
{
	const struct config_health *ch = &cs->health;
	struct probe *p = &h->p[h->n];
	char text[INET6_ADDRSTRLEN] = "";

	p->h = h;
	p->site = idx;
	p->family = f;
	p->name = geo_site_name(h->sites, idx);
	p->fd = -1;
	if (f == GEO_IPV4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&p->addr;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(ch->port);
		memcpy(&sin->sin_addr, cs->v4, 4);
		p->addr_len = sizeof(*sin);
		inet_ntop(AF_INET, cs->v4, text, sizeof(text));
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&p->addr;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(ch->port);
		memcpy(&sin6->sin6_addr, cs->v6, 16);
		p->addr_len = sizeof(*sin6);
		inet_ntop(AF_INET6, cs->v6, text, sizeof(text));
	}
	snprintf(p->where, sizeof(p->where), "%s %s port %u%s", family_name(f), text,
	         (unsigned)ch->port, ch->tls ? " tls" : "");
	const char *host = ch->http_host ? ch->http_host : cs->name;
	if (ch->http_path && ch->http_path[0]) {
		p->request = make_request(ch->http_path, host);
		if (!p->request) {
			snprintf(err, 256, "out of memory");
			return -ENOMEM;
		}
		p->request_len = strlen(p->request);
	}
	bool any = false;
	for (int w = 0; w < CONFIG_HTTP_STATUS_WORDS; w++) {
		p->status_ok[w] = ch->http_status[w];
		any = any || ch->http_status[w];
	}
	/* A hand-made config without the set: the default, 200..399. */
	for (int code = 200; !any && code < 400; code++)
		p->status_ok[code / 64] |= (uint64_t)1 << (code % 64);
	if (ch->tls) {
		char e[256] = "";
		p->tls_ctx = tls_context(h, ch->verify, ch->ca_file, e);
		if (!p->tls_ctx) {
			snprintf(err, 256, "health: site \"%s\": %s", cs->name, e);
			return -EINVAL;
		}
		p->tls_name = host;
	}
	/* Guard against zeros a hand-made config could carry. */
	p->interval_ms = ch->interval_ms ? ch->interval_ms : 10000;
	p->timeout_ms = ch->timeout_ms ? ch->timeout_ms : 3000;
	p->rise = ch->rise ? ch->rise : 1;
	p->fall = ch->fall ? ch->fall : 1;
	/* Not known from before: dead until the first check says otherwise. */
	p->first = !geo_site_carried(h->sites, idx);
	if (p->first) {
		geo_site_set_alive(h->sites, idx, f, false);
		h->first_pending++;
	}
	h->n++;
	return 0;
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
		h->p = calloc(c->n_sites * GEO_FAMILIES, sizeof(*h->p));
		if (!h->p)
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
			geo_site_set_alive(sites, (size_t)idx, GEO_IPV4, true);
			geo_site_set_alive(sites, (size_t)idx, GEO_IPV6, true);
			continue;
		}
		if (!cs->has_v4 && !cs->has_v6) {
			snprintf(err, 256, "health: site \"%s\" has no address to check", cs->name);
			goto fail;
		}
		if (ch->port == 0) {
			snprintf(err, 256, "health: site \"%s\": no port to check", cs->name);
			goto fail;
		}
		if (cs->has_v4 && add_probe(h, cs, (size_t)idx, GEO_IPV4, err) < 0)
			goto fail;
		if (cs->has_v6 && add_probe(h, cs, (size_t)idx, GEO_IPV6, err) < 0)
			goto fail;
		if (cs->has_v4 && cs->has_v6)
			h->p[h->n - 1].both = h->p[h->n - 2].both = true;
	}
	for (size_t k = 0; k < h->n; k++) {
		struct probe *p = &h->p[k];
		/* Staggered so a few dozen sites do not connect in one burst. */
		uint64_t delay = (uint64_t)(k * 7) % (p->interval_ms ? p->interval_ms : 1);
		if (delay > 500)
			delay %= 500;   /* the first round stays short: the server waits for it */
		int64_t id = loop_timer_add(l, delay, start_check, p);
		if (id <= 0) {
			snprintf(err, 256, "health: cannot add a timer: %s", strerror((int)-id));
			goto fail;
		}
		p->next_timer = id;
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
		struct probe *p = &h->p[k];
		close_socket(p);
		if (p->next_timer)
			loop_timer_cancel(h->l, p->next_timer);
		free(p->request);
	}
	while (h->tls) {
		struct tls_slot *s = h->tls;
		h->tls = s->next;
		health_tls_ctx_free(s->ctx);
		free(s->ca_file);
		free(s);
	}
	free(h->p);
	free(h);
}

void health_on_change(struct health *h, health_change_fn fn, void *arg)
{
	h->on_change = fn;
	h->on_change_arg = arg;
}

bool health_first_round_done(const struct health *h)
{
	return !h || h->first_pending == 0;
}

void health_on_first_round(struct health *h, void (*fn)(void *arg), void *arg)
{
	h->on_first = fn;
	h->on_first_arg = arg;
}

unsigned long health_checks_done(const struct health *h, size_t site)
{
	unsigned long n = 0;
	for (size_t k = 0; k < h->n; k++)
		if (h->p[k].site == site)
			n += h->p[k].done;
	return n;
}

const char *health_last_result(const struct health *h, size_t site)
{
	const char *failed = NULL;
	bool any = false;
	for (size_t k = 0; h && k < h->n; k++) {
		const struct probe *p = &h->p[k];
		if (p->site != site)
			continue;
		any = true;
		if (!p->done)
			return "pending";
		if (!failed && strcmp(p->last, "ok") != 0)
			failed = p->last;
	}
	if (!any)
		return NULL;
	return failed ? failed : "ok";
}
