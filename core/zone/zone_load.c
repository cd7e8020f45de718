/* SPDX-License-Identifier: MIT */
/* Static zones: zone file + geo names (+ signing through the hook). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/geo/geo_db.h"
#include "core/geo/geo_sites.h"
#include "core/wire/dname.h"
#include "core/wire/serial.h"
#include "core/zone/geo_sets.h"
#include "core/zone/zone.h"
#include "core/zone/zone_file.h"
#include "core/zone/zone_load.h"

struct load_ctx {
	struct zone_builder *b;
	const char *file;
	struct diag *d;
};

/* A record that would make the zone unservable is refused at its line. */
static int add_record(void *arg, const uint8_t *owner, uint16_t type, uint32_t ttl,
                      const uint8_t *rdata, uint16_t rdlen, int line)
{
	struct load_ctx *l = arg;
	const char *why = zone_builder_conflict(l->b, owner, type, rdata, rdlen);
	if (why) {
		char name[DNAME_MAX * 4 + 1];
		dname_to_str(owner, name, sizeof(name));
		diag_add(l->d, l->file, line, 0, "%s: %s", name, why);
		return 1;   /* said; zone_file_read counts the diagnostic */
	}
	return zone_builder_add(l->b, owner, type, ttl, rdata, rdlen);
}


int zone_load_geo_owner(const struct config_zone *zc, const char *name, uint8_t *out)
{
	char full[DNAME_MAX * 4 + 2];
	size_t n = strlen(name);
	if (strcmp(name, "@") == 0)
		snprintf(full, sizeof(full), "%s", zc->zone);
	else if (n > 0 && name[n - 1] == '.')
		snprintf(full, sizeof(full), "%s", name);
	else
		snprintf(full, sizeof(full), "%s.%s", name, zc->zone);
	return dname_from_str(full, out);
}

/*
 * The per-site names of a geo name with `https`: <site>.<site_names>.<zone>
 * holds the site's A and AAAA, written once in [[sites]].  These never
 * vary by client (ECS scope 0), so they may go in Additional sections.
 * Disabled sites get none.  A second geo name with the same site_names
 * shares them.
 */
static void add_site_names(struct zone_builder *b, const struct config *c,
                           const struct config_zone *zc, size_t gi, const uint8_t *apex,
                           const struct geo_sites *sites, struct diag *d)
{
	const struct config_geo_name *gn = &zc->geo[gi];
	for (size_t j = 0; j < gi; j++)
		if (zc->geo[j].https.enabled && zc->geo[j].https.site_names &&
		    strcasecmp(zc->geo[j].https.site_names, gn->https.site_names) == 0)
			return;   /* made already */
	for (size_t i = 0; i < geo_sites_count(sites); i++) {
		if (!geo_site_enabled(sites, i))
			continue;
		uint8_t name[DNAME_MAX];
		char text[DNAME_MAX * 4 + 2];
		if (geo_sets_site_name(geo_site_name(sites, i), gn->https.site_names, apex, name) < 0) {
			diag_add(d, config_file_of(c, gn->https.pos), gn->https.pos.line, gn->https.pos.col,
			         "site \"%s\" does not make a valid name under site_names \"%s\"",
			         geo_site_name(sites, i), gn->https.site_names);
			continue;
		}
		dname_to_str(name, text, sizeof(text));
		if (zone_builder_has_name(b, name)) {
			diag_add(d, config_file_of(c, gn->https.pos), gn->https.pos.line, gn->https.pos.col,
			         "%s is the per-site name of site \"%s\" (https.site_names) but the zone "
			         "file has records there too", text, geo_site_name(sites, i));
			continue;
		}
		for (int fam = 4; fam <= 6; fam += 2) {
			uint8_t addr[16];
			if (!geo_site_address(sites, i, fam, addr))
				continue;
			int rc = zone_builder_add(b, name, fam == 4 ? RR_A : RR_AAAA, gn->ttl_pair, addr,
			                          fam == 4 ? 4 : 16);
			if (rc < 0)
				diag_add(d, config_file_of(c, gn->https.pos), gn->https.pos.line, gn->https.pos.col,
				         "cannot add %s: %s", text, strerror(-rc));
		}
	}
}

int zone_load_geo(struct zone_builder *b, const struct config *c, const struct config_zone *zc,
                  const struct geo_sites *sites, struct diag *d)
{
	size_t before = d->n;
	uint8_t apex[DNAME_MAX];
	if (dname_from_str(zc->zone, apex) < 0) {
		diag_add(d, config_file_of(c, zc->pos), zc->pos.line, zc->pos.col, "expected a valid zone name, found '%s'",
		         zc->zone);
		return -EINVAL;
	}
	for (size_t i = 0; i < zc->n_geo; i++) {
		const struct config_geo_name *gn = &zc->geo[i];
		uint8_t owner[DNAME_MAX];
		if (zone_load_geo_owner(zc, gn->name, owner) < 0) {
			diag_add(d, config_file_of(c, gn->pos), gn->pos.line, gn->pos.col, "expected a valid domain name, found '%s'",
			         gn->name);
			continue;
		}
		if (owner[0] == 1 && owner[1] == '*') {
			/* Its answer would be chosen per client for names nobody
			 * listed, and a synthesized answer's ECS scope is 0. */
			diag_add(d, config_file_of(c, gn->pos), gn->pos.line, gn->pos.col, "geo name '%s' cannot be a "
			         "wildcard (a geo answer is chosen per client; list the names)", gn->name);
			continue;
		}
		if (!sites) {
			diag_add(d, config_file_of(c, gn->pos), gn->pos.line, gn->pos.col, "geo name '%s' needs [[sites]]", gn->name);
			continue;
		}
		char err[256] = "";
		struct geo_sets *sets = geo_sets_build(zone_builder_arena(b), sites, gn, err);
		if (!sets) {
			diag_add(d, config_file_of(c, gn->pos), gn->pos.line, gn->pos.col, "%s", err);
			continue;
		}
		char fqdn[4 * DNAME_MAX + 2];   /* every byte escaped as \DDD at worst */
		dname_to_str(owner, fqdn, sizeof(fqdn));
		if (geo_sets_set_counters(sets, zone_builder_arena(b), sites, fqdn) < 0) {
			diag_add(d, config_file_of(c, gn->pos), gn->pos.line, gn->pos.col, "out of memory");
			continue;
		}
		if (gn->https.enabled) {
			if (geo_sets_build_https(sets, zone_builder_arena(b), sites, gn, apex, err) < 0) {
				diag_add(d, config_file_of(c, gn->https.pos), gn->https.pos.line, gn->https.pos.col, "%s", err);
				continue;
			}
			add_site_names(b, c, zc, i, apex, sites, d);
		}
		/* The transfer fallback: the answer for default_location, else for
		 * a client at the first site (what the query path does too). */
		double lat, lon;
		if (c->geo.has_default_location) {
			lat = c->geo.default_lat;
			lon = c->geo.default_lon;
		} else {
			geo_site_position(sites, 0, &lat, &lon);
		}
		if (geo_sets_set_fallback(sets, zone_builder_arena(b), sites, gn, lat, lon) < 0) {
			diag_add(d, config_file_of(c, gn->pos), gn->pos.line, gn->pos.col, "out of memory");
			continue;
		}
		int rc = zone_builder_add_geo(b, owner, sets);
		if (rc == -EINVAL)
			diag_add(d, config_file_of(c, gn->pos), gn->pos.line, gn->pos.col, "geo name '%s' is outside zone %s",
			         gn->name, zc->zone);
		else if (rc == -EEXIST)
			diag_add(d, config_file_of(c, gn->pos), gn->pos.line, gn->pos.col, "geo name '%s' is configured twice",
			         gn->name);
		else if (rc < 0)
			diag_add(d, config_file_of(c, gn->pos), gn->pos.line, gn->pos.col, "cannot add geo name '%s': %s",
			         gn->name, strerror(-rc));
	}
	return d->n > before ? -EINVAL : 0;
}

struct zone *zone_load_static(const struct config *c, const struct config_zone *zc,
                              const struct geo_sites *sites, const struct zone_signer *signer,
                              struct diag *d)
{
	uint8_t apex[DNAME_MAX];
	if (dname_from_str(zc->zone, apex) < 0) {
		diag_add(d, config_file_of(c, zc->pos), zc->pos.line, zc->pos.col, "expected a valid zone name, found '%s'",
		         zc->zone);
		return NULL;
	}
	const char *file = zc->file ? zc->file : zc->zone_path;
	if (!file) {
		diag_add(d, config_file_of(c, zc->pos), zc->pos.line, zc->pos.col, "zone %s has no zone file", zc->zone);
		return NULL;
	}
	struct zone_builder *b = zone_builder_new(apex);
	if (!b) {
		diag_add(d, config_file_of(c, zc->pos), zc->pos.line, zc->pos.col, "out of memory");
		return NULL;
	}
	struct load_ctx l = { b, file, d };
	int err = zone_file_read(file, apex, add_record, &l, d);
	err |= zone_load_geo(b, c, zc, sites, d);
	if (err) {
		zone_builder_free(b);
		return NULL;
	}
	/*
	 * A signed zone that secondaries copy: new signatures must come with a
	 * new serial, or the secondaries keep the old ones until they expire.
	 * Every build signs anew what is not cached (at start, on reload, at
	 * the refresh point), so the serial is raised to the clock (Knot's
	 * unixtime serial policy); a zone file serial ahead of the clock wins.
	 */
	if (signer && zc->axfr_policy != AXFR_DENY)
		zone_builder_raise_serial(b, (uint32_t)signer->now(signer->ctx));
	return zone_builder_finish(b, signer, file, d);
}

struct zone *zone_load_resign(const struct config *c, const struct config_zone *zc,
                              const struct zone *cur, const struct geo_sites *sites,
                              const struct zone_signer *signer, struct diag *d)
{
	struct zone_builder *b = zone_builder_new(zone_apex(cur));
	if (!b) {
		diag_add(d, config_file_of(c, zc->pos), zc->pos.line, zc->pos.col, "out of memory");
		return NULL;
	}
	int rc = zone_copy_loaded(cur, b);
	if (rc < 0) {
		diag_add(d, config_file_of(c, zc->pos), zc->pos.line, zc->pos.col, "zone %s: %s", zc->zone, strerror(-rc));
		zone_builder_free(b);
		return NULL;
	}
	if (zone_load_geo(b, c, zc, sites, d) < 0) {
		zone_builder_free(b);
		return NULL;
	}
	/* New signatures, new serial (see zone_load_static), always forward. */
	if (signer && zc->axfr_policy != AXFR_DENY) {
		uint32_t now = (uint32_t)signer->now(signer->ctx);
		zone_builder_raise_serial(b, serial_newer(now, zone_serial(cur)) ? now : zone_serial(cur) + 1);
	}
	return zone_builder_finish(b, signer, zc->file ? zc->file : zc->zone_path, d);
}
