/* SPDX-License-Identifier: MIT */
/*
 * RFC 1982 serial comparison (see serial.h).
 */
#include "core/wire/serial.h"

#define SERIAL_HALF 0x80000000u   /* 2^31: SERIAL_BITS - 1 */

enum serial_order serial_compare(uint32_t a, uint32_t b)
{
	if (a == b)
		return SERIAL_EQUAL;
	uint32_t forward = b - a;   /* modulo 2^32: how far b lies ahead of a */
	if (forward == SERIAL_HALF)
		return SERIAL_UNDEFINED;
	return forward < SERIAL_HALF ? SERIAL_LESS : SERIAL_GREATER;
}

bool serial_newer(uint32_t a, uint32_t b)
{
	return serial_compare(a, b) == SERIAL_GREATER;
}

const char *serial_order_name(enum serial_order o)
{
	switch (o) {
	case SERIAL_EQUAL:
		return "equal";
	case SERIAL_LESS:
		return "older";
	case SERIAL_GREATER:
		return "newer";
	default:
		return "undefined";
	}
}
