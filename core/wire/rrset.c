/* SPDX-License-Identifier: MIT */
/* Small facts about record types. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/wire/rrset.h"

/*
 * The record type table, ordered by type: mnemonic and, for the RFC 1035 types whose rdata
 * names may be compressed (RFC 3597 section 4), where those names sit.
 */
static const struct type_info {
	uint16_t type;
	const char *name;
	uint8_t prefix;     /* bytes before the compressible names */
	uint8_t names;      /* compressible names (0: none) */
} types[] = {
	{ RR_A, "A", 0, 0 }, { RR_NS, "NS", 0, 1 }, { RR_CNAME, "CNAME", 0, 1 },
	{ RR_SOA, "SOA", 0, 2 }, { RR_PTR, "PTR", 0, 1 }, { RR_HINFO, "HINFO", 0, 0 },
	{ RR_MX, "MX", 2, 1 }, { RR_TXT, "TXT", 0, 0 }, { RR_AAAA, "AAAA", 0, 0 },
	{ RR_LOC, "LOC", 0, 0 }, { RR_SRV, "SRV", 0, 0 }, { RR_NAPTR, "NAPTR", 0, 0 },
	{ RR_DNAME, "DNAME", 0, 0 }, { RR_OPT, "OPT", 0, 0 }, { RR_DS, "DS", 0, 0 },
	{ RR_SSHFP, "SSHFP", 0, 0 }, { RR_RRSIG, "RRSIG", 0, 0 }, { RR_NSEC, "NSEC", 0, 0 },
	{ RR_DNSKEY, "DNSKEY", 0, 0 }, { RR_NSEC3, "NSEC3", 0, 0 },
	{ RR_NSEC3PARAM, "NSEC3PARAM", 0, 0 }, { RR_TLSA, "TLSA", 0, 0 },
	{ RR_SMIMEA, "SMIMEA", 0, 0 }, { RR_CDS, "CDS", 0, 0 }, { RR_CDNSKEY, "CDNSKEY", 0, 0 },
	{ RR_OPENPGPKEY, "OPENPGPKEY", 0, 0 }, { RR_SVCB, "SVCB", 0, 0 },
	{ RR_HTTPS, "HTTPS", 0, 0 }, { RR_SPF, "SPF", 0, 0 }, { RR_TKEY, "TKEY", 0, 0 },
	{ RR_TSIG, "TSIG", 0, 0 }, { RR_IXFR, "IXFR", 0, 0 }, { RR_AXFR, "AXFR", 0, 0 },
	{ RR_MAILB, "MAILB", 0, 0 }, { RR_MAILA, "MAILA", 0, 0 }, { RR_ANY, "ANY", 0, 0 },
	{ RR_URI, "URI", 0, 0 }, { RR_CAA, "CAA", 0, 0 },
};
#define N_TYPES (sizeof(types) / sizeof(types[0]))

static const struct type_info *type_info(uint16_t type)
{
	for (size_t i = 0; i < N_TYPES; i++)
		if (types[i].type == type)
			return &types[i];
	return NULL;
}

uint16_t rrset_type_from_str(const char *s)
{
	for (size_t i = 0; i < N_TYPES; i++)
		if (strcasecmp(s, types[i].name) == 0)
			return types[i].type;
	if (strncasecmp(s, "TYPE", 4) == 0 && s[4] >= '0' && s[4] <= '9') {
		char *end;
		unsigned long v = strtoul(s + 4, &end, 10);
		if (*end == '\0' && v >= 1 && v <= 65535)
			return (uint16_t)v;
	}
	return 0;
}

const char *rrset_type_to_str(uint16_t type, char buf[16])
{
	const struct type_info *t = type_info(type);
	if (t)
		return t->name;
	snprintf(buf, 16, "TYPE%u", (unsigned)type);
	return buf;
}

int rrset_type_rdata_names(uint16_t type, uint8_t *prefix)
{
	/* RFC 3597 section 4 allows compression in RFC 1035's types only, and
	 * those end at TXT (16): the query path, which asks for every record,
	 * scans the table (ordered by type) only for them. */
	const struct type_info *t = type <= RR_TXT ? type_info(type) : NULL;
	*prefix = t ? t->prefix : 0;
	return t ? t->names : 0;
}

bool rrset_type_compressible(uint16_t type)
{
	uint8_t prefix;
	return rrset_type_rdata_names(type, &prefix) > 0;
}

bool rrset_type_is_meta(uint16_t type)
{
	return type == 0 || type == RR_OPT || (type >= 128 && type <= 255);
}

int rdata_canonical_cmp(const struct rdata *a, const struct rdata *b)
{
	uint16_t m = a->len < b->len ? a->len : b->len;
	int c = m ? memcmp(a->data, b->data, m) : 0;
	if (c)
		return c;
	return (int)a->len - (int)b->len;
}
