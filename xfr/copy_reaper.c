/* SPDX-License-Identifier: MIT */
/*
 * A swapped-out copy freed beside the loop (see copy_reaper.h).
 */
#include "xfr/copy_reaper.h"

#include "core/conf/side_thread.h"
#include "core/zone/zone.h"

static void *reap(void *arg)
{
	side_thread_lower(19, "a secondary's old copy freed");
	zone_free(arg);
	return NULL;
}

void copy_reaper_join(struct copy_reaper *r)
{
	if (r->running)
		pthread_join(r->thread, NULL);
	r->running = false;
}

void copy_reaper_free(struct copy_reaper *r, struct zone *z)
{
	if (!z)
		return;
	/* Only the last hold goes to the thread: the count is the loop's, and
	 * a zone another holder still reads is not the thread's to touch. */
	if (zone_refs(z) != 1) {
		zone_free(z);
		return;
	}
	copy_reaper_join(r);
	if (side_thread_start(&r->thread, reap, z) == 0)
		r->running = true;
	else
		zone_free(z);
}
