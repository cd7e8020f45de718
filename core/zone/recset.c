/* SPDX-License-Identifier: MIT */
/*
 * The in-memory mirror of an ACME zone's records (see recset.h): a chained
 * hash table of names, each with its RRsets as small arrays.  Sized for the
 * 100 000-record case: lookups stay O(1), and a change touches only the
 * names it names.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "core/zone/recset.h"
#include "core/zone/zone.h"
#include "core/zone/zone_patch.h"

/*
 * What one step of the last forward recset_apply() did, so that undoing it
 * restores exactly what was there: a delete of a missing record undoes to
 * nothing (not to an add), an add over an existing record undoes to its old
 * TTL and age (not to a delete).
 */
enum undo_kind { UNDO_NOTHING, UNDO_REMOVE, UNDO_RESTORE, UNDO_READD };

struct undo_step {
	uint8_t kind;            /* enum undo_kind */
	uint32_t ttl;            /* UNDO_RESTORE, UNDO_READD: as it was */
	int64_t created_at;
};

struct recset {
	struct recset_name **buckets;
	size_t mask;             /* buckets - 1, a power of two minus one */
	size_t nnames;
	size_t nrecords;
	struct recset_name *dated;   /* names with ndated > 0 (recset.h) */
	struct undo_step *undo;  /* the last forward apply, one step per change */
	size_t undo_n, undo_cap;
	const struct change_list *undo_of;
};

static uint32_t name_hash(const uint8_t *name, size_t len)
{
	/* FNV-1a: names are already lowercase. */
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++) {
		h ^= name[i];
		h *= 16777619u;
	}
	return h;
}

/* Keeps n->ndated and the list of dated names right when one of n's
 * records changes its created_at from `was` to `now` (0: none, a record
 * that is not there counts as 0). */
static void dated(struct recset *rs, struct recset_name *n, int64_t was, int64_t now)
{
	if ((was != 0) == (now != 0))
		return;
	if (now != 0) {
		if (n->ndated++ == 0) {
			n->dated_prev = NULL;
			n->dated_next = rs->dated;
			if (rs->dated)
				rs->dated->dated_prev = n;
			rs->dated = n;
		}
		return;
	}
	if (--n->ndated == 0) {
		if (n->dated_prev)
			n->dated_prev->dated_next = n->dated_next;
		else
			rs->dated = n->dated_next;
		if (n->dated_next)
			n->dated_next->dated_prev = n->dated_prev;
		n->dated_prev = n->dated_next = NULL;
	}
}

struct recset *recset_new(void)
{
	struct recset *rs = calloc(1, sizeof(*rs));
	if (!rs)
		return NULL;
	rs->mask = 255;
	rs->buckets = calloc(rs->mask + 1, sizeof(*rs->buckets));
	if (!rs->buckets) {
		free(rs);
		return NULL;
	}
	return rs;
}

static void name_free(struct recset_name *n)
{
	for (uint16_t i = 0; i < n->nsets; i++) {
		for (uint16_t k = 0; k < n->sets[i].count; k++)
			free(n->sets[i].rr[k].rdata);
		free(n->sets[i].rr);
	}
	free(n->sets);
	free(n->name);
	free(n);
}

void recset_free(struct recset *rs)
{
	if (!rs)
		return;
	for (size_t b = 0; b <= rs->mask; b++) {
		struct recset_name *n = rs->buckets[b], *next;
		for (; n; n = next) {
			next = n->next;
			name_free(n);
		}
	}
	free(rs->buckets);
	free(rs->undo);
	free(rs);
}

static struct recset_name **slot_of(const struct recset *rs, const uint8_t *name, size_t len)
{
	struct recset_name **p = &rs->buckets[name_hash(name, len) & rs->mask];
	while (*p && ((*p)->name_len != len || memcmp((*p)->name, name, len) != 0))
		p = &(*p)->next;
	return p;
}

const struct recset_name *recset_find(const struct recset *rs, const uint8_t *name)
{
	return *slot_of(rs, name, dname_len(name));
}

const struct recset_rrset *recset_name_rrset(const struct recset_name *n, uint16_t type)
{
	if (!n)
		return NULL;
	for (uint16_t i = 0; i < n->nsets; i++)
		if (n->sets[i].type == type)
			return &n->sets[i];
	return NULL;
}

const struct recset_rr *recset_rrset_find(const struct recset_rrset *s, const uint8_t *rdata,
                                          uint16_t rdlen)
{
	if (!s)
		return NULL;
	for (uint16_t i = 0; i < s->count; i++)
		if (s->rr[i].rdlen == rdlen && memcmp(s->rr[i].rdata, rdata, rdlen) == 0)
			return &s->rr[i];
	return NULL;
}

size_t recset_count(const struct recset *rs)
{
	return rs->nrecords;
}

int recset_foreach(const struct recset *rs, recset_fn fn, void *arg)
{
	for (size_t b = 0; b <= rs->mask; b++)
		for (const struct recset_name *n = rs->buckets[b]; n; n = n->next) {
			int ret = fn(arg, n);
			if (ret)
				return ret;
		}
	return 0;
}

int recset_foreach_dated(const struct recset *rs, recset_fn fn, void *arg)
{
	for (const struct recset_name *n = rs->dated, *next; n; n = next) {
		next = n->dated_next;
		int ret = fn(arg, n);
		if (ret)
			return ret;
	}
	return 0;
}

static void grow(struct recset *rs)
{
	size_t nmask = rs->mask * 2 + 1;
	struct recset_name **nb = calloc(nmask + 1, sizeof(*nb));
	if (!nb)
		return;   /* longer chains, still correct */
	for (size_t b = 0; b <= rs->mask; b++) {
		struct recset_name *n = rs->buckets[b], *next;
		for (; n; n = next) {
			next = n->next;
			struct recset_name **s = &nb[name_hash(n->name, n->name_len) & nmask];
			n->next = *s;
			*s = n;
		}
	}
	free(rs->buckets);
	rs->buckets = nb;
	rs->mask = nmask;
}

static int add_rr(struct recset *rs, const struct change *c)
{
	struct recset_name **slot = slot_of(rs, c->name, c->name_len);
	struct recset_name *n = *slot;
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (!n || !(n->name = malloc(c->name_len))) {
			free(n);
			return -ENOMEM;
		}
		memcpy(n->name, c->name, c->name_len);
		n->name_len = c->name_len;
		*slot = n;
		rs->nnames++;
	}
	struct recset_rrset *s = (struct recset_rrset *)recset_name_rrset(n, c->type);
	if (!s) {
		if (n->nsets == n->capsets) {
			uint16_t cap = n->capsets ? (uint16_t)(n->capsets * 2) : 2;
			struct recset_rrset *v = realloc(n->sets, cap * sizeof(*v));
			if (!v)
				goto fail_name;
			n->sets = v;
			n->capsets = cap;
		}
		s = &n->sets[n->nsets++];
		memset(s, 0, sizeof(*s));
		s->type = c->type;
	}
	struct recset_rr *r = (struct recset_rr *)recset_rrset_find(s, c->rdata, c->rdlen);
	if (r) {
		dated(rs, n, r->created_at, c->created_at);
		r->ttl = c->ttl;
		r->created_at = c->created_at;
		return 0;
	}
	if (s->count == UINT16_MAX)
		goto fail_set;
	if (s->count == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2u : 2u;
		if (cap > UINT16_MAX)
			cap = UINT16_MAX;
		struct recset_rr *v = realloc(s->rr, cap * sizeof(*v));
		if (!v)
			goto fail_set;
		s->rr = v;
		s->cap = (uint16_t)cap;
	}
	r = &s->rr[s->count];
	r->rdata = malloc(c->rdlen ? c->rdlen : 1);
	if (!r->rdata)
		goto fail_set;
	memcpy(r->rdata, c->rdata, c->rdlen);
	r->rdlen = c->rdlen;
	r->ttl = c->ttl;
	r->created_at = c->created_at;
	dated(rs, n, 0, c->created_at);
	s->count++;
	n->nrecords++;
	rs->nrecords++;
	if (rs->nnames > rs->mask + 1)
		grow(rs);
	return 0;

fail_set:
	if (s->count == 0) {
		free(s->rr);
		*s = n->sets[--n->nsets];
	}
fail_name:
	if (n->nsets == 0) {
		*slot_of(rs, n->name, n->name_len) = n->next;
		rs->nnames--;
		name_free(n);
	}
	return -ENOMEM;
}

static void del_rr(struct recset *rs, const struct change *c)
{
	struct recset_name **slot = slot_of(rs, c->name, c->name_len);
	struct recset_name *n = *slot;
	if (!n)
		return;
	struct recset_rrset *s = (struct recset_rrset *)recset_name_rrset(n, c->type);
	struct recset_rr *r = (struct recset_rr *)recset_rrset_find(s, c->rdata, c->rdlen);
	if (!r)
		return;
	dated(rs, n, r->created_at, 0);
	free(r->rdata);
	*r = s->rr[--s->count];
	n->nrecords--;
	rs->nrecords--;
	if (s->count == 0) {
		free(s->rr);
		*s = n->sets[--n->nsets];
	}
	if (n->nsets == 0) {
		*slot = n->next;
		rs->nnames--;
		name_free(n);
	}
}

int recset_add(struct recset *rs, const uint8_t *name, uint16_t type, uint32_t ttl,
               const uint8_t *rdata, uint16_t rdlen, int64_t created_at)
{
	struct change c = {
		.op = CHANGE_ADD, .name_len = (uint8_t)dname_len(name), .type = type,
		.rdlen = rdlen, .ttl = ttl, .created_at = created_at,
		.name = (uint8_t *)name, .rdata = (uint8_t *)rdata,
	};
	return add_rr(rs, &c);
}

static struct recset_rr *find_rr(const struct recset *rs, const struct change *c)
{
	const struct recset_name *n = *slot_of(rs, c->name, c->name_len);
	return (struct recset_rr *)recset_rrset_find(recset_name_rrset(n, c->type), c->rdata,
	                                             c->rdlen);
}

/* Applies one change and notes how to undo it.  Fails only to add. */
static int forward_one(struct recset *rs, const struct change *c, struct undo_step *u)
{
	struct recset_rr *r = find_rr(rs, c);
	*u = (struct undo_step){ UNDO_NOTHING, 0, 0 };
	if (c->op == CHANGE_DEL) {
		if (r) {
			*u = (struct undo_step){ UNDO_READD, r->ttl, r->created_at };
			del_rr(rs, c);
		}
		return 0;
	}
	if (r) {
		*u = (struct undo_step){ UNDO_RESTORE, r->ttl, r->created_at };
		dated(rs, *slot_of(rs, c->name, c->name_len), r->created_at, c->created_at);
		r->ttl = c->ttl;
		r->created_at = c->created_at;
		return 0;
	}
	int ret = add_rr(rs, c);
	if (ret == 0)
		u->kind = UNDO_REMOVE;
	return ret;
}

/* Undoes one step; only re-adding a deleted record can fail (-ENOMEM). */
static int undo_one(struct recset *rs, const struct change *c, const struct undo_step *u)
{
	struct change back = *c;
	switch (u->kind) {
	case UNDO_REMOVE:
		del_rr(rs, c);
		return 0;
	case UNDO_RESTORE: {
		struct recset_rr *r = find_rr(rs, c);
		if (r) {
			dated(rs, *slot_of(rs, c->name, c->name_len), r->created_at, u->created_at);
			r->ttl = u->ttl;
			r->created_at = u->created_at;
		}
		return 0;
	}
	case UNDO_READD:
		back.op = CHANGE_ADD;
		back.ttl = u->ttl;
		back.created_at = u->created_at;
		return add_rr(rs, &back);
	default:
		return 0;
	}
}

/* Undoes steps [0, n) of the last forward apply, newest first.  Goes on past
 * a failure (each step is independent); -EIO if any could not be undone. */
static int undo_steps(struct recset *rs, const struct change_list *cl, size_t n)
{
	int ret = 0;
	while (n-- > 0)
		if (undo_one(rs, &cl->v[n], &rs->undo[n]) < 0)
			ret = -EIO;
	return ret;
}

int recset_apply(struct recset *rs, const struct change_list *cl, bool reverse)
{
	if (reverse) {
		if (rs->undo_of != cl || rs->undo_n != cl->n)
			return -EINVAL;   /* not the list last applied */
		rs->undo_of = NULL;
		return undo_steps(rs, cl, cl->n);
	}
	rs->undo_of = NULL;
	if (cl->n > rs->undo_cap) {
		struct undo_step *v = realloc(rs->undo, cl->n * sizeof(*v));
		if (!v)
			return -ENOMEM;   /* nothing changed */
		rs->undo = v;
		rs->undo_cap = cl->n;
	}
	for (size_t i = 0; i < cl->n; i++) {
		if (forward_one(rs, &cl->v[i], &rs->undo[i]) == 0)
			continue;
		/* Out of memory: undo the steps made, newest first. */
		return undo_steps(rs, cl, i) < 0 ? -EIO : -ENOMEM;
	}
	rs->undo_n = cl->n;
	rs->undo_of = cl;
	return 0;
}

long recset_first_missed_delete(const struct recset *rs, const struct change_list *cl)
{
	if (rs->undo_of != cl || rs->undo_n != cl->n)
		return -1;
	for (size_t i = 0; i < cl->n; i++)
		if (cl->v[i].op == CHANGE_DEL && rs->undo[i].kind == UNDO_NOTHING)
			return (long)i;
	return -1;
}

int recset_change_effect(const struct recset *rs, const struct change_list *cl, size_t i)
{
	if (rs->undo_of != cl || rs->undo_n != cl->n || i >= cl->n)
		return -EINVAL;
	switch (rs->undo[i].kind) {
	case UNDO_REMOVE: return 1;    /* undone by removing what it added */
	case UNDO_READD: return -1;    /* undone by adding back what it removed */
	default: return 0;
	}
}

int recset_add_to_builder(void *builder, const struct recset_name *n)
{
	struct zone_builder *b = builder;
	for (uint16_t k = 0; k < n->nsets; k++) {
		const struct recset_rrset *s = &n->sets[k];
		for (uint16_t j = 0; j < s->count; j++) {
			int ret = zone_builder_add(b, n->name, s->type, s->rr[j].ttl, s->rr[j].rdata,
			                           s->rr[j].rdlen);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

int recset_patch_name(struct zone_patch *p, const struct recset *rs, const uint8_t *name)
{
	int ret = zone_patch_name(p, name);
	if (ret <= 0)
		return ret;
	const struct recset_name *n = recset_find(rs, name);
	for (uint16_t k = 0; n && k < n->nsets; k++) {
		const struct recset_rrset *s = &n->sets[k];
		for (uint16_t j = 0; j < s->count; j++) {
			ret = zone_patch_add(p, n->name, s->type, s->rr[j].ttl, s->rr[j].rdata,
			                     s->rr[j].rdlen);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

int recset_prepare_patch(struct zone *z, const struct recset *rs, const struct change_list *cl,
                         const struct zone_signer *signer, struct zone_patch **out,
                         char err[256])
{
	*out = NULL;
	if (recset_compaction_due(z))
		return -E2BIG;
	return recset_prepare_patch_any(z, rs, cl, signer, out, err);
}

bool recset_compaction_due(const struct zone *z)
{
	size_t growth = zone_patch_growth(z);
	return growth > zone_built_bytes(z) && growth > RECSET_COMPACT_MIN;
}

int recset_patch_names(struct zone *z, const struct recset *rs, const struct change_list *cl,
                       struct zone_patch **out)
{
	*out = NULL;
	struct zone_patch *p = zone_patch_new(z);
	int ret = p ? 0 : -ENOMEM;
	for (size_t i = 0; i < cl->n && ret == 0; i++)
		ret = recset_patch_name(p, rs, cl->v[i].name);
	if (ret < 0) {
		zone_patch_free(p);
		return ret;
	}
	*out = p;
	return 0;
}

int recset_prepare_patch_any(struct zone *z, const struct recset *rs,
                             const struct change_list *cl, const struct zone_signer *signer,
                             struct zone_patch **out, char err[256])
{
	int ret = recset_patch_names(z, rs, cl, out);
	if (ret < 0)
		return ret;
	struct zone_patch *p = *out;
	*out = NULL;
	ret = zone_patch_prepare(p, signer, err);
	if (ret < 0) {
		zone_patch_free(p);
		return ret;
	}
	*out = p;
	return 0;
}
