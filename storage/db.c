/* SPDX-License-Identifier: MIT */
/*
 * Opening the database: WAL, synchronous=FULL (see db.h and wal_sync.h for
 * NORMAL), schema migrations, and the
 * statements every later call uses (prepared here once, never per call).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/conf/log.h"
#include "core/wire/dname.h"
#include "storage/db.h"
#include "storage/storage_internal.h"

/*
 * Forward migrations: migrations[i] takes user_version i to i + 1.  A step
 * runs in one transaction together with the new user_version, so a crash
 * in the middle leaves the previous version intact.  Never edit a step
 * that shipped; append a new one and bump DB_SCHEMA_VERSION.
 */
static const char *const migrations[] = {
	/* 0 -> 1: the records and the bookkeeping. */
	"CREATE TABLE records ("
	" name BLOB NOT NULL,"
	" type INTEGER NOT NULL,"
	" class INTEGER NOT NULL DEFAULT 1,"
	" ttl INTEGER NOT NULL,"
	" rdata BLOB NOT NULL,"
	" created_at INTEGER NOT NULL DEFAULT 0,"
	" PRIMARY KEY (name, type, class, rdata)"
	") WITHOUT ROWID;"
	"CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value) WITHOUT ROWID;",
	/* 1 -> 2: the stale purge looks up TXT records by age. */
	"CREATE INDEX records_stale ON records(type, created_at);",
	/* 2 -> 3: mark the file as ours in the SQLite header (db_identify). */
	"PRAGMA application_id = 1734700897;",   /* DB_APPLICATION_ID */
	/* 3 -> 4: the IXFR journal (journal.h). */
	"CREATE TABLE journal ("
	" seq INTEGER PRIMARY KEY,"
	" serial_from INTEGER NOT NULL,"
	" serial_to INTEGER NOT NULL,"
	" diff BLOB NOT NULL"
	");",
	/* 4 -> 5: what the zone file said when last applied (zonefile.h); a
	 * seeded database starts from its records that came from the file. */
	"CREATE TABLE zonefile ("
	" name BLOB NOT NULL,"
	" type INTEGER NOT NULL,"
	" class INTEGER NOT NULL DEFAULT 1,"
	" rdata BLOB NOT NULL,"
	/* Last: SQLite 3.40.1's quick_check reports a NOT NULL column
	 * between primary-key columns of a WITHOUT ROWID table as NULL. */
	" ttl INTEGER NOT NULL,"
	" PRIMARY KEY (name, type, class, rdata)"
	") WITHOUT ROWID;"
	"INSERT INTO zonefile (name, type, class, ttl, rdata)"
	" SELECT name, type, class, ttl, rdata FROM records"
	" WHERE created_at = 0 AND EXISTS (SELECT 1 FROM meta WHERE key = 'seeded_at');",
};

_Static_assert(DB_APPLICATION_ID == 1734700897, "the migration writes DB_APPLICATION_ID");

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == DB_SCHEMA_VERSION,
               "one migration step per schema version");

static void set_err(char err[256], struct db *db, const char *what)
{
	snprintf(err, 256, "%s: %s: %s", db->path, what,
	         db->sql ? sqlite3_errmsg(db->sql) : "out of memory");
}

/* A single-value PRAGMA or query, for open-time checks only. */
static int query_int(struct db *db, const char *sql, long long *out)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return -EIO;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -EIO;
}

/* ---- identification, read-only ---- */

static void errf(char err[256], const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void errf(char err[256], const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, 256, fmt, ap);
	va_end(ap);
}

static int folder_of_file(const char *path, char *out, size_t cap)
{
	const char *slash = strrchr(path, '/');
	int n = !slash ? snprintf(out, cap, ".")
	        : slash == path ? snprintf(out, cap, "/")
	        : snprintf(out, cap, "%.*s", (int)(slash - path), path);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* A single integer from a read-only connection. */
static int ro_int(sqlite3 *sql, const char *q, long long *out)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(sql, q, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -EIO;
}

/*
 * Reads the header and the table list with SQLITE_OPEN_READONLY: nothing
 * is written, not even the journal mode, before we know the file is ours.
 */
static int identify_file(const char *path, struct db_info *info, char err[256])
{
	sqlite3 *sql = NULL;
	int ret = 0;
	if (sqlite3_open_v2(path, &sql, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		snprintf(err, 256, "%s: cannot open it read-only: %s", path,
		         sql ? sqlite3_errmsg(sql) : "out of memory");
		sqlite3_close(sql);
		return -EIO;
	}
	sqlite3_busy_timeout(sql, 2000);
	long long app = 0, version = 0;
	if (ro_int(sql, "PRAGMA application_id", &app) < 0 ||
	    ro_int(sql, "PRAGMA user_version", &version) < 0) {
		snprintf(err, 256, "%s: not an SQLite database (%s); point journal_path at a new file",
		         path, sqlite3_errmsg(sql));
		sqlite3_close(sql);
		return -EINVAL;
	}
	sqlite3_stmt *st;
	char tables[160] = "";
	size_t tn = 0, n_tables = 0;
	bool has_records = false, has_meta = false, hickory = false;
	if (sqlite3_prepare_v2(sql, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
	                       -1, &st, NULL) != SQLITE_OK) {
		snprintf(err, 256, "%s: reading the schema: %s", path, sqlite3_errmsg(sql));
		sqlite3_close(sql);
		return -EIO;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);
		if (!t)
			continue;
		n_tables++;
		has_records |= strcmp(t, "records") == 0;
		has_meta |= strcmp(t, "meta") == 0;
		hickory |= strcmp(t, "tdns_schema") == 0;
		if (tn < sizeof(tables))
			tn += (size_t)snprintf(tables + tn, sizeof(tables) - tn, "%s%s", tn ? ", " : "", t);
	}
	sqlite3_finalize(st);
	info->version = (int)version;
	if (app == 0 && version == 0 && n_tables == 0) {
		info->state = DB_EMPTY;
	} else if (app == DB_APPLICATION_ID || (app == 0 && version > 0)) {
		if (version > DB_SCHEMA_VERSION) {
			snprintf(err, 256, "%s: schema version %lld is newer than this geoacme (%d)", path,
			         version, DB_SCHEMA_VERSION);
			ret = -EINVAL;
		} else if (!has_records || !has_meta) {
			snprintf(err, 256, "%s: not a geoacme database (schema version %lld but tables: %s)",
			         path, version, n_tables ? tables : "none");
			ret = -EINVAL;
		} else {
			info->state = DB_OURS;
		}
	} else {
		snprintf(err, 256, "%s: not a geoacme database (%stables: %s); it was left as it is: "
		         "point journal_path at a new file, which zone_path seeds", path,
		         hickory ? "a Hickory journal, " : "", n_tables ? tables : "none");
		ret = -EINVAL;
	}
	if (ret == 0 && info->state == DB_OURS) {
		/* The zone it holds, to compare with the config's. */
		if (sqlite3_prepare_v2(sql, "SELECT value FROM meta WHERE key = 'apex'", -1, &st,
		                       NULL) == SQLITE_OK) {
			if (sqlite3_step(st) == SQLITE_ROW) {
				const void *p = sqlite3_column_blob(st, 0);
				int len = sqlite3_column_bytes(st, 0);
				if (db_name_valid(p, len)) {
					memcpy(info->apex, p, (size_t)len);
					info->apex_len = len;
				}
			}
			sqlite3_finalize(st);
		}
		long long seeded = 0;
		info->seeded = ro_int(sql, "SELECT count(*) FROM meta WHERE key = 'seeded_at'",
		                      &seeded) == 0 && seeded > 0;
	}
	sqlite3_close(sql);
	return ret;
}

/* A progress handler: a non-zero return interrupts the statement. */
static int stop_asked(void *arg)
{
	return atomic_load_explicit((const atomic_bool *)arg, memory_order_relaxed);
}

static int quick_check(const char *path, const atomic_bool *stop, char err[256])
{
	sqlite3 *sql = NULL;
	if (sqlite3_open_v2(path, &sql, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		errf(err, "%s: cannot open it read-only: %s", path,
		     sql ? sqlite3_errmsg(sql) : "out of memory");
		sqlite3_close(sql);
		return -EIO;
	}
	sqlite3_busy_timeout(sql, 2000);
	if (stop)
		sqlite3_progress_handler(sql, 10000, stop_asked, (void *)stop);
	sqlite3_stmt *st;
	int ret = 0;
	if (sqlite3_prepare_v2(sql, "PRAGMA quick_check", -1, &st, NULL) != SQLITE_OK) {
		errf(err, "%s: quick_check: %s", path, sqlite3_errmsg(sql));
		sqlite3_close(sql);
		return -EIO;
	}
	int rc = sqlite3_step(st);
	const char *res = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
	if (rc == SQLITE_INTERRUPT && stop) {
		errf(err, "%s: quick_check stopped", path);
		ret = -ECANCELED;
	} else if (!res || strcmp(res, "ok") != 0) {
		errf(err, "%s: the database is damaged (quick_check: %s)", path,
		     res ? res : sqlite3_errmsg(sql));
		ret = -EIO;
	}
	sqlite3_finalize(st);
	sqlite3_close(sql);
	return ret;
}

int db_quick_check(const char *path, char err[256])
{
	return quick_check(path, NULL, err);
}

int db_identify(const char *path, struct db_info *info, char err[256])
{
	memset(info, 0, sizeof(*info));
	char folder[4096];
	struct stat st;
	if (folder_of_file(path, folder, sizeof(folder)) < 0) {
		snprintf(err, 256, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	if (stat(folder, &st) < 0 || !S_ISDIR(st.st_mode)) {
		bool missing = errno == ENOENT;
		errf(err, "%s: its folder %s %s (create it; the systemd unit's StateDirectory=geoacme "
		     "makes /var/lib/geoacme)", path, folder,
		     missing ? "does not exist" : "is not a usable folder");
		return -ENOENT;
	}
	/* SQLite creates the database and its -wal and -shm files beside it. */
	if (access(folder, W_OK | X_OK) < 0) {
		errf(err, "%s: its folder %s is not writable by uid %u (SQLite makes the -wal and "
		     "-shm files there): %s", path, folder, (unsigned)geteuid(), strerror(errno));
		return -EACCES;
	}
	if (stat(path, &st) < 0) {
		if (errno != ENOENT) {
			snprintf(err, 256, "%s: %s", path, strerror(errno));
			return -errno;
		}
		info->state = DB_ABSENT;
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, 256, "%s: not a regular file", path);
		return -EINVAL;
	}
	if (access(path, R_OK | W_OK) < 0) {
		snprintf(err, 256, "%s: not readable and writable by uid %u: %s", path,
		         (unsigned)geteuid(), strerror(errno));
		return -EACCES;
	}
	if (st.st_size == 0) {
		info->state = DB_EMPTY;   /* SQLite's view of an empty file too */
		return 0;
	}
	return identify_file(path, info, err);
}

static int migrate(struct db *db, char err[256])
{
	long long version;
	if (query_int(db, "PRAGMA user_version", &version) < 0) {
		set_err(err, db, "reading the schema version");
		return -EIO;
	}
	if (version > DB_SCHEMA_VERSION) {
		snprintf(err, 256, "%s: schema version %lld is newer than this geoacme (%d)",
		         db->path, version, DB_SCHEMA_VERSION);
		return -EINVAL;
	}
	if (version == 0) {
		/* A fresh file has no tables; anything else is not ours to reshape. */
		long long tables;
		if (query_int(db, "SELECT count(*) FROM sqlite_master", &tables) < 0) {
			set_err(err, db, "reading the schema");
			return -EIO;
		}
		if (tables) {
			snprintf(err, 256,
			         "%s: not a geoacme database (foreign tables, maybe a Hickory "
			         "journal); move it away to seed a new one from the zone file",
			         db->path);
			return -EINVAL;
		}
	}
	for (long long v = version; v < DB_SCHEMA_VERSION; v++) {
		char sql[64];
		char *msg = NULL;
		if (sqlite3_exec(db->sql, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK)
			goto fail;
		if (sqlite3_exec(db->sql, migrations[v], NULL, NULL, &msg) != SQLITE_OK)
			goto fail_rollback;
		/* PRAGMA takes no bound parameters; the value is our own integer. */
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %lld", v + 1);
		if (sqlite3_exec(db->sql, sql, NULL, NULL, &msg) != SQLITE_OK)
			goto fail_rollback;
		if (sqlite3_exec(db->sql, "COMMIT", NULL, NULL, &msg) != SQLITE_OK)
			goto fail_rollback;
		continue;
fail_rollback:
		sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
fail:
		snprintf(err, 256, "%s: migrating the schema to version %lld: %s", db->path, v + 1,
		         msg ? msg : sqlite3_errmsg(db->sql));
		sqlite3_free(msg);
		return -EIO;
	}
	if (version > 0 && version < DB_SCHEMA_VERSION)
		log_info("%s: schema migrated from version %lld to %d", db->path, version,
		         DB_SCHEMA_VERSION);
	return 0;
}

static int prepare(struct db *db, sqlite3_stmt **st, const char *sql, char err[256])
{
	/* PERSISTENT: these live as long as the connection. */
	if (sqlite3_prepare_v3(db->sql, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK) {
		set_err(err, db, "preparing statements");
		return -EIO;
	}
	return 0;
}

int db_write_lock_free(struct db *db)
{
	int ret = db_begin(db);
	if (ret == 0)
		db_rollback(db);
	return ret;
}

struct db *db_open(const char *path, char err[256])
{
	return db_open_stoppable(path, NULL, err);
}

struct db *db_open_stoppable(const char *path, const atomic_bool *stop, char err[256])
{
	struct db *db = calloc(1, sizeof(*db));
	if (!db || !(db->path = strdup(path))) {
		snprintf(err, 256, "%s: out of memory", path);
		free(db);
		return NULL;
	}
	/* Identify before anything writes: a foreign file stays byte for byte. */
	struct db_info info;
	if (db_identify(path, &info, err) < 0) {
		db_close(db);
		return NULL;
	}
	/*
	 * A damaged file is refused, never worked around: a read that happens to
	 * miss the damage (an empty answer where a row should be) could have us
	 * seed the zone again over the records we acknowledged.
	 */
	if (info.state == DB_OURS && quick_check(path, stop, err) < 0) {
		db_close(db);
		return NULL;
	}
	int rc = sqlite3_open_v2(path, &db->sql,
	                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
	                         NULL);
	if (rc != SQLITE_OK) {
		set_err(err, db, "opening");
		goto fail;
	}
	sqlite3_extended_result_codes(db->sql, 1);
	/* While opening (at start or a reload), an operator's sqlite3 shell may
	 * hold a lock for a moment; db_open ends with no timeout at all. */
	sqlite3_busy_timeout(db->sql, 2000);

	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->sql, "PRAGMA journal_mode=WAL", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		sqlite3_finalize(st);
		set_err(err, db, "setting WAL mode");
		goto fail;
	}
	const char *mode = (const char *)sqlite3_column_text(st, 0);
	if (!mode || strcmp(mode, "wal") != 0) {
		snprintf(err, 256, "%s: cannot use WAL mode (got %s)", path, mode ? mode : "nothing");
		sqlite3_finalize(st);
		goto fail;
	}
	sqlite3_finalize(st);
	if (sqlite3_exec(db->sql, "PRAGMA synchronous=FULL", NULL, NULL, NULL) != SQLITE_OK) {
		set_err(err, db, "setting synchronous=FULL");
		goto fail;
	}
	if (migrate(db, err) < 0)
		goto fail;

	if (prepare(db, &db->begin, "BEGIN IMMEDIATE", err) < 0 ||
	    prepare(db, &db->commit, "COMMIT", err) < 0 ||
	    prepare(db, &db->rollback, "ROLLBACK", err) < 0 ||
	    prepare(db, &db->load,
	            "SELECT name, type, class, ttl, rdata, created_at FROM records", err) < 0 ||
	    prepare(db, &db->insert,
	            "INSERT OR REPLACE INTO records (name, type, class, ttl, rdata, created_at)"
	            " VALUES (?1, ?2, 1, ?3, ?4, ?5)", err) < 0 ||
	    prepare(db, &db->delete_one,
	            "DELETE FROM records WHERE name = ?1 AND type = ?2 AND class = 1"
	            " AND rdata = ?3", err) < 0 ||
	    prepare(db, &db->count, "SELECT count(*) FROM records", err) < 0 ||
	    prepare(db, &db->meta_get, "SELECT value FROM meta WHERE key = ?1", err) < 0 ||
	    prepare(db, &db->meta_set,
	            "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)", err) < 0 ||
	    prepare(db, &db->journal_insert,
	            "INSERT INTO journal (serial_from, serial_to, diff) VALUES (?1, ?2, ?3)",
	            err) < 0 ||
	    prepare(db, &db->journal_load,
	            "SELECT serial_from, serial_to, diff FROM journal ORDER BY seq", err) < 0 ||
	    prepare(db, &db->journal_clear, "DELETE FROM journal", err) < 0 ||
	    prepare(db, &db->records_clear, "DELETE FROM records", err) < 0 ||
	    prepare(db, &db->zonefile_load,
	            "SELECT name, type, class, ttl, rdata, 0 FROM zonefile", err) < 0 ||
	    prepare(db, &db->zonefile_insert,
	            "INSERT OR REPLACE INTO zonefile (name, type, class, ttl, rdata)"
	            " VALUES (?1, ?2, 1, ?3, ?4)", err) < 0 ||
	    prepare(db, &db->zonefile_delete,
	            "DELETE FROM zonefile WHERE name = ?1 AND type = ?2 AND class = 1"
	            " AND rdata = ?3", err) < 0 ||
	    /* Keep the newest ?1 entries. */
	    prepare(db, &db->journal_prune_count,
	            "DELETE FROM journal WHERE seq <= (SELECT seq FROM journal ORDER BY seq DESC"
	            " LIMIT 1 OFFSET ?1)", err) < 0 ||
	    /* Keep the newest entries whose sizes add up to ?1 bytes at most. */
	    prepare(db, &db->journal_prune_bytes,
	            "DELETE FROM journal WHERE seq < (SELECT min(seq) FROM (SELECT seq,"
	            " sum(length(diff)) OVER (ORDER BY seq DESC) AS total FROM journal)"
	            " WHERE total <= ?1)", err) < 0)
		goto fail;
	/*
	 * From here on the server's loop uses this connection: it must never
	 * wait for a lock (issue #26.2).  A statement that meets another
	 * process's lock fails at once (SQLITE_BUSY, -EBUSY from
	 * db_step_done) and its caller tries again later (acme/lockwait.h).
	 */
	sqlite3_busy_timeout(db->sql, 0);
	return db;
fail:
	db_close(db);
	return NULL;
}

void db_close(struct db *db)
{
	if (!db)
		return;
	sqlite3_stmt *all[] = {
		db->begin, db->commit, db->rollback, db->load, db->insert,
		db->delete_one, db->count, db->meta_get, db->meta_set, db->journal_insert,
		db->journal_load, db->journal_clear, db->journal_prune_count, db->journal_prune_bytes,
		db->records_clear, db->zonefile_load, db->zonefile_insert, db->zonefile_delete,
	};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		sqlite3_finalize(all[i]);
	if (db->sql && sqlite3_close(db->sql) != SQLITE_OK)
		log_warn("%s: closing: %s", db->path, sqlite3_errmsg(db->sql));
	free(db->path);
	free(db);
}

void db_interrupt(struct db *db)
{
	if (db && db->sql)
		sqlite3_interrupt(db->sql);
}

int db_schema_version(struct db *db)
{
	long long v;
	if (query_int(db, "PRAGMA user_version", &v) < 0)
		return -EIO;
	return (int)v;
}

int db_integrity_check(struct db *db, char err[256])
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db->sql, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK) {
		set_err(err, db, "integrity_check");
		return -EIO;
	}
	int rc = sqlite3_step(st);
	const char *res = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
	int ret = 0;
	if (!res || strcmp(res, "ok") != 0) {
		snprintf(err, 256, "%s: integrity_check: %s", db->path,
		         res ? res : sqlite3_errmsg(db->sql));
		ret = -EIO;
	}
	sqlite3_finalize(st);
	return ret;
}

char *db_wal_path(const struct db *db)
{
	size_t n = strlen(db->path) + sizeof("-wal");
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s-wal", db->path);
	return s;
}

bool db_name_valid(const uint8_t *p, int n)
{
	if (!p || n <= 0 || n > DNAME_MAX)
		return false;
	for (int pos = 0; pos < n;) {
		uint8_t l = p[pos];
		if (l == 0)
			return pos + 1 == n;
		if (l > DNAME_LABEL_MAX)
			return false;
		pos += l + 1;
	}
	return false;
}

/* Ends a meta read: a step that was neither a row nor the end is an error. */
static int meta_done(struct db *db, sqlite3_stmt *st, int rc, int ret)
{
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		log_error("%s: reading meta: %s", db->path, sqlite3_errmsg(db->sql));
		ret = -EIO;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return ret;
}

int db_apex(struct db *db, uint8_t *out)
{
	sqlite3_stmt *st = db->meta_get;
	sqlite3_bind_text(st, 1, "apex", -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	int ret = 0;
	if (rc == SQLITE_ROW) {
		const void *p = sqlite3_column_blob(st, 0);
		int n = sqlite3_column_bytes(st, 0);
		if (!db_name_valid(p, n))
			ret = -EBADMSG;
		else {
			memcpy(out, p, (size_t)n);
			ret = n;
		}
	}
	return meta_done(db, st, rc, ret);
}

int db_step_done(struct db *db, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	/* Another process holds the lock: nothing was done, the caller retries. */
	if ((rc & 0xff) == SQLITE_BUSY)
		return -EBUSY;
	if (rc != SQLITE_DONE) {
		log_error("%s: %s: %s", db->path, what, sqlite3_errmsg(db->sql));
		return -EIO;
	}
	return 0;
}

int db_begin(struct db *db)
{
	return db_step_done(db, db->begin, "begin");
}

int db_commit(struct db *db)
{
	return db_step_done(db, db->commit, "commit");
}

void db_rollback(struct db *db)
{
	/* Fails harmlessly when SQLite already rolled back on its own. */
	sqlite3_step(db->rollback);
	sqlite3_reset(db->rollback);
}

int db_meta_set_blob(struct db *db, const char *key, const void *p, int n)
{
	sqlite3_bind_text(db->meta_set, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_blob(db->meta_set, 2, p, n, SQLITE_STATIC);
	return db_step_done(db, db->meta_set, "writing meta");
}

int db_meta_set_text(struct db *db, const char *key, const char *value)
{
	sqlite3_bind_text(db->meta_set, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(db->meta_set, 2, value, -1, SQLITE_STATIC);
	return db_step_done(db, db->meta_set, "writing meta");
}

int db_meta_set_int(struct db *db, const char *key, int64_t value)
{
	sqlite3_bind_text(db->meta_set, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(db->meta_set, 2, value);
	return db_step_done(db, db->meta_set, "writing meta");
}

int db_meta_get_int(struct db *db, const char *key, int64_t *out)
{
	sqlite3_stmt *st = db->meta_get;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	int ret = -ENOENT;
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
		ret = 0;
	}
	return meta_done(db, st, rc, ret);
}
