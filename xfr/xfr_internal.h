/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * What the xfr files share (included only from xfr/): two helpers for
 * error texts and log lines, so that xfr/ needs nothing from acme/ (its
 * sibling: cmd/runtime.c wires the two together).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/wire/dname.h"

/* Fills err; names may be long, and a cut message is better than none. */
__attribute__((format(printf, 2, 3)))
static inline void xfr_errf(char err[256], const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, 256, fmt, ap);
	va_end(ap);
}

/* A name for logs; "(unprintable)" when it cannot be shown. */
static inline void xfr_name_str(const uint8_t *name, char *out, size_t cap)
{
	if (dname_to_str(name, out, cap) < 0)
		snprintf(out, cap, "(unprintable)");
}
