/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The privilege drop after binding (`user =` / `group =`): setgroups,
 * setgid, setuid, then a check that root cannot be regained.  serve does it
 * after binding; check does it in a child process so that every file is
 * opened as the user the server will run as.
 */

/* 0, or -1 with the reason in err. */
int privs_drop(const char *user, const char *group, char err[256]);
