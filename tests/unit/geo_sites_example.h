/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The operator's example sites, shared by the geo unit tests (header-only,
 * like check.h): test_geo.c (the rule, answer sets, .mmdb lookup) and
 * test_geo_health.c (the health checks).
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>

#include "core/conf/config.h"

struct site_def {
	const char *name;
	double lat, lon;
	const char *v4, *v6;
};

/* The operator's seven example sites.  Addresses chosen so that canonical
 * (memcmp) order differs from config order for some pairs. */
static const struct site_def example[] = {
	{ "paris", 48.88, 2.22, "198.51.100.7", "2001:db8:100::7" },
	{ "nuremberg", 49.45, 11.08, "198.51.100.3", "2001:db8:100::3" },
	{ "ashburn", 39.04, -77.49, "203.0.113.10", NULL },
	{ "singapore", 1.35, 103.82, "203.0.113.20", "2001:db8:100::20" },
	{ "sanjose", 37.34, -121.89, "203.0.113.5", NULL },
	{ "saopaulo", -23.55, -46.63, "198.51.100.50", NULL },
	{ "sydney", -33.87, 151.21, "203.0.113.30", "2001:db8:100::30" },
};
#define N_EXAMPLE (sizeof(example) / sizeof(example[0]))

#define MAX_SITES 16
struct test_config {
	struct config c;
	struct config_site s[MAX_SITES];
};

static inline void make_config(struct test_config *tc, const struct site_def *d, size_t n)
{
	memset(tc, 0, sizeof(*tc));
	tc->c.sites = tc->s;
	tc->c.n_sites = n;
	for (size_t i = 0; i < n; i++) {
		struct config_site *cs = &tc->s[i];
		cs->name = (char *)d[i].name;
		cs->latitude = d[i].lat;
		cs->longitude = d[i].lon;
		cs->enabled = true;
		if (d[i].v4)
			cs->has_v4 = inet_pton(AF_INET, d[i].v4, cs->v4) == 1;
		if (d[i].v6)
			cs->has_v6 = inet_pton(AF_INET6, d[i].v6, cs->v6) == 1;
	}
}
