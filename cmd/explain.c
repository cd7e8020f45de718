/* SPDX-License-Identifier: MIT */
/*
 * geoacme explain: show how a geo answer is chosen for one client, with
 * the same code the server runs (config_load, geo_sites_new, geo_db_open,
 * geo_sets_build, geo_sets_choose), so what it prints is what the server sends
 * to that client while every enabled site is alive.  The decision it prints
 * (nearest, runner-up, distances, the two comparisons, single or pair) is the
 * one geo_sets_choose returned; nothing here re-applies the rule.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmd/cmd.h"
#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/geo/geo_db.h"
#include "core/geo/geo_sites.h"
#include "core/wire/arena.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/zone/geo_sets.h"
#include "core/zone/svcb.h"

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: geoacme explain -c FILE NAME [A|AAAA|HTTPS] (--client IP[/LEN] | --at LAT,LON)\n"
	        "       geoacme explain -c FILE NAME [A|AAAA] --map[=cities|grid]\n"
	        "\n"
	        "Shows how the server answers NAME for one client: where the client is\n"
	        "located (database, matched network), the distance to every site, the\n"
	        "decision with its numbers, and the records sent (for HTTPS, with the\n"
	        "Additional section).  NAME is a geo name\n"
	        "from the config, absolute or relative to its zone.  No health checks\n"
	        "run here: every enabled site counts as alive.\n"
	        "\n"
	        "  -c, --config FILE   the TOML configuration\n"
	        "      --client IP     locate this address (a resolver without ECS)\n"
	        "      --client IP/LEN answer as the server does for this ECS subnet\n"
	        "      --at LAT,LON    skip the lookup: the client is at these degrees\n"
	        "      --map[=cities]  which site answers a list of world cities\n"
	        "      --map=grid      the same as a character map, 10 degrees a cell\n"
	        "  -h, --help          this help\n");
}

/* Lowercase absolute presentation name with one trailing dot. */
static void absolute_name(const char *name, const char *zone, char *out, size_t cap)
{
	size_t ln = strlen(name), lz = strlen(zone);

	if (lz && zone[lz - 1] == '.')
		lz--;
	if (strcmp(name, "@") == 0)
		snprintf(out, cap, "%.*s.", (int)lz, zone);
	else if (ln && name[ln - 1] == '.')
		snprintf(out, cap, "%s", name);
	else
		snprintf(out, cap, "%s.%.*s.", name, (int)lz, zone);
	for (char *p = out; *p; p++)
		*p = (char)tolower((unsigned char)*p);
}

struct found {
	const struct config_zone *zone;
	const struct config_geo_name *gn;
	char owner[512];
};

/*
 * Finds the geo name: NAME taken as absolute first ("www.example.com" and
 * "www.example.com." both work), then as relative to every zone.
 * Returns the number of matches (0, 1 or more: ambiguous).
 */
static int find_geo_name(const struct config *c, const char *name, struct found *f)
{
	char want[512], owner[512];
	int matches = 0;

	snprintf(want, sizeof(want), "%s%s", name,
	         name[0] && name[strlen(name) - 1] == '.' ? "" : ".");
	for (char *p = want; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	for (int pass = 0; pass < 2 && matches == 0; pass++) {
		for (size_t i = 0; i < c->n_zones; i++) {
			const struct config_zone *z = &c->zones[i];
			char rel[512];
			if (pass == 1) {
				if (name[0] && name[strlen(name) - 1] == '.')
					break;   /* absolute names only match absolutely */
				absolute_name(name, z->zone, rel, sizeof(rel));
			}
			for (size_t j = 0; j < z->n_geo; j++) {
				absolute_name(z->geo[j].name, z->zone, owner, sizeof(owner));
				if (strcmp(owner, pass == 0 ? want : rel) != 0)
					continue;
				if (matches++ == 0) {
					f->zone = z;
					f->gn = &z->geo[j];
					snprintf(f->owner, sizeof(f->owner), "%s", owner);
				}
			}
		}
	}
	return matches;
}

static void list_geo_names(const struct config *c)
{
	char owner[512];
	int n = 0;

	for (size_t i = 0; i < c->n_zones; i++)
		for (size_t j = 0; j < c->zones[i].n_geo; j++) {
			absolute_name(c->zones[i].geo[j].name, c->zones[i].zone, owner, sizeof(owner));
			fprintf(stderr, "%s %s", n++ ? "," : "  configured geo names:", owner);
		}
	fprintf(stderr, n ? "\n" : "  no geo names are configured\n");
}

/* "192.0.2.128/26" for the network of `prefix` bits around addr. */
static void format_network(int family, const uint8_t *addr, unsigned prefix, char *out,
                           size_t cap)
{
	uint8_t net[16] = { 0 };
	size_t len = family == 4 ? 4 : 16;
	char text[INET6_ADDRSTRLEN];

	for (size_t i = 0; i < len; i++) {
		unsigned bits = prefix > i * 8 ? prefix - (unsigned)i * 8 : 0;
		uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));
		net[i] = addr[i] & mask;
	}
	inet_ntop(family == 4 ? AF_INET : AF_INET6, net, text, sizeof(text));
	snprintf(out, cap, "%s/%u", text, prefix);
}

/*
 * "192.0.2.1" or "184.86.182.0/24": the address (masked to the prefix, as
 * ECS carries it) and the prefix, -1 without one.
 */
static int parse_client(const char *s, int *family, uint8_t addr[16], int *prefix)
{
	char text[INET6_ADDRSTRLEN + 8];
	snprintf(text, sizeof(text), "%s", s);
	char *slash = strchr(text, '/');
	*prefix = -1;
	if (slash) {
		/* Digits only, no sign or blank, no leading zero (strtol took "/-8", "/+8"). */
		const char *d = slash + 1;
		*slash = '\0';
		if (!*d || strlen(d) > 3 || (d[0] == '0' && d[1]) || strspn(d, "0123456789") != strlen(d))
			return -EINVAL;
		*prefix = atoi(d);
	}
	if (inet_pton(AF_INET, text, addr) == 1)
		*family = 4;
	else if (inet_pton(AF_INET6, text, addr) == 1)
		*family = 6;
	else
		return -EINVAL;
	if (*prefix > (*family == 4 ? 32 : 128))
		return -EINVAL;
	for (int i = 0; *prefix >= 0 && i < (*family == 4 ? 4 : 16); i++) {
		int bits = *prefix - i * 8;
		addr[i] &= bits >= 8 ? 0xff : bits <= 0 ? 0 : (uint8_t)(0xff << (8 - bits));
	}
	return 0;
}

static bool parse_at(const char *s, double *lat, double *lon)
{
	char *end;

	*lat = strtod(s, &end);
	if (end == s || *end != ',')
		return false;
	s = end + 1;
	*lon = strtod(s, &end);
	if (end == s || *end != '\0')
		return false;
	return *lat >= -90 && *lat <= 90 && *lon >= -180 && *lon <= 180;
}

struct row {
	size_t site;
	double miles;
};

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->miles != y->miles)
		return x->miles < y->miles ? -1 : 1;
	return x->site < y->site ? -1 : x->site > y->site;
}

/*
 * The table of every site by distance, for the reader; the decision below
 * is the server's own, from geo_sets_choose, and the marks come from it.
 * family 4, 6, or 0 for HTTPS (sites with either address compete).
 */
static void print_sites(const struct geo_sites *sites, const struct geo_sets *gs,
                        uint16_t qtype, int family, double lat, double lon,
                        const struct geo_choice *ch)
{
	int want = family;
	size_t n = geo_sites_count(sites);
	struct row *rows = calloc(n ? n : 1, sizeof(*rows));

	if (!rows)
		return;
	for (size_t i = 0; i < n; i++) {
		double slat, slon;
		geo_site_position(sites, i, &slat, &slon);
		rows[i] = (struct row){ i, geo_distance_miles(lat, lon, slat, slon) };
	}
	qsort(rows, n, sizeof(*rows), row_cmp);
	printf("%10s  %-16s %-26s %s\n", "miles", "site", "address", "status");
	for (size_t k = 0; k < n; k++) {
		size_t i = rows[k].site;
		const char *name = geo_site_name(sites, i);
		uint8_t addr[16];
		char text[INET6_ADDRSTRLEN] = "-";
		family = want ? want : geo_site_address(sites, i, 4, addr) ? 4 : 6;
		bool has = geo_site_address(sites, i, family, addr);
		const char *status, *mark = "";
		if (has)
			inet_ntop(family == 4 ? AF_INET : AF_INET6, addr, text, sizeof(text));
		if (geo_sets_is_candidate(gs, qtype, i))
			status = geo_site_alive(sites, i, family == 4 ? GEO_IPV4 : GEO_IPV6) ? "alive"
			                                                                      : "dead";
		else if (!geo_site_enabled(sites, i))
			status = "not a candidate: disabled";
		else if (!has)
			status = family == 4 ? "not a candidate: no IPv4 address"
			                     : "not a candidate: no IPv6 address";
		else
			status = "not a candidate: not in this name's sites";
		if (ch->n >= 1 && (size_t)ch->site[0] == i)
			mark = ch->n == 1 && want ? "  <- answer" : "  <- nearest";
		else if (ch->site[1] >= 0 && (size_t)ch->site[1] == i)
			mark = ch->n == 2 || !want ? "  <- second" : "  <- second (not sent)";
		printf("%10.2f  %-16s %-26s %s%s\n", rows[k].miles, name, text, status, mark);
	}
	free(rows);
}

/* The decision geo_sets_choose made: its distances and its comparisons. */
static void print_decision(const struct geo_choice *ch, const struct config_geo_name *gn)
{
	if (ch->fail_open)
		printf("no candidate site is alive: failing open, as if all were alive "
		       "(the server logs this as an error)\n");
	if (ch->site[1] < 0) {
		printf("decision: only one candidate site%s → nearest only, TTL %u\n",
		       ch->fail_open ? "" : " alive", ch->rrset->ttl);
		return;
	}
	double first = ch->miles[0], second = ch->miles[1];
	char ratio[64];
	if (first > 0)
		snprintf(ratio, sizeof(ratio), "%.3f", second / first);
	else
		snprintf(ratio, sizeof(ratio), second > 0 ? "inf" : "undefined (both 0 mi)");
	printf("decision: second/first = %.2f/%.2f = %s %s %g %s second-first = %.1f mi %s %g",
	       second, first, ratio, ch->beyond_ratio ? ">" : "≤", gn->ratio,
	       ch->beyond_ratio && ch->beyond_margin ? "and" : ch->beyond_ratio ? "but" : "and",
	       second - first, ch->beyond_margin ? ">" : "≤", gn->margin_miles);
	if (ch->n == 1)
		printf(" → nearest only, TTL %u\n", ch->rrset->ttl);
	else
		printf(" → both, nearest first, TTL %u\n", ch->rrset->ttl);
}

/* A few cities on every continent, for --map. */
static const struct { const char *name; double lat, lon; } cities[] = {
	{ "Reykjavik", 64.15, -21.94 }, { "London", 51.51, -0.13 }, { "Madrid", 40.42, -3.70 },
	{ "Stockholm", 59.33, 18.07 }, { "Moscow", 55.76, 37.62 }, { "Istanbul", 41.01, 28.98 },
	{ "Cairo", 30.04, 31.24 }, { "Lagos", 6.52, 3.38 }, { "Nairobi", -1.29, 36.82 },
	{ "Johannesburg", -26.20, 28.05 }, { "Dubai", 25.20, 55.27 }, { "Mumbai", 19.08, 72.88 },
	{ "Bangkok", 13.76, 100.50 }, { "Beijing", 39.90, 116.41 }, { "Tokyo", 35.68, 139.69 },
	{ "Manila", 14.60, 120.98 }, { "Perth", -31.95, 115.86 }, { "Auckland", -36.85, 174.76 },
	{ "Honolulu", 21.31, -157.86 }, { "Anchorage", 61.22, -149.90 },
	{ "Vancouver", 49.28, -123.12 }, { "Los Angeles", 34.05, -118.24 },
	{ "Mexico City", 19.43, -99.13 }, { "Chicago", 41.88, -87.63 }, { "Toronto", 43.65, -79.38 },
	{ "New York", 40.71, -74.01 }, { "Bogota", 4.71, -74.07 }, { "Lima", -12.05, -77.04 },
	{ "Buenos Aires", -34.60, -58.38 }, { "Sao Paulo", -23.55, -46.63 },
};

/*
 * --map: the decision the server makes (geo_sets_choose, every enabled site
 * alive) at each city, or on a 10-degree grid drawn with one letter per
 * site (upper case: nearest alone; lower case: a pair, nearest shown).
 */
static void print_map(const char *kind, const struct geo_sets *gs, const struct geo_sites *sites,
                      const char *owner, uint16_t qtype)
{
	struct geo_choice ch;
	char tbuf[16];
	if (strcmp(kind, "grid") == 0) {
		printf("%s %s: which site answers where (10° cells; upper case: nearest alone, "
		       "lower case: pair, nearest shown; . no answer)\n", owner,
		       rrset_type_to_str(qtype, tbuf));
		for (int r = 0; r < 18; r++) {
			for (int col = 0; col < 36; col++) {
				double lat = 85 - r * 10, lon = -175 + col * 10;
				char mark = '.';
				if (geo_sets_choose(gs, sites, qtype, lat, lon, &ch) == 0 && ch.rrset)
					mark = (char)((ch.n == 1 ? 'A' : 'a') + ch.site[0] % 26);
				putchar(mark);
			}
			putchar('\n');
		}
		for (size_t i = 0; i < geo_sites_count(sites); i++)
			printf("%c/%c %s\n", (char)('A' + i % 26), (char)('a' + i % 26),
			       geo_site_name(sites, i));
		return;
	}
	printf("%-14s %16s  %-16s %-16s %s\n", "city", "lat,lon", "nearest", "second", "answer");
	for (size_t i = 0; i < sizeof(cities) / sizeof(cities[0]); i++) {
		if (geo_sets_choose(gs, sites, qtype, cities[i].lat, cities[i].lon, &ch) < 0 ||
		    !ch.rrset) {
			printf("%-14s %7.2f,%8.2f  %-16s %-16s %s\n", cities[i].name, cities[i].lat,
			       cities[i].lon, "-", "-", "no answer");
			continue;
		}
		printf("%-14s %7.2f,%8.2f  %-16s %-16s %s, TTL %u\n", cities[i].name, cities[i].lat,
		       cities[i].lon, geo_site_name(sites,
		       (size_t)ch.site[0]), ch.site[1] >= 0 ? geo_site_name(sites, (size_t)ch.site[1])
		       : "-", ch.n == 1 ? "nearest alone" : "both", ch.rrset->ttl);
	}
}

/*
 * The HTTPS set, then the Additional section: each target's A and AAAA
 * (per-site names, the same for every client).  The "." record points at
 * the geo name itself, whose addresses are tailored: never in Additional.
 */
static void print_https(const struct geo_sites *sites, const struct config_geo_name *gn,
                        const char *owner, const uint8_t *apex, const struct geo_choice *ch)
{
	char text[4096];
	printf("HTTPS: the nearest, then the runner-up (listed even when A answers with the "
	       "nearest alone: it is the browser's fallback), then \".\" = %s itself\n", owner);
	printf("\nanswer:\n");
	for (int k = 0; k < ch->rrset->count; k++) {
		const struct rdata *rd = &ch->rrset->rr[k];
		if (svcb_to_text(rd->data, rd->len, text, sizeof(text)) < 0)
			snprintf(text, sizeof(text), "(%u bytes)", rd->len);
		printf("%s %u IN HTTPS %s\n", owner, ch->rrset->ttl, text);
	}
	printf("\nadditional:\n");
	for (int k = 0; k < 2; k++) {
		if (ch->site[k] < 0)
			continue;
		size_t i = (size_t)ch->site[k];
		uint8_t name[DNAME_MAX];
		char ntext[DNAME_MAX * 4 + 2];
		if (geo_sets_site_name(geo_site_name(sites, i), gn->https.site_names, apex, name) < 0 ||
		    dname_to_str(name, ntext, sizeof(ntext)) < 0)
			continue;
		for (int fam = 4; fam <= 6; fam += 2) {
			uint8_t addr[16];
			char atext[INET6_ADDRSTRLEN];
			if (!geo_site_address(sites, i, fam, addr))
				continue;
			inet_ntop(fam == 4 ? AF_INET : AF_INET6, addr, atext, sizeof(atext));
			char tbuf[16];
			printf("%s %u IN %s %s\n", ntext, gn->ttl_pair,
			       rrset_type_to_str(fam == 4 ? RR_A : RR_AAAA, tbuf), atext);
		}
	}
}

int cmd_explain(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "client", required_argument, NULL, 'C' },
		{ "at", required_argument, NULL, 'A' },
		{ "map", optional_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL, *client = NULL, *at = NULL, *map = NULL;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': path = optarg; break;
		case 'C': client = optarg; break;
		case 'A': at = optarg; break;
		case 'M': map = optarg ? optarg : "cities"; break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	int npos = argc - optind;
	if (!path || npos < 1 || npos > 2 || (!client + !at + !map) != 2 ||
	    (map && strcmp(map, "cities") != 0 && strcmp(map, "grid") != 0)) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *name = argv[optind];
	uint16_t qtype = RR_A;
	if (npos == 2) {
		qtype = rrset_type_from_str(argv[optind + 1]);
		if (qtype != RR_A && qtype != RR_AAAA && qtype != RR_HTTPS) {
			fprintf(stderr, "geoacme explain: type must be A, AAAA or HTTPS, not '%s'\n",
			        argv[optind + 1]);
			return EXIT_USAGE;
		}
	}
	int family = qtype == RR_A ? 4 : qtype == RR_AAAA ? 6 : 0;
	char tbuf[16];
	const char *type_name = rrset_type_to_str(qtype, tbuf);
	int client_family = 0;
	uint8_t client_addr[16] = { 0 };
	double lat = 0, lon = 0;
	int ecs_len = -1;   /* --client IP/LEN: the ECS source prefix */
	if (client && parse_client(client, &client_family, client_addr, &ecs_len) < 0) {
		fprintf(stderr, "geoacme explain: '%s' is not an IP address or subnet\n", client);
		return EXIT_USAGE;
	} else if (client && ecs_len == 0) {
		fprintf(stderr, "geoacme explain: an ECS /0 carries no address, so the server "
		        "locates the resolver instead: give the resolver's address without /LEN\n");
		return EXIT_USAGE;
	} else if (at && !parse_at(at, &lat, &lon)) {
		fprintf(stderr, "geoacme explain: --at wants LAT,LON in degrees, not '%s'\n", at);
		return EXIT_USAGE;
	}

	int rc = EXIT_CONFIG;
	char err[256] = "";
	struct diag d;
	struct geo_sites *sites = NULL;
	struct geo_db *db = NULL;
	struct arena *a = NULL;
	diag_init(&d);
	struct config *c = config_load(path, &d);
	if (!c) {
		diag_print(&d);
		goto out;
	}
	struct found f;
	int matches = find_geo_name(c, name, &f);
	if (matches != 1) {
		fprintf(stderr, "geoacme explain: '%s' %s\n", name,
		        matches ? "matches geo names in several zones: give it absolute"
		                : "is not a configured geo name");
		list_geo_names(c);
		rc = EXIT_USAGE;
		goto out;
	}
	sites = geo_sites_new(c, err);
	if (!sites) {
		fprintf(stderr, "%s: %s\n", path, err);
		goto out;
	}
	a = arena_new(0);
	struct geo_sets *gs = a ? geo_sets_build(a, sites, f.gn, err) : NULL;
	if (!gs) {
		fprintf(stderr, "%s:%d: %s\n", config_file_of(c, f.gn->pos), f.gn->pos.line,
		        a ? err : "out of memory");
		goto out;
	}
	uint8_t apex[DNAME_MAX];
	if (dname_from_str(f.zone->zone, apex) < 0 ||
	    geo_sets_build_https(gs, a, sites, f.gn, apex, err) < 0) {
		fprintf(stderr, "%s:%d: %s\n", config_file_of(c, f.gn->https.pos),
		        f.gn->https.pos.line, err);
		goto out;
	}
	if (qtype == RR_HTTPS && !f.gn->https.enabled) {
		fprintf(stderr, "geoacme explain: %s has no `https` in the config: HTTPS gets NODATA\n",
		        f.owner);
		rc = EXIT_OK;
		goto out;
	}

	if (map) {
		print_map(map, gs, sites, f.owner, qtype);
		rc = EXIT_OK;
		goto out;
	}
	printf("question: %s %s\n", f.owner, type_name);
	if (client) {
		struct geo_location loc = { .db_index = -1 };
		int r = -ENOENT;
		if (c->geo.n_databases || c->geo.has_default_location) {
			db = geo_db_open(&c->geo, NULL, err);
			if (!db) {
				fprintf(stderr, "%s: %s\n", path, err);
				goto out;
			}
			r = geo_db_locate(db, client_family, client_addr, &loc);
		}
		char net[64];
		format_network(client_family, client_addr, loc.prefix, net, sizeof(net));
		if (ecs_len >= 0)
			printf("client:   ECS %s (source prefix /%d, as a resolver sends it)\n", client,
			       ecs_len);
		else
			printf("client:   %s\n", client);
		if (loc.found) {
			lat = loc.lat;
			lon = loc.lon;
			printf("location: %.6f, %.6f from %s (layout %s), network %s\n", lat, lon,
			       geo_db_path(db, (size_t)loc.db_index),
			       geo_db_layout(db, (size_t)loc.db_index), net);
		} else if (r == 0) {
			lat = loc.lat;
			lon = loc.lon;
			printf("location: %.6f, %.6f, the default location: no database places "
			       "%s (the miss covers %s)\n", lat, lon, client, net);
		} else {
			/* Same stand-in as the server (core/answer.c): the first site. */
			geo_site_position(sites, 0, &lat, &lon);
			printf("location: unknown: %s and no default_location is set; the server "
			       "answers as if the client were at the first site, %s (%.6f, %.6f)\n",
			       db ? "no database places the client" : "no geo databases are configured",
			       geo_site_name(sites, 0), lat, lon);
		}
		if (db)
			printf("ECS scope: /%u (the answer holds for %s)\n", loc.prefix, net);
	} else {
		printf("location: %.6f, %.6f (given with --at)\n", lat, lon);
	}

	struct geo_choice ch;
	if (geo_sets_choose(gs, sites, qtype, lat, lon, &ch) < 0) {
		fprintf(stderr, "geoacme explain: cannot choose for this type\n");
		rc = EXIT_RUNTIME;
		goto out;
	}
	printf("rule: ratio %g, margin %g mi, TTL %u single / %u pair; no health checks run "
	       "here, so every enabled site is alive\n\n",
	       f.gn->ratio, f.gn->margin_miles, f.gn->ttl_single, f.gn->ttl_pair);
	print_sites(sites, gs, qtype, family, lat, lon, &ch);
	printf("\n");
	if (!ch.rrset) {
		printf("decision: no candidate site has an %s address → NODATA (no records)\n",
		       family == 4 ? "IPv4" : "IPv6");
		rc = EXIT_OK;
		goto out;
	}
	print_decision(&ch, f.gn);
	if (qtype == RR_HTTPS) {
		print_https(sites, f.gn, f.owner, apex, &ch);
		rc = EXIT_OK;
		goto out;
	}
	printf("\nanswer:\n");
	for (int k = 0; k < ch.rrset->count; k++) {
		const struct rdata *rd = &ch.rrset->rr[ch.reversed ? ch.rrset->count - 1 - k : k];
		char text[INET6_ADDRSTRLEN];
		inet_ntop(family == 4 ? AF_INET : AF_INET6, rd->data, text, sizeof(text));
		printf("%s %u IN %s %s\n", f.owner, ch.rrset->ttl, type_name, text);
	}
	rc = EXIT_OK;
out:
	arena_free(a);
	geo_db_free(db);
	geo_sites_free(sites);
	config_free(c);
	diag_clear(&d);
	return rc;
}
