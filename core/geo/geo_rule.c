/* SPDX-License-Identifier: MIT */
/*
 * The rule's arithmetic and its cache.  See geo_rule.h for the rule.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/conf/config.h"
#include "core/geo/geo_internal.h"
#include "core/geo/geo_rule.h"
#include "core/geo/geo_sites.h"
#include "core/wire/arena.h"

/*
 * Clients of one database record share one location, and resolvers send the
 * same subnets again and again: a direct-mapped cache from location to
 * decision makes a query's cost independent of the number of sites (the
 * scan is linear).
 */
#define DECISION_CACHE_BITS 9

struct decision_slot {
	double lat, lon;
	uint64_t liveness;
	bool used;
	struct geo_decision d;
};

struct rule_family {
	size_t n;                          /* candidates */
	uint32_t *site;                    /* candidate -> site index */
	struct decision_slot *cache;       /* mutable: see geo_rule.h */
};

struct geo_rule {
	struct rule_family fam[GEO_RULE_FAMILIES];
	double ratio;
	double margin_miles;
	uint32_t ttl_single, ttl_pair;
};

static bool site_has(const struct geo_site *g, enum geo_family f)
{
	switch ((int)f) {
	case GEO_IPV4: return g->has_v4;
	case GEO_IPV6: return g->has_v6;
	default: return g->has_v4 || g->has_v6;
	}
}

/*
 * GEO_ANY: alive over a family the site has an address in.  The operator's
 * admin state comes first: drained is out of every answer, undrained in
 * every one, whatever the health checks say (geo_sites.h).
 */
static bool site_alive(const struct geo_site *g, enum geo_family f)
{
	if (g->admin == GEO_ADMIN_DRAINED)
		return false;
	if (g->admin == GEO_ADMIN_UNDRAINED)
		return true;
	if ((int)f < GEO_FAMILIES)
		return g->alive[f];
	return (g->has_v4 && g->alive[GEO_IPV4]) || (g->has_v6 && g->alive[GEO_IPV6]);
}

static int build_family(struct arena *a, const struct geo_sites *sites, const bool *member,
                        struct rule_family *rf, enum geo_family f)
{
	size_t n = 0;

	for (size_t i = 0; i < sites->n; i++)
		if (member[i] && sites->site[i].enabled && site_has(&sites->site[i], f))
			n++;
	rf->n = n;
	if (n == 0)
		return 0;
	rf->site = arena_alloc(a, n * sizeof(*rf->site));
	rf->cache = arena_zalloc(a, ((size_t)1 << DECISION_CACHE_BITS) * sizeof(*rf->cache));
	if (!rf->site || !rf->cache)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < sites->n; i++)
		if (member[i] && sites->site[i].enabled && site_has(&sites->site[i], f))
			rf->site[n++] = (uint32_t)i;
	return 0;
}

struct geo_rule *geo_rule_new(struct arena *a, const struct geo_sites *sites,
                              const struct config_geo_name *gn, char err[256])
{
	struct geo_rule *r = arena_zalloc(a, sizeof(*r));
	bool *member = arena_zalloc(a, sites->n ? sites->n : 1);
	const char *name = gn->name ? gn->name : "(unnamed)";

	if (!r || !member)
		goto nomem;
	r->ratio = gn->ratio;
	r->margin_miles = gn->margin_miles;
	r->ttl_single = gn->ttl_single;
	r->ttl_pair = gn->ttl_pair;
	if (gn->n_sites == 0)
		memset(member, 1, sites->n);
	for (size_t i = 0; i < gn->n_sites; i++) {
		int k = geo_sites_find(sites, gn->sites[i]);
		if (k < 0) {
			snprintf(err, 256, "geo name %s: unknown site \"%s\"", name, gn->sites[i]);
			return NULL;
		}
		member[k] = true;
	}
	for (int f = 0; f < GEO_RULE_FAMILIES; f++)
		if (build_family(a, sites, member, &r->fam[f], (enum geo_family)f) < 0)
			goto nomem;
	if (r->fam[GEO_IPV4].n == 0 && r->fam[GEO_IPV6].n == 0) {
		snprintf(err, 256, "geo name %s: no enabled site to answer with", name);
		return NULL;
	}
	return r;
nomem:
	snprintf(err, 256, "geo name %s: out of memory building the rule", name);
	return NULL;
}

size_t geo_rule_candidates(const struct geo_rule *r, enum geo_family f)
{
	return r->fam[f].n;
}

uint32_t geo_rule_candidate_site(const struct geo_rule *r, enum geo_family f, size_t k)
{
	return r->fam[f].site[k];
}

uint32_t geo_rule_ttl(const struct geo_rule *r, int n)
{
	return n == 1 ? r->ttl_single : r->ttl_pair;
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
static void scan(const struct rule_family *rf, const struct geo_sites *sites,
                 enum geo_family f, const double v[3], bool need_alive, struct nearest *out)
{
	out->count = 0;
	for (size_t k = 0; k < rf->n; k++) {
		uint32_t i = rf->site[k];
		if (i >= sites->n)
			continue;
		const struct geo_site *g = &sites->site[i];
		if (!g->enabled || (need_alive && !site_alive(g, f)))
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

static void decide(const struct geo_rule *r, const struct rule_family *rf,
                   const struct geo_sites *sites, enum geo_family f, double lat, double lon,
                   bool need_alive, struct geo_decision *out)
{
	struct nearest best;
	double v[3];

	geo_unit_vector(lat, lon, v);
	scan(rf, sites, f, v, need_alive, &best);
	if (best.count == 0) {
		out->fail_open = true;
		scan(rf, sites, f, v, false, &best);
		if (best.count == 0)   /* sites do not match the rule */
			return;
	}
	out->cand[0] = (uint32_t)best.k[0];
	out->site[0] = (int)rf->site[best.k[0]];
	out->miles[0] = geo_chord2_miles(best.c2[0]);
	if (best.count == 2) {
		out->cand[1] = (uint32_t)best.k[1];
		out->site[1] = (int)rf->site[best.k[1]];
		out->miles[1] = geo_chord2_miles(best.c2[1]);
	}
	if (best.count == 2) {
		out->beyond_ratio = out->miles[1] > r->ratio * out->miles[0];
		out->beyond_margin = out->miles[1] - out->miles[0] > r->margin_miles;
	}
	bool single = best.count == 1 || (out->beyond_ratio && out->beyond_margin);
	out->n = single ? 1 : 2;
}

static struct decision_slot *cache_slot(const struct rule_family *rf, double lat, double lon)
{
	uint64_t a, b;
	memcpy(&a, &lat, sizeof(a));
	memcpy(&b, &lon, sizeof(b));
	uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15ULL)) * 0xBF58476D1CE4E5B9ULL;
	return &rf->cache[h >> (64 - DECISION_CACHE_BITS)];
}

int geo_rule_decide(const struct geo_rule *r, const struct geo_sites *sites,
                    enum geo_family f, double lat, double lon, struct geo_decision *out)
{
	*out = (struct geo_decision){ .site = { -1, -1 } };
	if ((unsigned)f >= GEO_RULE_FAMILIES)
		return -EINVAL;
	const struct rule_family *rf = &r->fam[f];
	if (rf->n == 0)
		return 0;
	struct decision_slot *slot = cache_slot(rf, lat, lon);
	if (slot->used && slot->lat == lat && slot->lon == lon && slot->liveness == sites->liveness) {
		*out = slot->d;
		return 0;
	}
	decide(r, rf, sites, f, lat, lon, true, out);
	*slot = (struct decision_slot){ .lat = lat, .lon = lon, .liveness = sites->liveness,
	                                .used = true, .d = *out };
	return 0;
}

int geo_rule_decide_fresh(const struct geo_rule *r, const struct geo_sites *sites,
                          enum geo_family f, double lat, double lon, struct geo_decision *out)
{
	*out = (struct geo_decision){ .site = { -1, -1 } };
	if ((unsigned)f >= GEO_RULE_FAMILIES)
		return -EINVAL;
	if (r->fam[f].n)
		decide(r, &r->fam[f], sites, f, lat, lon, true, out);
	return 0;
}

int geo_rule_decide_all(const struct geo_rule *r, const struct geo_sites *sites,
                        enum geo_family f, double lat, double lon, struct geo_decision *out)
{
	*out = (struct geo_decision){ .site = { -1, -1 } };
	if ((unsigned)f >= GEO_RULE_FAMILIES)
		return -EINVAL;
	if (r->fam[f].n)
		decide(r, &r->fam[f], sites, f, lat, lon, false, out);
	return 0;
}
