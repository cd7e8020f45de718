/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Numbers as an operator writes them in a config value, a command-line
 * argument or a zone file's rdata: strict, because strtol() alone let
 * "10.0.0.0/-8" through, and with it " 8", "+8" and "8 ".
 */
#include <stdbool.h>

/*
 * A decimal number written plainly: digits only (no sign, no blank, nothing
 * after), no leading zero but "0" itself, at most `max`.  False, with *out
 * untouched, for anything else.
 */
bool decimal_parse(const char *s, unsigned long max, unsigned long *out);
