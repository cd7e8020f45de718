/* SPDX-License-Identifier: MIT */
/*
 * A large UPDATE's signatures made ahead in slices (see presign.h).
 */
#include "acme/presign.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acme/acme_internal.h"
#include "core/conf/log.h"
#include "core/conf/sysclock.h"
#include "core/net/loop.h"
#include "core/test_hooks.h"
#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "core/zone/recset.h"
#include "core/zone/zone.h"
#include "core/zone/zone_patch.h"
#include "core/zone/zone_table.h"

struct presign {
	struct recset *rs;           /* the changed names as the UPDATE leaves them */
	struct change_list names;    /* each once, canonical order (no rdata) */
	size_t next;                 /* the first name of the next slice */
	int64_t timer;
	bool ready;                  /* done: the UPDATE is handled again now */
	uint64_t made;
	struct timespec started;
};

static int canonical(const void *a, const void *b)
{
	const struct change *x = a, *y = b;
	return dname_canonical_cmp(x->name, y->name);
}

/* A name's records in the mirror, copied once into rs. */
static int copy_name(struct recset *rs, const struct recset *from, const uint8_t *name)
{
	if (recset_find(rs, name))
		return 0;
	const struct recset_name *n = recset_find(from, name);
	for (uint16_t i = 0; n && i < n->nsets; i++) {
		const struct recset_rrset *s = &n->sets[i];
		for (uint16_t k = 0; k < s->count; k++) {
			int ret = recset_add(rs, n->name, s->type, s->rr[k].ttl, s->rr[k].rdata,
			                     s->rr[k].rdlen, s->rr[k].created_at);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

static void clear(struct presign *ps)
{
	recset_free(ps->rs);
	ps->rs = NULL;
	change_list_clear(&ps->names);
	ps->next = 0;
}

bool presign_busy(const struct acme_zone *az)
{
	return az->presign && !az->presign->ready;
}

bool presign_wanted(struct acme_zone *az, const struct change_list *cl)
{
	if (az->presign && az->presign->ready) {
		free(az->presign);
		az->presign = NULL;
		return false;   /* made: commit now */
	}
	return !az->presign && az->has_signer && az->a->l && az->attached &&
	       cl->n >= PRESIGN_MIN;
}

static void done(struct loop *l, void *arg)
{
	struct acme_zone *az = arg;
	(void)l;
	az->presign->timer = 0;
	az->presign->ready = true;
}

static void finish(struct acme_zone *az)
{
	struct presign *ps = az->presign;
	struct timespec t1;
	sysclock_mono_ts(&t1);
	log_info("%s: %zu names of a large UPDATE signed ahead in %zu slices over %.0f ms; it is "
	         "handled again", az->name, ps->names.n,
	         (ps->names.n + PRESIGN_SLICE - 1) / PRESIGN_SLICE,
	         (double)(t1.tv_sec - ps->started.tv_sec) * 1e3 +
	         (double)(t1.tv_nsec - ps->started.tv_nsec) / 1e6);
	clear(ps);
	/* A test hook: made, not yet handled again, so a test sees the UPDATE
	 * held (and the zone served as it was) meanwhile. */
	const char *delay = test_hook(TEST_HOOK_COMPACT_DELAY);
	uint32_t ms = delay ? (uint32_t)strtoul(delay, NULL, 10) : 0;
	int64_t id = ms ? loop_timer_add(az->a->l, ms, done, az) : 0;
	if (id > 0)
		ps->timer = id;
	else
		ps->ready = true;
}

static void slice(struct loop *l, void *arg)
{
	struct acme_zone *az = arg;
	struct presign *ps = az->presign;
	ps->timer = 0;
	struct zone *z = zone_table_edit(az->a->t, az->apex);
	size_t n = ps->names.n - ps->next;
	if (n > PRESIGN_SLICE)
		n = PRESIGN_SLICE;
	/* With the next slice's first name too: the NSEC of this slice's last
	 * name then points where the UPDATE's own patch will point it. */
	size_t with = n + (ps->next + n < ps->names.n);
	/* A view of the list: never cleared. */
	struct change_list part = { .v = ps->names.v + ps->next, .n = with, .cap = with };
	struct zone_patch *p = NULL;
	char err[256] = "";
	int ret = z ? recset_prepare_patch_any(z, ps->rs, &part, &az->signer, &p, err) : -ENOENT;
	/* Thrown away: the signatures stay in the signer's cache. */
	zone_patch_free(p);
	ps->next += n;
	if (ret < 0) {
		/* A change a patch does not make, say: the commit will tell. */
		log_debug("%s: signing ahead stopped (%s)", az->name, err[0] ? err : strerror(-ret));
		ps->next = ps->names.n;
	}
	if (ps->next >= ps->names.n) {
		finish(az);
		return;
	}
	int64_t id = loop_timer_add(l, 0, slice, az);
	if (id > 0)
		ps->timer = id;
	else
		finish(az);
}

int presign_start(struct acme_zone *az, const struct change_list *cl)
{
	struct presign *ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	change_list_init(&ps->names);
	sysclock_mono_ts(&ps->started);
	int ret = (ps->rs = recset_new()) ? 0 : -ENOMEM;
	for (size_t i = 0; i < cl->n && ret == 0; i++)
		ret = copy_name(ps->rs, az->rs, cl->v[i].name);
	if (ret == 0)
		ret = recset_apply(ps->rs, cl, false);
	for (size_t i = 0; i < cl->n && ret == 0; i++)
		ret = change_list_add(&ps->names, CHANGE_ADD, cl->v[i].name, cl->v[i].type, 0, NULL, 0,
		                      0);
	if (ret == 0) {
		/* In canonical order, each name once: a slice's NSEC records then
		 * point where the UPDATE's own patch will point them. */
		qsort(ps->names.v, ps->names.n, sizeof(*ps->names.v), canonical);
		size_t k = 0;
		for (size_t i = 0; i < ps->names.n; i++) {
			/* A repeat's name stays in the list's blocks until it is cleared. */
			if (!k || !dname_equal(ps->names.v[k - 1].name, ps->names.v[i].name))
				ps->names.v[k++] = ps->names.v[i];
		}
		ps->names.n = k;
		int64_t id = loop_timer_add(az->a->l, 0, slice, az);
		ret = id > 0 ? 0 : -ENOMEM;
		ps->timer = id > 0 ? id : 0;
	}
	if (ret < 0) {
		clear(ps);
		free(ps);
		return ret;
	}
	az->presign = ps;
	log_info("%s: an UPDATE of %zu changes waits while its signatures are made ahead, %d names "
	         "per loop round", az->name, cl->n, PRESIGN_SLICE);
	return 0;
}

void presign_cancel(struct acme_zone *az)
{
	struct presign *ps = az->presign;
	if (!ps)
		return;
	if (ps->timer > 0)
		loop_timer_cancel(az->a->l, ps->timer);
	clear(ps);
	free(ps);
	az->presign = NULL;
}
