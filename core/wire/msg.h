/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Reading the sections of a whole DNS message for UPDATE and TSIG, which
 * need more than core's question parser: every record's owner, framing and
 * rdata, and rdata in canonical form (RFC 4034 section 6.2: names
 * uncompressed and lowercase) so that records compare with memcmp and are
 * stored exactly as signed.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/wire/dname.h"

#define MSG_HEADER_LEN 12

struct msg_rr {
	size_t offset;             /* where the record starts */
	size_t rdata_off;          /* where its rdata starts */
	uint8_t name[DNAME_MAX];   /* owner, uncompressed, lowercase */
	uint8_t name_len;
	uint16_t type, rclass;
	uint32_t ttl;
	uint16_t rdlen;
};

struct wire;

/*
 * Read through a cursor over the whole message (core/wire/wire.h), whose
 * error is sticky: a caller reads entry after entry and checks once.
 */
/* Reads one question entry (name lowercased).  0 or -EBADMSG. */
int msg_read_question(struct wire *w, uint8_t name[DNAME_MAX], uint16_t *type,
                      uint16_t *rclass);
/* Reads one record and moves past its rdata.  0 or -EBADMSG. */
int msg_read_rr(struct wire *w, struct msg_rr *rr);
/*
 * Writes rr's rdata in canonical form to out (cap bytes; msg_rdata_cap()
 * always suffices): names decompressed and lowercased in the types that
 * carry them (RFC 3597 section 4 and RFC 4034 section 6.2), other rdata
 * copied.  Returns the length, or -EBADMSG when the rdata does not match
 * its type's wire format (core/wire/rdata_check.h: a name running out of the
 * rdata, a field of the wrong size, bytes left over).  Empty rdata is
 * never looked at here: it is what deletions carry, and the prescan
 * checks it where it must be a record.
 */
int msg_rdata_canonical(const uint8_t *msg, size_t len, const struct msg_rr *rr, uint8_t *out,
                        size_t cap);
/*
 * Upper bound of the canonical rdata length of a record: its length, plus
 * what decompressing its names (three at most) can add.
 */
size_t msg_rdata_cap(uint16_t type, uint16_t rdlen);
/*
 * TXT rdata: one or more character-strings filling it exactly.  Sets
 * *longest to the longest string.  False when malformed.
 */
bool msg_txt_valid(const uint8_t *rdata, uint16_t rdlen, size_t *longest);
