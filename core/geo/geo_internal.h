/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Shared between geo_sites.c and geo.c only: the site table's layout and
 * the distance arithmetic both use.
 *
 * Each site keeps its position as a unit vector on the sphere.  The
 * squared chord between two unit vectors is 4·hav(θ) for central angle θ,
 * so ranking sites by chord² ranks them by haversine distance, costs three
 * subtractions and three multiplications per site, and needs no
 * trigonometry per query; d = 2R·asin(chord/2) is the haversine formula.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct geo_site {
	char *name;
	bool has_v4, has_v6;
	uint8_t v4[4];
	uint8_t v6[16];
	double lat, lon;       /* degrees, as configured */
	double v[3];           /* unit vector */
	bool enabled;
	bool alive[2];         /* per enum geo_family: health of that address */
	bool carried;          /* liveness came from the previous generation */
	uint8_t admin;         /* enum geo_admin: the operator's override of `alive` */
};

struct geo_sites {
	size_t n;
	struct geo_site *site;
	uint64_t liveness;       /* bumped whenever a site's alive flag changes */
};

void geo_unit_vector(double lat_deg, double lon_deg, double v[3]);
double geo_chord2(const double a[3], const double b[3]);
double geo_chord2_miles(double chord2);
