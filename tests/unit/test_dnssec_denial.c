/* SPDX-License-Identifier: MIT */
/*
 * dnssec/denial: NSEC type bitmaps (RFC 4034 example, ldns as a second
 * opinion) and the NSEC chain built through the zone builder: canonical
 * order, wrap to the apex, bitmaps at ordinary names, delegations and
 * empty non-terminals, TTL.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "core/conf/diag.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/zone.h"
#include "dnssec/denial.h"
#include "tests/unit/check.h"
#include "tests/unit/ldns_util.h"

static void test_rfc_example(void)
{
	/* RFC 4034 section 4.3: alfa.example.com NSEC host.example.com
	 * (A MX RRSIG NSEC TYPE1234), given in any order. */
	const uint16_t types[] = { 1234, RR_NSEC, RR_A, RR_RRSIG, RR_MX, RR_A };
	const uint8_t want[] = {
		0x04, 'h', 'o', 's', 't', 0x07, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0x03, 'c', 'o', 'm', 0x00,
		0x00, 0x06, 0x40, 0x01, 0x00, 0x00, 0x00, 0x03,
		0x04, 0x1b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x20,
	};
	uint8_t out[256];
	int len = denial_nsec_rdata(name("Host.Example.COM"), types, 6, out, sizeof(out));
	is_int(len, (int)sizeof(want), "RFC 4034 4.3 example length");
	is_mem(out, want, sizeof(want), "RFC 4034 4.3 example bytes (next name lowercased)");
	is_int(denial_nsec_rdata(name("host.example.com"), types, 6, out, 30), -ENOSPC,
	       "-ENOSPC when the bitmap does not fit");
	is_int(denial_bitmap(types, 0, out, sizeof(out)), 0, "no types, empty bitmap");
}

/* Our bitmap against ldns_dnssec_create_nsec_bitmap, both given NSEC too. */
static void same_as_ldns(const char *what, const uint16_t *types, size_t n)
{
	uint16_t with[64];
	ldns_rr_type lt[64];
	for (size_t i = 0; i < n; i++) {
		with[i] = types[i];
		lt[i] = (ldns_rr_type)types[i];
	}
	with[n] = RR_NSEC;
	lt[n] = LDNS_RR_TYPE_NSEC;
	ldns_rdf *rdf = ldns_dnssec_create_nsec_bitmap(lt, n + 1, LDNS_RR_TYPE_NSEC);
	uint8_t out[DENIAL_BITMAP_MAX];
	int len = denial_bitmap(with, n + 1, out, sizeof(out));
	ok(rdf && len == (int)ldns_rdf_size(rdf) && memcmp(out, ldns_rdf_data(rdf), (size_t)len) == 0,
	   "bitmap of %s equals ldns's", what);
	if (rdf && (len != (int)ldns_rdf_size(rdf) || memcmp(out, ldns_rdf_data(rdf), (size_t)len))) {
		printf("# ours ");
		for (int i = 0; i < len; i++)
			printf("%02x", out[i]);
		printf("\n# ldns ");
		for (size_t i = 0; i < ldns_rdf_size(rdf); i++)
			printf("%02x", ldns_rdf_data(rdf)[i]);
		printf("\n");
	}
	ldns_rdf_deep_free(rdf);
}

static void test_bitmaps(void)
{
	const uint16_t apex[] = { RR_SOA, RR_NS, RR_MX, RR_TXT, RR_DNSKEY, RR_CDS, RR_CDNSKEY, RR_RRSIG };
	same_as_ldns("apex (SOA NS MX TXT DNSKEY CDS CDNSKEY)", apex, 8);
	const uint16_t a[] = { RR_A, RR_RRSIG };
	same_as_ldns("A", a, 2);
	const uint16_t caa[] = { RR_CAA, RR_A, RR_AAAA, RR_RRSIG, RR_HTTPS };
	same_as_ldns("CAA (window 1) + A AAAA HTTPS", caa, 5);
	const uint16_t hi[] = { 65535, 256, 255 + 0, RR_RRSIG };
	same_as_ldns("types 255, 256, 65535", hi, 4);

	/* Exact bytes for a delegation: NS DS RRSIG NSEC. */
	const uint16_t cut[] = { RR_NS, RR_DS, RR_RRSIG, RR_NSEC };
	uint8_t out[64];
	int len = denial_bitmap(cut, 4, out, sizeof(out));
	const uint8_t want[] = { 0x00, 0x06, 0x20, 0x00, 0x00, 0x00, 0x00, 0x13 };
	is_int(len, 8, "delegation bitmap length");
	is_mem(out, want, 8, "delegation bitmap: NS, then DS(43) RRSIG(46) NSEC(47) in byte 5");
	/* CAA alone (257): window 1, one byte, bit 1. */
	const uint16_t only_caa[] = { RR_CAA };
	len = denial_bitmap(only_caa, 1, out, sizeof(out));
	is_int(len, 3, "CAA-only bitmap length");
	is_mem(out, "\x01\x01\x40", 3, "CAA-only bitmap bytes");
}

static void add(struct zone_builder *b, const char *owner, uint16_t type, uint32_t ttl,
                const void *rd, size_t len)
{
	if (zone_builder_add(b, name(owner), type, ttl, rd, (uint16_t)len) < 0)
		abort();
}

static void add_name(struct zone_builder *b, const char *owner, uint16_t type, const char *target)
{
	const uint8_t *t = name(target);
	add(b, owner, type, 3600, t, dname_len(t));
}

static size_t soa_rdata(uint8_t *out, uint32_t minimum)
{
	size_t p = 0, n;
	n = dname_len(name("ns1.example.com"));
	memcpy(out + p, name("ns1.example.com"), n);
	p += n;
	n = dname_len(name("hostmaster.example.com"));
	memcpy(out + p, name("hostmaster.example.com"), n);
	p += n;
	const uint32_t v[5] = { 1, 7200, 3600, 1209600, minimum };
	for (int i = 0; i < 5; i++, p += 4)
		wire_set_u32(out + p, v[i]);
	return p;
}

/* The NSEC at `owner`: next name and bitmap as presentation via ldns. */
static bool nsec_is(const struct zone *z, const char *owner, const char *next,
                    const uint16_t *types, size_t n, uint32_t ttl)
{
	const uint8_t *o = name(owner);
	const struct zone_node *node = zone_find(z, o, dname_len(o));
	const struct rrset *s = node ? zone_node_rrset(node, RR_NSEC) : NULL;
	if (!s || s->count != 1) {
		printf("# %s: no NSEC\n", owner);
		return false;
	}
	uint8_t want[1024];
	int len = denial_nsec_rdata(name(next), types, n, want, sizeof(want));
	if (s->ttl != ttl)
		printf("# %s: NSEC TTL %u\n", owner, s->ttl);
	return len == s->rr[0].len && memcmp(want, s->rr[0].data, (size_t)len) == 0 && s->ttl == ttl;
}

static void test_chain(void)
{
	struct zone_builder *b = zone_builder_new(name("example.com"));
	uint8_t soa[128];
	add(b, "example.com", RR_SOA, 3600, soa, soa_rdata(soa, 300));
	add_name(b, "example.com", RR_NS, "ns1.example.com");
	uint8_t mx[64];
	wire_set_u16(mx, 10);
	memcpy(mx + 2, name("mail.example.com"), dname_len(name("mail.example.com")));
	add(b, "example.com", RR_MX, 3600, mx, 2 + dname_len(name("mail.example.com")));
	add(b, "ns1.example.com", RR_A, 3600, "\xc0\x00\x02\x35", 4);
	add(b, "www.example.com", RR_AAAA, 300, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\1", 16);
	add(b, "WWW.example.com", RR_A, 300, "\xc0\x00\x02\x01", 4);
	add(b, "_acme-challenge.www.example.com", RR_TXT, 60, "\x03" "abc", 4);
	add(b, "a.b.c.example.com", RR_A, 300, "\xc0\x00\x02\x02", 4);   /* b.c and c: ENTs */
	/* A delegation with DS, an occluded A at the cut, and glue below. */
	add_name(b, "sub.example.com", RR_NS, "ns.sub.example.com");
	add(b, "sub.example.com", RR_DS, 3600, "\x30\x39\x0d\x02" "0123456789abcdef0123456789abcdef", 36);
	add(b, "sub.example.com", RR_A, 3600, "\xc0\x00\x02\x09", 4);
	add(b, "ns.sub.example.com", RR_A, 3600, "\xc0\x00\x02\x0a", 4);
	/* An insecure delegation (no DS). */
	add_name(b, "zz.example.com", RR_NS, "ns.elsewhere.net");

	char err[256] = "";
	is_int(denial_build(b, 300, err), 0, "denial_build (%s)", err);
	struct diag d;
	diag_init(&d);
	struct zone *z = zone_builder_finish(b, NULL, "test", &d);
	diag_print(&d);
	diag_clear(&d);
	ok(z != NULL, "zone finishes");
	if (!z)
		return;

	const uint16_t apex_t[] = { RR_NS, RR_SOA, RR_MX, RR_RRSIG, RR_NSEC };
	const uint16_t a_t[] = { RR_A, RR_RRSIG, RR_NSEC };
	const uint16_t ns1_t[] = { RR_A, RR_RRSIG, RR_NSEC };
	const uint16_t cut_t[] = { RR_NS, RR_DS, RR_RRSIG, RR_NSEC };
	const uint16_t www_t[] = { RR_A, RR_AAAA, RR_RRSIG, RR_NSEC };
	const uint16_t txt_t[] = { RR_TXT, RR_RRSIG, RR_NSEC };
	const uint16_t zz_t[] = { RR_NS, RR_RRSIG, RR_NSEC };
	/* Canonical order: example.com, a.b.c, ns1, sub, www, _acme-challenge.www, zz. */
	ok(nsec_is(z, "example.com", "a.b.c.example.com", apex_t, 5, 300), "apex -> a.b.c");
	ok(nsec_is(z, "a.b.c.example.com", "ns1.example.com", a_t, 3, 300), "a.b.c -> ns1 (ENTs skipped)");
	ok(nsec_is(z, "ns1.example.com", "sub.example.com", ns1_t, 3, 300), "ns1 -> sub");
	ok(nsec_is(z, "sub.example.com", "www.example.com", cut_t, 4, 300),
	   "delegation: NS DS RRSIG NSEC only, skips the glue below it");
	ok(nsec_is(z, "www.example.com", "_acme-challenge.www.example.com", www_t, 4, 300),
	   "www -> _acme-challenge.www (parent before child)");
	ok(nsec_is(z, "_acme-challenge.www.example.com", "zz.example.com", txt_t, 3, 300),
	   "_acme-challenge.www -> zz");
	ok(nsec_is(z, "zz.example.com", "example.com", zz_t, 3, 300),
	   "insecure delegation: NS RRSIG NSEC; last wraps to the apex");

	const uint8_t *ent = name("c.example.com");
	const struct zone_node *n = zone_find(z, ent, dname_len(ent));
	ok(n && !zone_node_rrset(n, RR_NSEC), "no NSEC at the empty non-terminal c.example.com");
	const uint8_t *glue = name("ns.sub.example.com");
	n = zone_find(z, glue, dname_len(glue));
	ok(n && !zone_node_rrset(n, RR_NSEC), "no NSEC at glue");
	zone_free(z);
}

static void test_apex_only(void)
{
	struct zone_builder *b = zone_builder_new(name("solo.test"));
	uint8_t soa[128];
	add(b, "solo.test", RR_SOA, 3600, soa, soa_rdata(soa, 300));
	add_name(b, "solo.test", RR_NS, "ns1.example.com");
	char err[256] = "";
	is_int(denial_build(b, 60, err), 0, "denial_build on an apex-only zone");
	struct diag d;
	diag_init(&d);
	struct zone *z = zone_builder_finish(b, NULL, "test", &d);
	diag_clear(&d);
	const uint16_t t[] = { RR_NS, RR_SOA, RR_RRSIG, RR_NSEC };
	ok(z && nsec_is(z, "solo.test", "solo.test", t, 4, 60), "apex NSEC points at itself");
	zone_free(z);
}

int main(void)
{
	test_rfc_example();
	test_bitmaps();
	test_chain();
	test_apex_only();
	return done_testing();
}
