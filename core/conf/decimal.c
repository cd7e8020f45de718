/* SPDX-License-Identifier: MIT */
#include "core/conf/decimal.h"

bool decimal_parse(const char *s, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;
	if (!*s || (s[0] == '0' && s[1]))
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > max)   /* checked per digit, so v never wraps */
			return false;
	}
	*out = v;
	return true;
}
