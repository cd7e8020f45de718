/* SPDX-License-Identifier: MIT */
/*
 * A thread's job whose end wakes the loop (see loop_job.h).
 */
#include "core/net/loop_job.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/conf/side_thread.h"
#include "core/net/loop.h"

static void on_finished(struct loop *l, int fd, int events, void *arg)
{
	struct loop_job *j = arg;
	uint64_t n;
	(void)l;
	(void)events;
	if (read(fd, &n, sizeof(n)) != (ssize_t)sizeof(n))
		return;
	loop_job_unwatch(j);
	close(j->efd);
	j->efd = -1;
	j->done(j->arg);   /* may free the job: j is not touched after it */
}

int loop_job_start(struct loop_job *j, struct loop *l, void *(*run)(void *),
                   void (*done)(void *arg), void *arg, char err[256])
{
	*j = (struct loop_job){ .l = l, .efd = -1, .done = done, .arg = arg };
	j->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (j->efd < 0 || loop_add_fd(l, j->efd, LOOP_READ, on_finished, j) < 0) {
		int e = errno;
		snprintf(err, 256, "cannot make an eventfd: %s", strerror(e));
		if (j->efd >= 0)
			close(j->efd);
		j->efd = -1;
		return -e;
	}
	j->watched = true;
	pthread_t t;
	int ret = side_thread_start(&t, run, arg);
	if (ret != 0) {
		snprintf(err, 256, "cannot start a thread: %s", strerror(ret));
		loop_job_unwatch(j);
		close(j->efd);
		j->efd = -1;
		return -ret;
	}
	pthread_detach(t);
	return 0;
}

void loop_job_finish(struct loop_job *j)
{
	uint64_t one = 1;
	/* An eventfd write of 1 cannot fail short of a bug (the loop would
	 * then wait for this job for ever: its owner's state says so). */
	(void)!write(j->efd, &one, sizeof(one));
}

void loop_job_unwatch(struct loop_job *j)
{
	if (!j->watched)
		return;
	j->watched = false;
	loop_del_fd(j->l, j->efd);
}

void loop_job_wait(struct loop_job *j)
{
	if (j->efd < 0)
		return;
	struct pollfd p = { .fd = j->efd, .events = POLLIN };
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	close(j->efd);
	j->efd = -1;
}
