/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The stale-challenge purge: TXT records added by UPDATE at least
 * stale_txt_age_s ago are removed through the update path (commit.h), by
 * a loop timer per zone: up to 64 records per transaction and serial bump,
 * the rest on the following loop turns.  Records from the zone file
 * (created_at 0) stay.
 */
#include <stdint.h>

struct acme_zone;

/* Removes the zone's stale TXT records as of `now` (unix seconds), 64 at
 * most (the timer calls it again at once while more are left).  Returns
 * the number removed, or a negative errno. */
int purge_stale(struct acme_zone *az, int64_t now);
/* Arms the zone's timer (no loop or stale_txt_age_s 0: nothing to do). */
void purge_schedule(struct acme_zone *az);
/* Disarms it.  Safe when not armed. */
void purge_cancel(struct acme_zone *az);
