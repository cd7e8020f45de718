/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * What the zone-patch tests share (header-only, like check.h): the model of
 * a zone's records, whole builds and patches from it, and the comparison
 * of a patched snapshot with a snapshot built whole (record by record,
 * NSEC chain and IXFR difference included, every RRSIG verified with
 * ldns).  test_zone_patch.c patches signed snapshots; test_zone_patch_copy.c
 * patches a secondary's presigned copy.
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

static inline void soa_rdata(uint8_t *out, uint16_t *len)
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

static inline void model_add(const char *owner, uint16_t type, uint32_t ttl, const void *rd,
                             size_t len)
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
	snprintf(m->owner, sizeof(m->owner), "%.*s", (int)sizeof(m->owner) - 1, owner);
	m->type = type;
	m->ttl = ttl;
	memcpy(m->rd, rd, len);
	m->len = (uint16_t)len;
}

static inline void model_del_at(size_t i)
{
	model[i] = model[--n_model];
}

static inline void model_bump_serial(void)
{
	serial++;
	for (size_t i = 0; i < n_model; i++)
		if (model[i].type == RR_SOA)
			soa_rdata(model[i].rd, &model[i].len);
}

static inline void model_init(void)
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

static inline struct zone *build_fresh(struct signer *s)
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
static inline struct zone_patch *patch_for(struct zone *z, const char **touched, size_t n)
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
static inline int verify_all(const struct zone *z, ldns_rr_list *keys)
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

static inline int nodes_in(const struct zone *z)
{
	int k = 0;
	for (uint32_t h = 0; h <= z->bucket_mask; h++)
		for (const struct zone_node *n = z->buckets[h]; n; n = n->hash_next)
			k++;
	return k;
}

/* Why a and b differ (first difference), or NULL when equal. */
static inline const char *differ(const struct zone *a, const struct zone *b, char *why, size_t cap)
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
static inline int diff_line(void *arg, const struct zone_diff_rr *rr)
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

static inline int line_cmp(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* Whether two differences hold the same records (RRSIGs aside) and serials. */
static inline bool same_diff(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
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
static inline void check_patched(int step, const struct zone *z, struct zone *before,
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
static inline uint32_t rnd(uint32_t n)
{
	rng = rng * 1103515245u + 12345u;
	return (rng >> 8) % n;
}

/* One random change to the model; the names it touched go to `touched`. */
static inline size_t random_change(const char **touched)
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
