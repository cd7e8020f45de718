/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Response rate limiting for UDP, per client prefix (IPv4 /24, IPv6 /56 by
 * default): at most `rate` responses per second per prefix; past that,
 * every `slip`-th response goes out truncated (TC=1, no records) so a real
 * client behind the prefix retries over TCP, the others are dropped.  A
 * fixed-size table made at start (colliding prefixes share a bucket, which
 * can only make limiting stricter, never looser), so no query allocates.
 * Clients that prove their address with a valid DNS cookie are exempt.
 */
#include <stdint.h>

struct query;

struct rrl_config {
	uint32_t rate;          /* responses per second per prefix; 0 = off */
	uint32_t slip;          /* 0 = drop all, 1 = truncate all, N = every Nth */
	uint8_t ipv4_prefix;    /* 24 */
	uint8_t ipv6_prefix;    /* 56 */
	uint32_t buckets;       /* table size, rounded up to a power of two */
};

enum rrl_action { RRL_SEND = 0, RRL_DROP, RRL_SLIP };

struct rrl;

struct rrl *rrl_new(const struct rrl_config *cfg);   /* NULL when rate is 0 or no memory */
void rrl_free(struct rrl *r);
enum rrl_action rrl_check(struct rrl *r, const struct query *q, uint32_t now);
