#pragma once
/*
 * The geo rule: locate the client, take the two nearest alive sites by
 * great-circle distance; when the second is more than `ratio` times as far
 * AND more than `margin_miles` farther, answer the nearest alone with
 * ttl_single, else both (nearest first) with ttl_pair.
 *
 * Three objects with three lifetimes:
 *  - struct geo_sites: the configured sites and their liveness (process /
 *    config generation; health checks flip `alive`).
 *  - struct geo_db: the opened .mmdb files (config generation).
 *  - struct geo_sets: for one geo name in one zone snapshot, every answer
 *    RRset the rule can produce (each single site, each unordered pair, for
 *    A and AAAA), built ahead so the signer can sign them ahead; lives in
 *    the snapshot arena.
 * Choosing allocates nothing.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/zone.h"

struct arena;
struct config;
struct config_geo;
struct config_geo_name;

struct geo_sites;
struct geo_db;
struct geo_sets;

/* --- sites --- */
struct geo_sites *geo_sites_new(const struct config *c, char err[256]);
void geo_sites_free(struct geo_sites *s);
size_t geo_sites_count(const struct geo_sites *s);
const char *geo_site_name(const struct geo_sites *s, size_t i);
int geo_sites_find(const struct geo_sites *s, const char *name);   /* index or -ENOENT */
bool geo_site_alive(const struct geo_sites *s, size_t i);
void geo_site_set_alive(struct geo_sites *s, size_t i, bool alive);

/* --- location --- */
struct geo_location {
	bool found;            /* coordinates came from a database */
	double lat, lon;       /* degrees */
	uint8_t prefix;        /* prefix length of the matched (or missed) network */
	int db_index;          /* which database answered, -1 if none */
};

struct geo_db *geo_db_open(const struct config_geo *g, char err[256]);
void geo_db_free(struct geo_db *db);
/*
 * Looks up addr (family 4 or 6; addr holds 4 or 16 bytes).  When nothing
 * is found, fills the configured default location (found = false) and
 * still reports the prefix the database said applies.  Returns 0, or
 * -ENOENT when there is neither a match nor a default location.
 */
int geo_db_locate(const struct geo_db *db, int family, const uint8_t *addr,
                  struct geo_location *out);

/* Great-circle distance in statute miles. */
double geo_distance_miles(double lat1, double lon1, double lat2, double lon2);

/* --- answer sets (built with a snapshot) --- */
struct geo_sets *geo_sets_build(struct arena *a, const struct geo_sites *sites,
                                const struct config_geo_name *gn, char err[256]);
/* Visits every prebuilt RRset (for the signer). */
int geo_sets_foreach(struct geo_sets *s, const uint8_t *owner, zone_rrset_fn fn, void *arg);
/* True when the name can answer this type (A: some site has IPv4). */
bool geo_sets_has_type(const struct geo_sets *s, uint16_t type);

struct geo_choice {
	const struct rrset *rrset; /* the answer; NULL when no site serves the type */
	bool reversed;             /* write rr[1] before rr[0] (nearest first) */
	int n;                     /* 1 or 2 sites */
	int site[2];               /* site indices, nearest first */
	double miles[2];
	bool fail_open;            /* no site alive: answered as if all were */
};
int geo_choose(const struct geo_sets *s, const struct geo_sites *sites, uint16_t qtype,
               double lat, double lon, struct geo_choice *out);
