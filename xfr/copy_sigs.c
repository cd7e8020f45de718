/* SPDX-License-Identifier: MIT */
/*
 * The earliest RRSIG expiration of a secondary's copy (see copy_sigs.h).
 */
#include <errno.h>
#include <stdbool.h>

#include "core/wire/change.h"
#include "core/wire/rrset.h"
#include "core/zone/recset.h"
#include "xfr/copy_sigs.h"

struct scan {
	struct rrsig_expiry *s;
	int64_t now;
};

static int scan_name(void *arg, const struct recset_name *n)
{
	struct scan *sc = arg;
	const struct recset_rrset *set = recset_name_rrset(n, RR_RRSIG);
	for (uint16_t i = 0; set && i < set->count; i++)
		if (set->rr[i].rdlen >= RRSIG_EXPIRY_MIN_RDLEN)
			rrsig_expiry_add(sc->s, rrsig_expiration(set->rr[i].rdata, sc->now));
	return 0;
}

void copy_sigs_scan(struct rrsig_expiry *s, const struct recset *rs, int64_t now)
{
	*s = (struct rrsig_expiry){ 0, 0 };
	struct scan sc = { s, now };
	if (rs)
		(void)recset_foreach(rs, scan_name, &sc);
	if (s->count == 0)
		s->earliest = 0;
}

void copy_sigs_applied(struct rrsig_expiry *s, const struct recset *rs,
                       const struct change_list *cl, int64_t now)
{
	bool lost = false;   /* the last RRSIG at the earliest time went */
	for (size_t i = 0; i < cl->n && !lost; i++) {
		const struct change *c = &cl->v[i];
		if (c->type != RR_RRSIG || c->rdlen < RRSIG_EXPIRY_MIN_RDLEN)
			continue;
		int effect = recset_change_effect(rs, cl, i);
		if (effect == -EINVAL) {
			lost = true;
			break;
		}
		int64_t at = rrsig_expiration(c->rdata, now);
		if (effect > 0)
			rrsig_expiry_add(s, at);
		else if (effect < 0)
			lost = rrsig_expiry_drop(s, at);
	}
	/* Which expiration comes next is known only to the whole copy. */
	if (lost)
		copy_sigs_scan(s, rs, now);
}
