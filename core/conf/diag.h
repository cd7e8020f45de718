/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A list of user-facing problems, each "file:line:col: what was expected".
 * Loaders add every problem they find and the caller prints them all and
 * fails once (OpenSMTPD's parser style), instead of stopping at the first.
 */
#include <stdarg.h>
#include <stddef.h>

struct diag {
	char **msgs;
	size_t n, cap;
};

void diag_init(struct diag *d);
void diag_clear(struct diag *d);
/* file may be NULL; line/col 0 are omitted from the prefix. */
void diag_add(struct diag *d, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void diag_vadd(struct diag *d, const char *file, int line, int col, const char *fmt, va_list ap)
    __attribute__((format(printf, 5, 0)));
/* Writes every message, one per line, to stderr. */
void diag_print(const struct diag *d);
