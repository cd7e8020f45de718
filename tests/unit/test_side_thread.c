/* SPDX-License-Identifier: MIT */
/* Threads beside the loop: no signals, and below the loop on a shared core. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/conf/side_thread.h"
#include "tests/unit/check.h"

struct seen {
	int policy;
	int nice;
	int hup_blocked;
};

static void *lowered(void *arg)
{
	struct seen *s = arg;
	side_thread_lower(10, "test");
	s->policy = sched_getscheduler(0);
	errno = 0;
	s->nice = getpriority(PRIO_PROCESS, (id_t)gettid());
	sigset_t now;
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	s->hup_blocked = sigismember(&now, SIGHUP);
	return NULL;
}

int main(void)
{
	struct seen s = { -1, -1, -1 };
	pthread_t t;
	is_int(side_thread_start(&t, lowered, &s), 0, "side thread started");
	is_int(pthread_join(t, NULL), 0, "side thread joined");
	/* SCHED_IDLE: a loop that wakes takes the core at once, where a nice
	 * thread kept it until the next tick (bench/stall.sh, issue #26). */
	is_int(s.policy, SCHED_IDLE, "the side thread is SCHED_IDLE");
	is_int(s.nice, 10, "and at nice 10 (where SCHED_IDLE is refused)");
	is_int(s.hup_blocked, 1, "signals are blocked in it");
	/* The caller's thread is untouched. */
	is_int(sched_getscheduler(0), SCHED_OTHER, "the loop's thread stays SCHED_OTHER");
	is_int(getpriority(PRIO_PROCESS, (id_t)gettid()), 0, "at nice 0");
	return done_testing();
}
