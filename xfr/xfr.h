/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Zone transfers out: AXFR (RFC 5936) and IXFR (RFC 1995) for every zone
 * we serve, static or ACME, to stock secondaries (Knot, NSD, BIND).
 *
 * IXFR: each zone keeps a history of differences between the snapshots it
 * served (core/zone/zone_diff.h), fed by xfr_zone_changed(), capped by
 * count and bytes (oldest dropped first).  A client that is current, and
 * any IXFR over UDP, gets the SOA alone; one whose serial the history
 * reaches gets the differences since, condensed into one; any other gets
 * the whole zone in AXFR form (RFC 1995 section 4).  A static zone's history
 * starts at each load; an ACME zone's is also kept in its database
 * (storage/journal.h) and handed back with xfr_history_add() at start.
 *
 * Why here and not in core: core answers queries and calls out only
 * through hooks.  Core hands AXFR and IXFR queries to the xfr_handler hook
 * (core/hooks.h); this module checks them against the zone's TSIG keys
 * (core/tsig/tsig.h) and answers over TCP with a stream of messages
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

#include <stddef.h>
#include <stdint.h>

struct config_zone;
struct loop;
struct xfr;
struct zone;
struct zone_table;

/* `t` must outlive the xfr; `l` (NULL: the system clock) gives TSIG its
 * time (the loop's clock, core/net/loop.h, so the test clock drives it). */
struct xfr *xfr_new(const struct zone_table *t, const struct loop *l, char err[256]);
void xfr_free(struct xfr *x);   /* NULL-safe; transfers in flight go on */

/*
 * Registers a zone's transfer settings (policy, axfr_from, its TSIG keys
 * with allow_axfr).  Returns 0 or a negative errno with err.
 */
int xfr_add_zone(struct xfr *x, const struct config_zone *zc, char err[256]);

/*
 * A signed request is answered once: its MAC is remembered per key
 * (core/tsig/replay.h) and a replay within the fudge window gets NOTAUTH with
 * BADTIME, as a replayed UPDATE does.  After a reload, x keeps what prev
 * remembered for each key of the same zone, name and algorithm.
 */
void xfr_keep_replay(struct xfr *x, const struct xfr *prev);

/*
 * A zone is served with a new snapshot (old NULL: first served): records
 * the difference in the zone's history.  A serial that did not move
 * forward (RFC 1982) clears the history.
 */
void xfr_zone_changed(struct xfr *x, const struct zone *old, const struct zone *z);
/*
 * Appends a difference (a zone_diff blob, copied) to a zone's history; one
 * that does not continue it starts it anew.  -ENOENT: not a zone of ours.
 */
int xfr_history_add(struct xfr *x, const uint8_t *apex, const uint8_t *blob, size_t len);
/* Forgets a zone's history (IXFR from before now is then answered whole). */
void xfr_history_clear(struct xfr *x, const uint8_t *apex);

/* The handler for core (hooks.h). */
struct xfr_handler xfr_handler(struct xfr *x);
