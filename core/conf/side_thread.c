/* SPDX-License-Identifier: MIT */
/*
 * Threads beside the loop (see side_thread.h).
 */
#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/conf/log.h"
#include "core/conf/side_thread.h"

/* The least the kernel takes (0.1 ms). */
#define SIDE_THREAD_SLICE_NS 100000

/* sched_setattr(2)'s argument, its first version (glibc 2.36 has no
 * wrapper, and <linux/sched/types.h> clashes with <sched.h>). */
struct side_sched_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
};

int side_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int ret = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

void side_thread_lower(int nice, const char *what)
{
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), nice) < 0)
		log_debug("%s: cannot lower the thread's priority: %s", what, strerror(errno));
	/* A short slice (Linux 6.12+, EEVDF: sched_runtime of a normal
	 * thread): the loop waking up takes the core once the side thread
	 * has run that long, instead of at the next tick. */
	struct side_sched_attr attr = { .size = sizeof(attr), .sched_policy = SCHED_OTHER,
	                           .sched_nice = nice, .sched_runtime = SIDE_THREAD_SLICE_NS };
	if (syscall(SYS_sched_setattr, (pid_t)gettid(), &attr, 0) < 0)
		log_debug("%s: cannot shorten the thread's slice: %s", what, strerror(errno));
}

void side_thread_sleep_ms(uint32_t ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}
