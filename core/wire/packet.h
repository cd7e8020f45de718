/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The DNS message codec for the query path.
 *
 * packet_parse() validates a whole incoming message in place: header,
 * question (lowercased copy plus the client's case), every other record's
 * framing (counts that lie are caught), one OPT at most (in additional,
 * owner root), a TSIG only as the very last record.
 *
 * packet_write() encodes a plan: the question echoed in the client's case,
 * names compressed (owners and the rdata names RFC 3597 allows), each
 * RRset written whole or rolled back (mark -> write -> on -ENOSPC seek
 * back and set TC), space for the OPT record reserved up front.
 */
#include <stdbool.h>
#include <stdint.h>

#include "core/wire/dname.h"
#include "core/wire/rrset.h"

struct query;

/*
 * The answer plan: what answer.c decided, as pointers into the snapshot,
 * built on the stack for each query and encoded by packet_write().  It
 * lives here, next to its writer, so the codec needs nothing from the
 * zone layer.
 */
#define PLAN_SECTION_MAX 24

/*
 * Records encoded ahead, for data that is the same in every answer (the
 * per-site addresses in an HTTPS answer's Additional section, the HTTPS
 * set itself): one copy instead of a name search and a header per record.
 * Owners are compression pointers that packet_write fills in for where the
 * block lands, in one of two ways:
 *  - suffix mode: the first owner is its labels below `name` (the zone
 *    apex) then a pointer to `name`, at name_at; self_at lists the later
 *    owners, which point to the block's start.
 *  - owner mode: every owner (self_at) points to `name` itself.
 * `name` must already be in the message (the question holds the zone apex
 * and, unless a CNAME led there, the owner); when it is not, the block is
 * not used.
 */
struct plan_block {
	const uint8_t *data;
	uint16_t len;
	uint16_t records;
	const uint8_t *name;         /* lowercase wire name */
	uint8_t name_len;
	bool suffix;
	uint16_t name_at;            /* suffix mode: offset of the pointer to `name` */
	uint16_t n_self;
	const uint16_t *self_at;
};

struct plan_rrset {
	const uint8_t *owner;        /* lowercase wire name */
	const struct rrset *rrset;
	/* Non-NULL: write this instead; when it cannot be used, rrset (if any)
	 * is written the usual way. */
	const struct plan_block *block;
	uint32_t ttl;                /* TTL to write (negative answers lower the SOA's) */
	bool reversed;               /* geo pair: write rr[1] first (nearest first) */
	bool with_sig;               /* also write its RRSIG (DO=1, signed zone) */
	bool sig_only;               /* qtype RRSIG: write only the RRSIG */
};

struct plan_section {
	struct plan_rrset rr[PLAN_SECTION_MAX];
	uint8_t n;
};

/*
 * A CNAME synthesized from a DNAME (RFC 6672 2.2), made per query: the
 * plan holds it, since nothing in the snapshot does.  Unsigned; a chain of
 * DNAMEs synthesizes at most PLAN_SYNTH_MAX of them.
 */
#define PLAN_SYNTH_MAX 4

struct plan_synth {
	struct rrset rrset;
	struct rdata rd;
	uint8_t target[DNAME_MAX];
};

struct answer_plan {
	uint8_t rcode;
	bool aa;
	bool required_authority;     /* TC when authority does not fit (DNSSEC proofs) */
	struct plan_section an, ns, ar;
	uint8_t ecs_scope;           /* scope prefix for an ECS echo */
	int16_t geo_site[2];         /* sites a geo answer chose (-1 none), for the query log */
	bool geo_fail_open;          /* the geo answer failed open (no site was up) */
	uint8_t n_synth;             /* synth[] used */
	struct plan_synth synth[PLAN_SYNTH_MAX];
};


/*
 * Returns 0 when the message is a well-formed query, -EBADMSG when it is
 * malformed (q->rcode = FORMERR; a response can still be written if the
 * header parsed).  q->edns_ok says the OPT is parseable: every question
 * and record up to the end of the message walks, there is one OPT, in
 * the additional section, owned by the root, with its options framed
 * within its RDATA.  Then the answer carries an OPT whatever else is
 * wrong (QDCOUNT not 1, a malformed ECS or COOKIE: RFC 6891 7), and
 * q->edns.version is known for BADVERS (6.1.3); the options' contents
 * are read only when QDCOUNT is 1.  It returns
 * -EOPNOTSUPP for a message with an opcode other than QUERY and UPDATE that
 * does not parse as a query (q->rcode = NOTIMP: the opcode is judged first,
 * RFC 8490 5.4), or -EINVAL when it must be dropped silently (shorter than
 * a header, or a response: QR=1).
 */
int packet_parse(struct query *q);
/* Writes a response with the plan's sections. */
void packet_write(struct query *q, const struct answer_plan *plan);
/* Writes a header-and-question-only response with q->rcode (FORMERR, ...). */
void packet_write_error(struct query *q);
/* Writes the bare header of that response with TC set and every count 0,
 * for when not even the question fits with what must follow (a TSIG). */
void packet_write_truncated(struct query *q);
