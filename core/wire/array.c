/* SPDX-License-Identifier: MIT */
/* Growable arrays (see array.h). */
#include <stdint.h>
#include <stdlib.h>

#include "core/wire/array.h"

void *array_room(void *items, size_t n, size_t *cap, size_t size, size_t first)
{
	if (n < *cap)
		return items;
	size_t want = *cap ? *cap * 2 : first;
	if (want < *cap || (size && want > SIZE_MAX / size))
		return NULL;
	void *v = realloc(items, want * size);
	if (v)
		*cap = want;
	return v;
}
