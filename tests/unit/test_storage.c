/* SPDX-License-Identifier: MIT */
/*
 * storage/: schema and migrations, WAL + synchronous=FULL, seeding once,
 * apply/load round trips, atomicity of a failed change list; wal_sync:
 * NORMAL with our own fdatasync through AIO, or FULL when blocking.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sqlite3.h>

#include "check.h"
#include "core/conf/diag.h"
#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "storage/db.h"
#include "storage/records.h"
#include "storage/seed.h"
#include "storage/zonefile.h"
#include "storage/storage_internal.h"
#include "storage/wal_sync.h"

static char dir[256];

static const char *path_in(const char *name, char *buf)
{
	snprintf(buf, 512, "%s/%s", dir, name);
	return buf;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

static const char *zone_v1 =
	"$ORIGIN acme.example.\n"
	"$TTL 300\n"
	"@ SOA ns1.example. hostmaster.example. 7 3600 600 86400 300\n"
	"@ NS ns1.example.\n"
	"@ TXT \"static\"\n"
	"www A 192.0.2.1\n";

static const char *zone_v2 =
	"$ORIGIN acme.example.\n"
	"$TTL 300\n"
	"@ SOA ns1.example. hostmaster.example. 99 3600 600 86400 300\n"
	"@ NS ns1.example.\n"
	"changed A 192.0.2.9\n";

/* Collected rows, to compare loads. */
struct rows {
	size_t n;
	struct { uint8_t name[DNAME_MAX]; uint16_t type; uint32_t ttl; uint8_t rdata[64];
	         uint16_t rdlen; int64_t created_at; } v[64];
};

static int collect(void *arg, const struct records_row *r)
{
	struct rows *rows = arg;
	if (rows->n == 64 || r->rdlen > 64)
		return -ENOSPC;
	memcpy(rows->v[rows->n].name, r->name, dname_len(r->name));
	rows->v[rows->n].type = r->type;
	rows->v[rows->n].ttl = r->ttl;
	memcpy(rows->v[rows->n].rdata, r->rdata, r->rdlen);
	rows->v[rows->n].rdlen = r->rdlen;
	rows->v[rows->n].created_at = r->created_at;
	rows->n++;
	return 0;
}

static int find_row(const struct rows *rows, const char *name, uint16_t type, const void *rdata,
                    uint16_t rdlen)
{
	uint8_t w[DNAME_MAX];
	dname_from_str(name, w);
	for (size_t i = 0; i < rows->n; i++)
		if (dname_len(rows->v[i].name) == dname_len(w) &&
		    memcmp(rows->v[i].name, w, dname_len(w)) == 0 && rows->v[i].type == type &&
		    (!rdata || (rows->v[i].rdlen == rdlen && memcmp(rows->v[i].rdata, rdata, rdlen) == 0)))
			return (int)i;
	return -1;
}

static long long sql_int(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	long long v = -1;
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return v;
}

static int sql_exec(const char *path, const char *sql)
{
	sqlite3 *db;
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc == SQLITE_OK ? 0 : -1;
}

static long long synchronous_of(struct db *db)
{
	long long v = -1;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db->sql, "PRAGMA synchronous", -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	return v;
}

static int add_txt(struct db *db, const char *owner, const char *rdata)
{
	uint8_t name[DNAME_MAX];
	struct change_list cl;
	change_list_init(&cl);
	dname_from_str(owner, name);
	change_list_add(&cl, CHANGE_ADD, name, RR_TXT, 60, (const uint8_t *)rdata,
	                (uint16_t)strlen(rdata), 1);
	int ret = records_apply(db, &cl);
	change_list_clear(&cl);
	return ret;
}

/*
 * fsync(2) as this test binary sees it: every call is forwarded to the
 * kernel, and the last folder synced is remembered, so the test can see
 * that wal_sync made the WAL's name durable (SQLite, linked as a shared
 * library, comes through here too).
 */
static char fsynced_folder[512];

int fsync(int fd)
{
	struct stat st;
	char link[64];
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, fsynced_folder, sizeof(fsynced_folder) - 1);
		fsynced_folder[n > 0 ? n : 0] = '\0';
	}
	return (int)syscall(SYS_fsync, fd);
}

static void test_wal_sync(void)
{
	char dpath[512], err[256] = "", why[256];
	int rows = 1;
	path_in("sync.db", dpath);
	struct db *db = db_open(dpath, err);
	ok(db != NULL, "open (%s)", err);
	if (!db)
		return;

	/* Blocking, as asked: SQLite syncs in COMMIT. */
	struct wal_sync *ws = wal_sync_new(db, false, why);
	ok(ws && !wal_sync_async(ws), "blocking when asked");
	is_str(why, "", "no reason to give");
	is_int(wal_sync_event_fd(ws), -1, "no eventfd");
	is_int(synchronous_of(db), 2, "synchronous=FULL");
	is_int(add_txt(db, "a.acme.example.", "\x01a"), 0, "commit");
	is_int(wal_sync_start(ws), 1, "durable already");
	wal_sync_free(ws);

	/* Asynchronous where the file system can (ext4, xfs, btrfs), else
	 * blocking with the reason: either way a sync reports its outcome. */
	fsynced_folder[0] = '\0';
	ws = wal_sync_new(db, true, why);
	ok(ws != NULL, "made (%s)", why);
	if (!ws)
		goto out;
	if (!wal_sync_async(ws)) {
		ok(why[0] != '\0', "blocking, and why: %s", why);
		is_int(synchronous_of(db), 2, "so synchronous=FULL");
		wal_sync_free(ws);
		goto out;
	}
	rows = 5;
	is_str(why, "", "asynchronous (Linux AIO)");
	{
		/* The WAL's folder synced when wal_sync opened the WAL: with
		 * synchronous=NORMAL SQLite would do it only at its first
		 * checkpoint, and a power cut before could lose the file. */
		char folder[512], real[PATH_MAX];   /* realpath writes up to PATH_MAX */
		snprintf(folder, sizeof(folder), "%s", dpath);
		*strrchr(folder, '/') = '\0';
		ok(realpath(folder, real) != NULL, "the database's folder");
		is_str(fsynced_folder, real, "the WAL's folder was synced");
	}
	is_int(synchronous_of(db), 1, "synchronous=NORMAL: COMMIT does not sync");
	for (int round = 0; round < 3; round++) {
		is_int(add_txt(db, "b.acme.example.", round == 0 ? "\x01b" : round == 1 ? "\x01c" : "\x01d"),
		       0, "commit %d", round);
		is_int(wal_sync_start(ws), 0, "sync %d started", round);
		struct pollfd p = { wal_sync_event_fd(ws), POLLIN, 0 };
		is_int(poll(&p, 1, 10000), 1, "its eventfd becomes readable");
		is_int(wal_sync_finish(ws), 1, "sync %d completed", round);
		is_int(wal_sync_finish(ws), 1, "and nothing is in flight after");
	}
	/* Started, then waited for (the way out at shutdown). */
	is_int(add_txt(db, "c.acme.example.", "\x01c"), 0, "commit");
	is_int(wal_sync_start(ws), 0, "started");
	is_int(wal_sync_flush(ws), 1, "flushed: waited, then synced on the spot");
	wal_sync_free(ws);
	is_int(synchronous_of(db), 2, "freed: back to synchronous=FULL");
out:
	is_int(records_count(db), rows, "all the rows committed");
	db_close(db);
}

static void test_seed_and_load(void)
{
	char zpath[512], dpath[512], err[256] = "";
	path_in("zone.txt", zpath);
	path_in("seed.db", dpath);
	write_file(zpath, zone_v1);
	uint8_t apex[DNAME_MAX];
	dname_from_str("acme.example.", apex);

	struct db *db = db_open(dpath, err);
	ok(db != NULL, "db_open creates a database (%s)", err);
	if (!db)
		return;
	is_int(db_schema_version(db), DB_SCHEMA_VERSION, "schema version set on a new database");
	is_int(seed_needed(db), 1, "a new database needs seeding");
	uint8_t owner[DNAME_MAX];
	is_int(db_apex(db, owner), 0, "no apex recorded before seeding");
	is_int(records_count(db), 0, "a new database is empty");

	struct change_list cl;
	struct diag d;
	change_list_init(&cl);
	diag_init(&d);
	is_int(seed_read(zpath, apex, &cl, &d, NULL), 0, "seed_read reads the zone file");
	is_int(cl.n, 4, "four records read");
	for (size_t i = 0; i < cl.n; i++)
		if (cl.v[i].created_at != 0 || cl.v[i].op != CHANGE_ADD)
			ok(0, "seeded record %zu is an addition with created_at 0", i);
	is_int(seed_commit(db, &cl, apex, zpath, 1000), 0, "seed_commit writes them");
	change_list_clear(&cl);
	diag_clear(&d);
	is_int(seed_needed(db), 0, "seeded database needs no seeding");
	is_int(db_apex(db, owner), (int)dname_len(apex), "the apex is recorded");
	is_mem(owner, apex, dname_len(apex), "the recorded apex is the zone's");
	is_int(records_count(db), 4, "four rows");
	struct rows stored = { 0 };
	is_int(zonefile_load(db, collect, &stored), 0, "the stored zone file reads back");
	is_int(stored.n, 4, "seeding stored what the file said: four records");

	struct rows rows = { 0 };
	is_int(records_load(db, collect, &rows), 0, "records_load");
	is_int(rows.n, 4, "loads four records");
	int i = find_row(&rows, "www.acme.example.", RR_A, "\xc0\x00\x02\x01", 4);
	ok(i >= 0, "www A 192.0.2.1 loaded");
	if (i >= 0) {
		is_int(rows.v[i].ttl, 300, "with its TTL");
		is_int(rows.v[i].created_at, 0, "and created_at 0");
	}
	i = find_row(&rows, "acme.example.", RR_SOA, NULL, 0);
	/* ns1.example. (13) + hostmaster.example. (20) + five counters (20) */
	ok(i >= 0 && rows.v[i].rdlen == 13 + 20 + 20, "SOA stored in canonical uncompressed form");
	if (i >= 0) {
		const uint8_t *s = rows.v[i].rdata + 33;
		is_int((uint32_t)s[0] << 24 | s[1] << 16 | s[2] << 8 | s[3], 7, "SOA serial 7");
	}

	char ierr[256] = "";
	is_int(db_integrity_check(db, ierr), 0, "integrity_check ok (%s)", ierr);
	/* The connection really is FULL (2): the reason acknowledged updates survive. */
	long long sync = -1;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db->sql, "PRAGMA synchronous", -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			sync = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	is_int(sync, 2, "synchronous=FULL on the connection");
	db_close(db);

	sqlite3 *raw;
	sqlite3_open(dpath, &raw);
	sqlite3_stmt *jm;
	const char *mode = "?";
	char modebuf[16] = "";
	if (sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &jm, NULL) == SQLITE_OK &&
	    sqlite3_step(jm) == SQLITE_ROW) {
		snprintf(modebuf, sizeof(modebuf), "%s", sqlite3_column_text(jm, 0));
		mode = modebuf;
	}
	sqlite3_finalize(jm);
	sqlite3_close(raw);
	is_str(mode, "wal", "the file is in WAL mode");

	/* Second start with a changed zone file: no reseed. */
	write_file(zpath, zone_v2);
	db = db_open(dpath, err);
	ok(db != NULL, "reopen");
	if (!db)
		return;
	is_int(seed_needed(db), 0, "reopened database is not seeded again");
	struct rows again = { 0 };
	records_load(db, collect, &again);
	is_int(again.n, 4, "still the four original records");
	ok(find_row(&again, "changed.acme.example.", RR_A, NULL, 0) < 0,
	   "the changed zone file's record is not there");
	db_close(db);
}

static void test_apply(void)
{
	char dpath[512], err[256] = "";
	path_in("apply.db", dpath);
	uint8_t name[DNAME_MAX], apex[DNAME_MAX];
	dname_from_str("a.acme.example.", name);
	dname_from_str("acme.example.", apex);
	struct db *db = db_open(dpath, err);
	ok(db != NULL, "open apply.db");
	if (!db)
		return;
	struct change_list cl;
	change_list_init(&cl);
	change_list_add(&cl, CHANGE_ADD, name, RR_TXT, 60, (const uint8_t *)"\x03one", 4, 111);
	change_list_add(&cl, CHANGE_ADD, name, RR_TXT, 60, (const uint8_t *)"\x03two", 4, 112);
	is_int(records_apply(db, &cl), 0, "apply two additions");
	change_list_clear(&cl);
	is_int(records_count(db), 2, "two rows");

	/* TTL change = delete + add; deleting a missing row is a no-op. */
	change_list_add(&cl, CHANGE_DEL, name, RR_TXT, 60, (const uint8_t *)"\x03one", 4, 111);
	change_list_add(&cl, CHANGE_ADD, name, RR_TXT, 90, (const uint8_t *)"\x03one", 4, 111);
	change_list_add(&cl, CHANGE_DEL, name, RR_TXT, 60, (const uint8_t *)"\x03two", 4, 112);
	change_list_add(&cl, CHANGE_DEL, name, RR_TXT, 60, (const uint8_t *)"\x05never", 6, 1);
	is_int(records_apply(db, &cl), 0, "apply delete/add/delete/missing delete");
	change_list_clear(&cl);
	struct rows rows = { 0 };
	records_load(db, collect, &rows);
	is_int(rows.n, 1, "one row left");
	int i = find_row(&rows, "a.acme.example.", RR_TXT, "\x03one", 4);
	ok(i >= 0, "the TXT \"one\" is there");
	if (i >= 0) {
		is_int(rows.v[i].ttl, 90, "with the new TTL");
		is_int(rows.v[i].created_at, 111, "and its original created_at");
	}
	db_close(db);

	/*
	 * A change list that fails half way changes nothing: a trigger (made by
	 * another connection) aborts the third change.
	 */
	ok(sql_exec(dpath, "CREATE TRIGGER boom BEFORE INSERT ON records "
	                   "WHEN NEW.rdata = X'04646561' BEGIN SELECT RAISE(ABORT, 'boom'); END;") == 0,
	   "install a failing trigger");
	db = db_open(dpath, err);
	ok(db != NULL, "reopen apply.db");
	if (!db)
		return;
	change_list_add(&cl, CHANGE_DEL, name, RR_TXT, 90, (const uint8_t *)"\x03one", 4, 111);
	change_list_add(&cl, CHANGE_ADD, name, RR_TXT, 60, (const uint8_t *)"\x03new", 4, 200);
	change_list_add(&cl, CHANGE_ADD, name, RR_TXT, 60, (const uint8_t *)"\x04" "dea", 4, 200);
	is_int(records_apply(db, &cl), -EIO, "a failing change list returns -EIO");
	change_list_clear(&cl);
	struct rows after = { 0 };
	records_load(db, collect, &after);
	is_int(after.n, 1, "still one row");
	ok(find_row(&after, "a.acme.example.", RR_TXT, "\x03one", 4) >= 0,
	   "the deleted row is back: the transaction rolled back");
	ok(find_row(&after, "a.acme.example.", RR_TXT, "\x03new", 4) < 0, "the addition is not there");
	/* The connection is usable after the rollback. */
	change_list_add(&cl, CHANGE_ADD, name, RR_TXT, 60, (const uint8_t *)"\x03new", 4, 200);
	is_int(records_apply(db, &cl), 0, "a good change list after a failed one");
	change_list_clear(&cl);
	is_int(records_count(db), 2, "two rows");
	char ierr[256] = "";
	is_int(db_integrity_check(db, ierr), 0, "integrity_check ok after the rollback (%s)", ierr);
	db_close(db);
}

static void test_migration(void)
{
	char dpath[512], err[256] = "";
	path_in("v1.db", dpath);
	/* A database as schema version 1 left it. */
	ok(sql_exec(dpath,
	            "CREATE TABLE records (name BLOB NOT NULL, type INTEGER NOT NULL,"
	            " class INTEGER NOT NULL DEFAULT 1, ttl INTEGER NOT NULL, rdata BLOB NOT NULL,"
	            " created_at INTEGER NOT NULL DEFAULT 0,"
	            " PRIMARY KEY (name, type, class, rdata)) WITHOUT ROWID;"
	            "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value) WITHOUT ROWID;"
	            "INSERT INTO records VALUES (X'01610461636d65076578616d706c6500', 16, 1, 60,"
	            " X'03616263', 1234);"
	            "INSERT INTO records VALUES (X'01620461636d65076578616d706c6500', 16, 1, 300,"
	            " X'0466696c65', 0);"
	            "INSERT INTO meta VALUES ('seeded_at', 1);"
	            "PRAGMA user_version = 1;") == 0,
	   "make a version 1 database");
	is_int(sql_int(dpath, "PRAGMA user_version"), 1, "it is at version 1");
	struct db *db = db_open(dpath, err);
	ok(db != NULL, "db_open migrates it (%s)", err);
	if (!db)
		return;
	is_int(db_schema_version(db), DB_SCHEMA_VERSION, "now at the current version");
	is_int(seed_needed(db), 0, "still seeded");
	struct rows rows = { 0 };
	records_load(db, collect, &rows);
	is_int(rows.n, 2, "its records survived");
	for (size_t i = 0; i < rows.n; i++)
		if (rows.v[i].name[1] == 'a')
			is_int(rows.v[i].created_at, 1234, "with their created_at");
	struct rows file = { 0 };
	zonefile_load(db, collect, &file);
	is_int(file.n, 1, "migration 5: the stored zone file is the record from the file alone");
	if (file.n == 1)
		ok(file.v[0].name[1] == 'b' && file.v[0].ttl == 300 && file.v[0].rdlen == 5,
		   "b.acme.example. 300 TXT \"file\"");
	db_close(db);
	is_int(sql_int(dpath, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
	                      "name = 'records_stale'"),
	       1, "migration 2 added the records_stale index");

	/* A newer schema is refused, not guessed at. */
	path_in("future.db", dpath);
	sql_exec(dpath, "CREATE TABLE x (a); PRAGMA user_version = 99;");
	err[0] = 0;
	db = db_open(dpath, err);
	ok(db == NULL, "a database from a newer version is refused");
	ok(strstr(err, "newer") != NULL, "with a message saying so (%s)", err);
	db_close(db);

	/* Foreign tables at version 0 (a Hickory journal, say) are refused. */
	path_in("foreign.db", dpath);
	sql_exec(dpath, "CREATE TABLE records (history_id INTEGER PRIMARY KEY, record BLOB);");
	err[0] = 0;
	db = db_open(dpath, err);
	ok(db == NULL, "a foreign database is refused");
	ok(strstr(err, "not a geoacme database") != NULL, "with a message saying so (%s)", err);
	is_int(sql_int(dpath, "SELECT count(*) FROM sqlite_master"), 1, "and left untouched");
	db_close(db);

	/* Not a database at all. */
	path_in("garbage.db", dpath);
	write_file(dpath, "this is not an SQLite database, not even close to one..........");
	err[0] = 0;
	db = db_open(dpath, err);
	ok(db == NULL && err[0], "a garbage file is refused (%s)", err);
	db_close(db);
}

static size_t slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

static void test_identify(void)
{
	char dpath[512], err[256] = "", wal[600];
	struct db_info info;

	path_in("nothing-here.db", dpath);
	is_int(db_identify(dpath, &info, err), 0, "an absent file is fine (%s)", err);
	is_int(info.state, DB_ABSENT, "and reported absent");

	is_int(db_identify("/nonexistent-geoacme-folder/acme.db", &info, err), -ENOENT,
	       "a missing folder is refused");
	ok(strstr(err, "its folder /nonexistent-geoacme-folder does not exist") != NULL,
	   "naming the folder (%s)", err);

	/* A Hickory journal: identified read-only, refused, left byte for byte. */
	path_in("hickory.jrnl", dpath);
	ok(sql_exec(dpath, "CREATE TABLE tdns_schema (name TEXT PRIMARY KEY, version INTEGER);"
	                   "INSERT INTO tdns_schema VALUES ('tdns_history', 1);"
	                   "CREATE TABLE records (history_id INTEGER PRIMARY KEY, soa_serial INTEGER,"
	                   " timestamp TEXT, record BLOB);") == 0, "make a Hickory-like journal");
	static char before[65536], after[65536];
	size_t nb = slurp(dpath, before, sizeof(before));
	ok(nb > 0, "read it");
	is_int(db_identify(dpath, &info, err), -EINVAL, "a Hickory journal is not ours");
	ok(strstr(err, "a Hickory journal, tables: records, tdns_schema") != NULL,
	   "and is named as such (%s)", err);
	struct db *db = db_open(dpath, err);
	ok(db == NULL, "db_open refuses it");
	size_t na = slurp(dpath, after, sizeof(after));
	ok(na == nb && memcmp(before, after, nb) == 0, "the file is byte-identical (no WAL switch)");
	snprintf(wal, sizeof(wal), "%s-wal", dpath);
	ok(access(wal, F_OK) != 0, "and no -wal file was made");

	/* Ours: after db_open, identified with our application_id and apex. */
	path_in("ours.db", dpath);
	db = db_open(dpath, err);
	ok(db != NULL, "a new database (%s)", err);
	db_close(db);
	is_int(sql_int(dpath, "PRAGMA application_id"), DB_APPLICATION_ID,
	       "carries our application_id");
	is_int(db_identify(dpath, &info, err), 0, "identified (%s)", err);
	is_int(info.state, DB_OURS, "as ours");
	is_int(info.version, DB_SCHEMA_VERSION, "at the current version");

	/* Our application_id with a newer schema. */
	path_in("newer.db", dpath);
	sql_exec(dpath, "PRAGMA application_id = 1734700897; CREATE TABLE records (a);"
	                "CREATE TABLE meta (k, v); PRAGMA user_version = 7;");
	is_int(db_identify(dpath, &info, err), -EINVAL, "a newer schema is refused");
	ok(strstr(err, "schema version 7 is newer than this geoacme") != NULL, "saying so (%s)", err);

	/* Not SQLite. */
	path_in("text.db", dpath);
	write_file(dpath, "$ORIGIN acme.example.net.\n@ 3600 IN SOA ns1 host 1 2 3 4 5\n");
	is_int(db_identify(dpath, &info, err), -EINVAL, "a zone file at journal_path is refused");
	ok(strstr(err, "not an SQLite database") != NULL, "saying so (%s)", err);
}

static void test_seed_errors(void)
{
	char zpath[512];
	path_in("bad.zone", zpath);
	write_file(zpath, "$ORIGIN acme.example.\n@ SOA ns1.example. h.example. 1 2 3 4 5\n"
	                  "outside.example.org. 300 A 192.0.2.1\nbroken 300 A not-an-address\n");
	uint8_t apex[DNAME_MAX];
	dname_from_str("acme.example.", apex);
	struct change_list cl;
	struct diag d;
	change_list_init(&cl);
	diag_init(&d);
	is_int(seed_read(zpath, apex, &cl, &d, NULL), -EINVAL, "a bad zone file fails to seed");
	ok(d.n >= 2, "every problem is reported (%zu)", d.n);
	change_list_clear(&cl);
	diag_clear(&d);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_storage.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_seed_and_load();
	test_apply();
	test_migration();
	test_identify();
	test_seed_errors();
	test_wal_sync();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return done_testing();
}
