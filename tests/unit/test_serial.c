/* SPDX-License-Identifier: MIT */
/*
 * RFC 1982 serial comparison: the examples of section 3.2 and 5, the wrap,
 * and the undefined pair 2^31 apart (neither newer).
 */
#include <stdint.h>

#include "core/wire/serial.h"
#include "tests/unit/check.h"

int main(void)
{
	is_int(serial_compare(5, 5), SERIAL_EQUAL, "5 = 5");
	is_int(serial_compare(5, 10), SERIAL_LESS, "5 < 10");
	is_int(serial_compare(10, 5), SERIAL_GREATER, "10 > 5");
	/* RFC 1982 5.2 (SERIAL_BITS = 8 there; the same shape with 32 bits). */
	is_int(serial_compare(0xffffffffu, 0), SERIAL_LESS, "2^32-1 < 0 (wrap)");
	is_int(serial_compare(0, 0xffffffffu), SERIAL_GREATER, "0 > 2^32-1 (wrap)");
	is_int(serial_compare(0xfffffff0u, 5), SERIAL_LESS, "2^32-16 < 5");
	is_int(serial_compare(1, 0x80000000u), SERIAL_LESS, "1 < 2^31 (2^31 - 1 ahead)");
	is_int(serial_compare(0x80000000u, 1), SERIAL_GREATER, "2^31 > 1");
	is_int(serial_compare(0, 0x7fffffffu), SERIAL_LESS, "0 < 2^31 - 1");
	is_int(serial_compare(0, 0x80000001u), SERIAL_GREATER, "0 > 2^31 + 1 (further back than ahead)");
	/* RFC 1982 3.2: exactly 2^31 apart, the order is undefined. */
	is_int(serial_compare(0, 0x80000000u), SERIAL_UNDEFINED, "0 vs 2^31: undefined");
	is_int(serial_compare(0x80000000u, 0), SERIAL_UNDEFINED, "2^31 vs 0: undefined");
	is_int(serial_compare(10, 10u + 0x80000000u), SERIAL_UNDEFINED, "a vs a + 2^31: undefined");
	is_int(serial_compare(0xfffffff0u, 0x7ffffff0u), SERIAL_UNDEFINED, "undefined across the wrap");
	ok(!serial_newer(10, 10u + 0x80000000u) && !serial_newer(10u + 0x80000000u, 10),
	   "an undefined pair: neither is newer");
	ok(serial_newer(11, 10) && !serial_newer(10, 10) && !serial_newer(9, 10), "newer: only greater");
	ok(serial_newer(0, 0xffffffffu), "newer across the wrap");
	is_str(serial_order_name(SERIAL_LESS), "older", "names");
	return done_testing();
}
