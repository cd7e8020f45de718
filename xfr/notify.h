/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * NOTIFY out (RFC 1996): whenever a zone's serial changes (an UPDATE, a
 * stale purge, a re-signing, a reload, and once at start), each address in
 * the zone's `notify` list gets a NOTIFY for the zone's SOA, so its
 * secondaries fetch the change now rather than at their next refresh.
 *
 * Everything runs from the event loop and nothing waits: a NOTIFY is one
 * datagram from a non-blocking socket, and an unanswered one is sent again
 * after 1, 2, 4 ... seconds (at most 60 between tries) until the
 * secondary answers or a newer serial replaces it.  When the zone has a
 * TSIG key with allow_axfr and its axfr_policy is AllowSigned, NOTIFYs are
 * signed with the first such key (secondaries commonly require it).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config_zone;
struct loop;
struct net_source;
struct notify;
struct zone;

/* NOTIFYs leave from `src` (copied; core/net/source.h). */
struct notify *notify_new(struct loop *l, const struct net_source *src, char err[256]);
void notify_free(struct notify *n);   /* NULL-safe; cancels retries */

/* Registers a zone's targets (nothing to do when the list is empty). */
int notify_add_zone(struct notify *n, const struct config_zone *zc, char err[256]);

/*
 * A zone is served with this snapshot (zone_table_watch_fn): when its
 * serial differs from the last one announced, NOTIFY every target.
 */
void notify_zone_changed(struct notify *n, const struct zone *z);

/*
 * Each target's state (`geoacme ctl zone-status`, /metrics): the last
 * serial it acknowledged, and since when it has left a NOTIFY unanswered
 * (an episode: from the first NOTIFY it did not answer to its next answer).
 * A NOTIFY is only pending until its first wait for an answer (1 s) ends
 * without one (RFC 1996 3.6: then it is sent again); from then on the
 * target is unanswered, since the episode's first NOTIFY was sent.
 * NOTIFY_WARN_MS into an episode one warning names the target, once per
 * episode.  The state is the generation's: a reload starts it afresh.
 */
struct notify_target_state {
	char target[64];            /* "192.0.2.2:53", "[2001:db8::2]:53" */
	bool acked;                 /* has answered; acked_serial is the serial of its last answer */
	uint32_t acked_serial;
	bool pending;               /* a NOTIFY is out, unanswered; pending_serial is its serial */
	uint32_t pending_serial;
	int64_t unanswered_since;   /* unix s the episode's first NOTIFY was sent; 0 when not in
	                               one, or while that NOTIFY is still only pending */
};
/* Fills at most cap; returns the zone's number of targets (0: none, or not a zone here). */
size_t notify_targets(const struct notify *n, const uint8_t *apex,
                      struct notify_target_state *out, size_t cap);
/* NOTIFY every target again with the current serial.  -ENOENT: no targets. */
int notify_resend(struct notify *n, const uint8_t *apex);
