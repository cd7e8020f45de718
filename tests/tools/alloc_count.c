/* SPDX-License-Identifier: MIT */
/*
 * alloc_count.so: counts every heap allocation of a whole process, for
 * tests/integration/test_noalloc.py.  Preloaded (LD_PRELOAD) into the real
 * geoacme binary, it interposes the allocator's entry points for the
 * program and every library it loads (libc itself, ldns, libmaxminddb,
 * OpenSSL, SQLite): malloc, calloc, realloc, reallocarray, free,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc, and strdup /
 * strndup, which allocate through malloc (glibc's internal calls to malloc
 * go through the interposable symbol too; strdup and strndup are defined
 * here as well so that no copy of them can get past the count).
 *
 * The counters live in a file that the test names in ALLOC_COUNT_FILE:
 * the library maps it shared at start, so the test reads them at any
 * moment without asking the server anything (struct below, native endian).
 * Allocations made before the mapping (the dynamic loader's) go to a
 * private counter that is added when the file is mapped.
 *
 * Allocation is forwarded to glibc's own __libc_* functions, which is
 * glibc's documented way for a replacement malloc to reach the real one
 * without dlsym (which itself allocates).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct alloc_counts {
	uint64_t allocs;   /* calls that returned (or tried to return) new memory */
	uint64_t frees;    /* calls to free with a non-NULL pointer */
};

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t alignment, size_t n);
extern void __libc_free(void *p);

static struct alloc_counts early;
static struct alloc_counts *counts = &early;

static void count_alloc(void)
{
	__atomic_add_fetch(&counts->allocs, 1, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void alloc_count_init(void)
{
	const char *path = getenv("ALLOC_COUNT_FILE");
	if (!path)
		return;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (ftruncate(fd, sizeof(struct alloc_counts)) == 0) {
		void *m = mmap(NULL, sizeof(struct alloc_counts), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED) {
			struct alloc_counts *shared = m;
			shared->allocs = early.allocs;
			shared->frees = early.frees;
			counts = shared;
		}
	}
	close(fd);
}

void *malloc(size_t n)
{
	count_alloc();
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	count_alloc();
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	count_alloc();
	return __libc_realloc(p, n);
}

void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, total);
}

void free(void *p)
{
	if (p)
		__atomic_add_fetch(&counts->frees, 1, __ATOMIC_RELAXED);
	__libc_free(p);
}

void *memalign(size_t alignment, size_t n)
{
	count_alloc();
	return __libc_memalign(alignment, n);
}

int posix_memalign(void **out, size_t alignment, size_t n)
{
	if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0)
		return EINVAL;
	void *p = memalign(alignment, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t alignment, size_t n)
{
	return memalign(alignment, n);
}

void *valloc(size_t n)
{
	return memalign((size_t)sysconf(_SC_PAGESIZE), n);
}

void *pvalloc(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return memalign(page, (n + page - 1) / page * page);
}

char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);
	if (p)
		memcpy(p, s, n);
	return p;
}

char *strndup(const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	char *p = malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}
