/* SPDX-License-Identifier: MIT */
/*
 * Message sections and canonical rdata for UPDATE and TSIG (see msg.h).
 */
#include <errno.h>
#include <string.h>

#include "acme/msg.h"
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

/*
 * The layout of rdata with names in it: 'n' a domain name, 's' a
 * character-string, a digit that many fixed bytes, 'T' twenty bytes (the
 * SOA counters).  Types not listed are opaque: copied as they are.
 */
static const char *layout(uint16_t type)
{
	switch (type) {
	case RR_NS: case 3 /* MD */: case 4 /* MF */: case RR_CNAME: case 7 /* MB */:
	case 8 /* MG */: case 9 /* MR */: case RR_PTR: case RR_DNAME:
		return "n";
	case RR_SOA:
		return "nnT";
	case 14 /* MINFO */: case 17 /* RP */:
		return "nn";
	case RR_MX: case 18 /* AFSDB */: case 21 /* RT */: case 36 /* KX */:
		return "2n";
	case 26 /* PX */:
		return "2nn";
	case RR_SRV:
		return "6n";
	case RR_NAPTR:
		return "4sssn";
	default:
		return NULL;
	}
}

size_t msg_rdata_cap(uint16_t type, uint16_t rdlen)
{
	return (size_t)rdlen + (layout(type) ? 3 * DNAME_MAX : 0);
}

int msg_rdata_canonical(const uint8_t *msg, size_t len, const struct msg_rr *rr, uint8_t *out,
                        size_t cap)
{
	const char *l = layout(rr->type);
	size_t pos = rr->rdata_off, end = rr->rdata_off + rr->rdlen;
	if (end > len)
		return -EBADMSG;
	if (!l) {
		if (rr->rdlen > cap)
			return -EBADMSG;
		memcpy(out, msg + pos, rr->rdlen);
		return rr->rdlen;
	}
	size_t o = 0;
	for (; *l; l++) {
		size_t fixed;
		switch (*l) {
		case 'n': {
			uint8_t name[DNAME_MAX];
			/* Compression may point anywhere earlier in the message. */
			int n = dname_unpack(msg, end, &pos, name);
			if (n < 0 || o + (size_t)n > cap)
				return -EBADMSG;
			dname_lower(name);
			memcpy(out + o, name, (size_t)n);
			o += (size_t)n;
			continue;
		}
		case 's':
			if (pos >= end)
				return -EBADMSG;
			fixed = 1 + (size_t)msg[pos];
			break;
		case 'T':
			fixed = 20;
			break;
		default:
			fixed = (size_t)(*l - '0');
			break;
		}
		if (pos + fixed > end || o + fixed > cap)
			return -EBADMSG;
		memcpy(out + o, msg + pos, fixed);
		o += fixed;
		pos += fixed;
	}
	if (pos != end)
		return -EBADMSG;
	return (int)o;
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
