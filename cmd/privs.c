/* SPDX-License-Identifier: MIT */
#include "cmd/privs.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
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
