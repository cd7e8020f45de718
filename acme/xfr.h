#pragma once
/*
 * Zone transfers out: AXFR (RFC 5936) for every zone we serve, static or
 * ACME, to stock secondaries (Knot, NSD, BIND).  An IXFR (RFC 1995) is
 * answered with the single SOA when the client is current (and always over
 * UDP), else with the whole zone in AXFR form, which RFC 1995 section 4
 * allows a server without the history to send.
 *
 * Why here and not in core: a transfer is checked against TSIG keys
 * (acme/tsig.c), which core may not call.  Core hands AXFR and IXFR queries to the xfr_handler hook
 * (core/hooks.h); this module answers over TCP with a stream of messages
 * (core/wire/query.h), which core/net/tcp.c sends as the client reads.
 *
 * What is sent is the snapshot being served when the request arrives, held
 * (zone_hold) until the last message is out, so an UPDATE in the middle of
 * a transfer neither tears it nor waits for it.  A signed zone goes out
 * with its DNSKEY, CDS/CDNSKEY, NSEC and RRSIG records: a secondary serves
 * it validated without the key.  A geo name goes out as its fixed fallback
 * set (geo_sets_fallback), signed like the rest.
 *
 * Access (Hickory's axfr_policy): Deny (default) refuses; AllowAll takes
 * anyone; AllowSigned takes requests signed with a TSIG key of the zone
 * that has allow_axfr.  axfr_from, when set, restricts either to those
 * addresses.  A signed request is answered with every message signed (RFC
 * 8945 5.3.1).  Refusals are logged with the key and the address.
 */
#include "core/hooks.h"

struct config_zone;
struct xfr;
struct zone_table;

/* `t` must outlive the xfr. */
struct xfr *xfr_new(const struct zone_table *t, char err[256]);
void xfr_free(struct xfr *x);   /* NULL-safe; transfers in flight go on */

/*
 * Registers a zone's transfer settings (policy, axfr_from, its TSIG keys
 * with allow_axfr).  Returns 0 or a negative errno with err.
 */
int xfr_add_zone(struct xfr *x, const struct config_zone *zc, char err[256]);

/* The handler for core (hooks.h). */
struct xfr_handler xfr_handler(struct xfr *x);
