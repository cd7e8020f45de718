/* SPDX-License-Identifier: MIT */
/*
 * The location half of the geo rule: .mmdb files through libmaxminddb.
 * Two layouts are in use:
 *   MaxMind GeoIP2/GeoLite2-City:  { location: { latitude, longitude } }  (doubles)
 *   DB-IP lite (@ip-location-db):  { latitude, longitude }               (floats)
 * The path to the coordinates is kept per file as a NULL-terminated array
 * for MMDB_aget_value(); MMDB_get_value()/MMDB_vget_value() would calloc
 * one per call, which the query path must not do.  The lookup itself goes
 * through MMDB_lookup_sockaddr() with a sockaddr on the stack
 * (MMDB_lookup_string() calls getaddrinfo, which allocates).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <maxminddb.h>

#include "core/conf/config.h"
#include "core/conf/log.h"
#include "core/geo/geo_db.h"
#include "core/net/loop.h"

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

/* What identifies the file's contents on disk: a change to any of these
 * (rename over: inode; cp over or truncate + write: size or mtime) means a
 * new version. */
struct file_id {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

/*
 * A new version being copied into its private memfd, GEO_COPY_SLICE bytes
 * per loop turn (issue #26.3): a 64 MB copy made in one callback stalled
 * every query for 72-147 ms, 3 GB for 20 s.  Only opening the finished,
 * sealed copy, validating it (a few lookups) and the swap happen in one
 * turn.
 */
struct db_copy {
	int src, mfd;          /* -1 when closed */
	off_t done, size;
	struct file_id id;     /* the version being copied, as fstat() saw it */
};

#define GEO_COPY_SLICE (1 << 20)
#define GEO_COPY_BUF (1 << 20)

struct db_file {
	MMDB_s mmdb;
	bool copying;               /* copy below is in progress */
	struct db_copy copy;
	struct coord_slot *cache;   /* 1 << COORD_CACHE_BITS slots; written through const */
	bool open;
	bool private_copy;          /* mmdb maps a sealed memfd, not the file */
	char *path;
	struct file_id loaded;      /* the version being served */
	struct file_id seen;        /* a different version seen on the last check */
	bool have_seen;
	struct file_id failed;      /* a version that did not load: not retried */
	bool have_failed;
	enum layout layout;
	/* For LAYOUT_CUSTOM: components of the configured path, then lat/lon. */
	char *custom;          /* the path split in place at '.' */
	char *custom_name;     /* the path as configured */
	const char *lat_path[PATH_MAX_DEPTH + 2];
	const char *lon_path[PATH_MAX_DEPTH + 2];
};

/*
 * The search-tree walk (up to 128 steps, one per address bit) is the other
 * large cost, and its verdict is a function of the address alone while
 * the files stay as loaded (a reload, check_file(), empties it).  A
 * second direct-mapped cache, keyed by the exact address looked up (an ECS
 * address arrives already cut to its source prefix, so a resolver's /24
 * is one key), remembers the whole verdict.  A collision walks again.
 */
#define LOCATE_CACHE_BITS 12

struct locate_slot {
	uint8_t addr[16];
	uint8_t family;        /* 4 or 6; 0 = empty */
	int8_t rc;             /* what geo_db_locate returned */
	struct geo_location loc;
};

struct geo_db {
	size_t n;
	struct db_file *f;
	bool has_default;
	double default_lat, default_lon;
	const char *lookup_path;    /* owned by the config; valid while db is */
	char *lookup_path_copy;
	struct loop *loop;          /* set by geo_db_watch() */
	int64_t timer;
	int64_t slice_timer;        /* the next slice of a copy in progress */
	uint8_t *copy_buf;          /* GEO_COPY_BUF while a copy is in progress */
	uint64_t max_bytes;         /* [geo] max_database_mib */
	uint32_t interval_ms;
	unsigned long reloads;
	struct locate_slot *locate_cache;   /* written through const, like coord_slot */
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

static void file_id_of(const struct stat *st, struct file_id *id)
{
	*id = (struct file_id){ .dev = st->st_dev, .ino = st->st_ino, .size = st->st_size,
	                        .mtime = st->st_mtim };
}

static bool file_id_eq(const struct file_id *a, const struct file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/*
 * Why a private copy: libmaxminddb maps the file MAP_SHARED, so whoever
 * rewrites the file in place (cp over it, or truncate and write, which is
 * what most download scripts do) changes the bytes under a running lookup,
 * and a truncation turns the next access past the new end into SIGBUS.
 * So the file is read once into a memfd, sealed against any change in size
 * or content, and libmaxminddb maps that through /proc/self/fd: nothing
 * anyone does to the file on disk can reach the mapping.  The cost is the
 * file's size in resident memory (shmem), where a mapping of the file
 * would have paged in only what lookups touch (see doc/geo.md).
 *
 * Returns the memfd (>= 0) with *id describing the file that was copied,
 * or a negative errno with err filled.  -EAGAIN: the file changed while it
 * was read (try again later).
 */
static int copy_to_memfd(const char *path, struct file_id *id, char err[256])
{
	int src = open(path, O_RDONLY | O_CLOEXEC);
	if (src < 0) {
		int e = errno;
		snprintf(err, 256, "%s: %s", path, strerror(e));
		return -e;
	}
	struct stat before, after;
	int mfd = -1, rc;
	char *buf = NULL;
	if (fstat(src, &before) < 0) {
		rc = -errno;
		snprintf(err, 256, "%s: %s", path, strerror(-rc));
		goto fail;
	}
	mfd = memfd_create("geoacme-mmdb", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	buf = malloc(1 << 20);
	if (mfd < 0 || !buf) {
		rc = mfd < 0 ? -errno : -ENOMEM;
		snprintf(err, 256, "%s: cannot make a private copy: %s", path, strerror(-rc));
		goto fail;
	}
	off_t total = 0;
	for (;;) {
		ssize_t r = read(src, buf, 1 << 20);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			snprintf(err, 256, "%s: %s", path, strerror(-rc));
			goto fail;
		}
		if (r == 0)
			break;
		for (ssize_t off = 0; off < r;) {
			ssize_t w = write(mfd, buf + off, (size_t)(r - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				rc = -errno;
				snprintf(err, 256, "%s: cannot make a private copy: %s", path,
				         strerror(-rc));
				goto fail;
			}
			off += w;
		}
		total += r;
	}
	if (fstat(src, &after) < 0) {
		rc = -errno;
		snprintf(err, 256, "%s: %s", path, strerror(-rc));
		goto fail;
	}
	file_id_of(&before, id);
	struct file_id id_after;
	file_id_of(&after, &id_after);
	if (!file_id_eq(id, &id_after) || total != before.st_size) {
		rc = -EAGAIN;
		snprintf(err, 256, "%s: the file changed while it was read", path);
		goto fail;
	}
	/* Nobody, us included, can change the copy from here on. */
	if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		rc = -errno;
		snprintf(err, 256, "%s: cannot seal the private copy: %s", path, strerror(-rc));
		goto fail;
	}
	free(buf);
	close(src);
	return mfd;
fail:
	free(buf);
	if (mfd >= 0)
		close(mfd);
	close(src);
	return rc;
}

/* Checks that the search tree and the data section can be read. */
static int validate(MMDB_s *mmdb, const char *path, char err[256])
{
	MMDB_search_node_s sn;
	if (mmdb->metadata.node_count == 0 ||
	    (mmdb->metadata.ip_version != 4 && mmdb->metadata.ip_version != 6)) {
		snprintf(err, 256, "%s: no search tree or an unknown IP version", path);
		return -EBADMSG;
	}
	int r = MMDB_read_node(mmdb, 0, &sn);
	if (r != MMDB_SUCCESS) {
		snprintf(err, 256, "%s: %s", path, MMDB_strerror(r));
		return -EBADMSG;
	}
	/* A few lookups across the address space walk the tree to its leaves. */
	static const uint8_t probes[][4] = { { 1, 1, 1, 1 }, { 81, 0, 0, 1 }, { 192, 0, 2, 1 },
	                                     { 223, 255, 255, 254 } };
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		struct sockaddr_in sin = { .sin_family = AF_INET };
		memcpy(&sin.sin_addr, probes[i], 4);
		int merr = MMDB_SUCCESS;
		MMDB_lookup_result_s res =
		    MMDB_lookup_sockaddr(mmdb, (const struct sockaddr *)&sin, &merr);
		if (merr == MMDB_SUCCESS && res.found_entry) {
			MMDB_entry_data_list_s *list = NULL;
			merr = MMDB_get_entry_data_list(&res.entry, &list);
			MMDB_free_entry_data_list(list);
		}
		if (merr != MMDB_SUCCESS) {
			snprintf(err, 256, "%s: %s", path, MMDB_strerror(merr));
			return -EBADMSG;
		}
	}
	return 0;
}

/* Validates an opened version and finds its layout; closes *mmdb on failure. */
static int check_opened(const struct geo_db *db, const struct db_file *f, MMDB_s *mmdb,
                        enum layout *layout, char err[256])
{
	int v = validate(mmdb, f->path, err);
	if (v < 0) {
		MMDB_close(mmdb);
		return v;
	}
	if (!db->lookup_path)
		*layout = detect_layout(mmdb);
	else if (strcmp(db->lookup_path, "location") == 0)
		*layout = LAYOUT_LOCATION;
	else if (db->lookup_path[0] == '\0')
		*layout = LAYOUT_FLAT;
	else
		*layout = LAYOUT_CUSTOM;
	return 0;
}

/* A file over the cap is not copied at all (nothing of it is kept). */
static int over_cap(const struct geo_db *db, const char *path, off_t size, char err[256])
{
	if ((uint64_t)size <= db->max_bytes)
		return 0;
	snprintf(err, 256, "%s is %lld bytes, over the %llu MiB of [geo] max_database_mib", path,
	         (long long)size, (unsigned long long)(db->max_bytes >> 20));
	return -EFBIG;
}

/*
 * Loads one version of f->path into *mmdb (a private copy when the system
 * allows one), validates it and detects its layout.  Returns 0 or a
 * negative errno with err filled; on failure *mmdb is closed.
 */
static int load_file(const struct geo_db *db, struct db_file *f, MMDB_s *mmdb,
                     struct file_id *id, enum layout *layout, bool *private_copy,
                     char err[256])
{
	char path[64];
	struct stat cap_st;
	if (stat(f->path, &cap_st) == 0 && over_cap(db, f->path, cap_st.st_size, err) < 0)
		return -EFBIG;
	int mfd = copy_to_memfd(f->path, id, err);
	int r;
	if (mfd == -ENOSYS || mfd == -EPERM || mfd == -EACCES || mfd == -EMFILE) {
		/* No memfd here: map the file itself, as before (unsafe to rewrite). */
		struct stat st;
		log_warn("geo: %s; mapping the file itself: rewriting it in place while serving "
		         "would crash the server, replace it by rename only", err);
		*private_copy = false;
		if (stat(f->path, &st) == 0)
			file_id_of(&st, id);
		r = MMDB_open(f->path, MMDB_MODE_MMAP, mmdb);
	} else if (mfd < 0) {
		return mfd;
	} else {
		*private_copy = true;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
		r = MMDB_open(path, MMDB_MODE_MMAP, mmdb);
		/* The mapping keeps the memfd alive. */
		close(mfd);
	}
	if (r != MMDB_SUCCESS) {
		if (r == MMDB_IO_ERROR || r == MMDB_FILE_OPEN_ERROR)
			snprintf(err, 256, "%s: %s (%s)", f->path, MMDB_strerror(r), strerror(errno));
		else
			snprintf(err, 256, "%s: %s", f->path, MMDB_strerror(r));
		return -EBADMSG;
	}
	return check_opened(db, f, mmdb, layout, err);
}

static void log_loaded(const struct db_file *f, const char *verb)
{
	char built[32] = "unknown";
	time_t t = (time_t)f->mmdb.metadata.build_epoch;
	struct tm tm;
	if (gmtime_r(&t, &tm))
		strftime(built, sizeof(built), "%Y-%m-%d %H:%M:%S UTC", &tm);
	log_info("geo: %s %s: type \"%s\", built %s, IPv%u, %u nodes, %zd bytes%s", verb, f->path,
	         f->mmdb.metadata.database_type ? f->mmdb.metadata.database_type : "",
	         built, (unsigned)f->mmdb.metadata.ip_version, f->mmdb.metadata.node_count,
	         (ssize_t)f->mmdb.file_size,
	         f->private_copy ? " (private copy)" : " (mapped in place)");
}

struct geo_db *geo_db_open(const struct config_geo *g, size_t *failed, char err[256])
{
	struct geo_db *db = calloc(1, sizeof(*db));
	size_t dummy;

	if (!failed)
		failed = &dummy;
	*failed = g->n_databases;

	if (!db)
		goto nomem;
	db->max_bytes = g->max_database_bytes ? g->max_database_bytes : GEO_DB_MAX_BYTES_DEFAULT;
	db->has_default = g->has_default_location;
	db->default_lat = g->default_lat;
	db->default_lon = g->default_lon;
	if (g->lookup_path) {
		db->lookup_path_copy = strdup(g->lookup_path);
		if (!db->lookup_path_copy)
			goto nomem;
		db->lookup_path = db->lookup_path_copy;
	}
	if (g->n_databases == 0 && !db->has_default) {
		snprintf(err, 256, "geo: no databases and no default location");
		goto fail;
	}
	db->locate_cache = calloc((size_t)1 << LOCATE_CACHE_BITS, sizeof(*db->locate_cache));
	if (!db->locate_cache)
		goto nomem;
	if (g->n_databases) {
		db->f = calloc(g->n_databases, sizeof(*db->f));
		if (!db->f)
			goto nomem;
	}
	db->n = g->n_databases;
	for (size_t i = 0; i < g->n_databases; i++) {
		struct db_file *f = &db->f[i];
		const char *path = g->databases[i];

		*failed = i;
		f->path = strdup(path);
		f->cache = calloc((size_t)1 << COORD_CACHE_BITS, sizeof(*f->cache));
		if (!f->path || !f->cache)
			goto nomem;
		int r = -EAGAIN;
		/* A file being rewritten right now: give the writer a moment. */
		for (int tries = 0; r == -EAGAIN && tries < 20; tries++) {
			if (tries)
				nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
			r = load_file(db, f, &f->mmdb, &f->loaded, &f->layout, &f->private_copy, err);
		}
		if (r < 0)
			goto fail;
		f->open = true;
		if (f->layout == LAYOUT_CUSTOM && set_custom_path(f, g->lookup_path, err) < 0)
			goto fail;
		log_loaded(f, "loaded");
	}
	*failed = g->n_databases;
	return db;
nomem:
	snprintf(err, 256, "out of memory");
fail:
	geo_db_free(db);
	return NULL;
}

static void load_failed(struct db_file *f, const struct file_id *version, const char *err)
{
	f->failed = *version;
	f->have_failed = true;
	log_error("geo: %s changed but cannot be used: %s; still serving the version loaded "
	          "before", f->path, err);
}

/* Between queries (a loop callback): no lookup holds the old mapping. */
static void swap_in(struct geo_db *db, struct db_file *f, MMDB_s *mmdb, const struct file_id *id,
                    enum layout layout, bool private_copy)
{
	if (f->open)
		MMDB_close(&f->mmdb);
	f->mmdb = *mmdb;
	f->open = true;
	f->loaded = *id;
	f->have_failed = false;
	f->private_copy = private_copy;
	if (f->layout != LAYOUT_CUSTOM)
		f->layout = layout;
	memset(f->cache, 0, ((size_t)1 << COORD_CACHE_BITS) * sizeof(*f->cache));
	/* Verdicts combine every file: all of them may have changed. */
	memset(db->locate_cache, 0, ((size_t)1 << LOCATE_CACHE_BITS) * sizeof(*db->locate_cache));
	db->reloads++;
	log_loaded(f, "reloaded");
}

static void copy_end(struct geo_db *db, struct db_file *f)
{
	if (f->copy.src >= 0)
		close(f->copy.src);
	if (f->copy.mfd >= 0)
		close(f->copy.mfd);   /* a refused copy's memory goes with it */
	f->copy.src = f->copy.mfd = -1;
	f->copying = false;
	bool any = false;
	for (size_t i = 0; i < db->n; i++)
		any = any || db->f[i].copying;
	if (!any) {
		free(db->copy_buf);
		db->copy_buf = NULL;
	}
}

static void copy_slice(struct loop *l, void *arg);

static void slice_arm(struct geo_db *db)
{
	if (db->slice_timer > 0)
		return;
	int64_t id = loop_timer_add(db->loop, 0, copy_slice, db);
	db->slice_timer = id > 0 ? id : 0;
}

/* Starts copying f->path into a memfd.  0, or a negative errno (err filled). */
static int copy_begin(struct geo_db *db, struct db_file *f, char err[256])
{
	struct stat st;
	if (!db->copy_buf && !(db->copy_buf = malloc(GEO_COPY_BUF)))
		return -ENOMEM;
	f->copy.src = open(f->path, O_RDONLY | O_CLOEXEC);
	f->copy.mfd = memfd_create("geoacme-mmdb", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (f->copy.src < 0 || f->copy.mfd < 0 || fstat(f->copy.src, &st) < 0) {
		int e = errno;
		snprintf(err, 256, "%s: %s", f->path, strerror(e));
		f->copying = true;
		copy_end(db, f);
		return -e;
	}
	file_id_of(&st, &f->copy.id);
	f->copy.size = st.st_size;
	f->copy.done = 0;
	f->copying = true;
	slice_arm(db);
	return 0;
}

/* One slice of f's copy; at the end, the open, the checks and the swap. */
static void copy_step(struct geo_db *db, struct db_file *f)
{
	char err[256];
	size_t budget = GEO_COPY_SLICE;
	while (budget && f->copy.done < f->copy.size) {
		ssize_t r = read(f->copy.src, db->copy_buf, GEO_COPY_BUF);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				break;   /* shorter than it was: found below */
			snprintf(err, 256, "%s: %s", f->path, strerror(errno));
			load_failed(f, &f->copy.id, err);
			copy_end(db, f);
			return;
		}
		for (ssize_t off = 0; off < r;) {
			ssize_t w = write(f->copy.mfd, db->copy_buf + off, (size_t)(r - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				snprintf(err, 256, "%s: cannot make a private copy: %s", f->path,
				         strerror(errno));
				load_failed(f, &f->copy.id, err);
				copy_end(db, f);
				return;
			}
			off += w;
		}
		f->copy.done += r;
		budget = (size_t)r < budget ? budget - (size_t)r : 0;
	}
	struct stat st;
	struct file_id now;
	if (fstat(f->copy.src, &st) < 0) {
		copy_end(db, f);
		return;
	}
	file_id_of(&st, &now);
	if (!file_id_eq(&now, &f->copy.id)) {
		/* Written to while copied: the watch sees it and starts again. */
		copy_end(db, f);
		return;
	}
	if (f->copy.done < f->copy.size)
		return;   /* more next turn */
	if (fcntl(f->copy.mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
	                                    F_SEAL_SEAL) < 0) {
		snprintf(err, 256, "%s: cannot seal the private copy: %s", f->path, strerror(errno));
		load_failed(f, &f->copy.id, err);
		copy_end(db, f);
		return;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", f->copy.mfd);
	MMDB_s mmdb;
	enum layout layout = LAYOUT_UNKNOWN;
	int r = MMDB_open(path, MMDB_MODE_MMAP, &mmdb);
	if (r != MMDB_SUCCESS) {
		snprintf(err, 256, "%s: %s", f->path, MMDB_strerror(r));
		load_failed(f, &f->copy.id, err);
	} else if (check_opened(db, f, &mmdb, &layout, err) < 0) {
		load_failed(f, &f->copy.id, err);
	} else {
		struct file_id id = f->copy.id;
		swap_in(db, f, &mmdb, &id, layout, true);
	}
	copy_end(db, f);   /* the mapping keeps the memfd's memory */
}

static void copy_slice(struct loop *l, void *arg)
{
	struct geo_db *db = arg;
	db->slice_timer = 0;
	for (size_t i = 0; i < db->n; i++) {
		if (db->f[i].copying) {
			copy_step(db, &db->f[i]);
			break;   /* one file's slice per turn */
		}
	}
	for (size_t i = 0; i < db->n; i++)
		if (db->f[i].copying)
			slice_arm(db);
}

/* One file: a new version is loaded once it has stopped changing. */
static void check_file(struct geo_db *db, struct db_file *f)
{
	struct stat st;
	struct file_id now;
	if (f->copying)
		return;   /* copy_slice() is at it */
	if (stat(f->path, &st) < 0) {
		/* Between an unlink and a rename, say: keep serving, look again. */
		f->have_seen = false;
		return;
	}
	file_id_of(&st, &now);
	if (file_id_eq(&now, &f->loaded) || (f->have_failed && file_id_eq(&now, &f->failed))) {
		f->have_seen = false;
		return;
	}
	if (!f->have_seen || !file_id_eq(&now, &f->seen)) {
		/* Changed since the last look: a writer may still be at work. */
		f->seen = now;
		f->have_seen = true;
		return;
	}
	f->have_seen = false;
	char err[256] = "";
	if (over_cap(db, f->path, st.st_size, err) < 0) {
		f->failed = now;
		f->have_failed = true;
		log_error("geo: %s changed but cannot be used: %s; refused, still serving the version "
		          "loaded before", f->path, err);
		return;
	}
	if (copy_begin(db, f, err) == 0)
		return;   /* copied a slice per loop turn from here (copy_slice) */
	/* No memfd (or it failed to start): load as at start. */
	MMDB_s mmdb;
	struct file_id id;
	enum layout layout = LAYOUT_UNKNOWN;
	bool private_copy = false;
	int r = load_file(db, f, &mmdb, &id, &layout, &private_copy, err);
	if (r == -EAGAIN)
		return;   /* changed while copied: next round */
	if (r < 0) {
		load_failed(f, &now, err);
		return;
	}
	swap_in(db, f, &mmdb, &id, layout, private_copy);
}

static void on_watch(struct loop *l, void *arg)
{
	struct geo_db *db = arg;
	db->timer = 0;
	for (size_t i = 0; i < db->n; i++)
		check_file(db, &db->f[i]);
	int64_t id = loop_timer_add(l, db->interval_ms, on_watch, db);
	db->timer = id > 0 ? id : 0;
	if (id <= 0)
		log_error("geo: cannot schedule the next database check: %s", strerror((int)-id));
}

int geo_db_watch(struct geo_db *db, struct loop *l, uint32_t interval_ms)
{
	if (db->n == 0)
		return 0;
	db->loop = l;
	db->interval_ms = interval_ms ? interval_ms : 1000;
	int64_t id = loop_timer_add(l, db->interval_ms, on_watch, db);
	if (id <= 0)
		return (int)id;
	db->timer = id;
	return 0;
}

void geo_db_unwatch(struct geo_db *db)
{
	if (!db)
		return;
	if (db->loop && db->timer)
		loop_timer_cancel(db->loop, db->timer);
	if (db->loop && db->slice_timer)
		loop_timer_cancel(db->loop, db->slice_timer);
	db->timer = db->slice_timer = 0;
	db->loop = NULL;
	for (size_t i = 0; i < db->n; i++)
		if (db->f[i].copying)
			copy_end(db, &db->f[i]);
}

void geo_db_free(struct geo_db *db)
{
	if (!db)
		return;
	geo_db_unwatch(db);
	for (size_t i = 0; i < db->n; i++) {
		if (db->f[i].open)
			MMDB_close(&db->f[i].mmdb);
		free(db->f[i].path);
		free(db->f[i].cache);
		free(db->f[i].custom);
		free(db->f[i].custom_name);
	}
	free(db->f);
	free(db->copy_buf);
	free(db->lookup_path_copy);
	free(db->locate_cache);
	free(db);
}

static int locate(const struct geo_db *db, int family, const uint8_t *addr,
                  struct geo_location *out);

int geo_db_locate(const struct geo_db *db, int family, const uint8_t *addr,
                  struct geo_location *out)
{
	if (family != 4 && family != 6)
		return -EINVAL;
	uint8_t key[16] = { 0 };
	memcpy(key, addr, family == 4 ? 4 : 16);
	uint64_t a, b;
	memcpy(&a, key, 8);
	memcpy(&b, key + 8, 8);
	uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15u) ^ (uint64_t)family) * 0xFF51AFD7ED558CCDu;
	struct locate_slot *slot = &db->locate_cache[h >> (64 - LOCATE_CACHE_BITS)];
	if (slot->family != family || memcmp(slot->addr, key, 16) != 0) {
		slot->rc = (int8_t)locate(db, family, addr, &slot->loc);
		memcpy(slot->addr, key, 16);
		slot->family = (uint8_t)family;
	}
	*out = slot->loc;
	return slot->rc;
}

static int locate(const struct geo_db *db, int family, const uint8_t *addr,
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
