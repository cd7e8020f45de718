/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Response rate limiting for UDP, per client prefix (IPv4 /24, IPv6 /56 by
 * default): at most `rate` responses per second per prefix -- answers and
 * errors alike (FORMERR, NOTIMP, REFUSED, BADVERS, NOTAUTH: every response
 * a spoofed query can send somewhere counts) -- past that, every `slip`-th
 * response goes out truncated (TC=1, no records) so a real client behind
 * the prefix retries over TCP, the others are dropped.  Clients that prove
 * their address with a valid DNS cookie are exempt; TCP is never limited.
 *
 * The table is made at start, so no query allocates.  It is
 * set-associative: a prefix's set is chosen by SipHash-2-4 under a random
 * per-process secret (an attacker cannot aim two prefixes at one set), and
 * within the set entries are found by comparing the whole prefix, so
 * prefixes that share a set never share or reset a count.  A set holds
 * RRL_WAYS prefixes; an entry is reused only once its prefix has been
 * quiet for the current second.  When all of them are busy this second, a
 * further prefix of that set counts in the set's shared overflow bucket:
 * it is limited at least as strictly as alone, never less.
 */
#include <stddef.h>
#include <stdint.h>

struct query;

#define RRL_WAYS 4

struct rrl_config {
	uint32_t rate;          /* responses per second per prefix; 0 = off */
	uint32_t slip;          /* 0 = drop all, 1 = truncate all, N = every Nth */
	uint8_t ipv4_prefix;    /* 24 */
	uint8_t ipv6_prefix;    /* 56 */
	uint32_t buckets;       /* prefixes tracked at once, rounded up to a power of two */
};

enum rrl_action { RRL_SEND = 0, RRL_DROP, RRL_SLIP };

struct rrl;

/* NULL when rate is 0, or no memory or random bytes. */
struct rrl *rrl_new(const struct rrl_config *cfg);
void rrl_free(struct rrl *r);
/* Accounts one response to q's client prefix at `now` (unix seconds). */
enum rrl_action rrl_check(struct rrl *r, const struct query *q, uint32_t now);

/* For tests: fix the hashing secret, and see which set a client falls in. */
void rrl_set_secret(struct rrl *r, const uint8_t secret[16]);
size_t rrl_set_index(const struct rrl *r, const struct query *q);
