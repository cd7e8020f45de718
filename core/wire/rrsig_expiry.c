/* SPDX-License-Identifier: MIT */
/*
 * The earliest expiration of a set of RRSIGs (see rrsig_expiry.h).
 */
#include "core/wire/rrsig_expiry.h"

#include "core/wire/wire.h"

#define RRSIG_EXPIRATION_OFF 8

int64_t rrsig_expiration(const uint8_t *rdata, int64_t now)
{
	uint32_t exp = wire_get_u32(rdata + RRSIG_EXPIRATION_OFF);
	return now + (int32_t)(exp - (uint32_t)now);
}

void rrsig_expiry_add(struct rrsig_expiry *e, int64_t at)
{
	if (e->count == 0 || at < e->earliest) {
		e->earliest = at;
		e->count = 1;
	} else if (at == e->earliest) {
		e->count++;
	}
}

bool rrsig_expiry_drop(struct rrsig_expiry *e, int64_t at)
{
	return e->count && at == e->earliest && --e->count == 0;
}
