/* SPDX-License-Identifier: MIT */
/*
 * A large UPDATE committed in stages (see staged.h).
 */
#include "acme/staged.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acme/acme_internal.h"
#include "acme/commit.h"
#include "acme/update.h"
#include "core/conf/log.h"
#include "core/conf/sysclock.h"
#include "core/net/loop.h"
#include "core/test_hooks.h"
#include "core/wire/change.h"
#include "storage/journal.h"

struct staged {
	struct change_list cl;       /* the UPDATE's changes, its serial's bump included */
	uint32_t serial;
	size_t next;                 /* the first record of the next slice */
	size_t slices;
	bool open;                   /* the write transaction is */
	bool done;
	bool held;                   /* the test hook's pause was taken */
	int result;
	int64_t timer;
	struct commit_staged *prepared;   /* the mirror changed, the patch under way */
	bool ready;                  /* ... and prepared */
	double writing_ms;
	struct timespec started;
	char what[512];
};

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	sysclock_mono_ts(&t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

bool staged_wanted(const struct acme_zone *az, const struct change_list *cl)
{
	/* Group commit only: with a sync in COMMIT the loop waits for the
	 * disk anyway, and a held reply needs the durable books. */
	return !az->staged && az->a->l && az->attached && az->dur && cl->n >= STAGED_MIN;
}

bool staged_busy(const struct acme_zone *az)
{
	return az->staged && !az->staged->done;
}

bool staged_open(const struct acme_zone *az)
{
	return az->staged && az->staged->open;
}

static void settle(struct acme_zone *az, int result)
{
	struct staged *st = az->staged;
	st->done = true;
	st->open = false;
	st->result = result;
	change_list_clear(&st->cl);
}

static void step(struct loop *l, void *arg);

static void next_step(struct acme_zone *az, uint32_t ms)
{
	struct staged *st = az->staged;
	int64_t id = loop_timer_add(az->a->l, ms, step, az);
	if (id > 0) {
		st->timer = id;
		return;
	}
	log_error("%s: cannot schedule the next stage of a large UPDATE; it is not committed",
	          az->name);
	if (st->prepared)
		commit_staged_abandon(az, &st->cl, st->prepared);
	else
		journal_stage_abandon(az->db);
	st->prepared = NULL;
	settle(az, -ENOMEM);
}

/*
 * A test hook (core/test_hooks.h): halfway through its records, the
 * stage waits this long, so a test sees the UPDATE half written.
 */
static uint32_t hold_ms(const struct acme_zone *az, struct staged *st)
{
	if (st->held || st->next < st->cl.n / 2)
		return 0;
	st->held = true;
	const char *hold = test_hook(TEST_HOOK_STAGED_HOLD);
	uint32_t ms = hold ? (uint32_t)strtoul(hold, NULL, 10) : 0;
	if (ms)
		log_info("%s: a large UPDATE's commit waits %u ms with %zu of its %zu records written "
		         "(%s)", az->name, ms, st->next, st->cl.n, test_hook_name(TEST_HOOK_STAGED_HOLD));
	return ms;
}

static void step(struct loop *l, void *arg)
{
	struct acme_zone *az = arg;
	struct staged *st = az->staged;
	(void)l;
	st->timer = 0;
	if (st->next < st->cl.n) {
		size_t n = st->cl.n - st->next;
		if (n > STAGED_SLICE)
			n = STAGED_SLICE;
		if (journal_stage_records(az->db, &st->cl, st->next, n) < 0) {
			log_error("%s: a large UPDATE could not be written to %s; not committed",
			          az->name, az->journal_path);
			settle(az, -EIO);   /* rolled back */
			return;
		}
		st->next += n;
		st->slices++;
		next_step(az, hold_ms(az, st));
		return;
	}
	if (!st->prepared || !st->ready) {
		/* All written: the mirror changed and the patch given its names
		 * in one round, prepared in the next, the served zone untouched;
		 * the commit in the one after. */
		int ret;
		if (!st->prepared) {
			st->writing_ms = ms_since(&st->started);
			ret = commit_staged_names(az, &st->cl, &st->prepared);
		} else {
			ret = commit_staged_prepare(az, &st->cl, st->prepared);
			st->ready = ret == 0;
		}
		if (ret < 0) {
			st->prepared = NULL;   /* freed, rolled back, the mirror as it was */
			settle(az, ret);
			return;
		}
		next_step(az, 0);
		return;
	}
	/* The difference, COMMIT, the sync started, the patch applied. */
	struct commit_staged *cs = st->prepared;
	st->prepared = NULL;
	int ret = commit_staged_finish(az, &st->cl, cs);
	st->open = false;
	if (ret == 0)
		log_info("%s: a large UPDATE's %zu records written in %zu slices over %.0f ms, then "
		         "prepared and committed in three rounds: %.2f ms (SQLite %.2f ms)", az->name,
		         st->cl.n, st->slices, st->writing_ms, az->last_ms, az->last_commit_ms);
	settle(az, ret);
}

int staged_start(struct acme_zone *az, struct change_list *cl, const char *what)
{
	struct staged *st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	uint32_t serial = 0;
	int ret = commit_stage_ready(az, cl, &serial);
	if (ret < 0) {
		free(st);
		return ret;
	}
	ret = journal_stage_begin(az->db);
	if (ret < 0) {
		/* -EBUSY: another process holds the lock.  The bump is taken
		 * back with the list, handled again from the start. */
		free(st);
		return ret;
	}
	st->cl = *cl;
	change_list_init(cl);
	st->serial = serial;
	st->open = true;
	snprintf(st->what, sizeof(st->what), "%s", what);
	sysclock_mono_ts(&st->started);
	az->staged = st;
	log_info("%s: an UPDATE of %zu changes is committed in stages, %d records per loop round",
	         az->name, st->cl.n, STAGED_SLICE);
	next_step(az, 0);
	return 0;
}

int staged_take(struct acme_zone *az, int *result, uint32_t *serial, char *what,
                size_t what_cap)
{
	struct staged *st = az->staged;
	if (!st || !st->done)
		return 0;
	*result = st->result;
	*serial = st->serial;
	snprintf(what, what_cap, "%s", st->what);
	free(st);
	az->staged = NULL;
	return 1;
}

void staged_cancel(struct acme_zone *az)
{
	struct staged *st = az->staged;
	if (!st)
		return;
	if (st->timer > 0)
		loop_timer_cancel(az->a->l, st->timer);
	if (st->prepared)
		commit_staged_abandon(az, &st->cl, st->prepared);
	else if (st->open)
		journal_stage_abandon(az->db);
	if (st->open) {
		log_warn("%s: a large UPDATE was not committed: the zone left the loop first",
		         az->name);
	}
	change_list_clear(&st->cl);
	free(st);
	az->staged = NULL;
}
