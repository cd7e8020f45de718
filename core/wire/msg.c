/* SPDX-License-Identifier: MIT */
/*
 * Message sections and canonical rdata for UPDATE and TSIG (see msg.h).
 */
#include <errno.h>
#include <string.h>

#include "core/wire/msg.h"
#include "core/wire/rdata_check.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"

int msg_read_question(struct wire *w, uint8_t name[DNAME_MAX], uint16_t *type,
                      uint16_t *rclass)
{
	dname_read(w, name);
	*type = wire_read_u16(w);
	*rclass = wire_read_u16(w);
	if (w->err)
		return -EBADMSG;
	dname_lower(name);
	return 0;
}

int msg_read_rr(struct wire *w, struct msg_rr *rr)
{
	rr->offset = wire_pos(w);
	int n = dname_read(w, rr->name);
	rr->type = wire_read_u16(w);
	rr->rclass = wire_read_u16(w);
	rr->ttl = wire_read_u32(w);
	rr->rdlen = wire_read_u16(w);
	rr->rdata_off = wire_pos(w);
	wire_skip(w, rr->rdlen);
	if (w->err)
		return -EBADMSG;
	dname_lower(rr->name);
	rr->name_len = (uint8_t)n;
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

/*
 * TXT rdata: a run of character-strings, each a length byte and that many
 * bytes, filling the rdata exactly.
 */
bool msg_txt_valid(const uint8_t *rdata, uint16_t rdlen, size_t *longest)
{
	struct wire w;
	size_t max = 0;
	wire_init_read(&w, rdata, rdlen);
	if (rdlen == 0)
		return false;
	while (wire_left(&w) > 0) {
		size_t n = wire_read_u8(&w);
		wire_skip(&w, n);
		if (n > max)
			max = n;
	}
	if (w.err)
		return false;
	*longest = max;
	return true;
}
