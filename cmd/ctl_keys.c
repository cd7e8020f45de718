/* SPDX-License-Identifier: MIT */
/*
 * key-status, key-roll: a zone's DNSSEC keys under [zones.key_policy]
 * (dnssec/rollover.h, doc/dnssec.md).
 */
#include <errno.h>
#include <stdio.h>

#include "cmd/ctl_commands.h"
#include "cmd/runtime.h"
#include "core/conf/config.h"
#include "core/net/control.h"
#include "dnssec/rollover.h"

/* The zone's rollover, or NULL with the reason written to out. */
static struct rollover *zone_rollover(struct ctl_ctx *c, const char *name, FILE *out)
{
	const struct config_zone *zc;
	const struct zone *z;
	int i = ctl_find_zone(c, name, &zc, &z, out);
	if (i < 0)
		return NULL;
	struct rollover *r = c->gen->rolls ? c->gen->rolls[i] : NULL;
	if (!r)
		fprintf(out, "zone %s has no [zones.key_policy]: its keys do not roll\n", zc->zone);
	return r;
}

/*
 * Each key: "key TAG STATE ORIGIN FILE", then its transition times, one
 * per line; then "next WHEN: WHAT" (rollover_status).
 */
int ctl_key_status(struct ctl_ctx *c, int argc, char **argv, FILE *out)
{
	(void)argc;
	struct rollover *r = zone_rollover(c, argv[1], out);
	if (!r)
		return -ENOENT;
	char buf[8192];
	size_t n = rollover_status(r, buf, sizeof(buf));
	fwrite(buf, 1, n, out);
	return 0;
}

static void key_roll_answer(void *arg, uint64_t token, bool ok, const char *text)
{
	control_answer(arg, token, ok, text);
}

/*
 * Starts a rollover now (an emergency); refused while one runs.  Answered
 * once its first step is on disk and in effect: the new key generated and
 * the key state written beside the loop (dnssec/keystore_job.h).
 */
int ctl_key_roll(struct ctl_ctx *c, int argc, char **argv, FILE *out)
{
	(void)argc;
	struct rollover *r = zone_rollover(c, argv[1], out);
	if (!r)
		return -ENOENT;
	char err[256] = "";
	char ok[300];
	snprintf(ok, sizeof(ok), "started: a rollover of %.200s (see key-status and the log)\n",
	         argv[1]);
	uint64_t token = control_defer(c->control);
	int rc = rollover_start(r, token ? key_roll_answer : NULL, c->control, token, ok, err);
	if (rc < 0) {
		fprintf(out, "%s\n", err[0] ? err : "cannot start a rollover");
		return rc;
	}
	if (!token) {
		fputs(ok, out);
		return 0;
	}
	return CONTROL_LATER;   /* answered by key_roll_answer, perhaps already */
}
