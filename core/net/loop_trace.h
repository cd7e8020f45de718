/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Which callbacks made a loop round long: test builds only.  With
 * GEOACME_TEST_SLOW_ROUND_US=N in the environment, every loop round of N
 * µs or more is logged with the thread's CPU time in it (much less than
 * the round: the loop waited, for its core or for a lock such as the
 * kernel's mmap lock), its page faults (a major one waits for the disk),
 * how often it blocked and was preempted, and the callbacks that ran in it, longest first,
 * each as its offset in the binary (`addr2line -f -e geoacme 0x...` names
 * it; a busy UDP socket's waiter counts as one).  For finding stalls (bench/stall.sh, issue #26); without the hooks
 * this is all constants and the loop does not look.
 */
#include <stdint.h>

#include "core/test_hooks.h"

#ifdef GEOACME_TEST_HOOKS
/* The threshold in µs; 0: off (the hook is not set). */
extern int64_t loop_trace_min_us;
/* Reads the hook, once, at the loop's start. */
void loop_trace_setup(void);
/* A round starts (its CPU time is taken from here). */
void loop_trace_start(void);
/* One callback of this round took us µs. */
void loop_trace_note(const void *fn, int64_t us);
/* The round is over after busy_us: logged when that is long, then reset. */
void loop_trace_round(int64_t busy_us);
#else
#define loop_trace_min_us ((int64_t)0)
static inline void loop_trace_setup(void) {}
static inline void loop_trace_start(void) {}
static inline void loop_trace_note(const void *fn, int64_t us) { (void)fn; (void)us; }
static inline void loop_trace_round(int64_t busy_us) { (void)busy_us; }
#endif
