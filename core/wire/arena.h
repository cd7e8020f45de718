/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Bump allocator for the two short lifetimes: a zone snapshot (built off to
 * the side, freed whole when it is replaced) and a query (reset after each
 * reply).  Chunks are kept across arena_reset(), so a warm arena serves
 * queries without touching malloc.
 */
#include <stddef.h>

struct arena;

/* first_chunk: bytes of the first chunk, allocated now (0 = default 4 KiB). */
struct arena *arena_new(size_t first_chunk);
void arena_free(struct arena *a);            /* NULL-safe */
/* Returns 8-byte aligned memory, or NULL when malloc fails. */
void *arena_alloc(struct arena *a, size_t n);
void *arena_zalloc(struct arena *a, size_t n);
void *arena_memdup(struct arena *a, const void *p, size_t n);
char *arena_strdup(struct arena *a, const char *s);
/* Forget every allocation; keeps the first chunk, frees the others. */
void arena_reset(struct arena *a);
/* Bytes handed out since creation or the last reset. */
size_t arena_used(const struct arena *a);
