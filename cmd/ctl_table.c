/* SPDX-License-Identifier: MIT */
/*
 * The control channel's commands: one row each (cmd/ctl_commands.h says
 * how to add one).  `help` is the dispatcher's own and lists this table.
 */
#include <stddef.h>

#include "cmd/ctl_commands.h"

const struct ctl_command ctl_commands[] = {
	/* name, arguments (min, max), handler, usage, help */
	{ "status", 0, 0, ctl_status, "status",
	  "version, uptime, zones with serial and role, sites with health and admin state" },
	{ "zone-status", 1, 1, ctl_zone_status, "zone-status ZONE",
	  "serial, role, refresh and expiry (secondary), NOTIFY targets (primary), signatures" },
	{ "zone-refresh", 1, 1, ctl_zone_refresh, "zone-refresh ZONE",
	  "secondary: check the primaries now (IXFR), as a NOTIFY would" },
	{ "zone-retransfer", 1, 2, ctl_zone_retransfer, "zone-retransfer ZONE [--force]",
	  "secondary: a full transfer (AXFR); --force takes a serial that is not newer" },
	{ "zone-notify", 1, 1, ctl_zone_notify, "zone-notify ZONE",
	  "primary: send NOTIFY to every target again" },
	{ "site-drain", 1, 1, ctl_site_drain, "site-drain SITE",
	  "take the site out of every geo answer (kept across restarts)" },
	{ "site-undrain", 1, 1, ctl_site_undrain, "site-undrain SITE",
	  "put the site in every geo answer, whatever its health checks say" },
	{ "site-auto", 1, 1, ctl_site_auto, "site-auto SITE",
	  "let the site's health checks decide again" },
	{ "key-status", 1, 1, ctl_key_status, "key-status ZONE",
	  "a zone with a key policy: each key's tag, state and transition times, and the next step" },
	{ "key-roll", 1, 1, ctl_key_roll, "key-roll ZONE",
	  "a zone with a key policy: start a key rollover now (an emergency roll)" },
	{ "reload", 0, 0, ctl_reload, "reload",
	  "reload the configuration and zone files, as SIGHUP (built beside the loop); answers "
	  "with the outcome once it is swapped in" },
	{ NULL, 0, 0, NULL, NULL, NULL },
};
