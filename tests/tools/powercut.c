/* SPDX-License-Identifier: MIT */
/*
 * powercut.so: records what a process writes to one SQLite database and
 * what of it was synced, so that a test can rebuild the files as a disk
 * would hold them after a power cut (tests/integration/test_acme_powercut.py,
 * whose replay() reads the log this writes).
 *
 * Preloaded (LD_PRELOAD) into the real geoacme, it interposes the libc
 * entry points SQLite's unix VFS and storage/wal_sync.c use: open/openat
 * (creation of a file), pwrite/write, ftruncate, fsync/fdatasync, unlink,
 * rename, and syscall(2) for io_submit/io_getevents (the WAL's fdatasync
 * through Linux AIO, IOCB_CMD_FDSYNC/FSYNC).  Tracked: the database named
 * by POWERCUT_DB (an absolute path), its "-wal" and "-journal", and their
 * folder (its fsync makes a creation, unlink or rename durable).  The -shm
 * file is not tracked: SQLite rebuilds it from the WAL after a crash.
 *
 * The log (POWERCUT_LOG) is a sequence of records, native endian:
 *   struct rec { u64 seq; u32 type; u32 file; u64 arg; u64 len; } + len bytes
 * seq orders every record; file is 0 db, 1 wal, 2 journal, 3 folder.
 *   W write:    arg = offset, the bytes follow     (logged after it was made)
 *   T truncate: arg = size                          (logged after)
 *   S sync of `file` completed: arg = the last seq  (taken before the sync
 *     started, so it covers exactly the writes made before it)
 *   C created, U unlinked: a folder entry           (logged after)
 *   R renamed: file = from, arg = to
 *   A an AIO sync submitted (arg = covers); only its completion, seen in
 *     io_getevents, makes an S
 * A write is durable when an S of its file with arg >= its seq is in the
 * log; a folder entry when an S of the folder is.  Strict on purpose: the
 * writes a sync did not cover are all thrown away.
 *
 * POWERCUT_KILL="kind:n" kills the process with SIGKILL right after the
 * n-th event of a kind (1-based): "wal" a write to the WAL (a commit or a
 * group of them), "db" a write to the database file (a checkpoint),
 * "submit" an AIO sync submitted (a group commit's sync in flight),
 * "sync" a completed sync of any tracked file.  The test also kills from
 * outside at random moments.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

enum { REC_W = 1, REC_T, REC_S, REC_C, REC_U, REC_R, REC_A };
enum { F_DB, F_WAL, F_JOURNAL, F_DIR, F_N };

struct rec {
	uint64_t seq;
	uint32_t type;
	uint32_t file;
	uint64_t arg;
	uint64_t len;
};

#define MAX_FD 65536
#define MAX_AIO 64

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char paths[F_N][PATH_MAX];
static int active;
static int log_fd = -1;
static uint64_t seq;
static signed char fd_file[MAX_FD];      /* file + 1, 0 untracked */
static struct { uint64_t obj; int file; uint64_t covers; } aio[MAX_AIO];
static char kill_kind[16];
static unsigned long kill_at, kill_seen;

static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_ftruncate)(int, off_t);
static int (*real_close)(int);
static int (*real_unlink)(const char *);
static int (*real_rename)(const char *, const char *);
static long (*real_syscall)(long, ...);

static void resolve(void)
{
	real_pwrite = dlsym(RTLD_NEXT, "pwrite64");
	real_write = dlsym(RTLD_NEXT, "write");
	real_fsync = dlsym(RTLD_NEXT, "fsync");
	real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
	real_ftruncate = dlsym(RTLD_NEXT, "ftruncate64");
	real_close = dlsym(RTLD_NEXT, "close");
	real_unlink = dlsym(RTLD_NEXT, "unlink");
	real_rename = dlsym(RTLD_NEXT, "rename");
	real_syscall = dlsym(RTLD_NEXT, "syscall");
}

__attribute__((constructor)) static void powercut_init(void)
{
	resolve();
	const char *db = getenv("POWERCUT_DB");
	const char *log = getenv("POWERCUT_LOG");
	if (!db || !log || db[0] != '/')
		return;
	snprintf(paths[F_DB], PATH_MAX, "%s", db);
	snprintf(paths[F_WAL], PATH_MAX, "%s-wal", db);
	snprintf(paths[F_JOURNAL], PATH_MAX, "%s-journal", db);
	snprintf(paths[F_DIR], PATH_MAX, "%s", db);
	char *slash = strrchr(paths[F_DIR], '/');
	if (slash == paths[F_DIR])
		slash[1] = '\0';
	else
		*slash = '\0';
	log_fd = (int)real_syscall(SYS_openat, AT_FDCWD, log,
	                           O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (log_fd < 0)
		return;
	const char *k = getenv("POWERCUT_KILL");
	if (k) {
		const char *colon = strchr(k, ':');
		if (colon && (size_t)(colon - k) < sizeof(kill_kind)) {
			memcpy(kill_kind, k, (size_t)(colon - k));
			kill_at = strtoul(colon + 1, NULL, 10);
		}
	}
	active = 1;
}

/* Which tracked file a path names (-1: none): its folder made absolute. */
static int classify(int dirfd, const char *path)
{
	if (!active || !path)
		return -1;
	char full[PATH_MAX * 2 + 2], dir[PATH_MAX * 2 + 2], real[PATH_MAX];
	if (path[0] == '/') {
		snprintf(full, sizeof(full), "%s", path);
	} else {
		char base[PATH_MAX];
		if (dirfd == AT_FDCWD) {
			if (!getcwd(base, sizeof(base)))
				return -1;
		} else {
			char link[64];
			snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
			ssize_t n = readlink(link, base, sizeof(base) - 1);
			if (n < 0)
				return -1;
			base[n] = '\0';
		}
		snprintf(full, sizeof(full), "%s/%s", base, path);
	}
	/* The folder may be spelled with "." or a symlink: resolve it. */
	if (realpath(full, real)) {
		struct stat st;
		if (stat(real, &st) == 0 && S_ISDIR(st.st_mode))
			return strcmp(real, paths[F_DIR]) == 0 ? F_DIR : -1;
	}
	snprintf(dir, sizeof(dir), "%s", full);
	char *slash = strrchr(dir, '/');
	const char *name = slash + 1;
	*slash = '\0';
	if (!realpath(dir[0] ? dir : "/", real))
		return -1;
	if (strcmp(real, paths[F_DIR]) != 0)
		return -1;
	for (int f = F_DB; f <= F_JOURNAL; f++) {
		const char *p = strrchr(paths[f], '/') + 1;
		if (strcmp(p, name) == 0)
			return f;
	}
	return -1;
}

static int tracked(int fd)
{
	return fd >= 0 && fd < MAX_FD ? fd_file[fd] - 1 : -1;
}

/* Appends a record (the caller holds mu); returns its seq. */
static uint64_t emit(uint32_t type, int file, uint64_t arg, const void *data, size_t len)
{
	struct rec r = { ++seq, type, (uint32_t)file, arg, len };
	struct iovec iov[2] = { { &r, sizeof(r) }, { (void *)data, len } };
	real_syscall(SYS_writev, log_fd, iov, data ? 2 : 1);
	return r.seq;
}

static void maybe_kill(const char *kind)
{
	if (kill_at && strcmp(kind, kill_kind) == 0 && ++kill_seen == kill_at)
		real_syscall(SYS_kill, getpid(), SIGKILL);
}

static void track_open(int fd, int file, int created)
{
	if (fd < 0 || fd >= MAX_FD || file < 0)
		return;
	pthread_mutex_lock(&mu);
	fd_file[fd] = (signed char)(file + 1);
	if (created)
		emit(REC_C, file, 0, NULL, 0);
	pthread_mutex_unlock(&mu);
}

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static int do_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	if (!real_syscall)
		resolve();
	int file = classify(dirfd, path);
	int before = file >= 0 && file != F_DIR ? exists(paths[file]) : 1;
	int fd = (int)real_syscall(SYS_openat, dirfd, path, flags, mode);
	if (fd >= 0 && file >= 0) {
		track_open(fd, file, !before && (flags & O_CREAT));
		if ((flags & O_TRUNC) && file != F_DIR) {
			pthread_mutex_lock(&mu);
			emit(REC_T, file, 0, NULL, 0);
			pthread_mutex_unlock(&mu);
		}
	}
	return fd;
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = mode_arg(flags, ap);
	va_end(ap);
	return do_openat(AT_FDCWD, path, flags, m);
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = mode_arg(flags, ap);
	va_end(ap);
	return do_openat(AT_FDCWD, path, flags, m);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = mode_arg(flags, ap);
	va_end(ap);
	return do_openat(dirfd, path, flags, m);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = mode_arg(flags, ap);
	va_end(ap);
	return do_openat(dirfd, path, flags, m);
}

int close(int fd)
{
	if (fd >= 0 && fd < MAX_FD && fd_file[fd]) {
		pthread_mutex_lock(&mu);
		fd_file[fd] = 0;
		pthread_mutex_unlock(&mu);
	}
	return real_close(fd);
}

static void logged_write(int file, const void *buf, ssize_t n, off_t off)
{
	if (n <= 0)
		return;
	pthread_mutex_lock(&mu);
	emit(REC_W, file, (uint64_t)off, buf, (size_t)n);
	pthread_mutex_unlock(&mu);
	maybe_kill(file == F_WAL ? "wal" : file == F_DB ? "db" : "journal");
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	ssize_t r = real_pwrite(fd, buf, n, off);
	int file = tracked(fd);
	if (file >= 0)
		logged_write(file, buf, r, off);
	return r;
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	return pwrite(fd, buf, n, off);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	int file = tracked(fd);
	off_t off = file >= 0 ? lseek(fd, 0, SEEK_CUR) : 0;
	ssize_t r = real_write(fd, buf, n);
	if (file >= 0)
		logged_write(file, buf, r, off);
	return r;
}

static int truncate_fd(int fd, off_t size)
{
	int r = real_ftruncate(fd, size);
	int file = tracked(fd);
	if (r == 0 && file >= 0) {
		pthread_mutex_lock(&mu);
		emit(REC_T, file, (uint64_t)size, NULL, 0);
		pthread_mutex_unlock(&mu);
	}
	return r;
}

int ftruncate(int fd, off_t size)
{
	return truncate_fd(fd, size);
}

int ftruncate64(int fd, off_t size)
{
	return truncate_fd(fd, size);
}

static int synced(int fd, int (*fn)(int))
{
	int file = tracked(fd);
	if (file < 0)
		return fn(fd);
	pthread_mutex_lock(&mu);
	uint64_t covers = seq;
	pthread_mutex_unlock(&mu);
	int r = fn(fd);
	if (r == 0) {
		pthread_mutex_lock(&mu);
		emit(REC_S, file, covers, NULL, 0);
		pthread_mutex_unlock(&mu);
		maybe_kill("sync");
	}
	return r;
}

int fsync(int fd)
{
	return synced(fd, real_fsync);
}

int fdatasync(int fd)
{
	return synced(fd, real_fdatasync);
}

int unlink(const char *path)
{
	int file = classify(AT_FDCWD, path);
	int r = real_unlink(path);
	if (r == 0 && file >= 0) {
		pthread_mutex_lock(&mu);
		emit(REC_U, file, 0, NULL, 0);
		pthread_mutex_unlock(&mu);
	}
	return r;
}

int rename(const char *from, const char *to)
{
	int f = classify(AT_FDCWD, from), t = classify(AT_FDCWD, to);
	int r = real_rename(from, to);
	if (r == 0 && (f >= 0 || t >= 0)) {
		pthread_mutex_lock(&mu);
		if (f >= 0 && t >= 0)
			emit(REC_R, f, (uint64_t)t, NULL, 0);
		else if (f >= 0)
			emit(REC_U, f, 0, NULL, 0);
		else
			emit(REC_C, t, 0, NULL, 0);   /* its content is not known: the test avoids it */
		pthread_mutex_unlock(&mu);
	}
	return r;
}

/* io_submit: remember which syncs of ours went in, and what they cover. */
static void aio_submitted(struct iocb **cbs, long n, uint64_t covers)
{
	for (long i = 0; i < n; i++) {
		struct iocb *cb = cbs[i];
		if (cb->aio_lio_opcode != IOCB_CMD_FDSYNC && cb->aio_lio_opcode != IOCB_CMD_FSYNC)
			continue;
		int file = tracked((int)cb->aio_fildes);
		if (file < 0)
			continue;
		pthread_mutex_lock(&mu);
		for (int s = 0; s < MAX_AIO; s++) {
			if (!aio[s].obj) {
				aio[s].obj = (uint64_t)(uintptr_t)cb;
				aio[s].file = file;
				aio[s].covers = covers;
				emit(REC_A, file, covers, NULL, 0);
				break;
			}
		}
		pthread_mutex_unlock(&mu);
		maybe_kill("submit");
	}
}

static void aio_completed(struct io_event *ev, long n)
{
	for (long i = 0; i < n; i++) {
		int done = 0;
		pthread_mutex_lock(&mu);
		for (int s = 0; s < MAX_AIO; s++) {
			if (aio[s].obj && aio[s].obj == ev[i].obj) {
				if (ev[i].res == 0) {
					emit(REC_S, aio[s].file, aio[s].covers, NULL, 0);
					done = 1;
				}
				aio[s].obj = 0;
				break;
			}
		}
		pthread_mutex_unlock(&mu);
		if (done)
			maybe_kill("sync");
	}
}

long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a[6];
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real_syscall)
		resolve();
	/* What a sync covers is fixed before it is submitted. */
	uint64_t covers = 0;
	if (active && nr == SYS_io_submit) {
		pthread_mutex_lock(&mu);
		covers = seq;
		pthread_mutex_unlock(&mu);
	}
	long r = real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (!active || r <= 0)
		return r;
	int saved = errno;
	if (nr == SYS_io_submit)
		aio_submitted((struct iocb **)a[2], r, covers);
	else if (nr == SYS_io_getevents)
		aio_completed((struct io_event *)a[3], r);
	errno = saved;
	return r;
}
