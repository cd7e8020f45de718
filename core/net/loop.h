/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The single-threaded event loop: epoll for descriptors, a small timer list
 * for periodic work (health checks, signature refresh, stale-record purge).
 * Setup failures fill err (Redis anet style); nothing here exits.
 */
#include <stdbool.h>
#include <stdint.h>

struct timespec;

struct loop;

enum { LOOP_READ = 1, LOOP_WRITE = 2 };

typedef void (*loop_io_fn)(struct loop *l, int fd, int events, void *arg);
typedef void (*loop_timer_fn)(struct loop *l, void *arg);

struct loop *loop_new(char err[256]);
void loop_free(struct loop *l);   /* NULL-safe; does not close descriptors */

/*
 * events: LOOP_READ | LOOP_WRITE (0 = none for now).  One registration per
 * fd; call loop_del_fd() before closing it.  Errors and hangups are
 * reported as the events registered (LOOP_READ if none), so the owner's
 * read or write fails and it closes.  A callback may remove any
 * descriptor, its own included: events already fetched for a removed
 * descriptor are dropped, even if the number is reused at once.
 */
int loop_add_fd(struct loop *l, int fd, int events, loop_io_fn fn, void *arg);
int loop_mod_fd(struct loop *l, int fd, int events);
int loop_del_fd(struct loop *l, int fd);

/* A one-shot timer; returns an id > 0, or a negative errno.  Ids only
 * grow, so cancelling an id that already fired is a harmless no-op.
 * Callbacks may add and cancel timers; one added with delay 0 runs on the
 * next iteration, after I/O, never in the same pass. */
int64_t loop_timer_add(struct loop *l, uint64_t delay_ms, loop_timer_fn fn, void *arg);
void loop_timer_cancel(struct loop *l, int64_t id);

/*
 * Delivers signo as a loop callback instead of an asynchronous handler:
 * the signal is blocked with sigprocmask and read from a signalfd, so the
 * callback runs between events like any other (SIGTERM, SIGINT, SIGHUP).
 * One callback per signal; adding it again replaces it.  The signals stay
 * blocked after loop_free() (unblocking would let a late SIGTERM kill the
 * process with the default action in the middle of shutdown).
 * Returns 0 or a negative errno.
 */
int loop_add_signal(struct loop *l, int signo, loop_timer_fn fn, void *arg);

/*
 * Inside a signal callback: how the signal was sent.  `queued` is true for
 * sigqueue(3), whose integer payload is `value` (geoacme reload uses it to
 * ask for a reply); kill(1) leaves it false.
 */
struct loop_siginfo {
	bool queued;
	int32_t value;
	uint32_t pid;
};
const struct loop_siginfo *loop_signal_info(const struct loop *l);

/*
 * The one clock for everything driven by time (timers, health checks,
 * signature refresh, stale-record purge, TSIG time checks).
 *
 * loop_now_ms: monotonic milliseconds, cached once per loop iteration.
 * loop_wall_s: unix seconds (for RRSIG times and record ages); `l` may be
 * NULL (the system clock).  loop_wall_ts: the same to the nanosecond (dnstap).  Both are the system clocks plus the loop's
 * clock offset, which is 0 unless a test sets one: loop_set_clock_offset()
 * steps both clocks at once, and timers that the step makes due run at the
 * end of the current iteration (or at once, if called before loop_run).
 * That is how tests drive re-signing, purging and health checks through
 * hours of time without waiting for them (`geoacme serve` exposes it only
 * under GEOACME_TEST_CLOCK_FILE, see cmd/serve.c).
 */
uint64_t loop_now_ms(const struct loop *l);
int64_t loop_wall_s(const struct loop *l);
void loop_wall_ts(const struct loop *l, struct timespec *ts);
void loop_set_clock_offset(struct loop *l, int64_t offset_ms);
int64_t loop_clock_offset(const struct loop *l);

/*
 * A source that does the loop's waiting itself: the one UDP socket under
 * load (udp.c).  A socket in the epoll set has the set's waiter on its
 * queue, which the kernel calls for every datagram that arrives and every
 * reply it frees, whether or not anybody waits; a socket the loop blocks
 * on in recvmmsg has a waiter only while the loop sleeps there
 * (doc/performance.md, "The kernel's side").
 *
 * While a waiter is set, each iteration calls
 * wait(), which blocks in the source's own system call for at most its own
 * short timeout and returns true when something arrived; then serve() if
 * it did; then the epoll set is looked at without blocking, when
 * LOOP_PEEK_US have passed since the last look or when wait() came back
 * empty; then the timers.  So while the source is busy the other
 * descriptors and the timers are served at most LOOP_PEEK_US late (plus
 * one round); when it goes quiet, at most wait()'s timeout late, and then
 * the owner goes back to epoll (loop_set_waiter(l, NULL), loop_add_fd).
 */
#define LOOP_PEEK_US 200
struct loop_waiter {
	bool (*wait)(void *arg);
	void (*serve)(void *arg);
	void *arg;
};
/* w is the caller's and must outlive its use; NULL clears.  One at a time:
 * returns false (and sets nothing) while another one is set. */
bool loop_set_waiter(struct loop *l, const struct loop_waiter *w);
bool loop_has_waiter(const struct loop *l);

/* Runs until loop_stop().  Returns 0, or a negative errno when epoll
 * fails. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);
