/* SPDX-License-Identifier: MIT */
/*
 * Patching a served snapshot in place (see zone_patch.h).
 *
 * A patch keeps one entry (struct pnode) per name it touches: the names
 * given by the caller, the empty non-terminals that appear or go with
 * them, and the neighbours whose NSEC changes.  prepare() works out each
 * entry's new RRsets, flags and hash-table move, and the new NSEC order,
 * all in fresh memory; apply() then only swaps pointers and relinks.
 *
 * Three kinds of snapshot: ours signed (a signer rewrites NSEC records
 * and signs what changed; its DNSKEY/CDS/CDNSKEY are carried over), ours
 * unsigned (built with zone_builder_keep_order: its name order is kept as
 * the NSEC order is, and nothing is signed) and a presigned copy (nothing
 * is made here: the given NSEC records and RRSIGs are the new state, the
 * RRSIGs attached as zone_builder_finish attaches them).
 */
#include "core/zone/zone_patch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hooks.h"
#include "core/wire/arena.h"
#include "core/wire/dname.h"
#include "core/wire/rdata_check.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/zone.h"
#include "core/zone/zone_internal.h"

struct precord {
	size_t owner;            /* index of its pnode */
	size_t seq;              /* order given (an RRSIG: the last one of an RRset wins) */
	uint16_t type;
	uint32_t ttl;
	struct rdata rd;         /* rdata in the snapshot's arena */
};

struct pnode {
	const uint8_t *name;     /* lowercase, in the snapshot's arena */
	uint8_t name_len;
	bool given;              /* the caller replaced its records */
	struct zone_node *old;   /* the served node, or NULL */
	struct zone_node *node;  /* the node after apply: old, or a new one */
	struct rrset *sets;      /* new contents (room for one more: the NSEC) */
	uint16_t nsets;
	bool contents;           /* sets/flags are to replace old's */
	uint8_t flags;
	bool in_old, in_new;     /* carries an NSEC before / after */
	bool link, unlink;       /* enters / leaves the hash table */
	bool want_nsec;          /* its NSEC is (re)written */
	const uint8_t *next;     /* ... pointing here */
	const uint8_t *key;      /* canonical key, for names entering the chain */
	uint16_t key_len;
};

struct zone_patch {
	struct zone *z;
	const struct zone_signer *signer;   /* the one prepare signed with (NULL: presigned) */
	struct pnode *v;
	size_t n, cap;
	size_t *tab;             /* open addressing over v: index + 1, 0 = empty */
	size_t tab_cap;
	struct precord *r;
	size_t nr, rcap;
	struct precord *sigs;    /* RRSIGs given (a presigned copy) */
	size_t nsig, sigcap;
	/* The new NSEC order (one malloc block), when names join or leave it. */
	void *heap;
	const struct zone_node **order;
	const uint8_t **keys;
	uint16_t *key_len;
	uint32_t count;
	bool chain_changed;
	/* NSEC records to write: owner and next name. */
	const uint8_t **nsec_owner, **nsec_next;
	size_t n_nsec;
	/* A bigger hash table, when the patch adds enough nodes. */
	struct zone_node **buckets;
	uint32_t bucket_mask;
	uint32_t links, unlinks;
	const struct rrset *soa;
	uint64_t expiry;
	uint64_t made;               /* signatures the signer made anew (not cached) */
	int64_t now;             /* the signer's clock at prepare (zone->sigs); 0: a copy */
	bool prepared;
};

static bool sets_have(const struct rrset *sets, uint16_t n, uint16_t type)
{
	for (uint16_t j = 0; j < n; j++)
		if (sets[j].type == type)
			return true;
	return false;
}

static bool is_signer_type(uint16_t t)
{
	return t == RR_DNSKEY || t == RR_CDS || t == RR_CDNSKEY || t == RR_NSEC;
}

struct zone_patch *zone_patch_new(struct zone *z)
{
	struct zone_patch *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->z = z;
	p->expiry = UINT64_MAX;
	return p;
}

void zone_patch_free(struct zone_patch *p)
{
	if (!p)
		return;
	free(p->v);
	free(p->tab);
	free(p->r);
	free(p->sigs);
	free(p->heap);
	free(p->nsec_owner);
	free(p->nsec_next);
	free(p);
}

size_t zone_patch_growth(const struct zone *z)
{
	size_t used = arena_used(z->arena);
	return used > z->built_bytes ? used - z->built_bytes : 0;
}

struct arena *zone_patch_arena(struct zone_patch *p) { return p->z->arena; }
const struct rrset *zone_patch_soa(const struct zone_patch *p) { return p->soa; }
uint32_t zone_patch_serial(const struct zone_patch *p) { return zone_soa_serial(p->soa); }

void zone_patch_count_made(struct zone_patch *p, uint64_t made) { p->made += made; }
uint64_t zone_patch_signatures_made(const struct zone_patch *p) { return p->made; }

void zone_patch_set_expiry(struct zone_patch *p, uint64_t refresh_at)
{
	if (refresh_at < p->expiry)
		p->expiry = refresh_at;
}

/* --- the entries, found by name --- */

static struct pnode *pfind(struct zone_patch *p, const uint8_t *name, size_t len)
{
	if (!p->tab_cap)
		return NULL;
	size_t mask = p->tab_cap - 1;
	for (size_t i = dname_hash(name, len) & mask; p->tab[i]; i = (i + 1) & mask) {
		struct pnode *e = &p->v[p->tab[i] - 1];
		if (e->name_len == len && memcmp(e->name, name, len) == 0)
			return e;
	}
	return NULL;
}

static int tab_grow(struct zone_patch *p)
{
	size_t cap = p->tab_cap ? p->tab_cap * 2 : 64;
	size_t *tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (size_t k = 0; k < p->n; k++) {
		size_t i = dname_hash(p->v[k].name, p->v[k].name_len) & (cap - 1);
		while (tab[i])
			i = (i + 1) & (cap - 1);
		tab[i] = k + 1;
	}
	free(p->tab);
	p->tab = tab;
	p->tab_cap = cap;
	return 0;
}

/* Finds or adds the entry of a lowercase name inside the zone. */
static struct pnode *pget(struct zone_patch *p, const uint8_t *name, size_t len)
{
	struct pnode *e = pfind(p, name, len);
	if (e)
		return e;
	if ((p->n + 1) * 2 > p->tab_cap && tab_grow(p) < 0)
		return NULL;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct pnode *v = realloc(p->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		p->v = v;
		p->cap = cap;
	}
	struct zone_node *old = (struct zone_node *)zone_find(p->z, name, len);
	const uint8_t *copy = old ? old->name : arena_memdup(p->z->arena, name, len);
	if (!copy)
		return NULL;
	e = &p->v[p->n];
	memset(e, 0, sizeof(*e));
	e->name = copy;
	e->name_len = (uint8_t)len;
	e->old = old;
	e->node = old;
	e->flags = old ? old->flags : 0;
	e->in_old = old && (old->flags & ZONE_NODE_NSEC);
	e->in_new = e->in_old;   /* until the given records say otherwise */
	size_t i = dname_hash(name, len) & (p->tab_cap - 1);
	while (p->tab[i])
		i = (i + 1) & (p->tab_cap - 1);
	p->tab[i] = ++p->n;
	return e;
}

static int lower_inside(const struct zone_patch *p, const uint8_t *owner, uint8_t *out,
                        size_t *len)
{
	*len = dname_len(owner);
	if (*len > DNAME_MAX)
		return -EINVAL;
	memcpy(out, owner, *len);
	dname_lower(out);
	return dname_is_subdomain(out, p->z->apex) ? 0 : -EINVAL;
}

int zone_patch_name(struct zone_patch *p, const uint8_t *owner)
{
	uint8_t name[DNAME_MAX];
	size_t len;
	if (p->prepared || lower_inside(p, owner, name, &len) < 0)
		return -EINVAL;
	struct pnode *e = pget(p, name, len);
	if (!e)
		return -ENOMEM;
	if (e->given)
		return 0;
	e->given = true;
	return 1;
}

int zone_patch_add(struct zone_patch *p, const uint8_t *owner, uint16_t type, uint32_t ttl,
                   const uint8_t *rdata, uint16_t rdlen)
{
	uint8_t name[DNAME_MAX];
	size_t len;
	if (p->prepared || lower_inside(p, owner, name, &len) < 0)
		return -EINVAL;
	struct pnode *e = pfind(p, name, len);
	bool sig = type == RR_RRSIG;
	/* RRSIGs are data only in a presigned copy (as zone_builder_add). */
	if (!e || !e->given || rrset_type_is_meta(type) || (sig && (!p->z->presigned || rdlen < 18)))
		return -EINVAL;
	if (rdata_check(type, rdata, rdlen, NULL) < 0)
		return -EBADMSG;   /* nothing malformed enters a snapshot (zone.c says why) */
	struct precord **v = sig ? &p->sigs : &p->r;
	size_t *n = sig ? &p->nsig : &p->nr, *cap = sig ? &p->sigcap : &p->rcap;
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		struct precord *r = realloc(*v, c * sizeof(*r));
		if (!r)
			return -ENOMEM;
		*v = r;
		*cap = c;
	}
	uint8_t *copy = arena_memdup(p->z->arena, rdata, rdlen);
	if (!copy && rdlen)
		return -ENOMEM;
	size_t seq = p->nr + p->nsig;
	(*v)[*n] = (struct precord){ (size_t)(e - p->v), seq, type, ttl, { rdlen, copy } };
	(*n)++;
	return 0;
}

/* --- prepare: new contents --- */

static int precord_cmp(const void *a, const void *b)
{
	const struct precord *x = a, *y = b;
	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	if (x->type != y->type)
		return (int)x->type - (int)y->type;
	return rdata_canonical_cmp(&x->rd, &y->rd);
}

/* RRSIGs by name, then in the order given. */
static int psig_cmp(const void *a, const void *b)
{
	const struct precord *x = a, *y = b;
	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int rrset_type_cmp(const void *a, const void *b)
{
	return (int)((const struct rrset *)a)->type - (int)((const struct rrset *)b)->type;
}

static bool same_rrset(const struct rrset *a, const struct rrset *b)
{
	if (a->type != b->type || a->ttl != b->ttl || a->count != b->count)
		return false;
	for (uint16_t i = 0; i < a->count; i++)
		if (rdata_canonical_cmp(&a->rr[i], &b->rr[i]) != 0)
			return false;
	return true;
}

/* The sorted records [from, to) of one name become its new RRsets. */
static int make_sets(struct zone_patch *p, struct pnode *e, size_t from, size_t to)
{
	size_t types = 0;
	for (size_t i = from; i < to; i++)
		if (i == from || p->r[i].type != p->r[i - 1].type)
			types++;
	/* A presigned copy's records are all given; ours keep the signer's
	 * (an unsigned zone has none: its DNSKEY, if any, would be data). */
	bool carry = !p->z->presigned && p->z->signed_zone;
	size_t carried = 0;
	for (uint16_t j = 0; carry && e->old && j < e->old->rrset_count; j++)
		if (is_signer_type(e->old->rrsets[j].type) && e->old->rrsets[j].type != RR_NSEC)
			carried++;
	struct rrset *sets = arena_zalloc(p->z->arena, (types + carried + 1) * sizeof(*sets));
	if (!sets)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = from; i < to;) {
		size_t j = i;
		uint32_t ttl = p->r[i].ttl;
		while (j < to && p->r[j].type == p->r[i].type) {
			/* RFC 2181 5.2: TTLs of an RRset must agree; take the lowest. */
			if (p->r[j].ttl < ttl)
				ttl = p->r[j].ttl;
			j++;
		}
		struct rdata *rr = arena_alloc(p->z->arena, (j - i) * sizeof(*rr));
		if (!rr)
			return -ENOMEM;
		size_t k = 0;
		for (size_t m = i; m < j; m++)
			if (k == 0 || rdata_canonical_cmp(&rr[k - 1], &p->r[m].rd) != 0)
				rr[k++] = p->r[m].rd;
		struct rrset *s = &sets[n++];
		s->type = p->r[i].type;
		s->ttl = ttl;
		s->rr = rr;
		s->count = (uint16_t)(k > UINT16_MAX ? UINT16_MAX : k);
		/* Unchanged content keeps its signature (ours; a copy's come given). */
		const struct rrset *was = carry && e->old ? zone_node_rrset(e->old, s->type) : NULL;
		if (was && same_rrset(was, s))
			memcpy(s->sig, was->sig, sizeof(s->sig));
		i = j;
	}
	for (uint16_t j = 0; carry && e->old && j < e->old->rrset_count; j++)
		if (is_signer_type(e->old->rrsets[j].type) && e->old->rrsets[j].type != RR_NSEC)
			sets[n++] = e->old->rrsets[j];
	qsort(sets, n, sizeof(*sets), rrset_type_cmp);
	e->sets = sets;
	e->nsets = (uint16_t)n;
	e->contents = true;
	return 0;
}

/*
 * A presigned copy: the given RRSIGs [from, to) of a name onto the RRsets
 * they cover, as zone_builder_finish does: up to RRSET_SIGS per RRset, the
 * last given first.  One that covers nothing, or one too many, is -EAGAIN:
 * the whole build drops it and says so.
 */
static int attach_given_sigs(struct zone_patch *p, struct pnode *e, size_t from, size_t to)
{
	for (size_t i = to; i-- > from;) {
		uint16_t covered = wire_get_u16(p->sigs[i].rd.data);
		struct rrset *s = NULL;
		for (uint16_t j = 0; j < e->nsets && !s; j++)
			if (e->sets[j].type == covered)
				s = &e->sets[j];
		if (!s)
			return -EAGAIN;
		unsigned have = rrset_sig_count(s);
		if (have == RRSET_SIGS)
			return -EAGAIN;
		s->sig[have] = p->sigs[i].rd;
	}
	return 0;
}

/* The contents of a name the caller did not give, minus its NSEC. */
static int copy_sets(struct zone_patch *p, struct pnode *e)
{
	if (e->contents)
		return 0;
	const struct zone_node *o = e->old;
	struct rrset *sets = arena_zalloc(p->z->arena, ((o ? o->rrset_count : 0) + 1u) * sizeof(*sets));
	if (!sets)
		return -ENOMEM;
	size_t n = 0;
	for (uint16_t j = 0; o && j < o->rrset_count; j++)
		if (o->rrsets[j].type != RR_NSEC)
			sets[n++] = o->rrsets[j];
	e->sets = sets;
	e->nsets = (uint16_t)n;
	e->contents = true;
	return 0;
}

/*
 * -EAGAIN for what a patch does not do (see the header): the caller builds
 * the zone whole, which also says what is wrong with it, if anything.
 */
static int check_plain(const struct zone_patch *p, const struct pnode *e)
{
	bool apex = e->name_len == p->z->apex_len;
	if (e->name[0] == 1 && e->name[1] == '*')
		return -EAGAIN;
	if (e->old && (e->old->flags & (ZONE_NODE_GLUE | ZONE_NODE_GEO)))
		return -EAGAIN;
	/*
	 * A zone cut may change its records as long as it stays a cut (its
	 * NS, DS, and the NSEC that changes whenever the name after it does):
	 * the names below stay glue, nothing else moves.  A name becomes a cut
	 * when it gains NS (not_below_cuts() then checks that no name lies
	 * below it); a cut that loses its NS would turn its glue into data:
	 * built whole.  At a cut of ours only NS and DS may be (RFC 4035 2.2:
	 * nothing else there is authoritative, and the whole build leaves it
	 * unsigned); a DS anywhere else is not (RFC 4035 2.4).
	 */
	bool was_cut = e->old && (e->old->flags & ZONE_NODE_DELEGATION);
	bool cut = !apex && sets_have(e->sets, e->nsets, RR_NS);
	if (was_cut && !cut)
		return -EAGAIN;
	/* The NSEC is data in a presigned copy; ours is not given. */
	uint16_t data = (uint16_t)(e->nsets - sets_have(e->sets, e->nsets, RR_NSEC));
	for (uint16_t j = 0; j < e->nsets; j++) {
		const struct rrset *s = &e->sets[j];
		if (s->type == RR_DNAME || (s->type == RR_DS && !cut))
			return -EAGAIN;
		if (cut && (!p->z->presigned || !was_cut) && s->type != RR_NS && s->type != RR_DS &&
		    !(p->z->presigned && s->type == RR_NSEC))
			return -EAGAIN;
		if (s->type == RR_CNAME && (data > 1 || s->count > 1 || apex))
			return -EAGAIN;
	}
	if (p->z->presigned || !p->z->signed_zone) {
		/*
		 * A copy: every name with records keeps an NSEC (the order must
		 * hold them all: has_descendants), and the apex its frame: one
		 * SOA, signed (so the copy stays a signed zone), NS and the NSEC.
		 * An unsigned zone of ours: one SOA and NS at the apex.  What else
		 * changes at the apex (keys, TTLs, NS) is data like any other
		 * here: no NSEC or signature derives from it.
		 */
		bool pre = p->z->presigned;
		if (pre && e->nsets && !sets_have(e->sets, e->nsets, RR_NSEC))
			return -EAGAIN;
		if (apex) {
			const struct rrset *soa = NULL;
			for (uint16_t j = 0; j < e->nsets; j++)
				if (e->sets[j].type == RR_SOA)
					soa = &e->sets[j];
			if (!soa || soa->count != 1 || soa->rr[0].len < 22 || (pre && !soa->sig[0].len) ||
			    !sets_have(e->sets, e->nsets, RR_NS))
				return -EAGAIN;
		}
		return 0;
	}
	if (apex) {
		/* Only the SOA may change here: the rest is the zone's frame. */
		const struct zone_node *o = e->old;
		const struct rrset *soa = zone_node_rrset(o, RR_SOA);
		const struct rrset *nsoa = NULL;
		size_t kept = 0, had = 0;
		for (uint16_t j = 0; j < e->nsets; j++) {
			const struct rrset *s = &e->sets[j];
			if (s->type == RR_SOA) {
				nsoa = s;
				continue;
			}
			const struct rrset *was = zone_node_rrset(o, s->type);
			if (!was || !same_rrset(was, s))
				return -EAGAIN;
			kept++;
		}
		for (uint16_t j = 0; j < o->rrset_count; j++)
			if (o->rrsets[j].type != RR_SOA && o->rrsets[j].type != RR_NSEC)
				had++;
		if (!nsoa || nsoa->count != 1 || nsoa->rr[0].len < 22 || kept != had || !soa)
			return -EAGAIN;
		/* The SOA's TTL and minimum set every NSEC's TTL (RFC 9077) and
		 * the DNSKEY's: a change there is a change everywhere. */
		const struct rdata *a = &soa->rr[0], *b = &nsoa->rr[0];
		if (nsoa->ttl != soa->ttl || memcmp(a->data + a->len - 4, b->data + b->len - 4, 4) != 0)
			return -EAGAIN;
	}
	return 0;
}

/* The first position in keys[0, count) sorting after (upper) or at or
 * after (!upper) `key`. */
static uint32_t bound(const uint8_t *const *keys, const uint16_t *lens, uint32_t count,
                      const uint8_t *key, size_t len, bool upper)
{
	uint32_t lo = 0, hi = count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = zone_key_cmp(keys[mid], lens[mid], key, len);
		if (c < 0 || (upper && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether any name of the new chain lies strictly below `name`: they sort
 * right after it, so looking at the one that follows suffices. */
static bool has_descendants(const struct zone_patch *p, const uint8_t *name)
{
	uint8_t key[ZONE_CANON_KEY_MAX];
	size_t len = zone_canonical_key(name, key);
	uint32_t i = bound(p->keys, p->key_len, p->count, key, len, true);
	if (i >= p->count)
		return false;
	const uint8_t *next = p->order[i]->name;
	return !dname_equal(next, name) && dname_is_subdomain(next, name);
}

static int pnode_key_cmp(const void *a, const void *b)
{
	const struct pnode *x = *(struct pnode *const *)a, *y = *(struct pnode *const *)b;
	return zone_key_cmp(x->key, x->key_len, y->key, y->key_len);
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* New nodes for the names that appear, with their missing ancestors as
 * empty non-terminals. */
static int add_nodes(struct zone_patch *p)
{
	size_t given = p->n;
	for (size_t k = 0; k < given; k++) {
		struct pnode *e = &p->v[k];
		if (!e->given || e->old || !e->in_new)
			continue;
		int extra = dname_label_count(e->name) - dname_label_count(p->z->apex);
		for (int up = 1; up < extra; up++) {
			const uint8_t *parent = dname_skip_labels(p->v[k].name, up);
			size_t plen = dname_len(parent);
			const struct zone_node *there = zone_find(p->z, parent, plen);
			if (there) {
				if (there->flags & (ZONE_NODE_DELEGATION | ZONE_NODE_GLUE))
					return -EAGAIN;   /* the new name would be glue */
				break;
			}
			struct pnode *a = pget(p, parent, plen);
			if (!a)
				return -ENOMEM;
			if (!a->in_new && !a->link) {
				a->link = true;
				a->flags = ZONE_NODE_ENT;
				a->contents = true;
				a->nsets = 0;
				a->sets = NULL;
			}
		}
	}
	for (size_t k = 0; k < p->n; k++) {
		struct pnode *e = &p->v[k];
		if (e->old || !(e->in_new || e->link))
			continue;
		e->link = true;
		if (e->in_new)
			e->flags = (uint8_t)(e->flags & ZONE_NODE_DELEGATION);
		struct zone_node *n = arena_zalloc(p->z->arena, sizeof(*n));
		if (!n)
			return -ENOMEM;
		n->name = e->name;
		n->name_len = e->name_len;
		e->node = n;
		p->links++;
	}
	return 0;
}

static int set_key(struct zone_patch *p, struct pnode *e)
{
	uint8_t key[ZONE_CANON_KEY_MAX];
	size_t len = zone_canonical_key(e->name, key);
	e->key = arena_memdup(p->z->arena, key, len);
	e->key_len = (uint16_t)len;
	return e->key ? 0 : -ENOMEM;
}

/*
 * The new NSEC order: the old one without the names that leave it, with
 * those that join, copied block by block between the places found by
 * binary search (no per-node work: a few memcpy of the arrays).  Marks the
 * positions whose NSEC must be written: names that joined or were given,
 * and the predecessor of every name that joined or left.
 */
static int new_chain(struct zone_patch *p, uint32_t **marks, size_t *n_marks)
{
	const struct zone *z = p->z;
	const uint8_t *const *okeys = (const uint8_t *const *)z->nsec_keys;
	size_t n_in = 0, n_out = 0, n_given = 0;
	for (size_t k = 0; k < p->n; k++) {
		n_in += p->v[k].in_new && !p->v[k].in_old;
		n_out += p->v[k].in_old && !p->v[k].in_new;
		n_given += p->v[k].given;
	}
	struct pnode **in = malloc((n_in + 1) * sizeof(*in));
	struct pnode **out = malloc((n_out + 1) * sizeof(*out));
	uint32_t *in_pos = malloc((n_in + 1) * sizeof(*in_pos));
	uint32_t *out_pos = malloc((n_out + 1) * sizeof(*out_pos));
	*marks = malloc((2 * n_in + n_out + n_given + 1) * sizeof(**marks));
	int rc = -ENOMEM;
	if (!in || !out || !in_pos || !out_pos || !*marks)
		goto done;
	size_t a = 0, b = 0, m = 0;
	for (size_t k = 0; k < p->n; k++) {
		struct pnode *e = &p->v[k];
		bool joins = e->in_new && !e->in_old, leaves = e->in_old && !e->in_new;
		if ((joins || leaves || (e->given && e->in_new)) && set_key(p, e) < 0)
			goto done;
		if (joins)
			in[a++] = e;
		else if (leaves)
			out[b++] = e;
	}
	qsort(in, n_in, sizeof(*in), pnode_key_cmp);
	qsort(out, n_out, sizeof(*out), pnode_key_cmp);
	for (size_t j = 0; j < n_in; j++)
		in_pos[j] = bound(okeys, z->nsec_key_len, z->nsec_count, in[j]->key, in[j]->key_len, true);
	for (size_t j = 0; j < n_out; j++) {
		out_pos[j] = bound(okeys, z->nsec_key_len, z->nsec_count, out[j]->key, out[j]->key_len,
		                   false);
		if (out_pos[j] >= z->nsec_count || z->nsec_order[out_pos[j]] != out[j]->old) {
			rc = -EAGAIN;   /* cannot happen: a name with an NSEC is in the order */
			goto done;
		}
	}
	if (n_in == 0 && n_out == 0) {
		p->order = (const struct zone_node **)z->nsec_order;
		p->keys = (const uint8_t **)z->nsec_keys;
		p->key_len = z->nsec_key_len;
		p->count = z->nsec_count;
	} else {
		size_t count = z->nsec_count + n_in - n_out;
		size_t bytes = count * (sizeof(*p->order) + sizeof(*p->keys) + sizeof(*p->key_len));
		p->heap = malloc(bytes ? bytes : 1);
		if (!p->heap)
			goto done;
		p->order = p->heap;
		p->keys = (const uint8_t **)(p->order + count);
		p->key_len = (uint16_t *)(p->keys + count);
		p->chain_changed = true;
		uint32_t q = 0, i = 0;
		a = b = 0;
		for (;;) {
			uint32_t stop = z->nsec_count;
			if (a < n_in && in_pos[a] < stop)
				stop = in_pos[a];
			if (b < n_out && out_pos[b] < stop)
				stop = out_pos[b];
			size_t run = stop - i;
			memcpy(&p->order[q], &z->nsec_order[i], run * sizeof(*p->order));
			memcpy(&p->keys[q], &z->nsec_keys[i], run * sizeof(*p->keys));
			memcpy(&p->key_len[q], &z->nsec_key_len[i], run * sizeof(*p->key_len));
			q += (uint32_t)run;
			i = stop;
			if (a < n_in && in_pos[a] == i) {
				/* Joins before old[i] (which sorts after it, left or not). */
				p->order[q] = in[a]->node;
				p->keys[q] = in[a]->key;
				p->key_len[q] = in[a]->key_len;
				(*marks)[m++] = q;
				(*marks)[m++] = q ? q - 1 : UINT32_MAX;
				q++;
				a++;
				continue;
			}
			if (b < n_out && out_pos[b] == i) {
				(*marks)[m++] = q ? q - 1 : UINT32_MAX;
				b++;
				i++;
				continue;
			}
			break;
		}
		p->count = q;
	}
	rc = -EAGAIN;
	if (p->count == 0)
		goto done;   /* cannot happen: the apex stays */
	/* Given names in both chains: their own NSEC (the types may change). */
	for (size_t k = 0; k < p->n; k++) {
		struct pnode *e = &p->v[k];
		if (e->given && e->in_old && e->in_new)
			(*marks)[m++] = bound(p->keys, p->key_len, p->count, e->key, e->key_len, true) - 1;
	}
	for (size_t k = 0; k < m; k++)
		if ((*marks)[k] == UINT32_MAX)
			(*marks)[k] = p->count - 1;   /* the last name points back at the apex */
	qsort(*marks, m, sizeof(**marks), u32_cmp);
	size_t u = 0;
	for (size_t k = 0; k < m; k++)
		if (u == 0 || (*marks)[u - 1] != (*marks)[k])
			(*marks)[u++] = (*marks)[k];
	*n_marks = u;
	rc = 0;
done:
	free(in);
	free(out);
	free(in_pos);
	free(out_pos);
	return rc;
}

/* Names emptied by the patch: gone, or an empty non-terminal when names
 * stay below; ancestors that were there only for them go too. */
static int remove_nodes(struct zone_patch *p)
{
	size_t given = p->n;
	for (size_t k = 0; k < given; k++) {
		struct pnode *e = &p->v[k];
		if (!e->given || e->in_new || !e->old)
			continue;
		if (has_descendants(p, e->name)) {
			e->flags = (uint8_t)(e->old->flags | ZONE_NODE_ENT);
			continue;
		}
		e->unlink = true;
		p->unlinks++;
		int extra = dname_label_count(e->name) - dname_label_count(p->z->apex);
		for (int up = 1; up < extra; up++) {
			const uint8_t *parent = dname_skip_labels(p->v[k].name, up);
			size_t plen = dname_len(parent);
			const struct zone_node *there = zone_find(p->z, parent, plen);
			if (!there || !(there->flags & ZONE_NODE_ENT) || has_descendants(p, parent))
				break;
			struct pnode *a = pget(p, parent, plen);
			if (!a)
				return -ENOMEM;
			if (a->given || a->unlink)
				break;
			a->unlink = true;
			p->unlinks++;
		}
	}
	return 0;
}

/*
 * A name that becomes a zone cut must have nothing below it: those names
 * would become glue (unsigned, out of the NSEC order), which the whole
 * build does.  Every name of ours with records below it is in the new NSEC
 * order (an empty non-terminal has such a name below it), so looking at
 * the name that follows in that order suffices; a copy's order holds them
 * all too (nsec_complete).
 */
static int not_below_cuts(const struct zone_patch *p)
{
	for (size_t k = 0; k < p->n; k++) {
		const struct pnode *e = &p->v[k];
		bool new_cut = (e->flags & ZONE_NODE_DELEGATION) &&
		               !(e->old && (e->old->flags & ZONE_NODE_DELEGATION));
		if (new_cut && has_descendants(p, e->name))
			return -EAGAIN;
	}
	return 0;
}

/* The names whose NSEC is written, with their next names. */
static int nsec_targets(struct zone_patch *p, const uint32_t *marks, size_t n_marks)
{
	p->nsec_owner = malloc((n_marks + 1) * sizeof(*p->nsec_owner));
	p->nsec_next = malloc((n_marks + 1) * sizeof(*p->nsec_next));
	if (!p->nsec_owner || !p->nsec_next)
		return -ENOMEM;
	for (size_t k = 0; k < n_marks; k++) {
		const struct zone_node *n = p->order[marks[k]];
		struct pnode *e = pget(p, n->name, n->name_len);
		if (!e)
			return -ENOMEM;
		int rc = copy_sets(p, e);
		if (rc < 0)
			return rc;
		e->want_nsec = true;
		e->next = p->order[(marks[k] + 1) % p->count]->name;
		p->nsec_owner[p->n_nsec] = e->name;
		p->nsec_next[p->n_nsec++] = e->next;
	}
	return 0;
}

int zone_patch_prepare(struct zone_patch *p, const struct zone_signer *signer, char err[256])
{
	struct zone *z = p->z;
	err[0] = '\0';
	if (p->prepared)
		return -EINVAL;
	bool pre = z->presigned;
	/* Ours and unsigned: nothing to sign, no NSEC to write; its name order
	 * (zone_builder_keep_order) stands in for the NSEC order. */
	bool plain = !z->signed_zone;
	if (!z->nsec_count)
		return -EAGAIN;   /* no order kept: built whole */
	p->signer = signer;
	if (pre ? !z->nsec_complete : plain ? signer != NULL : (!signer || !signer->patch))
		return -EAGAIN;
	/* A snapshot a transfer still holds is patched too: see zone_patch.h
	 * ("Held snapshots") for why the transfer still sends what it held. */
	/* 1. The given names' new RRsets, and what a patch cannot do. */
	for (size_t i = 0; i < p->nr && !pre; i++)
		if (is_signer_type(p->r[i].type))
			return -EAGAIN;   /* the signer's own types, given as data */
	if (p->nr)
		qsort(p->r, p->nr, sizeof(*p->r), precord_cmp);
	if (p->nsig)   /* none in a zone we sign: no array at all */
		qsort(p->sigs, p->nsig, sizeof(*p->sigs), psig_cmp);
	size_t given = p->n;
	for (size_t k = 0, i = 0, si = 0; k < given; k++) {
		struct pnode *e = &p->v[k];
		if (!e->given)
			continue;
		size_t j = i;
		while (j < p->nr && p->r[j].owner < k)
			j++;
		size_t end = j;
		while (end < p->nr && p->r[end].owner == k)
			end++;
		i = end;
		int rc = make_sets(p, e, j, end);
		if (rc < 0)
			goto nomem;
		size_t sj = si;
		while (sj < p->nsig && p->sigs[sj].owner < k)
			sj++;
		size_t send = sj;
		while (send < p->nsig && p->sigs[send].owner == k)
			send++;
		si = send;
		rc = attach_given_sigs(p, e, sj, send);
		if (rc == 0)
			rc = check_plain(p, e);
		if (rc < 0)
			return rc;
		e->in_new = e->nsets > 0;
		if (e->in_new)
			e->flags = (uint8_t)(e->flags & ~ZONE_NODE_ENT);
		else if (e->name_len == z->apex_len)
			return -EAGAIN;
		if (e->name_len != z->apex_len && sets_have(e->sets, e->nsets, RR_NS))
			e->flags = (uint8_t)(e->flags | ZONE_NODE_DELEGATION);
	}
	/* 2. Names that appear, and the new NSEC order. */
	int rc = add_nodes(p);
	if (rc < 0)
		return rc == -EAGAIN ? rc : -ENOMEM;
	uint32_t *marks = NULL;
	size_t n_marks = 0;
	rc = new_chain(p, &marks, &n_marks);
	if (rc == 0)
		rc = remove_nodes(p);
	if (rc == 0)
		rc = not_below_cuts(p);
	if (rc == 0 && !pre && !plain)
		rc = nsec_targets(p, marks, n_marks);   /* a copy's NSEC records come given */
	free(marks);
	if (rc < 0)
		return rc == -EAGAIN ? rc : -ENOMEM;
	/* 3. A bigger hash table if the nodes outgrow this one. */
	uint32_t nb = z->bucket_mask + 1;
	if ((size_t)z->node_count + p->links > 2u * nb) {
		while ((size_t)z->node_count + p->links > (size_t)nb)
			nb <<= 1;
		nb <<= 1;
		p->buckets = arena_zalloc(z->arena, nb * sizeof(*p->buckets));
		if (!p->buckets)
			goto nomem;
		p->bucket_mask = nb - 1;
	}
	/* 4. NSEC records and signatures, by the signer. */
	struct pnode *apex = pfind(p, z->apex, z->apex_len);
	p->soa = apex && apex->contents ? NULL : z->soa;
	for (uint16_t j = 0; !p->soa && j < apex->nsets; j++)
		if (apex->sets[j].type == RR_SOA)
			p->soa = &apex->sets[j];
	if (!p->soa)
		return -EAGAIN;
	rc = pre || plain ? 0 : signer->patch(signer->ctx, p, err);
	if (!pre && !plain)
		p->now = (int64_t)signer->now(signer->ctx);
	if (rc < 0)
		return rc;
	for (size_t k = 0; k < p->n; k++) {
		if (p->v[k].want_nsec && !sets_have(p->v[k].sets, p->v[k].nsets, RR_NSEC)) {
			snprintf(err, 256, "the signer left an NSEC out");
			return -EINVAL;
		}
	}
	p->prepared = true;
	return 0;
nomem:
	snprintf(err, 256, "out of memory");
	return -ENOMEM;
}

/* --- the signer's side --- */

size_t zone_patch_nsec_names(struct zone_patch *p, const uint8_t *const **owners,
                             const uint8_t *const **nexts)
{
	*owners = p->nsec_owner;
	*nexts = p->nsec_next;
	return p->n_nsec;
}

size_t zone_patch_types(struct zone_patch *p, const uint8_t *owner, uint16_t *types, size_t cap)
{
	struct pnode *e = pfind(p, owner, dname_len(owner));
	if (!e || !e->contents)
		return 0;
	size_t k = 0;
	for (uint16_t j = 0; j < e->nsets && k < cap; j++)
		if (e->sets[j].type != RR_NSEC)
			types[k++] = e->sets[j].type;
	return k;
}

int zone_patch_set_nsec(struct zone_patch *p, const uint8_t *owner, uint32_t ttl,
                        const uint8_t *rdata, uint16_t rdlen)
{
	struct pnode *e = pfind(p, owner, dname_len(owner));
	if (!e || !e->want_nsec)
		return -EINVAL;
	struct rdata *rr = arena_alloc(p->z->arena, sizeof(*rr));
	uint8_t *copy = arena_memdup(p->z->arena, rdata, rdlen);
	if (!rr || !copy)
		return -ENOMEM;
	rr->len = rdlen;
	rr->data = copy;
	struct rrset nsec = { .type = RR_NSEC, .count = 1, .ttl = ttl, .rr = rr };
	/* Unchanged NSEC: keep the signature it had. */
	const struct rrset *was = e->old ? zone_node_rrset(e->old, RR_NSEC) : NULL;
	if (was && same_rrset(was, &nsec))
		memcpy(nsec.sig, was->sig, sizeof(nsec.sig));
	/* There is always room for one more (see make_sets, copy_sets). */
	uint16_t at = 0;
	while (at < e->nsets && e->sets[at].type < RR_NSEC)
		at++;
	if (at < e->nsets && e->sets[at].type == RR_NSEC) {
		e->sets[at] = nsec;
		return 0;
	}
	memmove(&e->sets[at + 1], &e->sets[at], (e->nsets - at) * sizeof(*e->sets));
	e->sets[at] = nsec;
	e->nsets++;
	return 0;
}

int zone_patch_foreach_unsigned(struct zone_patch *p, zone_rrset_fn fn, void *arg)
{
	for (size_t k = 0; k < p->n; k++) {
		struct pnode *e = &p->v[k];
		if (!e->contents || e->unlink)
			continue;
		bool cut = e->flags & ZONE_NODE_DELEGATION;
		for (uint16_t j = 0; j < e->nsets; j++) {
			if (e->sets[j].sig[0].len)
				continue;
			/* At a cut only DS and NSEC are ours to sign (RFC 4035 2.2). */
			if (cut && e->sets[j].type != RR_DS && e->sets[j].type != RR_NSEC)
				continue;
			int rc = fn(arg, e->name, &e->sets[j]);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int zone_patch_foreach_change(const struct zone_patch *p, zone_patch_change_fn fn, void *arg)
{
	for (size_t k = 0; k < p->n; k++) {
		const struct pnode *e = &p->v[k];
		if (!e->unlink && (!e->contents || !e->node))
			continue;   /* untouched, or a name that neither was nor will be */
		struct zone_node after;
		if (!e->unlink) {
			after = e->old ? *e->old : *e->node;
			after.rrsets = e->sets;
			after.rrset_count = e->nsets;
			after.flags = e->flags;
		}
		int rc = fn(arg, e->link ? NULL : e->old, e->unlink ? NULL : &after);
		if (rc)
			return rc;
	}
	return 0;
}

/* --- apply --- */

static void bucket_remove(struct zone *z, struct zone_node *n)
{
	struct zone_node **at = &z->buckets[dname_hash(n->name, n->name_len) & z->bucket_mask];
	while (*at && *at != n)
		at = &(*at)->hash_next;
	if (*at)
		*at = n->hash_next;
}

static void bucket_insert(struct zone *z, struct zone_node *n)
{
	uint32_t h = dname_hash(n->name, n->name_len) & z->bucket_mask;
	n->hash_next = z->buckets[h];
	z->buckets[h] = n;
}

/*
 * The signer hears of each signed RRset of `old` (the node as served) that
 * the new contents [sets, n) no longer hold: its cached signatures would
 * otherwise stay until a whole build (dnssec/sigcache.h).  Proportional to
 * the change: the names a patch touches.
 */
static void forget_replaced(const struct zone_patch *p, const struct zone_node *old,
                            const struct rrset *sets, uint16_t n)
{
	if (!p->signer || !p->signer->forget || !old)
		return;
	for (uint16_t j = 0; j < old->rrset_count; j++) {
		const struct rrset *s = &old->rrsets[j];
		if (!s->sig[0].len)
			continue;   /* not signed here: delegation NS, glue */
		bool kept = false;
		for (uint16_t i = 0; i < n && !kept; i++)
			kept = same_rrset(&sets[i], s);
		if (!kept)
			p->signer->forget(p->signer->ctx, old->name, s);
	}
}

void zone_patch_foreach_node(const struct zone_patch *p,
                             void (*fn)(void *arg, const struct zone_node *n, bool added),
                             void *arg)
{
	for (size_t k = 0; k < p->n; k++) {
		const struct pnode *e = &p->v[k];
		if (e->unlink)
			fn(arg, e->old, false);
		else if (e->contents && e->node)
			fn(arg, e->node, e->link);   /* old unless added (as apply below) */
	}
}

uint32_t zone_patch_new_mask(const struct zone_patch *p)
{
	return p->buckets ? p->bucket_mask : 0;
}

void zone_patch_apply(struct zone_patch *p)
{
	struct zone *z = p->z;
	if (!p->prepared)
		return;
	/* Walks under way see the nodes this changes as they are now. */
	if (z->walks)
		zone_walks_before_patch(z, p);
	if (p->buckets) {
		struct zone_node **old = z->buckets;
		uint32_t old_mask = z->bucket_mask;
		z->buckets = p->buckets;
		z->bucket_mask = p->bucket_mask;
		for (uint32_t h = 0; h <= old_mask; h++) {
			for (struct zone_node *n = old[h], *next; n; n = next) {
				next = n->hash_next;
				bucket_insert(z, n);
			}
		}
	}
	/* The served signatures' earliest expiration follows (a zone signed
	 * here): the new RRsets' RRSIGs in first, then the replaced ones out,
	 * so an RRset the patch keeps never empties the count on its way.
	 * While a re-sign pass left it stale, the pass's end reads it all. */
	bool lost = false, count = p->now && !z->sigs_stale;   /* stale: a pass reads all */
	for (size_t k = 0; count && k < p->n; k++)
		if (p->v[k].contents && p->v[k].node && !p->v[k].unlink)
			zone_sigs_add(&z->sigs, p->v[k].sets, p->v[k].nsets, p->now);
	for (size_t k = 0; count && k < p->n; k++) {
		const struct pnode *e = &p->v[k];
		const struct zone_node *was = e->unlink ? e->old : e->contents ? e->node : NULL;
		if (was && zone_sigs_drop(&z->sigs, was->rrsets, was->rrset_count, p->now))
			lost = true;
	}
	for (size_t k = 0; k < p->n; k++) {
		struct pnode *e = &p->v[k];
		if (e->unlink) {
			forget_replaced(p, e->old, NULL, 0);
			bucket_remove(z, e->old);
			continue;
		}
		if (!e->contents || !e->node)
			continue;   /* untouched, or a name that neither was nor will be */
		forget_replaced(p, e->old, e->sets, e->nsets);
		e->node->rrsets = e->sets;
		e->node->rrset_count = e->nsets;
		e->node->flags = e->in_new ? (uint8_t)(e->flags | ZONE_NODE_NSEC)
		                           : (uint8_t)(e->flags & ~ZONE_NODE_NSEC);
		if (e->link)
			bucket_insert(z, e->node);
	}
	z->node_count = z->node_count + p->links - p->unlinks;
	if (p->chain_changed) {
		free(z->nsec_heap);
		z->nsec_heap = p->heap;
		p->heap = NULL;
		z->nsec_order = p->order;
		z->nsec_keys = p->keys;
		z->nsec_key_len = p->key_len;
		z->nsec_count = p->count;
	}
	z->soa = zone_node_rrset(z->apex_node, RR_SOA);
	z->serial = zone_soa_serial(z->soa);
	/* Which expiration comes next is known only to the whole snapshot. */
	if (lost)
		zone_sigs_scan(z, p->now);
	if (z->expires_at && p->expiry < z->expires_at)
		z->expires_at = p->expiry;
	if (z->resigning && p->expiry < z->resign_floor)
		z->resign_floor = p->expiry;
	p->prepared = false;
}

/* --- renewing signatures in slices --- */

void zone_resign_begin(struct zone *z, struct zone_resign *r)
{
	memset(r, 0, sizeof(*r));
	r->mask = z->bucket_mask;
	r->refresh_at = UINT64_MAX;
	/* The zone keeps its (due) refresh point while the pass runs; what
	 * patches sign meanwhile is remembered and folded in at the end. */
	z->resigning = true;
	z->resign_floor = UINT64_MAX;
}

void zone_resign_abandon(struct zone *z)
{
	z->resigning = false;   /* still due: the next re-sign check starts a pass again */
	if (z->sigs_stale)
		zone_sigs_scan(z, z->sigs_now);
}

int zone_resign_step(struct zone *z, const struct zone_signer *signer, struct zone_resign *r,
                     size_t budget, uint64_t now, char err[256])
{
	err[0] = '\0';
	if (!signer || !signer->renew) {
		snprintf(err, 256, "the signer cannot renew signatures in place");
		z->resigning = false;
		return -EINVAL;
	}
	if (z->refs > 1)
		return ZONE_RESIGN_WAIT;   /* a transfer still sends it as it is */
	if (r->mask != z->bucket_mask) {
		/* The table grew under a patch: buckets moved; walk it again. */
		r->mask = z->bucket_mask;
		r->bucket = 0;
	}
	size_t made = 0, seen = 0;
	/* Whole buckets per step: a patch between steps may unlink nodes, so
	 * the pass never holds a node pointer across steps. */
	while (r->bucket <= r->mask && made < budget && seen < 64 * budget) {
		for (struct zone_node *n = z->buckets[r->bucket]; n; n = n->hash_next) {
			for (uint16_t j = 0; j < n->rrset_count; j++) {
				struct rrset *s = &n->rrsets[j];
				if (!s->sig[0].len)
					continue;   /* not ours to sign: delegation NS, glue */
				uint64_t refresh = UINT64_MAX;
				struct rrset was = *s;   /* its RRSIGs before: replaced, not rewritten */
				int rc = signer->renew(signer->ctx, n->name, s, z->arena, &refresh);
				if (rc < 0) {
					snprintf(err, 256, "cannot renew a signature: %s", strerror(-rc));
					z->resigning = false;   /* still due: the next check tries again */
					if (z->sigs_stale)
						zone_sigs_scan(z, (int64_t)now);
					return rc;
				}
				if (rc > 0) {
					made++, r->renewed++;
					/* Renewing the last RRSIG at the earliest expiration leaves
					 * the next one unknown: read again once, when the pass
					 * ends, not at every step (each renews the earliest). */
					if (!z->sigs_stale) {
						zone_sigs_add(&z->sigs, s, 1, (int64_t)now);
						z->sigs_stale = zone_sigs_drop(&z->sigs, &was, 1, (int64_t)now);
					}
				} else {
					r->kept++;
				}
				seen++;
				if (refresh < r->refresh_at)
					r->refresh_at = refresh;
			}
		}
		r->bucket++;
	}
	if (r->bucket <= r->mask)
		return 0;
	if (z->sigs_stale)
		zone_sigs_scan(z, (int64_t)now);
	/* Every signature was looked at (renewed or still good) or made by a
	 * patch meanwhile: the earliest of their refresh points. */
	uint64_t at = r->refresh_at < z->resign_floor ? r->refresh_at : z->resign_floor;
	z->expires_at = at != UINT64_MAX ? at : now;
	z->resigning = false;
	return 1;
}
