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

/* The loop's slice: the least the kernel takes (0.1 ms). */
#define SIDE_THREAD_LOOP_SLICE_NS 100000

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

/* The calling thread at `nice` with a slice of slice_ns (0: the kernel's
 * default); sched_setattr sets both at once. */
static int set_slice(int nice, uint64_t slice_ns)
{
	struct side_sched_attr attr = { .size = sizeof(attr), .sched_policy = SCHED_OTHER,
	                                .sched_nice = nice, .sched_runtime = slice_ns };
	return (int)syscall(SYS_sched_setattr, (pid_t)gettid(), &attr, 0);
}

void side_thread_lower(int nice, const char *what)
{
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), nice) < 0)
		log_debug("%s: cannot lower the thread's priority: %s", what, strerror(errno));
	/* The kernel's default slice, not the loop's short one it inherited. */
	if (set_slice(nice, 0) < 0)
		log_debug("%s: cannot give the thread the default slice: %s", what, strerror(errno));
}

void side_thread_loop_first(void)
{
	errno = 0;
	int nice = getpriority(PRIO_PROCESS, (id_t)gettid());
	if (errno)
		nice = 0;
	if (set_slice(nice, SIDE_THREAD_LOOP_SLICE_NS) < 0)
		log_debug("loop: cannot shorten its slice: %s (kernels before 6.12 have none)",
		          strerror(errno));
}

void side_thread_sleep_ms(uint32_t ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}
