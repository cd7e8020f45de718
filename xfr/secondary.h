/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * geoacme as a secondary (zone_type = "Secondary"): the zone is copied
 * from its `primaries` (another geoacme, Knot, BIND, ...) by IXFR, or AXFR
 * when the primary cannot give the difference, signed with the zone's TSIG
 * key when it has one, and served as received: its RRSIG, NSEC and DNSKEY
 * records as the primary signed them, no key needed here.
 *
 * Timers follow the SOA (RFC 1034 4.3.5): a check every `refresh`, every
 * `retry` after a failure, and the zone stops being served (it is dropped
 * from the zone table: REFUSED) once `expire` has passed since the copy was
 * last confirmed current.  A NOTIFY (RFC 1996) from one of the primaries'
 * addresses starts a check at once; from anyone else it is REFUSED.
 *
 * The copy is kept in SQLite (storage/copy.h), durably, before it is
 * served, with the time it was last confirmed, so a restart serves the
 * last copy until expire runs out and starts with a check.  Reading it
 * back (start, reload), building a copy whole and the durable commits run
 * on a helper thread (xfr/copy_build.h); the loop prepares and applies
 * patches and swaps snapshots.
 *
 * All of it runs from the event loop with non-blocking sockets: a transfer
 * never holds up queries.  UPDATEs for a secondary zone are REFUSED (this
 * zone has no ACME store; RFC 2136 section 6 forwarding is not done).
 */
#include <stdbool.h>
#include <stdint.h>

#include "core/hooks.h"

struct config_zone;
struct loop;
struct net_source;
struct secondary;
struct zone_table;

/* `t` and `l` must outlive the secondary. */
/* SOA checks and transfer requests leave from `src` (copied; core/net/source.h). */
struct secondary *secondary_new(struct zone_table *t, struct loop *l,
                                const struct net_source *src, char err[256]);
/* Closes transfers in flight and the databases; the zones stay in the table.  NULL-safe. */
void secondary_free(struct secondary *s);

/*
 * Adds the zone: its database (zc->journal_path) is looked at here (a
 * file that holds another zone is refused), then opened and its copy read
 * and built beside the loop (xfr/copy_build.h) once the loop runs; the
 * copy is served when that is done, unless it has expired, and the first
 * check follows.  Meanwhile the copy `prev` (the previous generation's
 * secondary, on a reload; NULL at start) serves for the same zone and
 * database is served here too; without one the zone is REFUSED until its
 * copy is read.  Returns 0 or a negative errno with err.
 */
int secondary_add_zone(struct secondary *s, const struct config_zone *zc,
                       const struct secondary *prev, char err[256]);

/* Number of secondary zones configured. */
size_t secondary_count(const struct secondary *s);

/* A secondary zone's state (`geoacme ctl zone-status`, /metrics). */
struct secondary_state {
	bool have_copy;             /* a copy is held (it may have expired) */
	bool serving;               /* ... and is served */
	uint32_t serial, refresh, retry, expire;   /* the copy's SOA */
	int64_t refreshed_at;       /* unix s the copy was last confirmed current; 0: never */
	int64_t next_check_at;      /* unix s of the next check; 0 while one runs */
	bool checking;              /* a check or transfer is in flight */
	int64_t signature_expiry;   /* unix s: the copy's earliest RRSIG expiration
	                             * (xfr/copy_sigs.h); 0 when it holds no RRSIG */
};
/* false when apex (lowercase wire name) is not a secondary zone here. */
bool secondary_zone_state(const struct secondary *s, const uint8_t *apex,
                          struct secondary_state *out);
/*
 * Checks the zone with its primaries now, as a NOTIFY would (a check in
 * flight runs again when it ends).  axfr: a full transfer (AXFR) instead
 * of IXFR; force (with axfr): the AXFR is taken even when its serial is
 * not newer than the copy's (a primary whose serial was reset,
 * doc/operations.md).  -ENOENT when not a secondary zone here.
 */
int secondary_refresh(struct secondary *s, const uint8_t *apex, bool axfr, bool force);
/* The NOTIFY handler for core (hooks.h: opcode NOTIFY). */
struct xfr_handler secondary_notify_handler(struct secondary *s);
