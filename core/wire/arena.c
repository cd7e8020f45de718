/* SPDX-License-Identifier: MIT */
/*
 * Bump allocator.  Chunks form a list; the first chunk is kept across
 * resets so that a query arena, once warm, never calls malloc.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire/arena.h"

#define ARENA_DEFAULT_CHUNK 4096
#define ARENA_ALIGN 8

struct arena_chunk {
	struct arena_chunk *next;
	size_t size;     /* usable bytes in data[] */
	size_t used;
	_Alignas(16) unsigned char data[];
};

struct arena {
	struct arena_chunk *head;    /* current chunk (newest) */
	struct arena_chunk *first;   /* the chunk kept across resets */
	size_t chunk_size;
	size_t total_used;
};

static struct arena_chunk *chunk_new(size_t size)
{
	struct arena_chunk *c = malloc(sizeof(*c) + size);
	if (!c)
		return NULL;
	c->next = NULL;
	c->size = size;
	c->used = 0;
	return c;
}

struct arena *arena_new(size_t first_chunk)
{
	struct arena *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->chunk_size = first_chunk ? first_chunk : ARENA_DEFAULT_CHUNK;
	a->first = chunk_new(a->chunk_size);
	if (!a->first) {
		free(a);
		return NULL;
	}
	a->head = a->first;
	return a;
}

void arena_free(struct arena *a)
{
	if (!a)
		return;
	struct arena_chunk *c = a->head;
	while (c) {
		struct arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	free(a);
}

void *arena_alloc(struct arena *a, size_t n)
{
	if (n == 0)
		n = 1;
	size_t need = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	struct arena_chunk *c = a->head;
	if (c->size - c->used < need) {
		/* Grow geometrically so that a big snapshot needs few chunks. */
		size_t size = a->chunk_size;
		while (size < need)
			size *= 2;
		if (a->chunk_size < (1u << 20))
			a->chunk_size *= 2;
		c = chunk_new(size);
		if (!c)
			return NULL;
		c->next = a->head;
		a->head = c;
	}
	void *p = c->data + c->used;
	c->used += need;
	a->total_used += need;
	return p;
}

void *arena_zalloc(struct arena *a, size_t n)
{
	void *p = arena_alloc(a, n);
	if (p)
		memset(p, 0, n);
	return p;
}

void *arena_memdup(struct arena *a, const void *p, size_t n)
{
	void *q = arena_alloc(a, n);
	if (q && n)
		memcpy(q, p, n);
	return q;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return arena_memdup(a, s, strlen(s) + 1);
}

void arena_reset(struct arena *a)
{
	/* Nothing allocated since the last reset (every allocation counts at
	 * least 8 bytes): most queries use no scratch at all. */
	if (a->total_used == 0)
		return;
	struct arena_chunk *c = a->head;
	while (c && c != a->first) {
		struct arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	a->head = a->first;
	a->first->next = NULL;
	a->first->used = 0;
	a->total_used = 0;
}

size_t arena_used(const struct arena *a)
{
	return a->total_used;
}
