/*
 * Answer sets and the choice between them.
 *
 * For each family (A, AAAA) the candidates are the geo name's enabled sites
 * with an address of that family, in config order ("eligible" positions
 * 0..n-1).  singles[k] answers with candidate k alone; the unordered pair
 * {i, j}, i < j, sits at pairs[j·(j−1)/2 + i] (a triangular index: every
 * pair once, no gaps).  The pair lookup stays behind geo_choose so the
 * layout can change when site counts grow (n = 64 already means 2016
 * pairs to sign per family).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/arena.h"
#include "core/config.h"
#include "core/geo.h"
#include "core/geo_internal.h"
#include "core/rrset.h"

/*
 * Clients of one database record share one location, and resolvers send the
 * same subnets again and again: a direct-mapped cache from location to
 * choice makes a query's cost independent of the number of sites (the scan
 * is linear).  Entries are valid for one liveness state of the sites.  Made
 * with the snapshot; a miss just scans.
 */
#define CHOICE_CACHE_BITS 9

struct choice_slot {
	double lat, lon;
	uint64_t liveness;
	bool used;
	struct geo_choice choice;
};

struct geo_family {
	struct choice_slot *cache;   /* 1 << CHOICE_CACHE_BITS; written through const */
	uint16_t type;
	uint16_t addr_len;       /* 4 or 16 */
	size_t n;                /* candidates */
	uint32_t *site;          /* candidate -> site index */
	struct rrset *singles;   /* n */
	struct rrset **pairs;    /* n·(n−1)/2; NULL until built (see GEO_PRESIGN_MAX) */
};

struct geo_sets {
	struct geo_family fam[2];   /* A, AAAA */
	/* For pairs built on first use; set by geo_sets_attach(). */
	const uint8_t *owner;
	struct arena *arena;
	const struct zone_signer *signer;
	double ratio;
	double margin_miles;
	uint32_t ttl_single, ttl_pair;
};

static size_t pair_index(size_t i, size_t j)
{
	/* i < j */
	return j * (j - 1) / 2 + i;
}

static const uint8_t *site_addr(const struct geo_site *g, uint16_t type)
{
	return type == RR_A ? g->v4 : g->v6;
}

static bool site_has(const struct geo_site *g, uint16_t type)
{
	return type == RR_A ? g->has_v4 : g->has_v6;
}

/* The RRset answering candidates i < j, records in canonical order. */
static struct rrset *make_pair(struct arena *a, const struct geo_sets *gs,
                               const struct geo_family *f, size_t i, size_t j)
{
	const struct rdata *ri = &f->singles[i].rr[0], *rj = &f->singles[j].rr[0];
	struct rrset *rr = arena_alloc(a, sizeof(*rr));
	struct rdata *rd = arena_alloc(a, 2 * sizeof(*rd));
	if (!rr || !rd)
		return NULL;
	int cmp = memcmp(ri->data, rj->data, f->addr_len);
	rd[0] = cmp <= 0 ? *ri : *rj;
	rd[1] = cmp <= 0 ? *rj : *ri;
	*rr = (struct rrset){ .type = f->type, .count = cmp == 0 ? 1 : 2, .ttl = gs->ttl_pair,
	                      .rr = rd };
	return rr;
}

static int build_family(struct arena *a, const struct geo_sites *sites, const bool *member,
                        struct geo_sets *gs, struct geo_family *f, uint16_t type)
{
	size_t n = 0, k = 0;

	f->type = type;
	f->addr_len = type == RR_A ? 4 : 16;
	for (size_t i = 0; i < sites->n; i++)
		if (member[i] && sites->site[i].enabled && site_has(&sites->site[i], type))
			n++;
	f->n = n;
	if (n == 0)
		return 0;
	f->site = arena_alloc(a, n * sizeof(*f->site));
	f->singles = arena_zalloc(a, n * sizeof(*f->singles));
	f->cache = arena_zalloc(a, ((size_t)1 << CHOICE_CACHE_BITS) * sizeof(*f->cache));
	if (!f->site || !f->singles || !f->cache)
		return -ENOMEM;
	if (n > 1) {
		f->pairs = arena_zalloc(a, pair_index(0, n) * sizeof(*f->pairs));
		if (!f->pairs)
			return -ENOMEM;
	}
	for (size_t i = 0; i < sites->n; i++) {
		const struct geo_site *g = &sites->site[i];
		if (!(member[i] && g->enabled && site_has(g, type)))
			continue;
		struct rdata *rd = arena_alloc(a, sizeof(*rd));
		uint8_t *addr = arena_memdup(a, site_addr(g, type), f->addr_len);
		if (!rd || !addr)
			return -ENOMEM;
		rd->len = f->addr_len;
		rd->data = addr;
		f->site[k] = (uint32_t)i;
		f->singles[k] = (struct rrset){ .type = type, .count = 1, .ttl = gs->ttl_single,
		                                .rr = rd };
		k++;
	}
	if (n > GEO_PRESIGN_MAX)
		return 0;   /* pairs are built on first use */
	for (size_t j = 1; j < n; j++)
		for (size_t i = 0; i < j; i++)
			if (!(f->pairs[pair_index(i, j)] = make_pair(a, gs, f, i, j)))
				return -ENOMEM;
	return 0;
}

struct geo_sets *geo_sets_build(struct arena *a, const struct geo_sites *sites,
                                const struct config_geo_name *gn, char err[256])
{
	struct geo_sets *gs = arena_zalloc(a, sizeof(*gs));
	bool *member = arena_zalloc(a, sites->n ? sites->n : 1);
	const char *name = gn->name ? gn->name : "(unnamed)";

	if (!gs || !member)
		goto nomem;
	gs->ratio = gn->ratio;
	gs->margin_miles = gn->margin_miles;
	gs->ttl_single = gn->ttl_single;
	gs->ttl_pair = gn->ttl_pair;
	if (gn->n_sites == 0) {
		memset(member, 1, sites->n);
	}
	for (size_t i = 0; i < gn->n_sites; i++) {
		int k = geo_sites_find(sites, gn->sites[i]);
		if (k < 0) {
			snprintf(err, 256, "geo name %s: unknown site \"%s\"", name, gn->sites[i]);
			return NULL;
		}
		member[k] = true;
	}
	if (build_family(a, sites, member, gs, &gs->fam[0], RR_A) < 0 ||
	    build_family(a, sites, member, gs, &gs->fam[1], RR_AAAA) < 0)
		goto nomem;
	if (gs->fam[0].n == 0 && gs->fam[1].n == 0) {
		snprintf(err, 256, "geo name %s: no enabled site to answer with", name);
		return NULL;
	}
	return gs;
nomem:
	snprintf(err, 256, "geo name %s: out of memory building answer sets", name);
	return NULL;
}

int geo_sets_foreach(struct geo_sets *s, const uint8_t *owner, zone_rrset_fn fn, void *arg)
{
	for (int f = 0; f < 2; f++) {
		struct geo_family *fam = &s->fam[f];
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

static const struct geo_family *family_for(const struct geo_sets *s, uint16_t type)
{
	if (type == RR_A)
		return &s->fam[0];
	if (type == RR_AAAA)
		return &s->fam[1];
	return NULL;
}

bool geo_sets_has_type(const struct geo_sets *s, uint16_t type)
{
	const struct geo_family *f = family_for(s, type);

	return f && f->n > 0;
}

size_t geo_sets_rrset_count(const struct geo_sets *s)
{
	size_t total = 0;

	for (int f = 0; f < 2; f++)
		total += s->fam[f].n + (s->fam[f].n > 1 ? pair_index(0, s->fam[f].n) : 0);
	return total;
}

/*
 * a is nearer than b.  A relative slack of 1e-12 (about a micrometre at
 * continental distances) makes mirror-image placements tie, so the lower
 * index wins them instead of a rounding error.
 */
static bool nearer(double a, double b)
{
	return a < b - b * 1e-12;
}

struct nearest {
	int count;        /* candidates seen, capped at 2 */
	size_t k[2];      /* candidate positions, nearest first */
	double c2[2];     /* squared chords */
};

/* One pass for the two minima; candidates arrive in config order. */
static void scan(const struct geo_family *f, const struct geo_sites *sites, const double v[3],
                 bool need_alive, struct nearest *out)
{
	out->count = 0;
	for (size_t k = 0; k < f->n; k++) {
		uint32_t i = f->site[k];
		if (i >= sites->n)
			continue;
		const struct geo_site *g = &sites->site[i];
		if (!g->enabled || (need_alive && !g->alive))
			continue;
		double c2 = geo_chord2(v, g->v);
		if (out->count == 0 || nearer(c2, out->c2[0])) {
			out->k[1] = out->k[0];
			out->c2[1] = out->c2[0];
			out->k[0] = k;
			out->c2[0] = c2;
		} else if (out->count == 1 || nearer(c2, out->c2[1])) {
			out->k[1] = k;
			out->c2[1] = c2;
		}
		if (out->count < 2)
			out->count++;
	}
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
static const struct rrset *pair_get(const struct geo_sets *s, const struct geo_family *f,
                                    size_t i, size_t j)
{
	struct rrset **slot = &f->pairs[pair_index(i, j)];
	if (*slot || !s->arena)
		return *slot;
	struct rrset *rr = make_pair(s->arena, s, f, i, j);
	if (!rr)
		return NULL;
	if (s->signer && s->signer->sign_rrset &&
	    s->signer->sign_rrset(s->signer->ctx, s->owner, rr, s->arena) < 0)
		return NULL;
	*slot = rr;
	return rr;
}

static struct choice_slot *choice_slot(const struct geo_family *f, double lat, double lon)
{
	uint64_t a, b;
	memcpy(&a, &lat, sizeof(a));
	memcpy(&b, &lon, sizeof(b));
	uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15ULL)) * 0xBF58476D1CE4E5B9ULL;
	return &f->cache[h >> (64 - CHOICE_CACHE_BITS)];
}

static int choose(const struct geo_sets *s, const struct geo_family *f,
                  const struct geo_sites *sites, double lat, double lon, struct geo_choice *out);

int geo_choose(const struct geo_sets *s, const struct geo_sites *sites, uint16_t qtype,
               double lat, double lon, struct geo_choice *out)
{
	const struct geo_family *f = family_for(s, qtype);

	*out = (struct geo_choice){ .site = { -1, -1 } };
	if (!f)
		return -EINVAL;
	if (f->n == 0)
		return 0;
	struct choice_slot *slot = choice_slot(f, lat, lon);
	if (slot->used && slot->lat == lat && slot->lon == lon && slot->liveness == sites->liveness) {
		*out = slot->choice;
		return 0;
	}
	int rc = choose(s, f, sites, lat, lon, out);
	if (rc == 0) {
		slot->lat = lat;
		slot->lon = lon;
		slot->liveness = sites->liveness;
		slot->choice = *out;
		slot->used = true;
	}
	return rc;
}

static int choose(const struct geo_sets *s, const struct geo_family *f,
                  const struct geo_sites *sites, double lat, double lon, struct geo_choice *out)
{
	struct nearest best;
	double v[3];

	geo_unit_vector(lat, lon, v);
	scan(f, sites, v, true, &best);
	if (best.count == 0) {
		out->fail_open = true;
		scan(f, sites, v, false, &best);
		if (best.count == 0)   /* sites do not match the sets */
			return 0;
	}
	size_t k0 = best.k[0];
	out->site[0] = (int)f->site[k0];
	out->miles[0] = geo_chord2_miles(best.c2[0]);
	if (best.count == 2) {
		out->site[1] = (int)f->site[best.k[1]];
		out->miles[1] = geo_chord2_miles(best.c2[1]);
	}
	bool single = best.count == 1 ||
	              (out->miles[1] > s->ratio * out->miles[0] &&
	               out->miles[1] - out->miles[0] > s->margin_miles);
	if (single) {
		out->n = 1;
		out->rrset = &f->singles[k0];
		return 0;
	}
	size_t k1 = best.k[1];
	const struct rrset *rr = pair_get(s, f, k0 < k1 ? k0 : k1, k0 < k1 ? k1 : k0);
	if (!rr) {
		/* Out of memory, or the pair could not be signed: the nearest alone. */
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
