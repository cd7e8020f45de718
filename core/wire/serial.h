/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Serial number arithmetic (RFC 1982): the one comparison of SOA serials
 * in geoacme.  Serials live on a circle of 2^32; s1 is less than s2 when
 * going forward from s1 to s2 is shorter than going back (RFC 1982 3.2):
 *
 *   s1 < s2  iff  (i1 < i2 and i2 - i1 < 2^31) or (i1 > i2 and i1 - i2 > 2^31)
 *
 * Two serials exactly 2^31 apart are neither less, equal nor greater:
 * their order is undefined, and every caller treats such a pair as "not
 * newer", which is what RFC 1982 3.2 asks ("implementations ... should
 * not" assume either order).  So `serial_newer(a, b)` is false both ways.
 */
#include <stdbool.h>
#include <stdint.h>

enum serial_order {
	SERIAL_EQUAL = 0,
	SERIAL_LESS,        /* a is older than b */
	SERIAL_GREATER,     /* a is newer than b */
	SERIAL_UNDEFINED,   /* a and b are 2^31 apart */
};

/* How a compares with b (RFC 1982 3.2). */
enum serial_order serial_compare(uint32_t a, uint32_t b);

/* a is strictly newer than b. */
bool serial_newer(uint32_t a, uint32_t b);

/* The name of an order, for log lines: "equal", "older", "newer", "undefined". */
const char *serial_order_name(enum serial_order o);
