/* SPDX-License-Identifier: MIT */
/*
 * acme/file_diff: a zone-file edit as a difference against what the file
 * said when it was last applied: removed, added and re-TTLed records, the
 * serial rule (RFC 1982), a file that says the same, a migrated database
 * whose stored SOA is ahead of the file, an edit moved onto a later served
 * SOA (file_diff_rebase), bad edits refused at their line,
 * and the printed difference.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acme/file_diff.h"
#include "core/conf/diag.h"
#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "storage/seed.h"
#include "tests/unit/check.h"

static char dir[64], zpath[128];
static uint8_t apex[DNAME_MAX];

static void write_zone(const char *text)
{
	FILE *f = fopen(zpath, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
}

/* What the file says now, as the database would have stored it. */
static void stored_from(const char *text, struct change_list *cl)
{
	struct diag d;
	diag_init(&d);
	write_zone(text);
	change_list_clear(cl);
	if (seed_read(zpath, apex, cl, &d, NULL) < 0)
		abort();
	diag_clear(&d);
}

/* The served SOA: the stored one with another serial. */
static uint16_t served_soa(const struct change_list *cl, uint32_t serial, uint8_t *out)
{
	for (size_t i = 0; i < cl->n; i++)
		if (cl->v[i].type == RR_SOA) {
			memcpy(out, cl->v[i].rdata, cl->v[i].rdlen);
			wire_set_u32(out + cl->v[i].rdlen - 20, serial);
			return cl->v[i].rdlen;
		}
	abort();
}

#define HEAD "$ORIGIN acme.example.\n$TTL 300\n@ SOA ns1.example. h.example. %u 3600 600 86400 60\n"

static int diff(const char *text, const struct change_list *stored, uint32_t served,
                struct file_diff *fd, struct diag *d)
{
	uint8_t soa[600];
	uint16_t len = served_soa(stored, served, soa);
	write_zone(text);
	file_diff_clear(fd);
	return file_diff_compute(zpath, apex, stored, soa, len, 300, fd, d);
}

static char *printed(const struct file_diff *fd)
{
	static char buf[4096];
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	file_diff_print(fd, f);
	fclose(f);
	return buf;
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_file_diff.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(zpath, sizeof(zpath), "%s/acme.zone", dir);
	dname_from_str("acme.example.", apex);
	char text[1024];
	struct change_list stored;
	struct file_diff fd;
	struct diag d;
	change_list_init(&stored);
	file_diff_init(&fd);
	diag_init(&d);

	snprintf(text, sizeof(text), HEAD "@ NS ns1.example.\nwww A 192.0.2.1\nold TXT \"x\"\n", 10);
	stored_from(text, &stored);

	/* The same records, laid out anew: nothing. */
	snprintf(text, sizeof(text), HEAD "; a comment\nold TXT \"x\"\nwww 300 IN A 192.0.2.1\n"
	         "@ NS ns1.example.\n", 10);
	is_int(diff(text, &stored, 57, &fd, &d), 0, "same records, other layout: no difference");
	is_int((int)fd.records.n, 0, "nothing to apply");

	/* Removed, added, re-TTLed; the file's serial 10 is older than 57: 58. */
	snprintf(text, sizeof(text), HEAD "@ NS ns1.example.\n@ NS ns2.example.\n"
	         "www 60 A 192.0.2.1\n", 10);
	is_int(diff(text, &stored, 57, &fd, &d), 1, "an edit");
	is_int((int)fd.n_del, 2, "removed: old TXT, www at 300");
	is_int((int)fd.n_add, 2, "added: ns2, www at 60");
	ok(!fd.soa, "the SOA's fields are the same");
	is_int((int)fd.serial_from, 57, "from the served serial");
	is_int((int)fd.serial_to, 58, "to served + 1: the file's 10 is older");
	is_str(printed(&fd),
	       "+ acme.example. 300 IN NS ns2.example.\n"
	       "- old.acme.example. 300 IN TXT \"x\"\n"
	       "- www.acme.example. 300 IN A 192.0.2.1\n"
	       "+ www.acme.example. 60 IN A 192.0.2.1\n"
	       "- acme.example. 300 IN SOA ns1.example. h.example. 57 3600 600 86400 60\n"
	       "+ acme.example. 300 IN SOA ns1.example. h.example. 58 3600 600 86400 60\n",
	       "the difference, in presentation format");
	/* The stored file becomes the file as it is: its SOA with serial 10. */
	bool file_soa = false;
	for (size_t i = 0; i < fd.file.n; i++)
		if (fd.file.v[i].type == RR_SOA && fd.file.v[i].op == CHANGE_ADD)
			file_soa = wire_get_u32(fd.file.v[i].rdata + fd.file.v[i].rdlen - 20) == 10;
	ok(file_soa, "the stored file takes the file's own SOA, serial 10");

	/* Served 59 by the time it is applied (an UPDATE replayed, a signed
	 * zone's bump): moved onto 59, and a serial of its own, 60. */
	uint8_t soa[600];
	uint16_t soa_len = served_soa(&stored, 57, soa);
	is_int(file_diff_rebase(&fd, soa, soa_len, 300), 0, "rebase onto the same SOA");
	is_int((int)fd.serial_to, 58, "nothing came between: still 58");
	soa_len = served_soa(&stored, 59, soa);
	is_int(file_diff_rebase(&fd, soa, soa_len, 300), 0, "rebase onto serial 59");
	is_int((int)fd.serial_from, 59, "rebased: from 59");
	is_int((int)fd.serial_to, 60, "rebased: to 60");
	ok(strstr(printed(&fd),
	          "- acme.example. 300 IN SOA ns1.example. h.example. 59 3600 600 86400 60\n"
	          "+ acme.example. 300 IN SOA ns1.example. h.example. 60 3600 600 86400 60\n") != NULL,
	   "deletes the SOA served now, adds serial 60: %s", printed(&fd));
	is_int((int)(fd.n_add + fd.n_del), 4, "the records' part unchanged");

	/* A raised serial alone is a change, and the file's newer serial wins. */
	snprintf(text, sizeof(text), HEAD "@ NS ns1.example.\nwww A 192.0.2.1\nold TXT \"x\"\n", 100);
	is_int(diff(text, &stored, 57, &fd, &d), 1, "serial raised to 100");
	is_int((int)fd.serial_to, 100, "the file's 100, newer than 57");
	is_int((int)(fd.n_add + fd.n_del), 0, "no record changed");
	soa_len = served_soa(&stored, 58, soa);
	is_int(file_diff_rebase(&fd, soa, soa_len, 300), 0, "raised, rebased onto 58");
	ok(fd.serial_from == 58 && fd.serial_to == 100, "the file's 100 still wins over 58");
	ok(strstr(printed(&fd), "- acme.example. 300 IN SOA ns1.example. h.example. 58 ") != NULL,
	   "the served SOA 58 is the one deleted: one SOA after the edit");
	soa_len = served_soa(&stored, 100, soa);
	is_int(file_diff_rebase(&fd, soa, soa_len, 300), 0, "rebased onto 100");
	is_int((int)fd.serial_to, 101, "served 100 already: 101");
	/* Across the wrap (RFC 1982 3.2): 5 is newer than 4294967290. */
	snprintf(text, sizeof(text), HEAD "@ NS ns1.example.\nwww A 192.0.2.1\nold TXT \"x\"\n", 5);
	is_int(diff(text, &stored, 4294967290u, &fd, &d), 0, "5 is not newer than the stored 10");
	snprintf(text, sizeof(text), HEAD "@ NS ns1.example.\nwww A 192.0.2.1\nold TXT \"y\"\n", 5);
	is_int(diff(text, &stored, 4294967290u, &fd, &d), 1, "an edit with serial 5");
	is_int((int)fd.serial_to, 5, "the file's 5: newer than 4294967290 across the wrap");
	/* exactly 2^31 apart: undefined, not newer (RFC 1982 3.2) */
	snprintf(text, sizeof(text), HEAD "@ NS ns1.example.\nwww A 192.0.2.1\nold TXT \"y\"\n",
	         57u + 2147483648u);
	is_int(diff(text, &stored, 57, &fd, &d), 1, "an edit 2^31 away");
	is_int((int)fd.serial_to, 58, "undefined order: served + 1");

	/* A database migrated to schema 5 stores its served SOA (serial 57):
	 * the untouched file (serial 10) is no change. */
	snprintf(text, sizeof(text), HEAD "@ NS ns1.example.\nwww A 192.0.2.1\nold TXT \"x\"\n", 57);
	struct change_list migrated;
	change_list_init(&migrated);
	stored_from(text, &migrated);
	snprintf(text, sizeof(text), HEAD "@ NS ns1.example.\nwww A 192.0.2.1\nold TXT \"x\"\n", 10);
	is_int(diff(text, &migrated, 57, &fd, &d), 0, "migrated: the file unchanged is no change");

	/* An SOA field changed: a change with the file's fields. */
	snprintf(text, sizeof(text), "$ORIGIN acme.example.\n$TTL 300\n"
	         "@ SOA ns1.example. h.example. 10 7200 600 86400 60\n"
	         "@ NS ns1.example.\nwww A 192.0.2.1\nold TXT \"x\"\n");
	is_int(diff(text, &stored, 57, &fd, &d), 1, "refresh 3600 -> 7200");
	ok(fd.soa, "the SOA changed");
	ok(strstr(printed(&fd), "+ acme.example. 300 IN SOA ns1.example. h.example. 58 7200 ") != NULL,
	   "new SOA: the file's fields, serial 58");

	/* Bad edits: refused at their line, nothing in fd. */
	size_t before = d.n;
	snprintf(text, sizeof(text), HEAD "www A 192.0.2.1\n", 11);
	is_int(diff(text, &stored, 57, &fd, &d), -EINVAL, "no NS left: refused");
	ok(d.n > before && strstr(d.msgs[d.n - 1], "acme.zone:3: expected NS records at the apex"),
	   "at the SOA's line: %s", d.n ? d.msgs[d.n - 1] : "");
	is_int((int)fd.records.n, 0, "nothing to apply");
	is_int(diff("$ORIGIN acme.example.\n@ 300 NS ns1.example.\n", &stored, 57, &fd, &d),
	       -EINVAL, "no SOA: refused");
	ok(strstr(d.msgs[d.n - 1], "acme.zone:1: expected an SOA record at the apex"), "%s",
	   d.msgs[d.n - 1]);
	snprintf(text, sizeof(text), HEAD "@ NS ns1.example.\n* TXT \"wild\"\n", 11);
	is_int(diff(text, &stored, 57, &fd, &d), -EINVAL, "a wildcard: refused");
	ok(strstr(d.msgs[d.n - 1], "acme.zone:5: ") != NULL, "at its line: %s", d.msgs[d.n - 1]);
	snprintf(text, sizeof(text), HEAD "@ NS ns1.example.\nwww CNAME x.example.\nwww A 192.0.2.1\n",
	         11);
	is_int(diff(text, &stored, 57, &fd, &d), -EINVAL, "CNAME and other data: refused");
	snprintf(text, sizeof(text), HEAD "@ NS ns1.example.\n@ SOA a. b. 1 1 1 1 1\n", 11);
	is_int(diff(text, &stored, 57, &fd, &d), -EINVAL, "a second SOA: refused");
	ok(strstr(d.msgs[d.n - 1], "acme.zone:5: a second SOA record") != NULL, "%s",
	   d.msgs[d.n - 1]);

	file_diff_clear(&fd);
	change_list_clear(&stored);
	change_list_clear(&migrated);
	diag_clear(&d);
	unlink(zpath);
	rmdir(dir);
	return done_testing();
}
