/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A zone served from a file, re-signed beside the loop (issue #26): a key
 * change of its rollover (dnssec/rollover.h) or signatures that reach their
 * refresh point.  The snapshot is built again from the served one
 * (zone_load_resign: records as loaded, geo names from the configuration)
 * and signed on a helper thread, and its IXFR difference from the served
 * one is made there too; the loop then only swaps it in
 * (zone_table_replace_diffed).  At 10 000 names a key change re-signed
 * 20 000 RRsets on the loop, 2.2 s without an answer.  One detached
 * thread per job, whose end wakes the loop (core/net/loop_job.h).
 *
 * What the thread touches: the job's inputs, which the caller keeps as they
 * are until the job is freed (the generation's config and sites; the served
 * snapshot, held with zone_hold: a zone from a file is never patched, so
 * nothing in it changes meanwhile), the signer (it locks its cache and keys,
 * dnssec/signer.h), the loop's clock through the signer, the metrics
 * registry (locked) and the log.  Never the zone table.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/conf/diag.h"

struct config;
struct config_zone;
struct geo_sites;
struct loop;
struct zone;
struct zone_signer;

struct resign_job_in {
	const struct config *cfg;
	const struct config_zone *zc;
	const struct geo_sites *sites;
	const struct zone_signer *signer;
	const struct zone *cur;          /* the served snapshot; the job holds it */
	bool diff;                       /* make the IXFR difference from cur */
};

/* What a job made, for the done callback to take (it owns z and diff then). */
struct resign_job_out {
	struct zone *z;                  /* NULL: the build failed (why: in d) */
	uint8_t *diff;                   /* z's difference from cur (zone_diff.h), or NULL */
	size_t diff_len;
	struct diag d;
	double ms;                       /* time on the thread */
};

struct resign_job;

/* Called on the loop when the job ends; the job is freed after it returns. */
typedef void (*resign_job_done_fn)(void *ctx, struct resign_job_out *out);

/* Starts a job.  NULL with err (no thread, no eventfd). */
struct resign_job *resign_job_start(struct loop *l, const struct resign_job_in *in,
                                    resign_job_done_fn fn, void *ctx, char err[256]);
/*
 * On the loop: the job will not be heard of again (its callback is not
 * called); it still runs until resign_job_free().  For a generation that
 * is swapped out while its job runs, freed later beside the loop.
 */
void resign_job_detach(struct resign_job *j);
/* Waits for the thread, frees what it made and the job.  NULL-safe. */
void resign_job_free(struct resign_job *j);
