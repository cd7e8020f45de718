/* SPDX-License-Identifier: MIT */
/*
 * The site table: the configured web sites, their positions and liveness.
 * Copied out of the config so a reload can free the old config while the
 * old snapshots still answer.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/conf/config.h"
#include "core/geo/geo_internal.h"
#include "core/geo/geo_sites.h"

void geo_unit_vector(double lat_deg, double lon_deg, double v[3])
{
	double phi = lat_deg * (M_PI / 180.0);
	double lambda = lon_deg * (M_PI / 180.0);
	double c = cos(phi);

	v[0] = c * cos(lambda);
	v[1] = c * sin(lambda);
	v[2] = sin(phi);
}

double geo_chord2(const double a[3], const double b[3])
{
	double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];

	return dx * dx + dy * dy + dz * dz;
}

double geo_chord2_miles(double chord2)
{
	double half = sqrt(chord2) / 2.0;

	if (half > 1.0)   /* rounding at antipodes */
		half = 1.0;
	return 2.0 * GEO_EARTH_RADIUS_MILES * asin(half);
}

double geo_distance_miles(double lat1, double lon1, double lat2, double lon2)
{
	double a[3], b[3];

	geo_unit_vector(lat1, lon1, a);
	geo_unit_vector(lat2, lon2, b);
	return geo_chord2_miles(geo_chord2(a, b));
}

struct geo_sites *geo_sites_new(const struct config *c, char err[256])
{
	struct geo_sites *s = calloc(1, sizeof(*s));

	if (!s)
		goto nomem;
	if (c->n_sites) {
		s->site = calloc(c->n_sites, sizeof(*s->site));
		if (!s->site)
			goto nomem;
	}
	for (size_t i = 0; i < c->n_sites; i++) {
		const struct config_site *cs = &c->sites[i];
		struct geo_site *g = &s->site[i];

		if (!cs->name || !cs->name[0]) {
			snprintf(err, 256, "site %zu has no name", i + 1);
			goto fail;
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(s->site[j].name, cs->name) == 0) {
				snprintf(err, 256, "site \"%s\" is defined twice", cs->name);
				goto fail;
			}
		}
		if (!(cs->latitude >= -90.0 && cs->latitude <= 90.0) ||
		    !(cs->longitude >= -180.0 && cs->longitude <= 180.0)) {
			snprintf(err, 256, "site \"%s\": coordinates %g, %g out of range", cs->name,
			         cs->latitude, cs->longitude);
			goto fail;
		}
		if (!cs->has_v4 && !cs->has_v6) {
			snprintf(err, 256, "site \"%s\" has neither an IPv4 nor an IPv6 address",
			         cs->name);
			goto fail;
		}
		g->name = strdup(cs->name);
		if (!g->name) {
			s->n = i;
			goto nomem;
		}
		s->n = i + 1;
		g->has_v4 = cs->has_v4;
		g->has_v6 = cs->has_v6;
		memcpy(g->v4, cs->v4, 4);
		memcpy(g->v6, cs->v6, 16);
		g->lat = cs->latitude;
		g->lon = cs->longitude;
		geo_unit_vector(g->lat, g->lon, g->v);
		g->enabled = cs->enabled;
		/* Serve everyone until health checks say otherwise. */
		g->alive[GEO_IPV4] = g->alive[GEO_IPV6] = true;
	}
	return s;
nomem:
	snprintf(err, 256, "out of memory");
fail:
	geo_sites_free(s);
	return NULL;
}

void geo_sites_free(struct geo_sites *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->site[i].name);
	free(s->site);
	free(s);
}

size_t geo_sites_count(const struct geo_sites *s)
{
	return s->n;
}

const char *geo_site_name(const struct geo_sites *s, size_t i)
{
	return i < s->n ? s->site[i].name : NULL;
}

int geo_sites_find(const struct geo_sites *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->site[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

bool geo_site_alive(const struct geo_sites *s, size_t i, enum geo_family f)
{
	return i < s->n && (unsigned)f < GEO_FAMILIES && s->site[i].alive[f];
}

void geo_site_set_alive(struct geo_sites *s, size_t i, enum geo_family f, bool alive)
{
	if (i < s->n && (unsigned)f < GEO_FAMILIES && s->site[i].alive[f] != alive) {
		s->site[i].alive[f] = alive;
		s->liveness++;   /* cached choices are void */
	}
}

bool geo_site_up(const struct geo_sites *s, size_t i)
{
	if (i >= s->n)
		return false;
	const struct geo_site *g = &s->site[i];
	return (!g->has_v4 || g->alive[GEO_IPV4]) && (!g->has_v6 || g->alive[GEO_IPV6]);
}

enum geo_admin geo_site_admin(const struct geo_sites *s, size_t i)
{
	return i < s->n ? (enum geo_admin)s->site[i].admin : GEO_ADMIN_AUTO;
}

void geo_site_set_admin(struct geo_sites *s, size_t i, enum geo_admin a)
{
	if (i < s->n && s->site[i].admin != (uint8_t)a) {
		s->site[i].admin = (uint8_t)a;
		s->liveness++;   /* cached choices are void */
	}
}

static const char *const admin_names[] = { "auto", "drained", "undrained" };

const char *geo_admin_name(enum geo_admin a)
{
	return (unsigned)a < 3 ? admin_names[a] : "auto";
}

bool geo_admin_from(const char *word, enum geo_admin *out)
{
	for (unsigned i = 0; i < 3; i++)
		if (strcmp(word, admin_names[i]) == 0) {
			*out = (enum geo_admin)i;
			return true;
		}
	return false;
}

bool geo_site_serving(const struct geo_sites *s, size_t i, enum geo_family f)
{
	if (i >= s->n)
		return false;
	if (s->site[i].admin == GEO_ADMIN_DRAINED)
		return false;
	if (s->site[i].admin == GEO_ADMIN_UNDRAINED)
		return true;
	return geo_site_alive(s, i, f);
}

bool geo_site_carried(const struct geo_sites *s, size_t i)
{
	return i < s->n && s->site[i].carried;
}

bool geo_site_enabled(const struct geo_sites *s, size_t i)
{
	return i < s->n && s->site[i].enabled;
}

void geo_site_position(const struct geo_sites *s, size_t i, double *lat, double *lon)
{
	*lat = i < s->n ? s->site[i].lat : 0.0;
	*lon = i < s->n ? s->site[i].lon : 0.0;
}

bool geo_site_address(const struct geo_sites *s, size_t i, int family, uint8_t out[16])
{
	if (i >= s->n)
		return false;
	if (family == 4 && s->site[i].has_v4) {
		memcpy(out, s->site[i].v4, 4);
		return true;
	}
	if (family == 6 && s->site[i].has_v6) {
		memcpy(out, s->site[i].v6, 16);
		return true;
	}
	return false;
}

void geo_sites_copy_alive(struct geo_sites *dst, const struct geo_sites *src)
{
	if (!dst || !src)
		return;
	for (size_t i = 0; i < dst->n; i++) {
		int j = geo_sites_find(src, dst->site[i].name);
		if (j >= 0) {
			memcpy(dst->site[i].alive, src->site[j].alive, sizeof(dst->site[i].alive));
			dst->site[i].carried = true;
		}
	}
	dst->liveness++;
}
