/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A small io_uring for the loop and the UDP path, spoken with the raw
 * system calls (io_uring_setup, io_uring_enter, io_uring_register) and
 * <linux/io_uring.h>: no library.
 *
 * Why: at a moderate load every datagram is its own wake-up, and on the
 * epoll path a wake-up costs three system calls (epoll_wait, recvmmsg,
 * sendmmsg).  With a multishot receive the kernel posts each datagram as a
 * completion, the replies are queued as send entries, and the loop waits
 * in one io_uring_enter that submits those entries and waits for the next
 * completion: one system call per wake-up.
 *
 * Owners (loop.c for its epoll descriptor, udp.c for sockets and replies)
 * register a completion callback; the top byte of each entry's user_data
 * names the owner, the other 56 bits are the owner's own.  Everything,
 * provided buffers included, is made at start: submitting and reaping
 * allocate nothing.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct uring;
struct io_uring_sqe;
struct io_uring_cqe;

typedef void (*uring_cqe_fn)(void *arg, const struct io_uring_cqe *cqe);

/* The owner's part of user_data. */
#define URING_DATA_MASK ((UINT64_C(1) << 56) - 1)

/*
 * A ring with `entries` submission entries (a power of two) and four times
 * as many completion entries.  NULL with err filled when the kernel has no
 * io_uring, refuses it (seccomp, kernel.io_uring_disabled) or lacks what
 * the UDP path needs (provided-buffer rings, multishot receive; probed with
 * a throwaway socket), so the caller can serve with epoll instead.
 */
struct uring *uring_new(unsigned entries, char err[256]);
void uring_free(struct uring *r);   /* NULL-safe; ends every pending request */

/* Registers a completion callback; returns the owner id (>= 0) or -ENOSPC. */
int uring_owner_add(struct uring *r, uring_cqe_fn fn, void *arg);

/*
 * A zeroed submission entry with user_data set, submitted by the next
 * uring_wait() or uring_submit().  When the queue is full it submits what
 * is pending first; NULL only if even that fails.
 */
struct io_uring_sqe *uring_sqe(struct uring *r, int owner, uint64_t data);

/*
 * How many times everything pending was submitted.  A request that the
 * kernel finishes while it is submitted (a UDP send with MSG_DONTWAIT:
 * sent or failed, never parked to wait) is done once this has moved, so
 * whatever memory it read can be used again.
 */
uint64_t uring_epoch(const struct uring *r);

/* Submits what is pending without waiting.  Returns 0 or a negative errno. */
int uring_submit(struct uring *r);

/*
 * One io_uring_enter: submits what is pending and waits for one
 * completion, or until timeout_ms passes (-1: no limit, 0: do not wait).
 * Returns 0, -ETIME, -EINTR or a negative errno.  Then call
 * uring_dispatch().
 */
int uring_wait(struct uring *r, int timeout_ms);

/* Hands up to max waiting completions to their owners; returns how many. */
unsigned uring_dispatch(struct uring *r, unsigned max);

/*
 * Provided buffers: `count` (a power of two) buffers of `size` bytes in
 * buffer group `group`, all handed to the kernel.  A receive that selects
 * from the group gets one (its id is in the completion's flags); the owner
 * gives it back with uring_buf_put() when done with it.
 */
struct uring_bufs;
struct uring_bufs *uring_bufs_new(struct uring *r, uint16_t group, unsigned count, size_t size,
                                  char err[256]);
void uring_bufs_free(struct uring *r, struct uring_bufs *b);   /* NULL-safe */
uint8_t *uring_buf(const struct uring_bufs *b, unsigned id);   /* NULL for a bad id */
void uring_buf_put(struct uring_bufs *b, unsigned id);
