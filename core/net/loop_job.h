/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Work done on a thread beside the loop, whose end the loop hears of: the
 * thread's last act is loop_job_finish(), which wakes the loop (an eventfd
 * in its epoll set), and the loop then calls `done`.  The thread is started
 * with side_thread_start() and detached: joining it on the loop waited for
 * a niced thread to exit, up to 70 ms of a round on a busy core
 * (bench/keyroll.sh).  Users: cmd/resign_job.c, dnssec/keystore_job.c,
 * acme/compact.c, xfr/copy_build.c.
 *
 * The struct is embedded in the caller's job; `run` and `done` get `arg`.
 * After loop_job_finish() the thread touches nothing of the job, so `done`
 * (or the code after loop_job_wait()) may free it.
 */
#include <stdbool.h>

struct loop;

struct loop_job {
	struct loop *l;
	int efd;                  /* -1 once closed */
	bool watched;             /* efd is in the loop's epoll set */
	void (*done)(void *arg);
	void *arg;
};

/*
 * Starts run(arg) on a detached side thread; done(arg) runs on the loop
 * once the thread has called loop_job_finish().  0, or -errno with err
 * and nothing left behind (no thread, no descriptor).
 */
int loop_job_start(struct loop_job *j, struct loop *l, void *(*run)(void *),
                   void (*done)(void *arg), void *arg, char err[256]);

/* On the thread, its last touch of the job. */
void loop_job_finish(struct loop_job *j);

/* On the loop: done will not be called (the thread still runs). */
void loop_job_unwatch(struct loop_job *j);

/* On the loop, after loop_job_unwatch(): waits until the thread has called
 * loop_job_finish(), then closes the eventfd.  Returns at once if done ran. */
void loop_job_wait(struct loop_job *j);
