/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The few interfaces through which core calls out.  Core never names acme
 * or dnssec; cmd/serve.c fills these in (Knot's stage hooks, OpenSMTPD's
 * backend structs).
 */
#include <stdint.h>

#include "core/zone/zone.h"

struct arena;
struct query;
struct rrset;
struct zone;
struct zone_patch;

/*
 * Handles a message core does not answer itself: opcode UPDATE, and any
 * message that carries a TSIG record (signed queries must get signed
 * responses).  The handler writes the complete response into q->tx and
 * sets q->tx_len (0 = drop).  It may replace zones in the zone table.
 * Returns 0, or a negative errno when it could not answer at all (core
 * then answers SERVFAIL).
 */
struct update_handler {
	void *ctx;
	int (*handle)(void *ctx, struct query *q);
};

/*
 * Handles zone transfer requests (opcode QUERY, qtype AXFR or IXFR), and,
 * as a second instance, NOTIFY messages (opcode NOTIFY), signed with TSIG
 * or not: these handlers check signatures themselves.  It answers
 * like the update handler, or, over TCP, leaves q->tx_len 0 and sets
 * q->stream to send the transfer as several messages (core/wire/query.h).
 * Returns 0, or a negative errno (core answers SERVFAIL).
 */
struct xfr_handler {
	void *ctx;
	int (*handle)(void *ctx, struct query *q);
};

/*
 * Signs a snapshot while it is being built: adds DNSKEY (and CDS/CDNSKEY),
 * the NSEC chain, and an RRSIG on every authoritative RRset, reusing cached
 * signatures by RRset content.  Sets the zone's refresh point through
 * zone_builder_set_expiry(), and what it made anew through
 * zone_builder_set_signatures_made().  Returns 0 or a negative errno, with a message
 * in err.
 */
struct zone_signer {
	void *ctx;
	int (*sign)(void *ctx, struct zone_builder *b, char err[256]);
	/*
	 * Signs one RRset made after its snapshot was frozen (a geo pair built
	 * on first use, when a geo name has too many sites to sign every pair
	 * ahead); the RRSIG is allocated in `a`, the snapshot's arena.  The
	 * signer outlives every snapshot it signed.  Returns 0 or -errno.
	 */
	int (*sign_rrset)(void *ctx, const uint8_t *owner, struct rrset *rrset, struct arena *a);
	/*
	 * Signs a patch of a served snapshot (core/zone/zone_patch.h) while it
	 * is prepared: writes the NSEC records it asks for and signs every
	 * RRset left unsigned, in the snapshot's arena.  NULL: patches are not
	 * possible (the zone is built whole).  Returns 0 or -errno with err.
	 */
	int (*patch)(void *ctx, struct zone_patch *p, char err[256]);
	/*
	 * Renews a signed RRset's RRSIG if it is due for refresh (a new one in
	 * `a`, the snapshot's arena), and sets *refresh_at to the RRset's
	 * refresh point afterwards.  Returns 1 renewed, 0 still good, -errno.
	 * NULL: signatures are renewed by building the snapshot whole.
	 */
	int (*renew)(void *ctx, const uint8_t *owner, struct rrset *rrset, struct arena *a,
	             uint64_t *refresh_at);
	/*
	 * An RRset a patch took out of the served snapshot (replaced by other
	 * content, or gone): its signatures are no longer served, so the
	 * signer may drop what it keeps of them.  Called by zone_patch_apply();
	 * must not fail.  NULL: nothing to drop.
	 */
	void (*forget)(void *ctx, const uint8_t *owner, const struct rrset *rrset);
	/*
	 * A build beside the loop starts (on) or ends: until it ends, forget
	 * keeps what it would drop (the build may sign that content, from the
	 * records it read before the patch).  Counted; any thread.  NULL: none.
	 */
	void (*building)(void *ctx, bool on);
	/*
	 * The signer's clock, unix seconds: the loop's in the server (so the
	 * test clock drives it), which is also what a signed zone's serial is
	 * raised to (core/zone/zone_load.c).  Never NULL.
	 */
	uint64_t (*now)(void *ctx);
};

void zone_builder_set_expiry(struct zone_builder *b, uint64_t refresh_at);
/* How many of its signatures the signer made anew, not from its cache
 * (zone_signatures_made(): a reload that kept every signature). */
void zone_builder_set_signatures_made(struct zone_builder *b, uint64_t n);
