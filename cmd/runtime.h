/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A generation: everything that follows from one reading of the config
 * (zones, signers, geo sites and databases, the ACME zones, health checks,
 * the answer environment).  SIGHUP builds a new generation beside the
 * running one, on a helper thread (cmd/builder.h), and swaps it in on the
 * loop only when it is complete; on any error the old one keeps serving.
 */
#include <stdbool.h>
#include <stdint.h>

#include "core/net/cookie.h"
#include "core/zone/process.h"

struct config;
struct diag;
struct loop;
struct geo_sites;
struct geo_db;
struct health;
struct signer;
struct resign_slot;
struct zone_table;
struct acme;
struct query_log;
struct dnstap;
struct geo_sets;
struct xfr;
struct notify;
struct secondary;

struct generation {
	struct config *cfg;
	struct geo_sites *sites;
	struct geo_db *geo_db;
	struct health *health;
	struct signer **signers;     /* per config zone; NULL when unsigned */
	struct rollover **rolls;     /* per config zone; NULL without [zones.key_policy] */
	struct resign_slot *resigns; /* per config zone: a re-signing beside the loop (runtime.c) */
	struct zone_table *zones;
	struct acme *acme;
	struct xfr *xfr;              /* zone transfers out */
	struct notify *notify;        /* NOTIFY out; NULL in check mode */
	struct secondary *secondary;  /* zone_type = "Secondary"; NULL in check mode */
	struct process_env env;
	struct rrl *rrl;
	struct cookie_secret cookie;  /* kept across reloads so cookies stay valid */
	struct loop *loop;
	int64_t resign_timer;
	struct query_log *query_log; /* NULL: off */
	struct dnstap *dnstap;       /* NULL: off */
	bool *failing_open;          /* per geo name (generation_geo_names order) */
	bool health_settled;         /* every probe has a verdict: fail open is judged */
	bool check_only;
	bool detached;               /* generation_detach() ran */
};

/* A geo name the generation serves, with its answer sets. */
#define GENERATION_GEO_MAX 64
struct generation_geo {
	char fqdn[1024];
	const struct geo_sets *sets;
};
/* Fills out with the geo names in configuration order; returns how many. */
size_t generation_geo_names(const struct generation *g, struct generation_geo *out, size_t cap);

/*
 * The earliest RRSIG expiration of a served zone, as a unix time; 0 when it
 * is unsigned.  A secondary's copy: from its RRSIGs as received
 * (xfr/copy_sigs.h); a zone signed here: the earliest among the RRSIGs it
 * serves (zone_signature_expiry).  /metrics, /status.json, the page and ctl
 * zone-status.
 */
struct zone;
uint64_t generation_signature_expiry(const struct generation *g, const struct zone *z);

/*
 * Builds a generation from the config at `path`.  loop may be NULL (check
 * mode: no timers, no health checks, ACME databases opened read-only where
 * possible).  prev, when given, lends its health state.  Returns NULL with
 * every problem in d.
 */
struct generation *generation_new(const char *path, struct loop *loop,
                                  const struct generation *prev, bool check_only,
                                  struct diag *d);
/*
 * generation_new in its two halves, for a reload built off the loop
 * (cmd/builder.h).  generation_build: the config read, the geo databases
 * opened, signers made, every zone loaded, built and signed (the ACME
 * zones from their databases, each through a connection of its own); it
 * uses the loop only for its clock, so it runs on the builder thread
 * while the running generation answers.  NULL with every problem in d.
 * generation_attach, on the loop: what needs the loop or `prev` (the
 * running generation, NULL at start): the ACME changes prev committed
 * meanwhile (acme_attach; prev->acme must have captured them since before
 * the build began), secondaries, NOTIFY, health checks and their state,
 * database watches, logs, rate limiting, cookies, hooks and timers.
 * 0, or -EINVAL with the problems in d, or -EAGAIN (nothing in d) when a
 * change prev committed during the build needs the zone built whole
 * (acme_attach): build g again; g is then only fit for generation_free().
 * -EBUSY (the reason in d): a zone-file edit found its database locked
 * (acme_apply_file_edits); g likewise, nothing of that edit committed.
 */
struct generation *generation_build(const char *path, struct loop *loop, bool check_only,
                                    struct diag *d);
int generation_attach(struct generation *g, const struct generation *prev, struct diag *d);
/*
 * generation_free in two halves, so that a reload need not free the old
 * generation on the loop (at 100 000 records its record mirror alone took
 * 0.7 s to free).  generation_detach, on the loop: everything the loop
 * knows of let go (timers, health probes, sockets, NOTIFY, the transfers'
 * secondaries, replies waiting for a disk sync sent, the geo databases'
 * watch).  generation_free then frees the rest, memory, SQLite
 * connections and checkpoint threads, on any thread; called alone, on
 * the loop, it detaches first.  Both NULL-safe.
 */
void generation_detach(struct generation *g);
void generation_free(struct generation *g);
/*
 * Once every health probe has its first verdict (at once after a reload,
 * which carries the states over; after the first round at start, which
 * cmd/serve.c waits for): logs every site's state and starts judging fail
 * open.  Before that, sites not yet checked count as down, and a geo name
 * would look like it fails open when it only waits for its checks.
 */
void generation_health_settled(struct generation *g);
/* Logs what a reload changed: sites, zones (serials), databases (build dates). */
void generation_log_changes(const struct generation *old, const struct generation *g);
