/* SPDX-License-Identifier: MIT */
/*
 * Durable commits off the caller's back: fdatasync of the WAL through
 * Linux native AIO (see wal_sync.h).  The AIO system calls have no libc
 * wrappers; they are made through syscall(2).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/conf/log.h"
#include "storage/storage_internal.h"
#include "storage/wal_sync.h"

/* How long the start-up probe waits for its fdatasync. */
#define WAL_SYNC_PROBE_S 10

struct wal_sync {
	struct db *db;
	char *wal_path;
	int fd;                 /* "<db>-wal", read-only; -1 until it exists */
	int efd;                /* eventfd, -1 in blocking mode */
	aio_context_t ctx;
	bool async;
	bool in_flight;
	int done_early;         /* in flight but made on the spot: its result (1, -errno) */
	struct iocb cb;
};

static long sys_io_setup(unsigned n, aio_context_t *ctx)
{
	return syscall(SYS_io_setup, n, ctx);
}

static long sys_io_destroy(aio_context_t ctx)
{
	return syscall(SYS_io_destroy, ctx);
}

static long sys_io_submit(aio_context_t ctx, long n, struct iocb **cbs)
{
	return syscall(SYS_io_submit, ctx, n, cbs);
}

static long sys_io_getevents(aio_context_t ctx, long min, long max, struct io_event *ev,
                             struct timespec *timeout)
{
	return syscall(SYS_io_getevents, ctx, min, max, ev, timeout);
}

/*
 * The WAL's name in its folder must be on disk too, or a power cut could
 * lose the file with every commit in it.  SQLite syncs the folder at its
 * first sync of a new WAL, which with synchronous=NORMAL is the first
 * checkpoint, possibly many acknowledged commits later: so we do, each
 * time we open the WAL (at start, and if it is ever made anew).
 */
static int sync_folder(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;
	if (n >= sizeof(dir))
		return -ENAMETOOLONG;
	if (slash && n == 0)
		n = 1;   /* "/x-wal": the root */
	memcpy(dir, slash ? path : ".", slash ? n : 1);
	dir[slash ? n : 1] = '\0';
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int ret = fsync(fd) == 0 ? 0 : -errno;
	close(fd);
	return ret;
}

/*
 * Our descriptor of the WAL.  SQLite keeps the file (and its inode) for as
 * long as a connection is open, rewinding it rather than truncating it
 * (journal_size_limit is not set); should it ever be deleted and made
 * again, the link count of ours drops to 0 and we open the new one.
 */
static int wal_fd(struct wal_sync *ws)
{
	struct stat st;
	if (ws->fd >= 0 && fstat(ws->fd, &st) == 0 && st.st_nlink > 0)
		return ws->fd;
	if (ws->fd >= 0)
		close(ws->fd);
	ws->fd = open(ws->wal_path, O_RDONLY | O_CLOEXEC);
	if (ws->fd < 0)
		return -errno;
	int ret = sync_folder(ws->wal_path);
	if (ret < 0) {
		close(ws->fd);
		ws->fd = -1;
		return ret;
	}
	return ws->fd;
}

static int blocking_sync(struct wal_sync *ws)
{
	int fd = wal_fd(ws);
	if (fd < 0)
		return fd;
	return fdatasync(fd) == 0 ? 1 : -errno;
}

static int submit(struct wal_sync *ws, int fd)
{
	memset(&ws->cb, 0, sizeof(ws->cb));
	ws->cb.aio_lio_opcode = IOCB_CMD_FDSYNC;
	ws->cb.aio_fildes = (uint32_t)fd;
	ws->cb.aio_flags = IOCB_FLAG_RESFD;
	ws->cb.aio_resfd = (uint32_t)ws->efd;
	struct iocb *cbs[1] = { &ws->cb };
	long r = sys_io_submit(ws->ctx, 1, cbs);
	if (r == 1) {
		ws->in_flight = true;
		return 0;
	}
	return r < 0 ? -errno : -EAGAIN;
}

/* The completion, waiting at most `timeout` (NULL: forever).  1, 0, -errno. */
static int reap(struct wal_sync *ws, struct timespec *timeout)
{
	struct io_event ev;
	long r;
	do
		r = sys_io_getevents(ws->ctx, 1, 1, &ev, timeout);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return 0;
	ws->in_flight = false;
	return ev.res == 0 ? 1 : (int)(ev.res < 0 ? ev.res : -EIO);
}

/* One fdatasync through AIO, waited for: can this file system do it? */
static int probe(struct wal_sync *ws, char why[256])
{
	int fd = wal_fd(ws);
	if (fd < 0) {
		snprintf(why, 256, "cannot open %s (%s)", ws->wal_path, strerror(-fd));
		return fd;
	}
	int ret = submit(ws, fd);
	if (ret < 0) {
		snprintf(why, 256, "io_submit(IOCB_CMD_FDSYNC) on %s: %s", ws->wal_path,
		         strerror(-ret));
		return ret;
	}
	struct timespec limit = { WAL_SYNC_PROBE_S, 0 };
	ret = reap(ws, &limit);
	if (ret <= 0) {
		snprintf(why, 256, "AIO fdatasync of %s: %s", ws->wal_path,
		         ret ? strerror(-ret) : "no completion");
		return ret ? ret : -ETIMEDOUT;
	}
	uint64_t n;
	if (read(ws->efd, &n, sizeof(n)) < 0 && errno != EAGAIN) {
		snprintf(why, 256, "reading the AIO eventfd: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static int set_synchronous(struct db *db, const char *pragma, char why[256])
{
	if (sqlite3_exec(db->sql, pragma, NULL, NULL, NULL) == SQLITE_OK)
		return 0;
	snprintf(why, 256, "%s: %s: %s", db->path, pragma, sqlite3_errmsg(db->sql));
	return -EIO;
}

/* Gives up on AIO: back to SQLite's own durable commit. */
static void drop_aio(struct wal_sync *ws)
{
	if (ws->in_flight)
		wal_sync_wait(ws);
	if (ws->ctx)
		sys_io_destroy(ws->ctx);
	ws->ctx = 0;
	if (ws->efd >= 0)
		close(ws->efd);
	ws->efd = -1;
	ws->async = false;
}

struct wal_sync *wal_sync_new(struct db *db, bool async, char why[256])
{
	why[0] = '\0';
	struct wal_sync *ws = calloc(1, sizeof(*ws));
	if (!ws || !(ws->wal_path = db_wal_path(db))) {
		snprintf(why, 256, "out of memory");
		free(ws);
		return NULL;
	}
	ws->db = db;
	ws->fd = ws->efd = -1;
	if (async) {
		ws->async = true;
		if (sys_io_setup(1, &ws->ctx) < 0) {
			snprintf(why, 256, "io_setup: %s", strerror(errno));
			ws->ctx = 0;
			drop_aio(ws);
		} else if ((ws->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
			snprintf(why, 256, "eventfd: %s", strerror(errno));
			drop_aio(ws);
		} else if (probe(ws, why) < 0) {
			drop_aio(ws);
		}
	}
	/* FULL syncs the WAL in every COMMIT; NORMAL leaves that to us. */
	char err[256];
	if (set_synchronous(db, ws->async ? "PRAGMA synchronous=NORMAL" : "PRAGMA synchronous=FULL",
	                    err) < 0) {
		snprintf(why, 256, "%s", err);
		wal_sync_free(ws);
		return NULL;
	}
	return ws;
}

void wal_sync_free(struct wal_sync *ws)
{
	if (!ws)
		return;
	if (ws->async) {
		drop_aio(ws);
		/* Back to durable commits for whoever still writes. */
		char err[256];
		if (set_synchronous(ws->db, "PRAGMA synchronous=FULL", err) < 0)
			log_warn("%s", err);
	}
	if (ws->fd >= 0)
		close(ws->fd);
	free(ws->wal_path);
	free(ws);
}

bool wal_sync_async(const struct wal_sync *ws)
{
	return ws->async;
}

int wal_sync_event_fd(const struct wal_sync *ws)
{
	return ws->efd;
}

int wal_sync_start(struct wal_sync *ws)
{
	if (!ws->async)
		return 1;   /* synchronous=FULL: COMMIT returned durable */
	int fd = wal_fd(ws);
	int ret = fd < 0 ? fd : submit(ws, fd);
	if (ret == 0)
		return 0;
	/*
	 * The kernel would not queue it (out of AIO slots, say): this one on
	 * the spot, its result reported through the eventfd all the same, so
	 * the caller sees every completion the same way (and never from
	 * inside the call that started it).
	 */
	static struct log_limit lim;
	log_limited(&lim, LOG_WARN, "%s: io_submit: %s; syncing on the loop", ws->wal_path,
	            strerror(-ret));
	ws->done_early = fd < 0 ? fd : blocking_sync(ws);
	ws->in_flight = true;
	uint64_t one = 1;
	if (write(ws->efd, &one, sizeof(one)) < 0)
		log_limited(&lim, LOG_ERROR, "%s: eventfd: %s", ws->wal_path, strerror(errno));
	return 0;
}

int wal_sync_finish(struct wal_sync *ws)
{
	if (!ws->in_flight)
		return 1;
	uint64_t n;
	while (read(ws->efd, &n, sizeof(n)) < 0 && errno == EINTR)
		;
	if (ws->done_early) {
		int ret = ws->done_early;
		ws->done_early = 0;
		ws->in_flight = false;
		return ret;
	}
	struct timespec now = { 0, 0 };
	return reap(ws, &now);
}

int wal_sync_wait(struct wal_sync *ws)
{
	if (!ws->in_flight)
		return 1;
	if (ws->done_early)
		return wal_sync_finish(ws);
	int ret = reap(ws, NULL);
	uint64_t n;
	if (ws->efd >= 0)
		(void)!read(ws->efd, &n, sizeof(n));
	return ret;
}

int wal_sync_flush(struct wal_sync *ws)
{
	int ret = wal_sync_wait(ws);
	if (!ws->async)
		return ret;
	int now = blocking_sync(ws);
	return ret < 0 ? ret : now;
}
