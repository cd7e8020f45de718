/* SPDX-License-Identifier: MIT */
/*
 * Locked mappings of a database's -wal and -shm files (see wal_pin.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sqlite3.h>

#include "core/conf/memlock_text.h"
#include "storage/storage_internal.h"
#include "storage/wal_pin.h"

/* SQLite's wal-index is mapped in regions of this size (xShmMap's szRegion). */
#define SHM_REGION 32768

struct pinned_file {
	char *path;
	void *addr;          /* NULL when nothing is pinned */
	size_t len;
	dev_t dev;
	ino_t ino;
};

struct wal_pin {
	struct pinned_file wal;
	int shm_regions;     /* the wal-index regions locked so far */
	size_t cap;          /* the WAL's bytes at most, whole pages */
	int refused;         /* -errno once mlock was refused, else 0 */
	char refused_why[256];
};

static size_t page_bytes(void)
{
	long n = sysconf(_SC_PAGESIZE);
	return n > 0 ? (size_t)n : 4096;
}

static size_t round_up(size_t n, size_t unit)
{
	return (n + unit - 1) / unit * unit;
}

static void unpin(struct pinned_file *f)
{
	if (f->addr)
		munmap(f->addr, f->len);   /* unlocks too */
	f->addr = NULL;
	f->len = 0;
}

/*
 * Locks [addr, addr + len): 0, or -errno with why (`what` names it).
 * mlock(2) through syscall(2): the sanitizers' runtimes make mlock a no-op
 * (locking their shadow memory would be ruinous), which would leave an
 * ASan build unpinned, unlike the release its tests stand for.  What is
 * locked here is a file's pages, never the heap.
 */
static int lock_range(const void *addr, size_t len, const char *what, char why[256])
{
	if (syscall(SYS_mlock, addr, len) == 0)
		return 0;
	int e = errno;
	char limit[64];
	memlock_limit_text(limit, sizeof(limit));
	snprintf(why, 256,
	         "locking %zu bytes of %s in memory: %s (RLIMIT_MEMLOCK is %s; raise it, or give "
	         "CAP_IPC_LOCK)",
	         len, what, strerror(e), limit);
	return -e;
}

/*
 * Pins the first `cap` bytes of f's file (whole pages, as far as the file
 * reaches).  The new range is locked before the old one is let go, so a
 * growing pin has no moment unpinned.  0 (also for a missing or empty
 * file: nothing to pin) or -errno with why.
 */
static int pin_file(struct pinned_file *f, size_t cap, char why[256])
{
	int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		unpin(f);
		if (e == ENOENT)
			return 0;
		snprintf(why, 256, "%s: %s", f->path, strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		snprintf(why, 256, "%s: %s", f->path, strerror(e));
		return -e;
	}
	size_t size = round_up((size_t)st.st_size, page_bytes());
	size_t len = size < cap ? size : cap;
	bool same = f->addr && f->dev == st.st_dev && f->ino == st.st_ino;
	if (len == 0 || (same && len <= f->len)) {
		/* Nothing new.  A file that shrank keeps its old, longer pin:
		 * the pages past its end are gone from the cache anyway. */
		close(fd);
		if (len == 0)
			unpin(f);
		return 0;
	}
	void *addr = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	int e = addr == MAP_FAILED ? errno : 0;
	close(fd);
	if (e) {
		snprintf(why, 256, "mapping %zu bytes of %s: %s", len, f->path, strerror(e));
		return -e;
	}
	if ((e = -lock_range(addr, len, f->path, why)) != 0) {
		munmap(addr, len);
		return -e;
	}
	unpin(f);
	f->addr = addr;
	f->len = len;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	return 0;
}

/*
 * The wal-index (-shm), 32 KiB per 4 096 WAL frames: its regions as SQLite
 * mapped them, locked where they are.  The file itself is never opened
 * here: closing any descriptor of a file drops every POSIX lock the
 * process holds on it, and SQLite's locks of the wal-index are such locks
 * (another process would then take this one's wal-index for abandoned and
 * reset it under us).  xShmMap without extending only returns regions
 * that exist; SQLite unmaps them, locked or not, when its last connection
 * in the process closes.
 */
static int pin_index(struct wal_pin *p, sqlite3 *sql, char why[256])
{
	sqlite3_file *f = NULL;
	if (sqlite3_file_control(sql, "main", SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK || !f ||
	    !f->pMethods || f->pMethods->iVersion < 2 || !f->pMethods->xShmMap)
		return 0;   /* not a VFS with a shared-memory index: nothing to pin */
	for (;;) {
		volatile void *region = NULL;
		if (f->pMethods->xShmMap(f, p->shm_regions, SHM_REGION, 0, &region) != SQLITE_OK ||
		    !region)
			return 0;
		int r = lock_range((const void *)region, SHM_REGION, "the wal-index", why);
		if (r < 0)
			return r;
		p->shm_regions++;
	}
}

struct wal_pin *wal_pin_new(const struct db *db, size_t cap)
{
	struct wal_pin *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	if (!(p->wal.path = db_wal_path(db))) {
		free(p);
		return NULL;
	}
	p->cap = round_up(cap, page_bytes());
	return p;
}

int wal_pin_update(struct wal_pin *p, sqlite3 *sql, char why[256])
{
	if (p->refused) {
		snprintf(why, 256, "%s", p->refused_why);
		return p->refused;
	}
	int r = pin_file(&p->wal, p->cap, why);
	if (r == 0)
		r = pin_index(p, sql, why);
	if (r == -EPERM || r == -ENOMEM || r == -EAGAIN) {   /* mlock's answers to a limit */
		/* mlock refused: the same answer next time, so say it once.
		 * Regions of the index locked before stay locked until SQLite
		 * unmaps them (a few pages). */
		unpin(&p->wal);
		p->refused = r;
		snprintf(p->refused_why, sizeof(p->refused_why), "%s", why);
	}
	return r;
}

bool wal_pin_refused(const struct wal_pin *p)
{
	return p->refused != 0;
}

size_t wal_pin_wal_bytes(const struct wal_pin *p)
{
	return p->wal.addr ? p->wal.len : 0;
}

void wal_pin_free(struct wal_pin *p)
{
	if (!p)
		return;
	unpin(&p->wal);
	free(p->wal.path);
	free(p);
}
