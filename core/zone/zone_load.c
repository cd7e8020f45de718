/* SPDX-License-Identifier: MIT */
/* Static zones: zone file + geo names (+ signing through the hook). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/geo/geo_db.h"
#include "core/geo/geo_sites.h"
#include "core/wire/dname.h"
#include "core/zone/geo_sets.h"
#include "core/zone/zone.h"
#include "core/zone/zone_file.h"
#include "core/zone/zone_load.h"

static int add_record(void *arg, const uint8_t *owner, uint16_t type, uint32_t ttl,
                      const uint8_t *rdata, uint16_t rdlen, int line)
{
	(void)line;
	return zone_builder_add(arg, owner, type, ttl, rdata, rdlen);
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

int zone_load_geo(struct zone_builder *b, const struct config *c, const struct config_zone *zc,
                  const struct geo_sites *sites, struct diag *d)
{
	(void)c;
	size_t before = d->n;
	for (size_t i = 0; i < zc->n_geo; i++) {
		const struct config_geo_name *gn = &zc->geo[i];
		uint8_t owner[DNAME_MAX];
		if (zone_load_geo_owner(zc, gn->name, owner) < 0) {
			diag_add(d, c->path, gn->pos.line, gn->pos.col, "expected a valid domain name, found '%s'",
			         gn->name);
			continue;
		}
		if (!sites) {
			diag_add(d, c->path, gn->pos.line, gn->pos.col, "geo name '%s' needs [[sites]]", gn->name);
			continue;
		}
		char err[256] = "";
		struct geo_sets *sets = geo_sets_build(zone_builder_arena(b), sites, gn, err);
		if (!sets) {
			diag_add(d, c->path, gn->pos.line, gn->pos.col, "%s", err);
			continue;
		}
		char fqdn[4 * DNAME_MAX + 2];   /* every byte escaped as \DDD at worst */
		dname_to_str(owner, fqdn, sizeof(fqdn));
		if (geo_sets_set_counters(sets, zone_builder_arena(b), sites, fqdn) < 0) {
			diag_add(d, c->path, gn->pos.line, gn->pos.col, "out of memory");
			continue;
		}
		int rc = zone_builder_add_geo(b, owner, sets);
		if (rc == -EINVAL)
			diag_add(d, c->path, gn->pos.line, gn->pos.col, "geo name '%s' is outside zone %s",
			         gn->name, zc->zone);
		else if (rc == -EEXIST)
			diag_add(d, c->path, gn->pos.line, gn->pos.col, "geo name '%s' is configured twice",
			         gn->name);
		else if (rc < 0)
			diag_add(d, c->path, gn->pos.line, gn->pos.col, "cannot add geo name '%s': %s",
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
		diag_add(d, c->path, zc->pos.line, zc->pos.col, "expected a valid zone name, found '%s'",
		         zc->zone);
		return NULL;
	}
	const char *file = zc->file ? zc->file : zc->zone_path;
	if (!file) {
		diag_add(d, c->path, zc->pos.line, zc->pos.col, "zone %s has no zone file", zc->zone);
		return NULL;
	}
	struct zone_builder *b = zone_builder_new(apex);
	if (!b) {
		diag_add(d, c->path, zc->pos.line, zc->pos.col, "out of memory");
		return NULL;
	}
	int err = zone_file_read(file, apex, add_record, b, d);
	err |= zone_load_geo(b, c, zc, sites, d);
	if (err) {
		zone_builder_free(b);
		return NULL;
	}
	return zone_builder_finish(b, signer, file, d);
}

struct zone *zone_load_resign(const struct config *c, const struct config_zone *zc,
                              const struct zone *cur, const struct geo_sites *sites,
                              const struct zone_signer *signer, struct diag *d)
{
	struct zone_builder *b = zone_builder_new(cur->apex);
	if (!b) {
		diag_add(d, c->path, zc->pos.line, zc->pos.col, "out of memory");
		return NULL;
	}
	int rc = zone_copy_loaded(cur, b);
	if (rc < 0) {
		diag_add(d, c->path, zc->pos.line, zc->pos.col, "zone %s: %s", zc->zone, strerror(-rc));
		zone_builder_free(b);
		return NULL;
	}
	if (zone_load_geo(b, c, zc, sites, d) < 0) {
		zone_builder_free(b);
		return NULL;
	}
	return zone_builder_finish(b, signer, zc->file ? zc->file : zc->zone_path, d);
}
