/* SPDX-License-Identifier: MIT */
/*
 * core/rrl: per-prefix response rate limiting (issue #16 item 2).
 *
 * With the secret fixed (rrl_set_secret), the test looks for client
 * prefixes that fall in the same set as a victim's and alternates between
 * them: under the old table (one unkeyed FNV bucket per slot, reset by
 * whichever prefix came last) the victim got every answer out.  Here each
 * prefix keeps its own count, and prefixes past the set's ways share an
 * overflow count: limited at least as strictly, never less.
 */
#include <arpa/inet.h>
#include <string.h>

#include "check.h"
#include "core/wire/query.h"
#include "core/net/rrl.h"

static struct query q4(const char *addr)
{
	struct query q;
	memset(&q, 0, sizeof(q));
	struct sockaddr_in *sin = (struct sockaddr_in *)&q.client;
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, addr, &sin->sin_addr);
	q.client_len = sizeof(*sin);
	return q;
}

static struct query q6(const char *addr)
{
	struct query q;
	memset(&q, 0, sizeof(q));
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&q.client;
	sin6->sin6_family = AF_INET6;
	inet_pton(AF_INET6, addr, &sin6->sin6_addr);
	q.client_len = sizeof(*sin6);
	return q;
}

static const uint8_t secret[16] = "fixed-for-tests";

/* Up to `want` /24s other than the victim's that fall in the victim's set. */
static int colliding(struct rrl *r, const struct query *victim, struct query *out, int want)
{
	size_t set = rrl_set_index(r, victim);
	int n = 0;
	for (int a = 0; a < 256 && n < want; a++) {
		for (int b = 0; b < 256 && n < want; b++) {
			char addr[32];
			snprintf(addr, sizeof(addr), "10.%d.%d.7", a, b);
			struct query q = q4(addr);
			if ((a != 0 || b != 0) && rrl_set_index(r, &q) == set)
				out[n++] = q;
		}
	}
	return n;
}

static void test_collisions(void)
{
	struct rrl_config cfg = { .rate = 5, .slip = 2, .ipv4_prefix = 24, .ipv6_prefix = 56,
	                          .buckets = 1024 };
	struct rrl *r = rrl_new(&cfg);
	ok(r != NULL, "made");
	rrl_set_secret(r, secret);
	struct query victim = q4("10.0.0.1");
	struct query other[RRL_WAYS + 2];
	int n = colliding(r, &victim, other, RRL_WAYS + 2);
	is_int(n, RRL_WAYS + 2, "found %d prefixes in the victim's set", RRL_WAYS + 2);

	/* One colliding prefix alternating with the victim, 1000 each in one second. */
	int sent_v = 0, sent_o = 0;
	for (int i = 0; i < 1000; i++) {
		sent_v += rrl_check(r, &victim, 100) == RRL_SEND;
		sent_o += rrl_check(r, &other[0], 100) == RRL_SEND;
	}
	is_int(sent_v, 5, "victim: 5 of 1000 answered in the second (rate 5)");
	is_int(sent_o, 5, "colliding prefix: 5 of 1000");

	/* Every way busy, then more prefixes: they share the set's overflow count. */
	uint32_t now = 200;
	int sent[RRL_WAYS + 3] = { 0 };
	for (int i = 0; i < 200; i++) {
		sent[0] += rrl_check(r, &victim, now) == RRL_SEND;
		for (int k = 0; k < RRL_WAYS + 2; k++)
			sent[1 + k] += rrl_check(r, &other[k], now) == RRL_SEND;
	}
	is_int(sent[0], 5, "victim: still 5 with %d prefixes in its set", RRL_WAYS + 3);
	int total = 0, most = 0;
	for (int k = 0; k < RRL_WAYS + 3; k++) {
		total += sent[k];
		most = sent[k] > most ? sent[k] : most;
	}
	is_int(most, 5, "no prefix gets more than the rate");
	is_int(total, 5 * RRL_WAYS + 5, "the ways at the rate, the rest sharing one overflow count");

	/* The next second: every prefix starts over (and keeps its own count). */
	int next = 0;
	for (int i = 0; i < 50; i++)
		next += rrl_check(r, &victim, now + 1) == RRL_SEND;
	is_int(next, 5, "victim: 5 again the next second");

	/* Slip 2: every other limited answer is truncated, the rest dropped. */
	int slips = 0, drops = 0;
	for (int i = 0; i < 100; i++) {
		enum rrl_action a = rrl_check(r, &other[0], now + 1);
		slips += a == RRL_SLIP;
		drops += a == RRL_DROP;
	}
	is_int(slips + drops, 95, "95 limited");
	ok(slips >= 47 && slips <= 48, "about half slipped (%d)", slips);
	rrl_free(r);
}

static void test_prefixes(void)
{
	struct rrl_config cfg = { .rate = 3, .slip = 0, .ipv4_prefix = 24, .ipv6_prefix = 56,
	                          .buckets = 1024 };
	struct rrl *r = rrl_new(&cfg);
	rrl_set_secret(r, secret);
	struct query a = q4("192.0.2.1"), b = q4("192.0.2.200"), c = q4("192.0.3.1");
	int sa = 0, sc = 0;
	for (int i = 0; i < 10; i++) {
		sa += rrl_check(r, &a, 1) == RRL_SEND;
		sa += rrl_check(r, &b, 1) == RRL_SEND;
		sc += rrl_check(r, &c, 1) == RRL_SEND;
	}
	is_int(sa, 3, "one /24: one count");
	is_int(sc, 3, "the next /24: its own");
	struct query x = q6("2001:db8:0:100::1"), y = q6("2001:db8:0:1ff::2"),
	             z = q6("2001:db8:0:200::1"), m = q6("::ffff:192.0.2.9");
	int sx = 0, sz = 0, sm = 0;
	for (int i = 0; i < 10; i++) {
		sx += rrl_check(r, &x, 1) == RRL_SEND;
		sx += rrl_check(r, &y, 1) == RRL_SEND;
		sz += rrl_check(r, &z, 1) == RRL_SEND;
		sm += rrl_check(r, &m, 1) == RRL_SEND;
	}
	is_int(sx, 3, "one /56: one count");
	is_int(sz, 3, "the next /56: its own");
	is_int(sm, 0, "an IPv4-mapped client is its IPv4 /24 (already over)");
	rrl_free(r);

	struct rrl_config off = { .rate = 0 };
	ok(rrl_new(&off) == NULL, "rate 0: no limiter");
}

/* Two limiters do not hash alike: nobody can precompute collisions. */
static void test_secret_is_random(void)
{
	struct rrl_config cfg = { .rate = 5, .slip = 2, .ipv4_prefix = 24, .ipv6_prefix = 56,
	                          .buckets = 65536 };
	struct rrl *r1 = rrl_new(&cfg), *r2 = rrl_new(&cfg);
	int same = 0;
	for (int i = 0; i < 64; i++) {
		char addr[32];
		snprintf(addr, sizeof(addr), "10.1.%d.1", i);
		struct query q = q4(addr);
		same += rrl_set_index(r1, &q) == rrl_set_index(r2, &q);
	}
	ok(same < 8, "two processes put prefixes in different sets (%d of 64 alike)", same);
	rrl_free(r1);
	rrl_free(r2);
}

int main(void)
{
	test_collisions();
	test_prefixes();
	test_secret_is_random();
	return done_testing();
}
