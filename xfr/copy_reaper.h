/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A secondary's swapped-out copy, freed on a thread beside the loop.  A
 * copy of a million records is hundreds of megabytes of snapshot arena;
 * the loop that swapped in the new copy used to free the old one in the
 * same round (issue #26).  One reaper per zone, one copy at a time: the
 * next copy is swapped out at least a transfer and a build later, so the
 * join before it never waits in practice.
 */
#include <pthread.h>
#include <stdbool.h>

struct zone;

struct copy_reaper {
	pthread_t thread;
	bool running;            /* a thread was started and not joined yet */
};

/*
 * Lets go of the caller's hold on z (NULL-safe).  When it is the last hold
 * the copy is freed beside the loop, else (an outgoing transfer still
 * reads it) the hold is just dropped and the last holder frees it; a
 * thread that cannot start frees it here, as before.
 */
void copy_reaper_free(struct copy_reaper *r, struct zone *z);

/* Waits for the copy being freed, if any (the zone goes, the server stops). */
void copy_reaper_join(struct copy_reaper *r);
