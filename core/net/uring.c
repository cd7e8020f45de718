/* SPDX-License-Identifier: MIT */
/*
 * io_uring by hand: set-up, the two mapped rings, provided buffers and
 * the one enter per wake-up (see uring.h for why).
 *
 * The kernel and this process share the rings' head and tail indexes:
 * the side that produces entries writes them, then publishes the new tail
 * with a release store; the consumer reads the tail with an acquire load
 * before reading entries, and publishes its head with a release store
 * after it is done with them.
 */
#include "core/net/uring.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define URING_OWNERS 4
#define URING_PROBE_GROUP 0xfffe

struct uring_owner {
	uring_cqe_fn fn;
	void *arg;
};

struct uring {
	int fd;
	unsigned enter_flags;        /* IORING_ENTER_REGISTERED_RING when the fd is registered */
	int enter_fd;                /* fd, or its registered index */

	void *ring_map;              /* SQ and CQ rings (one mapping) */
	size_t ring_map_len;
	struct io_uring_sqe *sqes;
	size_t sqes_len;

	unsigned *sq_head, *sq_tail;
	unsigned sq_mask, sq_entries;
	unsigned *cq_head, *cq_tail;
	unsigned cq_mask;
	struct io_uring_cqe *cqes;

	unsigned pending;            /* entries written, not yet submitted */
	uint64_t epoch;              /* times pending went back to 0 */

	struct uring_owner owners[URING_OWNERS];
	int n_owners;
};

struct uring_bufs {
	struct io_uring_buf_ring *ring;   /* shared with the kernel */
	size_t ring_len;
	uint8_t *mem;
	size_t mem_len;
	size_t size;
	unsigned count, mask;
	uint16_t group;
	uint16_t tail;
};

static int sys_setup(unsigned entries, struct io_uring_params *p)
{
	return (int)syscall(__NR_io_uring_setup, entries, p);
}

static int sys_enter(int fd, unsigned submit, unsigned min, unsigned flags, void *arg, size_t sz)
{
	return (int)syscall(__NR_io_uring_enter, fd, submit, min, flags, arg, sz);
}

static int sys_register(int fd, unsigned op, void *arg, unsigned n)
{
	return (int)syscall(__NR_io_uring_register, fd, op, arg, n);
}

static void fmt_err(char err[256], const char *what, int e)
{
	snprintf(err, 256, "%s: %s", what, strerror(e));
}

/* --- submission and completion --- */

static void submitted(struct uring *r, unsigned n)
{
	r->pending -= n > r->pending ? r->pending : n;
	if (!r->pending)
		r->epoch++;
}

int uring_submit(struct uring *r)
{
	while (r->pending) {
		int n = sys_enter(r->enter_fd, r->pending, 0, r->enter_flags, NULL, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		submitted(r, (unsigned)n);
		if (n == 0)
			return -EBUSY;
	}
	return 0;
}

uint64_t uring_epoch(const struct uring *r)
{
	return r->epoch;
}

struct io_uring_sqe *uring_sqe(struct uring *r, int owner, uint64_t data)
{
	unsigned head = __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
	unsigned tail = *r->sq_tail;
	if (tail - head >= r->sq_entries) {
		if (uring_submit(r) < 0)
			return NULL;
		head = __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
		if (tail - head >= r->sq_entries)
			return NULL;
	}
	struct io_uring_sqe *sqe = &r->sqes[tail & r->sq_mask];
	memset(sqe, 0, sizeof(*sqe));
	sqe->user_data = (uint64_t)owner << 56 | (data & URING_DATA_MASK);
	/* The SQ array maps slot i to entry i for good (set in uring_new). */
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	r->pending++;
	return sqe;
}

int uring_wait(struct uring *r, int timeout_ms)
{
	struct __kernel_timespec ts = { 0 };
	struct io_uring_getevents_arg arg = { .sigmask_sz = _NSIG / 8 };
	if (timeout_ms >= 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long long)(timeout_ms % 1000) * 1000000;
		arg.ts = (uint64_t)(uintptr_t)&ts;
	}
	int n = sys_enter(r->enter_fd, r->pending, timeout_ms == 0 ? 0 : 1,
	                  r->enter_flags | IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
	                  &arg, sizeof(arg));
	if (n < 0)
		return -errno;   /* -ETIME, -EINTR: nothing was submitted */
	submitted(r, (unsigned)n);
	return 0;
}

unsigned uring_dispatch(struct uring *r, unsigned max)
{
	unsigned done = 0;
	while (done < max) {
		unsigned head = *r->cq_head;
		if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
			break;
		/* Copy it and free the slot first: the callback may submit, and
		 * the kernel may post more completions behind this one. */
		struct io_uring_cqe c = r->cqes[head & r->cq_mask];
		__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
		unsigned owner = (unsigned)(c.user_data >> 56);
		if (owner < (unsigned)r->n_owners)
			r->owners[owner].fn(r->owners[owner].arg, &c);
		done++;
	}
	return done;
}

int uring_owner_add(struct uring *r, uring_cqe_fn fn, void *arg)
{
	if (r->n_owners >= URING_OWNERS)
		return -ENOSPC;
	r->owners[r->n_owners] = (struct uring_owner){ fn, arg };
	return r->n_owners++;
}

/* --- provided buffers --- */

struct uring_bufs *uring_bufs_new(struct uring *r, uint16_t group, unsigned count, size_t size,
                                  char err[256])
{
	struct uring_bufs *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, 256, "io_uring: out of memory");
		return NULL;
	}
	b->group = group;
	b->count = count;
	b->mask = count - 1;
	b->size = size;
	b->ring_len = (size_t)count * sizeof(struct io_uring_buf);
	b->mem_len = (size_t)count * size;
	/* Page-aligned, as the kernel requires for the ring; the buffers are
	 * touched only as far as datagrams fill them. */
	b->ring = mmap(NULL, b->ring_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	b->mem = mmap(NULL, b->mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->ring == MAP_FAILED || b->mem == MAP_FAILED) {
		fmt_err(err, "io_uring: mmap of provided buffers", errno);
		goto fail;
	}
	struct io_uring_buf_reg reg = { .ring_addr = (uint64_t)(uintptr_t)b->ring,
	                                .ring_entries = count, .bgid = group };
	if (sys_register(r->fd, IORING_REGISTER_PBUF_RING, &reg, 1) < 0) {
		fmt_err(err, "io_uring: registering provided buffers", errno);
		goto fail;
	}
	for (unsigned i = 0; i < count; i++)
		uring_buf_put(b, i);
	return b;
fail:
	if (b->ring != MAP_FAILED && b->ring)
		munmap(b->ring, b->ring_len);
	if (b->mem != MAP_FAILED && b->mem)
		munmap(b->mem, b->mem_len);
	free(b);
	return NULL;
}

void uring_bufs_free(struct uring *r, struct uring_bufs *b)
{
	if (!b)
		return;
	struct io_uring_buf_reg reg = { .bgid = b->group };
	if (r)
		sys_register(r->fd, IORING_UNREGISTER_PBUF_RING, &reg, 1);
	munmap(b->ring, b->ring_len);
	munmap(b->mem, b->mem_len);
	free(b);
}

uint8_t *uring_buf(const struct uring_bufs *b, unsigned id)
{
	return id < b->count ? b->mem + (size_t)id * b->size : NULL;
}

void uring_buf_put(struct uring_bufs *b, unsigned id)
{
	struct io_uring_buf *e = &b->ring->bufs[b->tail & b->mask];
	e->addr = (uint64_t)(uintptr_t)(b->mem + (size_t)id * b->size);
	e->len = (uint32_t)b->size;
	e->bid = (uint16_t)id;
	b->tail++;
	__atomic_store_n(&b->ring->tail, b->tail, __ATOMIC_RELEASE);
}

/* --- set-up --- */

/* Takes every waiting completion without an owner; how many. */
static unsigned drain(struct uring *r, uint64_t data, int *res)
{
	unsigned n = 0;
	for (;;) {
		unsigned head = *r->cq_head;
		if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
			return n;
		const struct io_uring_cqe *c = &r->cqes[head & r->cq_mask];
		if (c->user_data == data && !(c->flags & IORING_CQE_F_MORE))
			*res = c->res;
		__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
		n++;
	}
}

/*
 * Kernels 5.19 have provided-buffer rings but no multishot receive; they
 * refuse it with EINVAL in the first completion.  Ask once, at start, on a
 * throwaway socket no datagram can reach (never bound), then cancel.
 */
static int probe_multishot(struct uring *r, char err[256])
{
	int rc = 0;
	struct uring_bufs *b = uring_bufs_new(r, URING_PROBE_GROUP, 1, 4096, err);
	if (!b)
		return -EOPNOTSUPP;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		rc = -errno;
		fmt_err(err, "io_uring probe: socket", -rc);
		goto out;
	}
	struct msghdr m = { 0 };
	const uint64_t recv_data = 1, cancel_data = 2;
	struct io_uring_sqe *sqe = uring_sqe(r, 0, recv_data);
	sqe->opcode = IORING_OP_RECVMSG;
	sqe->fd = s;
	sqe->addr = (uint64_t)(uintptr_t)&m;
	sqe->len = 1;
	sqe->ioprio = IORING_RECV_MULTISHOT;
	sqe->flags = IOSQE_BUFFER_SELECT;
	sqe->buf_group = URING_PROBE_GROUP;
	int res = 1;
	rc = uring_wait(r, 0);
	if (rc < 0 && rc != -ETIME)
		goto out;
	rc = 0;
	drain(r, recv_data, &res);
	if (res != 1) {
		/* Ended already: refused (EINVAL) or otherwise failed. */
		rc = res < 0 ? res : -EOPNOTSUPP;
		fmt_err(err, "io_uring: multishot receive refused", -rc);
		goto out;
	}
	sqe = uring_sqe(r, 0, cancel_data);
	sqe->opcode = IORING_OP_ASYNC_CANCEL;
	sqe->addr = recv_data;
	/* Two completions: the cancel's and the receive's last (-ECANCELED). */
	unsigned got = 0;
	for (int i = 0; i < 100 && (res == 1 || got < 2); i++) {
		rc = uring_wait(r, 100);
		if (rc < 0 && rc != -ETIME && rc != -EINTR) {
			fmt_err(err, "io_uring probe: cancel", -rc);
			goto out;
		}
		rc = 0;
		got += drain(r, recv_data, &res);
	}
	if (res == 1) {
		rc = -ETIMEDOUT;
		fmt_err(err, "io_uring probe: cancel did not complete", -rc);
	}
out:
	if (s >= 0)
		close(s);
	uring_bufs_free(r, b);
	return rc;
}

static struct uring *setup(unsigned entries, unsigned flags, char err[256])
{
	struct io_uring_params p = { .flags = flags | IORING_SETUP_CQSIZE, .cq_entries = entries * 4 };
	int fd = sys_setup(entries, &p);
	if (fd < 0) {
		int e = errno;
		fmt_err(err, "io_uring_setup", e);
		errno = e;   /* uring_new tries again without the flags on EINVAL */
		return NULL;
	}
	struct uring *r = calloc(1, sizeof(*r));
	if (!r) {
		close(fd);
		snprintf(err, 256, "io_uring: out of memory");
		return NULL;
	}
	r->fd = r->enter_fd = fd;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP) || !(p.features & IORING_FEAT_EXT_ARG) ||
	    !(p.features & IORING_FEAT_NODROP)) {
		snprintf(err, 256, "io_uring: kernel too old (needs 5.11 or later)");
		goto fail;
	}
	size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	r->ring_map_len = sq_len > cq_len ? sq_len : cq_len;
	r->ring_map = mmap(NULL, r->ring_map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
	                   fd, IORING_OFF_SQ_RING);
	if (r->ring_map == MAP_FAILED) {
		r->ring_map = NULL;
		fmt_err(err, "io_uring: mmap", errno);
		goto fail;
	}
	r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
	               IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED) {
		r->sqes = NULL;
		fmt_err(err, "io_uring: mmap", errno);
		goto fail;
	}
	uint8_t *m = r->ring_map;
	r->sq_head = (unsigned *)(m + p.sq_off.head);
	r->sq_tail = (unsigned *)(m + p.sq_off.tail);
	r->sq_mask = *(unsigned *)(m + p.sq_off.ring_mask);
	r->sq_entries = p.sq_entries;
	unsigned *array = (unsigned *)(m + p.sq_off.array);
	for (unsigned i = 0; i < p.sq_entries; i++)
		array[i] = i;
	r->cq_head = (unsigned *)(m + p.cq_off.head);
	r->cq_tail = (unsigned *)(m + p.cq_off.tail);
	r->cq_mask = *(unsigned *)(m + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(m + p.cq_off.cqes);

	/* Registering the ring's own fd spares the kernel a file lookup per
	 * enter (5.18); without it the plain fd serves as well. */
	struct io_uring_rsrc_update up = { .offset = -1U, .data = (uint64_t)fd };
	if (sys_register(fd, IORING_REGISTER_RING_FDS, &up, 1) == 1) {
		r->enter_fd = (int)up.offset;
		r->enter_flags = IORING_ENTER_REGISTERED_RING;
	}
	return r;
fail:
	uring_free(r);
	return NULL;
}

struct uring *uring_new(unsigned entries, char err[256])
{
	/*
	 * Single issuer + deferred task work (6.1): completions are posted
	 * only inside our io_uring_enter, never by interrupting the loop
	 * elsewhere.  Older kernels refuse the flags: take a plain ring.
	 */
	struct uring *r = setup(entries, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, err);
	if (!r && errno == EINVAL)
		r = setup(entries, 0, err);
	if (!r)
		return NULL;
	if (probe_multishot(r, err) < 0) {
		uring_free(r);
		return NULL;
	}
	return r;
}

void uring_free(struct uring *r)
{
	if (!r)
		return;
	if (r->sqes)
		munmap(r->sqes, r->sqes_len);
	if (r->ring_map)
		munmap(r->ring_map, r->ring_map_len);
	close(r->fd);
	free(r);
}
