/* SPDX-License-Identifier: MIT */
/*
 * A secondary's earliest RRSIG expiration (xfr/copy_sigs.h): kept through
 * change lists as the copy's recset applies them, it always equals a scan
 * of the whole copy; a change that removes the last RRSIG at the earliest
 * time finds the next one; expiration is read with serial arithmetic
 * around the 32-bit wrap (RFC 4034 3.1.5).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/recset.h"
#include "tests/unit/check.h"
#include "xfr/copy_sigs.h"

#define NOW 1700000000

/* An RRSIG at owner covering `covered`, expiring at `exp` (32-bit), key tag `tag`. */
static void sig(struct change_list *cl, enum change_op op, const char *owner, uint16_t covered,
                uint32_t exp, uint16_t tag)
{
	uint8_t name[DNAME_MAX], rd[64];
	if (dname_from_str(owner, name) < 0)
		abort();
	struct wire w;
	wire_init(&w, rd, sizeof(rd));
	wire_write_u16(&w, covered);
	wire_write_bytes(&w, (const uint8_t *)"\15\2", 2);   /* algorithm 13, labels 2 */
	wire_write_u32(&w, 300);
	wire_write_u32(&w, exp);
	wire_write_u32(&w, exp - 86400);
	wire_write_u16(&w, tag);
	wire_write_bytes(&w, (const uint8_t *)"\7example\0", 9);
	wire_write_bytes(&w, (const uint8_t *)"signature-bytes!", 16);
	if (w.err || change_list_add(cl, op, name, RR_RRSIG, 300, rd, (uint16_t)wire_pos(&w), 0) < 0)
		abort();
}

/* A TXT, which is no signature and changes nothing here. */
static void txt(struct change_list *cl, enum change_op op, const char *owner)
{
	uint8_t name[DNAME_MAX], rd[] = { 2, 'h', 'i' };
	if (dname_from_str(owner, name) < 0 || change_list_add(cl, op, name, RR_TXT, 300, rd, 3, 0))
		abort();
}

/* Applies cl to rs and s; checks s against a scan of the whole set. */
static void step(struct recset *rs, struct rrsig_expiry *s, struct change_list *cl,
                 int64_t earliest, uint32_t count, const char *what)
{
	ok(recset_apply(rs, cl, false) == 0, "%s: applied", what);
	copy_sigs_applied(s, rs, cl, NOW);
	struct rrsig_expiry full;
	copy_sigs_scan(&full, rs, NOW);
	is_int(s->earliest, earliest, "%s: earliest", what);
	is_int(s->count, count, "%s: how many at the earliest", what);
	is_int(full.earliest, earliest, "%s: a scan agrees (earliest)", what);
	is_int(full.count, count, "%s: a scan agrees (count)", what);
	change_list_clear(cl);
}

int main(void)
{
	struct recset *rs = recset_new();
	struct rrsig_expiry s;
	struct change_list cl;
	change_list_init(&cl);

	copy_sigs_scan(&s, rs, NOW);
	is_int(s.earliest, 0, "an empty copy: no expiry");
	is_int(s.count, 0, "an empty copy: no RRSIG");

	txt(&cl, CHANGE_ADD, "www.example.");
	step(rs, &s, &cl, 0, 0, "unsigned records only");

	sig(&cl, CHANGE_ADD, "example.", RR_SOA, NOW + 2000, 1);
	sig(&cl, CHANGE_ADD, "example.", RR_NS, NOW + 1000, 1);
	sig(&cl, CHANGE_ADD, "www.example.", RR_TXT, NOW + 1000, 1);
	sig(&cl, CHANGE_ADD, "www.example.", RR_NSEC, NOW + 3000, 1);
	step(rs, &s, &cl, NOW + 1000, 2, "the first signatures");

	sig(&cl, CHANGE_DEL, "example.", RR_NS, NOW + 1000, 1);
	step(rs, &s, &cl, NOW + 1000, 1, "one of the earliest removed");

	/* A deletion that finds nothing and an addition of a record held
	 * (a TTL change in a condensed IXFR) change no count. */
	sig(&cl, CHANGE_DEL, "example.", RR_NS, NOW + 1000, 1);
	sig(&cl, CHANGE_ADD, "www.example.", RR_TXT, NOW + 1000, 1);
	step(rs, &s, &cl, NOW + 1000, 1, "a missed deletion and a record held");

	/* Re-signed: the last at the earliest goes, a later one comes; the
	 * next earliest is the SOA's, found by reading the copy again. */
	sig(&cl, CHANGE_DEL, "www.example.", RR_TXT, NOW + 1000, 1);
	sig(&cl, CHANGE_ADD, "www.example.", RR_TXT, NOW + 5000, 1);
	step(rs, &s, &cl, NOW + 2000, 1, "the last earliest re-signed");

	sig(&cl, CHANGE_ADD, "new.example.", RR_TXT, NOW + 500, 2);
	sig(&cl, CHANGE_ADD, "new.example.", RR_NSEC, NOW + 500, 2);
	step(rs, &s, &cl, NOW + 500, 2, "an earlier signature added");

	/* Added and removed in one list (two differences of one IXFR). */
	sig(&cl, CHANGE_ADD, "tmp.example.", RR_TXT, NOW + 100, 3);
	sig(&cl, CHANGE_DEL, "tmp.example.", RR_TXT, NOW + 100, 3);
	txt(&cl, CHANGE_DEL, "www.example.");
	step(rs, &s, &cl, NOW + 500, 2, "a signature added then removed");

	/* Not the list the set last applied: read whole. */
	struct change_list other;
	change_list_init(&other);
	sig(&cl, CHANGE_DEL, "new.example.", RR_TXT, NOW + 500, 2);
	sig(&cl, CHANGE_DEL, "new.example.", RR_NSEC, NOW + 500, 2);
	ok(recset_apply(rs, &cl, false) == 0, "removed the earliest");
	txt(&other, CHANGE_ADD, "x.example.");
	ok(recset_apply(rs, &other, false) == 0, "then another list");
	copy_sigs_applied(&s, rs, &cl, NOW);
	is_int(s.earliest, NOW + 2000, "not the last list: read whole (earliest)");
	is_int(s.count, 1, "not the last list: read whole (count)");
	change_list_clear(&cl);
	change_list_clear(&other);

	/* Serial arithmetic (RFC 1982) near the 32-bit wrap: 100 after the
	 * wrap is later than now, 4294966000 just before it is earlier. */
	struct recset *wrap = recset_new();
	int64_t late = 4294967000LL;   /* 2106-02-07, 296 s before 2^32 */
	copy_sigs_scan(&s, wrap, late);
	sig(&cl, CHANGE_ADD, "example.", RR_SOA, 100, 1);
	ok(recset_apply(wrap, &cl, false) == 0, "wrapped: applied");
	copy_sigs_applied(&s, wrap, &cl, late);
	is_int(s.earliest, 4294967296LL + 100, "an expiration past the wrap is after now");
	change_list_clear(&cl);
	sig(&cl, CHANGE_ADD, "example.", RR_NS, 4294966000u, 1);
	ok(recset_apply(wrap, &cl, false) == 0, "before the wrap: applied");
	copy_sigs_applied(&s, wrap, &cl, late);
	is_int(s.earliest, 4294966000LL, "one before the wrap is earlier");
	copy_sigs_scan(&s, wrap, late);
	is_int(s.earliest, 4294966000LL, "a scan agrees");
	change_list_clear(&cl);

	recset_free(wrap);
	recset_free(rs);
	return done_testing();
}
