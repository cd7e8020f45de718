/* SPDX-License-Identifier: MIT */
/*
 * The location half of the geo rule: .mmdb files through libmaxminddb,
 * memory-mapped.  Two layouts are in use:
 *   MaxMind GeoIP2/GeoLite2-City:  { location: { latitude, longitude } }  (doubles)
 *   DB-IP lite (@ip-location-db):  { latitude, longitude }               (floats)
 * The path to the coordinates is kept per file as a NULL-terminated array
 * for MMDB_aget_value(); MMDB_get_value()/MMDB_vget_value() would calloc
 * one per call, which the query path must not do.  The lookup itself goes
 * through MMDB_lookup_sockaddr() with a sockaddr on the stack
 * (MMDB_lookup_string() calls getaddrinfo, which allocates).
 */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <maxminddb.h>

#include "core/conf/config.h"
#include "core/geo/geo_db.h"

#define PATH_MAX_DEPTH 8

enum layout { LAYOUT_UNKNOWN, LAYOUT_LOCATION, LAYOUT_FLAT, LAYOUT_CUSTOM };

/*
 * Decoding a record's coordinates walks its map twice (MMDB_aget_value)
 * and is most of a lookup's cost; records are shared by whole networks and
 * resolvers send the same few subnets again and again.  So a small
 * direct-mapped cache, made at open, remembers coordinates by the record's
 * offset in the data section.  A collision just decodes again.
 */
#define COORD_CACHE_BITS 12

struct coord_slot {
	uint32_t key;          /* record offset + 1; 0 = empty */
	bool ok;               /* the record has coordinates */
	double lat, lon;
};

struct db_file {
	MMDB_s mmdb;
	struct coord_slot *cache;   /* 1 << COORD_CACHE_BITS slots; written through const */
	bool open;
	char *path;
	enum layout layout;
	/* For LAYOUT_CUSTOM: components of the configured path, then lat/lon. */
	char *custom;          /* the path split in place at '.' */
	char *custom_name;     /* the path as configured */
	const char *lat_path[PATH_MAX_DEPTH + 2];
	const char *lon_path[PATH_MAX_DEPTH + 2];
};

struct geo_db {
	size_t n;
	struct db_file *f;
	bool has_default;
	double default_lat, default_lon;
};

static const char *const location_lat[] = { "location", "latitude", NULL };
static const char *const location_lon[] = { "location", "longitude", NULL };
static const char *const flat_lat[] = { "latitude", NULL };
static const char *const flat_lon[] = { "longitude", NULL };

static bool read_number(MMDB_entry_s *entry, const char *const *path, double *out)
{
	MMDB_entry_data_s d;

	if (MMDB_aget_value(entry, &d, path) != MMDB_SUCCESS || !d.has_data)
		return false;
	switch (d.type) {
	case MMDB_DATA_TYPE_DOUBLE:
		*out = d.double_value;
		return true;
	case MMDB_DATA_TYPE_FLOAT:
		*out = d.float_value;
		return true;
	case MMDB_DATA_TYPE_INT32:
		*out = d.int32;
		return true;
	default:
		return false;
	}
}

static bool read_at(MMDB_entry_s *entry, const char *const *lat_path,
                    const char *const *lon_path, double *lat, double *lon)
{
	if (!read_number(entry, lat_path, lat) || !read_number(entry, lon_path, lon))
		return false;
	return *lat >= -90.0 && *lat <= 90.0 && *lon >= -180.0 && *lon <= 180.0;
}

static bool read_coords(const struct db_file *f, MMDB_entry_s *entry, double *lat,
                        double *lon)
{
	switch (f->layout) {
	case LAYOUT_LOCATION:
		return read_at(entry, location_lat, location_lon, lat, lon);
	case LAYOUT_FLAT:
		return read_at(entry, flat_lat, flat_lon, lat, lon);
	case LAYOUT_CUSTOM:
		return read_at(entry, f->lat_path, f->lon_path, lat, lon);
	case LAYOUT_UNKNOWN:
		break;
	}
	return read_at(entry, location_lat, location_lon, lat, lon) ||
	       read_at(entry, flat_lat, flat_lon, lat, lon);
}

static bool read_coords_cached(const struct db_file *f, MMDB_entry_s *entry, double *lat,
                               double *lon)
{
	uint32_t key = entry->offset + 1;
	struct coord_slot *slot = &f->cache[(key * 2654435761u) >> (32 - COORD_CACHE_BITS)];
	if (slot->key != key) {
		slot->ok = read_coords(f, entry, &slot->lat, &slot->lon);
		slot->key = key;
	}
	*lat = slot->lat;
	*lon = slot->lon;
	return slot->ok;
}

/*
 * Detects the layout from the first records of the search tree (depth
 * first, leftmost first) rather than from database_type, which says
 * "city ipv4" for one DB-IP packaging and "DBIP-City-Lite" (MaxMind
 * layout) for another.  Bounded, since files have millions of nodes.
 */
static enum layout detect_layout(MMDB_s *mmdb)
{
	uint64_t stack[260];
	size_t top = 0;
	unsigned visited = 0, records = 0;

	stack[top++] = 0;
	while (top > 0 && visited < 20000 && records < 200) {
		uint64_t node = stack[--top];
		MMDB_search_node_s sn;

		visited++;
		if (MMDB_read_node(mmdb, (uint32_t)node, &sn) != MMDB_SUCCESS)
			break;
		uint8_t types[2] = { sn.right_record_type, sn.left_record_type };
		uint64_t recs[2] = { sn.right_record, sn.left_record };
		MMDB_entry_s entries[2] = { sn.right_record_entry, sn.left_record_entry };
		/* Right pushed first so the left side is explored first. */
		for (int side = 0; side < 2; side++) {
			if (types[side] == MMDB_RECORD_TYPE_SEARCH_NODE) {
				if (top < sizeof(stack) / sizeof(stack[0]))
					stack[top++] = recs[side];
			}
		}
		for (int side = 1; side >= 0; side--) {
			if (types[side] != MMDB_RECORD_TYPE_DATA)
				continue;
			double lat, lon;
			records++;
			if (read_at(&entries[side], location_lat, location_lon, &lat, &lon))
				return LAYOUT_LOCATION;
			if (read_at(&entries[side], flat_lat, flat_lon, &lat, &lon))
				return LAYOUT_FLAT;
		}
	}
	return LAYOUT_UNKNOWN;
}

static int set_custom_path(struct db_file *f, const char *lookup_path, char err[256])
{
	size_t n = 0;

	f->custom = strdup(lookup_path);
	f->custom_name = strdup(lookup_path);
	if (!f->custom || !f->custom_name) {
		snprintf(err, 256, "out of memory");
		return -ENOMEM;
	}
	for (char *save = NULL, *tok = strtok_r(f->custom, ".", &save); tok;
	     tok = strtok_r(NULL, ".", &save)) {
		if (n == PATH_MAX_DEPTH) {
			snprintf(err, 256, "geo lookup_path \"%s\" is deeper than %d keys",
			         lookup_path, PATH_MAX_DEPTH);
			return -EINVAL;
		}
		f->lat_path[n] = tok;
		f->lon_path[n] = tok;
		n++;
	}
	f->lat_path[n] = "latitude";
	f->lon_path[n] = "longitude";
	f->lat_path[n + 1] = NULL;
	f->lon_path[n + 1] = NULL;
	return 0;
}

struct geo_db *geo_db_open(const struct config_geo *g, char err[256])
{
	struct geo_db *db = calloc(1, sizeof(*db));

	if (!db)
		goto nomem;
	db->has_default = g->has_default_location;
	db->default_lat = g->default_lat;
	db->default_lon = g->default_lon;
	if (g->n_databases == 0 && !db->has_default) {
		snprintf(err, 256, "geo: no databases and no default location");
		goto fail;
	}
	if (g->n_databases) {
		db->f = calloc(g->n_databases, sizeof(*db->f));
		if (!db->f)
			goto nomem;
	}
	db->n = g->n_databases;
	for (size_t i = 0; i < g->n_databases; i++) {
		struct db_file *f = &db->f[i];
		const char *path = g->databases[i];

		f->path = strdup(path);
		f->cache = calloc((size_t)1 << COORD_CACHE_BITS, sizeof(*f->cache));
		if (!f->path || !f->cache)
			goto nomem;
		int r = MMDB_open(path, MMDB_MODE_MMAP, &f->mmdb);
		if (r != MMDB_SUCCESS) {
			if (r == MMDB_IO_ERROR || r == MMDB_FILE_OPEN_ERROR)
				snprintf(err, 256, "%s: %s (%s)", path, MMDB_strerror(r), strerror(errno));
			else
				snprintf(err, 256, "%s: %s", path, MMDB_strerror(r));
			goto fail;
		}
		f->open = true;
		if (!g->lookup_path) {
			f->layout = detect_layout(&f->mmdb);
		} else if (strcmp(g->lookup_path, "location") == 0) {
			f->layout = LAYOUT_LOCATION;
		} else if (g->lookup_path[0] == '\0') {
			f->layout = LAYOUT_FLAT;
		} else {
			f->layout = LAYOUT_CUSTOM;
			if (set_custom_path(f, g->lookup_path, err) < 0)
				goto fail;
		}
	}
	return db;
nomem:
	snprintf(err, 256, "out of memory");
fail:
	geo_db_free(db);
	return NULL;
}

void geo_db_free(struct geo_db *db)
{
	if (!db)
		return;
	for (size_t i = 0; i < db->n; i++) {
		if (db->f[i].open)
			MMDB_close(&db->f[i].mmdb);
		free(db->f[i].path);
		free(db->f[i].cache);
		free(db->f[i].custom);
		free(db->f[i].custom_name);
	}
	free(db->f);
	free(db);
}

int geo_db_locate(const struct geo_db *db, int family, const uint8_t *addr,
                  struct geo_location *out)
{
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	const struct sockaddr *sa;
	unsigned bits, prefix = 0;

	*out = (struct geo_location){ .db_index = -1 };
	if (family == 4) {
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		memcpy(&sin.sin_addr, addr, 4);
		sa = (const struct sockaddr *)&sin;
		bits = 32;
	} else if (family == 6) {
		memset(&sin6, 0, sizeof(sin6));
		sin6.sin6_family = AF_INET6;
		memcpy(&sin6.sin6_addr, addr, 16);
		sa = (const struct sockaddr *)&sin6;
		bits = 128;
	} else {
		return -EINVAL;
	}
	for (size_t i = 0; i < db->n; i++) {
		const struct db_file *f = &db->f[i];
		int merr = MMDB_SUCCESS;

		if (family == 6 && f->mmdb.metadata.ip_version == 4)
			continue;
		MMDB_lookup_result_s res = MMDB_lookup_sockaddr(&f->mmdb, sa, &merr);
		if (merr != MMDB_SUCCESS)
			continue;
		/* libmaxminddb counts an IPv4 address's bits from the top of the
		 * IPv6 tree, where IPv4 lives under ::/96. */
		unsigned p = res.netmask;
		if (family == 4 && f->mmdb.metadata.ip_version == 6)
			p = p >= 96 ? p - 96 : 0;
		if (p > bits)
			p = bits;
		/* Several files consulted: the answer holds only where all of
		 * their verdicts hold, the narrowest of the networks. */
		if (p > prefix)
			prefix = p;
		double lat, lon;
		if (res.found_entry && read_coords_cached(f, &res.entry, &lat, &lon)) {
			out->found = true;
			out->lat = lat;
			out->lon = lon;
			out->prefix = (uint8_t)prefix;
			out->db_index = (int)i;
			return 0;
		}
	}
	out->prefix = (uint8_t)prefix;
	if (!db->has_default)
		return -ENOENT;
	out->lat = db->default_lat;
	out->lon = db->default_lon;
	return 0;
}

size_t geo_db_count(const struct geo_db *db)
{
	return db->n;
}

const char *geo_db_path(const struct geo_db *db, size_t i)
{
	return i < db->n ? db->f[i].path : NULL;
}

const char *geo_db_layout(const struct geo_db *db, size_t i)
{
	if (i >= db->n)
		return NULL;
	switch (db->f[i].layout) {
	case LAYOUT_LOCATION:
		return "location";
	case LAYOUT_FLAT:
		return "flat";
	case LAYOUT_CUSTOM:
		return db->f[i].custom_name;
	case LAYOUT_UNKNOWN:
		break;
	}
	return "unknown";
}

uint64_t geo_db_build_epoch(const struct geo_db *db, size_t i)
{
	return i < db->n && db->f[i].open ? db->f[i].mmdb.metadata.build_epoch : 0;
}

const char *geo_db_type(const struct geo_db *db, size_t i)
{
	return i < db->n && db->f[i].open && db->f[i].mmdb.metadata.database_type
	       ? db->f[i].mmdb.metadata.database_type : "";
}
