/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The geo rule: locate the client, take the two nearest alive sites by
 * great-circle distance; when the second is more than `ratio` times as far
 * AND more than `margin_miles` farther, answer the nearest alone, else both
 * (nearest first).  This file decides which sites; it knows nothing of
 * records or zones (core/zone/geo_sets.c turns a decision into an RRset).
 *
 * Details of the rule, decided once here:
 *  - Distances are haversine, in statute miles, Earth radius 3958.8 mi.
 *  - Candidates are the geo name's sites (config `sites`, or every site)
 *    that are enabled AND have an address of the family asked: the IPv4
 *    family runs the rule over sites with IPv4, IPv6 over sites with IPv6,
 *    and GEO_ANY (the targets of an HTTPS answer, RFC 9460: each target
 *    name holds the site's A and/or AAAA) over sites with either.  So an
 *    answer is never empty while any such site exists.
 *  - Of the candidates, only those alive in the family asked compete (a
 *    site's IPv4 and IPv6 addresses are checked apart; for GEO_ANY, alive
 *    over at least one family it has an address in).  One alive: it alone.
 *    None alive: fail open, i.e. decide as if every candidate were alive,
 *    and set geo_decision.fail_open (the caller logs it loudly).
 *  - Equal distances go to the lower site index (config order), so the
 *    same question always gets the same answer.  "Equal" allows a relative
 *    difference of 1e-12, so mirror-image placements tie as well.
 *  - Both comparisons are strict: second == ratio * first keeps the pair.
 *
 * Lifetime: a rule is made in a snapshot's arena, for one geo name, and
 * must be used with the geo_sites it was made from (or one made from the
 * same config: same site order).  Deciding allocates nothing and makes no
 * system calls.
 *
 * The one mutable part: a direct-mapped cache from location to decision,
 * per family, valid for one liveness state of the sites.  It is written on
 * the query path (single-threaded: only the event loop decides), through a
 * rule the snapshot otherwise treats as immutable; a miss just scans.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/geo/geo_sites.h"   /* enum geo_family */

/*
 * The rule's third candidate set, beside the address families of
 * geo_sites.h (whose liveness it derives): sites with either address.
 */
#define GEO_ANY ((enum geo_family)GEO_FAMILIES)
#define GEO_RULE_FAMILIES (GEO_FAMILIES + 1)

struct arena;
struct config_geo_name;
struct geo_sites;
struct geo_rule;


struct geo_decision {
	int n;                     /* 1 or 2 sites decided (0: no candidate) */
	/* Nearest and runner-up, filled whenever two candidates competed, even
	 * when n == 1; -1 when there was none. */
	int site[2];               /* site index */
	uint32_t cand[2];          /* candidate position (see geo_rule_candidate_site) */
	double miles[2];
	/* The rule's two comparisons, made when two candidates competed:
	 * miles[1] > ratio * miles[0], and miles[1] - miles[0] > margin_miles.
	 * n is 1 exactly when both hold (or one candidate competed). */
	bool beyond_ratio;
	bool beyond_margin;
	bool fail_open;            /* no site alive: decided as if all were */
};

/*
 * Makes the rule for gn over `sites`.  Fails when gn names an unknown site
 * or no enabled candidate serves either family.
 */
struct geo_rule *geo_rule_new(struct arena *a, const struct geo_sites *sites,
                              const struct config_geo_name *gn, char err[256]);
/* Candidates of a family, in config order, and the site index of each. */
size_t geo_rule_candidates(const struct geo_rule *r, enum geo_family f);
uint32_t geo_rule_candidate_site(const struct geo_rule *r, enum geo_family f, size_t k);
uint32_t geo_rule_ttl(const struct geo_rule *r, int n);   /* ttl_single (n 1) or ttl_pair */
/*
 * Applies the rule at lat/lon (degrees) over the family's candidates.
 * Returns 0 (n 0 when the family has no candidate).
 */
int geo_rule_decide(const struct geo_rule *r, const struct geo_sites *sites,
                    enum geo_family f, double lat, double lon, struct geo_decision *out);
/*
 * The same decision without touching the cache: for the status page's map,
 * whose thousands of cells must not evict the locations resolvers ask for.
 */
int geo_rule_decide_fresh(const struct geo_rule *r, const struct geo_sites *sites,
                          enum geo_family f, double lat, double lon, struct geo_decision *out);
/*
 * The same rule as if every enabled candidate were alive, bypassing the
 * cache: an answer that does not move with health checks (the fixed set a
 * zone transfer exports for a geo name).
 */
int geo_rule_decide_all(const struct geo_rule *r, const struct geo_sites *sites,
                        enum geo_family f, double lat, double lon, struct geo_decision *out);
