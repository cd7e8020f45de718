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

struct query;
struct answer_plan;

/*
 * Returns 0 when the message is a well-formed query, -EBADMSG when it is
 * malformed (q->rcode = FORMERR; a response can still be written if the
 * header parsed), or -EINVAL when it must be dropped silently (shorter
 * than a header, or a response: QR=1).
 */
int packet_parse(struct query *q);
/* Writes a response with the plan's sections. */
void packet_write(struct query *q, const struct answer_plan *plan);
/* Writes a header-and-question-only response with q->rcode (FORMERR, ...). */
void packet_write_error(struct query *q);
