/* SPDX-License-Identifier: MIT */
/* Locked memory in words: the units every refusal names (memlock_text.h). */
#include <sys/resource.h>

#include "core/conf/memlock_text.h"
#include "tests/unit/check.h"

static const char *said(rlim_t n)
{
	static char out[32];
	memlock_size_text(n, out, sizeof(out));
	return out;
}

int main(void)
{
	is_str(said(RLIM_INFINITY), "unlimited", "no limit");
	is_str(said(0), "0 KiB", "none at all (prlimit --memlock=0)");
	is_str(said(1024), "1 KiB", "a KiB");
	is_str(said((rlim_t)1 << 20), "1 MiB", "a MiB");
	is_str(said((rlim_t)8 << 20), "8 MiB", "systemd's default of 8 MiB, not 8192 KiB");
	is_str(said((rlim_t)64 << 20), "64 MiB", "the unit's LimitMEMLOCK=64M");
	is_str(said(1536 * 1024), "1536 KiB", "not a whole MiB: KiB");
	is_str(said(4120), "4120 bytes", "not a whole KiB: bytes");

	struct rlimit rl = { 3 << 20, RLIM_INFINITY };
	struct rlimit old;
	getrlimit(RLIMIT_MEMLOCK, &old);
	rl.rlim_max = old.rlim_max;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < rl.rlim_cur)
		rl.rlim_cur = rl.rlim_max;
	ok(setrlimit(RLIMIT_MEMLOCK, &rl) == 0, "the soft limit set");
	char limit[32];
	memlock_limit_text(limit, sizeof(limit));
	is_str(limit, said(rl.rlim_cur), "memlock_limit_text says the soft limit");
	setrlimit(RLIMIT_MEMLOCK, &old);
	return done_testing();
}
