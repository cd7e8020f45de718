/* SPDX-License-Identifier: MIT */
/*
 * RFC 2136 UPDATE processing over the in-memory records (see update.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "acme/update.h"
#include "core/wire/arena.h"
#include "core/wire/array.h"
#include "core/wire/change.h"
#include "core/wire/dname.h"
#include "core/wire/msg.h"
#include "core/wire/query.h"
#include "core/wire/rdata_check.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/recset.h"
#include "core/zone/zone.h"

/* --- parsing --- */

static int read_section(struct wire *w, unsigned count, struct arena *a,
                        struct update_rr **out)
{
	*out = NULL;
	if (count == 0)
		return 0;
	struct update_rr *v = arena_alloc(a, count * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (unsigned i = 0; i < count; i++) {
		struct msg_rr rr;
		if (msg_read_rr(w, &rr) < 0)
			return -EBADMSG;
		struct update_rr *u = &v[i];
		u->name = arena_memdup(a, rr.name, rr.name_len);
		u->type = rr.type;
		u->rclass = rr.rclass;
		u->ttl = rr.ttl;
		u->rdlen = 0;
		u->rdata = (const uint8_t *)"";
		if (!u->name)
			return -ENOMEM;
		if (rr.rdlen) {
			size_t cap = msg_rdata_cap(rr.type, rr.rdlen);
			uint8_t *rd = arena_alloc(a, cap);
			if (!rd)
				return -ENOMEM;
			int n = msg_rdata_canonical(w->buf, w->cap, &rr, rd, cap);
			if (n < 0 || n > UINT16_MAX)
				return -EBADMSG;
			u->rdata = rd;
			u->rdlen = (uint16_t)n;
		}
	}
	*out = v;
	return 0;
}

/* Fails with an RCODE for the response and the errno that says the same (update.h). */
static int fail(uint8_t *rcode, uint8_t rc)
{
	*rcode = rc;
	switch (rc) {
	case RCODE_NOTZONE:
		return -ERANGE;
	case RCODE_NXDOMAIN: case RCODE_NXRRSET:
		return -ENOENT;
	case RCODE_YXDOMAIN: case RCODE_YXRRSET:
		return -EEXIST;
	case RCODE_SERVFAIL:
		return -ENOMEM;
	default:
		return -EBADMSG;
	}
}

int update_parse(const uint8_t *msg, size_t len, struct arena *a, struct update_msg *m,
                 uint8_t *rcode)
{
	*rcode = RCODE_NOERROR;
	struct wire w;
	memset(m, 0, sizeof(*m));
	wire_init_read(&w, msg, len);
	wire_skip(&w, 4);                           /* ID, flags */
	unsigned zocount = wire_read_u16(&w);
	unsigned prcount = wire_read_u16(&w);
	unsigned upcount = wire_read_u16(&w);
	wire_skip(&w, 2);                           /* ADCOUNT */
	if (w.err || zocount != 1)
		return fail(rcode, RCODE_FORMERR);
	if (msg_read_question(&w, m->zone, &m->ztype, &m->zclass) < 0)
		return fail(rcode, RCODE_FORMERR);
	m->zone_end = wire_pos(&w);
	if (m->ztype != RR_SOA)
		return fail(rcode, RCODE_FORMERR);
	int ret = read_section(&w, prcount, a, &m->prereq);
	if (ret == 0)
		ret = read_section(&w, upcount, a, &m->upd);
	if (ret == -ENOMEM)
		return fail(rcode, RCODE_SERVFAIL);
	if (ret < 0)
		return fail(rcode, RCODE_FORMERR);
	m->n_prereq = prcount;
	m->n_upd = upcount;
	return 0;
}

/* --- prerequisites --- */

static bool same_name(const uint8_t *a, const uint8_t *b)
{
	size_t la = dname_len(a);
	return la == dname_len(b) && memcmp(a, b, la) == 0;
}

static bool same_rdata(const struct update_rr *a, const struct update_rr *b)
{
	return a->rdlen == b->rdlen && memcmp(a->rdata, b->rdata, a->rdlen) == 0;
}

/*
 * Prerequisites are evaluated against what the zone serves (RFC 2136 3.2
 * speaks of the zone, not of what was stored): the snapshot, where the
 * signer's DNSKEY, CDS, CDNSKEY and NSEC RRsets and every RRSIG live
 * beside the stored records.  A name is in use when it owns a record
 * (2.4.4): empty non-terminals are not.  ACME zones have no geo names.
 */
static const struct zone_node *name_in_use(const struct zone *z, const uint8_t *name)
{
	if (!z)
		return NULL;
	const struct zone_node *n = zone_find(z, name, dname_len(name));
	return n && !(n->flags & ZONE_NODE_ENT) && n->rrset_count > 0 ? n : NULL;
}

/* One served RRset, or for type RRSIG the signatures at a name (RFC 4035 2.2: one per RRset
 * and signing key). */
struct served {
	const struct zone_node *node;
	const struct rrset *set;
	bool sigs;
};

static size_t served_count(const struct served *s)
{
	if (!s->sigs)
		return s->set ? s->set->count : 0;
	size_t n = 0;
	for (uint16_t i = 0; i < s->node->rrset_count; i++)
		n += rrset_sig_count(&s->node->rrsets[i]);
	return n;
}

static bool served_find(const struct zone *z, const uint8_t *name, uint16_t type,
                        struct served *s)
{
	memset(s, 0, sizeof(*s));
	s->node = name_in_use(z, name);
	if (!s->node)
		return false;
	if (type == RR_RRSIG)
		s->sigs = true;
	else
		s->set = zone_node_rrset(s->node, type);
	return served_count(s) > 0;
}

static bool served_has(const struct served *s, const uint8_t *rdata, uint16_t rdlen)
{
	struct rdata want = { rdlen, rdata };
	if (s->sigs) {
		for (uint16_t i = 0; i < s->node->rrset_count; i++)
			for (unsigned k = 0; k < rrset_sig_count(&s->node->rrsets[i]); k++)
				if (rdata_canonical_cmp(&s->node->rrsets[i].sig[k], &want) == 0)
					return true;
		return false;
	}
	for (uint16_t i = 0; i < s->set->count; i++)
		if (rdata_canonical_cmp(&s->set->rr[i], &want) == 0)
			return true;
	return false;
}

/*
 * RRset exists (value dependent): the prerequisite records with this
 * name and type, taken as a set, equal the zone's RRset (TTLs aside).
 */
static bool rrset_matches(const struct zone *z, const struct update_msg *m, size_t first)
{
	const struct update_rr *p = &m->prereq[first];
	struct served s;
	if (!served_find(z, p->name, p->type, &s))
		return false;
	size_t distinct = 0;
	for (size_t j = first; j < m->n_prereq; j++) {
		const struct update_rr *q = &m->prereq[j];
		if (q->rclass != m->zclass || q->type != p->type || !same_name(q->name, p->name))
			continue;
		if (!served_has(&s, q->rdata, q->rdlen))
			return false;
		bool dup = false;
		for (size_t k = first; k < j && !dup; k++) {
			const struct update_rr *r = &m->prereq[k];
			dup = r->rclass == m->zclass && r->type == q->type && same_name(r->name, q->name) &&
			      same_rdata(r, q);
		}
		if (!dup)
			distinct++;
	}
	return distinct == served_count(&s);
}

int update_prereq(const struct zone *served, const uint8_t *apex, const struct update_msg *m,
                  uint8_t *rcode)
{
	*rcode = RCODE_NOERROR;
	for (size_t i = 0; i < m->n_prereq; i++) {
		const struct update_rr *p = &m->prereq[i];
		if (p->ttl != 0)
			return fail(rcode, RCODE_FORMERR);
		if (!dname_is_subdomain(p->name, apex))
			return fail(rcode, RCODE_NOTZONE);
		struct served s;
		if (p->rclass == CLASS_ANY) {
			if (p->rdlen != 0)
				return fail(rcode, RCODE_FORMERR);
			if (p->type == RR_ANY) {
				if (!name_in_use(served, p->name))
					return fail(rcode, RCODE_NXDOMAIN);
			} else if (!served_find(served, p->name, p->type, &s)) {
				return fail(rcode, RCODE_NXRRSET);
			}
		} else if (p->rclass == CLASS_NONE) {
			if (p->rdlen != 0)
				return fail(rcode, RCODE_FORMERR);
			if (p->type == RR_ANY) {
				if (name_in_use(served, p->name))
					return fail(rcode, RCODE_YXDOMAIN);
			} else if (served_find(served, p->name, p->type, &s)) {
				return fail(rcode, RCODE_YXRRSET);
			}
		} else if (p->rclass != m->zclass) {
			return fail(rcode, RCODE_FORMERR);
		}
	}
	/* Value-dependent prerequisites, once per (name, type), after the loop as in 3.2.5. */
	for (size_t i = 0; i < m->n_prereq; i++) {
		const struct update_rr *p = &m->prereq[i];
		if (p->rclass != m->zclass)
			continue;
		bool seen = false;
		for (size_t k = 0; k < i && !seen; k++)
			seen = m->prereq[k].rclass == m->zclass && m->prereq[k].type == p->type &&
			       same_name(m->prereq[k].name, p->name);
		if (!seen && !rrset_matches(served, m, i))
			return fail(rcode, RCODE_NXRRSET);
	}
	return 0;
}

/* --- prescan --- */

/*
 * A record to add or to delete must match its type's wire format
 * (core/wire/rdata_check.h), empty rdata included: the parser leaves rdata of
 * length 0 alone because deletions carry it, so this is where an empty
 * CNAME, NS, MX or PTR -- which the answer path would read as a name
 * past its end -- or an empty DS is refused.  FORMERR, as BIND answers.
 */
static bool rdata_ok(const struct update_rr *u)
{
	return rdata_check(u->type, u->rdata, u->rdlen, NULL) == 0;
}

int update_prescan(const uint8_t *apex, const struct update_msg *m, uint8_t *rcode)
{
	*rcode = RCODE_NOERROR;
	for (size_t i = 0; i < m->n_upd; i++) {
		const struct update_rr *u = &m->upd[i];
		if (!dname_is_subdomain(u->name, apex))
			return fail(rcode, RCODE_NOTZONE);
		if (u->rclass == m->zclass) {
			if (rrset_type_is_meta(u->type) || !rdata_ok(u))
				return fail(rcode, RCODE_FORMERR);
		} else if (u->rclass == CLASS_ANY) {
			if (u->ttl != 0 || u->rdlen != 0 ||
			    (rrset_type_is_meta(u->type) && u->type != RR_ANY))
				return fail(rcode, RCODE_FORMERR);
		} else if (u->rclass == CLASS_NONE) {
			if (u->ttl != 0 || rrset_type_is_meta(u->type) || !rdata_ok(u))
				return fail(rcode, RCODE_FORMERR);
		} else {
			return fail(rcode, RCODE_FORMERR);
		}
	}
	return 0;
}

/* --- applying, on an overlay of the touched names --- */

struct ov_rr {
	const uint8_t *rdata;        /* into the recset or the message: both outlive us */
	uint16_t rdlen;
	uint32_t ttl;
	int64_t created_at;
};

struct ov_set {
	uint16_t type;
	size_t n, cap;
	struct ov_rr *rr;
};

struct ov_name {
	const uint8_t *name;
	const struct recset_name *base;
	size_t nsets, capsets;
	struct ov_set *sets;
};

/*
 * The touched names in the order first touched (the change list follows
 * it), found through an open-addressing index: an UPDATE of 2 000 names
 * looked each one up among all before it, 14 ms of one loop round.
 */
struct overlay {
	struct ov_name *v;
	size_t n, cap;
	uint32_t *index;             /* position in v + 1; 0: empty */
	size_t index_cap;            /* a power of two, at least twice n */
};

static void overlay_free(struct overlay *o)
{
	for (size_t i = 0; i < o->n; i++) {
		for (size_t k = 0; k < o->v[i].nsets; k++)
			free(o->v[i].sets[k].rr);
		free(o->v[i].sets);
	}
	free(o->v);
	free(o->index);
}

/* The index slot of name: where it is, or the empty one where it goes. */
static uint32_t *ov_slot(const struct overlay *o, const uint8_t *name)
{
	size_t mask = o->index_cap - 1;
	for (size_t h = dname_hash(name, dname_len(name)) & mask;; h = (h + 1) & mask) {
		uint32_t *at = &o->index[h];
		if (!*at || same_name(o->v[*at - 1].name, name))
			return at;
	}
}

/* Room in the index for one more name. */
static int ov_index_room(struct overlay *o)
{
	if (2 * (o->n + 1) <= o->index_cap)
		return 0;
	size_t cap = o->index_cap ? 2 * o->index_cap : 16;
	uint32_t *index = calloc(cap, sizeof(*index));
	if (!index)
		return -ENOMEM;
	free(o->index);
	o->index = index;
	o->index_cap = cap;
	for (size_t i = 0; i < o->n; i++)
		*ov_slot(o, o->v[i].name) = (uint32_t)(i + 1);
	return 0;
}

static struct ov_set *ov_set_get(struct ov_name *n, uint16_t type, bool create)
{
	for (size_t k = 0; k < n->nsets; k++)
		if (n->sets[k].type == type)
			return &n->sets[k];
	if (!create)
		return NULL;
	struct ov_set *v = array_room(n->sets, n->nsets, &n->capsets, sizeof(*v), 4);
	if (!v)
		return NULL;
	n->sets = v;
	struct ov_set *s = &n->sets[n->nsets++];
	memset(s, 0, sizeof(*s));
	s->type = type;
	return s;
}

static int ov_set_push(struct ov_set *s, const struct ov_rr *r)
{
	struct ov_rr *v = array_room(s->rr, s->n, &s->cap, sizeof(*v), 4);
	if (!v)
		return -ENOMEM;
	s->rr = v;
	s->rr[s->n++] = *r;
	return 0;
}

static struct ov_rr *ov_set_find(struct ov_set *s, const uint8_t *rdata, uint16_t rdlen)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->rr[i].rdlen == rdlen && memcmp(s->rr[i].rdata, rdata, rdlen) == 0)
			return &s->rr[i];
	return NULL;
}

/* The touched name, copied from the records on first touch. */
static struct ov_name *ov_get(struct overlay *o, const struct recset *rs, const uint8_t *name)
{
	if (ov_index_room(o) < 0)
		return NULL;
	uint32_t *slot = ov_slot(o, name);
	if (*slot)
		return &o->v[*slot - 1];
	struct ov_name *v = array_room(o->v, o->n, &o->cap, sizeof(*v), 8);
	if (!v)
		return NULL;
	o->v = v;
	*slot = (uint32_t)(o->n + 1);
	struct ov_name *n = &o->v[o->n++];
	memset(n, 0, sizeof(*n));
	n->name = name;
	n->base = recset_find(rs, name);
	for (uint16_t k = 0; n->base && k < n->base->nsets; k++) {
		const struct recset_rrset *bs = &n->base->sets[k];
		struct ov_set *s = ov_set_get(n, bs->type, true);
		if (!s)
			return NULL;
		for (uint16_t j = 0; j < bs->count; j++) {
			struct ov_rr r = { bs->rr[j].rdata, bs->rr[j].rdlen, bs->rr[j].ttl,
			                   bs->rr[j].created_at };
			if (ov_set_push(s, &r) < 0)
				return NULL;
		}
	}
	return n;
}

static bool has_data_other_than(const struct ov_name *n, uint16_t type)
{
	for (size_t k = 0; k < n->nsets; k++)
		if (n->sets[k].type != type && n->sets[k].n > 0)
			return true;
	return false;
}

static int ov_add(struct ov_name *n, const struct update_rr *u, int64_t now)
{
	struct ov_set *cname = ov_set_get(n, RR_CNAME, false);
	if (u->type == RR_CNAME) {
		if (has_data_other_than(n, RR_CNAME))
			return 0;           /* CNAME beside other data: ignored */
		if (cname && cname->n && !ov_set_find(cname, u->rdata, u->rdlen))
			cname->n = 0;       /* a CNAME replaces the CNAME */
	} else if (cname && cname->n) {
		return 0;               /* other data beside a CNAME: ignored */
	}
	struct ov_set *s = ov_set_get(n, u->type, true);
	if (!s)
		return -ENOMEM;
	if (!ov_set_find(s, u->rdata, u->rdlen)) {
		struct ov_rr r = { u->rdata, u->rdlen, u->ttl, now };
		if (ov_set_push(s, &r) < 0)
			return -ENOMEM;
	}
	/* One TTL per RRset (RFC 2181 5.2): the newest wins. */
	for (size_t i = 0; i < s->n; i++)
		s->rr[i].ttl = u->ttl;
	return 0;
}

static bool apex_protected(bool apex, uint16_t type)
{
	return apex && (type == RR_SOA || type == RR_NS);
}

static void ov_delete_rr(struct ov_name *n, const struct update_rr *u, bool apex)
{
	struct ov_set *s = ov_set_get(n, u->type, false);
	struct ov_rr *r = ov_set_find(s, u->rdata, u->rdlen);
	if (!r)
		return;
	if (apex && (u->type == RR_SOA || (u->type == RR_NS && s->n == 1)))
		return;                 /* never the SOA, never the last apex NS */
	*r = s->rr[--s->n];
}

static int apply_update(struct overlay *o, const struct recset *rs, const uint8_t *apex,
                        const struct update_msg *m, const struct update_rr *u, int64_t now)
{
	struct ov_name *n = ov_get(o, rs, u->name);
	if (!n)
		return -ENOMEM;
	bool apex_name = same_name(u->name, apex);
	if (u->rclass == m->zclass)
		return ov_add(n, u, now);
	if (u->rclass == CLASS_NONE) {
		ov_delete_rr(n, u, apex_name);
		return 0;
	}
	/* CLASS ANY: one RRset, or every RRset of the name. */
	for (size_t k = 0; k < n->nsets; k++) {
		struct ov_set *s = &n->sets[k];
		if ((u->type == RR_ANY || s->type == u->type) && !apex_protected(apex_name, s->type))
			s->n = 0;
	}
	return 0;
}

/* The change list for one touched name: deletions first, then additions. */
static int diff_name(const struct ov_name *n, struct change_list *cl)
{
	const struct recset_name *b = n->base;
	for (uint16_t k = 0; b && k < b->nsets; k++) {
		const struct recset_rrset *bs = &b->sets[k];
		struct ov_set *s = ov_set_get((struct ov_name *)n, bs->type, false);
		for (uint16_t j = 0; j < bs->count; j++) {
			const struct recset_rr *r = &bs->rr[j];
			const struct ov_rr *now = ov_set_find(s, r->rdata, r->rdlen);
			if (now && now->ttl == r->ttl)
				continue;
			if (change_list_add(cl, CHANGE_DEL, n->name, bs->type, r->ttl, r->rdata, r->rdlen,
			                    r->created_at) < 0)
				return -ENOMEM;
		}
	}
	for (size_t k = 0; k < n->nsets; k++) {
		const struct ov_set *s = &n->sets[k];
		const struct recset_rrset *bs = recset_name_rrset(b, s->type);
		for (size_t j = 0; j < s->n; j++) {
			const struct ov_rr *r = &s->rr[j];
			const struct recset_rr *was = recset_rrset_find(bs, r->rdata, r->rdlen);
			if (was && was->ttl == r->ttl)
				continue;
			/* A TTL change keeps the record's age. */
			int64_t created = was ? was->created_at : r->created_at;
			if (change_list_add(cl, CHANGE_ADD, n->name, s->type, r->ttl, r->rdata, r->rdlen,
			                    created) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

int update_compute(const struct recset *rs, const uint8_t *apex, const struct update_msg *m,
                   int64_t now, struct change_list *cl)
{
	struct overlay o = { 0 };
	int ret = 0;
	for (size_t i = 0; i < m->n_upd && ret == 0; i++)
		ret = apply_update(&o, rs, apex, m, &m->upd[i], now);
	for (size_t i = 0; i < o.n && ret == 0; i++)
		ret = diff_name(&o.v[i], cl);
	overlay_free(&o);
	return ret;
}

/* --- serial --- */

uint32_t update_serial_next(uint32_t serial)
{
	/* RFC 1982: addition modulo 2^32; 0 is an ordinary serial. */
	return serial + 1u;
}

int update_bump_serial(const struct recset *rs, const uint8_t *apex, struct change_list *cl,
                       uint32_t *serial)
{
	const struct recset_rrset *s = recset_name_rrset(recset_find(rs, apex), RR_SOA);
	if (!s || s->count != 1)
		return -ENOENT;
	const struct recset_rr *r = &s->rr[0];
	/* Canonical SOA rdata: MNAME, RNAME, then SERIAL and four more counters. */
	if (r->rdlen < 22)
		return -ENOENT;
	size_t at = r->rdlen - 20;
	uint8_t rdata[2 * DNAME_MAX + 20];
	if (r->rdlen > sizeof(rdata))
		return -ENOENT;
	memcpy(rdata, r->rdata, r->rdlen);
	*serial = update_serial_next(wire_get_u32(rdata + at));
	wire_set_u32(rdata + at, *serial);
	if (change_list_add(cl, CHANGE_DEL, apex, RR_SOA, r->ttl, r->rdata, r->rdlen, 0) < 0 ||
	    change_list_add(cl, CHANGE_ADD, apex, RR_SOA, r->ttl, rdata, r->rdlen, 0) < 0)
		return -ENOMEM;
	return 0;
}
