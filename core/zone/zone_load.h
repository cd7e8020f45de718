/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Builds the snapshot of a file-backed zone from its configuration: the
 * zone file's records, the zone's geo names (their answer sets built over
 * the configured sites), then the optional signer.
 */
#include <stdint.h>

struct config;
struct config_zone;
struct diag;
struct geo_sites;
struct zone;
struct zone_builder;
struct zone_signer;

/* Returns the snapshot, or NULL with every problem added to d. */
struct zone *zone_load_static(const struct config *c, const struct config_zone *zc,
                              const struct geo_sites *sites, const struct zone_signer *signer,
                              struct diag *d);

/*
 * The same zone built again from its current snapshot `cur` (records as
 * loaded, geo names from the configuration) and signed anew: what the
 * re-sign timer does.  Reads no file, so an edited or half-written zone
 * file on disk changes nothing until a reload (SIGHUP).
 */
struct zone *zone_load_resign(const struct config *c, const struct config_zone *zc,
                              const struct zone *cur, const struct geo_sites *sites,
                              const struct zone_signer *signer, struct diag *d);

/*
 * Adds the zone's geo names to a builder (also used for zones whose other
 * records come from elsewhere).  Returns 0 or -EINVAL with problems in d.
 */
int zone_load_geo(struct zone_builder *b, const struct config *c, const struct config_zone *zc,
                  const struct geo_sites *sites, struct diag *d);
/* A geo name's owner: relative to the zone unless it ends with a dot ("@"
 * is the apex).  Returns the wire length or -EINVAL. */
int zone_load_geo_owner(const struct config_zone *zc, const char *name, uint8_t *out);
