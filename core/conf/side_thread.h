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
 * Puts the calling thread below the loop: `nice` (Linux: per thread) and
 * the shortest slice the kernel takes (0.1 ms; Linux 6.12+, whose EEVDF
 * scheduler lets a normal thread ask for it).  Where it shares a core with
 * the loop the loop's rounds come first: at 100 000 signed names a build is
 * seconds of CPU, and at the same priority queries waited tens of
 * milliseconds behind it (bench/stall.sh, issue #26).  Nice alone was not
 * enough: a nice-10 thread that had the core kept it to the end of its
 * slice and the next tick, so the loop lost 4 ms at a time (sighup-x3: 26.6
 * ms longest wait; 14.6 ms with the short slice).  SCHED_IDLE did as well
 * but starved the thread behind any other load (a reload never finished
 * beside two busy processes).  A failure only costs that, and is logged at
 * debug level naming `what`.
 */
void side_thread_lower(int nice, const char *what);

/* Sleeps ms milliseconds whatever signals arrive (test hooks' delays). */
void side_thread_sleep_ms(uint32_t ms);
