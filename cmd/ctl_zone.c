/* SPDX-License-Identifier: MIT */
/*
 * zone-status: one zone's state.
 */
#include <errno.h>

#include "cmd/ctl_commands.h"
#include "cmd/runtime.h"
#include "core/conf/config.h"
#include "core/zone/zone.h"

/*
 * "key value" lines:
 *   zone example.net.
 *   role primary
 *   serial 7
 *   signature_expiry 1767225600      (unix seconds; 0 when unsigned)
 */
int ctl_zone_status(struct ctl_ctx *c, int argc, char **argv, FILE *out)
{
	(void)argc;
	const struct config_zone *zc;
	const struct zone *z;
	int i = ctl_find_zone(c, argv[1], &zc, &z, out);
	if (i < 0)
		return i;
	fprintf(out, "zone %s\nrole %s\n", z ? zone_name(z) : zc->zone,
	        zc->secondary ? "secondary" : "primary");
	if (z)
		fprintf(out, "serial %u\n", zone_serial(z));
	else
		fputs("serial - (not served)\n", out);
	uint64_t exp = z && zone_is_signed(z) && zone_expires_at(z)
	               ? zone_expires_at(z) + c->gen->cfg->sig_refresh_s : 0;
	fprintf(out, "signature_expiry %llu\n", (unsigned long long)exp);
	return 0;
}
