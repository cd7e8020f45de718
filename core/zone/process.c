/* SPDX-License-Identifier: MIT */
/*
 * Dispatch: one message from the network layer to its response.  The order
 * follows RFC 6891: the message framing and the OPT record's own (FORMERR
 * without an OPT when they break), then the EDNS version (BADVERS, decided
 * before any option can matter), then the question and the options
 * (FORMERR with an OPT), then cookies, NSID, the opcode and its hook, and
 * for a standard query the question checks and resolution
 * (core/zone/answer.c).  Rate limiting and the counters come last, once
 * for every outcome.
 */
#include <errno.h>
#include <netinet/in.h>
#include <time.h>

#include "core/conf/metrics.h"
#include "core/net/cookie.h"
#include "core/net/dnstap.h"
#include "core/net/loop.h"
#include "core/net/rrl.h"
#include "core/wire/packet.h"
#include "core/wire/query.h"
#include "core/wire/rrset.h"
#include "core/zone/answer.h"
#include "core/zone/process.h"
#include "core/zone/query_log.h"
#include "core/zone/zone.h"

/* Queries by zone, type, transport and family: one increment. */
static void count_query(const struct query *q, struct metrics_zone *m)
{
#ifdef GEOACME_NO_METRICS
	return;
#endif
	if (!m)
		return;
	/* The family alone: an IPv4-mapped client counts as IPv4, as
	 * query_client_addr() would say, without copying the address. */
	int v6 = 0;
	if (q->client.ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&q->client;
		v6 = !IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr);
	}
	int transport = q->transport == QUERY_TCP ? 1 : q->xdp ? 2 : 0;
	METRICS_INC(m->queries[metrics_qtype_index(q->qtype)][transport][v6]);
}

void process_query(struct query *q, struct process_env *env)
{
	/* Question checks that need no zone. */
	if (q->qclass != CLASS_IN && q->qclass != CLASS_ANY) {
		q->rcode = (q->qclass == 0 || q->qclass == CLASS_NONE) ? RCODE_FORMERR : RCODE_REFUSED;
		packet_write_error(q);
		return;
	}
	switch (q->qtype) {
	case 0: case RR_OPT: case RR_TSIG: case RR_TKEY:
		q->rcode = RCODE_FORMERR;
		packet_write_error(q);
		return;
	case RR_AXFR: case RR_IXFR:
		q->rcode = RCODE_REFUSED;   /* no zone transfers */
		packet_write_error(q);
		return;
	case RR_MAILA: case RR_MAILB:
		q->rcode = RCODE_NOTIMP;
		packet_write_error(q);
		return;
	default:
		break;
	}
	struct answer_plan plan;
	const struct answer_source src = { env->zones, env->sites, env->geo_db };
	const struct zone *z = answer_resolve(q, &src, &plan);
	if (plan.geo_fail_open) {
		env->fail_open++;
		METRICS_INC(metrics.fail_open_answers);
	}
	packet_write(q, &plan);
	count_query(q, z ? zone_metrics(z) : env->outside_metrics);
	if (env->query_log)
		query_log_note(env->query_log, q, plan.geo_site);
}

/*
 * Seconds, for cookies and RRL only, from the loop's clock (so the test
 * clock drives cookie ages and RRL windows too); read only when needed:
 * most queries carry no cookie.
 */
static uint32_t now(const struct process_env *env)
{
	return (uint32_t)loop_wall_s(env->loop);
}

/* What our OPT says back: a server cookie (RFC 7873), our NSID (RFC 5001). */
static void edns_out(const struct process_env *env, struct query *q)
{
	if (q->edns.cookie_present && env->cookies) {
		q->cookie_valid = cookie_process(env->cookies, q, now(env), q->cookie_out);
		q->cookie_out_set = true;
	}
	if (q->edns.nsid && env->nsid_len) {
		q->nsid_out = env->nsid;
		q->nsid_out_len = env->nsid_len;
	}
}

/* Everything that answers a message, or leaves q->tx_len 0 to send nothing. */
static void respond(struct process_env *env, struct query *q)
{
	int err = packet_parse(q);
	if (err == -EINVAL) {
		env->dropped++;
		q->tx_len = 0;
		return;
	}
	q->udp_advertise = env->udp_max_size;
	if (q->transport == QUERY_UDP) {
		size_t size = 512;
		if (q->edns_ok && q->edns.udp_size > 512)
			size = q->edns.udp_size;
		if (size > env->udp_max_size)
			size = env->udp_max_size;
		/* Over AF_XDP the answer is one frame: the network layer's
		 * max_size is what the interface's MTU leaves (core/net/xdp.c),
		 * where the socket path would have the kernel fragment. */
		if (q->xdp && size > q->max_size)
			size = q->max_size;
		q->max_size = size;
	}
	if (err == -EOPNOTSUPP) {
		q->rcode = RCODE_NOTIMP;
		packet_write_error(q);
		return;
	}
	/*
	 * RFC 6891 6.1.3: a version we do not implement is answered BADVERS
	 * before anything else in the message is judged, its question (QDCOUNT
	 * 0 or 2) and its options (a malformed ECS or COOKIE) included: what
	 * those mean is the other version's business.  A client cookie that is
	 * well formed still gets its server cookie, so that rate limiting can
	 * tell the client is real.
	 */
	if (q->edns_ok && q->edns.version > 0) {
		edns_out(env, q);
		q->rcode = RCODE_BADVERS;
		packet_write_error(q);
		return;
	}
	if (err) {
		env->formerr++;
		q->rcode = RCODE_FORMERR;
		packet_write_error(q);
		return;
	}
	edns_out(env, q);
	if (q->opcode == OPCODE_QUERY && (q->qtype == RR_AXFR || q->qtype == RR_IXFR) &&
	    env->xfr.handle) {
		if (env->xfr.handle(env->xfr.ctx, q) < 0) {
			q->rcode = RCODE_SERVFAIL;
			packet_write_error(q);
		}
		return;
	}
	if (q->opcode == OPCODE_NOTIFY && env->notify.handle) {
		if (env->notify.handle(env->notify.ctx, q) < 0) {
			q->rcode = RCODE_SERVFAIL;
			packet_write_error(q);
		}
		return;
	}
	if (q->opcode == OPCODE_UPDATE || q->tsig_offset) {
		if (env->update.handle) {
			if (env->update.handle(env->update.ctx, q) < 0) {
				q->rcode = RCODE_SERVFAIL;
				packet_write_error(q);
			}
			return;
		}
		q->rcode = q->opcode == OPCODE_UPDATE ? RCODE_NOTIMP : RCODE_NOTAUTH;
		packet_write_error(q);
		return;
	}
	if (q->opcode != OPCODE_QUERY) {
		q->rcode = RCODE_NOTIMP;
		packet_write_error(q);
		return;
	}
	process_query(q, env);
}

/*
 * Every UDP response counts against its client's prefix, errors included
 * (the "errors" category of BIND's RRL): a FORMERR, NOTIMP, REFUSED,
 * BADVERS (with a server cookie) or NOTAUTH (BADKEY, BADSIG) is as good
 * a reflection as an answer to whoever's address the query was forged
 * with.  A valid server cookie proves the address and exempts it.
 */
static void rate_limit(struct process_env *env, struct query *q)
{
	if (!env->rrl || q->transport != QUERY_UDP || q->cookie_valid || !q->tx_len)
		return;
	switch (rrl_check(env->rrl, q, now(env))) {
	case RRL_SEND:
		break;
	case RRL_DROP:
		env->rate_limited++;
		METRICS_INC(metrics.rrl_dropped);
		q->tx_len = 0;
		break;
	case RRL_SLIP:
		/* Truncated and empty: a real client retries over TCP. */
		env->slipped++;
		METRICS_INC(metrics.rrl_slipped);
		q->tc = true;
		packet_write_error(q);
		break;
	}
}

void process_handle(void *envp, struct query *q)
{
	struct process_env *env = envp;
	struct timespec received;
	env->queries++;
	if (env->dnstap)
		dnstap_clock(env->dnstap, &received);
	respond(env, q);
	rate_limit(env, q);
	if (env->dnstap)
		dnstap_note(env->dnstap, q, &received);
#ifdef GEOACME_NO_METRICS
	return;
#endif
	/* Every outcome is counted here, once, whichever path wrote it. */
	if (q->tx_len == 0) {
		/* A transfer stream or a reply sent later is an answer, not a drop. */
		if (!q->stream.next && !q->later.take)
			METRICS_INC(metrics.dropped);
		return;
	}
	/* The handler for UPDATE writes its own response: read the rcode back. */
	unsigned rcode = q->rcode >= 16 ? q->rcode : (unsigned)(q->tx[3] & 0x0F);
	METRICS_INC(metrics.responses[rcode < METRICS_RCODES ? rcode : METRICS_RCODES - 1]);
	if (q->tx[2] & 0x02)
		METRICS_INC(metrics.truncated);
	if (q->edns.ecs.present)
		METRICS_INC(metrics.ecs_queries);
}
