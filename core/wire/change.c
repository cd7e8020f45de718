/* SPDX-License-Identifier: MIT */
/*
 * Change lists (see change.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/wire/change.h"
#include "core/wire/dname.h"

/*
 * From this size on the array is its own mapping, grown by mremap: the
 * kernel moves its pages instead of realloc copying them.  A secondary
 * reads a 1M-record AXFR into one list on the loop (issue #26), and
 * glibc's realloc copies blocks below its mmap threshold, which grows to
 * 32 MiB once such blocks are freed: a copy of tens of MiB in one round.
 */
#define CHANGE_MAP_BYTES ((size_t)256 << 10)

static size_t page_round(size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return (bytes + page - 1) / page * page;
}

/* Blocks for names and rdata: the first small (most lists hold one
 * UPDATE's records), each next one twice as big, up to 1 MiB. */
#define CHANGE_BLOCK_MIN ((size_t)1 << 10)
#define CHANGE_BLOCK_MAX ((size_t)1 << 20)

struct change_block {
	struct change_block *next;
	size_t size, used;
	uint8_t data[];
};

void change_list_init(struct change_list *cl)
{
	cl->v = NULL;
	cl->n = cl->cap = 0;
	cl->mapped = false;
	cl->blocks = NULL;
}

/* n bytes in the list's newest block, or a new one; NULL when out of memory. */
static uint8_t *block_take(struct change_list *cl, size_t n)
{
	struct change_block *b = cl->blocks;
	if (!b || b->size - b->used < n) {
		size_t size = b ? b->size * 2 : CHANGE_BLOCK_MIN;
		if (size > CHANGE_BLOCK_MAX)
			size = CHANGE_BLOCK_MAX;
		if (size < n)
			size = n;
		struct change_block *nb = malloc(sizeof(*nb) + size);
		if (!nb)
			return NULL;
		nb->next = b;
		nb->size = size;
		nb->used = 0;
		cl->blocks = b = nb;
	}
	uint8_t *p = b->data + b->used;
	b->used += n;
	return p;
}

void change_list_clear(struct change_list *cl)
{
	for (struct change_block *b = cl->blocks, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	if (cl->mapped)
		munmap(cl->v, page_round(cl->cap * sizeof(*cl->v)));
	else
		free(cl->v);
	change_list_init(cl);
}

/* Room for twice as many entries (16 at first); -ENOMEM. */
static int grow(struct change_list *cl)
{
	size_t cap = cl->cap ? cl->cap * 2 : 16;
	size_t bytes = cap * sizeof(*cl->v);
	void *v;
	if (bytes < CHANGE_MAP_BYTES) {
		v = realloc(cl->v, bytes);
		if (!v)
			return -ENOMEM;
	} else if (cl->mapped) {
		v = mremap(cl->v, page_round(cl->cap * sizeof(*cl->v)), page_round(bytes),
		           MREMAP_MAYMOVE);
		if (v == MAP_FAILED)
			return -ENOMEM;
	} else {
		/* The one copy: under CHANGE_MAP_BYTES. */
		v = mmap(NULL, page_round(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		         -1, 0);
		if (v == MAP_FAILED)
			return -ENOMEM;
		if (cl->n)
			memcpy(v, cl->v, cl->n * sizeof(*cl->v));
		free(cl->v);
		cl->mapped = true;
	}
	cl->v = v;
	cl->cap = cap;
	return 0;
}

int change_list_add(struct change_list *cl, enum change_op op, const uint8_t *name,
                    uint16_t type, uint32_t ttl, const uint8_t *rdata, uint16_t rdlen,
                    int64_t created_at)
{
	size_t name_len = dname_len(name);
	if (name_len == 0 || name_len > DNAME_MAX)
		return -EINVAL;
	if (cl->n == cl->cap && grow(cl) < 0)
		return -ENOMEM;
	uint8_t *mem = block_take(cl, name_len + rdlen);
	if (!mem)
		return -ENOMEM;
	memcpy(mem, name, name_len);
	if (rdlen)
		memcpy(mem + name_len, rdata, rdlen);
	struct change *c = &cl->v[cl->n++];
	c->op = (uint8_t)op;
	c->name_len = (uint8_t)name_len;
	c->type = type;
	c->rdlen = rdlen;
	c->ttl = ttl;
	c->created_at = created_at;
	c->name = mem;
	c->rdata = mem + name_len;
	return 0;
}

int change_list_set_rdata(struct change_list *cl, size_t i, const uint8_t *rdata,
                          uint16_t rdlen)
{
	struct change *c = &cl->v[i];
	uint8_t *mem = block_take(cl, (size_t)c->name_len + rdlen);
	if (!mem)
		return -ENOMEM;
	memcpy(mem, c->name, c->name_len);
	if (rdlen)
		memcpy(mem + c->name_len, rdata, rdlen);
	c->name = mem;
	c->rdata = mem + c->name_len;
	c->rdlen = rdlen;
	return 0;
}
