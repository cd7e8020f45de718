/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Health checks of the geo sites, inside the one event loop: no threads,
 * no blocking calls.  For every site whose [sites.health] is enabled there
 * is one probe per address the site has (IPv4 and IPv6 apart), and each
 * probe's verdict is that family's liveness: A answers follow the IPv4
 * probe, AAAA answers the IPv6 probe.
 *
 * A probe, every `interval_ms` (from the start of one check to the start
 * of the next), bounded by `timeout_ms` from connect to verdict:
 *   - a non-blocking TCP connect to the address on `port`;
 *   - with `tls` (the default for HTTP on port 443): a TLS handshake with SNI
 *     `http_host`, the certificate verified against `ca_file` or the
 *     system store and the name `http_host`, unless `verify` is false
 *     (health_tls.h);
 *   - with `http_path`: GET <path> HTTP/1.1, Host: <http_host>,
 *     Connection: close; the status code must be in `http_status`
 *     (default 200..399: a redirect is a working site).
 *
 * `rise` consecutive successes make a dead probe alive, `fall` consecutive
 * failures make an alive one dead; every change is logged (WARN going
 * down, INFO coming up) with site, family, address and reason, and written
 * to the geo_sites with geo_site_set_alive().
 *
 * Start: a probe whose liveness was not carried over from a previous
 * generation (geo_sites_copy_alive) starts dead and its first check
 * decides at once, either way (logged "is in service" or "is down ...
 * (first check)"); so no site is answered before one check
 * has passed.  health_first_round_done() says when every probe has had
 * its first verdict (bounded by the largest timeout plus the stagger), so
 * the server can wait for it before it reports ready.  A carried probe
 * keeps its state and counts rise/fall from zero.  Sites without health
 * checks are set alive in both families.
 *
 * The prebuilt, presigned geo answer sets cover every site combination,
 * so a liveness change needs no re-signing; the geo rule reads the flags
 * on the next query (its decision cache is keyed on the liveness state).
 */
#include <stdbool.h>
#include <stddef.h>

#include "core/geo/geo_sites.h"   /* enum geo_family */

struct config;
struct loop;

struct health;

/*
 * Starts checking (the first round begins within a few milliseconds,
 * staggered by probe).  `sites` must come from the same config `c` and
 * outlive the returned object.  Returns NULL with err filled when a
 * checked site has no address or its TLS settings cannot be loaded.
 */
struct health *health_new(struct loop *l, struct geo_sites *sites, const struct config *c,
                          char err[256]);
/* Stops every check: cancels timers, closes sockets.  NULL-safe. */
void health_free(struct health *h);

/* Optional: called after each liveness change (after the flag is set). */
typedef void (*health_change_fn)(void *arg, size_t site, enum geo_family f, bool alive);
void health_on_change(struct health *h, health_change_fn fn, void *arg);

/* Every probe has given its first verdict (true when there are none). */
bool health_first_round_done(const struct health *h);
/* Optional: called once, when the first round completes (never if it
 * already has: check health_first_round_done() first). */
void health_on_first_round(struct health *h, void (*fn)(void *arg), void *arg);

/* Number of checks completed for site i, both families (tests and diagnostics). */
unsigned long health_checks_done(const struct health *h, size_t site);
/* The last verdict for site i: "ok" (every probe), why a probe failed
 * ("IPv6: ..." when the site has both families), "pending" before every
 * probe has one, or NULL when the site is not health-checked. */
const char *health_last_result(const struct health *h, size_t site);
