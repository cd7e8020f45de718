/* SPDX-License-Identifier: MIT */
/*
 * Answer sets and the RRset for a decision.
 *
 * For each family (A, AAAA) the candidates are the rule's, in config order
 * (positions 0..n-1).  singles[k] answers with candidate k alone; the
 * unordered pair {i, j}, i < j, sits at pairs[j·(j−1)/2 + i] (a triangular
 * index: every pair once, no gaps).  The pair lookup stays behind
 * geo_sets_choose so the layout can change when site counts grow (n = 64
 * already means 2016 pairs to sign per family).
 *
 * HTTPS (when the geo name has `https`): the candidates are the rule's
 * GEO_ANY family (sites with either address).  Order matters there, so
 * the sets are per ordered pair (nearest i, second j), i != j, at
 * ordered[(t·n + i)·n + j], t = 0 when the rule answers A with the nearest
 * alone (ttl_single) and 1 when with both (ttl_pair): 7 sites make 2·42
 * such sets, plus 7 for "only this site is alive".
 */
#include "core/zone/geo_sets.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/conf/config.h"
#include "core/conf/metrics.h"
#include "core/conf/config.h"
#include "core/geo/geo_rule.h"
#include "core/geo/geo_sites.h"
#include "core/wire/arena.h"
#include "core/wire/dname.h"
#include "core/wire/packet.h"
#include "core/wire/rrset.h"
#include "core/zone/svcb.h"
#include "core/zone/zone.h"

struct set_family {
	uint16_t type;
	uint16_t addr_len;       /* 4 or 16 */
	size_t n;                /* candidates */
	struct rrset *singles;   /* n */
	struct rrset **pairs;    /* n·(n−1)/2; NULL until built (see GEO_PRESIGN_MAX) */
};

/* The HTTPS sets; see the top of this file. */
struct https_sets {
	size_t n;                /* GEO_ANY candidates; 0: no `https` */
	struct rdata *first;     /* n: "1 <site k> params" */
	struct rdata *second;    /* n: "2 <site k> params" */
	struct rdata dot;        /* "3 . params" */
	struct rrset *single;    /* n: records 1 and 3 (ttl_single) */
	struct rrset **ordered;  /* 2·n·n; NULL on the diagonal, or until built */
	/* Per candidate, its per-site A and AAAA, encoded for Additional
	 * without [0] and with [1] RRSIGs (geo_sets_link); NULL: none. */
	struct plan_block *(*site_block)[2];
	/* The answer sets encoded the same two ways, parallel to single and
	 * ordered (geo_sets_link, or on first use). */
	struct plan_block *(*single_block)[2];
	struct plan_block *(*ordered_block)[2];
};

/* A and AAAA sets; HTTPS lives apart (GEO_ANY has no address set). */
#define ADDR_FAMILIES 2

struct geo_sets {
	const struct geo_rule *rule;
	struct set_family fam[ADDR_FAMILIES];
	struct https_sets https;
	/* For pairs built on first use; set by geo_sets_attach(). */
	const uint8_t *owner;
	struct arena *arena;
	const struct zone_signer *signer;
	/* Decisions counted per site index ([0] rank 1, [1] rank 2); NULL: not counted. */
	uint64_t **counters;
	size_t n_counters;
	/* What a zone transfer carries for the name, per family (NULL: none). */
	const struct rrset *fallback[GEO_FAMILIES];
	const struct rrset *fallback_https;
};

static size_t pair_index(size_t i, size_t j)
{
	/* i < j */
	return j * (j - 1) / 2 + i;
}

/* The RRset answering candidates i < j, records in canonical order. */
static struct rrset *make_pair(struct arena *a, const struct geo_sets *gs,
                               const struct set_family *f, size_t i, size_t j)
{
	const struct rdata *ri = &f->singles[i].rr[0], *rj = &f->singles[j].rr[0];
	struct rrset *rr = arena_alloc(a, sizeof(*rr));
	struct rdata *rd = arena_alloc(a, 2 * sizeof(*rd));
	if (!rr || !rd)
		return NULL;
	int cmp = memcmp(ri->data, rj->data, f->addr_len);
	rd[0] = cmp <= 0 ? *ri : *rj;
	rd[1] = cmp <= 0 ? *rj : *ri;
	*rr = (struct rrset){ .type = f->type, .count = cmp == 0 ? 1 : 2,
	                      .ttl = geo_rule_ttl(gs->rule, 2), .rr = rd };
	return rr;
}

static int build_family(struct arena *a, const struct geo_sites *sites, struct geo_sets *gs,
                        enum geo_family fam)
{
	struct set_family *f = &gs->fam[fam];
	size_t n = geo_rule_candidates(gs->rule, fam);

	f->type = fam == GEO_IPV4 ? RR_A : RR_AAAA;
	f->addr_len = fam == GEO_IPV4 ? 4 : 16;
	f->n = n;
	if (n == 0)
		return 0;
	f->singles = arena_zalloc(a, n * sizeof(*f->singles));
	if (!f->singles)
		return -ENOMEM;
	if (n > 1) {
		f->pairs = arena_zalloc(a, pair_index(0, n) * sizeof(*f->pairs));
		if (!f->pairs)
			return -ENOMEM;
	}
	for (size_t k = 0; k < n; k++) {
		uint8_t addr[16];
		geo_site_address(sites, geo_rule_candidate_site(gs->rule, fam, k),
		                 fam == GEO_IPV4 ? 4 : 6, addr);
		struct rdata *rd = arena_alloc(a, sizeof(*rd));
		uint8_t *data = arena_memdup(a, addr, f->addr_len);
		if (!rd || !data)
			return -ENOMEM;
		rd->len = f->addr_len;
		rd->data = data;
		f->singles[k] = (struct rrset){ .type = f->type, .count = 1,
		                                .ttl = geo_rule_ttl(gs->rule, 1), .rr = rd };
	}
	if (n > GEO_PRESIGN_MAX)
		return 0;   /* pairs are built on first use */
	for (size_t j = 1; j < n; j++)
		for (size_t i = 0; i < j; i++)
			if (!(f->pairs[pair_index(i, j)] = make_pair(a, gs, f, i, j)))
				return -ENOMEM;
	return 0;
}

/* "PRIO TARGET params" in wire form, in a. */
static int https_rdata(struct arena *a, uint16_t prio, const uint8_t *target,
                       const uint8_t *params, size_t plen, struct rdata *out)
{
	size_t tl = dname_len(target);
	if (2 + tl + plen > 65535)
		return -EINVAL;
	uint8_t *d = arena_alloc(a, 2 + tl + plen);
	if (!d)
		return -ENOMEM;
	d[0] = (uint8_t)(prio >> 8);
	d[1] = (uint8_t)prio;
	memcpy(d + 2, target, tl);
	if (plen)
		memcpy(d + 2 + tl, params, plen);
	out->data = d;
	out->len = (uint16_t)(2 + tl + plen);
	return 0;
}

static struct rrset *make_ordered(struct arena *a, const struct geo_sets *gs, size_t t,
                                  size_t k0, size_t k1)
{
	const struct https_sets *h = &gs->https;
	struct rrset *rr = arena_alloc(a, sizeof(*rr));
	struct rdata *rd = arena_alloc(a, 3 * sizeof(*rd));
	if (!rr || !rd)
		return NULL;
	/* Priorities 1 < 2 < 3 lead the rdata: this is canonical order. */
	rd[0] = h->first[k0];
	rd[1] = h->second[k1];
	rd[2] = h->dot;
	*rr = (struct rrset){ .type = RR_HTTPS, .count = 3,
	                      .ttl = geo_rule_ttl(gs->rule, t ? 2 : 1), .rr = rd };
	return rr;
}

int geo_sets_site_name(const char *site, const char *site_names, const uint8_t *apex,
                       uint8_t out[DNAME_MAX])
{
	char rel[DNAME_MAX * 4 + 2];
	uint8_t head[DNAME_MAX];
	if (snprintf(rel, sizeof(rel), "%s.%s.", site, site_names) >= (int)sizeof(rel))
		return -EINVAL;
	int hl = dname_from_str(rel, head);
	size_t al = dname_len(apex);
	if (hl < 0 || (size_t)hl - 1 + al > DNAME_MAX)
		return -EINVAL;
	memcpy(out, head, (size_t)hl - 1);
	memcpy(out + hl - 1, apex, al);
	dname_lower(out);
	return (int)((size_t)hl - 1 + al);
}

int geo_sets_build_https(struct geo_sets *gs, struct arena *a, const struct geo_sites *sites,
                         const struct config_geo_name *gn, const uint8_t *apex, char err[256])
{
	const struct config_geo_https *cfg = &gn->https;
	struct https_sets *h = &gs->https;
	size_t n = geo_rule_candidates(gs->rule, GEO_ANY);
	if (!cfg->enabled || n == 0)
		return 0;

	/* The SvcParams every record shares, keys ascending: alpn, port, ech. */
	uint8_t params[4096];
	size_t pl = 0;
	if (cfg->n_alpn) {
		size_t at = pl + 2;
		params[pl++] = 0;
		params[pl++] = SVCB_KEY_ALPN;
		pl += 2;
		for (size_t i = 0; i < cfg->n_alpn; i++) {
			size_t l = strlen(cfg->alpn[i]);
			if (l == 0 || l > 255 || pl + 1 + l > sizeof(params))
				goto too_long;
			params[pl++] = (uint8_t)l;
			memcpy(params + pl, cfg->alpn[i], l);
			pl += l;
		}
		params[at] = (uint8_t)((pl - at - 2) >> 8);
		params[at + 1] = (uint8_t)(pl - at - 2);
	}
	if (cfg->has_port) {
		const uint8_t port[6] = { 0, SVCB_KEY_PORT, 0, 2, (uint8_t)(cfg->port >> 8),
		                          (uint8_t)cfg->port };
		memcpy(params + pl, port, sizeof(port));
		pl += sizeof(port);
	}
	if (cfg->ech_len) {
		if (pl + 4 + cfg->ech_len > sizeof(params))
			goto too_long;
		params[pl++] = 0;
		params[pl++] = SVCB_KEY_ECH;
		params[pl++] = (uint8_t)(cfg->ech_len >> 8);
		params[pl++] = (uint8_t)cfg->ech_len;
		memcpy(params + pl, cfg->ech, cfg->ech_len);
		pl += cfg->ech_len;
	}

	h->first = arena_zalloc(a, n * sizeof(*h->first));
	h->second = arena_zalloc(a, n * sizeof(*h->second));
	h->single = arena_zalloc(a, n * sizeof(*h->single));
	h->ordered = arena_zalloc(a, 2 * n * n * sizeof(*h->ordered));
	h->site_block = arena_zalloc(a, n * sizeof(*h->site_block));
	h->single_block = arena_zalloc(a, n * sizeof(*h->single_block));
	h->ordered_block = arena_zalloc(a, 2 * n * n * sizeof(*h->ordered_block));
	if (!h->first || !h->second || !h->single || !h->ordered || !h->site_block ||
	    !h->single_block || !h->ordered_block)
		goto nomem;
	const uint8_t root = 0;
	if (https_rdata(a, 3, &root, params, pl, &h->dot) < 0)
		goto nomem;
	for (size_t k = 0; k < n; k++) {
		uint32_t site = geo_rule_candidate_site(gs->rule, GEO_ANY, k);
		uint8_t target[DNAME_MAX];
		if (geo_sets_site_name(geo_site_name(sites, site), cfg->site_names, apex, target) < 0) {
			snprintf(err, 256, "geo name %s: site \"%s\" does not make a valid name under "
			         "site_names \"%s\"", gn->name, geo_site_name(sites, site),
			         cfg->site_names);
			return -EINVAL;
		}
		if (https_rdata(a, 1, target, params, pl, &h->first[k]) < 0 ||
		    https_rdata(a, 2, target, params, pl, &h->second[k]) < 0)
			goto nomem;
		struct rdata *rd = arena_alloc(a, 2 * sizeof(*rd));
		if (!rd)
			goto nomem;
		rd[0] = h->first[k];
		rd[1] = h->dot;
		h->single[k] = (struct rrset){ .type = RR_HTTPS, .count = 2,
		                               .ttl = geo_rule_ttl(gs->rule, 1), .rr = rd };
	}
	h->n = n;
	if (n > GEO_PRESIGN_MAX)
		return 0;   /* ordered pairs are built on first use */
	for (size_t t = 0; t < 2; t++)
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < n; j++)
				if (i != j && !(h->ordered[(t * n + i) * n + j] = make_ordered(a, gs, t, i, j)))
					goto nomem;
	return 0;
too_long:
	snprintf(err, 256, "geo name %s: the https parameters are too long", gn->name);
	return -EINVAL;
nomem:
	h->n = 0;
	snprintf(err, 256, "out of memory building HTTPS answer sets");
	return -ENOMEM;
}

struct geo_sets *geo_sets_build(struct arena *a, const struct geo_sites *sites,
                                const struct config_geo_name *gn, char err[256])
{
	struct geo_sets *gs = arena_zalloc(a, sizeof(*gs));
	if (!gs) {
		snprintf(err, 256, "out of memory building geo answer sets");
		return NULL;
	}
	gs->rule = geo_rule_new(a, sites, gn, err);
	if (!gs->rule)
		return NULL;
	for (int f = 0; f < ADDR_FAMILIES; f++) {
		if (build_family(a, sites, gs, (enum geo_family)f) < 0) {
			snprintf(err, 256, "out of memory building geo answer sets");
			return NULL;
		}
	}
	return gs;
}

int geo_sets_foreach(struct geo_sets *s, const uint8_t *owner, zone_rrset_fn fn, void *arg)
{
	const struct https_sets *h = &s->https;
	for (size_t k = 0; k < h->n; k++) {
		int r = fn(arg, owner, &h->single[k]);
		if (r)
			return r;
	}
	for (size_t k = 0; h->n && k < 2 * h->n * h->n; k++) {
		if (!h->ordered[k])
			continue;   /* the diagonal, or built on first use */
		int r = fn(arg, owner, h->ordered[k]);
		if (r)
			return r;
	}
	for (int f = 0; f < ADDR_FAMILIES; f++) {
		struct set_family *fam = &s->fam[f];
		for (size_t k = 0; k < fam->n; k++) {
			int r = fn(arg, owner, &fam->singles[k]);
			if (r)
				return r;
		}
		for (size_t k = 0; fam->n > 1 && k < pair_index(0, fam->n); k++) {
			if (!fam->pairs[k])
				continue;   /* built on first use */
			int r = fn(arg, owner, fam->pairs[k]);
			if (r)
				return r;
		}
	}
	return 0;
}

static int family_for(uint16_t type)
{
	if (type == RR_A)
		return GEO_IPV4;
	if (type == RR_AAAA)
		return GEO_IPV6;
	return -1;
}

bool geo_sets_has_type(const struct geo_sets *s, uint16_t type)
{
	if (type == RR_HTTPS)
		return s->https.n > 0;
	int f = family_for(type);

	return f >= 0 && s->fam[f].n > 0;
}

size_t geo_sets_rrset_count(const struct geo_sets *s)
{
	size_t total = s->https.n + 2 * s->https.n * (s->https.n - (s->https.n > 0));

	for (int f = 0; f < ADDR_FAMILIES; f++)
		total += s->fam[f].n + (s->fam[f].n > 1 ? pair_index(0, s->fam[f].n) : 0);
	return total;
}

void geo_sets_attach(struct geo_sets *s, const uint8_t *owner, struct arena *a,
                     const struct zone_signer *signer)
{
	s->owner = owner;
	s->arena = a;
	s->signer = signer;
}

/*
 * A pair's RRset, built (and signed) the first time the rule needs it when
 * the family has too many sites to build every pair ahead.  The first use
 * allocates from the snapshot's arena and signs once; every later query is
 * a lookup.
 */
static const struct rrset *keep_signed(const struct geo_sets *s, struct rrset **slot,
                                       struct rrset *rr)
{
	/* A set made on first use: signed once, then kept in its slot. */
	if (!rr)
		return NULL;
	if (s->signer && s->signer->sign_rrset &&
	    s->signer->sign_rrset(s->signer->ctx, s->owner, rr, s->arena) < 0)
		return NULL;
	*slot = rr;
	return rr;
}

static const struct rrset *pair_get(const struct geo_sets *s, const struct set_family *f,
                                    size_t i, size_t j)
{
	struct rrset **slot = &f->pairs[pair_index(i, j)];
	if (*slot || !s->arena)
		return *slot;
	return keep_signed(s, slot, make_pair(s->arena, s, f, i, j));
}

/* The HTTPS set for nearest k0 and second k1 (ttl index t), built on first use beyond GEO_PRESIGN_MAX. */
static const struct rrset *ordered_get(const struct geo_sets *s, size_t t, size_t k0, size_t k1)
{
	const struct https_sets *h = &s->https;
	struct rrset **slot = &h->ordered[(t * h->n + k0) * h->n + k1];
	if (*slot || !s->arena)
		return *slot;
	return keep_signed(s, slot, make_ordered(s->arena, s, t, k0, k1));
}

/*
 * Encodes the records of addr[0..1] (and their RRSIGs when sigs) owned by
 * `owner`, a name below the apex, as a plan_block (see core/wire/packet.h).
 */
static struct plan_block *make_block(struct arena *a, const uint8_t *owner, const uint8_t *apex,
                                     size_t apex_len, const struct rrset *const addr[2], bool sigs)
{
	size_t prefix = dname_len(owner) - apex_len;
	size_t len = prefix + 2, records = 0;
	for (int t = 0; t < 2; t++) {
		if (!addr[t])
			continue;
		for (uint16_t i = 0; i < addr[t]->count; i++, records++)
			len += 12 + addr[t]->rr[i].len;
		for (unsigned k = 0; sigs && k < rrset_sig_count(addr[t]); k++) {
			len += 12 + addr[t]->sig[k].len;
			records++;
		}
	}
	if (records == 0 || len > 0x3000)
		return NULL;
	len -= 2;   /* the first owner is the prefix and the apex pointer */
	struct plan_block *b = arena_zalloc(a, sizeof(*b));
	uint8_t *d = arena_alloc(a, len);
	uint16_t *self = arena_alloc(a, records * sizeof(*self));
	if (!b || !d || !self)
		return NULL;
	size_t pos = prefix;
	memcpy(d, owner, prefix);
	pos += 2;
	uint16_t n_self = 0;
	for (int t = 0; t < 2; t++) {
		const struct rrset *r = addr[t];
		if (!r)
			continue;
		int n_rec = r->count + (sigs ? (int)rrset_sig_count(r) : 0);
		for (int i = 0; i < n_rec; i++) {
			const struct rdata *rd = i < r->count ? &r->rr[i] : &r->sig[i - r->count];
			if (pos > prefix + 2) {
				self[n_self++] = (uint16_t)pos;
				pos += 2;
			}
			d[pos] = (uint8_t)((i < r->count ? r->type : RR_RRSIG) >> 8);
			d[pos + 1] = (uint8_t)(i < r->count ? r->type : RR_RRSIG);
			d[pos + 2] = 0;
			d[pos + 3] = CLASS_IN;
			d[pos + 4] = (uint8_t)(r->ttl >> 24);
			d[pos + 5] = (uint8_t)(r->ttl >> 16);
			d[pos + 6] = (uint8_t)(r->ttl >> 8);
			d[pos + 7] = (uint8_t)r->ttl;
			d[pos + 8] = (uint8_t)(rd->len >> 8);
			d[pos + 9] = (uint8_t)rd->len;
			memcpy(d + pos + 10, rd->data, rd->len);
			pos += 10 + rd->len;
		}
	}
	*b = (struct plan_block){ .data = d, .len = (uint16_t)pos, .records = (uint16_t)records,
	                          .name = apex, .name_len = (uint8_t)apex_len, .suffix = true,
	                          .name_at = (uint16_t)prefix, .n_self = n_self, .self_at = self };
	return b;
}

/* An answer RRset (and its RRSIG when sigs) as an owner-mode plan_block. */
static struct plan_block *make_answer_block(struct arena *a, const uint8_t *owner,
                                            const struct rrset *r, bool sigs)
{
	size_t len = 0, records = 0;
	for (uint16_t i = 0; i < r->count; i++, records++)
		len += 12 + r->rr[i].len;
	for (unsigned k = 0; sigs && k < rrset_sig_count(r); k++) {
		len += 12 + r->sig[k].len;
		records++;
	}
	if (len > 0x3000)
		return NULL;
	struct plan_block *b = arena_zalloc(a, sizeof(*b));
	uint8_t *d = arena_alloc(a, len);
	uint16_t *self = arena_alloc(a, records * sizeof(*self));
	if (!b || !d || !self)
		return NULL;
	size_t pos = 0;
	for (uint16_t i = 0; i < records; i++) {
		const struct rdata *rd = i < r->count ? &r->rr[i] : &r->sig[i - r->count];
		uint16_t type = i < r->count ? r->type : RR_RRSIG;
		self[i] = (uint16_t)pos;
		uint8_t h[12] = { 0, 0, (uint8_t)(type >> 8), (uint8_t)type, 0, CLASS_IN,
		                  (uint8_t)(r->ttl >> 24), (uint8_t)(r->ttl >> 16),
		                  (uint8_t)(r->ttl >> 8), (uint8_t)r->ttl,
		                  (uint8_t)(rd->len >> 8), (uint8_t)rd->len };
		memcpy(d + pos, h, sizeof(h));
		memcpy(d + pos + 12, rd->data, rd->len);
		pos += 12 + rd->len;
	}
	size_t ol = dname_len(owner);
	*b = (struct plan_block){ .data = d, .len = (uint16_t)pos, .records = (uint16_t)records,
	                          .name = owner, .name_len = (uint8_t)ol, .suffix = false,
	                          .n_self = (uint16_t)records, .self_at = self };
	return b;
}

/* Encodes an HTTPS answer set both ways (without, with its RRSIG). */
static void encode_answer(struct arena *a, const uint8_t *owner, const struct rrset *r,
                          struct plan_block *out[2])
{
	for (int sigs = 0; sigs < 2; sigs++)
		out[sigs] = owner && a ? make_answer_block(a, owner, r, sigs) : NULL;
}

void geo_sets_link(struct geo_sets *s, const struct zone *z)
{
	struct https_sets *h = &s->https;
	for (size_t k = 0; k < h->n; k++) {
		const uint8_t *target = h->first[k].data + 2;
		const struct zone_node *n = zone_find(z, target, dname_len(target));
		h->site_block[k][0] = h->site_block[k][1] = NULL;
		if (!n || !s->arena)
			continue;
		const struct rrset *addr[2] = { zone_node_rrset(n, RR_A), zone_node_rrset(n, RR_AAAA) };
		for (int sigs = 0; sigs < 2; sigs++)
			h->site_block[k][sigs] = make_block(s->arena, n->name, zone_apex(z),
			                                    dname_len(zone_apex(z)), addr,
			                                    sigs);
	}
	for (size_t k = 0; k < h->n; k++)
		encode_answer(s->arena, s->owner, &h->single[k], h->single_block[k]);
	for (size_t k = 0; h->n && k < 2 * h->n * h->n; k++)
		if (h->ordered[k])
			encode_answer(s->arena, s->owner, h->ordered[k], h->ordered_block[k]);
}

/* The Additional block pair of candidate k: its per-site A and AAAA. */
static void add_extra(const struct https_sets *h, size_t k, struct geo_choice *out)
{
	if (!h->site_block[k][0] || !h->site_block[k][1])
		return;
	out->extra[out->n_extra][0] = h->site_block[k][0];
	out->extra[out->n_extra][1] = h->site_block[k][1];
	out->n_extra++;
}

/* What the rule decided, as the choice reports it (explain prints it). */
static void copy_decision(const struct geo_decision *d, struct geo_choice *out)
{
	out->fail_open = d->fail_open;
	out->beyond_ratio = d->beyond_ratio;
	out->beyond_margin = d->beyond_margin;
	for (int i = 0; i < 2; i++) {
		out->site[i] = d->site[i];
		out->miles[i] = d->miles[i];
	}
}

static int choose_https(const struct geo_sets *s, const struct geo_sites *sites, double lat,
                        double lon, struct geo_choice *out)
{
	const struct https_sets *h = &s->https;
	struct geo_decision d;
	if (h->n == 0)
		return 0;
	int rc = geo_rule_decide(s->rule, sites, GEO_ANY, lat, lon, &d);
	if (rc < 0 || d.n == 0)
		return rc;
	copy_decision(&d, out);
	out->n = d.n;
	/* The runner-up is listed whenever one competed: it is the fallback,
	 * even when the rule answers A with the nearest alone. */
	const struct rrset *rr = NULL;
	size_t t = d.n == 2 ? 1 : 0;
	if (d.site[1] >= 0)
		rr = ordered_get(s, t, d.cand[0], d.cand[1]);
	out->rrset = rr ? rr : &h->single[d.cand[0]];
	struct plan_block *const *blk = rr ? h->ordered_block[(t * h->n + d.cand[0]) * h->n + d.cand[1]]
	                                   : h->single_block[d.cand[0]];
	out->block[0] = blk[0];
	out->block[1] = blk[1];
	add_extra(h, d.cand[0], out);
	if (rr)
		add_extra(h, d.cand[1], out);
	return 0;
}

int geo_sets_choose(const struct geo_sets *s, const struct geo_sites *sites, uint16_t qtype,
                    double lat, double lon, struct geo_choice *out)
{
	int fam = family_for(qtype);
	struct geo_decision d;

	*out = (struct geo_choice){ .site = { -1, -1 } };
	if (qtype == RR_HTTPS)
		return choose_https(s, sites, lat, lon, out);
	if (fam < 0)
		return -EINVAL;
	const struct set_family *f = &s->fam[fam];
	int rc = geo_rule_decide(s->rule, sites, (enum geo_family)fam, lat, lon, &d);
	if (rc < 0 || d.n == 0)
		return rc;
	copy_decision(&d, out);
	size_t k0 = d.cand[0], k1 = d.cand[1];
	const struct rrset *rr = d.n == 2 ? pair_get(s, f, k0 < k1 ? k0 : k1, k0 < k1 ? k1 : k0)
	                                  : NULL;
	if (!rr) {
		/* One site decided, or the pair could not be built or signed
		 * (out of memory): the nearest alone. */
		out->n = 1;
		out->rrset = &f->singles[k0];
		return 0;
	}
	out->n = 2;
	out->rrset = rr;
	/* The pair is stored in canonical order; the nearest may sort second. */
	out->reversed = rr->count == 2 &&
	                memcmp(rr->rr[0].data, f->singles[k0].rr[0].data, f->addr_len) != 0;
	return 0;
}

int geo_sets_set_counters(struct geo_sets *s, struct arena *a, const struct geo_sites *sites,
                          const char *name)
{
	size_t n = geo_sites_count(sites);
	uint64_t **c = arena_alloc(a, (n ? n : 1) * sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		c[i] = metrics_geo_site(name, geo_site_name(sites, i));
	s->counters = c;
	s->n_counters = n;
	return 0;
}

void geo_sets_count(const struct geo_sets *s, const struct geo_choice *c)
{
	if (!s->counters)
		return;
	for (int r = 0; r < c->n && r < 2; r++)
		if (c->site[r] >= 0 && (size_t)c->site[r] < s->n_counters)
			METRICS_INC(s->counters[c->site[r]][r]);
}

const struct geo_rule *geo_sets_rule(const struct geo_sets *s)
{
	return s->rule;
}

/* The prebuilt RRset for candidates k0 (and k1, when two), built now if
 * pairs are built on first use, into the slot geo_sets_foreach() visits,
 * so the signer signs it with the rest. */
static const struct rrset *set_for(struct geo_sets *s, struct arena *a, struct set_family *f,
                                   size_t k0, size_t k1, int n)
{
	if (n == 1 || k0 == k1)
		return &f->singles[k0];
	size_t i = k0 < k1 ? k0 : k1, j = k0 < k1 ? k1 : k0;
	struct rrset **slot = &f->pairs[pair_index(i, j)];
	if (!*slot)
		*slot = make_pair(a, s, f, i, j);
	return *slot;
}

/*
 * The HTTPS set of the transfer fallback: the configured sites in their
 * order (nearest first), else the rule's HTTPS decision at lat/lon with
 * every site alive.  Built now into its slot (so it is signed with the
 * rest): the NSEC bitmap of the name lists HTTPS, so the copy must hold it.
 */
static int set_fallback_https(struct geo_sets *s, struct arena *a, const struct geo_sites *sites,
                              const struct config_geo_name *gn, double lat, double lon)
{
	struct https_sets *h = &s->https;
	s->fallback_https = NULL;
	if (h->n == 0)
		return 0;
	size_t k[2];
	int n = 0;
	for (size_t i = 0; i < gn->n_fallback_sites && n < 2; i++)
		for (size_t c = 0; c < h->n; c++)
			if (strcmp(geo_site_name(sites, geo_rule_candidate_site(s->rule, GEO_ANY, c)),
			           gn->fallback_sites[i]) == 0)
				k[n++] = c;
	size_t t = n == 2 ? 1 : 0;
	if (n == 0) {
		struct geo_decision d;
		int rc = geo_rule_decide_all(s->rule, sites, GEO_ANY, lat, lon, &d);
		if (rc < 0)
			return rc;
		if (d.n == 0)
			return 0;
		k[0] = d.cand[0];
		k[1] = d.cand[1];
		/* As the query path: the runner-up is listed whenever one competed. */
		n = d.site[1] >= 0 ? 2 : 1;
		t = d.n == 2 ? 1 : 0;
	}
	if (n == 1 || k[0] == k[1]) {
		s->fallback_https = &h->single[k[0]];
		return 0;
	}
	struct rrset **slot = &h->ordered[(t * h->n + k[0]) * h->n + k[1]];
	if (!*slot)
		*slot = make_ordered(a, s, t, k[0], k[1]);
	s->fallback_https = *slot;
	return *slot ? 0 : -ENOMEM;
}

int geo_sets_set_fallback(struct geo_sets *s, struct arena *a, const struct geo_sites *sites,
                          const struct config_geo_name *gn, double lat, double lon)
{
	for (int fam = 0; fam < GEO_FAMILIES; fam++) {
		struct set_family *f = &s->fam[fam];
		s->fallback[fam] = NULL;
		if (f->n == 0)
			continue;
		size_t k[2];
		int n = 0;
		/* Configured sites, as far as they are candidates of this family. */
		for (size_t c = 0; c < f->n && gn->n_fallback_sites; c++) {
			const char *name = geo_site_name(sites, geo_rule_candidate_site(s->rule,
			                                 (enum geo_family)fam, c));
			for (size_t i = 0; i < gn->n_fallback_sites && n < 2; i++)
				if (strcmp(name, gn->fallback_sites[i]) == 0)
					k[n++] = c;
		}
		if (n == 0) {
			struct geo_decision d;
			int rc = geo_rule_decide_all(s->rule, sites, (enum geo_family)fam, lat, lon, &d);
			if (rc < 0)
				return rc;
			if (d.n == 0)
				continue;
			k[0] = d.cand[0];
			k[1] = d.cand[1];
			n = d.n;
		}
		s->fallback[fam] = set_for(s, a, f, k[0], k[1], n);
		if (!s->fallback[fam])
			return -ENOMEM;
	}
	return set_fallback_https(s, a, sites, gn, lat, lon);
}

const struct rrset *geo_sets_fallback(const struct geo_sets *s, uint16_t type)
{
	if (type == RR_HTTPS)
		return s->fallback_https;
	int f = family_for(type);
	return f < 0 || f >= GEO_FAMILIES ? NULL : s->fallback[f];
}

bool geo_sets_is_candidate(const struct geo_sets *s, uint16_t qtype, size_t site)
{
	int fam = qtype == RR_HTTPS ? (int)GEO_ANY : family_for(qtype);
	if (fam < 0)
		return false;
	size_t n = geo_rule_candidates(s->rule, (enum geo_family)fam);
	for (size_t k = 0; k < n; k++)
		if (geo_rule_candidate_site(s->rule, (enum geo_family)fam, k) == site)
			return true;
	return false;
}
