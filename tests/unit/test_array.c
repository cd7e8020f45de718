/* SPDX-License-Identifier: MIT */
/* Growable arrays: room for one more, doubling, nothing lost. */
#include <stdint.h>
#include <stdlib.h>

#include "core/wire/array.h"
#include "tests/unit/check.h"

int main(void)
{
	int *v = NULL;
	size_t n = 0, cap = 0;
	for (int i = 0; i < 100; i++) {
		int *w = array_room(v, n, &cap, sizeof(*w), 4);
		if (!ok(w != NULL, "room for element %d", i))
			break;
		v = w;
		v[n++] = i;
	}
	is_int(cap, 128, "capacity 4, doubled to 128 for 100 elements");
	int all = 1;
	for (int i = 0; i < 100; i++)
		all &= v[i] == i;
	ok(all, "every element kept across the reallocations");
	ok(array_room(v, 99, &cap, sizeof(*v), 4) == v, "room left: the same block");
	size_t huge = SIZE_MAX / 2 + 1;
	ok(array_room(v, huge, &huge, sizeof(*v), 4) == NULL, "a size that would overflow: NULL");
	is_int(huge == SIZE_MAX / 2 + 1, 1, "... and the capacity unchanged");
	free(v);
	return done_testing();
}
