/* SPDX-License-Identifier: MIT */
/* Small facts about record types. */
#include <string.h>

#include "core/wire/rrset.h"

bool rrset_type_compressible(uint16_t type)
{
	/* RFC 3597 section 4: only the RFC 1035 types may be compressed. */
	switch (type) {
	case RR_NS: case RR_CNAME: case RR_SOA: case RR_PTR: case RR_MX:
		return true;
	default:
		return false;
	}
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
