/* SPDX-License-Identifier: MIT */
/*
 * The earliest RRSIG expiration of a secondary's copy (see copy_sigs.h).
 */
#include <errno.h>
#include <stdbool.h>

#include "core/wire/change.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/recset.h"
#include "xfr/copy_sigs.h"

/* RRSIG rdata: type covered 2, algorithm 1, labels 1, original TTL 4, expiration 4 ... */
#define RRSIG_EXPIRATION_OFF 8
#define RRSIG_MIN_RDLEN 18

/* The expiration as a unix time: the one within 2^31 s of now (RFC 1982). */
static int64_t expiration(const uint8_t *rdata, int64_t now)
{
	uint32_t exp = wire_get_u32(rdata + RRSIG_EXPIRATION_OFF);
	return now + (int32_t)(exp - (uint32_t)now);
}

/* One RRSIG more in the copy. */
static void add(struct copy_sigs *s, int64_t at)
{
	if (s->count == 0 || at < s->earliest) {
		s->earliest = at;
		s->count = 1;
	} else if (at == s->earliest) {
		s->count++;
	}
}

struct scan {
	struct copy_sigs *s;
	int64_t now;
};

static int scan_name(void *arg, const struct recset_name *n)
{
	struct scan *sc = arg;
	const struct recset_rrset *set = recset_name_rrset(n, RR_RRSIG);
	for (uint16_t i = 0; set && i < set->count; i++)
		if (set->rr[i].rdlen >= RRSIG_MIN_RDLEN)
			add(sc->s, expiration(set->rr[i].rdata, sc->now));
	return 0;
}

void copy_sigs_scan(struct copy_sigs *s, const struct recset *rs, int64_t now)
{
	*s = (struct copy_sigs){ 0, 0 };
	struct scan sc = { s, now };
	if (rs)
		(void)recset_foreach(rs, scan_name, &sc);
	if (s->count == 0)
		s->earliest = 0;
}

void copy_sigs_applied(struct copy_sigs *s, const struct recset *rs,
                       const struct change_list *cl, int64_t now)
{
	bool lost = false;   /* the last RRSIG at the earliest time went */
	for (size_t i = 0; i < cl->n && !lost; i++) {
		const struct change *c = &cl->v[i];
		if (c->type != RR_RRSIG || c->rdlen < RRSIG_MIN_RDLEN)
			continue;
		int effect = recset_change_effect(rs, cl, i);
		if (effect == -EINVAL) {
			lost = true;
			break;
		}
		int64_t at = expiration(c->rdata, now);
		if (effect > 0)
			add(s, at);
		else if (effect < 0 && s->count && at == s->earliest)
			lost = --s->count == 0;
	}
	/* Which expiration comes next is known only to the whole copy. */
	if (lost)
		copy_sigs_scan(s, rs, now);
}
