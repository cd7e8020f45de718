/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Threads beside the loop: the reload's build and reaper (cmd/builder.c),
 * re-signing jobs (cmd/resign_job.c), a secondary's copy build
 * (xfr/copy_build.c), compaction (acme/compact.c) and WAL checkpoints
 * (storage/checkpoint.c).  What each of them needs the same way: to take
 * no signal, to yield the core to the loop, and (test builds) to wait on
 * purpose before handing back its result.
 */
#include <pthread.h>
#include <stdint.h>

/*
 * pthread_create with every signal blocked in the new thread: signals are
 * the loop's (signalfd), and one delivered to a helper would take its
 * default action.  Returns pthread_create's result (0 or an errno value).
 */
int side_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

/*
 * Puts the calling thread below the loop: `nice` (Linux: per thread), and
 * the kernel's default slice (a thread the loop starts inherits the loop's
 * short one).  Where it shares a core with the loop the loop's rounds come
 * first: at 100 000 signed names a build is seconds of CPU, and at the same
 * priority queries waited tens of milliseconds behind it (bench/stall.sh,
 * issue #26).  A failure only costs that, and is logged at debug level
 * naming `what`.
 */
void side_thread_lower(int nice, const char *what);

/*
 * Gives the calling thread, the loop, the shortest slice the kernel takes
 * (0.1 ms; Linux 6.12+, whose EEVDF scheduler lets a normal thread ask for
 * one): a thread with a shorter slice has the earlier deadline, so the
 * loop waking takes the core from a side thread at once.  Nice alone was
 * not enough: a nice-10 build that had the core kept it to the end of its
 * slice and the next tick, the loop losing 4 ms at a time (sighup-x3:
 * 26.6 ms longest wait, a 22.4 ms round).  The short slice on the side
 * threads instead made their deadlines the earlier ones; SCHED_IDLE side
 * threads starved behind any other load.  Keeps the thread's nice; a
 * kernel without custom slices ignores it (logged at debug level).
 */
void side_thread_loop_first(void);

/* Sleeps ms milliseconds whatever signals arrive (test hooks' delays). */
void side_thread_sleep_ms(uint32_t ms);
