/* SPDX-License-Identifier: MIT */
#include "cmd/privs.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/conf/log.h"

int privs_drop(const char *user, const char *group, char err[256])
{
	struct passwd *pw = getpwnam(user);
	if (!pw) {
		snprintf(err, 256, "user '%s' does not exist", user);
		return -1;
	}
	gid_t gid = pw->pw_gid;
	if (group) {
		struct group *gr = getgrnam(group);
		if (!gr) {
			snprintf(err, 256, "group '%s' does not exist", group);
			return -1;
		}
		gid = gr->gr_gid;
	}
	/* Already that user (systemd's User= with the same name): nothing to drop. */
	if (getuid() == pw->pw_uid && geteuid() == pw->pw_uid && getgid() == gid &&
	    getegid() == gid && pw->pw_uid != 0) {
		log_info("already running as user %s (uid %u, gid %u)", user, (unsigned)pw->pw_uid,
		         (unsigned)gid);
		return 0;
	}
	if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(pw->pw_uid) < 0) {
		snprintf(err, 256, "cannot drop privileges to %s: %s%s", user, strerror(errno),
		         geteuid() != 0 ? " (`user =` needs geoacme to start as root)" : "");
		return -1;
	}
	/* Verify: getting root back must be impossible. */
	if (pw->pw_uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) {
		snprintf(err, 256, "privileges were not dropped: could regain root");
		return -1;
	}
	log_info("running as user %s (uid %u, gid %u)", user, (unsigned)pw->pw_uid, (unsigned)gid);
	return 0;
}

int privs_drop_xdp_caps(char *dropped, size_t cap, char err[256])
{
	static const struct { unsigned cap; const char *name; } setup[] = {
		{ CAP_BPF, "CAP_BPF" }, { CAP_SYS_ADMIN, "CAP_SYS_ADMIN" },
		{ CAP_NET_ADMIN, "CAP_NET_ADMIN" }, { CAP_NET_RAW, "CAP_NET_RAW" },
		{ CAP_IPC_LOCK, "CAP_IPC_LOCK" },
	};
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	size_t n = 0;
	dropped[0] = '\0';
	if (syscall(SYS_capget, &h, data) < 0) {
		snprintf(err, 256, "capget: %s", strerror(errno));
		return -1;
	}
	bool any = false;
	for (size_t i = 0; i < sizeof(setup) / sizeof(setup[0]); i++) {
		unsigned w = setup[i].cap / 32, bit = 1u << (setup[i].cap % 32);
		if (!((data[w].permitted | data[w].effective | data[w].inheritable) & bit))
			continue;
		data[w].permitted &= ~bit;
		data[w].effective &= ~bit;
		data[w].inheritable &= ~bit;   /* and so the ambient set, which the kernel keeps within both */
		any = true;
		if (n < cap)
			n += (size_t)snprintf(dropped + n, cap - n, "%s%s", n ? " " : "", setup[i].name);
	}
	if (!any)
		return 0;
	if (syscall(SYS_capset, &h, data) < 0) {
		snprintf(err, 256, "capset: %s", strerror(errno));
		dropped[0] = '\0';
		return -1;
	}
	return 0;
}
