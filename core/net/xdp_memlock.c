/* SPDX-License-Identifier: MIT */
/* Locked memory for AF_XDP UMEMs (xdp_memlock.h). */
#include "core/net/xdp_memlock.h"
#include "core/conf/memlock_text.h"

#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool has_ipc_lock(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	if (syscall(SYS_capget, &h, data) < 0)
		return false;
	return data[CAP_IPC_LOCK / 32].effective >> (CAP_IPC_LOCK % 32) & 1;
}

bool xdp_memlock_ok(size_t held, size_t need, bool raise, char why[256])
{
	if (has_ipc_lock())
		return true;
	struct rlimit rl;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0)
		return true;   /* cannot say: the kernel will */
	rlim_t want = (rlim_t)held + need;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
		char w[32], h[32];
		memlock_size_text(want, w, sizeof(w));
		memlock_size_text(rl.rlim_max, h, sizeof(h));
		snprintf(why, 256, "locked memory: its AF_XDP sockets need %s, RLIMIT_MEMLOCK is %s "
		         "and the process lacks CAP_IPC_LOCK (raise the limit, systemd's "
		         "LimitMEMLOCK=, or grant CAP_IPC_LOCK)", w, h);
		return false;
	}
	if (raise && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		/* Best effort: a seccomp filter may refuse it, then the kernel
		 * refuses the UMEM and says why. */
		rl.rlim_cur = want;
		(void)setrlimit(RLIMIT_MEMLOCK, &rl);
	}
	return true;
}
