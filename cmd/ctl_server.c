/* SPDX-License-Identifier: MIT */
/*
 * status and reload: the server as a whole.
 */
#include <errno.h>
#include <stdbool.h>

#include "cmd/ctl_commands.h"
#include "cmd/runtime.h"
#include "core/conf/config.h"
#include "core/geo/geo_sites.h"
#include "core/geo/health.h"
#include "core/net/loop.h"
#include "core/wire/dname.h"
#include "core/zone/zone.h"
#include "core/zone/zone_table.h"

#include <geoacme_version.h>   /* generated in the build folder: the same as `geoacme version` */

/* up, down (a family down counts), unchecked, or disabled (enabled = false). */
static const char *site_health(const struct generation *g, size_t i)
{
	if (!geo_site_enabled(g->sites, i))
		return "disabled";
	if (!health_last_result(g->health, i))
		return "unchecked";
	return geo_site_up(g->sites, i) ? "up" : "down";
}

/*
 * One line per fact, "key value" words, so a person reads it and a script
 * splits it:
 *   version 1.2.0 commit 0123abc
 *   uptime 3600
 *   zone example.net. serial 7 role primary
 *   site par health up admin drained
 */
int ctl_status(struct ctl_ctx *c, int argc, char **argv, FILE *out)
{
	(void)argc;
	(void)argv;
	const struct generation *g = c->gen;
	fprintf(out, "version %s commit %s\n", GEOACME_VERSION, GEOACME_COMMIT);
	fprintf(out, "uptime %lld\n", (long long)(loop_wall_s(c->loop) - c->started));
	for (size_t i = 0; i < g->cfg->n_zones; i++) {
		const struct config_zone *zc = &g->cfg->zones[i];
		uint8_t apex[DNAME_BUF] = { 0 };
		const struct zone *z = dname_from_str(zc->zone, apex) < 0 ? NULL
		                       : zone_table_get(g->zones, apex);
		char name[DNAME_BUF * 4];
		if (dname_to_str(apex, name, sizeof(name)) < 0)
			snprintf(name, sizeof(name), "%s", zc->zone);
		if (z)
			fprintf(out, "zone %s serial %u role %s\n", name, zone_serial(z),
			        zc->secondary ? "secondary" : "primary");
		else
			fprintf(out, "zone %s serial - role %s (not served)\n", name,
			        zc->secondary ? "secondary" : "primary");
	}
	for (size_t i = 0; g->sites && i < geo_sites_count(g->sites); i++)
		fprintf(out, "site %s health %s admin %s\n", geo_site_name(g->sites, i),
		        site_health(g, i), geo_admin_name(geo_site_admin(g->sites, i)));
	return 0;
}

int ctl_reload(struct ctl_ctx *c, int argc, char **argv, FILE *out)
{
	(void)argc;
	(void)argv;
	if (!c->reload) {
		fputs("reload is not available", out);
		return -ENOTSUP;
	}
	return c->reload(c->reload_arg, out);
}
