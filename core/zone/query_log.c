/* SPDX-License-Identifier: MIT */
/*
 * The sampled query log's ring and its flush timer.  See query_log.h.
 */
#include "core/zone/query_log.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/conf/log.h"
#include "core/conf/metrics.h"
#include "core/geo/geo_sites.h"
#include "core/net/loop.h"
#include "core/wire/dname.h"
#include "core/wire/query.h"
#include "core/wire/rrset.h"

#define QLOG_RING 256
#define QLOG_FLUSH_MS 1000

struct qlog_entry {
	uint8_t family;              /* the reader's subnet: 4 or 6 */
	uint8_t prefix;              /* its length */
	bool ecs;                    /* from ECS, else the source's /24 or /56 */
	uint8_t addr[16];            /* masked to the prefix */
	uint8_t resolver_family;     /* the source address, whole */
	uint8_t resolver[16];
	uint8_t qname[DNAME_MAX];
	uint16_t qtype;
	uint8_t rcode;
	uint8_t tcp;
	int16_t geo[2];
};

struct query_log {
	struct loop *loop;
	const struct geo_sites *sites;
	uint32_t every, rate;
	uint64_t seen;               /* queries since start, for the 1-in-N choice */
	struct qlog_entry ring[QLOG_RING];
	uint32_t n;                  /* entries waiting */
	uint64_t skipped;            /* sampled but not logged (ring full or rate) */
	int64_t timer;
};

static void flush(struct query_log *ql)
{
	uint32_t shown = ql->n < ql->rate ? ql->n : ql->rate;
	for (uint32_t i = 0; i < shown; i++) {
		const struct qlog_entry *e = &ql->ring[i];
		char addr[INET6_ADDRSTRLEN], resolver[INET6_ADDRSTRLEN], name[DNAME_MAX * 4 + 2];
		char sites[160] = "-", tbuf[16], rbuf[16];
		inet_ntop(e->family == 4 ? AF_INET : AF_INET6, e->addr, addr, sizeof(addr));
		inet_ntop(e->resolver_family == 4 ? AF_INET : AF_INET6, e->resolver, resolver,
		          sizeof(resolver));
		if (dname_to_str(e->qname, name, sizeof(name)) < 0)
			snprintf(name, sizeof(name), "?");
		if (e->geo[0] >= 0 && ql->sites)
			snprintf(sites, sizeof(sites), "%s%s%s", geo_site_name(ql->sites, (size_t)e->geo[0]),
			         e->geo[1] >= 0 ? "," : "",
			         e->geo[1] >= 0 ? geo_site_name(ql->sites, (size_t)e->geo[1]) : "");
		log_info("query: subnet=%s/%u from=%s resolver=%s %s type=%s rcode=%s %s sites=%s",
		         addr, e->prefix, e->ecs ? "ecs" : "source", resolver, name,
		         rrset_type_to_str(e->qtype, tbuf), metrics_rcode_name(e->rcode, rbuf),
		         e->tcp ? "tcp" : "udp", sites);
	}
	ql->skipped += ql->n - shown;
	if (ql->skipped) {
		log_info("query: %llu sampled queries not logged (over query_log_rate)",
		         (unsigned long long)ql->skipped);
		ql->skipped = 0;
	}
	ql->n = 0;
}

static void on_timer(struct loop *l, void *arg)
{
	struct query_log *ql = arg;
	flush(ql);
	ql->timer = loop_timer_add(l, QLOG_FLUSH_MS, on_timer, ql);
}

struct query_log *query_log_new(struct loop *l, uint32_t every, uint32_t rate,
                                const struct geo_sites *sites)
{
	struct query_log *ql = calloc(1, sizeof(*ql));
	if (!ql)
		return NULL;
	ql->loop = l;
	ql->sites = sites;
	ql->every = every ? every : 1;
	ql->rate = rate ? rate : 1;
	ql->timer = loop_timer_add(l, QLOG_FLUSH_MS, on_timer, ql);
	if (ql->timer < 0) {
		free(ql);
		return NULL;
	}
	return ql;
}

void query_log_free(struct query_log *ql)
{
	if (!ql)
		return;
	flush(ql);
	loop_timer_cancel(ql->loop, ql->timer);
	free(ql);
}

void query_log_note(struct query_log *ql, const struct query *q, const int16_t geo_site[2])
{
	if (++ql->seen % ql->every != 0)
		return;
	if (ql->n == QLOG_RING || ql->n >= ql->rate) {
		ql->skipped++;
		return;
	}
	struct qlog_entry *e = &ql->ring[ql->n++];
	int family = query_client_addr(q, e->resolver);
	e->resolver_family = (uint8_t)family;
	/* The subnet the answer was chosen for: ECS with a non-zero source
	 * prefix is what core/zone/answer.c locates (RFC 7871 7.1.2: a /0
	 * asks for no tailoring), else the source address, of which the log
	 * keeps a network, not a host. */
	const struct edns_ecs *ecs = &q->edns.ecs;
	memset(e->addr, 0, sizeof(e->addr));
	if (ecs->present && ecs->source_prefix > 0) {
		e->ecs = true;
		e->family = ecs->family == 1 ? 4 : 6;
		e->prefix = ecs->source_prefix;
		memcpy(e->addr, ecs->addr, 16);   /* zero past the prefix (core/wire/edns.c) */
	} else {
		e->ecs = false;
		e->family = (uint8_t)family;
		e->prefix = family == 4 ? 24 : 56;
		memcpy(e->addr, e->resolver, family == 4 ? 3 : 7);
	}
	memcpy(e->qname, q->qname, q->qname_len ? q->qname_len : 1);
	if (!q->qname_len)
		e->qname[0] = 0;
	e->qtype = q->qtype;
	e->rcode = q->rcode;
	e->tcp = q->transport == QUERY_TCP;
	e->geo[0] = geo_site[0];
	e->geo[1] = geo_site[1];
}
