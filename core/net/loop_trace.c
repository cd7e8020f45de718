/* SPDX-License-Identifier: MIT */
/*
 * The slow-round trace (loop_trace.h).  A round keeps its LOOP_TRACE_KEEP
 * longest callbacks in a fixed array (the loop allocates nothing per
 * round, traced or not); the log line is written only for a slow round.
 */
#include "core/net/loop_trace.h"
#include "core/test_hooks.h"

#ifdef GEOACME_TEST_HOOKS

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "core/conf/log.h"
#include "core/conf/sysclock.h"

#define LOOP_TRACE_KEEP 6

int64_t loop_trace_min_us;

static struct {
	const void *fn;
	int64_t us;
} longest[LOOP_TRACE_KEEP];
static unsigned n_longest, n_calls;
static struct timespec cpu_start;
static struct rusage use_start;

void loop_trace_start(void)
{
	sysclock_thread_cpu_ts(&cpu_start);
	getrusage(RUSAGE_THREAD, &use_start);
}

void loop_trace_setup(void)
{
	const char *v = test_hook(TEST_HOOK_SLOW_ROUND);
	loop_trace_min_us = v ? strtoll(v, NULL, 10) : 0;
	if (loop_trace_min_us < 0)
		loop_trace_min_us = 0;
}

void loop_trace_note(const void *fn, int64_t us)
{
	n_calls++;
	unsigned i = n_longest < LOOP_TRACE_KEEP ? n_longest++ : LOOP_TRACE_KEEP - 1;
	if (i == LOOP_TRACE_KEEP - 1 && n_longest == LOOP_TRACE_KEEP && longest[i].us >= us)
		return;
	/* Insertion into the sorted array, longest first. */
	while (i > 0 && longest[i - 1].us < us) {
		longest[i] = longest[i - 1];
		i--;
	}
	longest[i].fn = fn;
	longest[i].us = us;
}

void loop_trace_round(int64_t busy_us)
{
	if (busy_us >= loop_trace_min_us) {
		struct timespec cpu_end;
		sysclock_thread_cpu_ts(&cpu_end);
		long long cpu_us = (long long)(cpu_end.tv_sec - cpu_start.tv_sec) * 1000000 +
		                   (cpu_end.tv_nsec - cpu_start.tv_nsec) / 1000;
		struct rusage use;
		getrusage(RUSAGE_THREAD, &use);
		char line[640];
		int at = snprintf(line, sizeof(line), "loop: slow round of %lld us (%lld us on the CPU; "
		                  "page faults: %ld major, %ld minor; blocked %ld, preempted %ld times), "
		                  "%u callbacks:", (long long)busy_us, cpu_us,
		                  use.ru_majflt - use_start.ru_majflt, use.ru_minflt - use_start.ru_minflt,
		                  use.ru_nvcsw - use_start.ru_nvcsw, use.ru_nivcsw - use_start.ru_nivcsw,
		                  n_calls);
		for (unsigned i = 0; i < n_longest && at > 0 && (size_t)at < sizeof(line); i++) {
			Dl_info info;
			uintptr_t off = (uintptr_t)longest[i].fn;
			const char *sym = "?";
			if (dladdr(longest[i].fn, &info) && info.dli_fbase) {
				off -= (uintptr_t)info.dli_fbase;
				if (info.dli_sname)
					sym = info.dli_sname;
			}
			at += snprintf(line + at, sizeof(line) - (size_t)at, " 0x%lx (%s) %lld us;",
			               (unsigned long)off, sym, (long long)longest[i].us);
		}
		log_warn("%s", line);
	}
	n_longest = 0;
	n_calls = 0;
}

#endif
