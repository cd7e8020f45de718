/* SPDX-License-Identifier: MIT */
/*
 * zone-status, zone-refresh, zone-retransfer, zone-notify: one zone.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "cmd/ctl_commands.h"
#include "cmd/runtime.h"
#include "core/conf/config.h"
#include "core/wire/dname.h"
#include "core/zone/zone.h"
#include "xfr/notify.h"
#include "xfr/secondary.h"

#define CTL_TARGETS_MAX 64

static void apex_of(const struct config_zone *zc, uint8_t apex[DNAME_BUF])
{
	memset(apex, 0, DNAME_BUF);
	if (dname_from_str(zc->zone, apex) < 0)
		apex[0] = 0;
}

/*
 * "key value" lines, times in unix seconds (0: never / none):
 *   zone example.net.
 *   role primary | secondary
 *   serial 7
 *   signature_expiry 1767225600          (0 when unsigned)
 * a secondary:
 *   last_refresh T, next_refresh T (0 while a check runs), expires_at T
 *   (last_refresh + SOA expire), soa_refresh/soa_retry/soa_expire S
 * a primary, per NOTIFY target:
 *   notify_target 192.0.2.2:53 acknowledged_serial 7 unanswered_since 0
 *   (acknowledged_serial - before its first answer)
 */
int ctl_zone_status(struct ctl_ctx *c, int argc, char **argv, FILE *out)
{
	(void)argc;
	const struct config_zone *zc;
	const struct zone *z;
	int i = ctl_find_zone(c, argv[1], &zc, &z, out);
	if (i < 0)
		return i;
	uint8_t apex[DNAME_BUF];
	apex_of(zc, apex);
	char name[DNAME_BUF * 4];
	if (dname_to_str(apex, name, sizeof(name)) < 0)
		snprintf(name, sizeof(name), "%s", zc->zone);
	fprintf(out, "zone %s\nrole %s\n", name, zc->secondary ? "secondary" : "primary");
	if (z)
		fprintf(out, "serial %u\n", zone_serial(z));
	else
		fputs("serial - (not served)\n", out);
	struct secondary_state st;
	bool copy = zc->secondary && c->gen->secondary &&
	            secondary_zone_state(c->gen->secondary, apex, &st);
	/* A copy's, also while it is not served (expired: what it held). */
	uint64_t exp = copy ? (uint64_t)(st.signature_expiry > 0 ? st.signature_expiry : 0)
	               : z ? generation_signature_expiry(c->gen, z) : 0;
	fprintf(out, "signature_expiry %llu\n", (unsigned long long)exp);
	if (copy) {
		fprintf(out, "last_refresh %lld\nnext_refresh %lld\nexpires_at %lld\n"
		        "soa_refresh %u\nsoa_retry %u\nsoa_expire %u\n", (long long)st.refreshed_at,
		        (long long)st.next_check_at,
		        (long long)(st.refreshed_at ? st.refreshed_at + st.expire : 0), st.refresh,
		        st.retry, st.expire);
	}
	if (!zc->secondary && c->gen->notify) {
		struct notify_target_state t[CTL_TARGETS_MAX];
		size_t n = notify_targets(c->gen->notify, apex, t, CTL_TARGETS_MAX);
		fprintf(out, "notify_targets %zu\n", n);
		for (size_t k = 0; k < n && k < CTL_TARGETS_MAX; k++) {
			fprintf(out, "notify_target %s acknowledged_serial ", t[k].target);
			if (t[k].acked)
				fprintf(out, "%u", t[k].acked_serial);
			else
				fputc('-', out);
			fprintf(out, " unanswered_since %lld\n", (long long)t[k].unanswered_since);
		}
	}
	return 0;
}

static int secondary_only(struct ctl_ctx *c, const char *zone, const struct config_zone **zc,
                          uint8_t apex[DNAME_BUF], FILE *out, const char *cmd)
{
	int i = ctl_find_zone(c, zone, zc, NULL, out);
	if (i < 0)
		return i;
	if (!(*zc)->secondary || !c->gen->secondary) {
		fprintf(out, "%s is a primary here: %s is for secondary zones", (*zc)->zone, cmd);
		return -EINVAL;
	}
	apex_of(*zc, apex);
	return 0;
}

int ctl_zone_refresh(struct ctl_ctx *c, int argc, char **argv, FILE *out)
{
	(void)argc;
	const struct config_zone *zc;
	uint8_t apex[DNAME_BUF];
	int rc = secondary_only(c, argv[1], &zc, apex, out, "zone-refresh");
	if (rc < 0)
		return rc;
	rc = secondary_refresh(c->gen->secondary, apex, false, false);
	if (rc < 0) {
		fprintf(out, "%s: %s", zc->zone, strerror(-rc));
		return rc;
	}
	fprintf(out, "refresh of %s started (see zone-status and the log)\n", zc->zone);
	return 0;
}

/* zone-retransfer ZONE [--force] (either order) */
int ctl_zone_retransfer(struct ctl_ctx *c, int argc, char **argv, FILE *out)
{
	const char *zone = NULL;
	bool force = false;
	for (int k = 1; k < argc; k++) {
		if (strcmp(argv[k], "--force") == 0)
			force = true;
		else if (!zone)
			zone = argv[k];
		else {
			fputs("usage: zone-retransfer ZONE [--force]", out);
			return -EINVAL;
		}
	}
	if (!zone) {
		fputs("usage: zone-retransfer ZONE [--force]", out);
		return -EINVAL;
	}
	const struct config_zone *zc;
	uint8_t apex[DNAME_BUF];
	int rc = secondary_only(c, zone, &zc, apex, out, "zone-retransfer");
	if (rc < 0)
		return rc;
	rc = secondary_refresh(c->gen->secondary, apex, true, force);
	if (rc < 0) {
		fprintf(out, "%s: %s", zc->zone, strerror(-rc));
		return rc;
	}
	fprintf(out, "full transfer (AXFR) of %s started%s (see zone-status and the log)\n",
	        zc->zone, force ? ", taken at any serial" : "");
	return 0;
}

int ctl_zone_notify(struct ctl_ctx *c, int argc, char **argv, FILE *out)
{
	(void)argc;
	const struct config_zone *zc;
	int i = ctl_find_zone(c, argv[1], &zc, NULL, out);
	if (i < 0)
		return i;
	if (zc->secondary) {
		fprintf(out, "%s is a secondary here: zone-notify is for primary zones", zc->zone);
		return -EINVAL;
	}
	uint8_t apex[DNAME_BUF];
	apex_of(zc, apex);
	int rc = c->gen->notify ? notify_resend(c->gen->notify, apex) : -ENOENT;
	if (rc == -ENOENT) {
		fprintf(out, "%s has no notify targets", zc->zone);
		return rc;
	}
	if (rc < 0) {
		fprintf(out, "%s is not served yet", zc->zone);
		return rc;
	}
	fprintf(out, "NOTIFY of %s sent to %zu target%s (answers: zone-status)\n", zc->zone,
	        zc->n_notify, zc->n_notify == 1 ? "" : "s");
	return 0;
}
