/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The reload builder: builds a new generation (cmd/runtime.h,
 * generation_build: config, geo databases, zone files, the ACME zones'
 * records, signing) on a helper thread while the loop keeps answering
 * from the running generation, then hands it to the loop, which attaches
 * and swaps it between two queries.  One build at a time; serve.c
 * coalesces the SIGHUPs that arrive during a build into one more build
 * after it (doc/operations.md "Reloading").
 *
 * What the thread touches: its own generation (fresh signers, SQLite
 * connections of its own), the loop's clock (an atomic read), the metrics
 * registry (locked, core/conf/metrics.c) and the log.  Never the running
 * generation.  The reaper thread frees swapped-out generations after
 * generation_detach() (builder_dispose): their memory, SQLite connections
 * and the signers they alone held (the pool is locked, cmd/runtime.c).
 */
#include <stdbool.h>

struct builder;
struct diag;
struct generation;
struct loop;

/*
 * Called on the loop when a build ends: g the built (not yet attached)
 * generation, or NULL with the problems in d.  The callee owns g; d is
 * cleared after the call.
 */
typedef void (*builder_done_fn)(void *ctx, struct generation *g, struct diag *d);

/* NULL with err. */
struct builder *builder_new(struct loop *l, builder_done_fn fn, void *ctx, char err[256]);
/* Waits for a build under way (its generation is freed unused).  NULL-safe. */
void builder_free(struct builder *b);
/* Starts building from the config at path.  0, -EBUSY (one runs), or -errno with err. */
int builder_start(struct builder *b, const char *path, char err[256]);
bool builder_busy(const struct builder *b);
/*
 * A generation swapped out (or built and not used), on the loop: detached
 * there (generation_detach), then freed on a thread of the builder's (the
 * reaper, one at a time, beside builds), so the loop does not spend the
 * time it takes (0.7 s at 100 000 records).  b NULL, or no thread to be
 * had: freed on the spot.  builder_free() waits until all are freed.
 */
void builder_dispose(struct builder *b, struct generation *g);
