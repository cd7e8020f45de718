/* SPDX-License-Identifier: MIT */
/*
 * Threads beside the loop (see side_thread.h).
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/conf/log.h"
#include "core/conf/side_thread.h"

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
	struct sched_param none = { .sched_priority = 0 };
	if (sched_setscheduler((pid_t)gettid(), SCHED_IDLE, &none) < 0)
		log_debug("%s: cannot make the thread SCHED_IDLE: %s", what, strerror(errno));
}

void side_thread_sleep_ms(uint32_t ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}
