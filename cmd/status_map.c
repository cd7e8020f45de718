/* SPDX-License-Identifier: MIT */
/*
 * The map: equirectangular, 360 x 180 units (x = longitude + 180,
 * y = 90 − latitude), so the land outline of status_land.inc and the
 * cells share one coordinate system without any projection code.
 */
#include "cmd/status_map.h"

#include <stdbool.h>
#include <string.h>

#include "cmd/status.h"
#include "core/geo/geo_sites.h"

#include "cmd/status_land.inc"

static const char *const palette[] = {
	"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
	"#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939",
};
#define PALETTE_N (sizeof(palette) / sizeof(palette[0]))

const char *status_site_colour(size_t site)
{
	return palette[site % PALETTE_N];
}

#define COLS (360 / STATUS_MAP_CELL_DEG)
#define ROWS (180 / STATUS_MAP_CELL_DEG)

struct cell {
	int first, second;   /* site indices; second -1 for a single-site answer */
};

static bool same_cell(struct cell a, struct cell b)
{
	return a.first == b.first && a.second == b.second;
}

static void fill_of(struct cell c, char *out, size_t cap)
{
	if (c.first < 0)
		snprintf(out, cap, "none");
	else if (c.second < 0)
		snprintf(out, cap, "%s", status_site_colour((size_t)c.first));
	else
		snprintf(out, cap, "url(#pair-%d-%d)", c.first, c.second);
}

/* One stripe pattern per ordered pair the map shows. */
static void write_patterns(FILE *out, struct cell grid[ROWS][COLS])
{
	static bool seen[64][64];
	memset(seen, 0, sizeof(seen));
	fprintf(out, "<defs>\n");
	for (int r = 0; r < ROWS; r++)
		for (int c = 0; c < COLS; c++) {
			struct cell x = grid[r][c];
			if (x.second < 0 || x.first >= 64 || x.second >= 64 || seen[x.first][x.second])
				continue;
			seen[x.first][x.second] = true;
			fprintf(out, "<pattern id=\"pair-%d-%d\" width=\"2\" height=\"2\" "
			        "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
			        "<rect width=\"2\" height=\"2\" fill=\"%s\"/>"
			        "<rect width=\"0.8\" height=\"2\" fill=\"%s\"/></pattern>\n",
			        x.first, x.second, status_site_colour((size_t)x.first),
			        status_site_colour((size_t)x.second));
		}
	fprintf(out, "</defs>\n");
}

void status_map_svg(FILE *out, const struct geo_rule *rule, const struct geo_sites *sites,
                    enum geo_family f)
{
	static struct cell grid[ROWS][COLS];
	for (int r = 0; r < ROWS; r++)
		for (int c = 0; c < COLS; c++) {
			double lat = 90 - (r + 0.5) * STATUS_MAP_CELL_DEG;
			double lon = -180 + (c + 0.5) * STATUS_MAP_CELL_DEG;
			struct geo_decision d;
			grid[r][c] = (struct cell){ -1, -1 };
			if (geo_rule_decide_fresh(rule, sites, f, lat, lon, &d) == 0 && d.n > 0) {
				grid[r][c].first = d.site[0];
				grid[r][c].second = d.n == 2 ? d.site[1] : -1;
			}
		}
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 360 180\" "
	        "id=\"map\" role=\"img\" aria-label=\"Which site answers where\">\n");
	write_patterns(out, grid);
	fprintf(out, "<rect width=\"360\" height=\"180\" fill=\"#e8eef2\"/>\n<g class=\"cells\" shape-rendering=\"crispEdges\" "
	        "opacity=\"0.75\">\n");
	/* Runs of equal cells in a row become one rectangle. */
	for (int r = 0; r < ROWS; r++)
		for (int c = 0; c < COLS;) {
			int end = c + 1;
			while (end < COLS && same_cell(grid[r][end], grid[r][c]))
				end++;
			struct cell x = grid[r][c];
			char fill[48];
			fill_of(x, fill, sizeof(fill));
			if (x.first >= 0) {
				fprintf(out, "<rect class=\"cell\" x=\"%d\" y=\"%d\" width=\"%d\" "
				        "height=\"%d\" fill=\"%s\" data-first=\"", c * STATUS_MAP_CELL_DEG,
				        r * STATUS_MAP_CELL_DEG, (end - c) * STATUS_MAP_CELL_DEG,
				        STATUS_MAP_CELL_DEG, fill);
				status_html_escape(out, geo_site_name(sites, (size_t)x.first));
				fputs("\" data-second=\"", out);
				if (x.second >= 0)
					status_html_escape(out, geo_site_name(sites, (size_t)x.second));
				fputs("\"/>\n", out);
			}
			c = end;
		}
	fprintf(out, "</g>\n<path class=\"land\" fill=\"#ffffff\" fill-opacity=\"0.25\" "
	        "stroke=\"#333\" stroke-width=\"0.25\" d=\"%s\"/>\n", status_land_path);
	for (size_t i = 0; i < geo_sites_count(sites); i++) {
		double lat, lon;
		geo_site_position(sites, i, &lat, &lon);
		bool up = geo_site_up(sites, i);
		fprintf(out, "<circle class=\"site %s\" data-site=\"", up ? "up" : "down");
		status_html_escape(out, geo_site_name(sites, i));
		fprintf(out, "\" cx=\"%.2f\" cy=\"%.2f\" r=\"2.6\" fill=\"%s\" stroke=\"#000\" "
		        "stroke-width=\"0.6\"><title>", lon + 180, 90 - lat,
		        up ? status_site_colour(i) : "#ffffff");
		status_html_escape(out, geo_site_name(sites, i));
		fprintf(out, " (%s)</title></circle>\n", up ? "up" : "down");
	}
	fprintf(out, "</svg>\n");
}
