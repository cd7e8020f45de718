/* SPDX-License-Identifier: MIT */
/*
 * core/zone/zone_table: the zone that serves a name is the one with the
 * longest apex that is a suffix of it, whatever order the zones came in,
 * after a snapshot is replaced, and after a zone is removed (the table
 * keeps each apex and its label count beside the zone; they must move
 * with it).  And dname_same, the comparison the lookups use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/conf/diag.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/zone.h"
#include "core/zone/zone_table.h"
#include "tests/unit/check.h"

static uint8_t *name(const char *s)
{
	static uint8_t bufs[8][DNAME_MAX];
	static int next;
	uint8_t *p = bufs[next++ % 8];
	if (dname_from_str(s, p) < 0)
		abort();
	return p;
}

/* A zone with an SOA and an NS at its apex. */
static struct zone *make(const char *apex)
{
	uint8_t a[DNAME_MAX];
	dname_from_str(apex, a);
	struct zone_builder *b = zone_builder_new(a);
	uint8_t soa[DNAME_MAX * 2 + 20];
	size_t n = 0;
	const uint8_t *m = name("ns1.example.org");
	memcpy(soa + n, m, dname_len(m));
	n += dname_len(m);
	memcpy(soa + n, m, dname_len(m));
	n += dname_len(m);
	for (int i = 0; i < 5; i++)
		wire_set_u32(soa + n + 4 * i, 3600);
	zone_builder_add(b, a, RR_SOA, 300, soa, (uint16_t)(n + 20));
	zone_builder_add(b, a, RR_NS, 300, m, (uint16_t)dname_len(m));
	struct diag d;
	diag_init(&d);
	struct zone *z = zone_builder_finish(b, NULL, apex, &d);
	diag_clear(&d);
	if (!z)
		abort();
	return z;
}

/* The apex of the zone serving `qname`, as text ("-" when none). */
static const char *served_by(const struct zone_table *t, const char *qname)
{
	static char out[DNAME_MAX * 4 + 2];
	uint8_t q[DNAME_MAX];
	dname_from_str(qname, q);
	const struct zone *z = zone_table_find(t, q);
	if (!z)
		return "-";
	dname_to_str(zone_apex(z), out, sizeof(out));
	return out;
}

static void test_same(void)
{
	const uint8_t a[] = "\3www\7example\3com";
	uint8_t b[sizeof(a)];
	memcpy(b, a, sizeof(a));
	ok(dname_same(a, b, sizeof(a)), "same: equal names of 17 bytes");
	bool all = true;
	for (size_t len = 1; len <= sizeof(a) && all; len++)
		for (size_t at = 0; at < len && all; at++) {
			b[at] ^= 0x20;
			all = !dname_same(a, b, len) && dname_same(a, a, len);
			b[at] ^= 0x20;
		}
	ok(all, "same: a difference in any byte of any length is seen");
}

static void test_table(void)
{
	struct zone_table *t = zone_table_new();
	/* Added shortest first: the table orders them longest first. */
	is_int(zone_table_add(t, make("example.com")), 0, "add example.com");
	is_int(zone_table_add(t, make("a.b.example.com")), 0, "add a.b.example.com");
	is_int(zone_table_add(t, make("b.example.com")), 0, "add b.example.com");
	is_int(zone_table_add(t, make("org")), 0, "add org");
	is_str(served_by(t, "www.example.com"), "example.com.", "www.example.com: example.com");
	is_str(served_by(t, "x.b.example.com"), "b.example.com.", "x.b.example.com: b.example.com");
	is_str(served_by(t, "b.example.com"), "b.example.com.", "an apex serves itself");
	is_str(served_by(t, "www.a.b.example.com"), "a.b.example.com.", "the longest apex wins");
	is_str(served_by(t, "ab.example.com"), "example.com.", "a label is not a suffix of a label");
	is_str(served_by(t, "example.net"), "-", "no zone: none");
	is_str(served_by(t, "com"), "-", "a parent of a zone: none");
	is_str(served_by(t, "example.org"), "org.", "org");

	/* A new snapshot of a zone: found, and the old one is gone. */
	struct zone *fresh = make("b.example.com");
	is_int(zone_table_replace(t, fresh), 0, "replace b.example.com");
	uint8_t q[DNAME_MAX];
	dname_from_str("x.b.example.com", q);
	ok(zone_table_find(t, q) == fresh, "the new snapshot serves");

	/* Removing a zone moves the others' apexes and label counts too. */
	is_int(zone_table_remove(t, name("a.b.example.com")), 0, "remove a.b.example.com");
	is_str(served_by(t, "www.a.b.example.com"), "b.example.com.", "its names: the parent zone");
	is_str(served_by(t, "x.b.example.com"), "b.example.com.", "b.example.com still found");
	is_str(served_by(t, "www.example.com"), "example.com.", "example.com still found");
	is_str(served_by(t, "example.org"), "org.", "org still found");
	is_int(zone_table_remove(t, name("example.com")), 0, "remove example.com");
	is_str(served_by(t, "www.example.com"), "-", "example.com gone");
	is_str(served_by(t, "b.example.com"), "b.example.com.", "b.example.com still found");
	is_str(served_by(t, "a.example.org"), "org.", "org still found");
	zone_table_free(t);
}

int main(void)
{
	test_same();
	test_table();
	return done_testing();
}
