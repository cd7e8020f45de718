/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Files that hold secrets -- a TSIG key file (config.c) and a DNSSEC
 * signing key (dnssec/key.c) -- are refused alike when other users could
 * read or change them: a leaked TSIG secret lets anyone change the ACME
 * zone, a leaked signing key lets anyone forge answers until the DS is
 * replaced.  Check the mode of the descriptor you read from (fstat), not
 * of the path, so the file checked is the file read.
 */
#include <stdbool.h>
#include <sys/stat.h>

/*
 * True for a regular file with no group or other permission bits.  Else
 * false, with err naming the file, what is wrong and the fix:
 * "PATH: readable by other users (mode 0644); run: chmod 600 PATH".
 */
bool secret_file_mode_ok(const char *path, const struct stat *st, char err[256]);
