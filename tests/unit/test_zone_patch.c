/* SPDX-License-Identifier: MIT */
/*
 * Patching a served snapshot (core/zone/zone_patch.h): after every change
 * of a random sequence (TXT and A records added and removed at names of
 * several depths, so empty non-terminals come and go, names join and leave
 * the NSEC chain, the last name changes), the patched snapshot equals a
 * snapshot built whole from the same records, record by record, NSEC chain
 * included, and every RRSIG in it verifies with ldns.  A patch given up
 * changes nothing; changes a patch does not make answer -EAGAIN.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <ldns/ldns.h>

#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/hooks.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/zone.h"
#include "core/zone/zone_diff.h"
#include "core/zone/zone_internal.h"   /* white-box: compares snapshots field by field */
#include "core/zone/zone_patch.h"
#include "dnssec/signer.h"
#include "tests/unit/check.h"
#include "tests/unit/ldns_util.h"

/* --- the model: the zone's records, as the ACME mirror would hold them --- */

struct mrec {
	char owner[64];
	uint16_t type;
	uint32_t ttl;
	uint8_t rd[64];
	uint16_t len;
};

static struct mrec model[4096];
static size_t n_model;
static uint32_t serial = 1;

static void soa_rdata(uint8_t *out, uint16_t *len)
{
	size_t p = 0, n;
	n = dname_len(name("ns1.example.com"));
	memcpy(out + p, name("ns1.example.com"), n);
	p += n;
	n = dname_len(name("hostmaster.example.com"));
	memcpy(out + p, name("hostmaster.example.com"), n);
	p += n;
	const uint32_t v[5] = { serial, 7200, 3600, 1209600, 300 };
	for (int i = 0; i < 5; i++, p += 4)
		wire_set_u32(out + p, v[i]);
	*len = (uint16_t)p;
}

static void model_add(const char *owner, uint16_t type, uint32_t ttl, const void *rd, size_t len)
{
	for (size_t i = 0; i < n_model; i++) {
		struct mrec *m = &model[i];
		if (!strcmp(m->owner, owner) && m->type == type && m->len == len &&
		    !memcmp(m->rd, rd, len)) {
			m->ttl = ttl;
			return;
		}
	}
	struct mrec *m = &model[n_model++];
	snprintf(m->owner, sizeof(m->owner), "%s", owner);
	m->type = type;
	m->ttl = ttl;
	memcpy(m->rd, rd, len);
	m->len = (uint16_t)len;
}

static void model_del_at(size_t i)
{
	model[i] = model[--n_model];
}

static void model_bump_serial(void)
{
	serial++;
	for (size_t i = 0; i < n_model; i++)
		if (model[i].type == RR_SOA)
			soa_rdata(model[i].rd, &model[i].len);
}

static void model_init(void)
{
	n_model = 0;
	serial = 1;
	uint8_t soa[64];
	uint16_t len;
	soa_rdata(soa, &len);
	model_add("example.com", RR_SOA, 3600, soa, len);
	const uint8_t *ns = name("ns1.example.com");
	model_add("example.com", RR_NS, 3600, ns, dname_len(ns));
	model_add("ns1.example.com", RR_A, 3600, "\xc0\x00\x02\x35", 4);
	model_add("www.example.com", RR_A, 300, "\xc0\x00\x02\x01", 4);
	model_add("_acme-challenge.www.example.com", RR_TXT, 60, "\x04init", 5);
	model_add("zzz.example.com", RR_TXT, 60, "\x04last", 5);
}

static struct zone *build_fresh(struct signer *s)
{
	struct zone_builder *b = zone_builder_new(name("example.com"));
	for (size_t i = 0; i < n_model; i++)
		if (zone_builder_add(b, name(model[i].owner), model[i].type, model[i].ttl, model[i].rd,
		                     model[i].len) < 0)
			abort();
	struct diag d;
	diag_init(&d);
	struct zone *z = zone_builder_finish(b, signer_hook(s), "test", &d);
	for (size_t i = 0; i < d.n; i++)
		printf("# %s\n", d.msgs[i]);
	diag_clear(&d);
	return z;
}

/* Declares each touched name with its full contents from the model. */
static struct zone_patch *patch_for(struct zone *z, const char **touched, size_t n)
{
	struct zone_patch *p = zone_patch_new(z);
	for (size_t t = 0; t < n; t++) {
		if (zone_patch_name(p, name(touched[t])) <= 0)
			continue;
		for (size_t i = 0; i < n_model; i++)
			if (!strcmp(model[i].owner, touched[t]))
				zone_patch_add(p, name(model[i].owner), model[i].type, model[i].ttl,
				               model[i].rd, model[i].len);
	}
	return p;
}

/* --- comparing and verifying --- */

static time_t verify_time;   /* 0: now */
static bool exact_sigs;      /* compare RRSIG bytes too (a presigned copy: they are data) */

/* Every RRset of z carries an RRSIG that verifies; returns the failures. */
static int verify_all(const struct zone *z, ldns_rr_list *keys)
{
	int bad = 0;
	for (uint32_t h = 0; h <= z->bucket_mask; h++) {
		for (const struct zone_node *n = z->buckets[h]; n; n = n->hash_next) {
			for (uint16_t j = 0; j < n->rrset_count; j++) {
				const struct rrset *s = &n->rrsets[j];
				/* At a cut only DS and NSEC are signed (RFC 4035 2.2). */
				if ((n->flags & ZONE_NODE_GLUE) ||
				    ((n->flags & ZONE_NODE_DELEGATION) && s->type != RR_DS &&
				     s->type != RR_NSEC))
					continue;
				if (!s->sig[0].len) {
					bad++;
					continue;
				}
				ldns_rr_list *set = ldns_rr_list_new();
				for (uint16_t i = 0; i < s->count; i++)
					ldns_rr_list_push_rr(set, to_ldns(n->name, s->type, s->ttl, s->rr[i].data,
					                                  s->rr[i].len));
				ldns_rr *sig = to_ldns(n->name, RR_RRSIG, s->ttl, s->sig[0].data, s->sig[0].len);
				ldns_rr_list *good = ldns_rr_list_new();
				if (ldns_verify_rrsig_keylist_time(set, sig, keys,
				                                   verify_time ? verify_time : time(NULL), good) !=
				    LDNS_STATUS_OK)
					bad++;
				ldns_rr_list_deep_free(set);
				ldns_rr_free(sig);
				ldns_rr_list_free(good);
			}
		}
	}
	return bad;
}

static int nodes_in(const struct zone *z)
{
	int k = 0;
	for (uint32_t h = 0; h <= z->bucket_mask; h++)
		for (const struct zone_node *n = z->buckets[h]; n; n = n->hash_next)
			k++;
	return k;
}

/* Why a and b differ (first difference), or NULL when equal. */
static const char *differ(const struct zone *a, const struct zone *b, char *why, size_t cap)
{
	if (a->serial != b->serial || a->node_count != b->node_count ||
	    a->nsec_count != b->nsec_count || nodes_in(a) != nodes_in(b) ||
	    (int)a->node_count != nodes_in(a)) {
		snprintf(why, cap, "serial %u/%u nodes %u/%u (%d/%d) nsec %u/%u", a->serial, b->serial,
		         a->node_count, b->node_count, nodes_in(a), nodes_in(b), a->nsec_count,
		         b->nsec_count);
		return why;
	}
	if (a->soa != zone_node_rrset(a->apex_node, RR_SOA))
		return "the zone's SOA pointer is not the apex SOA";
	for (uint32_t h = 0; h <= b->bucket_mask; h++) {
		for (const struct zone_node *nb = b->buckets[h]; nb; nb = nb->hash_next) {
			char owner[256];
			dname_to_str(nb->name, owner, sizeof(owner));
			const struct zone_node *na = zone_find(a, nb->name, nb->name_len);
			if (!na) {
				snprintf(why, cap, "%.200s missing", owner);
				return why;
			}
			if (na->flags != nb->flags || na->rrset_count != nb->rrset_count) {
				snprintf(why, cap, "%.200s: flags %x/%x sets %u/%u", owner, na->flags, nb->flags,
				         na->rrset_count, nb->rrset_count);
				return why;
			}
			for (uint16_t j = 0; j < nb->rrset_count; j++) {
				const struct rrset *x = &na->rrsets[j], *y = &nb->rrsets[j];
				bool same = x->type == y->type && x->ttl == y->ttl && x->count == y->count &&
				            (x->sig[0].len != 0) == (y->sig[0].len != 0);
				if (same && exact_sigs && y->sig[0].len)
					same = x->sig[0].len == y->sig[0].len &&
					       memcmp(x->sig[0].data, y->sig[0].data, y->sig[0].len) == 0;
				for (uint16_t i = 0; same && i < y->count; i++)
					same = rdata_canonical_cmp(&x->rr[i], &y->rr[i]) == 0;
				if (!same) {
					snprintf(why, cap, "%.200s: RRset type %u differs", owner, y->type);
					return why;
				}
			}
		}
	}
	for (uint32_t i = 0; i < b->nsec_count; i++) {
		if (!dname_equal(a->nsec_order[i]->name, b->nsec_order[i]->name) ||
		    a->nsec_key_len[i] != b->nsec_key_len[i] ||
		    memcmp(a->nsec_keys[i], b->nsec_keys[i], b->nsec_key_len[i]) != 0 ||
		    a->nsec_order[i] != zone_find(a, a->nsec_order[i]->name, a->nsec_order[i]->name_len)) {
			snprintf(why, cap, "NSEC order differs at %u", i);
			return why;
		}
	}
	return NULL;
}

/* --- the IXFR difference of a patch --- */

struct diff_lines {
	char (*v)[600];
	size_t n, cap;
};

/* Every record of a difference but the RRSIGs (signing again makes new
 * ones), as sorted text lines "+/- owner type ttl rdata-hex". */
static int diff_line(void *arg, const struct zone_diff_rr *rr)
{
	struct diff_lines *d = arg;
	if (rr->type == RR_RRSIG && !exact_sigs)
		return 0;
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 64;
		d->v = realloc(d->v, d->cap * sizeof(*d->v));
	}
	char owner[300];
	dname_to_str(rr->owner, owner, sizeof(owner));
	int k = snprintf(d->v[d->n], 600, "%c %.200s %u %u ", rr->add ? '+' : '-', owner, rr->type,
	                 rr->ttl);
	for (uint16_t i = 0; i < rr->rdlen && k < 596; i++)
		k += snprintf(d->v[d->n] + k, 600 - (size_t)k, "%02x", rr->rdata[i]);
	d->n++;
	return 0;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* Whether two differences hold the same records (RRSIGs aside) and serials. */
static bool same_diff(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	uint32_t f1, t1, d1, a1, f2, t2, d2, a2;
	if (zone_diff_header(a, al, &f1, &t1, &d1, &a1) < 0 ||
	    zone_diff_header(b, bl, &f2, &t2, &d2, &a2) < 0 || f1 != f2 || t1 != t2)
		return false;
	struct diff_lines x = { 0 }, y = { 0 };
	zone_diff_walk(a, al, diff_line, &x);
	zone_diff_walk(b, bl, diff_line, &y);
	bool same = x.n == y.n;
	if (same) {
		qsort(x.v, x.n, sizeof(*x.v), line_cmp);
		qsort(y.v, y.n, sizeof(*y.v), line_cmp);
		for (size_t i = 0; same && i < x.n; i++)
			same = strcmp(x.v[i], y.v[i]) == 0;
	}
	if (!same)
		for (size_t i = 0; i < x.n || i < y.n; i++)
			printf("# %s | %s\n", i < x.n ? x.v[i] : "", i < y.n ? y.v[i] : "");
	free(x.v);
	free(y.v);
	return same;
}

/*
 * After a step patched z from `before` (the patch's IXFR difference pd/pl,
 * prc < 0 when zone_diff_patch failed): with check_diff, the difference
 * must be the one between the whole builds `before` and `fresh`; and z
 * must equal `fresh`.  Frees pd and before; the first failure of each kind
 * is printed, every one counted.
 */
static void check_patched(int step, const struct zone *z, struct zone *before,
                          const struct zone *fresh, int prc, uint8_t *pd, size_t pl,
                          bool check_diff, int *diffs, int *mismatches)
{
	uint8_t *wd = NULL;
	size_t wl = 0;
	if (check_diff &&
	    (prc < 0 || zone_diff(before, fresh, &wd, &wl) < 0 || !same_diff(pd, pl, wd, wl))) {
		if (!(*diffs)++)
			printf("# step %d: the patch's difference differs\n", step);
	}
	free(pd);
	free(wd);
	zone_free(before);
	char why[256];
	const char *d = differ(z, fresh, why, sizeof(why));
	if (d && !(*mismatches)++)
		printf("# step %d: %s\n", step, d);
}

/* --- random changes --- */

static const char *pool[] = {
	"a.example.com", "b.example.com", "www.example.com", "_acme-challenge.www.example.com",
	"_acme-challenge.x.y.example.com", "x.y.example.com", "y.example.com",
	"deep.a.b.c.example.com", "b.c.example.com", "c.example.com", "zzz.example.com",
	"zzzz.example.com", "_acme-challenge.example.com", "m.n.o.example.com", "o.example.com",
	"\\001.example.com", "A-upper.example.com",
};
#define POOL (sizeof(pool) / sizeof(pool[0]))

static uint32_t rng = 12345;
static uint32_t rnd(uint32_t n)
{
	rng = rng * 1103515245u + 12345u;
	return (rng >> 8) % n;
}

/* One random change to the model; the names it touched go to `touched`. */
static size_t random_change(const char **touched)
{
	size_t n = 0;
	int ops = 1 + (int)rnd(3);
	for (int k = 0; k < ops; k++) {
		int what = (int)rnd(10);
		if (what < 4) {
			const char *owner = pool[rnd(POOL)];
			char v[8];
			int vl = snprintf(v + 1, sizeof(v) - 1, "v%u", rnd(4));
			v[0] = (char)vl;
			model_add(owner, RR_TXT, rnd(2) ? 60 : 120, v, (size_t)vl + 1);
			touched[n++] = owner;
		} else if (what < 5) {
			const char *owner = pool[rnd(POOL)];
			uint8_t a[4] = { 192, 0, 2, (uint8_t)rnd(3) };
			model_add(owner, RR_A, 300, a, 4);
			touched[n++] = owner;
		} else if (what < 8) {
			/* Delete one record that is not the zone's frame. */
			size_t cand[4096], c = 0;
			for (size_t i = 0; i < n_model; i++)
				if (model[i].type == RR_TXT || (model[i].type == RR_A &&
				                                strcmp(model[i].owner, "ns1.example.com")))
					cand[c++] = i;
			if (!c)
				continue;
			size_t i = cand[rnd((uint32_t)c)];
			for (size_t t = 0; t < POOL; t++)
				if (!strcmp(pool[t], model[i].owner))
					touched[n++] = pool[t];
			model_del_at(i);
		} else {
			/* Empty a whole name. */
			const char *owner = pool[rnd(POOL)];
			for (size_t i = n_model; i-- > 0;)
				if (!strcmp(model[i].owner, owner))
					model_del_at(i);
			touched[n++] = owner;
		}
	}
	model_bump_serial();
	touched[n++] = "example.com";
	return n;
}

static void test_random(struct signer *s, ldns_rr_list *keys)
{
	model_init();
	struct zone *z = build_fresh(s);
	ok(z != NULL, "initial build");
	int steps = 300, mismatches = 0, bad_sigs = 0, refused = 0, covering = 0, diffs = 0;
	for (int step = 0; step < steps; step++) {
		const char *touched[16];
		struct zone *before = build_fresh(s);
		size_t n = random_change(touched);
		struct zone_patch *p = patch_for(z, touched, n);
		char err[256];
		int rc = zone_patch_prepare(p, signer_hook(s), err);
		if (rc < 0) {
			if (!refused++)
				printf("# step %d: prepare %d (%s)\n", step, rc, err);
			zone_patch_free(p);
			break;
		}
		uint8_t *pd = NULL;
		size_t pl = 0;
		int prc = zone_diff_patch(z, p, &pd, &pl);
		zone_patch_apply(p);
		zone_patch_free(p);
		struct zone *fresh = build_fresh(s);
		check_patched(step, z, before, fresh, prc, pd, pl, true, &diffs, &mismatches);
		bad_sigs += verify_all(z, keys);
		/* The denial answer of any name is the same. */
		for (int q = 0; q < 8; q++) {
			char qn[64];
			snprintf(qn, sizeof(qn), "%s", pool[rnd(POOL)]);
			const uint8_t *probe = name(q & 1 ? qn : "nx.q.example.com");
			if (!(q & 1))
				probe = name(pool[rnd(POOL)]);
			const struct zone_node *x = zone_nsec_covering(z, probe);
			const struct zone_node *y = zone_nsec_covering(fresh, probe);
			if (!x || !y || !dname_equal(x->name, y->name))
				covering++;
		}
		zone_free(fresh);
		if (mismatches)
			break;
	}
	is_int(refused, 0, "every random change is one a patch makes");
	is_int(mismatches, 0, "patched == built whole after each of %d random changes", steps);
	is_int(bad_sigs, 0, "every RRSIG of the patched zone verifies (ldns)");
	is_int(covering, 0, "the covering NSEC of probe names is the same");
	is_int(diffs, 0, "the patch's IXFR difference equals the whole builds' (RRSIGs aside)");
	ok(zone_patch_growth(z) > 0, "patches grew the arena (%zu bytes)", zone_patch_growth(z));
	zone_free(z);
}

static void test_abandon_and_refuse(struct signer *s)
{
	model_init();
	struct zone *z = build_fresh(s);
	char why[256], err[256];

	/* Given up after prepare: the served zone is as it was. */
	static struct mrec saved[4096];
	size_t saved_n = n_model;
	uint32_t saved_serial = serial;
	memcpy(saved, model, sizeof(model));
	model_add("new.deep.example.com", RR_TXT, 60, "\x01x", 2);
	model_bump_serial();
	const char *t1[] = { "new.deep.example.com", "example.com" };
	struct zone_patch *p = patch_for(z, t1, 2);
	is_int(zone_patch_prepare(p, signer_hook(s), err), 0, "prepare a new name");
	zone_patch_free(p);
	memcpy(model, saved, sizeof(model));
	n_model = saved_n;
	serial = saved_serial;
	struct zone *fresh = build_fresh(s);
	const char *d = differ(z, fresh, why, sizeof(why));
	ok(d == NULL, "a patch given up changes nothing (%s)", d ? d : "equal");
	ok(zone_find(z, name("new.deep.example.com"), dname_len(name("new.deep.example.com"))) == NULL &&
	   zone_find(z, name("deep.example.com"), dname_len(name("deep.example.com"))) == NULL,
	   "neither the name nor its empty non-terminal is served");
	zone_free(fresh);

	/* What a patch does not do. */
	struct {
		const char *owner;
		uint16_t type;
		const char *rd;
		size_t len;
		const char *what;
	} cases[] = {
		{ "www.example.com", RR_NS, "\x02ns\x07" "example\x03" "com", 16,
		  "a delegation beside other data" },
		{ "ns1.example.com", RR_NS, "\x02ns\x07" "example\x03" "com", 16,
		  "a delegation beside other data (ns1)" },
		{ "www.example.com", RR_DS, "\x30\x39\x0d\x02" "0123456789abcdef0123456789abcdef", 36,
		  "a DS at a name that is not a cut (RFC 4035 2.4)" },
		{ "*.example.com", RR_TXT, "\x01x", 2, "a wildcard" },
		{ "www.example.com", RR_CNAME, "\x01x\x07" "example\x03" "com", 15, "a CNAME beside data" },
		{ "example.com", RR_MX, "\x00\x0a\x01x\x07" "example\x03" "com", 17, "a new RRset at the apex" },
		{ "a.example.com", RR_DNSKEY, "\x01\x01\x03\x0d" "0123", 8, "a signer type" },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		p = zone_patch_new(z);
		zone_patch_name(p, name(cases[c].owner));
		for (size_t i = 0; i < n_model; i++)
			if (dname_equal(name(model[i].owner), name(cases[c].owner)))
				zone_patch_add(p, name(model[i].owner), model[i].type, model[i].ttl, model[i].rd,
				               model[i].len);
		zone_patch_add(p, name(cases[c].owner), cases[c].type, 60, (const uint8_t *)cases[c].rd,
		               (uint16_t)cases[c].len);
		is_int(zone_patch_prepare(p, signer_hook(s), err), -EAGAIN, "-EAGAIN for %s",
		       cases[c].what);
		zone_patch_free(p);
	}
	/* The SOA's TTL or minimum: every NSEC's TTL follows (RFC 9077). */
	for (int c = 0; c < 2; c++) {
		p = zone_patch_new(z);
		zone_patch_name(p, name("example.com"));
		for (size_t i = 0; i < n_model; i++) {
			if (strcmp(model[i].owner, "example.com"))
				continue;
			uint8_t rd[64];
			memcpy(rd, model[i].rd, model[i].len);
			uint32_t ttl = model[i].ttl;
			if (model[i].type == RR_SOA) {
				wire_set_u32(rd + model[i].len - 20, serial + 1);
				if (c == 0)
					ttl = 1800;
				else
					wire_set_u32(rd + model[i].len - 4, 30);
			}
			zone_patch_add(p, name("example.com"), model[i].type, ttl, rd, model[i].len);
		}
		is_int(zone_patch_prepare(p, signer_hook(s), err), -EAGAIN, "-EAGAIN for the SOA's %s",
		       c == 0 ? "TTL" : "minimum");
		zone_patch_free(p);
	}
	/* Names outside the zone. */
	p = zone_patch_new(z);
	is_int(zone_patch_name(p, name("example.org")), -EINVAL, "a name outside the zone: -EINVAL");
	is_int(zone_patch_add(p, name("undeclared.example.com"), RR_TXT, 60, (const uint8_t *)"\x01x",
	                      2), -EINVAL, "a record of an undeclared name: -EINVAL");
	zone_patch_free(p);
	/* An unsigned zone is built whole. */
	struct zone_builder *b = zone_builder_new(name("example.com"));
	for (size_t i = 0; i < n_model; i++)
		zone_builder_add(b, name(model[i].owner), model[i].type, model[i].ttl, model[i].rd,
		                 model[i].len);
	struct diag dg;
	diag_init(&dg);
	struct zone *u = zone_builder_finish(b, NULL, "test", &dg);
	diag_clear(&dg);
	p = zone_patch_new(u);
	zone_patch_name(p, name("a.example.com"));
	is_int(zone_patch_prepare(p, signer_hook(s), err), -EAGAIN, "an unsigned zone: -EAGAIN");
	zone_patch_free(p);
	zone_free(u);
	zone_free(z);
}

/*
 * What a transfer holding the snapshot lists at its start (xfr/xfr.c
 * build_items: owner, type, TTL, count and the rdata and RRSIG pointers),
 * and the bytes those pointers lead to, in one buffer.
 */
struct held_item {
	const uint8_t *owner;
	uint16_t type, count;
	uint32_t ttl;
	const struct rdata *rr, *sig;
};

static size_t held_view(const struct zone *z, struct held_item *v, size_t cap)
{
	size_t n = 0;
	for (const struct zone_node *node = zone_node_next(z, NULL); node;
	     node = zone_node_next(z, node))
		for (uint16_t i = 0; i < node->rrset_count && n < cap; i++) {
			const struct rrset *s = &node->rrsets[i];
			v[n++] = (struct held_item){ node->name, s->type, s->count, s->ttl, s->rr, &s->sig[0] };
		}
	return n;
}

static size_t held_bytes(const struct held_item *v, size_t n, uint8_t *out, size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = dname_len(v[i].owner);
		if (k + l + 8 > cap)
			return 0;
		memcpy(out + k, v[i].owner, l);
		k += l;
		wire_set_u16(out + k, v[i].type);
		wire_set_u16(out + k + 2, v[i].count);
		wire_set_u32(out + k + 4, v[i].ttl);
		k += 8;
		for (uint16_t r = 0; r <= v[i].count; r++) {
			const struct rdata *rd = r < v[i].count ? &v[i].rr[r] : v[i].sig;
			if (k + rd->len + 2 > cap)
				return 0;
			wire_set_u16(out + k, rd->len);
			memcpy(out + k + 2, rd->data, rd->len);
			k += 2 + rd->len;
		}
	}
	return k;
}

/*
 * A snapshot held by a transfer is patched like any other (issue #26: a
 * pinned snapshot never forces a whole build), and the transfer still
 * reads the zone as it was when it listed its records.
 */
static void test_held(struct signer *s, ldns_rr_list *keys)
{
	model_init();
	struct zone *z = build_fresh(s);
	struct zone *held = zone_hold(z);
	static struct held_item view[4096];
	static uint8_t was[1 << 20], now[1 << 20];
	size_t nv = held_view(z, view, 4096);
	size_t nb = held_bytes(view, nv, was, sizeof(was));
	ok(nv > 0 && nb > 0, "a transfer's list of %zu RRsets, %zu bytes", nv, nb);
	int refused = 0, mismatches = 0, diffs = 0;
	for (int step = 0; step < 60; step++) {
		const char *touched[16];
		struct zone *before = build_fresh(s);
		size_t n = random_change(touched);
		struct zone_patch *p = patch_for(z, touched, n);
		char err[256];
		if (zone_patch_prepare(p, signer_hook(s), err) < 0) {
			refused++;
			zone_patch_free(p);
			zone_free(before);
			break;
		}
		uint8_t *pd = NULL;
		size_t pl = 0;
		int prc = zone_diff_patch(z, p, &pd, &pl);
		zone_patch_apply(p);
		zone_patch_free(p);
		struct zone *fresh = build_fresh(s);
		check_patched(step, z, before, fresh, prc, pd, pl, true, &diffs, &mismatches);
		zone_free(fresh);
	}
	is_int(refused, 0, "60 changes to a held snapshot are all patched");
	is_int(mismatches, 0, "... each equal to the zone built whole");
	is_int(verify_all(z, keys), 0, "... with every RRSIG verifying");
	size_t nb2 = held_bytes(view, nv, now, sizeof(now));
	ok(nb2 == nb && memcmp(was, now, nb) == 0,
	   "the transfer's list still reads the zone as it was when it started");
	zone_free(held);
	zone_free(z);
}

/*
 * One step of test_delegation: patch `touched` (the model changed since
 * `before` was built from it, which is freed); 1 when it equals the whole
 * build.
 */
static int delegation_step(struct signer *s, ldns_rr_list *keys, struct zone *z,
                           struct zone *before, const char **touched, size_t n,
                           const char *what)
{
	struct zone_patch *p = patch_for(z, touched, n);
	char err[256];
	int rc = zone_patch_prepare(p, signer_hook(s), err);
	is_int(rc, 0, "%s: patched", what);
	if (rc < 0) {
		zone_patch_free(p);
		zone_free(before);
		return 0;
	}
	uint8_t *pd = NULL;
	size_t pl = 0;
	int prc = zone_diff_patch(z, p, &pd, &pl);
	zone_patch_apply(p);
	zone_patch_free(p);
	struct zone *fresh = build_fresh(s);
	int diffs = 0, mismatches = 0;
	check_patched(0, z, before, fresh, prc, pd, pl, true, &diffs, &mismatches);
	zone_free(fresh);
	is_int(mismatches + diffs, 0, "%s: equal to the whole build, IXFR difference too", what);
	is_int(verify_all(z, keys), 0, "%s: every RRSIG verifies", what);
	return mismatches + diffs == 0;
}

/* The model's records of one name and type go. */
static void model_del(const char *owner, uint16_t type)
{
	for (size_t i = n_model; i-- > 0;)
		if (!strcmp(model[i].owner, owner) && model[i].type == type)
			model_del_at(i);
}

/*
 * An NS below the apex makes a zone cut by patch, not by a whole build
 * (issue #26.1); so do its DS's changes.  A cut with data beside its NS, a
 * name below a new cut, or a cut that goes still build whole.
 */
static void test_delegation(struct signer *s, ldns_rr_list *keys)
{
	model_init();
	struct zone *z = build_fresh(s);
	const uint8_t *ns = name("ns.elsewhere.net");
	uint8_t ds[36] = { 0x30, 0x39, 13, 2 };
	for (int i = 4; i < 36; i++)
		ds[i] = (uint8_t)i;
	const char *t[] = { "sub.example.com", "example.com" };
	struct zone *before = build_fresh(s);
	model_add("sub.example.com", RR_NS, 3600, ns, dname_len(ns));
	model_add("sub.example.com", RR_DS, 3600, ds, sizeof(ds));
	model_bump_serial();
	delegation_step(s, keys, z, before, t, 2, "a new cut with NS and DS");
	const struct zone_node *cut = zone_find(z, name("sub.example.com"),
	                                        dname_len(name("sub.example.com")));
	ok(cut && (cut->flags & ZONE_NODE_DELEGATION) && !zone_node_rrset(cut, RR_NS)->sig[0].len &&
	   zone_node_rrset(cut, RR_DS)->sig[0].len && zone_node_rrset(cut, RR_NSEC)->sig[0].len,
	   "the cut: a delegation, its NS unsigned, its DS and NSEC signed");
	before = build_fresh(s);
	model_del("sub.example.com", RR_DS);
	ds[3] = 1;
	model_add("sub.example.com", RR_DS, 3600, ds, 24);
	model_bump_serial();
	delegation_step(s, keys, z, before, t, 2, "the cut's DS changes");
	before = build_fresh(s);
	model_del("sub.example.com", RR_DS);
	model_bump_serial();
	delegation_step(s, keys, z, before, t, 2, "the cut's DS goes (an unsigned child)");
	before = build_fresh(s);
	model_add("ins.example.com", RR_NS, 3600, ns, dname_len(ns));
	const char *t2[] = { "ins.example.com", "example.com" };
	model_bump_serial();
	delegation_step(s, keys, z, before, t2, 2, "a second cut, NS only");

	char err[256];
	struct {
		const char *owner;
		uint16_t type;
		const char *what;
	} refused[] = {
		{ "a.sub.example.com", RR_A, "a name below a cut (glue)" },
		{ "sub.example.com", RR_A, "data beside a cut's NS" },
		{ "sub.example.com", 0, "a cut that loses its NS" },
	};
	for (size_t c = 0; c < sizeof(refused) / sizeof(refused[0]); c++) {
		size_t saved_n = n_model;
		static struct mrec saved[4096];
		memcpy(saved, model, sizeof(model));
		if (refused[c].type)
			model_add(refused[c].owner, refused[c].type, 300, "\xc0\x00\x02\x07", 4);
		else
			model_del(refused[c].owner, RR_NS);
		model_bump_serial();
		const char *tc[] = { refused[c].owner, "example.com" };
		struct zone_patch *p = patch_for(z, tc, 2);
		is_int(zone_patch_prepare(p, signer_hook(s), err), -EAGAIN, "-EAGAIN for %s",
		       refused[c].what);
		zone_patch_free(p);
		memcpy(model, saved, sizeof(model));
		n_model = saved_n;
		serial--;
	}
	/* A new cut above names that exist: they would become glue. */
	before = build_fresh(s);
	model_add("x.deep.example.com", RR_TXT, 60, "\x01x", 2);
	model_bump_serial();
	const char *t3[] = { "x.deep.example.com", "example.com" };
	delegation_step(s, keys, z, before, t3, 2, "a name below an empty non-terminal");
	model_add("deep.example.com", RR_NS, 3600, ns, dname_len(ns));
	model_bump_serial();
	const char *t4[] = { "deep.example.com", "example.com" };
	struct zone_patch *p = patch_for(z, t4, 2);
	is_int(zone_patch_prepare(p, signer_hook(s), err), -EAGAIN,
	       "-EAGAIN for a new cut above an existing name");
	zone_patch_free(p);
	zone_free(z);
}

/* Many names: the hash table grows under a patch, one big change at once. */
static void test_bulk(struct signer *s, ldns_rr_list *keys)
{
	model_init();
	struct zone *z = build_fresh(s);
	const char *touched[1100];
	static char names[1000][48];
	size_t n = 0;
	for (int i = 0; i < 1000; i++) {
		snprintf(names[i], sizeof(names[i]), "_acme-challenge.h%d.example.com", i);
		model_add(names[i], RR_TXT, 60, "\x02ok", 3);
		touched[n++] = names[i];
	}
	model_bump_serial();
	touched[n++] = "example.com";
	struct zone_patch *p = patch_for(z, touched, n);
	char err[256], why[256];
	is_int(zone_patch_prepare(p, signer_hook(s), err), 0, "1000 new names in one patch");
	zone_patch_apply(p);
	zone_patch_free(p);
	struct zone *fresh = build_fresh(s);
	const char *d = differ(z, fresh, why, sizeof(why));
	ok(d == NULL, "equal to the zone built whole (%s)", d ? d : "equal");
	is_int(verify_all(z, keys), 0, "every RRSIG verifies");
	zone_free(fresh);
	/* And all of them gone again (a stale purge). */
	n = 0;
	for (size_t i = n_model; i-- > 0;)
		if (!strncmp(model[i].owner, "_acme-challenge.h", 17))
			model_del_at(i);
	for (int i = 0; i < 1000; i++)
		touched[n++] = names[i];
	model_bump_serial();
	touched[n++] = "example.com";
	p = patch_for(z, touched, n);
	is_int(zone_patch_prepare(p, signer_hook(s), err), 0, "1000 names removed in one patch");
	zone_patch_apply(p);
	zone_patch_free(p);
	fresh = build_fresh(s);
	d = differ(z, fresh, why, sizeof(why));
	ok(d == NULL, "equal to the zone built whole (%s)", d ? d : "equal");
	is_int(verify_all(z, keys), 0, "every RRSIG verifies");
	zone_free(fresh);
	zone_free(z);
}

/* --- renewing signatures in slices --- */

static uint64_t clock_now;
static uint64_t test_clock(void *arg)
{
	(void)arg;
	return clock_now;
}

/* The earliest RRSIG expiration in the zone (absolute, from serial time). */
static uint64_t min_expiration(const struct zone *z, uint64_t now, int *unsigned_sets)
{
	uint64_t m = UINT64_MAX;
	for (uint32_t h = 0; h <= z->bucket_mask; h++)
		for (const struct zone_node *n = z->buckets[h]; n; n = n->hash_next)
			for (uint16_t j = 0; j < n->rrset_count; j++) {
				const struct rrset *s = &n->rrsets[j];
				if (!s->sig[0].len) {
					(*unsigned_sets)++;
					continue;
				}
				uint64_t e = now + (uint64_t)(int32_t)(wire_get_u32(s->sig[0].data + 8) - (uint32_t)now);
				if (e < m)
					m = e;
			}
	return m;
}

static void test_resign(const char *key_path, ldns_rr_list *keys)
{
	const uint64_t T0 = 1700000000ull, DAY = 86400;
	struct config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.sig_validity_s = 14 * DAY;
	cfg.sig_inception_s = 3600;
	cfg.sig_refresh_s = 7 * DAY;
	char err[256];
	struct signer *s = signer_new("example.com", key_path, &cfg, false, err);
	clock_now = T0;
	signer_set_clock(s, test_clock, NULL);
	model_init();
	for (int i = 0; i < 300; i++) {
		char owner[64];
		snprintf(owner, sizeof(owner), "_acme-challenge.r%d.example.com", i);
		model_add(owner, RR_TXT, 60, "\x02ok", 3);
	}
	struct zone *z = build_fresh(s);
	is_int(z->expires_at, T0 + 7 * DAY, "built at T0: refresh point T0 + validity - refresh");

	/* Not due yet: a pass renews nothing and keeps the refresh point. */
	struct zone_resign r;
	zone_resign_begin(z, &r);
	int rc, steps = 0;
	while ((rc = zone_resign_step(z, signer_hook(s), &r, 50, clock_now, err)) == 0)
		steps++;
	is_int(rc, 1, "the pass completes");
	is_int(r.renewed, 0, "nothing due: nothing renewed");
	is_int(z->expires_at, T0 + 7 * DAY, "refresh point unchanged");

	/* Past the refresh point: renewed in slices of at most 50 signatures,
	 * with an UPDATE patched in between two slices. */
	clock_now = T0 + 7 * DAY + 3600;
	zone_resign_begin(z, &r);
	ok(z->resigning && z->expires_at == T0 + 7 * DAY,
	   "during the pass: marked, the old refresh point kept");
	steps = 0;
	bool patched = false;
	while ((rc = zone_resign_step(z, signer_hook(s), &r, 50, clock_now, err)) == 0) {
		steps++;
		if (steps == 3 && !patched) {
			model_add("_acme-challenge.mid.example.com", RR_TXT, 60, "\x03new", 4);
			model_bump_serial();
			const char *t[] = { "_acme-challenge.mid.example.com", "example.com" };
			struct zone_patch *p = patch_for(z, t, 2);
			patched = zone_patch_prepare(p, signer_hook(s), err) == 0;
			zone_patch_apply(p);
			zone_patch_free(p);
		}
	}
	is_int(rc, 1, "the pass completes (%s)", err);
	ok(patched, "an UPDATE was patched in mid-pass");

	ok(steps >= 6, "in slices: %d steps for %llu renewals", steps + 1,
	   (unsigned long long)r.renewed);
	ok(r.renewed >= 600, "every signature renewed (%llu)", (unsigned long long)r.renewed);
	int unsigned_sets = 0;
	uint64_t exp = min_expiration(z, clock_now, &unsigned_sets);
	is_int(unsigned_sets, 0, "every RRset signed");
	is_int(exp, clock_now + 14 * DAY, "every signature expires validity after now");
	is_int(z->expires_at, clock_now + 7 * DAY, "refresh point: now + validity - refresh");
	ok(!z->resigning, "the pass is over");
	verify_time = (time_t)clock_now;
	is_int(verify_all(z, keys), 0, "every RRSIG verifies at the new time (ldns)");
	verify_time = 0;
	struct zone *fresh = build_fresh(s);
	char why[256];
	const char *d = differ(z, fresh, why, sizeof(why));
	ok(d == NULL, "records equal to the zone built whole (%s)", d ? d : "equal");
	zone_free(fresh);

	/* A transfer holds the snapshot: a step does nothing and says to wait
	 * (not "more remains", which the caller re-arms at once: a spin). */
	clock_now += 8 * DAY;   /* past the new refresh point */
	zone_resign_begin(z, &r);
	struct zone *held = zone_hold(z);
	is_int(zone_resign_step(z, signer_hook(s), &r, 50, clock_now, err), ZONE_RESIGN_WAIT,
	       "held by a transfer: the step waits");
	is_int(r.renewed + r.kept, 0, "held: nothing looked at");
	ok(z->resigning, "held: the pass goes on");
	zone_free(held);
	while ((rc = zone_resign_step(z, signer_hook(s), &r, 50, clock_now, err)) == 0)
		;
	is_int(rc, 1, "let go: the pass completes (%s)", err);
	ok(r.renewed > 0, "let go: the due signatures renewed");
	zone_free(z);
	signer_free(s);
}

/* --- a presigned copy (a secondary's): every record is data --- */

/*
 * The copy holds what a primary sends: every record of the primary's
 * snapshot, NSEC, DNSKEY and each RRSIG as a record of its own, in the
 * order given (which RRSIG wins when several cover one RRset depends on it).
 */
struct crec {
	uint8_t owner[DNAME_MAX];
	uint16_t type;
	uint32_t ttl;
	uint16_t len;
	uint8_t rd[256];
};

#define COPY_MAX 2048
static struct crec copy_v[2][COPY_MAX];
static size_t copy_n[2];

static void copy_push(int c, const uint8_t *owner, uint16_t type, uint32_t ttl,
                      const struct rdata *rd)
{
	if (copy_n[c] == COPY_MAX || rd->len > sizeof(copy_v[c][0].rd))
		abort();
	struct crec *r = &copy_v[c][copy_n[c]++];
	memcpy(r->owner, owner, dname_len(owner));
	r->type = type;
	r->ttl = ttl;
	r->len = rd->len;
	memcpy(r->rd, rd->data, rd->len);
}

/* Copy c := the records of the primary's snapshot, as a transfer sends them. */
static void copy_export(int c, const struct zone *z)
{
	copy_n[c] = 0;
	for (uint32_t h = 0; h <= z->bucket_mask; h++)
		for (const struct zone_node *n = z->buckets[h]; n; n = n->hash_next)
			for (uint16_t j = 0; j < n->rrset_count; j++) {
				const struct rrset *s = &n->rrsets[j];
				for (uint16_t i = 0; i < s->count; i++)
					copy_push(c, n->name, s->type, s->ttl, &s->rr[i]);
				if (s->sig[0].len)
					copy_push(c, n->name, RR_RRSIG, s->ttl, &s->sig[0]);
			}
}

static struct zone *copy_build(int c)
{
	struct zone_builder *b = zone_builder_new(name("example.com"));
	zone_builder_set_presigned(b);
	for (size_t i = 0; i < copy_n[c]; i++)
		if (zone_builder_add(b, copy_v[c][i].owner, copy_v[c][i].type, copy_v[c][i].ttl,
		                     copy_v[c][i].rd, copy_v[c][i].len) < 0)
			abort();
	struct diag d;
	diag_init(&d);
	struct zone *z = zone_builder_finish(b, NULL, "copy", &d);
	for (size_t i = 0; i < d.n; i++)
		printf("# %s\n", d.msgs[i]);
	diag_clear(&d);
	return z;
}

/* A name's records in copy c, in order, as bytes (to tell changed names). */
static size_t copy_name_bytes(int c, const uint8_t *owner, uint8_t *out, size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; i < copy_n[c]; i++) {
		const struct crec *r = &copy_v[c][i];
		if (!dname_equal(r->owner, owner) || k + 8 + r->len > cap)
			continue;
		wire_set_u16(out + k, r->type);
		wire_set_u32(out + k + 2, r->ttl);
		wire_set_u16(out + k + 6, r->len);
		memcpy(out + k + 8, r->rd, r->len);
		k += 8 + (size_t)r->len;
	}
	return k;
}

/* The names whose records differ between copy 0 (old) and 1 (new). */
static size_t copy_changed(const uint8_t **names, size_t cap)
{
	static uint8_t a[16384], b[16384];
	size_t n = 0;
	for (int c = 0; c < 2; c++)
		for (size_t i = 0; i < copy_n[c]; i++) {
			const uint8_t *owner = copy_v[c][i].owner;
			bool seen = false;
			for (size_t k = 0; k < n && !seen; k++)
				seen = dname_equal(names[k], owner);
			if (seen)
				continue;
			size_t al = copy_name_bytes(0, owner, a, sizeof(a));
			size_t bl = copy_name_bytes(1, owner, b, sizeof(b));
			if ((al != bl || memcmp(a, b, al) != 0) && n < cap)
				names[n++] = owner;
		}
	return n;
}

/* The patch a secondary makes: each changed name with all its new records. */
static struct zone_patch *copy_patch(struct zone *z, const uint8_t **names, size_t n)
{
	struct zone_patch *p = zone_patch_new(z);
	for (size_t k = 0; k < n; k++) {
		if (zone_patch_name(p, names[k]) <= 0)
			continue;
		for (size_t i = 0; i < copy_n[1]; i++)
			if (dname_equal(copy_v[1][i].owner, names[k]) &&
			    zone_patch_add(p, copy_v[1][i].owner, copy_v[1][i].type, copy_v[1][i].ttl,
			                   copy_v[1][i].rd, copy_v[1][i].len) < 0)
				printf("# zone_patch_add refused a record\n");
	}
	return p;
}

/*
 * What a copy sees besides the primary's changes: an RRSIG re-made (other
 * bytes), a second RRSIG of an RRset (the last given wins), one taken away.
 */
static void copy_mutate(void)
{
	size_t sigs[COPY_MAX], k = 0;
	for (size_t i = 0; i < copy_n[1]; i++)
		if (copy_v[1][i].type == RR_RRSIG)
			sigs[k++] = i;
	if (!k)
		return;
	struct crec *r = &copy_v[1][sigs[rnd((uint32_t)k)]];
	switch (rnd(4)) {
	case 0:
		r->rd[r->len - 1] ^= (uint8_t)(1 + rnd(255));
		break;
	case 1: {
		struct crec extra = *r;
		extra.rd[extra.len - 2] ^= 0x5a;
		copy_v[1][copy_n[1]++] = extra;
		break;
	}
	case 3:
		/* The zone cut's DS changes (a key rollover below). */
		for (size_t i = 0; i < copy_n[1]; i++)
			if (copy_v[1][i].type == RR_DS)
				copy_v[1][i].rd[copy_v[1][i].len - 1] ^= (uint8_t)(1 + rnd(255));
		break;
	default:
		/* Drop it only where another RRSIG of the same RRset stays. */
		for (size_t i = 0; i < copy_n[1]; i++) {
			const struct crec *o = &copy_v[1][i];
			if (o != r && o->type == RR_RRSIG && dname_equal(o->owner, r->owner) &&
			    wire_get_u16(o->rd) == wire_get_u16(r->rd)) {
				*r = copy_v[1][--copy_n[1]];
				break;
			}
		}
	}
}

/* A zone cut with glue and a DS: the copy patches its NSEC and DS as the
 * names around it come and go. */
static void model_add_cut(void)
{
	const uint8_t *ns = name("ns.sub.example.com");
	model_add("sub.example.com", RR_NS, 3600, ns, dname_len(ns));
	model_add("ns.sub.example.com", RR_A, 3600, "\xc0\x00\x02\x63", 4);
	uint8_t ds[36] = { 0x30, 0x39, 13, 2 };
	for (int i = 4; i < 36; i++)
		ds[i] = (uint8_t)i;
	model_add("sub.example.com", RR_DS, 3600, ds, sizeof(ds));
}

static void test_presigned(struct signer *s)
{
	model_init();
	model_add_cut();
	struct zone *primary = build_fresh(s);
	copy_export(0, primary);
	struct zone *z = copy_build(0);
	ok(z && zone_is_signed(z) && z->presigned && z->nsec_complete, "a presigned copy");
	int steps = 300, refused = 0, mismatches = 0, diffs = 0, covering = 0;
	int joined = 0, left = 0, sig_only = 0, cut_changed = 0;
	const uint8_t *sub = name("sub.example.com");
	uint8_t sub_name[DNAME_MAX];
	memcpy(sub_name, sub, dname_len(sub));
	char err[256];
	exact_sigs = true;
	for (int step = 0; step < steps && z; step++) {
		if (rnd(4) == 0) {
			/* The copy's own: signatures change, the names stay. */
			copy_n[1] = copy_n[0];
			memcpy(copy_v[1], copy_v[0], copy_n[0] * sizeof(copy_v[0][0]));
			copy_mutate();
			sig_only++;
		} else {
			/* The primary changes (patched, so only what changed is signed
			 * anew, as a signing primary does) and the copy follows. */
			const char *touched[16];
			size_t n = random_change(touched);
			struct zone_patch *pp = patch_for(primary, touched, n);
			if (zone_patch_prepare(pp, signer_hook(s), err) == 0) {
				zone_patch_apply(pp);
			} else {
				zone_free(primary);
				primary = build_fresh(s);
			}
			zone_patch_free(pp);
			copy_export(1, primary);
		}
		const uint8_t *names[COPY_MAX];
		size_t n = copy_changed(names, COPY_MAX);
		uint32_t nsec_before = z->nsec_count;
		for (size_t k = 0; k < n; k++)
			cut_changed += dname_equal(names[k], sub_name);
		struct zone_patch *p = copy_patch(z, names, n);
		int rc = zone_patch_prepare(p, NULL, err);
		if (rc < 0) {
			if (!refused++)
				printf("# step %d: prepare %d (%s)\n", step, rc, err);
			zone_patch_free(p);
			break;
		}
		struct zone *before = copy_build(0);
		uint8_t *pd = NULL;
		size_t pl = 0;
		int prc = zone_diff_patch(z, p, &pd, &pl);
		zone_patch_apply(p);
		zone_patch_free(p);
		joined += z->nsec_count > nsec_before;
		left += z->nsec_count < nsec_before;
		/* The new copy becomes the old one. */
		copy_n[0] = copy_n[1];
		memcpy(copy_v[0], copy_v[1], copy_n[1] * sizeof(copy_v[0][0]));
		struct zone *fresh = copy_build(0);
		check_patched(step, z, before, fresh, prc, pd, pl,
		              zone_serial(before) != zone_serial(fresh), &diffs, &mismatches);
		for (int q = 0; q < 8; q++) {
			const uint8_t *probe = name(q & 1 ? "nx.q.example.com" : pool[rnd(POOL)]);
			const struct zone_node *x = zone_nsec_covering(z, probe);
			const struct zone_node *y = zone_nsec_covering(fresh, probe);
			if (!x || !y || !dname_equal(x->name, y->name))
				covering++;
		}
		zone_free(fresh);
		if (mismatches)
			break;
	}
	exact_sigs = false;
	is_int(refused, 0, "every change to the copy is one a patch makes");
	is_int(mismatches, 0, "patched copy == copy built whole, RRSIG bytes included, after %d "
	       "changes", steps);
	is_int(diffs, 0, "the patch's IXFR difference equals the whole builds', RRSIGs included");
	is_int(covering, 0, "the covering NSEC of probe names is the same");
	ok(joined > 10 && left > 10 && sig_only > 10,
	   "names joined (%d) and left (%d) the NSEC order; %d signature-only changes", joined, left,
	   sig_only);
	ok(cut_changed > 5, "the zone cut's NSEC or DS changed %d times", cut_changed);
	const struct zone_node *cut = zone_find(z, sub_name, dname_len(sub_name));
	const struct zone_node *glue = zone_find(z, name("ns.sub.example.com"),
	                                         dname_len(name("ns.sub.example.com")));
	ok(cut && (cut->flags & ZONE_NODE_DELEGATION) && glue && (glue->flags & ZONE_NODE_GLUE) &&
	   glue->cut == cut, "still a cut, with its glue below");
	zone_free(z);
	zone_free(primary);
}

/* What a patch of a copy does not do: -EAGAIN (built whole instead). */
static void test_presigned_refuse(struct signer *s)
{
	model_init();
	struct zone *primary = build_fresh(s);
	copy_export(0, primary);
	zone_free(primary);
	struct zone *z = copy_build(0);
	char err[256];
	static uint8_t www[DNAME_MAX], sub[DNAME_MAX];   /* name() reuses its buffers */
	memcpy(www, name("www.example.com"), dname_len(name("www.example.com")));
	memcpy(sub, name("sub.example.com"), dname_len(name("sub.example.com")));
	/* Copies: they outlive the snapshots below. */
	static uint8_t nsec_rd[256], sig_rd[256];
	const struct zone_node *n = zone_find(z, www, dname_len(www));
	struct rdata nsec = zone_node_rrset(n, RR_NSEC)->rr[0], sig = zone_node_rrset(n, RR_A)->sig[0];
	memcpy(nsec_rd, nsec.data, nsec.len);
	memcpy(sig_rd, sig.data, sig.len);
	nsec.data = nsec_rd;
	sig.data = sig_rd;
	static const uint8_t a1[4] = { 192, 0, 2, 9 };
	struct {
		const char *what;
		bool with_nsec, sig_of_nothing, delegation;
	} cases[] = {
		{ "records without an NSEC", false, false, false },
		{ "an RRSIG that covers no RRset", true, true, false },
		{ "a delegation beside other data", true, false, true },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct zone_patch *p = zone_patch_new(z);
		zone_patch_name(p, www);
		zone_patch_add(p, www, RR_A, 300, a1, 4);
		if (cases[c].with_nsec)
			zone_patch_add(p, www, RR_NSEC, 300, nsec.data, nsec.len);
		if (cases[c].sig_of_nothing) {
			uint8_t rd[256];
			memcpy(rd, sig.data, sig.len);
			wire_set_u16(rd, RR_MX);
			zone_patch_add(p, www, RR_RRSIG, 300, rd, sig.len);
		}
		if (cases[c].delegation) {
			const uint8_t *ns = name("ns.elsewhere.net");
			zone_patch_add(p, www, RR_NS, 300, ns, (uint16_t)dname_len(ns));
		}
		is_int(zone_patch_prepare(p, NULL, err), -EAGAIN, "copy: -EAGAIN for %s",
		       cases[c].what);
		zone_patch_free(p);
	}
	/* A cut that loses its NS: the names below would stop being glue. */
	zone_free(z);
	model_init();
	model_add_cut();
	primary = build_fresh(s);
	copy_export(0, primary);
	zone_free(primary);
	z = copy_build(0);
	struct zone_patch *p = zone_patch_new(z);
	zone_patch_name(p, sub);
	for (size_t i = 0; i < copy_n[0]; i++)
		if (dname_equal(copy_v[0][i].owner, sub) && copy_v[0][i].type != RR_NS)
			zone_patch_add(p, sub, copy_v[0][i].type, copy_v[0][i].ttl, copy_v[0][i].rd,
			               copy_v[0][i].len);
	is_int(zone_patch_prepare(p, NULL, err), -EAGAIN, "copy: -EAGAIN for a cut without NS");
	zone_patch_free(p);
	/* ... and with it, its records are data like any other. */
	p = zone_patch_new(z);
	zone_patch_name(p, sub);
	for (size_t i = 0; i < copy_n[0]; i++)
		if (dname_equal(copy_v[0][i].owner, sub))
			zone_patch_add(p, sub, copy_v[0][i].type, copy_v[0][i].ttl, copy_v[0][i].rd,
			               copy_v[0][i].len);
	is_int(zone_patch_prepare(p, NULL, err), 0, "copy: a cut given as it is is patched");
	zone_patch_free(p);

	/* Held by an outgoing transfer: patched all the same (test_held). */
	struct zone *held = zone_hold(z);
	p = zone_patch_new(z);
	zone_patch_name(p, www);
	zone_patch_add(p, www, RR_A, 300, a1, 4);
	zone_patch_add(p, www, RR_NSEC, 300, nsec.data, nsec.len);
	is_int(zone_patch_prepare(p, NULL, err), 0, "copy held by a transfer: patched");
	zone_patch_free(p);
	zone_free(held);
	/* Malformed rdata never enters a snapshot. */
	p = zone_patch_new(z);
	zone_patch_name(p, www);
	is_int(zone_patch_add(p, www, RR_A, 300, a1, 3), -EBADMSG, "a 3-byte A: -EBADMSG");
	zone_patch_free(p);
	zone_free(z);
	/* A copy built with a name that holds records but no NSEC is built whole. */
	copy_push(0, name("bare.example.com"), RR_A, 300, &(struct rdata){ 4, a1 });
	z = copy_build(0);
	ok(z && !z->nsec_complete, "a copy with a name outside the NSEC order");
	p = zone_patch_new(z);
	zone_patch_name(p, www);
	zone_patch_add(p, www, RR_A, 300, a1, 4);
	zone_patch_add(p, www, RR_NSEC, 300, nsec.data, nsec.len);
	is_int(zone_patch_prepare(p, NULL, err), -EAGAIN, "... is not patched: -EAGAIN");
	zone_patch_free(p);
	zone_free(z);
	/* A zone we sign takes no RRSIG as data. */
	model_init();
	z = build_fresh(s);
	p = zone_patch_new(z);
	zone_patch_name(p, www);
	is_int(zone_patch_add(p, www, RR_RRSIG, 300, sig.data, sig.len), -EINVAL,
	       "an RRSIG given to a zone we sign: -EINVAL");
	zone_patch_free(p);
	zone_free(z);
}

int main(void)
{
	char dir[64], key_path[128], cmd[256];
	snprintf(dir, sizeof(dir), "/tmp/test_zone_patch.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(key_path, sizeof(key_path), "%s/k.pem", dir);
	snprintf(cmd, sizeof(cmd),
	         "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out %s 2>/dev/null",
	         key_path);
	if (system(cmd) != 0 || chmod(key_path, 0600) != 0)
		return 1;
	char err[256];
	struct signer *s = signer_new("example.com", key_path, NULL, true, err);
	if (!s) {
		printf("# %s\n", err);
		return 1;
	}
	size_t klen;
	const uint8_t *dnskey = signer_dnskey(s, &klen);
	ldns_rr_list *keys = ldns_rr_list_new();
	ldns_rr_list_push_rr(keys, to_ldns(name("example.com"), RR_DNSKEY, 3600, dnskey,
	                                   (uint16_t)klen));

	test_random(s, keys);
	test_abandon_and_refuse(s);
	test_bulk(s, keys);
	test_held(s, keys);
	test_delegation(s, keys);
	test_resign(key_path, keys);
	test_presigned(s);
	test_presigned_refuse(s);

	ldns_rr_list_deep_free(keys);
	signer_free(s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return done_testing();
}
