/* SPDX-License-Identifier: MIT */
#pragma once
#include <stddef.h>
/*
 * The privilege drop after binding (`user =` / `group =`): setgroups,
 * setgid, setuid, then a check that root cannot be regained.  serve does it
 * after binding; check does it in a child process so that every file is
 * opened as the user the server will run as.
 */

/* 0, or -1 with the reason in err. */
int privs_drop(const char *user, const char *group, char err[256]);

/*
 * After the AF_XDP setup (xdp_listen): drops the capabilities only that
 * setup uses (CAP_BPF, CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_NET_RAW,
 * CAP_IPC_LOCK) from the permitted, effective, inheritable and ambient
 * sets, so a server started with them (contrib/geoacme-xdp.conf, or root
 * without `user =`) does not keep them.  The names dropped go to `dropped`
 * ("" when it held none).  0, or -1 with the reason in err.
 */
int privs_drop_xdp_caps(char *dropped, size_t cap, char err[256]);
