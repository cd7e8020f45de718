/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The answer RRsets of one geo name in one zone snapshot: every RRset the
 * rule (core/geo/geo_rule.h) can pick — each single site and each unordered
 * pair, for A and AAAA — built ahead so the signer can sign them ahead.
 * Everything lives in the snapshot's arena.
 *
 * Mutable parts, written on the query path by the event loop only: the
 * rule's decision cache, and (beyond GEO_PRESIGN_MAX candidates) pairs
 * built and signed on first use and then kept for the snapshot's life.
 * Everything else is frozen with the snapshot.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hooks.h"

struct arena;
struct config_geo_name;
struct geo_sites;
struct geo_rule;
struct geo_sets;
struct plan_block;
struct rrset;
struct zone;

/*
 * Builds, for A and for AAAA over the rule's candidates: one RRset per site
 * (ttl_single, 1 record) and one per unordered pair (ttl_pair, 2 records in
 * canonical order; 1 if both sites share an address).  RRSIGs stay empty
 * for the signer.  Fails when gn names an unknown site or no candidate
 * serves either type.
 */
struct geo_sets *geo_sets_build(struct arena *a, const struct geo_sites *sites,
                                const struct config_geo_name *gn, char err[256]);
/*
 * Adds the HTTPS sets when gn has `https` (nothing otherwise): for every
 * ordered pair of GEO_ANY candidates (nearest, second) and both TTLs the
 * RRset "1 <nearest>.<site_names>.<apex> params", "2 <second>... params",
 * "3 . params", and for each candidate alone records 1 and 3 (ttl_single).
 * params: alpn, port, ech as configured; never address hints.  Fails on a
 * site name that is not a valid label.
 */
int geo_sets_build_https(struct geo_sets *s, struct arena *a, const struct geo_sites *sites,
                         const struct config_geo_name *gn, const uint8_t *apex, char err[256]);
/* <site>.<site_names>.<apex> in wire form (lowercase): its length or -EINVAL. */
int geo_sets_site_name(const char *site, const char *site_names, const uint8_t *apex,
                       uint8_t out[255]);
/*
 * Called when the snapshot is frozen: where pairs built on first use go
 * (the snapshot's arena), their owner, and who signs them (NULL: unsigned).
 * Up to GEO_PRESIGN_MAX candidate sites every pair is built (and signed)
 * ahead; beyond, a pair is built and signed the first time the rule picks
 * it.  While all sites are alive only neighbouring sites can be the two
 * nearest (at most 3n - 6 pairs), so no query pattern can make more than
 * that many, and never more than all.
 */
#define GEO_PRESIGN_MAX 64
void geo_sets_attach(struct geo_sets *s, const uint8_t *owner, struct arena *a,
                     const struct zone_signer *signer);
/*
 * Called once the snapshot z is frozen (after geo_sets_attach): finds each
 * HTTPS target's per-site name in z and encodes its A and AAAA RRsets
 * (with and without RRSIGs) as blocks in the snapshot's arena, so that an
 * answer's Additional section costs no lookup and no per-record writing.
 */
void geo_sets_link(struct geo_sets *s, const struct zone *z);
/*
 * The fixed answer a zone transfer carries for the name, since a stock
 * secondary cannot run the rule: for each family, gn->fallback_sites (the
 * ones that are candidates of the family) or else the rule's answer at
 * lat/lon as if every enabled site were alive, so health checks do not move
 * it.  It is one of the prebuilt RRsets (built now in `a` if need be), so
 * the signer signs it with the others.  Call before the snapshot is signed.
 * Returns 0 or -ENOMEM.
 */
int geo_sets_set_fallback(struct geo_sets *s, struct arena *a, const struct geo_sites *sites,
                          const struct config_geo_name *gn, double lat, double lon);
/*
 * That RRset for RR_A, RR_AAAA or RR_HTTPS (with `https`: the HTTPS set of
 * the same sites, nearest first); NULL when the name has no such answer.
 */
const struct rrset *geo_sets_fallback(const struct geo_sets *s, uint16_t type);
/* Visits every prebuilt RRset (for the signer); stops at a non-zero return. */
int geo_sets_foreach(struct geo_sets *s, const uint8_t *owner, zone_rrset_fn fn, void *arg);
/* True when the name can answer this type (A: some candidate has IPv4;
 * HTTPS: the name has `https`). */
bool geo_sets_has_type(const struct geo_sets *s, uint16_t type);
/* Number of RRsets when all are built (singles + pairs, both families, HTTPS). */
size_t geo_sets_rrset_count(const struct geo_sets *s);

struct geo_choice {
	const struct rrset *rrset; /* the answer; NULL when no site serves the type */
	bool reversed;             /* write rr[1] before rr[0] (nearest first) */
	int n;                     /* 1 or 2 sites in the answer (0 with rrset NULL) */
	/* Nearest and runner-up (site index, distance), filled whenever two
	 * candidates competed, even when n == 1; -1 when there was none. */
	int site[2];
	double miles[2];
	/* The rule's comparisons (see struct geo_decision). */
	bool beyond_ratio;
	bool beyond_margin;
	bool fail_open;            /* no site alive: answered as if all were */
	/* HTTPS: each target's per-site A/AAAA (with [1] / without [0] their
	 * RRSIGs), encoded ahead for the Additional section: static data, the
	 * same for every client. */
	int n_extra;
	const struct plan_block *extra[2][2];
	/* HTTPS: the answer set encoded ahead, without [0] and with [1] its
	 * RRSIG; NULL: write rrset the usual way. */
	const struct plan_block *block[2];
};
/*
 * Applies the rule for qtype (RR_A, RR_AAAA or RR_HTTPS) at lat/lon and
 * picks the RRset.  For HTTPS, n is the rule's decision (its TTL), and the
 * set lists the runner-up whenever one is alive, even when n is 1.  Returns 0 (with rrset NULL and n 0 when no candidate serves the
 * type), or -EINVAL for another qtype.  This is the decision the server
 * answers with; `geoacme explain` prints it too.
 */
int geo_sets_choose(const struct geo_sets *s, const struct geo_sites *sites, uint16_t qtype,
                    double lat, double lon, struct geo_choice *out);

/*
 * Counts each answer's decision into geoacme_geo_decisions_total{name,
 * site, rank}: set once when the snapshot is built (`name` is the geo
 * name's FQDN), then geo_sets_count() after every answer, which is two
 * increments.  Decisions made for `explain` or the status map are not
 * counted.
 */
int geo_sets_set_counters(struct geo_sets *s, struct arena *a, const struct geo_sites *sites,
                          const char *name);
void geo_sets_count(const struct geo_sets *s, const struct geo_choice *c);
/* The rule behind the sets (for the status map and `explain`). */
const struct geo_rule *geo_sets_rule(const struct geo_sets *s);

/* True when site (an index into geo_sites) is one of the rule's candidates
 * for qtype (RR_A, RR_AAAA, or RR_HTTPS: either address): in the name's
 * sites, enabled, with an address of the family. */
bool geo_sets_is_candidate(const struct geo_sets *s, uint16_t qtype, size_t site);
