/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * RRSIGs by RRset content, so a rebuilt snapshot re-signs only what changed.
 *
 * An entry is found by a SHA-256 over owner | type | TTL | every rdata
 * (each with its length) | key tag: equal content, equal key.  It holds
 * the RRSIG rdata and its absolute expiration.  A signature is reused while
 * now < expiration - refresh; after that the caller signs anew and puts the
 * new one, replacing the old.
 *
 * Bounded two ways, so no sequence of updates grows it without limit:
 * builds are numbered (sigcache_begin_build), entries not used by the last
 * SIGCACHE_KEEP_BUILDS builds are dropped at sigcache_end_build, and a hard
 * cap refuses new entries (the caller just signs without caching).  Between
 * builds, the signer drops the entries of content a patch took out of the
 * served snapshot (sigcache_drop).
 *
 * Process lifetime, one per signer (zone).  Not thread-safe; the server is
 * single-threaded.
 */
#include <stddef.h>
#include <stdint.h>

struct rrset;
struct rdata;

#define SIGCACHE_KEEP_BUILDS 2

struct sigcache_key {
	uint8_t digest[32];
};

struct sigcache;
struct sigcache *sigcache_new(size_t max_entries);
void sigcache_free(struct sigcache *c);   /* NULL-safe */

/* The content key of an RRset (owner in wire form, lowercased here).
 * 0, or -EIO when the digest fails (then do not use the cache). */
int sigcache_key(struct sigcache *c, const uint8_t *owner, const struct rrset *rrset,
                 uint16_t key_tag, struct sigcache_key *out);

/*
 * A cached RRSIG still fresh at `now` (now + refresh < expiration): fills
 * `sig` (pointing into the cache: copy it before the next put or end of
 * build) and `expiration`, marks the entry used by this build, returns 0.
 * -ENOENT when there is none or it is due for refresh.
 */
int sigcache_get(struct sigcache *c, const struct sigcache_key *k, uint64_t now,
                 uint32_t refresh, struct rdata *sig, uint64_t *expiration);
/* Stores (or replaces) an RRSIG.  0, -ENOSPC at the cap, -ENOMEM. */
int sigcache_put(struct sigcache *c, const struct sigcache_key *k, const uint8_t *rrsig,
                 uint16_t len, uint64_t expiration);
/* Drops the entry of k, if any (content no longer served). */
void sigcache_drop(struct sigcache *c, const struct sigcache_key *k);

void sigcache_begin_build(struct sigcache *c);
/* Drops entries no build among the last SIGCACHE_KEEP_BUILDS used. */
void sigcache_end_build(struct sigcache *c);
size_t sigcache_count(const struct sigcache *c);
