/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Answering: a parsed query is resolved against the current snapshot into
 * a plan (pointers into the zone, on the stack), which packet_write() then
 * encodes.  answer_handle() is the network layer's handler: parse,
 * dispatch by opcode (UPDATE and TSIG-signed messages go to the update
 * hook), resolve, write.
 */
#include <stdbool.h>
#include <stdint.h>

#include "core/hooks.h"
#include "core/wire/packet.h"

struct query;
struct rrset;
struct zone_table;
struct geo_sites;
struct geo_db;
struct rrl;
struct cookie_secret;
struct metrics_zone;
struct query_log;

struct answer_env {
	const struct zone_table *zones;
	const struct geo_sites *sites;   /* may be NULL: no geo names */
	const struct geo_db *geo_db;     /* may be NULL */
	struct update_handler update;    /* handle == NULL: UPDATE gets NOTIMP */
	struct xfr_handler xfr;          /* handle == NULL: AXFR and IXFR get REFUSED */
	struct xfr_handler notify;       /* NOTIFY in (secondary zones); NULL: NOTIMP */
	uint16_t udp_max_size;
	struct rrl *rrl;                 /* NULL: no response rate limiting */
	const struct cookie_secret *cookies;   /* NULL: DNS cookies off */
	const uint8_t *nsid;             /* our identity for NSID (RFC 5001); NULL: none */
	uint8_t nsid_len;
	struct query_log *query_log;          /* NULL: no sampled query log */
	struct metrics_zone *outside_metrics;  /* queries that match no zone; NULL: not counted */
	/* Counters, for logs and benchmarks. */
	uint64_t queries, dropped, formerr, fail_open, rate_limited, slipped;
};

/* net_handler_fn: env is a struct answer_env. */
void answer_handle(void *env, struct query *q);
/* Answers a parsed standard query into q->tx (also used after TSIG checks). */
void answer_query(struct query *q, struct answer_env *env);
/* Resolves a parsed query into a plan; exposed for golden tests. */
void answer_resolve(const struct query *q, struct answer_env *env, struct answer_plan *plan);
