/* SPDX-License-Identifier: MIT */
/*
 * Snapshot differences (see zone_diff.h).  Node by node: the records of
 * the same name in both snapshots are sorted and merged, so the cost is
 * linear in the zone (plus a sort per name) and needs memory only for the
 * difference and one name's records.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/geo_sets.h"
#include "core/zone/zone.h"
#include "core/zone/zone_diff.h"
#include "core/zone/zone_internal.h"
#include "core/zone/zone_patch.h"

struct rec {
	uint16_t type;
	uint32_t ttl;
	const struct rdata *rd;
};

struct recs {
	struct rec *v;
	size_t n, cap;
};

struct out {
	uint8_t *p;
	size_t len, cap;
	uint32_t count;
	int err;
};

static void recs_push(struct recs *r, uint16_t type, uint32_t ttl, const struct rdata *rd,
                      int *err)
{
	if (*err)
		return;
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 32;
		struct rec *nv = realloc(r->v, nc * sizeof(*nv));
		if (!nv) {
			*err = -ENOMEM;
			return;
		}
		r->v = nv;
		r->cap = nc;
	}
	r->v[r->n++] = (struct rec){ type, ttl, rd };
}

static void push_rrset(struct recs *r, const struct rrset *s, int *err)
{
	for (uint16_t i = 0; i < s->count; i++)
		recs_push(r, s->type, s->ttl, &s->rr[i], err);
	for (unsigned k = 0; k < rrset_sig_count(s); k++)
		recs_push(r, RR_RRSIG, s->ttl, &s->sig[k], err);
}

/* A name's records as a transfer sends them, but for the apex SOA itself. */
static void node_records(const struct rrset *soa, const struct zone_node *n, struct recs *r,
                         int *err)
{
	r->n = 0;
	if (!n)
		return;
	for (uint16_t i = 0; i < n->rrset_count; i++) {
		const struct rrset *s = &n->rrsets[i];
		if (s == soa) {
			for (unsigned k = 0; k < rrset_sig_count(s); k++)
				recs_push(r, RR_RRSIG, s->ttl, &s->sig[k], err);
			continue;
		}
		push_rrset(r, s, err);
	}
	if (n->geo) {
		const uint16_t types[3] = { RR_A, RR_AAAA, RR_HTTPS };
		for (int t = 0; t < 3; t++) {
			const struct rrset *fb = geo_sets_fallback(n->geo, types[t]);
			if (fb)
				push_rrset(r, fb, err);
		}
	}
}

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	if (x->ttl != y->ttl)
		return x->ttl < y->ttl ? -1 : 1;
	size_t n = x->rd->len < y->rd->len ? x->rd->len : y->rd->len;
	int c = memcmp(x->rd->data, y->rd->data, n);
	if (c)
		return c;
	return x->rd->len < y->rd->len ? -1 : x->rd->len > y->rd->len;
}

static void out_bytes(struct out *o, const void *p, size_t n)
{
	if (o->err || n == 0)
		return;
	if (o->len + n > o->cap) {
		size_t nc = o->cap ? o->cap : 1024;
		while (nc < o->len + n)
			nc *= 2;
		uint8_t *np = realloc(o->p, nc);
		if (!np) {
			o->err = -ENOMEM;
			return;
		}
		o->p = np;
		o->cap = nc;
	}
	memcpy(o->p + o->len, p, n);
	o->len += n;
}

static void out_rr(struct out *o, const uint8_t *owner, uint16_t type, uint32_t ttl,
                   const struct rdata *rd)
{
	uint8_t f[8];
	out_bytes(o, owner, dname_len(owner));
	wire_set_u16(f, type);
	wire_set_u32(f + 2, ttl);
	wire_set_u16(f + 6, rd->len);
	out_bytes(o, f, sizeof(f));
	out_bytes(o, rd->data, rd->len);
	o->count++;
}

/* Records only in `a` go to `o` (both sorted). */
static void only_in(const struct recs *a, const struct recs *b, const uint8_t *owner,
                    struct out *o)
{
	size_t j = 0;
	for (size_t i = 0; i < a->n; i++) {
		while (j < b->n && rec_cmp(&b->v[j], &a->v[i]) < 0)
			j++;
		if (j < b->n && rec_cmp(&b->v[j], &a->v[i]) == 0)
			continue;
		out_rr(o, owner, a->v[i].type, a->v[i].ttl, a->v[i].rd);
	}
}

static void diff_node(const struct rrset *old_soa, const struct zone_node *on,
                      const struct rrset *new_soa, const struct zone_node *nn, struct recs *ro,
                      struct recs *rn, struct out *dels, struct out *adds, int *err)
{
	node_records(old_soa, on, ro, err);
	node_records(new_soa, nn, rn, err);
	if (*err)
		return;
	if (ro->n > 1)
		qsort(ro->v, ro->n, sizeof(*ro->v), rec_cmp);
	if (rn->n > 1)
		qsort(rn->v, rn->n, sizeof(*rn->v), rec_cmp);
	const uint8_t *owner = nn ? nn->name : on->name;
	only_in(ro, rn, owner, dels);
	only_in(rn, ro, owner, adds);
}

/* The blob: header, then the deletions and the additions (consumed). */
static int finish(uint32_t from, uint32_t to, struct out *dels, struct out *adds, int err,
                  uint8_t **blob, size_t *blob_len)
{
	struct out o = { 0 };
	uint8_t h[ZONE_DIFF_HEADER];
	memcpy(h, "ZD1", 4);
	wire_set_u32(h + 4, from);
	wire_set_u32(h + 8, to);
	wire_set_u32(h + 12, dels->count);
	wire_set_u32(h + 16, adds->count);
	out_bytes(&o, h, sizeof(h));
	out_bytes(&o, dels->p, dels->len);
	out_bytes(&o, adds->p, adds->len);
	if (!err)
		err = dels->err ? dels->err : adds->err ? adds->err : o.err;
	free(dels->p);
	free(adds->p);
	if (err) {
		free(o.p);
		return err;
	}
	*blob = o.p;
	*blob_len = o.len;
	return 0;
}

int zone_diff(const struct zone *old, const struct zone *new, uint8_t **blob, size_t *blob_len)
{
	if (old->apex_len != new->apex_len || memcmp(old->apex, new->apex, old->apex_len) != 0)
		return -EINVAL;
	struct out dels = { 0 }, adds = { 0 };
	struct recs ro = { 0 }, rn = { 0 };
	int err = 0;
	/* The SOAs lead their sections, as in an IXFR. */
	out_rr(&dels, old->apex, RR_SOA, old->soa->ttl, &old->soa->rr[0]);
	out_rr(&adds, new->apex, RR_SOA, new->soa->ttl, &new->soa->rr[0]);
	for (const struct zone_node *n = zone_node_next(new, NULL); n && !err;
	     n = zone_node_next(new, n))
		diff_node(old->soa, zone_find(old, n->name, n->name_len), new->soa, n, &ro, &rn, &dels,
		          &adds, &err);
	for (const struct zone_node *n = zone_node_next(old, NULL); n && !err;
	     n = zone_node_next(old, n))
		if (!zone_find(new, n->name, n->name_len))
			diff_node(old->soa, n, new->soa, NULL, &ro, &rn, &dels, &adds, &err);
	free(ro.v);
	free(rn.v);
	return finish(old->serial, new->serial, &dels, &adds, err, blob, blob_len);
}

struct patch_walk {
	const struct rrset *old_soa, *new_soa;
	struct recs ro, rn;
	struct out dels, adds;
	int err;
};

static int patch_change(void *arg, const struct zone_node *before, const struct zone_node *after)
{
	struct patch_walk *w = arg;
	diff_node(w->old_soa, before, w->new_soa, after, &w->ro, &w->rn, &w->dels, &w->adds,
	          &w->err);
	return w->err;
}

int zone_diff_patch(const struct zone *old, const struct zone_patch *p, uint8_t **blob,
                    size_t *blob_len)
{
	struct patch_walk w = { .old_soa = old->soa, .new_soa = zone_patch_soa(p) };
	out_rr(&w.dels, old->apex, RR_SOA, old->soa->ttl, &old->soa->rr[0]);
	out_rr(&w.adds, old->apex, RR_SOA, w.new_soa->ttl, &w.new_soa->rr[0]);
	int err = zone_patch_foreach_change(p, patch_change, &w);
	free(w.ro.v);
	free(w.rn.v);
	return finish(old->serial, zone_patch_serial(p), &w.dels, &w.adds, err ? err : w.err, blob,
	              blob_len);
}

int zone_diff_header(const uint8_t *blob, size_t len, uint32_t *from, uint32_t *to,
                     uint32_t *n_del, uint32_t *n_add)
{
	if (len < ZONE_DIFF_HEADER || memcmp(blob, "ZD1", 4) != 0)
		return -EBADMSG;
	*from = wire_get_u32(blob + 4);
	*to = wire_get_u32(blob + 8);
	*n_del = wire_get_u32(blob + 12);
	*n_add = wire_get_u32(blob + 16);
	return 0;
}

/* Reads one record at *pos; -EBADMSG when it runs out of the blob. */
static int read_rr(const uint8_t *blob, size_t len, size_t *pos, struct zone_diff_rr *rr)
{
	size_t p = *pos;
	size_t name = 0;
	for (;;) {
		if (p + name >= len || name > DNAME_MAX)
			return -EBADMSG;
		uint8_t l = blob[p + name];
		if (l > 63)
			return -EBADMSG;
		name += 1 + l;
		if (l == 0)
			break;
	}
	if (name > DNAME_MAX || p + name + 8 > len)
		return -EBADMSG;
	rr->owner = blob + p;
	p += name;
	rr->type = wire_get_u16(blob + p);
	rr->ttl = wire_get_u32(blob + p + 2);
	rr->rdlen = wire_get_u16(blob + p + 6);
	p += 8;
	if (p + rr->rdlen > len)
		return -EBADMSG;
	rr->rdata = blob + p;
	*pos = p + rr->rdlen;
	return 0;
}

int zone_diff_walk(const uint8_t *blob, size_t len, zone_diff_fn fn, void *arg)
{
	uint32_t from, to, n_del, n_add;
	if (zone_diff_header(blob, len, &from, &to, &n_del, &n_add) < 0 || n_del == 0 || n_add == 0)
		return -EBADMSG;
	/* Check the whole blob first: a caller never sees half a difference. */
	size_t pos = ZONE_DIFF_HEADER;
	struct zone_diff_rr rr;
	for (uint64_t i = 0; i < (uint64_t)n_del + n_add; i++)
		if (read_rr(blob, len, &pos, &rr) < 0)
			return -EBADMSG;
	if (pos != len)
		return -EBADMSG;
	pos = ZONE_DIFF_HEADER;
	for (uint64_t i = 0; i < (uint64_t)n_del + n_add; i++) {
		read_rr(blob, len, &pos, &rr);
		rr.add = i >= n_del;
		int r = fn(arg, &rr);
		if (r)
			return r;
	}
	return 0;
}
