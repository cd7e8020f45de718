/* SPDX-License-Identifier: MIT */
/*
 * The system clocks (sysclock.h says who may call what).  Each is a vDSO
 * read: no system call.
 */
#include "core/conf/sysclock.h"

int64_t sysclock_wall_s(void)
{
	return (int64_t)time(NULL);
}

void sysclock_wall_ts(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

void sysclock_mono_ts(struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
}

void sysclock_thread_cpu_ts(struct timespec *ts)
{
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, ts);
}

int64_t sysclock_coarse_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec;
}
