/* SPDX-License-Identifier: MIT */
/* SVCB/HTTPS presentation <-> wire (core/zone/svcb.c). */
#include <errno.h>

#include "core/zone/svcb.h"
#include "tests/unit/check.h"

static const uint8_t origin[] = { 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0 };

/* Text -> wire -> text -> wire gives the same bytes, and the text we print. */
static void round_trip(const char *text, const char *printed)
{
	uint8_t w1[4096], w2[4096];
	char err[256] = "", t[4096];
	int n1 = svcb_from_text(text, origin, w1, sizeof(w1), err);
	ok(n1 > 0, "parses: %s (%s)", text, err);
	if (n1 <= 0)
		return;
	int tl = svcb_to_text(w1, (size_t)n1, t, sizeof(t));
	ok(tl > 0, "prints: %s", text);
	is_str(t, printed, "printed form of %s", text);
	int n2 = svcb_from_text(t, origin, w2, sizeof(w2), err);
	is_int(n2, n1, "reparsed length: %s", t);
	if (n2 == n1)
		is_mem(w2, w1, (size_t)n1, "same bytes after a round trip: %s", t);
	is_int(svcb_check_wire(w1, (size_t)n1, err), 0, "wire form passes the rules");
}

int main(void)
{
	round_trip("1 .", "1 .");
	round_trip("0 foo", "0 foo.example.com.");
	round_trip("16 foo.example.org. alpn=h2,h3-19  mandatory=ipv4hint,alpn\tipv4hint=192.0.2.1",
	           "16 foo.example.org. mandatory=\"alpn,ipv4hint\" alpn=\"h2,h3-19\" "
	           "ipv4hint=\"192.0.2.1\"");
	round_trip("16 foo.example.org. alpn=\"f\\\\\\\\oo\\\\,bar,h2\"",
	           "16 foo.example.org. alpn=\"f\\\\\\\\oo\\\\,bar,h2\"");
	round_trip("1 @ key667=\"hello\\210qoo\" port=443 no-default-alpn alpn=h3",
	           "1 example.com. alpn=\"h3\" no-default-alpn port=\"443\" "
	           "key667=\"hello\\210qoo\"");
	round_trip("1 . ipv6hint=2001:db8::1,2001:db8::53:1 ech=AEX+DQ==",
	           "1 . ech=\"AEX+DQ==\" ipv6hint=\"2001:db8::1,2001:db8::53:1\"");
	round_trip("1 . dohpath=\"/dns-query{?dns}\" alpn=h2", "1 . alpn=\"h2\" dohpath=\"/dns-query{?dns}\"");

	/* The printed form never exceeds its buffer. */
	uint8_t w[512];
	char err[256], small[8];
	int n = svcb_from_text("1 foo.example.org. alpn=h2", origin, w, sizeof(w), err);
	is_int(svcb_to_text(w, (size_t)n, small, sizeof(small)), -ENOSPC, "too small a buffer");
	/* Truncated wire data is refused. */
	is_int(svcb_check_wire(w, (size_t)n - 1, err), -EBADMSG, "truncated value: %s", err);
	return done_testing();
}
