/* SPDX-License-Identifier: MIT */
/*
 * Zone snapshots: building (collect, normalise, sign, freeze) and lookup.
 *
 * While building, records sit in per-node pending lists; normalise() turns
 * them into sorted, deduplicated RRsets.  The signer hook runs between
 * normalising and freezing, and may add records (DNSKEY, NSEC), which are
 * normalised again before it visits the RRsets to sign them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/conf/metrics.h"
#include "core/conf/sysclock.h"
#include "core/geo/geo_db.h"
#include "core/geo/geo_sites.h"
#include "core/hooks.h"
#include "core/wire/arena.h"
#include "core/wire/array.h"
#include "core/wire/dname.h"
#include "core/wire/rdata_check.h"
#include "core/wire/serial.h"
#include "core/wire/wire.h"
#include "core/zone/geo_sets.h"
#include "core/zone/zone.h"
#include "core/zone/zone_internal.h"

struct brec {
	struct brec *next;
	uint16_t type;
	uint32_t ttl;
	struct rdata rd;
};

struct bnode {
	struct zone_node node;   /* the final node, embedded so pointers stay valid */
	struct brec *pending;
	struct brec *sigs;       /* RRSIGs of a presigned zone, attached at finish */
	bool dirty;
	bool ttl_conflict;
};

struct zone_builder {
	struct arena *arena;
	uint8_t apex[DNAME_MAX];
	size_t apex_len;
	struct bnode **tab;      /* open addressing, power of two */
	size_t tab_cap;
	size_t count;
	struct bnode **all;      /* insertion order */
	size_t all_cap;
	const uint8_t **names;   /* authoritative names, canonical order */
	size_t n_names;
	bool structured;         /* ENTs, cuts and glue computed */
	size_t n_dirty;          /* nodes with pending records: 0 = nothing to normalise */
	uint64_t expiry;
	uint64_t sigs_made;      /* signatures the signer made anew, not from its cache */
	bool presigned;          /* RRSIGs come with the records (a secondary's copy) */
	bool keep_order;         /* unsigned, patched: the name order kept (zone_builder_keep_order) */
	bool has_sigs;
	size_t n_dname;          /* DNAME records added: names below them are looked for */
	int err;
	struct timespec started;   /* for the snapshot's build time (metrics) */
};

size_t zone_canonical_key(const uint8_t *name, uint8_t *out)
{
	const uint8_t *labels[DNAME_LABELS_MAX];
	int n = 0;
	for (const uint8_t *p = name; *p && n < DNAME_LABELS_MAX; p += *p + 1)
		labels[n++] = p;
	size_t k = 0;
	while (n-- > 0) {
		const uint8_t *l = labels[n];
		for (uint8_t i = 1; i <= l[0]; i++) {
			if (l[i] <= 1) {
				out[k++] = 1;
				out[k++] = (uint8_t)(l[i] + 1);
			} else {
				out[k++] = l[i];
			}
		}
		out[k++] = 0;
	}
	return k;
}

int zone_key_cmp(const uint8_t *a, size_t la, const uint8_t *b, size_t lb)
{
	int c = memcmp(a, b, la < lb ? la : lb);
	if (c)
		return c;
	return la < lb ? -1 : la > lb ? 1 : 0;
}

/* The serial sits after the two names at the start of SOA rdata. */
uint32_t zone_soa_serial(const struct rrset *soa)
{
	const uint8_t *p = soa->rr[0].data;
	p += dname_len(p);
	p += dname_len(p);
	return wire_get_u32(p);
}

static int node_cmp_canonical(const void *a, const void *b)
{
	const struct bnode *x = *(struct bnode *const *)a, *y = *(struct bnode *const *)b;
	return dname_canonical_cmp(x->node.name, y->node.name);
}

static int name_cmp_canonical(const void *a, const void *b)
{
	return dname_canonical_cmp(*(const uint8_t *const *)a, *(const uint8_t *const *)b);
}

struct zone_builder *zone_builder_new(const uint8_t *apex)
{
	struct zone_builder *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->arena = arena_new(64 * 1024);
	b->tab_cap = 64;
	b->tab = calloc(b->tab_cap, sizeof(*b->tab));
	if (!b->arena || !b->tab) {
		zone_builder_free(b);
		return NULL;
	}
	sysclock_mono_ts(&b->started);
	b->apex_len = dname_len(apex);
	memcpy(b->apex, apex, b->apex_len);
	dname_lower(b->apex);
	return b;
}

void zone_builder_free(struct zone_builder *b)
{
	if (!b)
		return;
	arena_free(b->arena);
	free(b->tab);
	free(b->all);
	free(b);
}

struct arena *zone_builder_arena(struct zone_builder *b)
{
	return b->arena;
}

void zone_builder_set_expiry(struct zone_builder *b, uint64_t refresh_at)
{
	b->expiry = refresh_at;
}

void zone_builder_set_signatures_made(struct zone_builder *b, uint64_t n)
{
	b->sigs_made = n;
}

static struct bnode *lookup(struct zone_builder *b, const uint8_t *name, size_t len)
{
	size_t mask = b->tab_cap - 1;
	for (size_t i = dname_hash(name, len) & mask;; i = (i + 1) & mask) {
		struct bnode *n = b->tab[i];
		if (!n)
			return NULL;
		if (n->node.name_len == len && memcmp(n->node.name, name, len) == 0)
			return n;
	}
}

static int grow(struct zone_builder *b)
{
	size_t cap = b->tab_cap * 2;
	struct bnode **tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < b->tab_cap; i++) {
		struct bnode *n = b->tab[i];
		if (!n)
			continue;
		size_t j = dname_hash(n->node.name, n->node.name_len) & (cap - 1);
		while (tab[j])
			j = (j + 1) & (cap - 1);
		tab[j] = n;
	}
	free(b->tab);
	b->tab = tab;
	b->tab_cap = cap;
	return 0;
}

/* Finds or creates the node for a lowercase name. */
static struct bnode *get_node(struct zone_builder *b, const uint8_t *name, size_t len)
{
	struct bnode *n = lookup(b, name, len);
	if (n)
		return n;
	if ((b->count + 1) * 2 > b->tab_cap && grow(b) < 0)
		return NULL;
	struct bnode **all = array_room(b->all, b->count, &b->all_cap, sizeof(*all), 64);
	if (!all)
		return NULL;
	b->all = all;
	n = arena_zalloc(b->arena, sizeof(*n));
	uint8_t *copy = arena_memdup(b->arena, name, len);
	if (!n || !copy)
		return NULL;
	n->node.name = copy;
	n->node.name_len = (uint8_t)len;
	size_t i = dname_hash(name, len) & (b->tab_cap - 1);
	while (b->tab[i])
		i = (i + 1) & (b->tab_cap - 1);
	b->tab[i] = n;
	b->all[b->count++] = n;
	if (len == b->apex_len)
		n->node.flags |= ZONE_NODE_APEX;
	return n;
}

/* The owner lowercased into name; its length, or -EINVAL when too long. */
static int owner_lower(const uint8_t *owner, uint8_t name[DNAME_MAX])
{
	size_t len = dname_len(owner);
	if (len > DNAME_MAX)
		return -EINVAL;
	memcpy(name, owner, len);
	dname_lower(name);
	return (int)len;
}

int zone_builder_add(struct zone_builder *b, const uint8_t *owner, uint16_t type,
                     uint32_t ttl, const uint8_t *rdata, uint16_t rdlen)
{
	uint8_t name[DNAME_MAX];
	int len = owner_lower(owner, name);
	if (len < 0 || !dname_is_subdomain(name, b->apex) || rrset_type_is_meta(type) ||
	    (type == RR_RRSIG && (!b->presigned || rdlen < 18)))
		return -EINVAL;
	/*
	 * The last line of defence: every way in checks the format with a
	 * better message first, but the answer path reads names inside rdata
	 * without bounds of its own, so nothing malformed enters a snapshot.
	 */
	if (rdata_check(type, rdata, rdlen, NULL) < 0)
		return -EBADMSG;
	struct bnode *n = get_node(b, name, (size_t)len);
	struct brec *r = arena_alloc(b->arena, sizeof(*r));
	uint8_t *copy = arena_memdup(b->arena, rdata, rdlen);
	if (!n || !r || !copy)
		return b->err = -ENOMEM;
	r->type = type;
	r->ttl = ttl;
	r->rd.len = rdlen;
	r->rd.data = copy;
	if (type == RR_RRSIG) {
		/* Kept apart: attached to the RRset it covers when the zone is frozen. */
		r->next = n->sigs;
		n->sigs = r;
		n->node.flags &= (uint8_t)~ZONE_NODE_ENT;
		return 0;
	}
	r->next = n->pending;
	n->pending = r;
	if (type == RR_DNAME)
		b->n_dname++;
	if (!n->dirty)
		b->n_dirty++;
	n->dirty = true;
	n->node.flags &= (uint8_t)~ZONE_NODE_ENT;
	return 0;
}

bool zone_builder_has_name(struct zone_builder *b, const uint8_t *owner)
{
	uint8_t name[DNAME_MAX];
	int len = owner_lower(owner, name);
	if (len < 0)
		return false;
	const struct bnode *n = lookup(b, name, (size_t)len);
	return n && (n->pending || n->node.rrset_count || n->node.geo);
}

void zone_builder_set_presigned(struct zone_builder *b)
{
	b->presigned = true;
}

void zone_builder_keep_order(struct zone_builder *b)
{
	b->keep_order = true;
}

/* Each received RRSIG onto the RRset it covers: up to RRSET_SIGS per RRset,
 * the last received first (n->sigs is in reverse order); others are dropped. */
static size_t attach_sigs(struct zone_builder *b)
{
	size_t dropped = 0;
	for (size_t i = 0; i < b->count; i++) {
		struct bnode *n = b->all[i];
		for (struct brec *r = n->sigs; r; r = r->next) {
			uint16_t covered = wire_get_u16(r->rd.data);
			struct rrset *s = NULL;
			for (uint16_t k = 0; k < n->node.rrset_count; k++)
				if (n->node.rrsets[k].type == covered)
					s = &n->node.rrsets[k];
			unsigned have = s ? rrset_sig_count(s) : RRSET_SIGS;
			if (have == RRSET_SIGS) {
				dropped++;
				continue;
			}
			s->sig[have] = r->rd;
			b->has_sigs = true;
		}
	}
	return dropped;
}

static void raise_soa(struct rdata *rd, uint32_t floor)
{
	if (rd->len < 22)
		return;
	/* The rdata is the builder's own copy (zone_builder_add). */
	uint8_t *p = (uint8_t *)rd->data + rd->len - 20;
	if (serial_newer(floor, wire_get_u32(p)))
		wire_set_u32(p, floor);
}

int zone_builder_raise_serial(struct zone_builder *b, uint32_t floor)
{
	struct bnode *n = lookup(b, b->apex, b->apex_len);
	if (!n)
		return -ENOENT;
	for (struct brec *r = n->pending; r; r = r->next)
		if (r->type == RR_SOA)
			raise_soa(&r->rd, floor);
	for (uint16_t i = 0; i < n->node.rrset_count; i++)
		if (n->node.rrsets[i].type == RR_SOA)
			for (uint16_t k = 0; k < n->node.rrsets[i].count; k++)
				raise_soa(&n->node.rrsets[i].rr[k], floor);
	return 0;
}

int zone_builder_add_geo(struct zone_builder *b, const uint8_t *owner, struct geo_sets *sets)
{
	uint8_t name[DNAME_MAX];
	int len = owner_lower(owner, name);
	if (len < 0 || !dname_is_subdomain(name, b->apex))
		return -EINVAL;
	struct bnode *n = get_node(b, name, (size_t)len);
	if (!n)
		return b->err = -ENOMEM;
	if (n->node.geo)
		return -EEXIST;
	n->node.geo = sets;
	n->node.flags |= ZONE_NODE_GEO;
	n->node.flags &= (uint8_t)~ZONE_NODE_ENT;
	return 0;
}

static int type_cmp(const void *a, const void *b)
{
	const struct rrset *x = a, *y = b;
	return (int)x->type - (int)y->type;
}

static int rdata_cmp(const void *a, const void *b)
{
	return rdata_canonical_cmp(a, b);
}

/* Merges a node's pending records into its sorted RRsets. */
static int normalise_node(struct zone_builder *b, struct bnode *n)
{
	if (!n->dirty)
		return 0;
	size_t n_types = n->node.rrset_count;
	for (struct brec *r = n->pending; r; r = r->next)
		n_types++;   /* upper bound */
	struct rrset *sets = arena_zalloc(b->arena, n_types * sizeof(*sets));
	if (!sets)
		return -ENOMEM;
	size_t used = 0;
	for (size_t i = 0; i < n->node.rrset_count; i++)
		sets[used++] = n->node.rrsets[i];
	/* Count records per type, then fill. */
	for (struct brec *r = n->pending; r; r = r->next) {
		struct rrset *s = NULL;
		for (size_t i = 0; i < used; i++)
			if (sets[i].type == r->type)
				s = &sets[i];
		if (!s) {
			s = &sets[used++];
			s->type = r->type;
			s->ttl = r->ttl;
			s->count = 0;
			s->rr = NULL;
		}
		memset(s->sig, 0, sizeof(s->sig));   /* content changes: any signature is void */
	}
	for (size_t i = 0; i < used; i++) {
		struct rrset *s = &sets[i];
		size_t total = s->count;
		for (struct brec *r = n->pending; r; r = r->next)
			if (r->type == s->type)
				total++;
		if (total == s->count)
			continue;
		struct rdata *rr = arena_alloc(b->arena, total * sizeof(*rr));
		if (!rr)
			return -ENOMEM;
		size_t k = 0;
		for (size_t j = 0; j < s->count; j++)
			rr[k++] = s->rr[j];
		for (struct brec *r = n->pending; r; r = r->next) {
			if (r->type != s->type)
				continue;
			if (r->ttl != s->ttl) {
				/* RFC 2181 5.2: TTLs of an RRset must agree; take the lowest. */
				if (r->ttl < s->ttl)
					s->ttl = r->ttl;
			}
			rr[k++] = r->rd;
		}
		qsort(rr, k, sizeof(*rr), rdata_cmp);
		size_t out = 0;
		for (size_t j = 0; j < k; j++)
			if (out == 0 || rdata_canonical_cmp(&rr[out - 1], &rr[j]) != 0)
				rr[out++] = rr[j];
		s->rr = rr;
		s->count = (uint16_t)(out > UINT16_MAX ? UINT16_MAX : out);
	}
	qsort(sets, used, sizeof(*sets), type_cmp);
	n->node.rrsets = sets;
	n->node.rrset_count = (uint16_t)used;
	n->pending = NULL;
	n->dirty = false;
	b->n_dirty--;
	return 0;
}

static int normalise(struct zone_builder *b)
{
	/*
	 * The signer asks for each name's types one by one: without this
	 * early return every question would walk the whole zone (quadratic).
	 */
	if (!b->n_dirty)
		return 0;
	for (size_t i = 0; i < b->count; i++) {
		int err = normalise_node(b, b->all[i]);
		if (err)
			return err;
	}
	return 0;
}

static bool node_has(const struct zone_node *n, uint16_t type)
{
	return zone_node_rrset(n, type) != NULL;
}

/* Adds empty non-terminals, then marks zone cuts and the glue below them. */
static int structure(struct zone_builder *b)
{
	if (b->structured)
		return 0;
	size_t initial = b->count;
	for (size_t i = 0; i < initial; i++) {
		const uint8_t *name = b->all[i]->node.name;
		int extra = dname_label_count(name) - dname_label_count(b->apex);
		for (int k = 1; k < extra; k++) {
			const uint8_t *parent = dname_skip_labels(name, k);
			size_t plen = dname_len(parent);
			if (lookup(b, parent, plen))
				break;   /* its ancestors were added with it */
			struct bnode *p = get_node(b, parent, plen);
			if (!p)
				return -ENOMEM;
			p->node.flags |= ZONE_NODE_ENT;
		}
	}
	for (size_t i = 0; i < b->count; i++) {
		struct bnode *n = b->all[i];
		if (!(n->node.flags & ZONE_NODE_APEX) && node_has(&n->node, RR_NS))
			n->node.flags |= ZONE_NODE_DELEGATION;
		if (n->node.rrset_count == 0 && !n->node.geo)
			n->node.flags |= ZONE_NODE_ENT;
		else
			n->node.flags &= (uint8_t)~ZONE_NODE_ENT;
	}
	for (size_t i = 0; i < b->count; i++) {
		struct bnode *n = b->all[i];
		int extra = dname_label_count(n->node.name) - dname_label_count(b->apex);
		for (int k = 1; k < extra; k++) {
			const uint8_t *parent = dname_skip_labels(n->node.name, k);
			struct bnode *p = lookup(b, parent, dname_len(parent));
			if (p && (p->node.flags & ZONE_NODE_DELEGATION)) {
				n->node.flags |= ZONE_NODE_GLUE;
				/* Keep the highest cut: it is the one that applies. */
				n->node.cut = &p->node;
			}
		}
	}
	b->structured = true;
	return 0;
}

static bool authoritative(const struct bnode *n)
{
	return !(n->node.flags & (ZONE_NODE_GLUE | ZONE_NODE_ENT));
}

int zone_builder_foreach_rrset(struct zone_builder *b, zone_rrset_fn fn, void *arg)
{
	int err = normalise(b);
	if (!err)
		err = structure(b);
	if (err)
		return err;
	for (size_t i = 0; i < b->count; i++) {
		struct bnode *n = b->all[i];
		if (!authoritative(n))
			continue;
		bool cut = n->node.flags & ZONE_NODE_DELEGATION;
		for (size_t j = 0; j < n->node.rrset_count; j++) {
			struct rrset *s = &n->node.rrsets[j];
			/* At a cut only DS and NSEC are authoritative (RFC 4035 2.2). */
			if (cut && s->type != RR_DS && s->type != RR_NSEC)
				continue;
			err = fn(arg, n->node.name, s);
			if (err)
				return err;
		}
		if (n->node.geo) {
			err = geo_sets_foreach((struct geo_sets *)n->node.geo, n->node.name, fn, arg);
			if (err)
				return err;
		}
	}
	return 0;
}

size_t zone_builder_names(struct zone_builder *b, const uint8_t ***names)
{
	if (normalise(b) || structure(b)) {
		*names = NULL;
		return 0;
	}
	const uint8_t **list = arena_alloc(b->arena, (b->count ? b->count : 1) * sizeof(*list));
	if (!list) {
		*names = NULL;
		return 0;
	}
	size_t k = 0;
	for (size_t i = 0; i < b->count; i++)
		if (authoritative(b->all[i]))
			list[k++] = b->all[i]->node.name;
	qsort(list, k, sizeof(*list), name_cmp_canonical);
	*names = list;
	return k;
}

size_t zone_builder_types(struct zone_builder *b, const uint8_t *name, uint16_t *types, size_t cap)
{
	if (normalise(b) || structure(b))
		return 0;
	struct bnode *n = lookup(b, name, dname_len(name));
	if (!n || !authoritative(n))
		return 0;
	bool cut = n->node.flags & ZONE_NODE_DELEGATION;
	size_t k = 0;
	uint16_t geo_types[3] = { RR_A, RR_AAAA, RR_HTTPS };
	/* Merge the stored types with the geo types, keeping the order. */
	size_t gi = 0;
	for (size_t j = 0; j <= n->node.rrset_count; j++) {
		uint16_t t = j < n->node.rrset_count ? n->node.rrsets[j].type : 0xFFFF;
		while (n->node.geo && gi < 3 && geo_types[gi] < t) {
			if (geo_sets_has_type(n->node.geo, geo_types[gi]) && k < cap)
				types[k++] = geo_types[gi];
			gi++;
		}
		if (j == n->node.rrset_count)
			break;
		if (cut && t != RR_NS && t != RR_DS && t != RR_NSEC)
			continue;
		if (k < cap)
			types[k++] = t;
	}
	return k;
}

/* Whether a node holds a type, normalised or still pending. */
static bool bnode_has(const struct bnode *n, uint16_t type)
{
	if (!n)
		return false;
	if (node_has(&n->node, type))
		return true;
	for (const struct brec *r = n->pending; r; r = r->next)
		if (r->type == type)
			return true;
	return false;
}

/* The DNAME owner above `name`, if any (only a zone with a DNAME looks). */
static const struct bnode *dname_above(struct zone_builder *b, const uint8_t *name)
{
	int extra = dname_label_count(name) - dname_label_count(b->apex);
	for (int k = 1; b->n_dname && k <= extra; k++) {
		const uint8_t *parent = dname_skip_labels(name, k);
		const struct bnode *p = lookup(b, parent, dname_len(parent));
		if (bnode_has(p, RR_DNAME))
			return p;
	}
	return NULL;
}

const char *zone_builder_conflict(struct zone_builder *b, const uint8_t *owner, uint16_t type,
                                  const uint8_t *rdata, uint16_t rdlen)
{
	uint8_t name[DNAME_MAX];
	int len = owner_lower(owner, name);
	if (len < 0)
		return NULL;
	bool wild = name[0] == 1 && name[1] == '*';
	if (wild && type == RR_NS)
		return "a wildcard cannot own NS (RFC 4592 4.2: what it would delegate is undefined)";
	if (wild && type == RR_DNAME)
		return "a wildcard cannot own a DNAME (RFC 4592 4.4)";
	if (dname_above(b, name))
		return "no name may exist below a DNAME (RFC 6672 2.4)";
	const struct bnode *n = lookup(b, name, (size_t)len);
	if ((type == RR_DNAME && bnode_has(n, RR_CNAME)) || (type == RR_CNAME && bnode_has(n, RR_DNAME)))
		return "a DNAME and a CNAME cannot share an owner (RFC 6672 2.4)";
	if (type != RR_DNAME)
		return NULL;
	for (const struct brec *r = n ? n->pending : NULL; r; r = r->next)
		if (r->type == RR_DNAME && (r->rd.len != rdlen || memcmp(r->rd.data, rdata, rdlen)))
			return "a name owns at most one DNAME (RFC 6672 2.4)";
	if (n && node_has(&n->node, RR_DNAME))
		return "a name owns at most one DNAME (RFC 6672 2.4)";
	for (size_t i = 0; i < b->count; i++) {
		const uint8_t *o = b->all[i]->node.name;
		if (dname_len(o) > (size_t)len && dname_is_subdomain(o, name))
			return "no name may exist below a DNAME (RFC 6672 2.4)";
	}
	return NULL;
}

static void check_node(struct zone_builder *b, const struct bnode *n, const char *file,
                       struct diag *d)
{
	char name[DNAME_MAX * 4 + 1];
	dname_to_str(n->node.name, name, sizeof(name));
	const struct zone_node *zn = &n->node;
	bool wild = zn->name[0] == 1 && zn->name[1] == '*';
	if (wild && zn->geo)
		diag_add(d, file, 0, 0, "%s: a geo name cannot be a wildcard (its answer is chosen "
		         "per client; list the names explicitly)", name);
	if (wild && (node_has(zn, RR_NS) || node_has(zn, RR_DNAME)))
		diag_add(d, file, 0, 0, "%s: a wildcard cannot own NS or DNAME (RFC 4592 4.2, 4.4)",
		         name);
	const struct rrset *dn = zone_node_rrset(zn, RR_DNAME);
	if (dn && dn->count > 1)
		diag_add(d, file, 0, 0, "%s: more than one DNAME record (RFC 6672 2.4)", name);
	if (dn && (zn->flags & ZONE_NODE_DELEGATION))
		diag_add(d, file, 0, 0, "%s: a DNAME at a zone cut is not the zone's data", name);
	const struct bnode *above = dname_above(b, zn->name);
	if (above && !(zn->flags & (ZONE_NODE_GLUE | ZONE_NODE_ENT))) {
		char owner[DNAME_MAX * 4 + 1];
		dname_to_str(above->node.name, owner, sizeof(owner));
		diag_add(d, file, 0, 0, "%s: no name may exist below the DNAME at %s (RFC 6672 2.4)",
		         name, owner);
	}
	if (node_has(zn, RR_CNAME)) {
		for (size_t j = 0; j < zn->rrset_count; j++) {
			uint16_t t = zn->rrsets[j].type;
			if (t != RR_CNAME && t != RR_NSEC && t != RR_RRSIG) {
				diag_add(d, file, 0, 0, "%s: CNAME cannot coexist with other data (RFC 1034 3.6.2)",
				         name);
				break;
			}
		}
		if (zone_node_rrset(zn, RR_CNAME)->count > 1)
			diag_add(d, file, 0, 0, "%s: more than one CNAME record", name);
		if (zn->geo)
			diag_add(d, file, 0, 0, "%s: a geo name cannot also be a CNAME", name);
		if (zn->flags & ZONE_NODE_APEX)
			diag_add(d, file, 0, 0, "%s: CNAME at the zone apex", name);
	}
	if (zn->geo && (node_has(zn, RR_A) || node_has(zn, RR_AAAA)))
		diag_add(d, file, 0, 0,
		         "%s: A/AAAA records in the zone file conflict with the geo name of the same owner",
		         name);
	if (zn->geo && geo_sets_has_type(zn->geo, RR_HTTPS) && node_has(zn, RR_HTTPS))
		diag_add(d, file, 0, 0,
		         "%s: HTTPS records in the zone file conflict with the geo name's `https`", name);
	if (zn->geo && (zn->flags & (ZONE_NODE_GLUE | ZONE_NODE_DELEGATION)))
		diag_add(d, file, 0, 0, "%s: a geo name cannot sit at or below a delegation", name);
}

struct zone *zone_builder_finish(struct zone_builder *b, const struct zone_signer *signer,
                                 const char *file, struct diag *d)
{
	struct zone *z = NULL;
	char apex_str[DNAME_MAX * 4 + 1];
	dname_to_str(b->apex, apex_str, sizeof(apex_str));
	size_t before = d->n;
	if (b->err || normalise(b) || structure(b)) {
		diag_add(d, file, 0, 0, "%s: out of memory while building the zone", apex_str);
		goto fail;
	}
	struct bnode *apex = lookup(b, b->apex, b->apex_len);
	const struct rrset *soa = apex ? zone_node_rrset(&apex->node, RR_SOA) : NULL;
	if (!soa || soa->count != 1 || soa->rr[0].len < 22) {
		diag_add(d, file, 0, 0, "%s: the zone needs exactly one SOA record at its apex", apex_str);
		goto fail;
	}
	if (!zone_node_rrset(&apex->node, RR_NS))
		diag_add(d, file, 0, 0, "%s: the zone needs NS records at its apex", apex_str);
	for (size_t i = 0; i < b->count; i++)
		check_node(b, b->all[i], file, d);
	if (d->n > before)
		goto fail;

	if (b->presigned) {
		size_t dropped = attach_sigs(b);
		if (dropped)
			log_warn("%s: %zu RRSIG records ignored (no RRset they cover, or more than %d "
			         "signatures over one RRset)", apex_str, dropped, RRSET_SIGS);
	}
	if (signer) {
		char err[256] = "";
		if (signer->sign(signer->ctx, b, err) < 0) {
			diag_add(d, file, 0, 0, "%s: signing failed: %s", apex_str, err);
			goto fail;
		}
		if (normalise(b)) {
			diag_add(d, file, 0, 0, "%s: out of memory while signing", apex_str);
			goto fail;
		}
	}

	z = arena_zalloc(b->arena, sizeof(*z));
	if (!z)
		goto fail;
	z->arena = b->arena;
	z->apex = arena_memdup(b->arena, b->apex, b->apex_len);
	z->apex_len = (uint8_t)b->apex_len;
	z->name = arena_strdup(b->arena, apex_str);
	/* Found by name, so every snapshot of this zone counts into one series. */
	z->metrics = z->name ? metrics_zone(z->name) : NULL;
	struct timespec done;
	sysclock_mono_ts(&done);
	z->build_seconds = (double)(done.tv_sec - b->started.tv_sec) +
	                   (double)(done.tv_nsec - b->started.tv_nsec) / 1e9;
	z->apex_node = &apex->node;
	z->soa = zone_node_rrset(&apex->node, RR_SOA);
	z->serial = zone_soa_serial(z->soa);
	z->signed_zone = signer != NULL || b->has_sigs;
	z->expires_at = b->expiry;
	z->sigs_made = b->sigs_made;
	z->refs = 1;

	uint32_t nb = 16;
	while (nb < b->count * 2)
		nb <<= 1;
	z->buckets = arena_zalloc(b->arena, nb * sizeof(*z->buckets));
	if (!z->buckets)
		goto fail;
	z->bucket_mask = nb - 1;
	for (size_t i = 0; i < b->count; i++) {
		struct zone_node *n = &b->all[i]->node;
		if (n->geo)
			geo_sets_attach((struct geo_sets *)n->geo, n->name, b->arena, signer);
		uint32_t h = dname_hash(n->name, n->name_len) & z->bucket_mask;
		n->hash_next = z->buckets[h];
		z->buckets[h] = n;
	}
	z->node_count = (uint32_t)b->count;
	for (size_t i = 0; i < b->count; i++)
		if (b->all[i]->node.geo)
			geo_sets_link((struct geo_sets *)b->all[i]->node.geo, z);
	/* What it serves, read once here; patches and renewals keep it. */
	if (signer)
		zone_sigs_scan(z, (int64_t)signer->now(signer->ctx));

	if (z->signed_zone || b->keep_order) {
		/* An unsigned zone's order (keep_order) holds every authoritative
		 * name with records, as a signed zone's holds those with an NSEC
		 * (the same names); ZONE_NODE_NSEC then says "in the order". */
		size_t k = 0;
		struct bnode **order = malloc((b->count ? b->count : 1) * sizeof(*order));
		if (!order)
			goto fail;
		for (size_t i = 0; i < b->count; i++)
			if (authoritative(b->all[i]) &&
			    (z->signed_zone ? node_has(&b->all[i]->node, RR_NSEC)
			                    : b->all[i]->node.rrset_count > 0 || b->all[i]->node.geo))
				order[k++] = b->all[i];
		qsort(order, k, sizeof(*order), node_cmp_canonical);
		z->nsec_order = arena_alloc(b->arena, (k ? k : 1) * sizeof(*z->nsec_order));
		if (!z->nsec_order) {
			free(order);
			goto fail;
		}
		z->nsec_keys = arena_alloc(b->arena, (k ? k : 1) * sizeof(*z->nsec_keys));
		z->nsec_key_len = arena_alloc(b->arena, (k ? k : 1) * sizeof(*z->nsec_key_len));
		if (!z->nsec_keys || !z->nsec_key_len) {
			free(order);
			goto fail;
		}
		for (size_t i = 0; i < k; i++) {
			uint8_t key[ZONE_CANON_KEY_MAX];
			size_t len = zone_canonical_key(order[i]->node.name, key);
			order[i]->node.flags |= ZONE_NODE_NSEC;
			z->nsec_order[i] = &order[i]->node;
			z->nsec_keys[i] = arena_memdup(b->arena, key, len);
			z->nsec_key_len[i] = (uint16_t)len;
			if (!z->nsec_keys[i]) {
				free(order);
				goto fail;
			}
		}
		z->nsec_count = (uint32_t)k;
		free(order);
		/* A patch of a presigned copy finds names below a name in the
		 * NSEC order, so it needs every name that holds records there. */
		size_t held = 0;
		for (size_t i = 0; i < b->count; i++)
			held += authoritative(b->all[i]);
		z->nsec_complete = held == k;
	}
	z->presigned = b->presigned;
	z->built_bytes = arena_used(b->arena);

	/* The arena now belongs to the zone. */
	b->arena = NULL;
	zone_builder_free(b);
	return z;

fail:
	zone_builder_free(b);
	return NULL;
}

const struct zone_node *zone_find(const struct zone *z, const uint8_t *name, size_t len)
{
	return zone_find_hashed(z, name, len, dname_hash(name, len));
}

const struct zone_node *zone_find_hashed(const struct zone *z, const uint8_t *name, size_t len,
                                         uint32_t hash)
{
	uint32_t h = hash & z->bucket_mask;
	for (const struct zone_node *n = z->buckets[h]; n; n = n->hash_next)
		if (n->name_len == len && dname_same(n->name, name, len))
			return n;
	return NULL;
}

const struct zone_node *zone_nsec_covering(const struct zone *z, const uint8_t *name)
{
	if (!z->nsec_count)
		return NULL;
	uint8_t key[ZONE_CANON_KEY_MAX];
	size_t key_len = zone_canonical_key(name, key);
	size_t lo = 0, hi = z->nsec_count;   /* find the last index with node <= name */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		size_t n = z->nsec_key_len[mid] < key_len ? z->nsec_key_len[mid] : key_len;
		int c = memcmp(z->nsec_keys[mid], key, n);
		if (c < 0 || (c == 0 && z->nsec_key_len[mid] <= key_len))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? z->nsec_order[lo - 1] : z->nsec_order[z->nsec_count - 1];
}

int zone_copy_loaded(const struct zone *z, struct zone_builder *b)
{
	for (uint32_t h = 0; h <= z->bucket_mask; h++) {
		for (const struct zone_node *n = z->buckets[h]; n; n = n->hash_next) {
			for (uint16_t i = 0; i < n->rrset_count; i++) {
				const struct rrset *s = &n->rrsets[i];
				/* Made by the signer at every build (zone files may not
				 * hold them: zone_file.c refuses them). */
				if (s->type == RR_DNSKEY || s->type == RR_CDS || s->type == RR_CDNSKEY ||
				    s->type == RR_NSEC)
					continue;
				for (uint16_t k = 0; k < s->count; k++) {
					int rc = zone_builder_add(b, n->name, s->type, s->ttl, s->rr[k].data,
					                          s->rr[k].len);
					if (rc < 0)
						return rc;
				}
			}
		}
	}
	return 0;
}

const struct zone_node *zone_node_next(const struct zone *z, const struct zone_node *prev)
{
	uint32_t b = 0;
	if (prev) {
		if (prev->hash_next)
			return prev->hash_next;
		b = (dname_hash(prev->name, prev->name_len) & z->bucket_mask) + 1;
	}
	for (; b <= z->bucket_mask; b++)
		if (z->buckets[b])
			return z->buckets[b];
	return NULL;
}

struct zone *zone_hold(const struct zone *z)
{
	struct zone *m = (struct zone *)z;   /* only the count changes */
	m->refs++;
	return m;
}

unsigned zone_refs(const struct zone *z)
{
	return (unsigned)z->refs;
}

void zone_free(struct zone *z)
{
	if (!z || --z->refs != 0)
		return;
	free(z->nsec_heap);         /* NULL unless a patch moved the NSEC order */
	arena_free(z->arena);       /* the zone itself lives in its arena */
}

/* --- accessors --- */

const uint8_t *zone_apex(const struct zone *z)
{
	return z->apex;
}

size_t zone_apex_len(const struct zone *z)
{
	return z->apex_len;
}

const char *zone_name(const struct zone *z)
{
	return z->name;
}

const struct zone_node *zone_apex_node(const struct zone *z)
{
	return z->apex_node;
}

const struct rrset *zone_soa(const struct zone *z)
{
	return z->soa;
}

uint32_t zone_serial(const struct zone *z)
{
	return z->serial;
}

bool zone_is_signed(const struct zone *z)
{
	return z->signed_zone;
}

uint32_t zone_nsec_count(const struct zone *z)
{
	return z->nsec_count;
}

uint64_t zone_signatures_made(const struct zone *z)
{
	return z->sigs_made;
}

int64_t zone_signature_expiry(const struct zone *z)
{
	/* Stale (a re-sign pass is renewing them): the earliest before the
	 * pass, sooner than any left, until the pass ends. */
	return z->sigs.count || z->sigs_stale ? z->sigs.earliest : 0;
}

void zone_sigs_add(struct rrsig_expiry *e, const struct rrset *sets, uint16_t n, int64_t now)
{
	for (uint16_t j = 0; j < n; j++)
		for (unsigned k = 0; k < RRSET_SIGS && sets[j].sig[k].len; k++)
			if (sets[j].sig[k].len >= RRSIG_EXPIRY_MIN_RDLEN)
				rrsig_expiry_add(e, rrsig_expiration(sets[j].sig[k].data, now));
}

bool zone_sigs_drop(struct rrsig_expiry *e, const struct rrset *sets, uint16_t n, int64_t now)
{
	bool lost = false;
	for (uint16_t j = 0; j < n; j++)
		for (unsigned k = 0; k < RRSET_SIGS && sets[j].sig[k].len; k++)
			if (sets[j].sig[k].len >= RRSIG_EXPIRY_MIN_RDLEN &&
			    rrsig_expiry_drop(e, rrsig_expiration(sets[j].sig[k].data, now)))
				lost = true;
	return lost;
}

struct sigs_scan {
	struct rrsig_expiry *e;
	int64_t now;
};

static int scan_geo_set(void *arg, const uint8_t *owner, struct rrset *rrset)
{
	struct sigs_scan *sc = arg;
	(void)owner;
	zone_sigs_add(sc->e, rrset, 1, sc->now);
	return 0;
}

void zone_sigs_scan(struct zone *z, int64_t now)
{
	struct sigs_scan sc = { &z->sigs, now };
	z->sigs = (struct rrsig_expiry){ 0, 0 };
	z->sigs_now = now;
	z->sigs_stale = false;
	for (uint32_t h = 0; h <= z->bucket_mask; h++)
		for (const struct zone_node *n = z->buckets[h]; n; n = n->hash_next) {
			zone_sigs_add(&z->sigs, n->rrsets, n->rrset_count, now);
			/* The geo answer sets built ahead: signed with the snapshot. */
			if (n->geo)
				(void)geo_sets_foreach((struct geo_sets *)n->geo, n->name, scan_geo_set, &sc);
		}
}

uint64_t zone_expires_at(const struct zone *z)
{
	return z->expires_at;
}

struct metrics_zone *zone_metrics(const struct zone *z)
{
	return z->metrics;
}

double zone_build_seconds(const struct zone *z)
{
	return z->build_seconds;
}

size_t zone_built_bytes(const struct zone *z)
{
	return z->built_bytes;
}

bool zone_resigning(const struct zone *z)
{
	return z->resigning;
}

int zone_foreach_node(const struct zone *z, int (*fn)(void *arg, const struct zone_node *n),
                      void *arg)
{
	for (uint32_t b = 0; b <= z->bucket_mask; b++)
		for (const struct zone_node *n = z->buckets[b]; n; n = n->hash_next) {
			int rc = fn(arg, n);
			if (rc)
				return rc;
		}
	return 0;
}
