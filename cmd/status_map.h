/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The status page's world map: an SVG drawn on the server, from the same
 * rule and health state the DNS answers use.  Every cell of a grid is
 * coloured by the site the rule picks at the cell's centre (solid: the
 * nearest alone; striped: a pair, nearest and runner-up), the land outline
 * is drawn over it, and each site is a marker (hollow when down).
 */
#include <stdio.h>

#include "core/geo/geo_rule.h"

struct geo_sites;

/* Degrees per cell: 120 x 60 cells, 7 200 decisions per drawing. */
#define STATUS_MAP_CELL_DEG 3

/* A stable colour per site index (cycles after the palette's end). */
const char *status_site_colour(size_t site);
/* Writes <svg>...</svg> for the rule over `sites` in family f. */
void status_map_svg(FILE *out, const struct geo_rule *rule, const struct geo_sites *sites,
                    enum geo_family f);
