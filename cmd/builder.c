/* SPDX-License-Identifier: MIT */
/*
 * The reload builder thread (see builder.h).  One thread per build: it
 * builds, then writes the eventfd; the loop joins it and takes the result.
 */
#include "cmd/builder.h"

#include <errno.h>
#include <pthread.h>
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
#include "core/conf/side_thread.h"
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
	/* Swapped-out generations, detached, freed by the reaper thread. */
	pthread_mutex_t lock;
	struct generation **trash; /* under lock */
	size_t n_trash, cap_trash; /* under lock */
	bool reaping;              /* under lock: the reaper runs and will look again */
	bool reaper_made;          /* loop side: a reaper thread to join */
	pthread_t reaper;
};

static void *build(void *arg)
{
	struct builder *b = arg;
	side_thread_lower(10, "reload build");   /* below the loop */
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
		side_thread_sleep_ms(b->delay_ms);
	}
	uint64_t one = 1;
	/* An eventfd write of 1 cannot fail short of a bug; the loop would then
	 * wait for a build that ended, and later SIGHUPs only queue. */
	(void)!write(b->efd, &one, sizeof(one));
	return NULL;
}

/* The reaper: frees what builder_dispose() handed over until none is left. */
static void *reap(void *arg)
{
	struct builder *b = arg;
	side_thread_lower(10, "reload reaper");
	for (;;) {
		pthread_mutex_lock(&b->lock);
		if (!b->n_trash) {
			b->reaping = false;
			pthread_mutex_unlock(&b->lock);
			return NULL;
		}
		struct generation *g = b->trash[--b->n_trash];
		pthread_mutex_unlock(&b->lock);
		struct timespec t0, t1;
		sysclock_mono_ts(&t0);
		generation_free(g);
		sysclock_mono_ts(&t1);
		log_info("reload: the previous configuration was freed in %.0f ms beside the running "
		         "one", (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
		                (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	}
}

void builder_dispose(struct builder *b, struct generation *g)
{
	if (!g)
		return;
	generation_detach(g);
	if (!b)
		goto here;
	pthread_mutex_lock(&b->lock);
	if (b->n_trash == b->cap_trash) {
		size_t cap = b->cap_trash ? 2 * b->cap_trash : 4;
		struct generation **v = realloc(b->trash, cap * sizeof(*v));
		if (!v) {
			pthread_mutex_unlock(&b->lock);
			goto here;
		}
		b->trash = v;
		b->cap_trash = cap;
	}
	b->trash[b->n_trash++] = g;
	bool running = b->reaping;
	b->reaping = true;
	pthread_mutex_unlock(&b->lock);
	if (running)
		return;   /* it looks again before it ends */
	if (b->reaper_made)
		pthread_join(b->reaper, NULL);   /* done, or about to return */
	b->reaper_made = false;
	int ret = side_thread_start(&b->reaper, reap, b);
	if (ret == 0) {
		b->reaper_made = true;
		return;
	}
	log_warn("cannot start a thread to free the previous configuration (%s); freeing it on "
	         "the loop", strerror(ret));
	pthread_mutex_lock(&b->lock);
	b->reaping = false;
	b->n_trash--;   /* g: nobody else takes from the list */
	pthread_mutex_unlock(&b->lock);
here:
	generation_free(g);
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
	pthread_mutex_init(&b->lock, NULL);
	b->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (b->efd < 0 || loop_add_fd(l, b->efd, LOOP_READ, on_event, b) < 0) {
		snprintf(err, 256, "reload builder: cannot make its eventfd: %s", strerror(errno));
		if (b->efd >= 0)
			close(b->efd);
		pthread_mutex_destroy(&b->lock);
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
	int ret = side_thread_start(&b->thread, build, b);
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
	if (b->reaper_made)
		pthread_join(b->reaper, NULL);   /* it frees everything handed over first */
	free(b->trash);
	pthread_mutex_destroy(&b->lock);
	diag_clear(&b->d);
	loop_del_fd(b->l, b->efd);
	close(b->efd);
	free(b);
}
