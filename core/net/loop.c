/* SPDX-License-Identifier: MIT */
/*
 * The event loop: level-triggered epoll, a binary heap of one-shot timers,
 * and a signalfd for the few signals the daemon cares about.
 *
 * Registrations live in a table indexed by fd, so dispatching an event is
 * an array lookup.  Each registration carries a generation number that is
 * also packed into the epoll event's data: when a callback removes (and
 * perhaps reuses) a descriptor while the rest of the batch is still to be
 * dispatched, the stale events no longer match and are skipped.
 *
 * With a waiter (loop_set_waiter: a busy UDP socket, udp.c) the loop blocks
 * in the waiter's own receive instead of epoll_wait and looks at the epoll
 * set without blocking every LOOP_PEEK_US.
 */
#include "core/net/loop.h"
#include "core/wire/array.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "core/conf/metrics.h"
#include "core/conf/sysclock.h"
#include "core/net/loop_trace.h"

#define LOOP_BATCH 64
#define LOOP_NSIG 65   /* signals 1..64 */

struct loop_reg {
	loop_io_fn fn;      /* NULL when the slot is free */
	void *arg;
	int events;         /* LOOP_READ | LOOP_WRITE as registered */
	uint32_t gen;
};

struct loop_timer {
	uint64_t when;
	int64_t id;
	loop_timer_fn fn;
	void *arg;
};

struct loop_sig {
	loop_timer_fn fn;
	void *arg;
};

struct loop {
	int epfd;
	bool stop;
	uint64_t now_ms;             /* monotonic + offset_ms, once per iteration */
	int64_t offset_ms;           /* the test clock's step (loop_set_clock_offset) */

	struct loop_reg *regs;
	size_t n_regs;          /* table size (highest fd + 1, rounded up) */
	uint32_t next_gen;

	struct loop_timer *timers;   /* binary min-heap by (when, id) */
	size_t n_timers, cap_timers;
	int64_t next_timer_id;

	int sigfd;
	sigset_t sigmask;
	struct loop_sig sigs[LOOP_NSIG];
	struct loop_siginfo last_sig;   /* the signal being delivered */

	/* The source that waits instead of epoll_wait (loop_set_waiter). */
	const struct loop_waiter *waiter;
	struct timespec peeked;   /* when the epoll set was last looked at */
};

static uint64_t clock_ms(const struct loop *l)
{
	struct timespec ts;
	sysclock_mono_ts(&ts);
	uint64_t ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
	/* Never before the start of the monotonic clock, whatever the offset. */
	int64_t off = loop_clock_offset(l);
	if (off < 0 && (uint64_t)-off > ms)
		return 0;
	return ms + (uint64_t)off;
}

/* Monotonic even when the offset steps back: time then stands still
 * until the clock catches up. */
static void update_now(struct loop *l)
{
	uint64_t now = clock_ms(l);
	if (now > l->now_ms)
		l->now_ms = now;
}

struct loop *loop_new(char err[256])
{
	struct loop *l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(err, 256, "loop: out of memory");
		return NULL;
	}
	l->sigfd = -1;
	sigemptyset(&l->sigmask);
	l->next_timer_id = 1;
	l->next_gen = 1;
	update_now(l);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		snprintf(err, 256, "epoll_create1: %s", strerror(errno));
		free(l);
		return NULL;
	}
	return l;
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	if (l->sigfd >= 0)
		close(l->sigfd);
	close(l->epfd);
	free(l->regs);
	free(l->timers);
	free(l);
}

static uint32_t to_epoll(int events)
{
	uint32_t e = 0;
	if (events & LOOP_READ)
		e |= EPOLLIN;
	if (events & LOOP_WRITE)
		e |= EPOLLOUT;
	return e;
}

/* Grows the table so that fd has a slot; allocation only at registration. */
static int reserve_fd(struct loop *l, int fd)
{
	if ((size_t)fd < l->n_regs)
		return 0;
	size_t n = l->n_regs ? l->n_regs : 64;
	while (n <= (size_t)fd)
		n *= 2;
	struct loop_reg *r = realloc(l->regs, n * sizeof(*r));
	if (!r)
		return -ENOMEM;
	memset(r + l->n_regs, 0, (n - l->n_regs) * sizeof(*r));
	l->regs = r;
	l->n_regs = n;
	return 0;
}

int loop_add_fd(struct loop *l, int fd, int events, loop_io_fn fn, void *arg)
{
	if (fd < 0 || !fn)
		return -EINVAL;
	int rc = reserve_fd(l, fd);
	if (rc < 0)
		return rc;
	struct loop_reg *r = &l->regs[fd];
	if (r->fn)
		return -EEXIST;
	uint32_t gen = l->next_gen++;
	struct epoll_event ev = { .events = to_epoll(events),
	                          .data.u64 = (uint64_t)gen << 32 | (uint32_t)fd };
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	r->fn = fn;
	r->arg = arg;
	r->events = events;
	r->gen = gen;
	return 0;
}

int loop_mod_fd(struct loop *l, int fd, int events)
{
	if (fd < 0 || (size_t)fd >= l->n_regs || !l->regs[fd].fn)
		return -ENOENT;
	struct loop_reg *r = &l->regs[fd];
	if (r->events == events)
		return 0;
	struct epoll_event ev = { .events = to_epoll(events),
	                          .data.u64 = (uint64_t)r->gen << 32 | (uint32_t)fd };
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	r->events = events;
	return 0;
}

int loop_del_fd(struct loop *l, int fd)
{
	if (fd < 0 || (size_t)fd >= l->n_regs || !l->regs[fd].fn)
		return -ENOENT;
	/* Forget the registration even if epoll_ctl fails (the caller may
	 * already have closed the descriptor): no more callbacks either way. */
	memset(&l->regs[fd], 0, sizeof(l->regs[fd]));
	if (epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL) < 0)
		return -errno;
	return 0;
}

/* --- timers --- */

static bool timer_before(const struct loop_timer *a, const struct loop_timer *b)
{
	return a->when < b->when || (a->when == b->when && a->id < b->id);
}

static void heap_swap(struct loop *l, size_t i, size_t j)
{
	struct loop_timer t = l->timers[i];
	l->timers[i] = l->timers[j];
	l->timers[j] = t;
}

static void sift_up(struct loop *l, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!timer_before(&l->timers[i], &l->timers[p]))
			break;
		heap_swap(l, i, p);
		i = p;
	}
}

static void sift_down(struct loop *l, size_t i)
{
	for (;;) {
		size_t c = 2 * i + 1, m = i;
		if (c < l->n_timers && timer_before(&l->timers[c], &l->timers[m]))
			m = c;
		if (c + 1 < l->n_timers && timer_before(&l->timers[c + 1], &l->timers[m]))
			m = c + 1;
		if (m == i)
			return;
		heap_swap(l, i, m);
		i = m;
	}
}

static void heap_remove(struct loop *l, size_t i)
{
	l->n_timers--;
	if (i == l->n_timers)
		return;
	l->timers[i] = l->timers[l->n_timers];
	sift_down(l, i);
	sift_up(l, i);
}

int64_t loop_timer_add(struct loop *l, uint64_t delay_ms, loop_timer_fn fn, void *arg)
{
	if (!fn)
		return -EINVAL;
	struct loop_timer *t = array_room(l->timers, l->n_timers, &l->cap_timers, sizeof(*t), 16);
	if (!t)
		return -ENOMEM;
	l->timers = t;
	uint64_t when = l->now_ms + delay_ms;
	if (when < l->now_ms)
		when = UINT64_MAX;
	int64_t id = l->next_timer_id++;
	l->timers[l->n_timers] = (struct loop_timer){ when, id, fn, arg };
	sift_up(l, l->n_timers++);
	return id;
}

/* Linear search: the daemon keeps a handful of timers, not thousands. */
void loop_timer_cancel(struct loop *l, int64_t id)
{
	if (!l || id <= 0)
		return;
	for (size_t i = 0; i < l->n_timers; i++) {
		if (l->timers[i].id == id) {
			heap_remove(l, i);
			return;
		}
	}
}

static int64_t since_us(const struct timespec *a, const struct timespec *b)
{
	return (int64_t)(b->tv_sec - a->tv_sec) * 1000000 + (b->tv_nsec - a->tv_nsec) / 1000;
}

/* A timer's callback, timed for the slow-round trace (loop_trace.h). */
static void timed_timer(struct loop *l, const struct loop_timer *t)
{
	struct timespec a, b;
	sysclock_mono_ts(&a);
	t->fn(l, t->arg);
	sysclock_mono_ts(&b);
	loop_trace_note((const void *)t->fn, since_us(&a, &b));
}

/* A descriptor's callback, timed likewise. */
static void timed_fd(struct loop *l, const struct loop_reg *r, int fd, int events)
{
	struct timespec a, b;
	loop_io_fn fn = r->fn;
	sysclock_mono_ts(&a);
	fn(l, fd, events, r->arg);
	sysclock_mono_ts(&b);
	loop_trace_note((const void *)fn, since_us(&a, &b));
}

static void run_timers(struct loop *l)
{
	/* Timers added by the callbacks below (even with delay 0) wait for the
	 * next iteration, so a timer that re-arms itself cannot starve I/O. */
	int64_t last = l->next_timer_id - 1;
	while (l->n_timers && !l->stop) {
		struct loop_timer t = l->timers[0];
		if (t.when > l->now_ms || t.id > last)
			break;
		heap_remove(l, 0);
		if (loop_trace_min_us)
			timed_timer(l, &t);
		else
			t.fn(l, t.arg);
	}
}

static int next_timeout(const struct loop *l)
{
	if (!l->n_timers)
		return -1;
	uint64_t when = l->timers[0].when;
	if (when <= l->now_ms)
		return 0;
	uint64_t d = when - l->now_ms;
	return d > INT_MAX ? INT_MAX : (int)d;
}

/* --- signals --- */

static void on_signal(struct loop *l, int fd, int events, void *arg)
{
	struct signalfd_siginfo si[8];
	for (;;) {
		ssize_t n = read(fd, si, sizeof(si));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		for (size_t i = 0; i < (size_t)n / sizeof(si[0]); i++) {
			uint32_t s = si[i].ssi_signo;
			if (s < LOOP_NSIG && l->sigs[s].fn) {
				l->last_sig.queued = si[i].ssi_code == SI_QUEUE;
				l->last_sig.value = si[i].ssi_int;
				l->last_sig.pid = si[i].ssi_pid;
				l->sigs[s].fn(l, l->sigs[s].arg);
			}
		}
	}
}

int loop_add_signal(struct loop *l, int signo, loop_timer_fn fn, void *arg)
{
	if (signo <= 0 || signo >= LOOP_NSIG || !fn)
		return -EINVAL;
	sigset_t one;
	sigemptyset(&one);
	if (sigaddset(&one, signo) < 0)
		return -EINVAL;
	sigset_t mask = l->sigmask;
	sigaddset(&mask, signo);
	/* Block first, so nothing slips through to the default action between
	 * here and the signalfd being read. */
	if (sigprocmask(SIG_BLOCK, &one, NULL) < 0)
		return -errno;
	if (l->sigfd < 0) {
		int fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
		if (fd < 0)
			return -errno;
		int rc = loop_add_fd(l, fd, LOOP_READ, on_signal, NULL);
		if (rc < 0) {
			close(fd);
			return rc;
		}
		l->sigfd = fd;
	} else if (signalfd(l->sigfd, &mask, 0) < 0) {
		return -errno;
	}
	l->sigmask = mask;
	l->sigs[signo].fn = fn;
	l->sigs[signo].arg = arg;
	return 0;
}

const struct loop_siginfo *loop_signal_info(const struct loop *l)
{
	return &l->last_sig;
}

/* --- running --- */

uint64_t loop_now_ms(const struct loop *l)
{
	return l->now_ms;
}

int64_t loop_wall_s(const struct loop *l)
{
	/* The reload builder's signers read it too (cmd/builder.h). */
	int64_t off = l ? loop_clock_offset(l) : 0;
	return sysclock_wall_s() + off / 1000;
}

void loop_wall_ts(const struct loop *l, struct timespec *ts)
{
	sysclock_wall_ts(ts);
	int64_t off = l ? loop_clock_offset(l) : 0;
	if (off) {
		int64_t ns = (int64_t)ts->tv_nsec + (off % 1000) * 1000000;
		ts->tv_sec += off / 1000 + (ns < 0 ? -1 : ns >= 1000000000 ? 1 : 0);
		ts->tv_nsec = (long)(ns < 0 ? ns + 1000000000 : ns % 1000000000);
	}
}

void loop_set_clock_offset(struct loop *l, int64_t offset_ms)
{
	__atomic_store_n(&l->offset_ms, offset_ms, __ATOMIC_RELAXED);
	/* The new time holds from now on: timers it made due run at the end
	 * of this iteration, and delays added from here count from it. */
	update_now(l);
}

int64_t loop_clock_offset(const struct loop *l)
{
	return __atomic_load_n(&l->offset_ms, __ATOMIC_RELAXED);
}

void loop_stop(struct loop *l)
{
	l->stop = true;
}

bool loop_set_waiter(struct loop *l, const struct loop_waiter *w)
{
	if (w && l->waiter && l->waiter != w)
		return false;
	l->waiter = w;
	return true;
}

bool loop_has_waiter(const struct loop *l)
{
	return l->waiter != NULL;
}

/*
 * One iteration with a waiter (loop_set_waiter): it blocks in its own
 * receive and serves what came; the epoll set is looked at without
 * blocking every LOOP_PEEK_US, and whenever the waiter came back empty (by
 * then it may have gone back to epoll).  Returns the epoll events fetched
 * or a negative errno.
 */
static int waiter_round(struct loop *l, struct epoll_event *evs, struct timespec *t0)
{
	const struct loop_waiter *w = l->waiter;
	bool got = w->wait(w->arg);
	update_now(l);
	sysclock_mono_ts(t0);
	if (loop_trace_min_us)
		loop_trace_start();
	if (got && loop_trace_min_us) {
		struct timespec a, b;
		sysclock_mono_ts(&a);
		w->serve(w->arg);
		sysclock_mono_ts(&b);
		loop_trace_note((const void *)w->serve, since_us(&a, &b));
	} else if (got) {
		w->serve(w->arg);
	}
	if (got && since_us(&l->peeked, t0) < LOOP_PEEK_US)
		return 0;
	l->peeked = *t0;
	int n = epoll_wait(l->epfd, evs, LOOP_BATCH, 0);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n;
}

static void dispatch(struct loop *l, const struct epoll_event *ev)
{
	int fd = (int)(uint32_t)ev->data.u64;
	uint32_t gen = (uint32_t)(ev->data.u64 >> 32);
	if ((size_t)fd >= l->n_regs)
		return;
	struct loop_reg *r = &l->regs[fd];
	if (!r->fn || r->gen != gen)
		return;   /* removed (or replaced) earlier in this batch */
	int events = 0;
	if (ev->events & EPOLLIN)
		events |= LOOP_READ;
	if (ev->events & EPOLLOUT)
		events |= LOOP_WRITE;
	/* Errors and hangups go to whatever the owner listens for, so its
	 * read or write fails and it closes; an owner listening for nothing
	 * would otherwise be woken forever by a level-triggered HUP. */
	if (ev->events & (EPOLLERR | EPOLLHUP))
		events |= r->events ? r->events : LOOP_READ;
	events &= r->events ? r->events : LOOP_READ;
	if (!events)
		return;
	if (loop_trace_min_us)
		timed_fd(l, r, fd, events);
	else
		r->fn(l, fd, events, r->arg);
}

int loop_run(struct loop *l)
{
	struct epoll_event evs[LOOP_BATCH];
	l->stop = false;
	update_now(l);
	loop_trace_setup();
	while (!l->stop) {
		struct timespec t0, t1;
		int n;
		if (l->waiter) {
			n = waiter_round(l, evs, &t0);
			if (n < 0)
				return n;
		} else {
			n = epoll_wait(l->epfd, evs, LOOP_BATCH, next_timeout(l));
			if (n < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			update_now(l);
			sysclock_mono_ts(&t0);
			if (loop_trace_min_us)
				loop_trace_start();
		}
		for (int i = 0; i < n && !l->stop; i++)
			dispatch(l, &evs[i]);
		run_timers(l);
		if (loop_trace_min_us) {
			sysclock_mono_ts(&t1);
			loop_trace_round(since_us(&t0, &t1));
		}
		/* The longest stretch without looking for new events: how long a
		 * query that arrived at its start may have waited (a rebuild, an
		 * UPDATE's fsync, a re-sign show up here). */
		sysclock_mono_ts(&t1);
		int64_t busy = since_us(&t0, &t1);
		if (busy > 0 && (uint64_t)busy > metrics.loop_busy_recent_us) {
			metrics.loop_busy_recent_us = (uint64_t)busy;
			if ((uint64_t)busy > metrics.loop_busy_max_us)
				metrics.loop_busy_max_us = (uint64_t)busy;
		}
	}
	return 0;
}
