/* SPDX-License-Identifier: MIT */
/*
 * The ACME zone's in-memory mirror: undoing a change list puts back exactly
 * what was there, and running out of memory half-way is undone or
 * reported (-EIO), never left half-applied in silence.
 *
 * malloc, calloc and realloc are wrapped (-Wl,--wrap) so a test can make
 * the N-th allocation from now fail.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/recset.h"
#include "storage/copy.h"
#include "storage/db.h"
#include "tests/unit/check.h"
#include "xfr/copy_mirror.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);

static long fail_in = -1;   /* allocations until one fails; -1: never */

static bool should_fail(void)
{
	if (fail_in < 0)
		return false;
	return fail_in-- == 0;
}

void *__wrap_malloc(size_t n) { return should_fail() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return should_fail() ? NULL : __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return should_fail() ? NULL : __real_realloc(p, n); }

static const uint8_t *name(const char *s)
{
	static uint8_t buf[8][DNAME_MAX];
	static int i;
	uint8_t *b = buf[i++ % 8];
	if (dname_from_str(s, b) < 0)
		abort();
	return b;
}

static void add(struct change_list *cl, enum change_op op, const char *owner, const char *txt,
                uint32_t ttl, int64_t created)
{
	uint8_t rd[256];
	size_t len = strlen(txt);
	rd[0] = (uint8_t)len;
	memcpy(rd + 1, txt, len);
	if (change_list_add(cl, op, name(owner), RR_TXT, ttl, rd, (uint16_t)(len + 1), created) < 0)
		abort();
}

static void seed(struct recset *rs, const char *owner, const char *txt, uint32_t ttl,
                 int64_t created)
{
	uint8_t rd[256];
	size_t len = strlen(txt);
	rd[0] = (uint8_t)len;
	memcpy(rd + 1, txt, len);
	if (recset_add(rs, name(owner), RR_TXT, ttl, rd, (uint16_t)(len + 1), created) < 0)
		abort();
}

/* The record as "ttl/created", "-" when absent. */
static const char *show(const struct recset *rs, const char *owner, const char *txt)
{
	static char out[64];
	uint8_t rd[256];
	size_t len = strlen(txt);
	rd[0] = (uint8_t)len;
	memcpy(rd + 1, txt, len);
	const struct recset_rr *r = recset_rrset_find(
		recset_name_rrset(recset_find(rs, name(owner)), RR_TXT), rd, (uint16_t)(len + 1));
	if (!r)
		return "-";
	snprintf(out, sizeof(out), "%u/%lld", r->ttl, (long long)r->created_at);
	return out;
}

static struct recset *base(void)
{
	struct recset *rs = recset_new();
	seed(rs, "a.example", "a", 60, 5);
	seed(rs, "b.example", "b", 120, 7);
	return rs;
}

static void test_undo_is_exact(void)
{
	struct recset *rs = base();
	struct change_list cl;
	change_list_init(&cl);
	add(&cl, CHANGE_DEL, "x.example", "x", 60, 0);      /* missing: a no-op */
	add(&cl, CHANGE_ADD, "a.example", "a", 300, 9);     /* existing: replaces TTL, age */
	add(&cl, CHANGE_DEL, "b.example", "b", 999, 0);     /* deletes matches by rdata */
	add(&cl, CHANGE_ADD, "c.example", "c", 30, 11);     /* new */
	is_int(recset_apply(rs, &cl, false), 0, "forward");
	is_str(show(rs, "a.example", "a"), "300/9", "a replaced");
	is_str(show(rs, "b.example", "b"), "-", "b deleted");
	is_str(show(rs, "c.example", "c"), "30/11", "c added");
	is_int(recset_count(rs), 2, "two records");

	is_int(recset_apply(rs, &cl, true), 0, "reverse");
	is_str(show(rs, "x.example", "x"), "-", "x: never there, still not there");
	is_str(show(rs, "a.example", "a"), "60/5", "a: its old TTL and age back, not deleted");
	is_str(show(rs, "b.example", "b"), "120/7", "b: back with its own TTL and age");
	is_str(show(rs, "c.example", "c"), "-", "c: gone");
	is_int(recset_count(rs), 2, "two records, as before");
	is_int(recset_apply(rs, &cl, true), -EINVAL, "a second undo is refused");
	change_list_clear(&cl);
	recset_free(rs);
}

static void test_out_of_memory_forward(void)
{
	/* Every allocation point of a forward apply, in turn: each failure
	 * leaves the mirror as it was. */
	int failures = 0;
	for (long k = 0; k < 40; k++) {
		struct recset *rs = base();
		struct change_list cl;
		change_list_init(&cl);
		add(&cl, CHANGE_DEL, "b.example", "b", 120, 7);
		add(&cl, CHANGE_ADD, "a.example", "a", 300, 9);
		add(&cl, CHANGE_ADD, "c.example", "c", 30, 11);
		add(&cl, CHANGE_ADD, "c.example", "c2", 30, 11);
		fail_in = k;
		int ret = recset_apply(rs, &cl, false);
		fail_in = -1;
		if (ret == 0) {
			change_list_clear(&cl);
			recset_free(rs);
			break;
		}
		failures++;
		ok(ret == -ENOMEM || ret == -EIO, "allocation %ld fails: -ENOMEM or -EIO (%d)", k, ret);
		if (ret == -ENOMEM) {
			is_str(show(rs, "a.example", "a"), "60/5", "allocation %ld: a as it was", k);
			is_str(show(rs, "b.example", "b"), "120/7", "allocation %ld: b as it was", k);
			is_str(show(rs, "c.example", "c"), "-", "allocation %ld: no c", k);
			is_int(recset_count(rs), 2, "allocation %ld: two records", k);
		}
		change_list_clear(&cl);
		recset_free(rs);
	}
	ok(failures >= 3, "several allocation points were failed (%d)", failures);
}

static void test_out_of_memory_undo(void)
{
	/* Undo must re-add b (its name was freed with its last record): with
	 * no memory it cannot, and says so instead of returning success. */
	struct recset *rs = base();
	struct change_list cl;
	change_list_init(&cl);
	add(&cl, CHANGE_DEL, "b.example", "b", 120, 7);
	add(&cl, CHANGE_ADD, "c.example", "c", 30, 11);
	is_int(recset_apply(rs, &cl, false), 0, "forward");
	fail_in = 0;
	int ret = recset_apply(rs, &cl, true);
	fail_in = -1;
	is_int(ret, -EIO, "undo out of memory: -EIO (read the mirror again)");
	is_str(show(rs, "c.example", "c"), "-", "what could be undone was (c removed)");
	change_list_clear(&cl);
	recset_free(rs);
}

/* The dated names as one sorted, comma-separated string, checked against
 * a full walk: exactly the names holding a record with created_at != 0. */
static int collect(void *arg, const struct recset_name *n)
{
	char *out = arg, buf[256];
	dname_to_str(n->name, buf, sizeof(buf));
	strcat(out, buf);
	strcat(out, ",");
	return 0;
}

static int check_full(void *arg, const struct recset_name *n)
{
	int *bad = arg;
	uint32_t k = 0;
	for (uint16_t i = 0; i < n->nsets; i++)
		for (uint16_t j = 0; j < n->sets[i].count; j++)
			k += n->sets[i].rr[j].created_at != 0;
	*bad += k != n->ndated;
	return 0;
}

static const char *dated_names(const struct recset *rs, int *mismatch)
{
	static char out[1024];
	out[0] = 0;
	recset_foreach_dated(rs, collect, out);
	*mismatch = 0;
	recset_foreach(rs, check_full, mismatch);
	/* Sorted, for a stable comparison. */
	char *parts[32];
	int n = 0;
	static char copy[1024];
	strcpy(copy, out);
	for (char *t = strtok(copy, ","); t && n < 32; t = strtok(NULL, ","))
		parts[n++] = t;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && strcmp(parts[j - 1], parts[j]) > 0; j--) {
			char *x = parts[j];
			parts[j] = parts[j - 1];
			parts[j - 1] = x;
		}
	out[0] = 0;
	for (int i = 0; i < n; i++) {
		strcat(out, parts[i]);
		strcat(out, i + 1 < n ? "," : "");
	}
	return out;
}

static void test_dated_list(void)
{
	struct recset *rs = recset_new();
	int bad;
	seed(rs, "zone.example", "from the zone file", 60, 0);
	seed(rs, "a.example", "a1", 60, 5);
	seed(rs, "a.example", "a2", 60, 6);
	seed(rs, "b.example", "b", 60, 7);
	is_str(dated_names(rs, &bad), "a.example.,b.example.", "names with UPDATE-added records");
	is_int(bad, 0, "counts agree with a full walk");
	struct change_list cl;
	change_list_init(&cl);
	add(&cl, CHANGE_DEL, "a.example", "a1", 60, 0);
	add(&cl, CHANGE_ADD, "zone.example", "from the zone file", 60, 9);   /* gets an age */
	add(&cl, CHANGE_ADD, "b.example", "b", 60, 0);                       /* loses its age */
	add(&cl, CHANGE_ADD, "c.example", "c", 60, 11);
	is_int(recset_apply(rs, &cl, false), 0, "forward");
	is_str(dated_names(rs, &bad), "a.example.,c.example.,zone.example.", "after the change");
	is_int(bad, 0, "counts agree");
	is_int(recset_apply(rs, &cl, true), 0, "reverse");
	is_str(dated_names(rs, &bad), "a.example.,b.example.", "undone: as before");
	is_int(bad, 0, "counts agree");
	change_list_clear(&cl);
	add(&cl, CHANGE_DEL, "a.example", "a1", 60, 0);
	add(&cl, CHANGE_DEL, "a.example", "a2", 60, 0);
	add(&cl, CHANGE_DEL, "b.example", "b", 60, 0);
	is_int(recset_apply(rs, &cl, false), 0, "every dated record deleted");
	is_str(dated_names(rs, &bad), "", "no dated names left");
	is_int(bad, 0, "counts agree");
	change_list_clear(&cl);
	recset_free(rs);
}

/* --- a secondary's copy (xfr/copy_mirror.h) --- */

/* Canonical SOA rdata of zone "example." with this serial. */
static uint16_t soa_rdata(uint32_t serial, uint8_t out[64])
{
	size_t m = dname_len(name("ns.example")), r = dname_len(name("h.example"));
	memcpy(out, name("ns.example"), m);
	memcpy(out + m, name("h.example"), r);
	uint8_t *p = out + m + r;
	wire_set_u32(p, serial);
	wire_set_u32(p + 4, 3600);
	wire_set_u32(p + 8, 600);
	wire_set_u32(p + 12, 86400);
	wire_set_u32(p + 16, 60);
	return (uint16_t)(m + r + 20);
}

static void add_soa(struct change_list *cl, enum change_op op, uint32_t serial)
{
	uint8_t rd[64];
	uint16_t len = soa_rdata(serial, rd);
	if (change_list_add(cl, op, name("example"), RR_SOA, 300, rd, len, 0) < 0)
		abort();
}

static bool has_soa(const struct recset *rs, uint32_t serial)
{
	uint8_t rd[64];
	uint16_t len = soa_rdata(serial, rd);
	return recset_rrset_find(recset_name_rrset(recset_find(rs, name("example")), RR_SOA), rd,
	                         len) != NULL;
}

/* A copy at serial 10 in a new database (a.example, b.example TXT), and its mirror. */
static struct db *copy_at_10(char dir[64], struct recset **rs)
{
	char path[128], err[256] = "";
	snprintf(dir, 64, "/tmp/test_recset.XXXXXX");
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/copy.sqlite", dir);
	struct db *db = db_open(path, err);
	ok(db != NULL, "a database for the copy (%s)", err);
	if (!db)
		abort();
	struct change_list cl;
	change_list_init(&cl);
	add_soa(&cl, CHANGE_ADD, 10);
	add(&cl, CHANGE_ADD, "a.example", "a", 60, 0);
	add(&cl, CHANGE_ADD, "b.example", "b", 120, 0);
	is_int(copy_replace(db, &cl, name("example"), 1000), 0, "the copy is stored");
	change_list_clear(&cl);
	is_int(copy_mirror_load(db, rs, NULL), 0, "and read into a mirror");
	return db;
}

static void copy_done(char dir[64], struct db *db, struct recset *rs)
{
	char path[128];
	recset_free(rs);
	db_close(db);
	const char *const files[] = { "copy.sqlite", "copy.sqlite-wal", "copy.sqlite-shm" };
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

static void test_copy_undo_out_of_memory_reads_again(void)
{
	char dir[64];
	struct recset *rs;
	struct db *db = copy_at_10(dir, &rs);
	/* An IXFR from 10 to 11 that deletes b and adds c, applied in memory;
	 * then storing it fails and it is taken back, out of memory. */
	struct change_list cl;
	change_list_init(&cl);
	add_soa(&cl, CHANGE_DEL, 10);
	add(&cl, CHANGE_DEL, "b.example", "b", 120, 0);
	add_soa(&cl, CHANGE_ADD, 11);
	add(&cl, CHANGE_ADD, "c.example", "c", 30, 0);
	char err[256] = "";
	is_int(copy_mirror_apply_ixfr(&rs, db, &cl, name("example"), 11, err), 0, "applied (%s)",
	       err);
	ok(has_soa(rs, 11) && !has_soa(rs, 10), "the mirror is at 11");
	fail_in = 0;   /* re-adding b (its name went with it) fails */
	int ret = copy_mirror_undo(&rs, db, &cl);
	fail_in = -1;
	is_int(ret, 1, "the undo ran out of memory: the mirror is read again from the database");
	ok(has_soa(rs, 10) && !has_soa(rs, 11), "back at serial 10");
	is_str(show(rs, "b.example", "b"), "120/0", "b is back, as the database has it");
	is_str(show(rs, "c.example", "c"), "-", "c is gone");
	is_int((long long)recset_count(rs), 3, "three records, as stored");
	change_list_clear(&cl);
	copy_done(dir, db, rs);
}

static void test_copy_divergence(void)
{
	char dir[64];
	struct recset *rs;
	struct db *db = copy_at_10(dir, &rs);
	struct change_list cl;
	change_list_init(&cl);
	/* Deletes a record the copy does not hold. */
	add_soa(&cl, CHANGE_DEL, 10);
	add(&cl, CHANGE_DEL, "a.example", "not-a", 60, 0);
	add_soa(&cl, CHANGE_ADD, 11);
	add(&cl, CHANGE_ADD, "c.example", "c", 30, 0);
	char err[256] = "";
	is_int(copy_mirror_apply_ixfr(&rs, db, &cl, name("example"), 11, err), -ESTALE,
	       "a deletion of a missing record: divergence");
	is_str(err, "it deletes a.example. TXT (TTL 60), which the copy does not hold", "named");
	ok(has_soa(rs, 10) && !has_soa(rs, 11), "the mirror is as it was");
	is_str(show(rs, "c.example", "c"), "-", "nothing added");
	change_list_clear(&cl);
	/* Deletes the SOA of another serial: the primary's 10 is not ours. */
	add_soa(&cl, CHANGE_DEL, 9);
	add_soa(&cl, CHANGE_ADD, 11);
	err[0] = '\0';
	is_int(copy_mirror_apply_ixfr(&rs, db, &cl, name("example"), 11, err), -ESTALE,
	       "a difference from another serial: divergence");
	ok(has_soa(rs, 10) && !has_soa(rs, 11), "the mirror is as it was");
	change_list_clear(&cl);
	/* Ends elsewhere than announced. */
	add_soa(&cl, CHANGE_DEL, 10);
	add_soa(&cl, CHANGE_ADD, 12);
	err[0] = '\0';
	is_int(copy_mirror_apply_ixfr(&rs, db, &cl, name("example"), 11, err), -ESTALE,
	       "ends at another serial: divergence");
	is_str(err, "it ends at serial 12, not at the announced 11", "said");
	ok(has_soa(rs, 10), "the mirror is as it was");
	change_list_clear(&cl);
	/* Adding what the copy holds is not one (a TTL moving, condensed). */
	add_soa(&cl, CHANGE_DEL, 10);
	add(&cl, CHANGE_ADD, "a.example", "a", 90, 0);
	add_soa(&cl, CHANGE_ADD, 11);
	is_int(copy_mirror_apply_ixfr(&rs, db, &cl, name("example"), 11, err), 0,
	       "an add of a held record is applied");
	is_str(show(rs, "a.example", "a"), "90/0", "with its new TTL");
	change_list_clear(&cl);
	copy_done(dir, db, rs);
}

int main(void)
{
	test_copy_undo_out_of_memory_reads_again();
	test_copy_divergence();
	test_undo_is_exact();
	test_dated_list();
	test_out_of_memory_forward();
	test_out_of_memory_undo();
	return done_testing();
}
