/* SPDX-License-Identifier: MIT */
/*
 * The reload builder thread (see builder.h).  One thread per build: it
 * builds, then writes the eventfd; the loop joins it and takes the result.
 */
#include "cmd/builder.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "cmd/runtime.h"
#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/conf/sysclock.h"
#include "core/net/loop.h"
#include "core/test_hooks.h"

struct builder {
	struct loop *l;
	builder_done_fn fn;
	void *ctx;
	int efd;
	bool busy;                 /* a thread runs or its result waits: loop side only */
	pthread_t thread;
	/* Written by the thread before it signals efd, read by the loop after. */
	char *path;
	struct generation *g;
	struct diag d;
	uint32_t delay_ms;         /* GEOACME_TEST_RELOAD_DELAY_MS (core/test_hooks.h) */
};

static void *build(void *arg)
{
	struct builder *b = arg;
	struct timespec t0, t1;
	sysclock_mono_ts(&t0);
	b->g = generation_build(b->path, b->l, false, &b->d);
	sysclock_mono_ts(&t1);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (b->g)
		log_info("reload: the new configuration was built in %.0f ms beside the running one; "
		         "swapping it in", ms);
	if (b->delay_ms) {
		/* A test hook: the new generation is ready but not yet served, so a
		 * test can see the old one answer (and UPDATEs arrive) meanwhile. */
		struct timespec ts = { b->delay_ms / 1000, (long)(b->delay_ms % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	uint64_t one = 1;
	/* An eventfd write of 1 cannot fail short of a bug; the loop would then
	 * wait for a build that ended, and later SIGHUPs only queue. */
	(void)!write(b->efd, &one, sizeof(one));
	return NULL;
}

/* The thread has finished: joined, and its result handed over. */
static void collect(struct builder *b)
{
	pthread_join(b->thread, NULL);
	b->busy = false;
	free(b->path);
	b->path = NULL;
	struct generation *g = b->g;
	b->g = NULL;
	/* Taken out first: the callback may start the next build, which fills b->d. */
	struct diag d = b->d;
	diag_init(&b->d);
	b->fn(b->ctx, g, &d);
	diag_clear(&d);
}

static void on_event(struct loop *l, int fd, int events, void *arg)
{
	struct builder *b = arg;
	uint64_t n;
	(void)l;
	(void)events;
	if (read(fd, &n, sizeof(n)) == (ssize_t)sizeof(n) && b->busy)
		collect(b);
}

struct builder *builder_new(struct loop *l, builder_done_fn fn, void *ctx, char err[256])
{
	struct builder *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, 256, "out of memory");
		return NULL;
	}
	*b = (struct builder){ .l = l, .fn = fn, .ctx = ctx };
	diag_init(&b->d);
	b->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (b->efd < 0 || loop_add_fd(l, b->efd, LOOP_READ, on_event, b) < 0) {
		snprintf(err, 256, "reload builder: cannot make its eventfd: %s", strerror(errno));
		if (b->efd >= 0)
			close(b->efd);
		free(b);
		return NULL;
	}
	const char *delay = test_hook(TEST_HOOK_RELOAD_DELAY);
	if (delay)
		b->delay_ms = (uint32_t)strtoul(delay, NULL, 10);
	return b;
}

int builder_start(struct builder *b, const char *path, char err[256])
{
	if (b->busy)
		return -EBUSY;
	if (!(b->path = strdup(path))) {
		snprintf(err, 256, "out of memory");
		return -ENOMEM;
	}
	diag_clear(&b->d);
	diag_init(&b->d);
	b->g = NULL;
	/* The builder takes no signal: they are the loop's (signalfd), and one
	 * delivered to this thread would take its default action. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int ret = pthread_create(&b->thread, NULL, build, b);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret != 0) {
		snprintf(err, 256, "cannot start the reload builder thread: %s", strerror(ret));
		free(b->path);
		b->path = NULL;
		return -ret;
	}
	b->busy = true;
	return 0;
}

bool builder_busy(const struct builder *b)
{
	return b && b->busy;
}

void builder_free(struct builder *b)
{
	if (!b)
		return;
	if (b->busy) {
		pthread_join(b->thread, NULL);
		generation_free(b->g);
		free(b->path);
	}
	diag_clear(&b->d);
	loop_del_fd(b->l, b->efd);
	close(b->efd);
	free(b);
}
