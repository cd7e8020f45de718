/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The zone signer: core's struct zone_signer hook (core/hooks.h) for one
 * zone and its keys.  During zone_builder_finish() it
 *   1. adds the DNSKEY RRset at the apex (TTL = SOA TTL, or the key
 *      policy's dnskey_ttl): every key with SIGNER_PUBLISH; and CDS
 *      (SHA-256) + CDNSKEY of the SIGNER_CDS key when publish_cds is set
 *      (RFC 7344);
 *   2. adds the NSEC chain (TTL = min(SOA TTL, SOA minimum), RFC 9077);
 *   3. attaches an RRSIG by every SIGNER_SIGN key (one, or two during a
 *      rollover) to every authoritative RRset the builder visits
 *      (geo answer sets included), taking unchanged RRsets' signatures from
 *      its cache, so a rebuild after one UPDATE costs a handful of ECDSA
 *      operations (the changed RRset, its NSEC neighbours, the SOA);
 *   4. sets the snapshot's refresh point: the earliest moment one of its
 *      signatures is due (expiration - refresh), so the caller rebuilds
 *      before anything expires.
 *
 * Validity: inception = now - sig_inception_s (clock skew), expiration =
 * now + sig_validity_s, re-signed once less than sig_refresh_s remains.
 *
 * Process lifetime, one per signed zone; owns its key and cache.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct zone_signer;

struct signer;

struct signer_stats {
	uint64_t made;          /* ECDSA signatures made, since start */
	uint64_t reused;        /* signatures taken from the cache, since start */
	uint64_t last_made;     /* ... during the last build */
	uint64_t last_reused;
	uint64_t builds;
	uint64_t patches;       /* served snapshots patched (core/zone/zone_patch.h) */
	size_t cached;          /* entries in the cache now */
	uint64_t refresh_at;    /* refresh point of the last build (unix s) */
};

/*
 * It also signs patches of a served snapshot (zone_signer.patch): the NSEC
 * records of the changed names and their neighbours, then every RRset the
 * patch left unsigned, through the same cache.
 *
 * zone_name: presentation ("example.com" or "example.com.").  key_path:
 * the PEM key (see key_load).  c: sig_validity_s, sig_inception_s and
 * sig_refresh_s (NULL = 14 days, 1 hour, 7 days).  Returns NULL with a
 * message in err.
 */
struct signer *signer_new(const char *zone_name, const char *key_path, const struct config *c,
                          bool publish_cds, char err[256]);
void signer_free(struct signer *s);   /* NULL-safe */

/* What a key does (doc/dnssec.md): in the DNSKEY RRset; signs every RRset;
 * is the key whose DS should be at the parent (CDS, CDNSKEY, `geoacme ds`). */
enum { SIGNER_PUBLISH = 1, SIGNER_SIGN = 2, SIGNER_CDS = 4 };
#define SIGNER_KEYS_MAX 8
/* Keys that sign at once: one, two during a rollover (RRSET_SIGS has room
 * for more, for a secondary's copy of a primary mid-rollover). */
#define SIGNER_SIGNING_MAX 2

struct signer_key_spec {
	const char *path;           /* PEM key (key_load) */
	unsigned roles;
};

/*
 * Replaces the key set (signer_new starts with its one key doing all three).
 * Keys already loaded are kept, not read again.  1 or 2 (SIGNER_SIGNING_MAX) keys
 * sign, at most SIGNER_KEYS_MAX in all.  The served snapshot is not
 * changed: the caller rebuilds it.  0, or -EINVAL with err (s unchanged).
 */
int signer_set_keys(struct signer *s, const struct signer_key_spec *v, size_t n, char err[256]);
/* TTL of DNSKEY, CDS and CDNSKEY; 0 (the default) = the SOA TTL. */
void signer_set_dnskey_ttl(struct signer *s, uint32_t ttl);
/* The longest TTL of any RRset signed since start (RFC 7583 section 3: the
 * rollover waits cover it, and an UPDATE may raise it). */
uint32_t signer_max_ttl(const struct signer *s);
/* The keys' tags and roles (up to cap); returns how many keys there are. */
size_t signer_keys(const struct signer *s, uint16_t *tags, unsigned *roles, size_t cap);

/*
 * A build of the zone is under way beside the loop (a reload's, from the
 * records as they were when it began), from before it reads them until
 * its snapshot is made: until then a patch of the served snapshot keeps
 * the signatures of what it replaces in the cache (zone_signer.forget
 * drops them otherwise), so the build still finds them and makes no new
 * one (a reload that made none keeps the serial and the IXFR history).
 * Counted: one false per true.  NULL-safe.
 */
void signer_building(struct signer *s, bool on);

/* The hook to pass to zone_builder_finish(); lives as long as `s`. */
const struct zone_signer *signer_hook(struct signer *s);

/* Replaces the clock (unix seconds); NULL restores time(). For tests. */
void signer_set_clock(struct signer *s, uint64_t (*now)(void *arg), void *arg);

/* The DNSKEY rdata of the SIGNER_CDS key (the first key when none is). */
const uint8_t *signer_dnskey(const struct signer *s, size_t *len);
void signer_get_stats(const struct signer *s, struct signer_stats *out);
