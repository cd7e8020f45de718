/* SPDX-License-Identifier: MIT */
/*
 * Response rate limiting: per-prefix counters per second in a keyed,
 * set-associative table (see rrl.h for why it is built this way).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "core/net/rrl.h"
#include "core/wire/query.h"
#include "core/wire/siphash.h"

#define RRL_KEY_LEN 17   /* family (4 or 6), then the prefix, zero-padded to 16 bytes */

struct rrl_count {
	uint32_t second;     /* the second `count` counts */
	uint32_t count;
	uint32_t slipped;
};

struct rrl_entry {
	uint8_t key[RRL_KEY_LEN];
	uint8_t used;
	struct rrl_count c;
};

struct rrl_set {
	struct rrl_entry way[RRL_WAYS];
	struct rrl_count overflow;   /* prefixes that found every way busy this second */
};

struct rrl {
	struct rrl_config cfg;
	uint8_t secret[16];
	size_t mask;                 /* sets - 1 */
	struct rrl_set *sets;
};

struct rrl *rrl_new(const struct rrl_config *cfg)
{
	if (!cfg->rate)
		return NULL;
	struct rrl *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->cfg = *cfg;
	size_t want = cfg->buckets / RRL_WAYS, n = 256;
	while (n < want && n < ((size_t)1 << 22))
		n <<= 1;
	r->mask = n - 1;
	r->sets = calloc(n, sizeof(*r->sets));
	/* Secret, so that nobody can pick prefixes that land in one set. */
	if (!r->sets || getrandom(r->secret, sizeof(r->secret), 0) != (ssize_t)sizeof(r->secret)) {
		rrl_free(r);
		return NULL;
	}
	return r;
}

void rrl_free(struct rrl *r)
{
	if (!r)
		return;
	free(r->sets);
	free(r);
}

void rrl_set_secret(struct rrl *r, const uint8_t secret[16])
{
	memcpy(r->secret, secret, sizeof(r->secret));
	memset(r->sets, 0, (r->mask + 1) * sizeof(*r->sets));
}

static void prefix_key(const struct rrl *r, const struct query *q, uint8_t key[RRL_KEY_LEN])
{
	uint8_t addr[16];
	int family = query_client_addr(q, addr);
	size_t bits = family == 4 ? r->cfg.ipv4_prefix : r->cfg.ipv6_prefix;
	size_t bytes = family == 4 ? 4 : 16;
	memset(key, 0, RRL_KEY_LEN);
	key[0] = (uint8_t)family;
	for (size_t i = 0; i < bytes; i++) {
		size_t keep = bits > i * 8 ? bits - i * 8 : 0;
		key[1 + i] = keep >= 8 ? addr[i] : (uint8_t)(addr[i] & (0xFF00 >> keep));
	}
}

static struct rrl_set *set_of(const struct rrl *r, const uint8_t key[RRL_KEY_LEN])
{
	return &r->sets[siphash24(r->secret, key, RRL_KEY_LEN) & r->mask];
}

size_t rrl_set_index(const struct rrl *r, const struct query *q)
{
	uint8_t key[RRL_KEY_LEN];
	prefix_key(r, q, key);
	return (size_t)(set_of(r, key) - r->sets);
}

/* The prefix's own entry; a new one only in a way whose prefix is quiet this second. */
static struct rrl_count *find(struct rrl_set *s, const uint8_t key[RRL_KEY_LEN], uint32_t now)
{
	struct rrl_entry *free_way = NULL, *quiet = NULL;
	for (int i = 0; i < RRL_WAYS; i++) {
		struct rrl_entry *e = &s->way[i];
		if (!e->used) {
			if (!free_way)
				free_way = e;
			continue;
		}
		if (memcmp(e->key, key, RRL_KEY_LEN) == 0)
			return &e->c;
		/* Quiet this second: taking its place resets no count that is running. */
		if (e->c.second != now && (!quiet || e->c.second < quiet->c.second))
			quiet = e;
	}
	struct rrl_entry *e = free_way ? free_way : quiet;
	if (!e)
		return &s->overflow;
	memcpy(e->key, key, RRL_KEY_LEN);
	e->used = 1;
	memset(&e->c, 0, sizeof(e->c));
	e->c.second = now;
	return &e->c;
}

enum rrl_action rrl_check(struct rrl *r, const struct query *q, uint32_t now)
{
	uint8_t key[RRL_KEY_LEN];
	prefix_key(r, q, key);
	struct rrl_count *c = find(set_of(r, key), key, now);
	if (c->second != now) {
		c->second = now;
		c->count = 0;
	}
	if (++c->count <= r->cfg.rate)
		return RRL_SEND;
	if (r->cfg.slip && ++c->slipped % r->cfg.slip == 0)
		return RRL_SLIP;
	return RRL_DROP;
}
