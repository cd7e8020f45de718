/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Growable arrays kept by hand (a pointer, a used count, a capacity): the
 * one place that doubles them.
 */
#include <stddef.h>

/*
 * Returns the array with room for one more element past the `n` in use:
 * `items` itself when there is room, else a larger block (the capacity
 * doubled, `first` elements the first time; *cap updated).  NULL when out
 * of memory, with `items` and *cap as they were.
 */
void *array_room(void *items, size_t n, size_t *cap, size_t size, size_t first);
