/* SPDX-License-Identifier: MIT */
/*
 * The control channel's dispatcher: a command line -> its row in
 * ctl_commands[] -> the handler; plus `help` and the lookups handlers share.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "cmd/ctl_commands.h"
#include "cmd/runtime.h"
#include "core/conf/config.h"
#include "core/geo/geo_sites.h"
#include "core/wire/dname.h"
#include "core/zone/zone.h"
#include "core/zone/zone_table.h"

static void help(FILE *out)
{
	fputs("commands:\n", out);
	for (const struct ctl_command *k = ctl_commands; k->name; k++)
		fprintf(out, "  %-28s %s\n", k->usage, k->help);
	fprintf(out, "  %-28s %s\n", "help", "this list");
}

int ctl_dispatch(void *ctx, int argc, char **argv, FILE *out)
{
	struct ctl_ctx *c = ctx;
	if (strcmp(argv[0], "help") == 0) {
		help(out);
		return 0;
	}
	for (const struct ctl_command *k = ctl_commands; k->name; k++) {
		if (strcmp(k->name, argv[0]) != 0)
			continue;
		int n = argc - 1;
		if (n < k->min_args || n > k->max_args) {
			fprintf(out, "usage: %s", k->usage);
			return -EINVAL;
		}
		if (!c->gen) {
			fputs("the server is starting; try again", out);
			return -EAGAIN;
		}
		return k->fn(c, argc, argv, out);
	}
	fprintf(out, "unknown command '%s' (try: help)", argv[0]);
	return -ENOENT;
}

/* "example.net" and "example.net." are the same zone; case does not matter. */
static bool same_zone(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	while (la > 1 && a[la - 1] == '.')
		la--;
	while (lb > 1 && b[lb - 1] == '.')
		lb--;
	return la == lb && strncasecmp(a, b, la) == 0;
}

int ctl_find_zone(struct ctl_ctx *c, const char *name, const struct config_zone **zc,
                  const struct zone **z, FILE *out)
{
	const struct config *cfg = c->gen->cfg;
	for (size_t i = 0; i < cfg->n_zones; i++) {
		if (!same_zone(cfg->zones[i].zone, name))
			continue;
		if (zc)
			*zc = &cfg->zones[i];
		if (z) {
			uint8_t apex[DNAME_BUF] = { 0 };
			*z = dname_from_str(cfg->zones[i].zone, apex) < 0 ? NULL
			     : zone_table_get(c->gen->zones, apex);
		}
		return (int)i;
	}
	fprintf(out, "unknown zone '%s'", name);
	return -ENOENT;
}

int ctl_find_site(struct ctl_ctx *c, const char *name, FILE *out)
{
	int i = c->gen->sites ? geo_sites_find(c->gen->sites, name) : -ENOENT;
	if (i < 0)
		fprintf(out, "unknown site '%s'", name);
	return i < 0 ? -ENOENT : i;
}
