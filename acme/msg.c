/* SPDX-License-Identifier: MIT */
/*
 * Message sections and canonical rdata for UPDATE and TSIG (see msg.h).
 */
#include <errno.h>
#include <string.h>

#include "acme/msg.h"
#include "core/wire/rdata_check.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"

int msg_read_question(const uint8_t *msg, size_t len, size_t *pos, uint8_t name[DNAME_MAX],
                      uint16_t *type, uint16_t *rclass)
{
	if (dname_unpack(msg, len, pos, name) < 0)
		return -EBADMSG;
	dname_lower(name);
	if (*pos + 4 > len)
		return -EBADMSG;
	*type = wire_get_u16(msg + *pos);
	*rclass = wire_get_u16(msg + *pos + 2);
	*pos += 4;
	return 0;
}

int msg_read_rr(const uint8_t *msg, size_t len, size_t *pos, struct msg_rr *rr)
{
	rr->offset = *pos;
	int n = dname_unpack(msg, len, pos, rr->name);
	if (n < 0)
		return -EBADMSG;
	dname_lower(rr->name);
	rr->name_len = (uint8_t)n;
	if (*pos + 10 > len)
		return -EBADMSG;
	const uint8_t *p = msg + *pos;
	rr->type = wire_get_u16(p);
	rr->rclass = wire_get_u16(p + 2);
	rr->ttl = wire_get_u32(p + 4);
	rr->rdlen = wire_get_u16(p + 8);
	*pos += 10;
	rr->rdata_off = *pos;
	if (*pos + rr->rdlen > len)
		return -EBADMSG;
	*pos += rr->rdlen;
	return 0;
}

size_t msg_rdata_cap(uint16_t type, uint16_t rdlen)
{
	return rdata_check_cap(type, rdlen);
}

int msg_rdata_canonical(const uint8_t *msg, size_t len, const struct msg_rr *rr, uint8_t *out,
                        size_t cap)
{
	/* The one table of formats (core/wire/rdata_check.c) checks every type, not only the named. */
	int n = rdata_check_canonical(rr->type, msg, len, rr->rdata_off, rr->rdlen, out, cap, NULL);
	return n < 0 ? -EBADMSG : n;
}

bool msg_txt_valid(const uint8_t *rdata, uint16_t rdlen, size_t *longest)
{
	size_t pos = 0, max = 0;
	if (rdlen == 0)
		return false;
	while (pos < rdlen) {
		size_t n = rdata[pos];
		if (pos + 1 + n > rdlen)
			return false;
		if (n > max)
			max = n;
		pos += 1 + n;
	}
	*longest = max;
	return true;
}
