/* SPDX-License-Identifier: MIT */
/* Response rate limiting: one counter per prefix bucket per second. */
#include <stdlib.h>
#include <string.h>

#include "core/net/rrl.h"
#include "core/wire/query.h"

struct rrl_bucket {
	uint64_t key;       /* family and masked prefix, hashed */
	uint32_t second;
	uint32_t count;
	uint32_t slipped;
};

struct rrl {
	struct rrl_config cfg;
	uint32_t mask;
	struct rrl_bucket *buckets;
};

struct rrl *rrl_new(const struct rrl_config *cfg)
{
	if (!cfg->rate)
		return NULL;
	struct rrl *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->cfg = *cfg;
	uint32_t n = 1024;
	while (n < cfg->buckets && n < (1u << 24))
		n <<= 1;
	r->mask = n - 1;
	r->buckets = calloc(n, sizeof(*r->buckets));
	if (!r->buckets) {
		free(r);
		return NULL;
	}
	return r;
}

void rrl_free(struct rrl *r)
{
	if (!r)
		return;
	free(r->buckets);
	free(r);
}

static uint64_t prefix_key(const struct rrl *r, const struct query *q)
{
	uint8_t addr[16];
	int family = query_client_addr(q, addr);
	size_t bits = family == 4 ? r->cfg.ipv4_prefix : r->cfg.ipv6_prefix;
	size_t bytes = family == 4 ? 4 : 16;
	for (size_t i = 0; i < bytes; i++) {
		size_t keep = bits > i * 8 ? bits - i * 8 : 0;
		if (keep < 8)
			addr[i] &= (uint8_t)(0xFF00 >> keep);
	}
	/* FNV-1a over family + prefix; the table index takes the low bits. */
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)family;
	for (size_t i = 0; i < bytes; i++) {
		h ^= addr[i];
		h *= 1099511628211ULL;
	}
	return h;
}

enum rrl_action rrl_check(struct rrl *r, const struct query *q, uint32_t now)
{
	uint64_t key = prefix_key(r, q);
	struct rrl_bucket *b = &r->buckets[key & r->mask];
	if (b->key != key || b->second != now) {
		b->key = key;
		b->second = now;
		b->count = 0;
	}
	if (++b->count <= r->cfg.rate)
		return RRL_SEND;
	if (r->cfg.slip && ++b->slipped % r->cfg.slip == 0)
		return RRL_SLIP;
	return RRL_DROP;
}
