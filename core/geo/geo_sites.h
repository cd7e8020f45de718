/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The configured sites and their liveness (process / config generation;
 * health checks flip `alive`).  Site index = position in config->sites.
 * Liveness is per address family: a site's IPv4 address and its IPv6
 * address are checked apart, and A answers follow the first, AAAA answers
 * the second.
 * Distances are haversine, in statute miles, Earth radius 3958.8 mi.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct geo_sites;

#define GEO_EARTH_RADIUS_MILES 3958.8

/* The address family of a question: A -> IPv4, AAAA -> IPv6. */
enum geo_family {
	GEO_IPV4 = 0,
	GEO_IPV6 = 1,
	GEO_FAMILIES
};

/*
 * Copies the sites out of the config (the config may be freed afterwards).
 * Every site starts alive in both families (health_new() marks the checked
 * ones dead until their first check passes).  Fails on a duplicate name, coordinates out of
 * range, or a site without any address.
 */
struct geo_sites *geo_sites_new(const struct config *c, char err[256]);
void geo_sites_free(struct geo_sites *s);
size_t geo_sites_count(const struct geo_sites *s);
const char *geo_site_name(const struct geo_sites *s, size_t i);
int geo_sites_find(const struct geo_sites *s, const char *name);   /* index or -ENOENT */
bool geo_site_alive(const struct geo_sites *s, size_t i, enum geo_family f);
void geo_site_set_alive(struct geo_sites *s, size_t i, enum geo_family f, bool alive);
/* Alive in every family the site has an address for (status pages, metrics:
 * a site half down counts as down there; logs and explain name the family). */
bool geo_site_up(const struct geo_sites *s, size_t i);
/*
 * The operator's admin state of a site (`geoacme ctl site-drain` ...),
 * over its health: drained = out of every geo answer, as if down;
 * undrained = in every answer whatever its checks say; auto = the health
 * checks decide (the default).  It does not change geo_site_alive() or
 * geo_site_up() (what the checks say); geo_site_serving() is the result.
 */
enum geo_admin {
	GEO_ADMIN_AUTO = 0,
	GEO_ADMIN_DRAINED = 1,
	GEO_ADMIN_UNDRAINED = 2,
};
enum geo_admin geo_site_admin(const struct geo_sites *s, size_t i);
void geo_site_set_admin(struct geo_sites *s, size_t i, enum geo_admin a);
/* "auto", "drained", "undrained"; geo_admin_from() returns false for other words. */
const char *geo_admin_name(enum geo_admin a);
bool geo_admin_from(const char *word, enum geo_admin *out);
/* Whether answers for family f may use site i: the admin state, then health. */
bool geo_site_serving(const struct geo_sites *s, size_t i, enum geo_family f);
/* True when geo_sites_copy_alive() gave site i a namesake's liveness. */
bool geo_site_carried(const struct geo_sites *s, size_t i);
bool geo_site_enabled(const struct geo_sites *s, size_t i);
void geo_site_position(const struct geo_sites *s, size_t i, double *lat, double *lon);
/* family 4 or 6: copies the site's address (4 or 16 bytes) into out; false if none. */
bool geo_site_address(const struct geo_sites *s, size_t i, int family, uint8_t out[16]);
/*
 * Carries liveness across a reload: every site of dst that has a namesake
 * in src takes its alive flags (both families).  Call before health_new() on dst.
 */
void geo_sites_copy_alive(struct geo_sites *dst, const struct geo_sites *src);

/* Great-circle distance in statute miles. */
double geo_distance_miles(double lat1, double lon1, double lat2, double lon2);

