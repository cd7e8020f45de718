/* SPDX-License-Identifier: MIT */
/* Permissions of files holding secrets (see secret_file.h). */
#include <stdio.h>

#include "core/conf/secret_file.h"

bool secret_file_mode_ok(const char *path, const struct stat *st, char err[256])
{
	if (!S_ISREG(st->st_mode)) {
		snprintf(err, 256, "%s: not a regular file", path);
		return false;
	}
	mode_t m = st->st_mode & 07777;
	const char *what = NULL;
	if (m & (S_IRGRP | S_IROTH))
		what = "readable by other users";
	else if (m & (S_IWGRP | S_IWOTH))
		what = "writable by other users";
	else if (m & (S_IXGRP | S_IXOTH))
		what = "accessible by other users";
	if (what) {
		snprintf(err, 256, "%s: %s (mode %04o); run: chmod 600 %s", path, what, (unsigned)m,
		         path);
		return false;
	}
	return true;
}
