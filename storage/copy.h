/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A secondary's copy of a zone (zone_type = "Secondary"), in the same
 * database layout as an ACME zone (db.h): the records as last received
 * from a primary, the apex, and when the copy was last confirmed current
 * ('refreshed_at' in meta, unix seconds), so a restart serves the last copy
 * until the SOA expire runs out, counted from that moment.
 *
 * Each call is one transaction, durable when it returns (synchronous=FULL:
 * its COMMIT syncs the WAL), so a received transfer is on disk before it
 * is served: the callers run copy_replace and copy_apply on a helper
 * thread (xfr/copy_build.h), not on the loop.  copy_touch alone runs on
 * the loop and is not synced: it only moves refreshed_at, and losing that
 * in a crash makes the copy look older than it is (it expires sooner),
 * never newer; the next synced commit (or checkpoint) makes it durable.
 */
#include <stdint.h>

struct change_list;
struct db;

/* An AXFR: every row replaced by `adds` (CHANGE_ADD entries). -EIO on error. */
int copy_replace(struct db *db, const struct change_list *adds, const uint8_t *apex,
                 int64_t now);
/* An IXFR: the deletions and additions applied in order. -EIO on error. */
int copy_apply(struct db *db, const struct change_list *cl, int64_t now);
/* The primary said the copy is current: only the time moves (not synced, above). */
int copy_touch(struct db *db, int64_t now);
/* When the copy was last confirmed current: 0 and *at, -ENOENT (never), -EIO. */
int copy_refreshed_at(struct db *db, int64_t *at);
