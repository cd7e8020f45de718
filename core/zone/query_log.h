/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The sampled query log: one query in N, for an operator checking a
 * reader's complaint ("which site did I get, and why?").
 *
 * The query path only copies a few fields into a ring made at start (no
 * allocation, no formatting, no write); a loop timer formats and logs the
 * ring once a second, at most `rate` lines a second, and says how many
 * sampled queries it had to skip.  A line holds the reader's subnet as the
 * answer used it (the ECS subnet, else the source's IPv4 /24 or IPv6 /56:
 * a network, not a host), the resolver's address, the name, the type's
 * mnemonic, the rcode's name, the transport and the sites chosen (doc/
 * observability.md has the format).
 */
#include <stdint.h>

struct geo_sites;
struct loop;
struct query;
struct query_log;

/* every: log one query in `every` (> 0); rate: lines a second at most. */
struct query_log *query_log_new(struct loop *l, uint32_t every, uint32_t rate,
                                const struct geo_sites *sites);
/* Flushes what is buffered, then frees.  NULL-safe. */
void query_log_free(struct query_log *ql);
/* Called for every answered query; geo_site: sites decided (-1 none). */
void query_log_note(struct query_log *ql, const struct query *q, const int16_t geo_site[2]);
