/* SPDX-License-Identifier: MIT */
/*
 * dnssec/sigcache and dnssec/signer: the cache on its own (keys, reuse,
 * refresh, eviction, cap), then whole snapshots signed through the zone
 * builder: every RRSIG verified by ldns, the zone checked by
 * ldns-verify-zone, signatures reused across rebuilds and renewed exactly
 * where content changed or a refresh is due.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <ldns/ldns.h>

#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/geo/geo_db.h"
#include "core/geo/geo_sites.h"
#include "core/hooks.h"
#include "core/wire/arena.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/geo_sets.h"
#include "core/zone/zone.h"
#include "dnssec/denial.h"
#include "dnssec/ds.h"
#include "dnssec/key.h"
#include "dnssec/sigcache.h"
#include "dnssec/sign.h"
#include "dnssec/signer.h"
#include "tests/unit/check.h"
#include "tests/unit/ldns_util.h"

static char dir[64];
static char key_path[128];

#define T0 1700000000ull
#define VALIDITY (14 * 86400)
#define INCEPTION 3600
#define REFRESH (7 * 86400)

/* --- sigcache on its own --- */


/* The key of the RRset "many.example.com A <i>"; a4 receives the address. */
static void many_key(struct sigcache *c, uint32_t i, uint8_t a4[4], struct sigcache_key *k)
{
	wire_set_u32(a4, i);
	struct rdata r[1] = { { 4, a4 } };
	struct rrset rs = { .type = RR_A, .count = 1, .ttl = 60, .rr = r };
	sigcache_key(c, name("many.example.com"), &rs, 1, k);
}
static void test_sigcache(void)
{
	struct sigcache *c = sigcache_new(3);
	struct rdata rr1[1] = { { 4, (const uint8_t *)"\x01\x02\x03\x04" } };
	struct rdata rr2[1] = { { 4, (const uint8_t *)"\x01\x02\x03\x05" } };
	struct rrset a = { .type = RR_A, .count = 1, .ttl = 60, .rr = rr1 };
	struct rrset b = a, t = a;
	b.rr = rr2;
	t.ttl = 61;
	struct sigcache_key ka, ka2, kb, kt, kup, ktag;
	sigcache_key(c, name("www.example.com"), &a, 1, &ka);
	sigcache_key(c, name("www.example.com"), &a, 1, &ka2);
	sigcache_key(c, name("www.example.com"), &b, 1, &kb);
	sigcache_key(c, name("www.example.com"), &t, 1, &kt);
	sigcache_key(c, (const uint8_t *)"\x03WWW\x07" "example\x03" "com", &a, 1, &kup);
	sigcache_key(c, name("www.example.com"), &a, 2, &ktag);
	is_mem(ka.digest, ka2.digest, 32, "same content, same key");
	ok(memcmp(ka.digest, kb.digest, 32) != 0, "other rdata, other key");
	ok(memcmp(ka.digest, kt.digest, 32) != 0, "other TTL, other key");
	is_mem(ka.digest, kup.digest, 32, "owner case does not matter");
	ok(memcmp(ka.digest, ktag.digest, 32) != 0, "other key tag, other key");
	/* Record boundaries are content: {"ab","c"} != {"a","bc"}. */
	struct rdata s1[2] = { { 2, (const uint8_t *)"ab" }, { 1, (const uint8_t *)"c" } };
	struct rdata s2[2] = { { 1, (const uint8_t *)"a" }, { 2, (const uint8_t *)"bc" } };
	struct rrset x = { .type = 65280, .count = 2, .ttl = 1, .rr = s1 }, y = x;
	y.rr = s2;
	struct sigcache_key kx, ky;
	sigcache_key(c, name("x.example.com"), &x, 1, &kx);
	sigcache_key(c, name("x.example.com"), &y, 1, &ky);
	ok(memcmp(kx.digest, ky.digest, 32) != 0, "record boundaries are part of the key");

	struct rdata got;
	uint64_t exp;
	sigcache_begin_build(c);
	is_int(sigcache_get(c, &ka, 1000, 100, &got, &exp), -ENOENT, "empty cache: miss");
	is_int(sigcache_put(c, &ka, (const uint8_t *)"SIG-A", 5, 2000), 0, "put A");
	is_int(sigcache_get(c, &ka, 1000, 100, &got, &exp), 0, "hit A");
	ok(got.len == 5 && memcmp(got.data, "SIG-A", 5) == 0 && exp == 2000, "A's bytes and expiration");
	is_int(sigcache_get(c, &ka, 1899, 100, &got, &exp), 0, "hit just before the refresh point");
	is_int(sigcache_get(c, &ka, 1900, 100, &got, &exp), -ENOENT, "miss at expiration - refresh");
	is_int(sigcache_put(c, &ka, (const uint8_t *)"SIG-A2", 6, 3000), 0, "replace A");
	is_int(sigcache_count(c), 1, "replacing keeps one entry");
	sigcache_get(c, &ka, 1900, 100, &got, &exp);
	ok(got.len == 6 && memcmp(got.data, "SIG-A2", 6) == 0 && exp == 3000, "replaced bytes");
	is_int(sigcache_put(c, &kb, (const uint8_t *)"SIG-B", 5, 3000), 0, "put B");
	is_int(sigcache_put(c, &kt, (const uint8_t *)"SIG-T", 5, 3000), 0, "put T");
	is_int(sigcache_put(c, &kx, (const uint8_t *)"SIG-X", 5, 3000), -ENOSPC, "cap of 3 reached");
	is_int(sigcache_put(c, &kt, (const uint8_t *)"SIG-T2", 6, 3000), 0, "replace at the cap");
	is_int(sigcache_count(c), 3, "three entries");
	sigcache_end_build(c);                    /* build 1 used A, B, T */

	sigcache_begin_build(c);                  /* build 2 uses A only */
	sigcache_get(c, &ka, 1000, 100, &got, &exp);
	sigcache_end_build(c);
	is_int(sigcache_count(c), 3, "entries of the previous build survive one more build");
	sigcache_begin_build(c);                  /* build 3 uses nothing */
	sigcache_end_build(c);
	is_int(sigcache_count(c), 1, "entries unused for %d builds are dropped", SIGCACHE_KEEP_BUILDS);
	is_int(sigcache_get(c, &kb, 1000, 100, &got, &exp), -ENOENT, "B is gone");
	sigcache_begin_build(c);
	sigcache_end_build(c);
	is_int(sigcache_count(c), 0, "A dropped too, two builds after its last use");
	sigcache_free(c);
	sigcache_free(NULL);

	/* Growth: 1000 entries (the table starts at 64 buckets), all found. */
	c = sigcache_new(5000);
	sigcache_begin_build(c);
	int put_fail = 0, get_fail = 0;
	for (uint32_t i = 0; i < 1000; i++) {
		uint8_t a4[4];
		struct sigcache_key k;
		many_key(c, i, a4, &k);
		put_fail += sigcache_put(c, &k, a4, 4, 2000) != 0;
	}
	for (uint32_t i = 0; i < 1000; i++) {
		uint8_t a4[4];
		struct sigcache_key k;
		many_key(c, i, a4, &k);
		get_fail += sigcache_get(c, &k, 1000, 100, &got, &exp) != 0 || got.len != 4 ||
		            memcmp(got.data, a4, 4) != 0;
	}
	is_int(put_fail, 0, "1000 puts");
	is_int(get_fail, 0, "1000 gets after the table grew, each its own value");
	is_int(sigcache_count(c), 1000, "1000 entries");
	sigcache_end_build(c);
	sigcache_free(c);
}

/* --- whole zones --- */

static uint64_t clock_now = T0;
static uint64_t fixed_clock(void *arg)
{
	(void)arg;
	return clock_now;
}

static void add(struct zone_builder *b, const char *owner, uint16_t type, uint32_t ttl,
                const void *rd, size_t len)
{
	if (zone_builder_add(b, name(owner), type, ttl, rd, (uint16_t)len) < 0)
		abort();
}

static void add_soa(struct zone_builder *b, const char *apex, uint32_t serial)
{
	uint8_t soa[128];
	size_t p = 0, n;
	n = dname_len(name("ns1.example.com"));
	memcpy(soa + p, name("ns1.example.com"), n);
	p += n;
	n = dname_len(name("hostmaster.example.com"));
	memcpy(soa + p, name("hostmaster.example.com"), n);
	p += n;
	const uint32_t v[5] = { serial, 7200, 3600, 1209600, 300 };
	for (int i = 0; i < 5; i++, p += 4)
		wire_set_u32(soa + p, v[i]);
	add(b, apex, RR_SOA, 3600, soa, p);
}

struct variant {
	uint32_t serial;
	const char *txt;        /* the ACME TXT value */
	bool extra_name;        /* adds new.example.com */
	struct geo_sites *sites;
};

static struct zone *build(struct signer *s, const struct variant *v, struct diag *d)
{
	struct zone_builder *b = zone_builder_new(name("example.com"));
	add_soa(b, "example.com", v->serial);
	const uint8_t *ns = name("ns1.example.com");
	add(b, "example.com", RR_NS, 3600, ns, dname_len(ns));
	add(b, "ns1.example.com", RR_A, 3600, "\xc0\x00\x02\x35", 4);
	add(b, "www.example.com", RR_A, 300, "\xc0\x00\x02\x01", 4);
	add(b, "www.example.com", RR_A, 300, "\xc0\x00\x02\x02", 4);
	uint8_t txt[256];
	txt[0] = (uint8_t)strlen(v->txt);
	memcpy(txt + 1, v->txt, txt[0]);
	add(b, "_acme-challenge.www.example.com", RR_TXT, 60, txt, 1u + txt[0]);
	const uint8_t *sub_ns = name("ns.sub.example.com");
	add(b, "sub.example.com", RR_NS, 3600, sub_ns, dname_len(sub_ns));
	add(b, "sub.example.com", RR_DS, 3600, "\x30\x39\x0d\x02" "0123456789abcdef0123456789abcdef", 36);
	add(b, "ns.sub.example.com", RR_A, 3600, "\xc0\x00\x02\x0a", 4);
	if (v->extra_name)
		add(b, "new.example.com", RR_A, 300, "\xc0\x00\x02\x63", 4);
	if (v->sites) {
		struct config_geo_name gn = {
			.name = "geo", .ratio = 2.0, .margin_miles = 1000, .ttl_single = 120, .ttl_pair = 3600,
		};
		char err[256];
		struct geo_sets *gs = geo_sets_build(zone_builder_arena(b), v->sites, &gn, err);
		if (!gs || zone_builder_add_geo(b, name("geo.example.com"), gs) < 0)
			abort();
	}
	return zone_builder_finish(b, s ? signer_hook(s) : NULL, "test", d);
}

/* Every RRSIG of the zone, for comparing builds: concatenated in node order. */
struct sigs {
	size_t n;
	const uint8_t *data[256];
	uint16_t len[256];
	uint16_t type[256];
	char owner[256][64];
};

struct verify_ctx {
	ldns_rr_list *keys;
	time_t when;
	int checked, failed, unsigned_sets;
	struct sigs *sigs;
	FILE *dump;             /* zone text for ldns-verify-zone, or NULL */
	int geo_dumped[2];
};

static int verify_rrset(void *arg, const uint8_t *owner, struct rrset *s)
{
	struct verify_ctx *v = arg;
	if (s->sig[0].len == 0) {
		v->unsigned_sets++;
		return 0;
	}
	ldns_rr_list *set = ldns_rr_list_new();
	for (uint16_t i = 0; i < s->count; i++)
		ldns_rr_list_push_rr(set, to_ldns(owner, s->type, s->ttl, s->rr[i].data, s->rr[i].len));
	ldns_rr *sig = to_ldns(owner, RR_RRSIG, s->ttl, s->sig[0].data, s->sig[0].len);
	ldns_rr_list *good = ldns_rr_list_new();
	ldns_status st = ldns_verify_rrsig_keylist_time(set, sig, v->keys, v->when, good);
	v->checked++;
	if (st != LDNS_STATUS_OK) {
		v->failed++;
		printf("# type %u: %s\n", s->type, ldns_get_errorstr_by_id(st));
	}
	if (v->sigs && v->sigs->n < 256) {
		size_t k = v->sigs->n++;
		v->sigs->data[k] = s->sig[0].data;
		v->sigs->len[k] = s->sig[0].len;
		v->sigs->type[k] = s->type;
		dname_to_str(owner, v->sigs->owner[k], 64);
	}
	if (v->dump) {
		ldns_rr_list_print(v->dump, set);
		ldns_rr_print(v->dump, sig);
	}
	ldns_rr_list_deep_free(set);
	ldns_rr_free(sig);
	ldns_rr_list_free(good);
	return 0;
}

/* Geo answer sets: every one is verified; one per type goes to the dump
 * (a zone file has one A RRset per name). */
static int verify_geo(void *arg, const uint8_t *owner, struct rrset *s)
{
	struct verify_ctx *v = arg;
	FILE *dump = v->dump;
	int k = s->type == RR_A ? 0 : 1;
	if (v->geo_dumped[k]++)
		v->dump = NULL;
	verify_rrset(arg, owner, s);
	v->dump = dump;
	return 0;
}

static void print_unsigned(FILE *f, const uint8_t *owner, const struct rrset *s)
{
	for (uint16_t i = 0; i < s->count; i++) {
		ldns_rr *rr = to_ldns(owner, s->type, s->ttl, s->rr[i].data, s->rr[i].len);
		ldns_rr_print(f, rr);
		ldns_rr_free(rr);
	}
}

/* Visits every node: authoritative RRsets verified, delegation NS and
 * glue only dumped (they carry no RRSIG). */
static int verify_node(void *arg, const struct zone_node *n)
{
	struct verify_ctx *v = arg;
	bool glue = n->flags & ZONE_NODE_GLUE;
	bool cut = n->flags & ZONE_NODE_DELEGATION;
	for (uint16_t j = 0; j < n->rrset_count; j++) {
		struct rrset *s = &n->rrsets[j];
		if (glue || (cut && s->type != RR_DS && s->type != RR_NSEC)) {
			if (s->sig[0].len)
				v->failed++;   /* must not be signed */
			if (v->dump)
				print_unsigned(v->dump, n->name, s);
			continue;
		}
		verify_rrset(v, n->name, s);
	}
	if (n->geo)
		geo_sets_foreach((struct geo_sets *)n->geo, n->name, verify_geo, v);
	return 0;
}

static void verify_zone(const struct zone *z, struct verify_ctx *v)
{
	zone_foreach_node(z, verify_node, v);
}

static ldns_rr_list *key_list(struct signer *s)
{
	size_t len;
	const uint8_t *dk = signer_dnskey(s, &len);
	ldns_rr_list *keys = ldns_rr_list_new();
	ldns_rr_list_push_rr(keys, to_ldns(name("example.com"), RR_DNSKEY, 3600, dk, (uint16_t)len));
	return keys;
}

static const uint8_t *find_sig(const struct sigs *s, const char *owner, uint16_t type,
                               uint16_t *len)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->type[i] == type && strcmp(s->owner[i], owner) == 0) {
			*len = s->len[i];
			return s->data[i];
		}
	return NULL;
}

static struct geo_sites *make_sites(void)
{
	struct config_site site[3] = {
		{ .name = "paris", .has_v4 = true, .v4 = { 198, 51, 100, 1 }, .has_v6 = true,
		  .v6 = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 }, .latitude = 48.85, .longitude = 2.35,
		  .enabled = true },
		{ .name = "nyc", .has_v4 = true, .v4 = { 198, 51, 100, 2 }, .has_v6 = true,
		  .v6 = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 }, .latitude = 40.7, .longitude = -74.0,
		  .enabled = true },
		{ .name = "tokyo", .has_v4 = true, .v4 = { 198, 51, 100, 3 }, .latitude = 35.7,
		  .longitude = 139.7, .enabled = true },
	};
	struct config c = { .sites = site, .n_sites = 3 };
	char err[256];
	struct geo_sites *gs = geo_sites_new(&c, err);
	if (!gs)
		printf("# %s\n", err);
	return gs;
}

static void test_signer(void)
{
	struct config cfg = { .sig_validity_s = VALIDITY, .sig_inception_s = INCEPTION,
	                      .sig_refresh_s = REFRESH };
	char err[256] = "";
	struct signer *s = signer_new("example.com.", key_path, &cfg, true, err);
	ok(s != NULL, "signer_new (%s)", err);
	if (!s)
		return;
	signer_set_clock(s, fixed_clock, NULL);
	struct geo_sites *sites = make_sites();
	ok(sites != NULL, "geo sites");
	ldns_rr_list *keys = key_list(s);
	struct diag d;
	diag_init(&d);

	/* Build 1: everything signed fresh. */
	struct variant v1 = { .serial = 1, .txt = "token-one", .sites = sites };
	clock_now = T0;
	struct zone *z1 = build(s, &v1, &d);
	diag_print(&d);
	ok(z1 != NULL, "signed zone builds");
	if (!z1)
		return;
	static struct sigs sigs1, sigs2, sigs3;
	struct verify_ctx vc = { .keys = keys, .when = (time_t)T0, .sigs = &sigs1 };
	char zfile[128];
	snprintf(zfile, sizeof(zfile), "%s/zone.txt", dir);
	vc.dump = fopen(zfile, "w");
	verify_zone(z1, &vc);
	fclose(vc.dump);
	vc.dump = NULL;
	/* 15 ordinary RRsets (apex SOA NS DNSKEY CDS CDNSKEY NSEC, ns1 A NSEC,
	 * www A NSEC, _acme TXT NSEC, sub DS NSEC, geo NSEC) and the geo
	 * answer sets: A 3 singles + 3 pairs, AAAA (two sites) 2 + 1. */
	struct signer_stats st;
	signer_get_stats(s, &st);
	is_int(vc.failed, 0, "every RRSIG of build 1 verifies with ldns (%d checked)", vc.checked);
	is_int(vc.unsigned_sets, 0, "no authoritative RRset left unsigned");
	is_int(vc.checked, 15 + 9, "15 zone RRsets + 9 geo answer sets signed");
	is_int(st.last_made, vc.checked, "build 1: every signature made");
	is_int(st.last_reused, 0, "build 1: nothing reused");
	is_int(zone_expires_at(z1), T0 + VALIDITY - REFRESH, "refresh point = now + validity - refresh");
	ok(zone_is_signed(z1) && zone_nsec_count(z1) == 6, "6 NSEC owners (apex ns1 sub www _acme geo)");

	/* Apex records added by the signer. */
	const struct rrset *dnskey = zone_node_rrset(zone_apex_node(z1), RR_DNSKEY);
	size_t dlen;
	const uint8_t *dk = signer_dnskey(s, &dlen);
	ok(dnskey && dnskey->count == 1 && dnskey->ttl == 3600 && dnskey->rr[0].len == dlen &&
	   memcmp(dnskey->rr[0].data, dk, dlen) == 0, "DNSKEY at the apex, TTL = SOA TTL");
	const struct rrset *cds = zone_node_rrset(zone_apex_node(z1), RR_CDS);
	uint8_t ds[DS_RDATA_MAX];
	int dslen = ds_rdata(name("example.com"), dk, dlen, DS_DIGEST_SHA256, ds, sizeof(ds));
	ok(cds && cds->count == 1 && cds->rr[0].len == dslen && memcmp(cds->rr[0].data, ds, 36) == 0,
	   "CDS = SHA-256 DS of the key");
	const struct rrset *cdnskey = zone_node_rrset(zone_apex_node(z1), RR_CDNSKEY);
	ok(cdnskey && cdnskey->rr[0].len == dlen && memcmp(cdnskey->rr[0].data, dk, dlen) == 0,
	   "CDNSKEY = DNSKEY");
	const struct rrset *nsec = zone_node_rrset(zone_apex_node(z1), RR_NSEC);
	ok(nsec && nsec->ttl == 300, "NSEC TTL = min(SOA TTL 3600, minimum 300)");
	const uint16_t apex_types[] = { RR_NS, RR_SOA, RR_RRSIG, RR_NSEC, RR_DNSKEY, RR_CDS, RR_CDNSKEY };
	uint8_t want[300];
	int wlen = denial_nsec_rdata(name("geo.example.com"), apex_types, 7, want, sizeof(want));
	ok(nsec && nsec->rr[0].len == wlen && memcmp(nsec->rr[0].data, want, (size_t)wlen) == 0,
	   "apex NSEC -> geo.example.com with DNSKEY CDS CDNSKEY in the bitmap");
	const uint8_t *geo_owner = name("geo.example.com");
	const struct zone_node *gn = zone_find(z1, geo_owner, dname_len(geo_owner));
	const uint16_t geo_types[] = { RR_A, RR_AAAA, RR_RRSIG, RR_NSEC };
	wlen = denial_nsec_rdata(name("ns1.example.com"), geo_types, 4, want, sizeof(want));
	const struct rrset *gnsec = gn ? zone_node_rrset(gn, RR_NSEC) : NULL;
	ok(gnsec && gnsec->rr[0].len == wlen && memcmp(gnsec->rr[0].data, want, (size_t)wlen) == 0,
	   "geo name NSEC shows A and AAAA");
	uint16_t len;
	const uint8_t *geo_nsec = find_sig(&sigs1, "geo.example.com.", RR_NSEC, &len);
	ok(geo_nsec != NULL, "geo name has a signed NSEC");

	/* ldns-verify-zone on the dump: signatures and NSEC chain. */
	char cmd[512], when[32];
	time_t tt = (time_t)T0;
	strftime(when, sizeof(when), "%Y%m%d%H%M%S", gmtime(&tt));
	snprintf(cmd, sizeof(cmd), "ldns-verify-zone -V 1 -t %s %s >%s/verify.out 2>&1", when, zfile,
	         dir);
	int rc = system(cmd);
	is_int(rc, 0, "ldns-verify-zone accepts the signed zone");
	if (rc != 0) {
		snprintf(cmd, sizeof(cmd), "sed 's/^/# /' %s/verify.out", dir);
		if (system(cmd) != 0)
			printf("# (no output)\n");
	}

	/* Build 2: same content an hour later: every signature reused. */
	clock_now = T0 + 3600;
	struct zone *z2 = build(s, &v1, &d);
	signer_get_stats(s, &st);
	is_int(st.last_made, 0, "build 2 (no change): no ECDSA operation");
	is_int(st.last_reused, vc.checked, "build 2: every signature reused");
	struct verify_ctx vc2 = { .keys = keys, .when = (time_t)(T0 + 3600), .sigs = &sigs2 };
	verify_zone(z2, &vc2);
	is_int(vc2.failed, 0, "build 2 verifies");
	bool same = sigs1.n == sigs2.n;
	/* Same names, same visiting order: compare one by one (a geo name
	 * has several A RRsets). */
	for (size_t i = 0; same && i < sigs1.n; i++)
		same = strcmp(sigs1.owner[i], sigs2.owner[i]) == 0 && sigs1.type[i] == sigs2.type[i] &&
		       sigs1.len[i] == sigs2.len[i] &&
		       memcmp(sigs1.data[i], sigs2.data[i], sigs1.len[i]) == 0;
	ok(same, "build 2 carries byte-identical signatures");
	is_int(zone_expires_at(z2), T0 + VALIDITY - REFRESH, "reused signatures keep the old refresh point");

	/* Build 3: the ACME TXT changes (serial bumped): TXT and SOA re-signed. */
	struct variant v3 = v1;
	v3.serial = 2;
	v3.txt = "token-two";
	struct zone *z3 = build(s, &v3, &d);
	signer_get_stats(s, &st);
	is_int(st.last_made, 2, "build 3 (TXT + serial changed): exactly 2 new signatures");
	struct verify_ctx vc3 = { .keys = keys, .when = (time_t)(T0 + 3600), .sigs = &sigs3 };
	verify_zone(z3, &vc3);
	is_int(vc3.failed, 0, "build 3 verifies");
	uint16_t l1, l3;
	const uint8_t *a1 = find_sig(&sigs1, "_acme-challenge.www.example.com.", RR_TXT, &l1);
	const uint8_t *a3 = find_sig(&sigs3, "_acme-challenge.www.example.com.", RR_TXT, &l3);
	ok(a1 && a3 && (l1 != l3 || memcmp(a1, a3, l1) != 0), "the TXT signature changed");
	a1 = find_sig(&sigs1, "www.example.com.", RR_A, &l1);
	a3 = find_sig(&sigs3, "www.example.com.", RR_A, &l3);
	ok(a1 && a3 && l1 == l3 && memcmp(a1, a3, l1) == 0, "an unchanged RRset kept its signature");
	is_int(zone_expires_at(z3), T0 + VALIDITY - REFRESH, "refresh point = the oldest signature's");

	/* Build 4: a new name: its A, its NSEC and its predecessor's NSEC. */
	struct variant v4 = v3;
	v4.extra_name = true;
	struct zone *z4 = build(s, &v4, &d);
	signer_get_stats(s, &st);
	is_int(st.last_made, 3, "build 4 (new name): its A, its NSEC, the predecessor's NSEC");
	struct verify_ctx vc4 = { .keys = keys, .when = (time_t)(T0 + 3600) };
	verify_zone(z4, &vc4);
	is_int(vc4.failed, 0, "build 4 verifies");

	/* Build 5: at the refresh point of build 1's signatures.  Those are
	 * renewed; the 5 made an hour later (builds 3 and 4) are not due yet. */
	clock_now = T0 + VALIDITY - REFRESH;
	struct zone *z5 = build(s, &v4, &d);
	signer_get_stats(s, &st);
	is_int(st.last_reused, 5, "build 5 (refresh due): only the 5 younger signatures reused");
	is_int(st.last_made, vc4.checked - 5, "build 5: every signature of build 1 renewed");
	is_int(zone_expires_at(z5), T0 + 3600 + VALIDITY - REFRESH,
	       "refresh point = that of the younger signatures");
	struct verify_ctx vc5 = { .keys = keys, .when = (time_t)clock_now };
	verify_zone(z5, &vc5);
	is_int(vc5.failed, 0, "build 5 verifies");
	/* The renewed signatures carry the new validity window. */
	const uint8_t *www = name("www.example.com");
	const struct zone_node *wn = zone_find(z5, www, dname_len(www));
	const struct rrset *a5 = wn ? zone_node_rrset(wn, RR_A) : NULL;
	ok(a5 && a5->sig[0].len > 16 && wire_get_u32(a5->sig[0].data + 12) == (uint32_t)(clock_now - INCEPTION) &&
	   wire_get_u32(a5->sig[0].data + 8) == (uint32_t)(clock_now + VALIDITY),
	   "renewed RRSIG: inception now - 1h, expiration now + 14d");
	ok(wire_get_u32(zone_soa(z5)->sig[0].data + 8) == (uint32_t)(T0 + 3600 + VALIDITY),
	   "the SOA signed in build 3 kept its expiration");

	signer_get_stats(s, &st);
	is_int(st.builds, 5, "5 builds counted");
	ok(st.cached > 0 && st.cached <= 2u * (unsigned)vc4.checked + 4,
	   "cache bounded by two builds' worth (%zu entries)", st.cached);
	is_int(st.made, vc.checked + 0 + 2 + 3 + (vc4.checked - 5), "total made");
	is_int(st.reused, vc.checked + (vc3.checked - 2) + (vc4.checked - 3) + 5, "total reused");

	/* Build 6: the clock stepped back before every cached inception. */
	clock_now = T0 - 2 * INCEPTION;
	struct zone *z6 = build(s, &v4, &d);
	signer_get_stats(s, &st);
	is_int(st.last_made, vc4.checked, "clock stepped back: not-yet-valid signatures remade");
	struct verify_ctx vc6 = { .keys = keys, .when = (time_t)clock_now };
	verify_zone(z6, &vc6);
	is_int(vc6.failed, 0, "build 6 verifies at the earlier time");
	zone_free(z6);

	zone_free(z1);
	zone_free(z2);
	zone_free(z3);
	zone_free(z4);
	zone_free(z5);
	diag_clear(&d);
	ldns_rr_list_deep_free(keys);
	geo_sites_free(sites);
	signer_free(s);
}

static void test_signer_errors(void)
{
	char err[256] = "";
	struct config bad = { .sig_validity_s = 86400, .sig_inception_s = 3600, .sig_refresh_s = 86400 };
	ok(signer_new("example.com", key_path, &bad, false, err) == NULL, "refresh >= validity refused");
	ok(strstr(err, "refresh") != NULL, "message: %s", err);
	char missing[160];
	snprintf(missing, sizeof(missing), "%s/none.pem", dir);
	ok(signer_new("example.com", missing, NULL, false, err) == NULL, "missing key refused");
	ok(strstr(err, "none.pem") != NULL, "message names the key: %s", err);

	/* A signer for another zone refuses to sign this one. */
	struct signer *s = signer_new("example.org", key_path, NULL, false, err);
	ok(s != NULL, "signer for example.org");
	struct diag d;
	diag_init(&d);
	struct variant v = { .serial = 1, .txt = "x" };
	struct zone *z = build(s, &v, &d);
	ok(z == NULL && d.n == 1 && strstr(d.msgs[0], "another zone"), "wrong zone refused: %s",
	   d.n ? d.msgs[0] : "");
	diag_clear(&d);
	signer_free(s);
	signer_free(NULL);

	/* Without publish_cds: no CDS/CDNSKEY. */
	s = signer_new("example.com", key_path, NULL, false, err);
	diag_init(&d);
	z = build(s, &v, &d);
	ok(z && zone_node_rrset(zone_apex_node(z), RR_DNSKEY) && !zone_node_rrset(zone_apex_node(z), RR_CDS) &&
	   !zone_node_rrset(zone_apex_node(z), RR_CDNSKEY), "publish_cds off: DNSKEY only");
	ok(z && zone_expires_at(z) > (uint64_t)time(NULL), "default clock: refresh point in the future");
	zone_free(z);
	diag_clear(&d);
	signer_free(s);
}

/* --- several keys (a rollover's double signature, a standby key) --- */

struct two_keys {
	ldns_rr *key[2];        /* the two signing keys' DNSKEY */
	uint16_t tag[2];
	time_t when;
	int sets, both_ok, bad;
};

static bool verifies_with(const uint8_t *owner, const struct rrset *s, const struct rdata *sig,
                          ldns_rr *key, time_t when)
{
	ldns_rr_list *set = ldns_rr_list_new(), *keys = ldns_rr_list_new(), *good = ldns_rr_list_new();
	for (uint16_t i = 0; i < s->count; i++)
		ldns_rr_list_push_rr(set, to_ldns(owner, s->type, s->ttl, s->rr[i].data, s->rr[i].len));
	ldns_rr_list_push_rr(keys, key);
	ldns_rr *r = to_ldns(owner, RR_RRSIG, s->ttl, sig->data, sig->len);
	bool okv = ldns_verify_rrsig_keylist_time(set, r, keys, when, good) == LDNS_STATUS_OK;
	ldns_rr_free(r);
	ldns_rr_list_deep_free(set);
	ldns_rr_list_free(keys);
	ldns_rr_list_free(good);
	return okv;
}

/* Each signed RRset carries exactly two RRSIGs, the first by key 0 and the
 * second by key 1, each valid with its key alone. */
static int check_two(void *arg, const uint8_t *owner, struct rrset *s)
{
	struct two_keys *t = arg;
	t->sets++;
	if (rrset_sig_count(s) == 2 && wire_get_u16(s->sig[0].data + 16) == t->tag[0] &&
	    wire_get_u16(s->sig[1].data + 16) == t->tag[1] &&
	    verifies_with(owner, s, &s->sig[0], t->key[0], t->when) &&
	    verifies_with(owner, s, &s->sig[1], t->key[1], t->when))
		t->both_ok++;
	else
		t->bad++;
	return 0;
}

static int check_two_node(void *arg, const struct zone_node *n)
{
	bool cut = n->flags & ZONE_NODE_DELEGATION;
	if (n->flags & ZONE_NODE_GLUE)
		return 0;
	for (uint16_t j = 0; j < n->rrset_count; j++)
		if (!cut || n->rrsets[j].type == RR_DS || n->rrsets[j].type == RR_NSEC)
			check_two(arg, n->name, &n->rrsets[j]);
	if (n->geo)
		geo_sets_foreach((struct geo_sets *)n->geo, n->name, check_two, arg);
	return 0;
}

static bool rrset_has(const struct rrset *s, const uint8_t *rd, size_t len)
{
	for (uint16_t i = 0; s && i < s->count; i++)
		if (s->rr[i].len == len && memcmp(s->rr[i].data, rd, len) == 0)
			return true;
	return false;
}

static void test_several_keys(void)
{
	char k2[160], k3[160], cmd[512], err[256] = "";
	snprintf(k2, sizeof(k2), "%s/k2.pem", dir);
	snprintf(k3, sizeof(k3), "%s/k3.pem", dir);
	ok(key_generate(k2, err) == 0 && key_generate(k3, err) == 0, "two more keys (%s)", err);
	struct config cfg = { .sig_validity_s = VALIDITY, .sig_inception_s = INCEPTION,
	                      .sig_refresh_s = REFRESH };
	struct signer *s = signer_new("example.com.", key_path, &cfg, true, err);
	ok(s != NULL, "signer_new (%s)", err);
	if (!s)
		return;
	signer_set_clock(s, fixed_clock, NULL);
	clock_now = T0;
	struct key *key[3] = { key_load(key_path, err), key_load(k2, err), key_load(k3, err) };
	ok(key[0] && key[1] && key[2], "keys load");
	/* The old key signs and is at the parent, the new one signs too, the
	 * third is a standby key: published only. */
	struct signer_key_spec v[3] = {
		{ key_path, SIGNER_PUBLISH | SIGNER_SIGN | SIGNER_CDS },
		{ k2, SIGNER_PUBLISH | SIGNER_SIGN },
		{ k3, SIGNER_PUBLISH },
	};
	ok(signer_set_keys(s, v, 3, err) == 0, "three keys, two signing (%s)", err);
	signer_set_dnskey_ttl(s, 120);
	struct geo_sites *sites = make_sites();
	struct diag d;
	diag_init(&d);
	struct variant var = { .serial = 1, .txt = "two", .sites = sites };
	struct zone *z = build(s, &var, &d);
	diag_print(&d);
	ok(z != NULL, "zone builds");
	if (z) {
		struct two_keys t = { .when = (time_t)T0 };
		for (int i = 0; i < 2; i++) {
			t.key[i] = to_ldns(name("example.com"), RR_DNSKEY, 120, key_dnskey(key[i]),
			                   KEY_DNSKEY_LEN);
			t.tag[i] = key_tag(key[i]);
		}
		zone_foreach_node(z, check_two_node, &t);
		is_int(t.bad, 0, "every RRset (geo answer sets included) has both RRSIGs, each valid "
		       "(%d sets)", t.sets);
		is_int(t.sets, 15 + 9, "15 zone RRsets + 9 geo answer sets");
		const struct rrset *dk = zone_node_rrset(zone_apex_node(z), RR_DNSKEY);
		ok(dk && dk->count == 3 && dk->ttl == 120 &&
		   rrset_has(dk, key_dnskey(key[0]), KEY_DNSKEY_LEN) &&
		   rrset_has(dk, key_dnskey(key[1]), KEY_DNSKEY_LEN) &&
		   rrset_has(dk, key_dnskey(key[2]), KEY_DNSKEY_LEN),
		   "DNSKEY: the three keys, TTL = dnskey_ttl");
		const struct rrset *cds = zone_node_rrset(zone_apex_node(z), RR_CDS);
		const struct rrset *cdk = zone_node_rrset(zone_apex_node(z), RR_CDNSKEY);
		uint8_t ds[DS_RDATA_MAX];
		int dslen = ds_rdata(name("example.com"), key_dnskey(key[0]), KEY_DNSKEY_LEN,
		                     DS_DIGEST_SHA256, ds, sizeof(ds));
		ok(cds && cds->count == 1 && cds->ttl == 120 && rrset_has(cds, ds, (size_t)dslen) &&
		   cdk && cdk->count == 1 && rrset_has(cdk, key_dnskey(key[0]), KEY_DNSKEY_LEN),
		   "CDS and CDNSKEY: the key at the parent only");
		ldns_rr_free(t.key[0]);
		ldns_rr_free(t.key[1]);
	}
	zone_free(z);

	/* Three signing keys: refused, the signer unchanged. */
	struct signer_key_spec three[3] = {
		{ key_path, SIGNER_SIGN | SIGNER_PUBLISH }, { k2, SIGNER_SIGN | SIGNER_PUBLISH },
		{ k3, SIGNER_SIGN | SIGNER_PUBLISH },
	};
	ok(signer_set_keys(s, three, 3, err) == -EINVAL && strstr(err, "signing"),
	   "three signing keys refused: %s", err);
	snprintf(cmd, sizeof(cmd), "%s/none.pem", dir);
	struct signer_key_spec missing[2] = { { k2, SIGNER_SIGN }, { cmd, SIGNER_PUBLISH } };
	ok(signer_set_keys(s, missing, 2, err) == -EINVAL && strstr(err, "none.pem"),
	   "a missing key refused: %s", err);
	uint16_t tags[4];
	unsigned roles[4];
	ok(signer_keys(s, tags, roles, 4) == 3 && tags[2] == key_tag(key[2]) &&
	   roles[2] == SIGNER_PUBLISH, "after refusals the three keys are unchanged");

	/* The new key alone: one RRSIG per RRset, by it. */
	struct signer_key_spec after[1] = { { k2, SIGNER_PUBLISH | SIGNER_SIGN | SIGNER_CDS } };
	ok(signer_set_keys(s, after, 1, err) == 0, "the new key alone (%s)", err);
	var.serial = 2;
	z = build(s, &var, &d);
	const struct rrset *soa = z ? zone_soa(z) : NULL;
	ok(soa && rrset_sig_count(soa) == 1 && wire_get_u16(soa->sig[0].data + 16) == key_tag(key[1]),
	   "after the rollover: one RRSIG, by the new key");
	const struct rrset *dk = z ? zone_node_rrset(zone_apex_node(z), RR_DNSKEY) : NULL;
	ok(dk && dk->count == 1 && rrset_has(dk, key_dnskey(key[1]), KEY_DNSKEY_LEN),
	   "DNSKEY: the new key only");
	zone_free(z);
	for (int i = 0; i < 3; i++)
		key_free(key[i]);
	diag_clear(&d);
	geo_sites_free(sites);
	signer_free(s);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_dnssec_signer.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(key_path, sizeof(key_path), "%s/k.pem", dir);
	char cmd[256];
	snprintf(cmd, sizeof(cmd),
	         "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out %s 2>/dev/null",
	         key_path);
	if (system(cmd) != 0 || chmod(key_path, 0600) != 0)
		return 1;
	test_sigcache();
	test_signer();
	test_signer_errors();
	test_several_keys();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (getenv("KEEP_TMP"))
		printf("# kept %s\n", dir);
	else if (system(cmd) != 0)
		printf("# cleanup failed\n");
	return done_testing();
}
