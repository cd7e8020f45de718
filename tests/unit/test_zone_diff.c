/* SPDX-License-Identifier: MIT */
/*
 * core/zone/zone_diff and storage/journal: the difference of two snapshots
 * as an IXFR carries it (SOAs leading, a changed TTL as delete + add,
 * removed names, unchanged records left out), blobs that are malformed
 * refused before any record is seen, snapshot holds, and the journal in
 * SQLite (capped by count and bytes, emptied on reset, kept in order).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/conf/diag.h"
#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/zone.h"
#include "core/zone/zone_diff.h"
#include "storage/db.h"
#include "storage/journal.h"
#include "tests/unit/check.h"

static uint8_t *name(const char *s)
{
	static uint8_t bufs[8][DNAME_MAX];
	static int next;
	uint8_t *p = bufs[next++ % 8];
	if (dname_from_str(s, p) < 0)
		abort();
	return p;
}

static const uint8_t *soa_rdata(uint32_t serial, uint16_t *len)
{
	static uint8_t rd[64];
	size_t n = 0;
	const uint8_t *m = name("ns1.test"), *r = name("host.test");
	memcpy(rd + n, m, dname_len(m));
	n += dname_len(m);
	memcpy(rd + n, r, dname_len(r));
	n += dname_len(r);
	wire_set_u32(rd + n, serial);
	for (int i = 1; i < 5; i++)
		wire_set_u32(rd + n + 4 * i, 3600);
	*len = (uint16_t)(n + 20);
	return rd;
}

/* Serial, plus one TXT at each of `names` (with `ttl`). */
static struct zone *make(uint32_t serial, const char *const *names, size_t n, uint32_t ttl)
{
	struct zone_builder *b = zone_builder_new(name("test"));
	uint16_t len;
	const uint8_t *soa = soa_rdata(serial, &len);
	zone_builder_add(b, name("test"), RR_SOA, 300, soa, len);
	zone_builder_add(b, name("test"), RR_NS, 300, name("ns1.test"), dname_len(name("ns1.test")));
	zone_builder_add(b, name("ns1.test"), RR_A, 300, (const uint8_t *)"\xc0\x00\x02\x01", 4);
	for (size_t i = 0; i < n; i++)
		zone_builder_add(b, name(names[i]), RR_TXT, ttl, (const uint8_t *)"\x02hi", 3);
	struct diag d;
	diag_init(&d);
	struct zone *z = zone_builder_finish(b, NULL, "test", &d);
	diag_clear(&d);
	return z;
}

struct seen {
	char lines[16][1100];
	int n;
};

static int collect(void *arg, const struct zone_diff_rr *rr)
{
	struct seen *s = arg;
	char owner[DNAME_MAX * 4 + 2];
	dname_to_str(rr->owner, owner, sizeof(owner));
	if (s->n < 16)
		snprintf(s->lines[s->n++], sizeof(s->lines[0]), "%c %s %u %u %u", rr->add ? '+' : '-', owner, rr->type,
		         rr->ttl, rr->type == RR_SOA ? wire_get_u32(rr->rdata + rr->rdlen - 20) : 0);
	return 0;
}

static void test_diff(void)
{
	const char *a[] = { "a.test", "b.test", "gone.test" };
	const char *b[] = { "a.test", "b.test", "new.test" };
	struct zone *z1 = make(1, a, 3, 60), *z2 = make(2, b, 3, 60);
	uint8_t *blob;
	size_t len;
	is_int(zone_diff(z1, z2, &blob, &len), 0, "diff computed");
	uint32_t from, to, nd, na;
	is_int(zone_diff_header(blob, len, &from, &to, &nd, &na), 0, "header reads");
	is_int(from, 1, "from serial");
	is_int(to, 2, "to serial");
	is_int(nd, 2, "old SOA and gone.test deleted");
	is_int(na, 2, "new SOA and new.test added");
	struct seen s = { 0 };
	is_int(zone_diff_walk(blob, len, collect, &s), 0, "walk");
	is_int(s.n, 4, "four records");
	is_str(s.lines[0], "- test. 6 300 1", "old SOA leads the deletions");
	is_str(s.lines[1], "- gone.test. 16 60 0", "removed name");
	is_str(s.lines[2], "+ test. 6 300 2", "new SOA leads the additions");
	is_str(s.lines[3], "+ new.test. 16 60 0", "added name");

	/* Malformed blobs: refused before the first record. */
	struct seen none = { 0 };
	is_int(zone_diff_walk(blob, len - 1, collect, &none), -EBADMSG, "truncated refused");
	is_int(none.n, 0, "and nothing seen");
	blob[0] = 'X';
	is_int(zone_diff_walk(blob, len, collect, &none), -EBADMSG, "bad magic refused");
	free(blob);

	/* A TTL change is a deletion and an addition of the same data. */
	struct zone *z3 = make(3, b, 3, 90);
	is_int(zone_diff(z2, z3, &blob, &len), 0, "ttl diff");
	zone_diff_header(blob, len, &from, &to, &nd, &na);
	is_int(nd, 4, "SOA and three TXT at the old TTL deleted");
	is_int(na, 4, "SOA and three TXT at the new TTL added");
	free(blob);

	/* A different zone cannot be diffed. */
	struct zone_builder *ob = zone_builder_new(name("other"));
	uint16_t sl;
	const uint8_t *soa = soa_rdata(1, &sl);
	zone_builder_add(ob, name("other"), RR_SOA, 300, soa, sl);
	zone_builder_add(ob, name("other"), RR_NS, 300, name("ns1.test"), dname_len(name("ns1.test")));
	struct diag d;
	diag_init(&d);
	struct zone *other = zone_builder_finish(ob, NULL, "other", &d);
	diag_clear(&d);
	is_int(zone_diff(z1, other, &blob, &len), -EINVAL, "another zone: -EINVAL");

	/* Holds: the snapshot lives until its last holder lets go. */
	struct zone *held = zone_hold(z1);
	ok(held == z1, "hold returns the zone");
	zone_free(z1);
	ok(zone_find(held, name("a.test"), dname_len(name("a.test"))) != NULL,
	   "still readable after the first free");
	zone_free(held);
	zone_free(z2);
	zone_free(z3);
	zone_free(other);
}

static char dir[64];

static int count_rows(void *arg, const struct journal_entry *e)
{
	char *out = arg;
	char one[32];
	snprintf(one, sizeof(one), "%s%u-%u", *out ? "," : "", e->serial_from, e->serial_to);
	strcat(out, one);
	return 0;
}

static void test_journal(void)
{
	char path[128], err[256] = "", rows[512];
	snprintf(path, sizeof(path), "%s/j.sqlite", dir);
	struct db *db = db_open(path, err);
	ok(db != NULL, "open: %s", err);
	if (!db)
		return;
	ok(db_schema_version(db) >= 4, "schema version 4 or later has the journal");
	struct change_list cl;
	change_list_init(&cl);
	struct journal_caps caps = { 3, 1000 };
	uint8_t blob[100] = { 0 };
	for (uint32_t s = 1; s <= 5; s++) {
		struct journal_entry e = { s, s + 1, blob, 10 };
		is_int(journal_commit(db, &cl, &e, false, &caps), 0, "commit %u", s);
	}
	rows[0] = '\0';
	journal_load(db, count_rows, rows);
	is_str(rows, "3-4,4-5,5-6", "capped at three, oldest gone, in order");

	caps = (struct journal_caps){ 100, 25 };
	struct journal_entry e6 = { 6, 7, blob, 10 };
	journal_commit(db, &cl, &e6, false, &caps);
	rows[0] = '\0';
	journal_load(db, count_rows, rows);
	is_str(rows, "5-6,6-7", "capped at 25 bytes: two entries of 10");

	struct journal_entry big = { 7, 8, blob, 100 };
	journal_commit(db, &cl, &big, false, &caps);
	rows[0] = '\0';
	journal_load(db, count_rows, rows);
	is_str(rows, "", "an entry over the byte cap empties the journal");

	journal_commit(db, &cl, &e6, false, &caps);
	journal_commit(db, &cl, NULL, true, &caps);
	rows[0] = '\0';
	journal_load(db, count_rows, rows);
	is_str(rows, "", "reset empties it");
	change_list_clear(&cl);
	db_close(db);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_zone_diff.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_diff();
	test_journal();
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return done_testing();
}
