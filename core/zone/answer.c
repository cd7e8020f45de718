/* SPDX-License-Identifier: MIT */
/*
 * Resolving a query against the served zones into a plan.  The plan holds
 * pointers into the current snapshot; nothing is copied or allocated.
 * Dispatch (what comes before and after) is core/zone/process.c.
 */
#include <errno.h>
#include <string.h>

#include "core/geo/geo_db.h"
#include "core/geo/geo_sites.h"
#include "core/wire/dname.h"
#include "core/wire/packet.h"
#include "core/wire/query.h"
#include "core/wire/wire.h"
#include "core/zone/answer.h"
#include "core/zone/geo_sets.h"
#include "core/zone/zone.h"
#include "core/zone/zone_table.h"

#define CNAME_CHAIN_MAX 8

static void add(struct plan_section *s, const uint8_t *owner, const struct rrset *rrset,
                uint32_t ttl, bool with_sig)
{
	if (s->n == PLAN_SECTION_MAX || !rrset)
		return;
	struct plan_rrset *p = &s->rr[s->n++];
	p->owner = owner;
	p->rrset = rrset;
	p->block = NULL;
	p->ttl = ttl;
	p->reversed = false;
	p->with_sig = with_sig;
	p->sig_only = false;
}

static bool in_plan(const struct plan_section *s, const struct rrset *rrset)
{
	for (uint8_t i = 0; i < s->n; i++)
		if (s->rr[i].rrset == rrset)
			return true;
	return false;
}

static uint32_t negative_ttl(const struct zone *z)
{
	const struct rdata *rd = &zone_soa(z)->rr[0];
	uint32_t minimum = wire_get_u32(rd->data + rd->len - 4);
	return zone_soa(z)->ttl < minimum ? zone_soa(z)->ttl : minimum;
}

static void add_soa_negative(struct answer_plan *plan, const struct zone *z, bool dnssec)
{
	add(&plan->ns, zone_apex(z), zone_soa(z), negative_ttl(z), dnssec);
}

static void add_nsec(struct answer_plan *plan, const struct zone_node *n, bool dnssec)
{
	if (!dnssec || !n)
		return;
	const struct rrset *nsec = zone_node_rrset(n, RR_NSEC);
	if (nsec && !in_plan(&plan->ns, nsec))
		add(&plan->ns, n->name, nsec, nsec->ttl, true);
}

/* Walks up from `name` to the closest existing ancestor (the apex at worst). */
static const struct zone_node *closest_encloser(const struct zone *z, const uint8_t *name)
{
	int labels = dname_label_count(name) - dname_label_count(zone_apex(z));
	for (int k = 1; k <= labels; k++) {
		const uint8_t *p = dname_skip_labels(name, k);
		const struct zone_node *n = zone_find(z, p, dname_len(p));
		if (n)
			return n;
	}
	return zone_apex_node(z);
}

/* The zone cut that `name` sits at or below, if any. */
static const struct zone_node *find_cut(const struct zone_node *node, const struct zone_node *ce)
{
	const struct zone_node *n = node ? node : ce;
	if (n->flags & ZONE_NODE_GLUE)
		return n->cut;
	if (n->flags & ZONE_NODE_DELEGATION)
		return n;
	return NULL;
}

/* The types whose targets add_additional looks up: most answers have none. */
static inline bool has_targets(uint16_t type)
{
	return type == RR_NS || type == RR_MX || type == RR_SRV;
}

/* A/AAAA of in-zone targets of NS, MX and SRV records. */
static void add_additional(struct answer_plan *plan, const struct zone *z, const struct rrset *s,
                           bool dnssec)
{
	size_t skip;
	switch (s->type) {
	case RR_NS: skip = 0; break;
	case RR_MX: skip = 2; break;
	case RR_SRV: skip = 6; break;
	default: return;
	}
	for (uint16_t i = 0; i < s->count; i++) {
		if (s->rr[i].len <= skip)
			continue;
		const uint8_t *target = s->rr[i].data + skip;
		if (!dname_is_subdomain(target, zone_apex(z)))
			continue;
		const struct zone_node *n = zone_find(z, target, dname_len(target));
		if (!n || n->geo)
			continue;
		/* Glue is not authoritative: never signed. */
		bool sign = dnssec && !(n->flags & ZONE_NODE_GLUE);
		const uint16_t types[2] = { RR_A, RR_AAAA };
		for (int t = 0; t < 2; t++) {
			const struct rrset *addr = zone_node_rrset(n, types[t]);
			if (addr)
				add(&plan->ar, n->name, addr, addr->ttl, sign);
		}
	}
}

/*
 * RFC 9460 4.1: for an SVCB/HTTPS answer, the A/AAAA of in-zone targets
 * (the owner's for a ServiceMode "." target), and for AliasMode the
 * target's own RRset of the same type.  A geo name's addresses are
 * tailored to the client, so they never go here (RFC 9460 4.4, RFC 7871
 * 7.3.1): a target that is a geo name is skipped.  What does not fit is
 * left out by the writer, never a reason for TC.
 */
static void add_svcb_additional(struct answer_plan *plan, const struct zone *z,
                                const uint8_t *owner, const struct rrset *s, bool dnssec)
{
	if (s->type != RR_SVCB && s->type != RR_HTTPS)
		return;
	for (uint16_t i = 0; i < s->count; i++) {
		const struct rdata *rd = &s->rr[i];
		if (rd->len < 3)
			continue;
		bool alias = rd->data[0] == 0 && rd->data[1] == 0;
		const uint8_t *target = rd->data + 2;
		if (target[0] == 0) {
			if (alias)
				continue;   /* "0 .": the service does not exist */
			target = owner;
		}
		uint8_t lower[DNAME_MAX];
		size_t len = dname_len(target);
		memcpy(lower, target, len);
		dname_lower(lower);
		if (!dname_is_subdomain(lower, zone_apex(z)))
			continue;
		const struct zone_node *n = zone_find(z, lower, len);
		if (!n || n->geo || (n->flags & (ZONE_NODE_GLUE | ZONE_NODE_DELEGATION)))
			continue;
		const uint16_t types[3] = { RR_A, RR_AAAA, s->type };
		for (int t = 0; t < (alias ? 3 : 2); t++) {
			const struct rrset *more = zone_node_rrset(n, types[t]);
			if (more && !in_plan(&plan->ar, more))
				add(&plan->ar, n->name, more, more->ttl, dnssec);
		}
	}
}

static void referral(struct answer_plan *plan, const struct zone *z, const struct zone_node *cut,
                     bool dnssec)
{
	const struct rrset *ns = zone_node_rrset(cut, RR_NS);
	add(&plan->ns, cut->name, ns, ns->ttl, false);
	if (dnssec) {
		const struct rrset *ds = zone_node_rrset(cut, RR_DS);
		if (ds)
			add(&plan->ns, cut->name, ds, ds->ttl, true);
		else
			add_nsec(plan, cut, true);   /* proves the child is unsigned */
	}
	add_additional(plan, z, ns, false);
}

static void nxdomain_proof(struct answer_plan *plan, const struct zone *z, const uint8_t *name,
                           bool dnssec)
{
	if (!dnssec)
		return;
	const struct zone_node *cover = zone_nsec_covering(z, name);
	add_nsec(plan, cover, true);
	/* No wildcard at the closest encloser either (RFC 4035 3.1.3.2). */
	const struct zone_node *ce = closest_encloser(z, name);
	uint8_t wild[DNAME_MAX];
	if ((size_t)ce->name_len + 2 <= DNAME_MAX) {
		wild[0] = 1;
		wild[1] = '*';
		memcpy(wild + 2, ce->name, ce->name_len);
		add_nsec(plan, zone_nsec_covering(z, wild), true);
	}
}

/* A geo name: choose the sites for this client. */
static const struct rrset *geo_answer(const struct query *q, const struct answer_source *src,
                                      const struct zone_node *node, uint16_t qtype,
                                      struct answer_plan *plan, struct geo_choice *choice)
{
	uint8_t addr[16];
	int family;
	const struct edns_ecs *ecs = &q->edns.ecs;
	if (ecs->present && ecs->source_prefix > 0) {
		family = ecs->family == 1 ? 4 : 6;
		memcpy(addr, ecs->addr, 16);
	} else {
		family = query_client_addr(q, addr);
	}
	struct geo_location loc = { .prefix = ecs->source_prefix };
	double lat, lon;
	int rc = src->geo_db ? geo_db_locate(src->geo_db, family, addr, &loc) : -ENOENT;
	if (rc == 0) {
		lat = loc.lat;
		lon = loc.lon;
	} else {
		/*
		 * Not located and no default_location configured: the first
		 * configured site stands in for the client, so the answer is that
		 * site (and its neighbour if the rule says so).
		 */
		geo_site_position(src->sites, 0, &lat, &lon);
	}
	/* The network the databases matched, or missed, is where the answer holds. */
	plan->ecs_scope = loc.prefix;
	if (geo_sets_choose(node->geo, src->sites, qtype, lat, lon, choice) < 0 || !choice->rrset)
		return NULL;
	/* Counted by dispatch; logged once per episode by whoever watches
	 * health (cmd/runtime.c). */
	plan->geo_fail_open = choice->fail_open;
	geo_sets_count(node->geo, choice);
	plan->geo_site[0] = (int16_t)choice->site[0];
	plan->geo_site[1] = (int16_t)(choice->n == 2 ? choice->site[1] : -1);
	return choice->rrset;
}

/*
 * The source of synthesis for a name whose closest encloser is `ce`: the
 * node "*.<ce>" when it exists (RFC 4592 3.3.1), an empty non-terminal
 * included (it matches, and answers NODATA).  One more hash lookup, made
 * only for names that do not exist.
 */
static const struct zone_node *source_of_synthesis(const struct zone *z,
                                                   const struct zone_node *ce)
{
	uint8_t wild[DNAME_MAX];
	if ((size_t)ce->name_len + 2 > DNAME_MAX)
		return NULL;
	wild[0] = 1;
	wild[1] = '*';
	memcpy(wild + 2, ce->name, ce->name_len);
	return zone_find(z, wild, (size_t)ce->name_len + 2);
}

/*
 * RFC 6672 2.2: the CNAME a DNAME at `owner` makes for `name` below it,
 * kept in the plan.  NULL with plan->rcode YXDOMAIN when the new name is
 * longer than 255 bytes, NULL alone when the plan has no room left.
 */
static const struct rrset *synthesize_cname(struct answer_plan *plan, const uint8_t *name,
                                            const struct zone_node *owner,
                                            const struct rrset *dname)
{
	size_t prefix = dname_len(name) - owner->name_len;
	const struct rdata *rd = &dname->rr[0];
	if (prefix + rd->len > DNAME_MAX) {
		plan->rcode = RCODE_YXDOMAIN;
		return NULL;
	}
	if (plan->n_synth == PLAN_SYNTH_MAX)
		return NULL;
	struct plan_synth *sy = &plan->synth[plan->n_synth++];
	memcpy(sy->target, name, prefix);
	memcpy(sy->target + prefix, rd->data, rd->len);
	dname_lower(sy->target + prefix);   /* a copy's DNAME may keep its case */
	sy->rd.data = sy->target;
	sy->rd.len = (uint16_t)(prefix + rd->len);
	sy->rrset = (struct rrset){ .type = RR_CNAME, .count = 1, .ttl = dname->ttl, .rr = &sy->rd };
	return &sy->rrset;
}

const struct zone *answer_resolve(const struct query *q, const struct answer_source *src,
                                  struct answer_plan *plan)
{
	plan->rcode = RCODE_NOERROR;
	plan->aa = false;
	plan->required_authority = false;
	plan->an.n = plan->ns.n = plan->ar.n = 0;
	plan->ecs_scope = 0;
	plan->geo_site[0] = plan->geo_site[1] = -1;
	plan->geo_fail_open = false;
	plan->n_synth = 0;

	const struct zone *z = zone_table_find_labels(src->zones, q->qname, q->qname_len,
	                                              q->qname_labels, q->qname_label_off);
	/* DS lives in the parent: answer it from there when we serve the parent. */
	if (z && q->qtype == RR_DS && q->qname_len == dname_len(zone_apex(z)) && q->qname_len > 1) {
		const struct zone *parent = zone_table_find(src->zones, dname_skip_labels(q->qname, 1));
		if (parent)
			z = parent;
	}
	if (!z) {
		plan->rcode = RCODE_REFUSED;
		return z;
	}
	plan->aa = true;
	bool dnssec = q->edns.do_bit && zone_is_signed(z);
	plan->required_authority = dnssec;
	const uint8_t *name = q->qname;
	uint16_t qtype = q->qtype;

	for (int chain = 0;; chain++) {
		const struct zone_node *node = name == q->qname
		        ? zone_find_hashed(z, name, q->qname_len, q->qname_hash)
		        : zone_find(z, name, dname_len(name));
		const struct zone_node *ce = node ? NULL : closest_encloser(z, name);
		const struct zone_node *cut = find_cut(node, ce);
		if (cut && !(qtype == RR_DS && node == cut)) {
			if (chain == 0)
				plan->aa = false;
			referral(plan, z, cut, dnssec);
			return z;
		}
		/*
		 * Synthesized: the name does not exist, and the answer comes from
		 * the wildcard at its closest encloser (RFC 4592 3.3.1).  Its
		 * RRsets keep their own RRSIGs, whose labels field is below the
		 * name's label count; a signed answer proves that no closer name
		 * exists with the NSEC covering the name (RFC 4035 3.1.3.3, and
		 * 3.1.3.4 for a wildcard NODATA).
		 */
		const uint8_t *synth = NULL;
		if (!node) {
			/*
			 * A DNAME at the closest encloser redirects every name below
			 * it (RFC 6672 2.2, 3.1); nothing exists below a DNAME (the
			 * builder refuses it, 2.4), so no closer name can hide it.
			 */
			const struct rrset *dname = zone_node_rrset(ce, RR_DNAME);
			if (dname) {
				add(&plan->an, ce->name, dname, dname->ttl, dnssec);
				const struct rrset *cname = synthesize_cname(plan, name, ce, dname);
				if (!cname)
					return z;
				add(&plan->an, name, cname, cname->ttl, false);
				const uint8_t *target = cname->rr[0].data;
				if (qtype == RR_CNAME || chain + 1 >= CNAME_CHAIN_MAX ||
				    !dname_is_subdomain(target, zone_apex(z)))
					return z;
				name = target;
				continue;
			}
			node = source_of_synthesis(z, ce);
			if (!node) {
				plan->rcode = RCODE_NXDOMAIN;
				add_soa_negative(plan, z, dnssec);
				nxdomain_proof(plan, z, name, dnssec);
				return z;
			}
			synth = name;
		}
		/*
		 * The owner as the writer should see it: the question's own copy
		 * when this is the name asked (same bytes as node->name), so the
		 * writer knows it by address and points to offset 12 without
		 * comparing (packet_write presets it as the last name written).
		 */
		const uint8_t *owner = name == q->qname ? q->qname : synth ? synth : node->name;
		/* Added after the answer (or the SOA) it goes with. */
		const struct zone_node *closer = synth && dnssec ? zone_nsec_covering(z, synth) : NULL;
		if (node->flags & ZONE_NODE_ENT) {
			add_soa_negative(plan, z, dnssec);
			add_nsec(plan, zone_nsec_covering(z, node->name), dnssec);
			add_nsec(plan, closer, dnssec);
			return z;
		}
		if (node->geo && (qtype == RR_A || qtype == RR_AAAA || qtype == RR_ANY ||
		                  (qtype == RR_HTTPS && geo_sets_has_type(node->geo, RR_HTTPS)))) {
			/* Never a wildcard: the builder refuses a geo name there. */
			struct geo_choice choice;
			uint16_t want = qtype == RR_ANY ? RR_A : qtype;
			const struct rrset *s = geo_answer(q, src, node, want, plan, &choice);
			if (s) {
				add(&plan->an, owner, s, s->ttl, dnssec);
				plan->an.rr[plan->an.n - 1].reversed = choice.reversed;
				plan->an.rr[plan->an.n - 1].block = choice.block[dnssec];
				/* HTTPS: the targets' per-site addresses, encoded when the
				 * snapshot was frozen (RFC 9460 4.1; never the geo name's). */
				for (int i = 0; i < choice.n_extra && plan->ar.n < PLAN_SECTION_MAX; i++) {
					struct plan_rrset *p = &plan->ar.rr[plan->ar.n++];
					*p = (struct plan_rrset){ .block = choice.extra[i][dnssec] };
				}
				return z;
			}
			if (qtype != RR_ANY) {
				add_soa_negative(plan, z, dnssec);
				add_nsec(plan, node, dnssec);
				return z;
			}
		}
		if (qtype == RR_ANY) {
			/* RFC 8482: one RRset is enough; we give the first we hold. */
			for (uint16_t i = 0; i < node->rrset_count; i++) {
				const struct rrset *s = &node->rrsets[i];
				if (s->type == RR_NSEC)
					continue;
				add(&plan->an, owner, s, s->ttl, dnssec);
				add_nsec(plan, closer, dnssec);
				return z;
			}
			add_soa_negative(plan, z, dnssec);
			add_nsec(plan, node, dnssec);
			add_nsec(plan, closer, dnssec);
			return z;
		}
		if (qtype == RR_RRSIG && zone_is_signed(z)) {
			for (uint16_t i = 0; i < node->rrset_count; i++) {
				const struct rrset *s = &node->rrsets[i];
				if (!s->sig[0].len || plan->an.n == PLAN_SECTION_MAX)
					continue;
				add(&plan->an, owner, s, s->ttl, true);
				plan->an.rr[plan->an.n - 1].sig_only = true;
			}
			if (plan->an.n) {
				add_nsec(plan, closer, dnssec);
				return z;
			}
		}
		/*
		 * An explicit query for NSEC (or RRSIG, above) is answered
		 * whether or not DO is set (RFC 3225 3: these types are left out
		 * only when not asked for); the NSEC's own RRSIG only with DO.
		 * A wildcard's NSEC is not synthesized (RFC 4592 4.6): a name
		 * that does not exist has none, so NSEC there is NODATA.
		 */
		const struct rrset *s = synth && qtype == RR_NSEC ? NULL : zone_node_rrset(node, qtype);
		if (s) {
			add(&plan->an, owner, s, s->ttl, dnssec);
			add_nsec(plan, closer, dnssec);
			if (has_targets(s->type) && (chain == 0 || qtype != RR_NS))
				add_additional(plan, z, s, dnssec);
			else if (s->type == RR_SVCB || s->type == RR_HTTPS)
				add_svcb_additional(plan, z, owner, s, dnssec);
			return z;
		}
		const struct rrset *cname = zone_node_rrset(node, RR_CNAME);
		if (cname && qtype != RR_CNAME) {
			/* A loop: this CNAME at this owner is in the answer already
			 * (a wildcard's CNAME is one RRset for many owners). */
			size_t owner_len = dname_len(owner);
			for (uint8_t i = 0; i < plan->an.n; i++)
				if (plan->an.rr[i].rrset == cname &&
				    dname_len(plan->an.rr[i].owner) == owner_len &&
				    memcmp(plan->an.rr[i].owner, owner, owner_len) == 0)
					return z;
			add(&plan->an, owner, cname, cname->ttl, dnssec);
			add_nsec(plan, closer, dnssec);
			const uint8_t *target = cname->rr[0].data;
			/* Follow the chain only inside this zone, and not forever. */
			if (chain + 1 >= CNAME_CHAIN_MAX || !dname_is_subdomain(target, zone_apex(z)))
				return z;
			name = target;
			continue;
		}
		add_soa_negative(plan, z, dnssec);
		add_nsec(plan, node, dnssec);
		add_nsec(plan, closer, dnssec);
		return z;
	}
}
