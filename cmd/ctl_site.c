/* SPDX-License-Identifier: MIT */
/*
 * site-drain, site-undrain, site-auto: the operator's override of a
 * site's health (core/geo/geo_sites.h enum geo_admin), kept on disk by
 * cmd/site_admin.c so it survives a restart.  The geo answers change on
 * the next query: the answer sets for every combination of sites are built
 * and signed ahead of time, and the rule's decision cache is keyed on the
 * sites' state.
 */
#include <errno.h>

#include "cmd/ctl_commands.h"
#include "cmd/runtime.h"
#include "cmd/site_admin.h"
#include "core/conf/log.h"
#include "core/geo/geo_sites.h"

static const char *const what[] = {
	[GEO_ADMIN_AUTO] = "its health checks decide again",
	[GEO_ADMIN_DRAINED] = "out of every geo answer",
	[GEO_ADMIN_UNDRAINED] = "in every geo answer, whatever its health checks say",
};

static int set_admin(struct ctl_ctx *c, const char *name, enum geo_admin state, FILE *out)
{
	int i = ctl_find_site(c, name, out);
	if (i < 0)
		return i;
	enum geo_admin old = geo_site_admin(c->gen->sites, (size_t)i);
	char err[256];
	int rc = site_admin_set(c->admin, name, state, err);
	if (rc < 0) {
		fprintf(out, "site %s unchanged: %s", name, err);
		return rc;
	}
	geo_site_set_admin(c->gen->sites, (size_t)i, state);
	if (old != state)
		log_warn("site %s: admin state %s (was %s): %s", name, geo_admin_name(state),
		         geo_admin_name(old), what[state]);
	fprintf(out, "site %s: %s (was %s): %s\n", name, geo_admin_name(state),
	        geo_admin_name(old), what[state]);
	return 0;
}

int ctl_site_drain(struct ctl_ctx *c, int argc, char **argv, FILE *out)
{
	(void)argc;
	return set_admin(c, argv[1], GEO_ADMIN_DRAINED, out);
}

int ctl_site_undrain(struct ctl_ctx *c, int argc, char **argv, FILE *out)
{
	(void)argc;
	return set_admin(c, argv[1], GEO_ADMIN_UNDRAINED, out);
}

int ctl_site_auto(struct ctl_ctx *c, int argc, char **argv, FILE *out)
{
	(void)argc;
	return set_admin(c, argv[1], GEO_ADMIN_AUTO, out);
}
