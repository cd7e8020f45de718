/* SPDX-License-Identifier: MIT */
/*
 * NOTIFY out (see notify.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/conf/config.h"
#include "core/conf/log.h"
#include "core/conf/metrics.h"
#include "core/net/loop.h"
#include "core/net/source.h"
#include "core/tsig/tsig.h"
#include "core/wire/dname.h"
#include "core/wire/msg.h"
#include "core/wire/query.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/zone.h"
#include "xfr/notify.h"
#include "xfr/xfr_internal.h"

#define NOTIFY_RETRY_FIRST_MS 1000
#define NOTIFY_RETRY_MAX_MS 60000
#define NOTIFY_MSG_MAX 1024
/* A NOTIFY unanswered this long since the episode began is warned about, once. */
#define NOTIFY_WARN_MS 15000

struct notify_zone;

struct notify_target {
	struct notify_zone *nz;
	struct sockaddr_storage sa;
	socklen_t sa_len;
	char str[INET6_ADDRSTRLEN + 8];
	bool pending;            /* sent, not answered yet */
	uint16_t id;
	uint32_t serial;         /* what the pending NOTIFY announces */
	unsigned tries;
	uint64_t delay_ms;
	int64_t timer;
	uint64_t first_sent_ms;
	bool acked;              /* answered at least once: acked_serial is its serial */
	uint32_t acked_serial;
	uint64_t episode_ms;     /* loop ms of the episode's first NOTIFY; 0: answered */
	int64_t episode_wall;    /* the same in unix seconds */
	bool timed_out;          /* a try of the episode went unanswered past its wait */
	int64_t warn_timer;
	bool warned;
};

struct notify_zone {
	struct notify *n;
	uint8_t apex[DNAME_MAX];
	char name[DNAME_MAX * 4 + 2];
	bool known;              /* serial below is one we announced */
	uint32_t serial;
	uint32_t soa_ttl;
	uint8_t soa[2 * DNAME_MAX + 20];   /* rdata of the SOA we announce */
	uint16_t soa_len;
	bool signed_notify;
	struct tsig_key key;
	struct notify_target *targets;
	size_t n_targets;
};

struct notify {
	struct loop *l;
	struct net_source src;       /* where NOTIFYs leave from (core/net/source.h) */
	int fd4, fd6;
	struct notify_zone **zones;
	size_t n;
};


/* --- sending --- */

static int build(const struct notify_target *t, uint8_t *buf, size_t *len)
{
	const struct notify_zone *nz = t->nz;
	struct wire w;
	wire_init(&w, buf, NOTIFY_MSG_MAX);
	wire_write_u16(&w, t->id);
	wire_write_u16(&w, (uint16_t)(OPCODE_NOTIFY << 11 | 0x0400));   /* AA (RFC 1996 3.7) */
	wire_write_u16(&w, 1);
	wire_write_u16(&w, 1);
	wire_write_u16(&w, 0);
	wire_write_u16(&w, 0);
	wire_write_bytes(&w, nz->apex, dname_len(nz->apex));
	wire_write_u16(&w, RR_SOA);
	wire_write_u16(&w, CLASS_IN);
	/* The new SOA in the answer section, a hint the secondary may use (3.7). */
	wire_write_bytes(&w, nz->apex, dname_len(nz->apex));
	wire_write_u16(&w, RR_SOA);
	wire_write_u16(&w, CLASS_IN);
	wire_write_u32(&w, nz->soa_ttl);
	wire_write_u16(&w, nz->soa_len);
	wire_write_bytes(&w, nz->soa, nz->soa_len);
	if (w.err)
		return w.err;
	*len = wire_pos(&w);
	if (!nz->signed_notify)
		return 0;
	struct tsig_rr f;
	tsig_rr_init(&f, &nz->key, (uint64_t)loop_wall_s(nz->n->l), t->id);
	int rc = tsig_append(buf, len, NOTIFY_MSG_MAX, &f, &nz->key, NULL, 0, NULL);
	return rc < 0 ? rc : 0;
}

static void retry(struct loop *l, void *arg);

static void send_one(struct notify_target *t)
{
	struct notify *n = t->nz->n;
	uint8_t buf[NOTIFY_MSG_MAX];
	size_t len = 0;
	t->timer = 0;
	if (build(t, buf, &len) < 0) {
		log_error("%s: cannot build a NOTIFY for %s", t->nz->name, t->str);
		t->pending = false;
		return;
	}
	int fd = t->sa.ss_family == AF_INET ? n->fd4 : n->fd6;
	if (fd < 0 || sendto(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL,
	                     (const struct sockaddr *)&t->sa, t->sa_len) < 0)
		log_warn("%s: NOTIFY to %s: %s; retrying", t->nz->name, t->str,
		         fd < 0 ? "no socket for that family" : strerror(errno));
	else
		log_debug("%s: NOTIFY serial %u to %s (try %u)", t->nz->name, t->serial, t->str,
		          t->tries + 1);
	t->tries++;
	METRICS_INC(metrics.notify_sent);
	int64_t id = loop_timer_add(n->l, t->delay_ms, retry, t);
	t->timer = id > 0 ? id : 0;
	t->delay_ms = t->delay_ms * 2 > NOTIFY_RETRY_MAX_MS ? NOTIFY_RETRY_MAX_MS : t->delay_ms * 2;
}

static void retry(struct loop *l, void *arg)
{
	struct notify_target *t = arg;
	(void)l;
	t->timer = 0;
	if (!t->pending)
		return;
	/* RFC 1996 3.6: no answer within the wait, so the target has left it
	 * unanswered (until now it was only pending). */
	t->timed_out = true;
	if (t->tries == 5)
		log_warn("%s: NOTIFY serial %u to %s: no answer after %u tries; still trying",
		         t->nz->name, t->serial, t->str, t->tries);
	send_one(t);
}

/* NOTIFY_WARN_MS into an episode without an answer: one warning naming the secondary. */
static void warn_unanswered(struct loop *l, void *arg)
{
	struct notify_target *t = arg;
	(void)l;
	t->warn_timer = 0;
	if (!t->pending || t->warned)
		return;
	t->warned = true;
	log_warn("%s: secondary %s has not answered NOTIFY for %llu s (serial %u, %u tries); "
	         "still trying, not logged again until it answers", t->nz->name, t->str,
	         (unsigned long long)((loop_now_ms(t->nz->n->l) - t->episode_ms) / 1000), t->serial,
	         t->tries);
}

static void announce(struct notify_zone *nz)
{
	struct notify *n = nz->n;
	for (size_t i = 0; i < nz->n_targets; i++) {
		struct notify_target *t = &nz->targets[i];
		if (t->timer > 0)
			loop_timer_cancel(n->l, t->timer);
		t->timer = 0;
		uint16_t id;
		if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
			id = (uint16_t)(loop_now_ms(n->l) ^ i);
		t->id = id;
		t->pending = true;
		t->serial = nz->serial;
		t->tries = 0;
		t->delay_ms = NOTIFY_RETRY_FIRST_MS;
		t->first_sent_ms = loop_now_ms(n->l);
		if (!t->episode_ms) {
			/* An episode starts with the first NOTIFY left unanswered. */
			t->episode_ms = t->first_sent_ms ? t->first_sent_ms : 1;
			t->episode_wall = loop_wall_s(n->l);
			t->timed_out = false;
			t->warned = false;
			int64_t wid = loop_timer_add(n->l, NOTIFY_WARN_MS, warn_unanswered, t);
			t->warn_timer = wid > 0 ? wid : 0;
		}
		send_one(t);
	}
}

void notify_zone_changed(struct notify *n, const struct zone *z)
{
	for (size_t i = 0; i < n->n; i++) {
		struct notify_zone *nz = n->zones[i];
		if (dname_len(nz->apex) != dname_len(zone_apex(z)) || memcmp(nz->apex, zone_apex(z), dname_len(zone_apex(z))) != 0)
			continue;
		if (nz->known && nz->serial == zone_serial(z))
			return;
		const struct rdata *rd = &zone_soa(z)->rr[0];
		if (rd->len > sizeof(nz->soa))
			return;
		memcpy(nz->soa, rd->data, rd->len);
		nz->soa_len = rd->len;
		nz->soa_ttl = zone_soa(z)->ttl;
		nz->serial = zone_serial(z);
		nz->known = true;
		announce(nz);
		return;
	}
}

static struct notify_zone *zone_of(const struct notify *n, const uint8_t *apex)
{
	for (size_t i = 0; n && i < n->n; i++)
		if (dname_len(n->zones[i]->apex) == dname_len(apex) &&
		    memcmp(n->zones[i]->apex, apex, dname_len(apex)) == 0)
			return n->zones[i];
	return NULL;
}

size_t notify_targets(const struct notify *n, const uint8_t *apex,
                      struct notify_target_state *out, size_t cap)
{
	const struct notify_zone *nz = zone_of(n, apex);
	size_t k = 0;
	for (; nz && k < nz->n_targets && k < cap; k++) {
		const struct notify_target *t = &nz->targets[k];
		out[k] = (struct notify_target_state){
			.acked = t->acked, .acked_serial = t->acked_serial, .pending = t->pending,
			.pending_serial = t->serial,
			.unanswered_since = t->episode_ms && t->timed_out ? t->episode_wall : 0,
		};
		snprintf(out[k].target, sizeof(out[k].target), "%s", t->str);
	}
	return nz ? nz->n_targets : 0;
}

int notify_resend(struct notify *n, const uint8_t *apex)
{
	struct notify_zone *nz = zone_of(n, apex);
	if (!nz || !nz->n_targets)
		return -ENOENT;
	if (!nz->known)
		return -EAGAIN;   /* no serial announced yet */
	announce(nz);
	return 0;
}

/* --- answers --- */

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
	return x->sin6_port == y->sin6_port &&
	       memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
}

static void on_answer(struct notify *n, const uint8_t *msg, size_t len,
                      const struct sockaddr_storage *from)
{
	if (len < MSG_HEADER_LEN)
		return;
	uint16_t id = wire_get_u16(msg), flags = wire_get_u16(msg + 2);
	if (!(flags & 0x8000) || ((flags >> 11) & 0xf) != OPCODE_NOTIFY)
		return;
	for (size_t i = 0; i < n->n; i++) {
		struct notify_zone *nz = n->zones[i];
		for (size_t k = 0; k < nz->n_targets; k++) {
			struct notify_target *t = &nz->targets[k];
			if (!t->pending || t->id != id || !same_addr(&t->sa, from))
				continue;
			t->pending = false;
			if (t->timer > 0)
				loop_timer_cancel(n->l, t->timer);
			t->timer = 0;
			METRICS_INC(metrics.notify_answered);
			unsigned rcode = flags & 0xf;
			t->acked = true;
			t->acked_serial = t->serial;
			if (t->warn_timer > 0)
				loop_timer_cancel(n->l, t->warn_timer);
			t->warn_timer = 0;
			if (t->warned)
				log_info("%s: secondary %s answered NOTIFY serial %u again, after %llu s",
				         nz->name, t->str, t->serial,
				         (unsigned long long)((loop_now_ms(n->l) - t->episode_ms) / 1000));
			t->episode_ms = 0;
			t->episode_wall = 0;
			t->timed_out = false;
			t->warned = false;
			log_info("%s: NOTIFY serial %u answered by %s (rcode %u) after %llu ms",
			         nz->name, t->serial, t->str, rcode,
			         (unsigned long long)(loop_now_ms(n->l) - t->first_sent_ms));
			return;
		}
	}
}

static void on_read(struct loop *l, int fd, int events, void *arg)
{
	struct notify *n = arg;
	(void)l;
	(void)events;
	for (int i = 0; i < 64; i++) {
		uint8_t buf[NOTIFY_MSG_MAX];
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		ssize_t r = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
		if (r < 0)
			return;
		on_answer(n, buf, (size_t)r, &from);
	}
}

/* --- setup --- */

static int open_socket(struct notify *n, int family)
{
	int fd = net_source_socket(&n->src, family, false);
	if (fd < 0) {
		log_warn("notify: no socket from the source address: %s", strerror(-fd));
		return -1;
	}
	if (loop_add_fd(n->l, fd, LOOP_READ, on_read, n) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

struct notify *notify_new(struct loop *l, const struct net_source *src, char err[256])
{
	struct notify *n = calloc(1, sizeof(*n));
	if (!n) {
		xfr_errf(err, "out of memory");
		return NULL;
	}
	n->l = l;
	n->src = *src;
	n->fd4 = n->fd6 = -1;
	return n;
}

static void close_socket(struct notify *n, int fd)
{
	if (fd < 0)
		return;
	loop_del_fd(n->l, fd);
	close(fd);
}

void notify_free(struct notify *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++) {
		struct notify_zone *nz = n->zones[i];
		for (size_t k = 0; k < nz->n_targets; k++) {
			if (nz->targets[k].timer > 0)
				loop_timer_cancel(n->l, nz->targets[k].timer);
			if (nz->targets[k].warn_timer > 0)
				loop_timer_cancel(n->l, nz->targets[k].warn_timer);
		}
		explicit_bzero(&nz->key, sizeof(nz->key));
		free(nz->targets);
		free(nz);
	}
	free(n->zones);
	close_socket(n, n->fd4);
	close_socket(n, n->fd6);
	free(n);
}

int notify_add_zone(struct notify *n, const struct config_zone *zc, char err[256])
{
	if (!zc->n_notify)
		return 0;
	struct notify_zone *nz = calloc(1, sizeof(*nz));
	struct notify_zone **v = realloc(n->zones, (n->n + 1) * sizeof(*v));
	if (v)
		n->zones = v;
	if (!nz || !v || !(nz->targets = calloc(zc->n_notify, sizeof(*nz->targets)))) {
		free(nz);
		xfr_errf(err, "out of memory");
		return -ENOMEM;
	}
	nz->n = n;
	if (dname_from_str(zc->zone, nz->apex) < 0) {
		free(nz->targets);
		free(nz);
		xfr_errf(err, "'%s' is not a valid zone name", zc->zone);
		return -EINVAL;
	}
	dname_lower(nz->apex);
	dname_to_str(nz->apex, nz->name, sizeof(nz->name));
	for (size_t i = 0; zc->axfr_policy == AXFR_ALLOW_SIGNED && i < zc->n_tsig_keys; i++) {
		const struct config_tsig_key *k = &zc->tsig_keys[i];
		if (!k->allow_axfr)
			continue;
		if (tsig_key_init(&nz->key, k->name, k->algorithm, k->secret, k->secret_len, k->fudge,
		                  err) < 0) {
			free(nz->targets);
			free(nz);
			return -EINVAL;
		}
		nz->signed_notify = true;
		break;
	}
	for (size_t i = 0; i < zc->n_notify; i++) {
		const struct config_addr *a = &zc->notify[i];
		struct notify_target *t = &nz->targets[i];
		char host[INET6_ADDRSTRLEN];
		t->nz = nz;
		if (a->family == 4) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&t->sa;
			sin->sin_family = AF_INET;
			sin->sin_port = htons(a->port);
			memcpy(&sin->sin_addr, a->addr, 4);
			t->sa_len = sizeof(*sin);
			inet_ntop(AF_INET, a->addr, host, sizeof(host));
			snprintf(t->str, sizeof(t->str), "%s:%u", host, a->port);
			if (n->fd4 < 0)
				n->fd4 = open_socket(n, AF_INET);
		} else {
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&t->sa;
			sin6->sin6_family = AF_INET6;
			sin6->sin6_port = htons(a->port);
			memcpy(&sin6->sin6_addr, a->addr, 16);
			t->sa_len = sizeof(*sin6);
			inet_ntop(AF_INET6, a->addr, host, sizeof(host));
			snprintf(t->str, sizeof(t->str), "[%s]:%u", host, a->port);
			if (n->fd6 < 0)
				n->fd6 = open_socket(n, AF_INET6);
		}
		nz->n_targets++;
	}
	n->zones[n->n++] = nz;
	return 0;
}
