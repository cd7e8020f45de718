/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Health checks of the geo sites, inside the one event loop: no threads,
 * no blocking calls.  For every site whose [sites.health] is enabled, each
 * `interval_ms` (measured from the start of one check to the start of the
 * next) a non-blocking TCP connect to the site's IPv4 address (else IPv6)
 * on `port`, bounded by `timeout_ms`; with `http_path`, then
 *   GET <path> HTTP/1.1 / Host: <http_host or site name> / Connection: close
 * and the status line must be "HTTP/1.x 2xx".
 *
 * `rise` consecutive successes make a dead site alive, `fall` consecutive
 * failures make an alive site dead; every change is logged (WARN going
 * down, INFO coming up) with the site and the reason, and written to the
 * geo_sites with geo_site_set_alive().  Sites without health checks are
 * set alive.  A site starts in whatever state geo_sites holds: alive for a
 * fresh table, or the previous state after geo_sites_copy_alive() on a
 * reload (counters restart, so a dead site needs `rise` successes).
 *
 * The prebuilt, presigned geo answer sets cover every site combination,
 * so a liveness change needs no re-signing; geo_sets_choose() reads the flag
 * on the next query.
 */
#include <stdbool.h>
#include <stddef.h>

struct config;
struct geo_sites;
struct loop;

struct health;

/*
 * Starts checking (the first round begins within a few milliseconds,
 * staggered by site).  `sites` must come from the same config `c` and
 * outlive the returned object.  Returns NULL with err filled when a
 * checked site has no address.
 */
struct health *health_new(struct loop *l, struct geo_sites *sites, const struct config *c,
                          char err[256]);
/* Stops every check: cancels timers, closes sockets.  NULL-safe. */
void health_free(struct health *h);

/* Optional: called after each liveness change (after the flag is set). */
typedef void (*health_change_fn)(void *arg, size_t site, bool alive);
void health_on_change(struct health *h, health_change_fn fn, void *arg);

/* Number of checks completed for site i (tests and diagnostics). */
unsigned long health_checks_done(const struct health *h, size_t site);
/* The last verdict for site i: "ok", why it failed, "pending" before the
 * first, or NULL when the site is not health-checked. */
const char *health_last_result(const struct health *h, size_t site);
