/* SPDX-License-Identifier: MIT */
/* Locked memory in words (memlock_text.h). */
#include "core/conf/memlock_text.h"

#include <stdio.h>

void memlock_size_text(rlim_t n, char *out, size_t cap)
{
	const rlim_t mib = (rlim_t)1 << 20;
	if (n == RLIM_INFINITY)
		snprintf(out, cap, "unlimited");
	else if (n >= mib && n % mib == 0)
		snprintf(out, cap, "%llu MiB", (unsigned long long)(n / mib));
	else if (n % 1024 == 0)
		snprintf(out, cap, "%llu KiB", (unsigned long long)(n / 1024));
	else
		snprintf(out, cap, "%llu bytes", (unsigned long long)n);
}

void memlock_limit_text(char *out, size_t cap)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0)
		snprintf(out, cap, "unknown");
	else
		memlock_size_text(rl.rlim_cur, out, cap);
}
