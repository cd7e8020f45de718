/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Dispatch: what happens to a message between the network layer and the
 * answer.  process_handle() is the network layer's handler (the one entry
 * point of a query): parse (core/wire/packet.c), EDNS in RFC 6891 order
 * (framing, then the version, then the options), cookies, NSID, opcode
 * and class, the hooks (UPDATE and TSIG, AXFR/IXFR, NOTIFY), resolution
 * (core/zone/answer.c), the write, rate limiting and the counters.
 */
#include <stdbool.h>
#include <stdint.h>

#include "core/hooks.h"

struct query;
struct zone_table;
struct geo_sites;
struct geo_db;
struct rrl;
struct cookie_secret;
struct metrics_zone;
struct query_log;
struct dnstap;
struct loop;

struct process_env {
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
	struct dnstap *dnstap;                /* NULL: no dnstap stream */
	struct metrics_zone *outside_metrics;  /* queries that match no zone; NULL: not counted */
	const struct loop *loop;              /* the clock (cookies, RRL); NULL: the system's */
	/* Counters, for logs and benchmarks. */
	uint64_t queries, dropped, formerr, fail_open, rate_limited, slipped;
};

/* net_handler_fn: env is a struct process_env.  Answers into q->tx, or
 * leaves q->tx_len 0 to send nothing (or a stream or a later reply). */
void process_handle(void *env, struct query *q);
/*
 * Answers a standard query that has already passed dispatch (the update
 * hook calls it for a query whose TSIG verified): question checks,
 * resolution, the write, the per-zone counters and the query log.
 */
void process_query(struct query *q, struct process_env *env);
