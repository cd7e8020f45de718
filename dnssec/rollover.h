/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Automatic key rollover of one zone ([zones.key_policy], doc/dnssec.md):
 * a combined signing key rolled by double signature (RFC 7583 section
 * 3.3.2, RFC 6781 section 4.1.2), driven by a loop timer on the loop's one
 * clock.  The steps, each persisted in the key store (dnssec/keystore.h)
 * before it takes effect, so kill -9 at any point resumes:
 *
 *   1. the new key (a standby key, or one generated in key_dir) is
 *      published and signs beside the old one;
 *   2. after max(dnskey_ttl, the zone's longest TTL) + propagation_delay,
 *      CDS/CDNSKEY name the new key and its DS is pushed (ds_push);
 *   3. the parent's servers are asked for the DS until every one serves
 *      the new one; then DS TTL + propagation_delay;
 *   4. the old key stops signing and leaves the DNSKEY set;
 *   5. after dnskey_ttl + propagation_delay it is retired, and its file
 *      deleted when geoacme generated it.
 *
 * Outgoing queries and the UPDATE are UDP datagrams through the loop,
 * never waited for, from the server's outgoing source address
 * (core/net/source.h), as NOTIFY and transfer requests: a parent's ACL that
 * names our address lets the push in.  An answer to a TSIG-signed push
 * counts only when its TSIG verifies (RFC 8945 section 5.4).  Process objects: one per zone with a key policy and
 * generation; the state is on disk, so a reload makes a new one.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config_zone;
struct loop;
struct net_source;
struct signer;

struct rollover;

/*
 * Called when the key set changed: re-sign the zone with the signer's new
 * keys and serve it, then call rollover_resigned() (at once, or later when
 * the re-signing runs beside the loop).  The rollover does not move on
 * meanwhile: each step's waits count from when its signatures are served.
 */
typedef void (*rollover_rebuild_fn)(void *arg, const char *zone);

/*
 * Loads (or starts) the zone's key store: the [[zones.keys]] entries join
 * it (the first as the active key when the store has none, the others as
 * standby keys), a key is generated in key_dir when there is none at all.
 * Writes nothing when loop is NULL (check mode).  src (copied; NULL: the
 * kernel picks) is where queries to the parent and the push leave from.
 * NULL with err.
 */
struct rollover *rollover_new(const struct config_zone *zc, struct loop *loop,
                              const struct net_source *src, char err[256]);
void rollover_free(struct rollover *r);   /* NULL-safe */

/* A key file the signer can be made with (the first signing key). */
const char *rollover_first_key(const struct rollover *r);

/*
 * Gives the rollover the zone's signer: sets its keys and DNSKEY TTL, and
 * starts the timer.  rebuild(arg, zone) is called after every change of the
 * key set.  0 or -errno with err.
 */
int rollover_attach(struct rollover *r, struct signer *s, rollover_rebuild_fn rebuild, void *arg,
                    char err[256]);
/*
 * On the loop, once the generation is attached: the first step of the
 * state machine is scheduled (rollover_attach may run on the reload
 * builder thread, cmd/builder.h, which must not touch the loop's timers).
 */
void rollover_schedule_first(struct rollover *r);

/*
 * The zone is served signed with the key set of the last rebuild call: the
 * step's time is set to now (and written), and the rollover goes on.
 * Nothing when no re-signing was awaited.
 */
void rollover_resigned(struct rollover *r);
/* A rebuild call not yet followed by rollover_resigned() (NULL-safe). */
bool rollover_awaits_resign(const struct rollover *r);

/*
 * `geoacme ctl key-roll`: starts a rollover now.  -EBUSY while one runs or
 * a key change is being written or signed, another -errno with err.  Its
 * first step (a key generated, the store written) is done beside the loop:
 * 1, and fn(arg, token, ok, text) is called on the loop once it is on disk
 * and takes effect (text: ok_text, copied) or failed (text: why); not at
 * all when the rollover is freed first.  0: done already, fn was called.
 */
typedef void (*rollover_started_fn)(void *arg, uint64_t token, bool ok, const char *text);
int rollover_start(struct rollover *r, rollover_started_fn fn, void *arg, uint64_t token,
                   const char *ok_text, char err[256]);

/* `geoacme ctl key-status`: each key, its state and times, and the next
 * transition, as text lines.  Returns the length written (cut at cap). */
size_t rollover_status(const struct rollover *r, char *out, size_t cap);

/* /metrics sample lines for this zone, of one family at a time (the text
 * format wants each family's samples together, after its HELP and TYPE):
 * geoacme_dnssec_key_state, or geoacme_dnssec_key_next_transition_seconds.
 * Returns the length written (cut at cap). */
enum rollover_metric { ROLLOVER_METRIC_KEY_STATE, ROLLOVER_METRIC_NEXT_TRANSITION };
size_t rollover_metrics(const struct rollover *r, enum rollover_metric which, char *out,
                        size_t cap);

/*
 * Check mode: notes about the config against the key store (a [[zones.keys]]
 * entry that the store says is retired), one per line, into out.  Returns
 * how many notes.
 */
int rollover_check_notes(const struct config_zone *zc, char *out, size_t cap);
