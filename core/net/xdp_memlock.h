/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Locked memory for the AF_XDP path: the kernel pins each socket's UMEM
 * and counts it against the user's RLIMIT_MEMLOCK unless the process has
 * CAP_IPC_LOCK; past the limit the UMEM is refused (ENOBUFS).  serve asks
 * before it opens an interface's sockets, so the reason logged is the
 * limit and what it would take, not "No buffer space available"; `geoacme
 * check` asks the same question as a warning.
 */
#include <stdbool.h>
#include <stddef.h>

/*
 * Whether this process may lock `need` bytes more, `held` being what its
 * UMEMs locked already: yes with CAP_IPC_LOCK, else when RLIMIT_MEMLOCK's
 * hard limit has room.  With `raise`, a soft limit below what is needed is
 * lifted to it (no privilege needed up to the hard limit).  false with the
 * reason in why.
 */
bool xdp_memlock_ok(size_t held, size_t need, bool raise, char why[256]);
