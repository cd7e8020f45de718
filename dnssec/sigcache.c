/* SPDX-License-Identifier: MIT */
/*
 * Signature cache: a chained hash table keyed by a SHA-256 of the RRset.
 * SHA-256 makes a collision (two contents, one signature) a non-issue, and
 * its first bytes are already a uniform bucket index.
 */
#include "dnssec/sigcache.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"

struct entry {
	struct entry *next;
	struct sigcache_key key;
	uint64_t expiration;
	uint64_t used;          /* build number that last used or stored it */
	uint16_t len;
	uint8_t rrsig[];
};

struct sigcache {
	struct entry **buckets;
	size_t mask;
	size_t count, max;
	uint64_t build;
	EVP_MD_CTX *md;         /* reused across key computations */
	/*
	 * SHA-256 fetched once: EVP_sha256() makes OpenSSL 3 look the digest
	 * up in its providers on every EVP_DigestInit_ex, about 2.5 us of the
	 * 3 a key took, so a patch of 2 000 names spent 6 ms of its loop
	 * round finding 4 000 cached signatures (issue #26).
	 */
	EVP_MD *sha256;
};

struct sigcache *sigcache_new(size_t max_entries)
{
	struct sigcache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->max = max_entries ? max_entries : 1;
	/* Starts small (most zones hold a few dozen RRsets) and doubles as
	 * it fills, keeping chains short. */
	size_t n = 64;
	c->buckets = calloc(n, sizeof(*c->buckets));
	c->md = EVP_MD_CTX_new();
	c->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	if (!c->buckets || !c->md || !c->sha256) {
		sigcache_free(c);
		return NULL;
	}
	c->mask = n - 1;
	return c;
}

void sigcache_free(struct sigcache *c)
{
	if (!c)
		return;
	if (c->buckets) {
		for (size_t i = 0; i <= c->mask; i++) {
			struct entry *e = c->buckets[i];
			while (e) {
				struct entry *next = e->next;
				free(e);
				e = next;
			}
		}
		free(c->buckets);
	}
	EVP_MD_CTX_free(c->md);
	EVP_MD_free(c->sha256);
	free(c);
}

int sigcache_key(struct sigcache *c, const uint8_t *owner, const struct rrset *rrset,
                 uint16_t key_tag, struct sigcache_key *out)
{
	uint8_t head[DNAME_MAX + 10];
	size_t olen = dname_len(owner);
	memcpy(head, owner, olen);
	dname_lower(head);
	wire_set_u16(head + olen, rrset->type);
	wire_set_u32(head + olen + 2, rrset->ttl);
	wire_set_u16(head + olen + 6, rrset->count);
	wire_set_u16(head + olen + 8, key_tag);

	bool good = EVP_DigestInit_ex(c->md, c->sha256, NULL) == 1 &&
	            EVP_DigestUpdate(c->md, head, olen + 10) == 1;
	for (uint16_t i = 0; good && i < rrset->count; i++) {
		/* Each rdata with its length, so record boundaries are part of
		 * the content: {"ab","c"} and {"a","bc"} differ. */
		uint8_t len[2];
		wire_set_u16(len, rrset->rr[i].len);
		good = EVP_DigestUpdate(c->md, len, 2) == 1 &&
		       (rrset->rr[i].len == 0 ||
		        EVP_DigestUpdate(c->md, rrset->rr[i].data, rrset->rr[i].len) == 1);
	}
	unsigned int dlen = 0;
	if (!good || EVP_DigestFinal_ex(c->md, out->digest, &dlen) != 1 || dlen != 32)
		return -EIO;
	return 0;
}

/* The digest is uniform already: its first bytes are the hash. */
static size_t bucket_of(const struct sigcache *c, const struct sigcache_key *k)
{
	return ((size_t)wire_get_u32(k->digest) << 32 | wire_get_u32(k->digest + 4)) & c->mask;
}

static struct entry **slot(struct sigcache *c, const struct sigcache_key *k)
{
	struct entry **pp = &c->buckets[bucket_of(c, k)];
	while (*pp && memcmp((*pp)->key.digest, k->digest, sizeof(k->digest)) != 0)
		pp = &(*pp)->next;
	return pp;
}

int sigcache_get(struct sigcache *c, const struct sigcache_key *k, uint64_t now,
                 uint32_t refresh, struct rdata *sig, uint64_t *expiration)
{
	struct entry *e = *slot(c, k);
	if (!e || now + refresh >= e->expiration)
		return -ENOENT;
	e->used = c->build;
	sig->len = e->len;
	sig->data = e->rrsig;
	*expiration = e->expiration;
	return 0;
}

static void grow(struct sigcache *c)
{
	size_t n = 2 * (c->mask + 1);
	struct entry **b = calloc(n, sizeof(*b));
	if (!b)
		return;
	struct entry **old = c->buckets;
	size_t old_n = c->mask + 1;
	c->buckets = b;
	c->mask = n - 1;
	for (size_t i = 0; i < old_n; i++) {
		struct entry *e = old[i];
		while (e) {
			struct entry *next = e->next;
			size_t h = bucket_of(c, &e->key);
			e->next = b[h];
			b[h] = e;
			e = next;
		}
	}
	free(old);
}

int sigcache_put(struct sigcache *c, const struct sigcache_key *k, const uint8_t *rrsig,
                 uint16_t len, uint64_t expiration)
{
	struct entry **pp = slot(c, k);
	struct entry *old = *pp;
	if (!old && c->count >= c->max)
		return -ENOSPC;
	struct entry *e = malloc(sizeof(*e) + len);
	if (!e)
		return -ENOMEM;
	e->next = old ? old->next : NULL;
	e->key = *k;
	e->expiration = expiration;
	e->used = c->build;
	e->len = len;
	memcpy(e->rrsig, rrsig, len);
	*pp = e;
	if (old)
		free(old);
	else
		c->count++;
	if (c->count > 2 * (c->mask + 1))
		grow(c);   /* on failure chains just get longer */
	return 0;
}

void sigcache_drop(struct sigcache *c, const struct sigcache_key *k)
{
	struct entry **pp = slot(c, k);
	struct entry *e = *pp;
	if (!e)
		return;
	*pp = e->next;
	free(e);
	c->count--;
}

void sigcache_begin_build(struct sigcache *c)
{
	c->build++;
}

void sigcache_end_build(struct sigcache *c)
{
	/* Keep what this build and the previous KEEP-1 used: content that
	 * comes back soon (a TXT added then removed, a site that flaps) is
	 * still signed; anything older is gone for good. */
	if (c->build < SIGCACHE_KEEP_BUILDS)
		return;
	uint64_t oldest = c->build - SIGCACHE_KEEP_BUILDS + 1;
	for (size_t i = 0; i <= c->mask; i++) {
		struct entry **pp = &c->buckets[i];
		while (*pp) {
			struct entry *e = *pp;
			if (e->used < oldest) {
				*pp = e->next;
				free(e);
				c->count--;
			} else {
				pp = &e->next;
			}
		}
	}
}

size_t sigcache_count(const struct sigcache *c)
{
	return c->count;
}
