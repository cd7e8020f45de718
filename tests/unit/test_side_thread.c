/* SPDX-License-Identifier: MIT */
/* Threads beside the loop: no signals, and below the loop on a shared core. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <stdio.h>
#include <unistd.h>

#include "core/conf/side_thread.h"
#include "tests/unit/check.h"

struct seen {
	long long slice_ns;
	int policy;
	int nice;
	int hup_blocked;
};

static void *lowered(void *arg)
{
	struct seen *s = arg;
	side_thread_lower(10, "test");
	s->policy = sched_getscheduler(0);
	uint64_t attr[7] = { 0 };   /* struct sched_attr, its first version: 56 bytes */
	s->slice_ns = syscall(SYS_sched_getattr, (pid_t)gettid(), attr, sizeof(attr), 0) == 0
	            ? (long long)attr[3] : -1;
	errno = 0;
	s->nice = getpriority(PRIO_PROCESS, (id_t)gettid());
	sigset_t now;
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	s->hup_blocked = sigismember(&now, SIGHUP);
	return NULL;
}

static long long slice_of_this_thread(void)
{
	uint64_t attr[7] = { 0 };   /* struct sched_attr, its first version: 56 bytes */
	return syscall(SYS_sched_getattr, (pid_t)gettid(), attr, sizeof(attr), 0) == 0
	       ? (long long)attr[3] : -1;
}

int main(void)
{
	struct utsname u;
	unsigned major = 0, minor = 0;
	if (uname(&u) == 0)
		sscanf(u.release, "%u.%u", &major, &minor);
	bool slices = major > 6 || (major == 6 && minor >= 12);   /* EEVDF's custom slices */

	/* The loop's thread: the shortest slice, so that it has the earliest
	 * deadline and takes the core back from a side thread as it wakes. */
	side_thread_loop_first();
	if (slices)
		is_int(slice_of_this_thread(), 100000, "the loop has a 0.1 ms slice (kernel %s)",
		       u.release);

	struct seen s = { -1, -1, -1, -1 };
	pthread_t t;
	is_int(side_thread_start(&t, lowered, &s), 0, "side thread started");
	is_int(pthread_join(t, NULL), 0, "side thread joined");
	/* A normal thread (SCHED_IDLE ones starved behind any other load),
	 * niced, with the kernel's default slice, not the loop's it inherited. */
	is_int(s.policy, SCHED_OTHER, "the side thread is SCHED_OTHER");
	is_int(s.nice, 10, "at nice 10");
	if (slices)
		ok(s.slice_ns > 100000, "with the default slice, longer than the loop's (%lld ns)",
		   s.slice_ns);
	is_int(s.hup_blocked, 1, "signals are blocked in it");
	/* The caller's thread keeps its policy and nice. */
	is_int(sched_getscheduler(0), SCHED_OTHER, "the loop's thread stays SCHED_OTHER");
	is_int(getpriority(PRIO_PROCESS, (id_t)gettid()), 0, "at nice 0");
	return done_testing();
}
