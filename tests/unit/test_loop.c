/* SPDX-License-Identifier: MIT */
/* The event loop: timers, descriptors, signals, stop. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/net/loop.h"
#include "tests/unit/check.h"

static void stop_cb(struct loop *l, void *arg)
{
	int *fired = arg;
	if (fired)
		(*fired)++;
	loop_stop(l);
}

/* A guard so that a broken loop fails the test instead of hanging it. */
static int64_t guard(struct loop *l, int *fired)
{
	return loop_timer_add(l, 2000, stop_cb, fired);
}

struct order {
	struct loop *l;
	int seen[16];
	uint64_t at[16];
	int n;
};

struct tag {
	struct order *o;
	int tag;
};

static void order_cb(struct loop *l, void *arg)
{
	struct tag *t = arg;
	t->o->at[t->o->n] = loop_now_ms(l);
	t->o->seen[t->o->n++] = t->tag;
}

static void test_timer_order(void)
{
	char err[256];
	struct loop *l = loop_new(err);
	ok(l != NULL, "loop_new");
	struct order o = { .l = l };
	struct tag tags[6];
	uint64_t delays[6] = { 30, 10, 20, 0, 10, 5 };
	int64_t ids[6];
	uint64_t start = loop_now_ms(l);
	for (int i = 0; i < 6; i++) {
		tags[i] = (struct tag){ &o, i };
		ids[i] = loop_timer_add(l, delays[i], order_cb, &tags[i]);
	}
	ok(ids[0] > 0, "timer id > 0");
	int increasing = 1;
	for (int i = 1; i < 6; i++)
		increasing &= ids[i] > ids[i - 1];
	ok(increasing, "timer ids increase");
	loop_timer_add(l, 60, stop_cb, NULL);
	is_int(loop_run(l), 0, "loop_run returns 0 after loop_stop");
	is_int(o.n, 6, "all six timers fired");
	/* By deadline; equal deadlines (10, 10) in the order they were added. */
	int want[6] = { 3, 5, 1, 4, 2, 0 };
	int same = 1;
	for (int i = 0; i < 6; i++)
		same &= o.seen[i] == want[i];
	ok(same, "timers fire by deadline, ties in insertion order");
	ok(o.at[5] - start >= 30, "the 30 ms timer did not fire early (%llu ms)",
	   (unsigned long long)(o.at[5] - start));
	ok(loop_now_ms(l) - start >= 60, "loop_now_ms advanced past the stop timer");
	loop_free(l);
}

static void test_timer_cancel(void)
{
	char err[256];
	struct loop *l = loop_new(err);
	int a = 0, b = 0, c = 0, g = 0;
	int64_t ida = loop_timer_add(l, 10, stop_cb, &a);   /* stops the first run */
	int64_t idb = loop_timer_add(l, 5, stop_cb, &b);
	loop_timer_cancel(l, idb);
	guard(l, &g);
	loop_run(l);
	is_int(b, 0, "cancelled timer did not fire");
	is_int(a, 1, "other timer fired");
	is_int(g, 0, "guard did not fire");

	/* Cancelling an id that already fired must not hit a later timer. */
	int64_t idc = loop_timer_add(l, 10, stop_cb, &c);
	loop_timer_cancel(l, ida);
	loop_timer_cancel(l, 0);
	loop_timer_cancel(l, -5);
	loop_timer_cancel(l, idc + 1000);
	loop_run(l);
	is_int(c, 1, "cancel of a fired or unknown id is harmless");
	is_int(g, 0, "second run stopped by its own timer");
	ok(loop_timer_add(l, 1, NULL, NULL) < 0, "timer without callback refused");
	loop_free(l);
}

/* A timer that re-arms itself with delay 0 must not starve descriptors. */
struct spin {
	int count;
	int fd_seen;
	int wfd;
};

static void spin_cb(struct loop *l, void *arg)
{
	struct spin *s = arg;
	if (s->count++ == 0 && write(s->wfd, "x", 1) != 1)
		return;
	if (s->count < 100000)
		loop_timer_add(l, 0, spin_cb, s);
}

static void spin_fd(struct loop *l, int fd, int events, void *arg)
{
	struct spin *s = arg;
	s->fd_seen = s->count;
	loop_stop(l);
}

static void test_timer_no_starve(void)
{
	char err[256];
	struct loop *l = loop_new(err);
	int p[2];
	ok(pipe(p) == 0, "pipe");
	/* The first run makes the pipe readable; it must be served before
	 * the timer has run many more times. */
	struct spin s = { 0, -1, p[1] };
	loop_timer_add(l, 0, spin_cb, &s);
	loop_add_fd(l, p[0], LOOP_READ, spin_fd, &s);
	loop_run(l);
	ok(s.fd_seen >= 1 && s.fd_seen < 5, "fd served while a 0 ms timer re-arms (after %d timer runs)",
	   s.fd_seen);
	loop_del_fd(l, p[0]);
	close(p[0]);
	close(p[1]);
	loop_free(l);
}

struct io {
	int calls;
	int fd;
	int events;
	void *arg;
	char byte;
	ssize_t got;
};

static void io_cb(struct loop *l, int fd, int events, void *arg)
{
	struct io *io = arg;
	io->calls++;
	io->fd = fd;
	io->events = events;
	io->arg = arg;
	if (events & LOOP_READ)
		io->got = read(fd, &io->byte, 1);
	loop_stop(l);
}

static void test_fd(void)
{
	char err[256];
	struct loop *l = loop_new(err);
	int p[2];
	ok(pipe2(p, O_NONBLOCK) == 0, "pipe");
	struct io io = { 0 };
	is_int(loop_add_fd(l, p[0], LOOP_READ, io_cb, &io), 0, "loop_add_fd");
	is_int(loop_add_fd(l, p[0], LOOP_READ, io_cb, &io), -EEXIST, "second registration refused");
	is_int(loop_mod_fd(l, 1000, LOOP_READ), -ENOENT, "mod of unknown fd");
	is_int(loop_del_fd(l, 1000), -ENOENT, "del of unknown fd");
	is_int(loop_add_fd(l, -1, LOOP_READ, io_cb, &io), -EINVAL, "negative fd refused");

	ok(write(p[1], "a", 1) == 1, "write");
	int g = 0;
	int64_t gid = guard(l, &g);
	loop_run(l);
	is_int(io.calls, 1, "read callback ran once");
	is_int(io.fd, p[0], "callback got its fd");
	is_int(io.events, LOOP_READ, "callback got LOOP_READ");
	ok(io.arg == &io, "callback got its arg");
	is_int(io.byte, 'a', "callback read the byte");

	/* Write interest on the other end: a pipe with room is writable. */
	struct io wio = { 0 };
	is_int(loop_add_fd(l, p[1], LOOP_WRITE, io_cb, &wio), 0, "register write end");
	loop_run(l);
	is_int(wio.events, LOOP_WRITE, "write callback got LOOP_WRITE");
	is_int(loop_del_fd(l, p[1]), 0, "del write end");

	/* Unregistered for reading: data waits, the callback does not run. */
	is_int(loop_mod_fd(l, p[0], LOOP_WRITE), 0, "mod read end to write-only");
	ok(write(p[1], "b", 1) == 1, "write");
	int t = 0;
	loop_timer_add(l, 30, stop_cb, &t);
	io.calls = 0;
	loop_run(l);
	is_int(io.calls, 0, "no callback without interest");
	is_int(loop_mod_fd(l, p[0], LOOP_READ), 0, "mod back to read");
	loop_run(l);
	is_int(io.calls, 1, "callback after interest restored");
	is_int(io.byte, 'b', "and read the waiting byte");

	/* Hangup of the writer reaches a reader as LOOP_READ with EOF. */
	close(p[1]);
	io.calls = 0;
	loop_run(l);
	is_int(io.calls, 1, "hangup delivered");
	is_int(io.events, LOOP_READ, "hangup as LOOP_READ");
	is_int(io.got, 0, "read sees EOF");
	is_int(loop_del_fd(l, p[0]), 0, "loop_del_fd");
	close(p[0]);
	is_int(g, 0, "guard never fired");
	loop_timer_cancel(l, gid);
	loop_free(l);
}

/* Two readable descriptors in one batch; whichever runs first removes and
 * closes the other and registers a fresh, idle pipe in its place (it gets
 * the same number).  The old event, already in the batch, must reach
 * neither the removed registration nor the new one. */
struct pair {
	int fds[2];
	int calls;
	int fresh[2];
	int fresh_calls;
};

static void fresh_cb(struct loop *l, int fd, int events, void *arg)
{
	struct pair *p = arg;
	p->fresh_calls++;
}

static void pair_cb(struct loop *l, int fd, int events, void *arg)
{
	struct pair *p = arg;
	p->calls++;
	int other = fd == p->fds[0] ? p->fds[1] : p->fds[0];
	loop_del_fd(l, other);
	close(other);
	if (pipe(p->fresh) == 0)
		loop_add_fd(l, p->fresh[0], LOOP_READ, fresh_cb, p);
	p->fds[fd == p->fds[0] ? 1 : 0] = p->fresh[0];
	loop_del_fd(l, fd);
	loop_timer_add(l, 20, stop_cb, NULL);
}

static void test_stale_events(void)
{
	char err[256];
	struct loop *l = loop_new(err);
	int a[2], b[2];
	ok(pipe(a) == 0 && pipe(b) == 0, "pipes");
	ok(write(a[1], "x", 1) == 1 && write(b[1], "y", 1) == 1, "both readable");
	struct pair p = { { a[0], b[0] }, 0, { -1, -1 }, 0 };
	loop_add_fd(l, a[0], LOOP_READ, pair_cb, &p);
	loop_add_fd(l, b[0], LOOP_READ, pair_cb, &p);
	loop_run(l);
	is_int(p.calls, 1, "event of a descriptor removed earlier in the batch not dispatched");
	ok(p.fresh[0] == a[0] || p.fresh[0] == b[0], "the fresh pipe reused the closed number");
	is_int(p.fresh_calls, 0, "nor dispatched to the new registration of the same number");
	loop_del_fd(l, p.fresh[0]);
	close(p.fresh[0]);
	close(p.fresh[1]);
	close(p.fds[0] == p.fresh[0] ? p.fds[1] : p.fds[0]);
	close(a[1]);
	close(b[1]);
	loop_free(l);
}

struct sig {
	int count;
	int term;
};

static void sig_cb(struct loop *l, void *arg)
{
	struct sig *s = arg;
	s->count++;
	loop_stop(l);
}

static void test_signal(void)
{
	char err[256];
	struct loop *l = loop_new(err);
	struct sig s = { 0 }, t = { 0 };
	is_int(loop_add_signal(l, 0, sig_cb, &s), -EINVAL, "signal 0 refused");
	is_int(loop_add_signal(l, 1000, sig_cb, &s), -EINVAL, "signal 1000 refused");
	is_int(loop_add_signal(l, SIGUSR1, sig_cb, &s), 0, "loop_add_signal SIGUSR1");
	is_int(loop_add_signal(l, SIGUSR2, sig_cb, &t), 0, "loop_add_signal SIGUSR2 (same signalfd)");
	int g = 0;
	int64_t gid = guard(l, &g);
	/* Blocked now: raise() leaves it pending instead of killing us. */
	raise(SIGUSR1);
	loop_run(l);
	is_int(s.count, 1, "SIGUSR1 delivered as a loop callback");
	is_int(t.count, 0, "SIGUSR2 callback not run");
	raise(SIGUSR2);
	loop_run(l);
	is_int(t.count, 1, "SIGUSR2 delivered");
	is_int(s.count, 1, "SIGUSR1 not delivered again");
	is_int(g, 0, "guard never fired");
	loop_timer_cancel(l, gid);
	loop_free(l);
	loop_free(NULL);
}

static void test_stop_restart(void)
{
	char err[256];
	struct loop *l = loop_new(err);
	int a = 0;
	loop_stop(l);   /* a stale stop before loop_run does not end the next run at once */
	loop_timer_add(l, 5, stop_cb, &a);
	is_int(loop_run(l), 0, "run");
	is_int(a, 1, "ran until its timer stopped it");
	loop_timer_add(l, 5, stop_cb, &a);
	is_int(loop_run(l), 0, "run again");
	is_int(a, 2, "loop can be run again after a stop");
	loop_free(l);
}

struct stamp {
	int fired;
	int64_t wall;
	uint64_t mono;
};

static void stamp_cb(struct loop *l, void *arg)
{
	struct stamp *st = arg;
	st->fired++;
	st->wall = loop_wall_s(l);
	st->mono = loop_now_ms(l);
	loop_stop(l);
}

/* The test clock: one step moves both clocks and runs what became due. */
static void test_clock_offset(void)
{
	char err[256];
	struct loop *l = loop_new(err);
	ok(l != NULL, "loop_new");
	int64_t sys0 = (int64_t)time(NULL);
	ok(loop_wall_s(NULL) - sys0 <= 1, "loop_wall_s(NULL) is the system clock");
	ok(loop_wall_s(l) - sys0 <= 1, "offset 0: the system clock");
	uint64_t mono0 = loop_now_ms(l);

	struct stamp hour = { 0 }, later = { 0 };
	int g = 0;
	ok(loop_timer_add(l, 3600 * 1000, stamp_cb, &hour) > 0, "a timer an hour away");
	loop_set_clock_offset(l, 3600 * 1000);
	is_int(loop_clock_offset(l), 3600 * 1000, "offset kept");
	ok(loop_now_ms(l) - mono0 >= 3600 * 1000, "monotonic clock stepped an hour");
	int64_t d = loop_wall_s(l) - sys0;
	ok(d >= 3600 && d <= 3601, "wall clock stepped an hour (%lld s)", (long long)d);
	int64_t gid = guard(l, &g);
	is_int(loop_run(l), 0, "loop_run");
	is_int(hour.fired, 1, "the hour timer fired on the first iteration");
	is_int(g, 0, "before the guard (2 s of real time)");
	ok(hour.wall - sys0 >= 3600, "its callback saw the stepped wall clock");
	loop_timer_cancel(l, gid);

	/* Delays count from the stepped time: not due until the next step. */
	ok(loop_timer_add(l, 600 * 1000, stamp_cb, &later) > 0, "a timer ten minutes away");
	g = 0;
	loop_set_clock_offset(l, 3600 * 1000 + 300 * 1000);
	/* After the step, or the step makes it due first; short, since it is
	 * what ends this run (the timer under test is minutes of clock away). */
	gid = loop_timer_add(l, 50, stop_cb, &g);
	is_int(loop_run(l), 0, "loop_run");
	is_int(later.fired, 0, "five minutes on: not yet");
	is_int(g, 1, "the guard stopped the loop");
	g = 0;
	loop_set_clock_offset(l, 3600 * 1000 + 600 * 1000);
	gid = guard(l, &g);
	is_int(loop_run(l), 0, "loop_run");
	is_int(later.fired, 1, "ten minutes on: fired");
	is_int(g, 0, "before the guard");
	loop_timer_cancel(l, gid);

	/* Stepping back never makes the monotonic clock run backwards. */
	uint64_t before = loop_now_ms(l);
	loop_set_clock_offset(l, 0);
	ok(loop_now_ms(l) >= before, "monotonic after a step back");
	ok(loop_wall_s(l) - sys0 <= 2, "the wall clock follows the offset back");
	loop_free(l);
}

int main(void)
{
	test_clock_offset();
	test_timer_order();
	test_timer_cancel();
	test_timer_no_starve();
	test_fd();
	test_stale_events();
	test_signal();
	test_stop_restart();
	return done_testing();
}
