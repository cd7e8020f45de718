/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The system clocks, read here and nowhere else (tests/layering/check_clock.py
 * refuses time(), clock_gettime() and gettimeofday() in any other file).
 *
 * Anything that decides by time (timers, TSIG time, signature times, record
 * ages, expiry, NOTIFY retries, cookies, RRL) reads the loop's clock
 * instead (core/net/loop.h: loop_now_ms, loop_wall_s, loop_wall_ts), which
 * is built on these plus the test clock's offset, so a test that steps the
 * loop's clock drives all of them.  What is left to call here directly:
 *  - sysclock_mono_ts: how long some work took (a commit, a build, a
 *    transfer, a checkpoint in its helper thread), for logs and metrics
 *    only, never to decide anything;
 *  - sysclock_coarse_s: the log limiter's one-second windows (core/conf/
 *    log.c sits below the loop);
 *  - sysclock_wall_s/_ts: the loop's wall clock itself, and the default
 *    clock of a signer made without a loop (dnssec/signer.c: `geoacme ds`,
 *    unit tests).  The check names these two files as the only users.
 */
#include <stdint.h>
#include <time.h>

int64_t sysclock_wall_s(void);                 /* unix seconds */
void sysclock_wall_ts(struct timespec *ts);    /* unix time, nanoseconds */
void sysclock_mono_ts(struct timespec *ts);    /* CLOCK_MONOTONIC */
void sysclock_thread_cpu_ts(struct timespec *ts); /* this thread's CPU time */
int64_t sysclock_coarse_s(void);               /* CLOCK_MONOTONIC_COARSE seconds */
