/* SPDX-License-Identifier: MIT */
/*
 * The zone signer hook: DNSKEY/CDS/CDNSKEY, NSEC chain, RRSIGs via the cache.
 */
#include "dnssec/signer.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/conf/config.h"
#include "core/conf/log.h"
#include "core/conf/sysclock.h"
#include "core/hooks.h"
#include "core/wire/arena.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/serial.h"
#include "core/wire/wire.h"
#include "core/zone/zone.h"
#include "core/zone/zone_patch.h"
#include "dnssec/denial.h"
#include "dnssec/ds.h"
#include "dnssec/key.h"
#include "dnssec/sigcache.h"
#include "dnssec/sign.h"

/*
 * Every RRset of a signed zone of 250 000 names (each with its NSEC), about
 * 180 bytes an entry: a compaction (acme/compact.h) or a reload then takes
 * every signature from here, and the snapshot it makes is the served one
 * signature for signature (at 100 000 names, 1 << 17 dropped 70 000 of
 * them: each compaction re-signed those and moved the serial).  Past it
 * signatures are still made, just not kept.
 */
#define CACHE_MAX (1u << 19)

struct signer_keyslot {
	char *path;
	struct key *key;
	struct sign_ctx *sign;
	unsigned roles;             /* SIGNER_PUBLISH | SIGNER_SIGN | SIGNER_CDS */
};

struct signer {
	struct zone_signer hook;
	uint8_t apex[DNAME_MAX];
	char *name;
	struct signer_keyslot keys[SIGNER_KEYS_MAX];
	size_t n_keys;
	/*
	 * Held around each use of the cache, the signing contexts and the
	 * statistics: a reload's builder thread signs a new snapshot with this
	 * signer while the loop signs patches and geo pairs with it
	 * (cmd/builder.h).  Never across a whole build, so the loop waits at
	 * most for one RRset's signatures.
	 */
	pthread_mutex_t mu;
	struct sigcache *cache;
	uint32_t validity, inception, refresh;
	uint32_t dnskey_ttl;        /* 0: the SOA TTL */
	uint32_t max_ttl;           /* longest TTL signed since start */
	unsigned building;          /* builds under way beside the loop (signer_building) */
	bool publish_cds;
	uint64_t (*now)(void *arg);
	void *now_arg;
	struct signer_stats stats;
};

/* Without a loop (`geoacme ds`, unit tests): the system clock (sysclock.h). */
static uint64_t system_now(void *arg)
{
	(void)arg;
	return (uint64_t)sysclock_wall_s();
}

static uint64_t hook_now(void *ctx)
{
	struct signer *s = ctx;
	return s->now(s->now_arg);
}

static int signer_run(void *ctx, struct zone_builder *b, char err[256]);
static int signer_sign_late(void *ctx, const uint8_t *owner, struct rrset *rrset,
                            struct arena *a);
static int signer_patch(void *ctx, struct zone_patch *p, char err[256]);
static int signer_renew(void *ctx, const uint8_t *owner, struct rrset *rrset, struct arena *a,
                        uint64_t *refresh_at);
static void signer_forget(void *ctx, const uint8_t *owner, const struct rrset *rrset);
static void signer_building_hook(void *ctx, bool on);

struct signer *signer_new(const char *zone_name, const char *key_path, const struct config *c,
                          bool publish_cds, char err[256])
{
	struct signer *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, 256, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&s->mu, NULL);
	if (dname_from_str(zone_name, s->apex) < 0) {
		snprintf(err, 256, "%s: not a valid zone name", zone_name);
		goto fail;
	}
	s->name = strdup(zone_name);
	s->validity = c && c->sig_validity_s ? c->sig_validity_s : CONFIG_SIG_VALIDITY_DEFAULT;
	s->inception = c ? c->sig_inception_s : CONFIG_SIG_INCEPTION_DEFAULT;
	s->refresh = c ? c->sig_refresh_s : CONFIG_SIG_REFRESH_DEFAULT;
	if (s->refresh >= s->validity) {
		snprintf(err, 256, "%s: signature refresh (%u s) must be shorter than the "
		         "validity (%u s)", zone_name, s->refresh, s->validity);
		goto fail;
	}
	s->publish_cds = publish_cds;
	s->now = system_now;
	struct signer_key_spec first = { key_path, SIGNER_PUBLISH | SIGNER_SIGN | SIGNER_CDS };
	if (signer_set_keys(s, &first, 1, err) < 0)
		goto fail;
	s->cache = sigcache_new(CACHE_MAX);
	if (!s->name || !s->cache) {
		snprintf(err, 256, "out of memory");
		goto fail;
	}
	s->hook.ctx = s;
	s->hook.sign = signer_run;
	s->hook.sign_rrset = signer_sign_late;
	s->hook.patch = signer_patch;
	s->hook.renew = signer_renew;
	s->hook.forget = signer_forget;
	s->hook.building = signer_building_hook;
	s->hook.now = hook_now;
	return s;
fail:
	signer_free(s);
	return NULL;
}

static void slot_clear(struct signer_keyslot *k)
{
	sign_ctx_free(k->sign);
	key_free(k->key);
	free(k->path);
	memset(k, 0, sizeof(*k));
}

void signer_free(struct signer *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->mu);
	sigcache_free(s->cache);
	for (size_t i = 0; i < s->n_keys; i++)
		slot_clear(&s->keys[i]);
	free(s->name);
	free(s);
}

int signer_set_keys(struct signer *s, const struct signer_key_spec *v, size_t n, char err[256])
{
	size_t signing = 0;
	for (size_t i = 0; i < n; i++) {
		signing += (v[i].roles & SIGNER_SIGN) != 0;
		for (size_t j = 0; j < i; j++) {
			if (strcmp(v[i].path, v[j].path) == 0) {
				snprintf(err, 256, "%s: key %s named twice", s->name, v[i].path);
				return -EINVAL;
			}
		}
	}
	if (n > SIGNER_KEYS_MAX || signing == 0 || signing > SIGNER_SIGNING_MAX) {
		snprintf(err, 256, "%s: %zu keys of which %zu sign: expected 1 to %d signing keys "
		         "and at most %d keys", s->name, n, signing, SIGNER_SIGNING_MAX, SIGNER_KEYS_MAX);
		return -EINVAL;
	}
	/* First every key not loaded yet, so a failure leaves s unchanged. */
	struct signer_keyslot next[SIGNER_KEYS_MAX];
	int from[SIGNER_KEYS_MAX];   /* index in s->keys, or -1: loaded here */
	memset(next, 0, sizeof(next));
	for (size_t i = 0; i < n; i++) {
		from[i] = -1;
		for (size_t j = 0; j < s->n_keys && from[i] < 0; j++)
			if (strcmp(s->keys[j].path, v[i].path) == 0)
				from[i] = (int)j;
		if (from[i] >= 0)
			continue;
		next[i].path = strdup(v[i].path);
		next[i].key = key_load(v[i].path, err);
		next[i].sign = next[i].key ? sign_ctx_new(next[i].key, s->apex, err) : NULL;
		if (!next[i].path && next[i].sign)
			snprintf(err, 256, "out of memory");
		if (!next[i].path || !next[i].sign) {
			for (size_t k = 0; k <= i; k++)
				if (from[k] < 0)
					slot_clear(&next[k]);
			return -EINVAL;
		}
	}
	pthread_mutex_lock(&s->mu);   /* a build on the reload builder may be signing */
	for (size_t i = 0; i < n; i++) {
		if (from[i] >= 0) {
			next[i] = s->keys[from[i]];
			s->keys[from[i]].path = NULL;   /* moved: not cleared below */
		}
		next[i].roles = v[i].roles;
	}
	for (size_t j = 0; j < s->n_keys; j++)
		if (s->keys[j].path)
			slot_clear(&s->keys[j]);
	memcpy(s->keys, next, sizeof(next));
	s->n_keys = n;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

void signer_set_dnskey_ttl(struct signer *s, uint32_t ttl) { s->dnskey_ttl = ttl; }
uint32_t signer_max_ttl(const struct signer *s)
{
	struct signer *m = (struct signer *)s;   /* the lock only */
	pthread_mutex_lock(&m->mu);
	uint32_t v = s->max_ttl;
	pthread_mutex_unlock(&m->mu);
	return v;
}

size_t signer_keys(const struct signer *s, uint16_t *tags, unsigned *roles, size_t cap)
{
	for (size_t i = 0; i < s->n_keys && i < cap; i++) {
		tags[i] = key_tag(s->keys[i].key);
		roles[i] = s->keys[i].roles;
	}
	return s->n_keys;
}

const struct zone_signer *signer_hook(struct signer *s) { return &s->hook; }

void signer_building(struct signer *s, bool on)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	if (on)
		s->building++;
	else if (s->building)
		s->building--;
	pthread_mutex_unlock(&s->mu);
}

static void signer_building_hook(void *ctx, bool on)
{
	signer_building(ctx, on);
}

void signer_set_clock(struct signer *s, uint64_t (*now)(void *arg), void *arg)
{
	s->now = now ? now : system_now;
	s->now_arg = now ? arg : NULL;
}

const uint8_t *signer_dnskey(const struct signer *s, size_t *len)
{
	for (size_t i = 0; i < s->n_keys; i++) {
		if (s->keys[i].roles & SIGNER_CDS) {
			*len = KEY_DNSKEY_LEN;
			return key_dnskey(s->keys[i].key);
		}
	}
	*len = KEY_DNSKEY_LEN;
	return key_dnskey(s->keys[0].key);
}

void signer_get_stats(const struct signer *s, struct signer_stats *out)
{
	struct signer *m = (struct signer *)s;   /* the lock only */
	pthread_mutex_lock(&m->mu);
	*out = s->stats;
	out->cached = sigcache_count(s->cache);
	pthread_mutex_unlock(&m->mu);
}

/* --- one build --- */

struct soa_find {
	const uint8_t *apex;
	bool found;
	uint32_t ttl, minimum;
};

static int find_soa(void *arg, const uint8_t *owner, struct rrset *rrset)
{
	struct soa_find *f = arg;
	if (rrset->type != RR_SOA || !dname_equal(owner, f->apex) || rrset->count == 0)
		return 0;
	const struct rdata *rd = &rrset->rr[0];
	if (rd->len < 22)   /* two names (root at least) + five u32 */
		return 0;
	f->found = true;
	f->ttl = rrset->ttl;
	f->minimum = wire_get_u32(rd->data + rd->len - 4);
	return 0;
}

struct walk {
	struct signer *s;
	struct arena *arena;
	uint64_t now;
	uint32_t inception, expiration;   /* RRSIG fields for new signatures */
	uint64_t refresh_at;
	uint64_t made, reused;
	char *err;
};

/* A walk that signs now: new signatures valid from now - inception to now + validity. */
static struct walk walk_now(struct signer *s, struct arena *a, char *err)
{
	uint64_t now = s->now(s->now_arg);
	return (struct walk){
		.s = s,
		.arena = a,
		.now = now,
		/* RRSIG times are serial numbers modulo 2^32 (RFC 4034 3.1.5). */
		.inception = (uint32_t)(now - s->inception),
		.expiration = (uint32_t)(now + s->validity),
		.refresh_at = UINT64_MAX,
		.err = err,
	};
}

/* What a walk made and reused goes into the signer's statistics. */
static void walk_count(struct signer *s, const struct walk *w)
{
	pthread_mutex_lock(&s->mu);
	s->stats.made += w->made;
	s->stats.reused += w->reused;
	pthread_mutex_unlock(&s->mu);
}

/* An RRSIG inception at or before now (RFC 4034 3.1.5: RFC 1982 arithmetic). */
static bool has_begun(uint32_t inception, uint32_t now)
{
	enum serial_order o = serial_compare(inception, now);
	return o == SERIAL_EQUAL || o == SERIAL_LESS;
}

/* One signature of `rrset` by key k: from the cache when fresh, or made now. */
static int sign_with(struct walk *w, struct signer_keyslot *k, const uint8_t *owner,
                     struct rrset *rrset, struct rdata *out)
{
	struct signer *s = w->s;
	struct sigcache_key ck;
	bool keyed = sigcache_key(s->cache, owner, rrset, key_tag(k->key), &ck) == 0;
	struct rdata sig;
	uint64_t expiration;
	uint8_t buf[SIGN_RRSIG_MAX];
	/* A cached signature must also have begun: after the clock stepped
	 * back, its inception may lie in the future (serial arithmetic). */
	if (keyed && sigcache_get(s->cache, &ck, w->now, s->refresh, &sig, &expiration) == 0 &&
	    has_begun(wire_get_u32(sig.data + 12), (uint32_t)w->now)) {
		w->reused++;
	} else {
		int len = sign_rrset(k->sign, owner, rrset, w->inception, w->expiration,
		                     buf, sizeof(buf));
		if (len < 0) {
			char name[1024];
			if (dname_to_str(owner, name, sizeof(name)) < 0)
				snprintf(name, sizeof(name), "(name)");
			snprintf(w->err, 256, "%s: cannot sign %.160s type %u: %s", s->name, name,
			         (unsigned)rrset->type, strerror(-len));
			return len;
		}
		sig.len = (uint16_t)len;
		sig.data = buf;
		expiration = w->now + s->validity;
		/* Not caching (cap reached, no memory) only costs a re-sign. */
		if (keyed)
			(void)sigcache_put(s->cache, &ck, buf, sig.len, expiration);
		w->made++;
	}
	/* Copied into the snapshot even when cached: the cache may replace or
	 * drop the entry while this snapshot is still being served. */
	uint8_t *copy = arena_memdup(w->arena, sig.data, sig.len);
	if (!copy) {
		snprintf(w->err, 256, "%s: out of memory for signatures", s->name);
		return -ENOMEM;
	}
	out->len = sig.len;
	out->data = copy;
	if (expiration - s->refresh < w->refresh_at)
		w->refresh_at = expiration - s->refresh;
	return 0;
}

/* Every signing key's RRSIG onto the RRset, in key order (double
 * signature during a rollover: RFC 7583 section 3.3). */
static int sign_one_locked(struct walk *w, const uint8_t *owner, struct rrset *rrset);

static int sign_one(void *arg, const uint8_t *owner, struct rrset *rrset)
{
	struct walk *w = arg;
	if (rrset->count == 0 || rrset->type == RR_RRSIG)
		return 0;
	pthread_mutex_lock(&w->s->mu);
	int rc = sign_one_locked(w, owner, rrset);
	pthread_mutex_unlock(&w->s->mu);
	return rc;
}

/* Cached signatures are copied into the snapshot before the lock goes. */
static int sign_one_locked(struct walk *w, const uint8_t *owner, struct rrset *rrset)
{
	struct signer *s = w->s;
	if (rrset->ttl > s->max_ttl)
		s->max_ttl = rrset->ttl;
	struct rdata sigs[RRSET_SIGS];
	unsigned n = 0;
	memset(sigs, 0, sizeof(sigs));
	for (size_t i = 0; i < s->n_keys && n < RRSET_SIGS; i++) {
		if (!(s->keys[i].roles & SIGNER_SIGN))
			continue;
		int rc = sign_with(w, &s->keys[i], owner, rrset, &sigs[n]);
		if (rc < 0)
			return rc;
		n++;
	}
	memcpy(rrset->sig, sigs, sizeof(sigs));
	return 0;
}

/*
 * One RRset after its snapshot was frozen (a geo pair picked for the first
 * time).  Same validity and cache as a build; its signature is newer than
 * the snapshot's, so the snapshot's refresh point still comes first.
 */
static int signer_sign_late(void *ctx, const uint8_t *owner, struct rrset *rrset,
                            struct arena *a)
{
	struct signer *s = ctx;
	char err[256] = "";
	struct walk w = walk_now(s, a, err);
	int rc = sign_one(&w, owner, rrset);
	walk_count(s, &w);
	return rc;
}

static int add_apex_keys(struct signer *s, struct zone_builder *b, uint32_t ttl, char err[256])
{
	int rc = 0;
	if (s->dnskey_ttl)
		ttl = s->dnskey_ttl;
	for (size_t i = 0; rc == 0 && i < s->n_keys; i++) {
		const uint8_t *dnskey = key_dnskey(s->keys[i].key);
		if (s->keys[i].roles & SIGNER_PUBLISH)
			rc = zone_builder_add(b, s->apex, RR_DNSKEY, ttl, dnskey, KEY_DNSKEY_LEN);
		if (rc || !s->publish_cds || !(s->keys[i].roles & SIGNER_CDS))
			continue;
		/* RFC 7344: the child's wish for its DS, read by parents that
		 * poll for it (CDS with SHA-256, the digest parents accept). */
		uint8_t ds[DS_RDATA_MAX];
		int len = ds_rdata(s->apex, dnskey, KEY_DNSKEY_LEN, DS_DIGEST_SHA256, ds, sizeof(ds));
		rc = len < 0 ? len : zone_builder_add(b, s->apex, RR_CDS, ttl, ds, (uint16_t)len);
		if (rc == 0)
			rc = zone_builder_add(b, s->apex, RR_CDNSKEY, ttl, dnskey, KEY_DNSKEY_LEN);
	}
	if (rc < 0)
		snprintf(err, 256, "%s: cannot add the DNSKEY RRset: %s", s->name, strerror(-rc));
	return rc;
}

static int signer_run(void *ctx, struct zone_builder *b, char err[256])
{
	struct signer *s = ctx;
	err[0] = '\0';
	const uint8_t **names = NULL;
	if (zone_builder_names(b, &names) == 0 || !dname_equal(names[0], s->apex)) {
		snprintf(err, 256, "%s: signer used on another zone", s->name);
		return -EINVAL;
	}
	struct soa_find soa = { .apex = s->apex };
	int rc = zone_builder_foreach_rrset(b, find_soa, &soa);
	if (rc < 0 || !soa.found) {
		snprintf(err, 256, "%s: no SOA at the apex", s->name);
		return rc < 0 ? rc : -EINVAL;
	}
	/* Under the lock: the loop may set new keys meanwhile (a rollover step
	 * while this build runs beside it), freeing the ones it drops. */
	pthread_mutex_lock(&s->mu);
	rc = add_apex_keys(s, b, soa.ttl, err);
	pthread_mutex_unlock(&s->mu);
	if (rc < 0)
		return rc;
	rc = denial_build(b, soa.ttl < soa.minimum ? soa.ttl : soa.minimum, err);
	if (rc < 0)
		return rc;

	struct walk w = walk_now(s, zone_builder_arena(b), err);
	uint64_t now = w.now;
	pthread_mutex_lock(&s->mu);
	sigcache_begin_build(s->cache);
	pthread_mutex_unlock(&s->mu);
	rc = zone_builder_foreach_rrset(b, sign_one, &w);
	pthread_mutex_lock(&s->mu);
	sigcache_end_build(s->cache);
	pthread_mutex_unlock(&s->mu);
	if (rc < 0) {
		if (!err[0])
			snprintf(err, 256, "%s: signing failed: %s", s->name, strerror(-rc));
		return rc;
	}
	if (w.refresh_at == UINT64_MAX)
		w.refresh_at = now + s->validity - s->refresh;
	zone_builder_set_expiry(b, w.refresh_at);
	zone_builder_set_signatures_made(b, w.made);

	walk_count(s, &w);
	pthread_mutex_lock(&s->mu);
	s->stats.last_made = w.made;
	s->stats.last_reused = w.reused;
	s->stats.builds++;
	s->stats.refresh_at = w.refresh_at;
	pthread_mutex_unlock(&s->mu);
	log_debug("%s: %llu RRsets signed (%llu new signatures, %llu reused), refresh in %llds",
	          s->name, (unsigned long long)(w.made + w.reused), (unsigned long long)w.made,
	          (unsigned long long)w.reused, (long long)(w.refresh_at - now));
	return 0;
}

/*
 * A patch: the NSEC records it lists, then a signature on every RRset it
 * left unsigned (the changed ones, those NSEC records, the SOA).  The cache
 * is asked and fed as in a build, but no build is counted: entries of the
 * served RRsets must not age out because a patch did not visit them.
 */
static int signer_patch(void *ctx, struct zone_patch *p, char err[256])
{
	struct signer *s = ctx;
	err[0] = '\0';
	const struct rrset *soa = zone_patch_soa(p);
	if (!soa || soa->count != 1 || soa->rr[0].len < 22) {
		snprintf(err, 256, "%s: no SOA at the apex", s->name);
		return -EINVAL;
	}
	uint32_t minimum = wire_get_u32(soa->rr[0].data + soa->rr[0].len - 4);
	int rc = denial_patch(p, s->apex, soa->ttl < minimum ? soa->ttl : minimum, err);
	if (rc < 0)
		return rc;
	struct walk w = walk_now(s, zone_patch_arena(p), err);
	rc = zone_patch_foreach_unsigned(p, sign_one, &w);
	if (rc < 0) {
		if (!err[0])
			snprintf(err, 256, "%s: signing failed: %s", s->name, strerror(-rc));
		return rc;
	}
	zone_patch_set_expiry(p, w.refresh_at);
	zone_patch_count_made(p, w.made);
	walk_count(s, &w);
	pthread_mutex_lock(&s->mu);
	s->stats.last_made = w.made;
	s->stats.last_reused = w.reused;
	s->stats.patches++;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/*
 * Renews one RRset's signature in place when it is due: its refresh point
 * (expiration - refresh) has come, or its inception lies ahead (the clock
 * stepped back).  RRSIG times are serial numbers (RFC 4034 3.1.5): read
 * relative to now.
 */
static int signer_renew(void *ctx, const uint8_t *owner, struct rrset *rrset, struct arena *a,
                        uint64_t *refresh_at)
{
	struct signer *s = ctx;
	uint64_t now = s->now(s->now_arg);
	/* Due when any of its signatures is (they were made together). */
	uint64_t first = UINT64_MAX;
	unsigned n = rrset_sig_count(rrset);
	for (unsigned k = 0; k < n; k++) {
		const struct rdata *sig = &rrset->sig[k];
		if (sig->len < 18) {
			first = 0;
			break;
		}
		int32_t left = (int32_t)(wire_get_u32(sig->data + 8) - (uint32_t)now);
		int32_t since = (int32_t)((uint32_t)now - wire_get_u32(sig->data + 12));
		if (left <= 0 || (uint64_t)left <= s->refresh || since < 0) {
			first = 0;
			break;
		}
		if (now + (uint64_t)left - s->refresh < first)
			first = now + (uint64_t)left - s->refresh;
	}
	if (n && first) {
		*refresh_at = first;
		return 0;
	}
	char err[256] = "";
	struct walk w = walk_now(s, a, err);
	int rc = sign_one(&w, owner, rrset);
	if (rc < 0)
		return rc;
	walk_count(s, &w);
	*refresh_at = w.refresh_at;
	return 1;
}

/*
 * A patch took this RRset out of the served snapshot: its signatures by the
 * signing keys leave the cache now rather than at the next whole build, so
 * that a zone patched for weeks (ACME: every UPDATE replaces its SOA, a TXT
 * RRset and an NSEC or two) does not fill the cache with signatures nothing
 * serves, up to its cap, past which new ones are not kept (a reload or a
 * compaction would then sign those again).  Content that comes back (an
 * NSEC whose next name returns when a challenge's name goes) is signed
 * again: one signature.
 */
static void signer_forget(void *ctx, const uint8_t *owner, const struct rrset *rrset)
{
	struct signer *s = ctx;
	pthread_mutex_lock(&s->mu);
	/* A build beside the loop may still sign the old content: kept; the
	 * builds' own rule drops it later (unused by two builds). */
	for (size_t i = 0; !s->building && i < s->n_keys; i++) {
		struct sigcache_key ck;
		if ((s->keys[i].roles & SIGNER_SIGN) &&
		    sigcache_key(s->cache, owner, rrset, key_tag(s->keys[i].key), &ck) == 0)
			sigcache_drop(s->cache, &ck);
	}
	pthread_mutex_unlock(&s->mu);
}
