/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Locked memory said one way in every refusal (storage/wal_pin.c,
 * core/net/xdp_memlock.c): an operator raising LimitMEMLOCK= reads the
 * same units whichever part asked.
 */
#include <stddef.h>
#include <sys/resource.h>

/* n bytes as "unlimited", "N MiB", "N KiB" or "N bytes", the largest unit
 * that is exact (0 is "0 KiB"). */
void memlock_size_text(rlim_t n, char *out, size_t cap);

/* The soft RLIMIT_MEMLOCK as memlock_size_text says it, or "unknown". */
void memlock_limit_text(char *out, size_t cap);
