/* SPDX-License-Identifier: MIT */
/*
 * Per-key UPDATE permissions and the zone's caps (see policy.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acme/policy.h"
#include "acme/update.h"
#include "core/conf/config.h"
#include "core/conf/log.h"
#include "core/wire/change.h"
#include "core/wire/msg.h"
#include "core/wire/rrset.h"
#include "core/zone/recset.h"

int policy_init(struct policy *p, const struct config_zone *zc, const struct config_tsig_key *k,
                const uint8_t *apex, char err[256])
{
	memset(p, 0, sizeof(*p));
	snprintf(p->key, sizeof(p->key), "%s", k->name);
	p->apex = apex;
	p->max_records_per_name = zc->max_records_per_name;
	p->max_records = zc->max_records;
	p->max_txt_len = zc->max_txt_len ? zc->max_txt_len : 255;
	size_t nt = k->n_allow_types ? k->n_allow_types : 1;
	p->types = malloc(nt * sizeof(*p->types));
	if (!p->types)
		goto nomem;
	if (k->n_allow_types)
		memcpy(p->types, k->allow_types, nt * sizeof(*p->types));
	else
		p->types[0] = RR_TXT;
	p->n_types = nt;
	if (k->n_allow_names) {
		p->names = calloc(k->n_allow_names, sizeof(*p->names));
		if (!p->names)
			goto nomem;
	}
	size_t apex_len = dname_len(apex);
	for (size_t i = 0; i < k->n_allow_names; i++) {
		const char *s = k->allow_names[i];
		uint8_t *out = p->names[i];
		size_t sl = strlen(s);
		int n = dname_from_str(s, out);
		bool absolute = sl > 0 && s[sl - 1] == '.';
		if (n > 0 && !absolute && !dname_is_subdomain(out, apex)) {
			/* Relative: append the zone's name. */
			size_t rel = (size_t)n - 1;   /* without the root label */
			if (rel + apex_len > DNAME_MAX)
				n = -EINVAL;
			else
				memcpy(out + rel, apex, apex_len);
		}
		if (n < 0 || !dname_is_subdomain(out, apex)) {
			snprintf(err, 256, "TSIG key %s: allow_names entry '%s' is not a name in %s",
			         k->name, s, zc->zone);
			policy_clear(p);
			return -EINVAL;
		}
		dname_lower(out);
	}
	p->n_names = k->n_allow_names;
	return 0;
nomem:
	snprintf(err, 256, "out of memory");
	policy_clear(p);
	return -ENOMEM;
}

void policy_clear(struct policy *p)
{
	free(p->types);
	free(p->names);
	p->types = NULL;
	p->names = NULL;
	p->n_types = p->n_names = 0;
}

static void refuse(const struct policy *p, const uint8_t *name, uint16_t type, const char *why)
{
	char n[DNAME_MAX * 4 + 2], t[16];
	if (dname_to_str(name, n, sizeof(n)) < 0)
		snprintf(n, sizeof(n), "(unprintable)");
	log_warn("update refused: key %s, %s %s: %s", p->key, n, rrset_type_to_str(type, t), why);
}

static bool type_signer_owned(uint16_t type)
{
	switch (type) {
	case RR_DNSKEY: case RR_RRSIG: case RR_NSEC: case RR_NSEC3: case RR_NSEC3PARAM:
	case RR_CDS: case RR_CDNSKEY:
		return true;
	default:
		return false;
	}
}

static bool name_allowed(const struct policy *p, const uint8_t *name)
{
	if (p->n_names == 0)
		return dname_is_subdomain(name, p->apex) &&
		       dname_label_count(name) > dname_label_count(p->apex);
	for (size_t i = 0; i < p->n_names; i++)
		if (dname_is_subdomain(name, p->names[i]))
			return true;
	return false;
}

/*
 * A '*' label anywhere, by policy (doc/zones.md): leftmost it makes a
 * wildcard, which would answer every _acme-challenge name nobody
 * published (a validation token for names the key never proved); further
 * right it makes "*.<rest>" exist, a wildcard all the same (RFC 4592
 * 2.2.2).  Zone files serve wildcards; an ACME zone does not grow one.
 */
static bool has_star_label(const uint8_t *name)
{
	for (const uint8_t *p = name; *p; p += *p + 1)
		if (p[0] == 1 && p[1] == '*')
			return true;
	return false;
}

/* NULL when the key may change records of this type at this name, else why not. */
static const char *why_not(const struct policy *p, const uint8_t *name, uint16_t type)
{
	bool apex = dname_label_count(name) == dname_label_count(p->apex);
	if (type == RR_SOA)
		return "the SOA is managed by the server";
	if (apex && type == RR_NS)
		return "the apex NS may not be changed by UPDATE";
	if (type_signer_owned(type))
		return "DNSSEC records are managed by the signer";
	if (!name_allowed(p, name))
		return "name not allowed for this key";
	if (has_star_label(name))
		return "wildcard names are not allowed";
	if (type == RR_DNAME)
		return "DNAME is not allowed by UPDATE: it would redirect every name below it";
	if (type == RR_ANY)
		return NULL;   /* checked per type once the changes are known */
	for (size_t i = 0; i < p->n_types; i++)
		if (p->types[i] == type)
			return NULL;
	return "type not allowed for this key";
}

int policy_check_request(const struct policy *p, const struct update_msg *m)
{
	for (size_t i = 0; i < m->n_upd; i++) {
		const struct update_rr *u = &m->upd[i];
		const char *why = why_not(p, u->name, u->type);
		if (why) {
			refuse(p, u->name, u->type, why);
			return -EACCES;
		}
		if (u->type != RR_TXT || u->rclass != m->zclass)
			continue;
		size_t longest = 0;
		msg_txt_valid(u->rdata, u->rdlen, &longest);
		if (longest > p->max_txt_len) {
			refuse(p, u->name, u->type, "a TXT string is longer than max_txt_len");
			return -EACCES;
		}
		if (u->rdlen > POLICY_TXT_RDATA_MAX) {
			refuse(p, u->name, u->type, "TXT record longer than 1024 bytes");
			return -EACCES;
		}
	}
	return 0;
}

static bool same_owner(const struct change *a, const struct change *b)
{
	return a->name_len == b->name_len && memcmp(a->name, b->name, a->name_len) == 0;
}

/* Changes of one name together; among them, in the list's order. */
static int by_name_then_place(const void *x, const void *y)
{
	const struct change *a = *(const struct change *const *)x;
	const struct change *b = *(const struct change *const *)y;
	if (a->name_len != b->name_len)
		return a->name_len < b->name_len ? -1 : 1;
	int c = memcmp(a->name, b->name, a->name_len);
	if (c)
		return c;
	return a < b ? -1 : a > b;
}

int policy_check_changes(const struct policy *p, const struct recset *rs,
                         const struct change_list *cl)
{
	long total = 0;
	for (size_t i = 0; i < cl->n; i++) {
		const struct change *c = &cl->v[i];
		const char *why = why_not(p, c->name, c->type);
		if (why) {
			refuse(p, c->name, c->type, why);
			return -EACCES;
		}
		total += c->op == CHANGE_ADD ? 1 : -1;
	}
	size_t before = recset_count(rs);
	if (p->max_records && total > 0 && before + (size_t)total > p->max_records) {
		refuse(p, cl->v[0].name, cl->v[0].type, "the zone would exceed max_records");
		return -EACCES;
	}
	if (!p->max_records_per_name)
		return 0;
	/*
	 * Per touched name, its changes brought together by sorting their
	 * positions: comparing every change with every other was 7 ms of one
	 * loop round for an UPDATE of 2 000 names.  When several names go
	 * over, the log names the first in this order.
	 */
	const struct change **by_name = malloc((cl->n + 1) * sizeof(*by_name));
	if (!by_name)
		return -ENOMEM;
	for (size_t i = 0; i < cl->n; i++)
		by_name[i] = &cl->v[i];
	qsort(by_name, cl->n, sizeof(*by_name), by_name_then_place);
	int ret = 0;
	for (size_t i = 0, end; i < cl->n && ret == 0; i = end) {
		const struct change *c = by_name[i];
		long delta = 0;
		for (end = i; end < cl->n && same_owner(by_name[end], c); end++)
			delta += by_name[end]->op == CHANGE_ADD ? 1 : -1;
		const struct recset_name *n = recset_find(rs, c->name);
		long count = (n ? (long)n->nrecords : 0) + delta;
		if (delta > 0 && count > (long)p->max_records_per_name) {
			refuse(p, c->name, c->type, "the name would exceed max_records_per_name");
			ret = -EACCES;
		}
	}
	free(by_name);
	return ret;
}
