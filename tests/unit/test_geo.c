/* SPDX-License-Identifier: MIT */
/*
 * The geo rule, the answer sets and the .mmdb lookup (the health checks:
 * test_geo_health.c).
 *
 * Expected distances and decisions were computed independently with a
 * textbook haversine in Python (R = 3958.8 mi):
 *
 *   def hav(a, b, c, d):
 *       p1, p2 = radians(a), radians(c)
 *       h = sin((p2-p1)/2)**2 + cos(p1)*cos(p2)*sin(radians(d-b)/2)**2
 *       return 2*3958.8*asin(sqrt(h))
 *
 * and are written here as numbers, not recomputed with the code under test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/conf/config.h"
#include "core/geo/geo_db.h"
#include "core/geo/geo_sites.h"
#include "core/wire/arena.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/zone/geo_sets.h"
#include "core/zone/svcb.h"
#include "tests/unit/check.h"
#include "tests/unit/geo_sites_example.h"

/*
 * Counting allocations: the program's malloc family replaces glibc's for
 * the whole process (glibc supports this) and forwards to it.  Skipped
 * under AddressSanitizer, which owns malloc there.
 */
#if !defined(__SANITIZE_ADDRESS__)
#define COUNT_ALLOCS 1
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
static long alloc_calls;
void *malloc(size_t n)
{
	alloc_calls++;
	return __libc_malloc(n);
}
void *calloc(size_t n, size_t size)
{
	alloc_calls++;
	return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n)
{
	alloc_calls++;
	return __libc_realloc(p, n);
}
void free(void *p)
{
	__libc_free(p);
}
#endif

/* ---------------------------------------------------------------- sites */

static struct config_geo_name default_gn(void)
{
	return (struct config_geo_name){ .name = "www", .ratio = 2.0, .margin_miles = 1000.0,
	                                 .ttl_single = 120, .ttl_pair = 3600 };
}

static const char *site_name_or_none(const struct geo_sites *s, int i)
{
	return i < 0 ? "(none)" : geo_site_name(s, (size_t)i);
}

/*
 * Checks a choice: sites nearest first, distances within 0.01 mi, TTL, and
 * that the records come out nearest first once `reversed` is applied.
 */
static void expect(const struct geo_sets *gs, const struct geo_sites *s, uint16_t type,
                   double lat, double lon, const char *first, double m1, const char *second,
                   double m2, uint32_t ttl, const char *label)
{
	struct geo_choice ch;
	int r = geo_sets_choose(gs, s, type, lat, lon, &ch);
	int family = type == RR_A ? 4 : 6;
	size_t alen = family == 4 ? 4 : 16;

	is_int(r, 0, "%s: geo_sets_choose returns 0", label);
	is_int(ch.n, second ? 2 : 1, "%s: %d site(s)", label, second ? 2 : 1);
	is_str(site_name_or_none(s, ch.site[0]), first, "%s: nearest is %s", label, first);
	ok(fabs(ch.miles[0] - m1) < 0.01, "%s: nearest at %.2f mi (got %.4f)", label, m1,
	   ch.miles[0]);
	if (second) {
		is_str(site_name_or_none(s, ch.site[1]), second, "%s: second is %s", label, second);
		ok(fabs(ch.miles[1] - m2) < 0.01, "%s: second at %.2f mi (got %.4f)", label, m2,
		   ch.miles[1]);
	}
	if (!ok(ch.rrset != NULL, "%s: has an rrset", label))
		return;
	is_int(ch.rrset->ttl, ttl, "%s: TTL %u", label, ttl);
	is_int(ch.rrset->type, type, "%s: type", label);
	is_int(ch.rrset->count, ch.n, "%s: record count", label);
	for (int k = 0; k < ch.n && k < ch.rrset->count; k++) {
		int idx = ch.reversed ? ch.rrset->count - 1 - k : k;
		uint8_t want[16];
		ok(geo_site_address(s, (size_t)ch.site[k], family, want), "%s: site has address",
		   label);
		is_int(ch.rrset->rr[idx].len, alen, "%s: rdata length", label);
		is_mem(ch.rrset->rr[idx].data, want, alen, "%s: record %d is site %d's address",
		       label, k, k);
	}
}

/* ------------------------------------------------------------ distance */

/* Textbook haversine, independent of the code under test. */
static double ref_haversine(double a, double b, double c, double d)
{
	double p1 = a * M_PI / 180, p2 = c * M_PI / 180;
	double dp = p2 - p1, dl = (d - b) * M_PI / 180;
	double h = sin(dp / 2) * sin(dp / 2) + cos(p1) * cos(p2) * sin(dl / 2) * sin(dl / 2);
	return 2 * 3958.8 * asin(sqrt(h));
}

static void test_distance(void)
{
	struct { double a, b, c, d, miles; const char *what; } known[] = {
		{ 52.37, 4.90, 48.88, 2.22, 268.18391, "Amsterdam-Paris" },
		{ 48.88, 2.22, 49.45, 11.08, 401.98703, "Paris-Nuremberg" },
		{ 29.76, -95.37, 39.04, -77.49, 1200.83743, "Houston-Ashburn" },
		{ -33.87, 151.21, -23.55, -46.63, 8299.87860, "Sydney-Sao Paulo" },
		{ 0, 0, 0, 1, 69.09409, "one degree of equator" },
		{ 0, 0, 0, 180, 12436.93700, "antipodes" },
		{ 90, 0, -90, 0, 12436.93700, "pole to pole" },
		{ 10, 179.5, 10, -179.5, 68.04437, "across the antimeridian" },
		{ 41.88, -87.63, 41.88, -87.63, 0.0, "same point" },
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		double got = geo_distance_miles(known[i].a, known[i].b, known[i].c, known[i].d);
		ok(fabs(got - known[i].miles) < 0.001, "distance %s = %.3f mi (got %.5f)",
		   known[i].what, known[i].miles, got);
	}
	/* A grid against the textbook formula. */
	double worst = 0;
	for (int lat1 = -80; lat1 <= 80; lat1 += 20)
		for (int lon1 = -170; lon1 <= 170; lon1 += 40)
			for (int lat2 = -85; lat2 <= 85; lat2 += 17)
				for (int lon2 = -175; lon2 <= 175; lon2 += 35) {
					double e = fabs(geo_distance_miles(lat1, lon1, lat2, lon2) -
					                ref_haversine(lat1, lon1, lat2, lon2));
					if (e > worst)
						worst = e;
				}
	ok(worst < 1e-6, "grid agrees with textbook haversine (worst %.2g mi)", worst);
}

/* ----------------------------------------------------- the operator's rule */

static void test_observations(void)
{
	struct test_config tc;
	char err[256] = "";
	make_config(&tc, example, N_EXAMPLE);
	struct geo_sites *s = geo_sites_new(&tc.c, err);
	if (!ok(s != NULL, "geo_sites_new: %s", err))
		return;
	is_int(geo_sites_count(s), 7, "seven sites");
	is_int(geo_sites_find(s, "ashburn"), 2, "find ashburn");
	is_int(geo_sites_find(s, "nowhere"), -ENOENT, "find unknown");
	ok(geo_site_alive(s, 0, GEO_IPV4) && geo_site_alive(s, 6, GEO_IPV4), "sites start alive");

	struct arena *a = arena_new(0);
	struct config_geo_name gn = default_gn();
	struct geo_sets *gs = geo_sets_build(a, s, &gn, err);
	if (!ok(gs != NULL, "geo_sets_build: %s", err))
		goto out;

	/* The published observations. */
	expect(gs, s, RR_A, 52.37, 4.90, "paris", 268.18, "nuremberg", 336.25, 3600, "Amsterdam");
	expect(gs, s, RR_A, 29.76, -95.37, "ashburn", 1200.84, "sanjose", 1607.97, 3600,
	       "Houston");
	expect(gs, s, RR_A, 41.88, -87.63, "ashburn", 567.60, NULL, 0, 120, "Chicago");
	/* Same pair as Houston, but San Jose is the nearer one. */
	expect(gs, s, RR_A, 20.59, -100.39, "sanjose", 1732.25, "ashburn", 1863.03, 3600,
	       "Queretaro");
	expect(gs, s, RR_A, -34.60, -58.38, "saopaulo", 1040.65, NULL, 0, 120, "Buenos Aires");

	/* The fixture's threshold points (see tests/fixtures/make_mmdb.pl). */
	expect(gs, s, RR_A, 43.4092, -90.0, "ashburn", 715.81, NULL, 0, 120,
	       "margin just exceeded (diff 1003.0)");
	expect(gs, s, RR_A, 43.6945, -90.0, "ashburn", 723.00, "sanjose", 1720.00, 3600,
	       "margin not reached (diff 997.0)");
	expect(gs, s, RR_A, 22.4035, -158.0, "sanjose", 2377.63, NULL, 0, 120,
	       "ratio just exceeded (2.005)");
	expect(gs, s, RR_A, 21.7816, -158.0, "sanjose", 2401.88, "ashburn", 4791.75, 3600,
	       "ratio not reached (1.995)");

	/* The decision carries the rule's two comparisons (explain prints them). */
	struct geo_choice ch;
	geo_sets_choose(gs, s, RR_A, 43.6945, -90.0, &ch);
	ok(ch.beyond_ratio && !ch.beyond_margin, "margin not reached: ratio holds, margin not");
	geo_sets_choose(gs, s, RR_A, 21.7816, -158.0, &ch);
	ok(!ch.beyond_ratio && ch.beyond_margin, "ratio not reached: margin holds, ratio not");
	geo_sets_choose(gs, s, RR_A, 22.4035, -158.0, &ch);
	ok(ch.beyond_ratio && ch.beyond_margin && ch.n == 1, "single: both comparisons hold");

	/* Pair stored canonically: the reversed flag says who goes first. */
	geo_sets_choose(gs, s, RR_A, 52.37, 4.90, &ch);
	ok(ch.reversed, "Amsterdam: Paris 198.51.100.7 sorts after Nuremberg .3: reversed");
	geo_sets_choose(gs, s, RR_A, 20.59, -100.39, &ch);
	ok(!ch.reversed, "Queretaro: San Jose .5 sorts before Ashburn .10: not reversed");
	ok(!ch.fail_open, "not fail-open");

	/* AAAA: only paris, nuremberg, singapore, sydney have IPv6. */
	ok(geo_sets_has_type(gs, RR_A) && geo_sets_has_type(gs, RR_AAAA), "has A and AAAA");
	ok(!geo_sets_has_type(gs, RR_TXT), "no TXT");
	expect(gs, s, RR_AAAA, 41.88, -87.63, "paris", 4126.48, "nuremberg", 4441.48, 3600,
	       "Chicago AAAA over IPv6 sites");
	expect(gs, s, RR_AAAA, 52.37, 4.90, "paris", 268.18, "nuremberg", 336.25, 3600,
	       "Amsterdam AAAA");
	is_int(geo_sets_choose(gs, s, RR_TXT, 0, 0, &ch), -EINVAL, "TXT -> -EINVAL");

#ifdef COUNT_ALLOCS
	long before = alloc_calls;
	for (int i = 0; i < 1000; i++) {
		geo_sets_choose(gs, s, RR_A, -90 + (i % 180), -180 + (i % 360), &ch);
		geo_sets_choose(gs, s, RR_AAAA, 45, (i % 360) - 180, &ch);
	}
	is_int(alloc_calls - before, 0, "geo_sets_choose allocates nothing");
#endif
out:
	arena_free(a);
	geo_sites_free(s);
}

/* Visits every prebuilt RRset. */
struct walk {
	size_t n, singles, pairs, bad_order, signed_, ttl_bad;
	const uint8_t *owner;
	bool owner_ok;
};

static int walk_fn(void *arg, const uint8_t *owner, struct rrset *rr)
{
	struct walk *w = arg;
	w->n++;
	w->owner_ok = w->owner_ok && owner == w->owner;
	if (rr->count == 1) {
		w->singles++;
		if (rr->ttl != 120)
			w->ttl_bad++;
	} else {
		w->pairs++;
		if (rr->ttl != 3600)
			w->ttl_bad++;
		if (memcmp(rr->rr[0].data, rr->rr[1].data, rr->rr[0].len) >= 0)
			w->bad_order++;
	}
	if (rr->sig[0].len)
		w->signed_++;
	return 0;
}

static int stop_fn(void *arg, const uint8_t *owner, struct rrset *rr)
{
	int *n = arg;
	return ++*n == 3 ? 42 : 0;
}

static void test_sets(void)
{
	struct test_config tc;
	char err[256] = "";
	make_config(&tc, example, N_EXAMPLE);
	struct geo_sites *s = geo_sites_new(&tc.c, err);
	struct arena *a = arena_new(0);
	struct config_geo_name gn = default_gn();
	struct geo_sets *gs = geo_sets_build(a, s, &gn, err);
	if (!ok(gs != NULL, "sets: build: %s", err))
		goto out;
	/* A: 7 singles + 21 pairs; AAAA: 4 singles + 6 pairs. */
	is_int(geo_sets_rrset_count(gs), 38, "7+21 A and 4+6 AAAA answer sets");
	static const uint8_t owner[] = "\3www\7example\3com";
	struct walk w = { .owner = owner, .owner_ok = true };
	is_int(geo_sets_foreach(gs, owner, walk_fn, &w), 0, "foreach returns 0");
	is_int(w.n, 38, "foreach visits 38");
	is_int(w.singles, 11, "11 singles");
	is_int(w.pairs, 27, "27 pairs");
	is_int(w.bad_order, 0, "every pair in canonical order");
	is_int(w.ttl_bad, 0, "singles ttl_single, pairs ttl_pair");
	is_int(w.signed_, 0, "no RRSIG yet");
	ok(w.owner_ok, "owner passed through");
	int visits = 0;
	is_int(geo_sets_foreach(gs, owner, stop_fn, &visits), 42, "foreach stops on non-zero");
	is_int(visits, 3, "after the third");

	/* Subset of sites, custom parameters. */
	const char *sub[] = { "sydney", "paris" };
	struct config_geo_name gn2 = { .name = "eu", .sites = (char **)sub, .n_sites = 2,
	                               .ratio = 3.0, .margin_miles = 100, .ttl_single = 60,
	                               .ttl_pair = 600 };
	struct geo_sets *gs2 = geo_sets_build(a, s, &gn2, err);
	if (ok(gs2 != NULL, "subset build: %s", err)) {
		is_int(geo_sets_rrset_count(gs2), 6, "2+1 A, 2+1 AAAA");
		/* Chicago: Paris 4126.48, Sydney 9243.56: ratio 2.24 <= 3 -> pair. */
		expect(gs2, s, RR_A, 41.88, -87.63, "paris", 4126.48, "sydney", 9243.56, 600,
		       "subset, ratio 3");
	}
	const char *bad[] = { "paris", "atlantis" };
	struct config_geo_name gn3 = default_gn();
	gn3.sites = (char **)bad;
	gn3.n_sites = 2;
	err[0] = 0;
	ok(geo_sets_build(a, s, &gn3, err) == NULL, "unknown site rejected");
	ok(strstr(err, "atlantis") != NULL, "error names the site: %s", err);
out:
	arena_free(a);
	geo_sites_free(s);
}

/* Sites on the equator at given distances from a client at 0,0. */
static double lon_for_miles(double miles)
{
	return miles / 3958.8 * 180.0 / M_PI;
}

static void threshold_case(double first, double second, bool want_single, const char *label)
{
	struct site_def d[] = {
		{ "near", 0, lon_for_miles(first), "192.0.2.1", NULL },
		{ "far", 0, -lon_for_miles(second), "192.0.2.2", NULL },
	};
	struct test_config tc;
	char err[256];
	make_config(&tc, d, 2);
	struct geo_sites *s = geo_sites_new(&tc.c, err);
	struct arena *a = arena_new(0);
	struct config_geo_name gn = default_gn();
	struct geo_sets *gs = geo_sets_build(a, s, &gn, err);
	if (want_single)
		expect(gs, s, RR_A, 0, 0, "near", first, NULL, 0, 120, label);
	else
		expect(gs, s, RR_A, 0, 0, "near", first, "far", second, 3600, label);
	arena_free(a);
	geo_sites_free(s);
}

static void test_thresholds(void)
{
	/* ratio 2, margin 1000 */
	threshold_case(1500, 3001, true, "ratio 2.0007 > 2, diff 1501 > 1000: single");
	threshold_case(1500, 2999, false, "ratio 1.9993 <= 2, diff 1499: pair");
	threshold_case(400, 1401, true, "ratio 3.5, diff 1001 > 1000: single");
	threshold_case(400, 1399, false, "ratio 3.5, diff 999 <= 1000: pair");
	threshold_case(600, 1199, false, "ratio 1.998, diff 599: neither, pair");
	threshold_case(0, 500, false, "client on a site, second 500 mi: diff too small, pair");
	threshold_case(0, 1001, true, "client on a site, second 1001 mi: single");
}

static void test_liveness(void)
{
	struct test_config tc;
	char err[256] = "";
	make_config(&tc, example, N_EXAMPLE);
	tc.s[1].enabled = false;   /* nuremberg */
	struct geo_sites *s = geo_sites_new(&tc.c, err);
	struct arena *a = arena_new(0);
	struct config_geo_name gn = default_gn();
	struct geo_sets *gs = geo_sets_build(a, s, &gn, err);
	struct geo_choice ch;
	if (!ok(gs != NULL, "build with a disabled site: %s", err))
		goto out;
	ok(!geo_site_enabled(s, 1) && geo_site_enabled(s, 0), "enabled flags");
	/* 6 A sites: 6 + 15; AAAA paris, singapore, sydney: 3 + 3. */
	is_int(geo_sets_rrset_count(gs), 27, "disabled site has no answer sets");
	/* Amsterdam: Paris 268.18, then Singapore 6519.57 (no Nuremberg). */
	expect(gs, s, RR_AAAA, 52.37, 4.90, "paris", 268.18, NULL, 0, 120,
	       "Amsterdam AAAA, Nuremberg disabled");
	/* A: Paris 268.18, then Ashburn (Amsterdam-Ashburn ~3800) -> single. */
	geo_sets_choose(gs, s, RR_A, 52.37, 4.90, &ch);
	ok(ch.n == 1 && ch.site[0] == 0, "Amsterdam A with Nuremberg disabled: Paris alone");

	/* Dead Ashburn: Chicago goes to San Jose 1837.91, then Paris 4126.48. */
	geo_site_set_alive(s, 2, GEO_IPV4, false);
	ok(!geo_site_alive(s, 2, GEO_IPV4), "ashburn dead");
	expect(gs, s, RR_A, 41.88, -87.63, "sanjose", 1837.91, NULL, 0, 120,
	       "Chicago, Ashburn dead");
	ok(!geo_sets_choose(gs, s, RR_A, 41.88, -87.63, &ch) && !ch.fail_open, "not fail-open");

	/* Only Sydney alive: it alone, ttl_single, everywhere. */
	for (size_t i = 0; i < geo_sites_count(s); i++)
		geo_site_set_alive(s, i, GEO_IPV4, i == 6);
	expect(gs, s, RR_A, 41.88, -87.63, "sydney", 9243.56, NULL, 0, 120,
	       "only Sydney alive");
	ok(!geo_sets_choose(gs, s, RR_A, 41.88, -87.63, &ch) && !ch.fail_open,
	   "one alive is not fail-open");

	/* Nothing alive: fail open over every enabled site. */
	geo_site_set_alive(s, 6, GEO_IPV4, false);
	expect(gs, s, RR_A, 52.37, 4.90, "paris", 268.18, NULL, 0, 120,
	       "none alive: Amsterdam as if all alive (Nuremberg still disabled)");
	geo_sets_choose(gs, s, RR_A, 29.76, -95.37, &ch);
	ok(ch.fail_open, "fail_open set");
	ok(ch.n == 2 && ch.site[0] == 2 && ch.site[1] == 4,
	   "none alive: Houston gets Ashburn + San Jose");

	/* Liveness carried over to a new table by name. */
	struct test_config tc2;
	make_config(&tc2, example + 2, 3);   /* ashburn, singapore, sanjose */
	struct geo_sites *s2 = geo_sites_new(&tc2.c, err);
	geo_site_set_alive(s, 3, GEO_IPV4, true);       /* singapore alive in the old one */
	geo_sites_copy_alive(s2, s);
	ok(!geo_site_alive(s2, 0, GEO_IPV4) && geo_site_alive(s2, 1, GEO_IPV4) && !geo_site_alive(s2, 2, GEO_IPV4),
	   "copy_alive matches names, not indices");
	geo_sites_free(s2);
out:
	arena_free(a);
	geo_sites_free(s);
}

static void test_families(void)
{
	struct site_def d[] = {
		{ "v4only", 10, 10, "192.0.2.1", NULL },
		{ "v6only", 10, 11, NULL, "2001:db8::1" },
	};
	struct test_config tc;
	char err[256] = "";
	make_config(&tc, d, 2);
	struct geo_sites *s = geo_sites_new(&tc.c, err);
	struct arena *a = arena_new(0);
	struct config_geo_name gn = default_gn();
	struct geo_sets *gs = geo_sets_build(a, s, &gn, err);
	struct geo_choice ch;
	/* The v6-only site is nearer to 10,12 but cannot answer A. */
	expect(gs, s, RR_A, 10, 12, "v4only", geo_distance_miles(10, 12, 10, 10), NULL, 0, 120,
	       "A only from the IPv4 site");
	expect(gs, s, RR_AAAA, 10, 9, "v6only", geo_distance_miles(10, 9, 10, 11), NULL, 0, 120,
	       "AAAA only from the IPv6 site");
	/* Even when the only IPv6 site is dead: fail open rather than empty. */
	geo_site_set_alive(s, 1, GEO_IPV6, false);
	geo_sets_choose(gs, s, RR_AAAA, 10, 9, &ch);
	ok(ch.n == 1 && ch.site[0] == 1 && ch.fail_open, "dead lone IPv6 site: fail open");

	/* Liveness is per family: a dual-stack site dead over IPv4 only is out
	 * of A answers and still in AAAA answers (and the cache notices). */
	struct site_def dual[] = { { "near", 10, 10, "192.0.2.1", "2001:db8::1" },
	                           { "far", 10, 40, "192.0.2.2", "2001:db8::2" } };
	struct test_config tcdual;
	make_config(&tcdual, dual, 2);
	struct geo_sites *sdual = geo_sites_new(&tcdual.c, err);
	struct geo_sets *gdual = geo_sets_build(a, sdual, &gn, err);
	geo_sets_choose(gdual, sdual, RR_A, 10, 11, &ch);
	ok(ch.site[0] == 0, "dual: A nearest is near while alive");
	geo_site_set_alive(sdual, 0, GEO_IPV4, false);
	ok(!geo_site_alive(sdual, 0, GEO_IPV4) && geo_site_alive(sdual, 0, GEO_IPV6) && !geo_site_up(sdual, 0),
	   "near: down over IPv4 only; not up as a whole");
	geo_sets_choose(gdual, sdual, RR_A, 10, 11, &ch);
	ok(ch.n == 1 && ch.site[0] == 1 && !ch.fail_open, "A: near is out, far alone");
	geo_sets_choose(gdual, sdual, RR_AAAA, 10, 11, &ch);
	ok(ch.site[0] == 0 && !ch.fail_open, "AAAA: near still answers");
	geo_site_set_alive(sdual, 0, GEO_IPV4, true);
	geo_sets_choose(gdual, sdual, RR_A, 10, 11, &ch);
	ok(ch.site[0] == 0, "A: near back once alive over IPv4");
	geo_sites_free(sdual);

	/* No IPv6 anywhere: AAAA has nothing, choose says so. */
	struct site_def d4[] = { { "a", 1, 1, "192.0.2.1", NULL }, { "b", 2, 2, "192.0.2.2", NULL } };
	struct test_config tc4;
	make_config(&tc4, d4, 2);
	struct geo_sites *s4 = geo_sites_new(&tc4.c, err);
	struct geo_sets *gs4 = geo_sets_build(a, s4, &gn, err);
	ok(!geo_sets_has_type(gs4, RR_AAAA), "no IPv6 site: no AAAA");
	is_int(geo_sets_choose(gs4, s4, RR_AAAA, 0, 0, &ch), 0, "choose AAAA returns 0");
	ok(ch.rrset == NULL && ch.n == 0 && ch.site[0] == -1, "with no rrset");

	/* Every site disabled: the name cannot answer anything. */
	tc4.s[0].enabled = tc4.s[1].enabled = false;
	struct geo_sites *s5 = geo_sites_new(&tc4.c, err);
	err[0] = 0;
	ok(geo_sets_build(a, s5, &gn, err) == NULL && err[0], "all disabled rejected: %s", err);

	/* Two sites sharing one address: the pair holds one record. */
	struct site_def dd[] = { { "a", 0, 1, "192.0.2.9", NULL }, { "b", 0, -1, "192.0.2.9", NULL } };
	struct test_config tcd;
	make_config(&tcd, dd, 2);
	struct geo_sites *sd = geo_sites_new(&tcd.c, err);
	struct geo_sets *gsd = geo_sets_build(a, sd, &gn, err);
	geo_sets_choose(gsd, sd, RR_A, 0, 0, &ch);
	ok(ch.n == 2 && ch.rrset->count == 1 && !ch.reversed, "shared address: one record");

	geo_sites_free(sd);
	geo_sites_free(s5);
	geo_sites_free(s4);
	arena_free(a);
	geo_sites_free(s);
}

static void test_ties(void)
{
	char err[256];
	struct config_geo_name gn = default_gn();
	struct arena *a = arena_new(0);
	struct geo_choice ch;

	/* Mirror images around the client: the first in config order wins. */
	struct site_def ew[] = { { "east", 0, 10, "192.0.2.200", NULL },
	                         { "west", 0, -10, "192.0.2.100", NULL } };
	struct site_def we[] = { ew[1], ew[0] };
	struct test_config tc;
	make_config(&tc, ew, 2);
	struct geo_sites *s1 = geo_sites_new(&tc.c, err);
	struct geo_sets *g1 = geo_sets_build(a, s1, &gn, err);
	geo_sets_choose(g1, s1, RR_A, 0, 0, &ch);
	ok(ch.n == 2 && ch.site[0] == 0 && ch.site[1] == 1, "tie: east (index 0) first");
	ok(ch.reversed, "east .200 sorts second: reversed");
	make_config(&tc, we, 2);
	struct geo_sites *s2 = geo_sites_new(&tc.c, err);
	struct geo_sets *g2 = geo_sets_build(a, s2, &gn, err);
	geo_sets_choose(g2, s2, RR_A, 0, 0, &ch);
	ok(ch.n == 2 && ch.site[0] == 0 && !strcmp(geo_site_name(s2, 0), "west"),
	   "tie: west (index 0) first when listed first");
	ok(!ch.reversed, "west .100 sorts first: not reversed");

	/* True ties that rounding can split: from the pole every site on one
	 * parallel is equally far, though the vectors differ in the last bits. */
	struct site_def ring[] = { { "r0", 80, 123, "192.0.2.10", NULL },
	                           { "r1", 80, -61.3, "192.0.2.11", NULL },
	                           { "r2", 80, 17.9, "192.0.2.12", NULL },
	                           { "r3", 80, -150.7, "192.0.2.13", NULL } };
	make_config(&tc, ring, 4);
	struct geo_sites *s4 = geo_sites_new(&tc.c, err);
	struct geo_sets *g4 = geo_sets_build(a, s4, &gn, err);
	geo_sets_choose(g4, s4, RR_A, 90, 0, &ch);
	ok(ch.n == 2 && ch.site[0] == 0 && ch.site[1] == 1, "pole: r0 then r1 (got %d, %d)",
	   ch.site[0], ch.site[1]);
	geo_site_set_alive(s4, 0, GEO_IPV4, false);
	geo_sets_choose(g4, s4, RR_A, 90, 0, &ch);
	ok(ch.n == 2 && ch.site[0] == 1 && ch.site[1] == 2, "pole, r0 dead: r1 then r2 (got %d, %d)",
	   ch.site[0], ch.site[1]);
	geo_sites_free(s4);

	/* Three at one spot: the two lowest indices, in order, every time. */
	struct site_def same[] = { { "x", 5, 5, "192.0.2.3", NULL }, { "y", 5, 5, "192.0.2.2", NULL },
	                           { "z", 5, 5, "192.0.2.1", NULL } };
	make_config(&tc, same, 3);
	struct geo_sites *s3 = geo_sites_new(&tc.c, err);
	struct geo_sets *g3 = geo_sets_build(a, s3, &gn, err);
	bool stable = true;
	for (int i = 0; i < 10; i++) {
		geo_sets_choose(g3, s3, RR_A, -40, 100, &ch);
		stable = stable && ch.n == 2 && ch.site[0] == 0 && ch.site[1] == 1;
	}
	ok(stable, "identical sites: indices 0 and 1, always");
	geo_site_set_alive(s3, 0, GEO_IPV4, false);
	geo_sets_choose(g3, s3, RR_A, -40, 100, &ch);
	ok(ch.n == 2 && ch.site[0] == 1 && ch.site[1] == 2, "x dead: y then z");

	geo_sites_free(s1);
	geo_sites_free(s2);
	geo_sites_free(s3);
	arena_free(a);
}

static void test_sites_errors(void)
{
	struct test_config tc;
	char err[256];
	struct site_def dup[] = { { "a", 0, 0, "192.0.2.1", NULL }, { "a", 1, 1, "192.0.2.2", NULL } };
	make_config(&tc, dup, 2);
	err[0] = 0;
	ok(geo_sites_new(&tc.c, err) == NULL && strstr(err, "twice"), "duplicate: %s", err);
	struct site_def far[] = { { "a", 91, 0, "192.0.2.1", NULL } };
	make_config(&tc, far, 1);
	err[0] = 0;
	ok(geo_sites_new(&tc.c, err) == NULL && strstr(err, "range"), "latitude 91: %s", err);
	struct site_def noaddr[] = { { "a", 1, 0, NULL, NULL } };
	make_config(&tc, noaddr, 1);
	err[0] = 0;
	ok(geo_sites_new(&tc.c, err) == NULL && strstr(err, "address"), "no address: %s", err);
	make_config(&tc, example, 2);
	struct geo_sites *s = geo_sites_new(&tc.c, err);
	double lat, lon;
	geo_site_position(s, 1, &lat, &lon);
	ok(lat == 49.45 && lon == 11.08, "position kept");
	uint8_t addr[16];
	ok(geo_site_address(s, 0, 4, addr) && !memcmp(addr, "\xc6\x33\x64\x07", 4), "address v4");
	ok(!geo_site_address(s, 5, 4, addr), "no such site");
	geo_sites_free(s);
	geo_sites_free(NULL);
}

/* ----------------------------------------------------------------- mmdb */

static char fixture_dir[64];

static bool make_fixtures(void)
{
	char script[1024], cmd[2048];
	const char *fx = getenv("FIXTURES");

	if (fx)
		snprintf(script, sizeof(script), "%s/make_mmdb.pl", fx);
	else   /* run by hand: the fixtures sit next to this file's folder */
		snprintf(script, sizeof(script), "%.*s/../fixtures/make_mmdb.pl",
		         (int)(strrchr(__FILE__, '/') ? strrchr(__FILE__, '/') - __FILE__ : 1),
		         strrchr(__FILE__, '/') ? __FILE__ : ".");
	strcpy(fixture_dir, "/tmp/test_geo.XXXXXX");
	if (!mkdtemp(fixture_dir))
		return false;
	snprintf(cmd, sizeof(cmd), "perl '%s' --layout all --out '%s' >/dev/null", script,
	         fixture_dir);
	return system(cmd) == 0;
}

static void remove_fixtures(void)
{
	const char *files[] = { "city.mmdb", "flat-ipv4.mmdb", "flat-ipv6.mmdb", "geo.toml",
	                        "explain.out" };
	char p[256];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", fixture_dir, files[i]);
		unlink(p);
	}
	rmdir(fixture_dir);
}

struct db_setup {
	char paths[4][256];
	char *ptrs[4];
	struct config_geo g;
};

static struct geo_db *open_dbs(struct db_setup *d, const char *lookup_path, bool with_default,
                               const char *f1, const char *f2, char err[256])
{
	const char *files[2] = { f1, f2 };
	memset(d, 0, sizeof(*d));
	for (int i = 0; i < 2 && files[i]; i++) {
		snprintf(d->paths[i], sizeof(d->paths[i]), "%s/%s", fixture_dir, files[i]);
		d->ptrs[i] = d->paths[i];
		d->g.n_databases++;
	}
	d->g.databases = d->ptrs;
	d->g.lookup_path = (char *)lookup_path;
	d->g.has_default_location = with_default;
	d->g.default_lat = 50.0;
	d->g.default_lon = 10.0;
	err[0] = 0;
	return geo_db_open(&d->g, NULL, err);
}

static int locate(const struct geo_db *db, const char *ip, struct geo_location *loc)
{
	uint8_t a[16];
	if (inet_pton(AF_INET, ip, a) == 1)
		return geo_db_locate(db, 4, a, loc);
	if (inet_pton(AF_INET6, ip, a) == 1)
		return geo_db_locate(db, 6, a, loc);
	return -999;
}

static void expect_loc(const struct geo_db *db, const char *ip, double lat, double lon,
                       int prefix, int db_index, double tol, const char *label)
{
	struct geo_location loc;
	int r = locate(db, ip, &loc);
	is_int(r, 0, "%s: %s located", label, ip);
	ok(loc.found, "%s: %s found", label, ip);
	ok(fabs(loc.lat - lat) <= tol && fabs(loc.lon - lon) <= tol,
	   "%s: %s at %.4f,%.4f (got %.6f,%.6f)", label, ip, lat, lon, loc.lat, loc.lon);
	is_int(loc.prefix, prefix, "%s: %s prefix /%d", label, ip, prefix);
	is_int(loc.db_index, db_index, "%s: %s from database %d", label, ip, db_index);
}

static void expect_miss(const struct geo_db *db, const char *ip, int want_r, int prefix,
                        const char *label)
{
	struct geo_location loc;
	int r = locate(db, ip, &loc);
	is_int(r, want_r, "%s: %s returns %d", label, ip, want_r);
	ok(!loc.found && loc.db_index == -1, "%s: %s not found", label, ip);
	is_int(loc.prefix, prefix, "%s: %s miss applies to /%d", label, ip, prefix);
	if (want_r == 0)
		ok(loc.lat == 50.0 && loc.lon == 10.0, "%s: %s default location", label, ip);
}

static void test_mmdb(void)
{
	char err[256];
	struct db_setup d;
	struct geo_db *db;

	if (!ok(make_fixtures(), "make_mmdb.pl wrote fixtures into %s", fixture_dir))
		return;

	/* GeoIP2-City layout, detected.  IPv4 lives under ::/96: 96 + 26. */
	db = open_dbs(&d, NULL, true, "city.mmdb", NULL, err);
	if (ok(db != NULL, "open city.mmdb: %s", err)) {
		is_str(geo_db_layout(db, 0), "location", "city layout detected");
		is_int(geo_db_count(db), 1, "one database");
		ok(strstr(geo_db_path(db, 0), "city.mmdb") != NULL, "path kept");
		expect_loc(db, "192.0.2.5", 52.37, 4.90, 26, 0, 0, "city");
		expect_loc(db, "192.0.2.130", 41.88, -87.63, 26, 0, 0, "city");
		expect_loc(db, "198.51.100.1", -34.60, -58.38, 25, 0, 0, "city");
		expect_loc(db, "203.0.113.33", 22.4035, -158.0, 28, 0, 0, "city");
		expect_loc(db, "2001:db8:3::1", 41.88, -87.63, 48, 0, 0, "city v6");
		expect_loc(db, "2001:db8:10:200::1", 22.4035, -158.0, 56, 0, 0, "city v6");
		/* Aliased IPv4-mapped address: an IPv6 lookup, IPv6 bit space. */
		expect_loc(db, "::ffff:192.0.2.70", 29.76, -95.37, 122, 0, 0, "city mapped");
		/* 0.0.0.0/1 is empty: ::/97 in the tree. */
		expect_miss(db, "10.0.0.1", 0, 1, "city");
		/* The entry has a location map but no coordinates. */
		expect_miss(db, "198.51.100.200", 0, 25, "city no coords");
		expect_miss(db, "2001:db8:abcd::1", 0, 33, "city v6");
		/* Again, now from the verdict cache, interleaved: the same answers. */
		for (int pass = 0; pass < 2; pass++) {
			expect_loc(db, "192.0.2.5", 52.37, 4.90, 26, 0, 0, "cached");
			expect_miss(db, "10.0.0.1", 0, 1, "cached");
			expect_loc(db, "2001:db8:3::1", 41.88, -87.63, 48, 0, 0, "cached v6");
			expect_loc(db, "192.0.2.130", 41.88, -87.63, 26, 0, 0, "cached");
		}
		/* The same 16 key bytes as 192.0.2.5 but IPv6: not its verdict. */
		struct geo_location same_bytes;
		locate(db, "c000:205::", &same_bytes);
		ok(!same_bytes.found, "c000:205:: is not 192.0.2.5 from the cache");
		expect_loc(db, "192.0.2.5", 52.37, 4.90, 26, 0, 0, "cached after c000:205::");
#ifdef COUNT_ALLOCS
		struct geo_location loc;
		long before = alloc_calls;
		for (int i = 0; i < 200; i++) {
			locate(db, "192.0.2.5", &loc);
			locate(db, "10.0.0.1", &loc);
			locate(db, "2001:db8:3::1", &loc);
		}
		is_int(alloc_calls - before, 0, "geo_db_locate allocates nothing");
#endif
		geo_db_free(db);
	}
	/* Explicit paths. */
	db = open_dbs(&d, "location", false, "city.mmdb", NULL, err);
	if (ok(db != NULL, "open city with lookup_path location: %s", err)) {
		is_str(geo_db_layout(db, 0), "location", "layout as configured");
		expect_loc(db, "192.0.2.64", 29.76, -95.37, 26, 0, 0, "city explicit");
		expect_miss(db, "10.0.0.1", -ENOENT, 1, "city, no default");
		geo_db_free(db);
	}
	db = open_dbs(&d, "", true, "city.mmdb", NULL, err);
	if (ok(db != NULL, "open city with flat lookup_path: %s", err)) {
		is_str(geo_db_layout(db, 0), "flat", "flat as configured");
		expect_miss(db, "192.0.2.5", 0, 26, "city read as flat finds no coordinates");
		geo_db_free(db);
	}
	db = open_dbs(&d, "location.nested", true, "city.mmdb", NULL, err);
	if (ok(db != NULL, "open with a dotted path: %s", err)) {
		is_str(geo_db_layout(db, 0), "location.nested", "custom path named");
		expect_miss(db, "192.0.2.5", 0, 26, "custom path that is not there");
		geo_db_free(db);
	}

	/* DB-IP layout: separate files; floats. */
	db = open_dbs(&d, NULL, true, "flat-ipv4.mmdb", "flat-ipv6.mmdb", err);
	if (ok(db != NULL, "open flat files: %s", err)) {
		is_str(geo_db_layout(db, 0), "flat", "flat v4 detected");
		is_str(geo_db_layout(db, 1), "flat", "flat v6 detected");
		expect_loc(db, "192.0.2.5", 52.37, 4.90, 26, 0, 1e-5, "flat");
		expect_loc(db, "192.0.2.200", 20.59, -100.39, 26, 0, 1e-5, "flat");
		expect_loc(db, "203.0.113.70", -33.87, 151.21, 28, 0, 1e-5, "flat");
		/* The IPv4 file is skipped for IPv6 addresses. */
		expect_loc(db, "2001:db8:5::1", -34.60, -58.38, 48, 1, 1e-5, "flat v6");
		/* 10/8: /1 in the IPv4 file; the IPv6 file's ::/96 area is empty
		 * from bit 3 (2001:: starts 001), i.e. /0 in IPv4 terms. */
		expect_miss(db, "10.0.0.1", 0, 1, "flat");
		expect_miss(db, "198.51.100.129", 0, 25, "flat no coords");
		expect_miss(db, "2001:db8:10:500::1", 0, 56, "flat v6");
		geo_db_free(db);
	}

	/* Mixed layouts; the first file cannot place IPv4 addresses. */
	db = open_dbs(&d, NULL, true, "flat-ipv6.mmdb", "city.mmdb", err);
	if (ok(db != NULL, "open flat v6 + city: %s", err)) {
		is_str(geo_db_layout(db, 0), "flat", "mixed: flat");
		is_str(geo_db_layout(db, 1), "location", "mixed: location");
		expect_loc(db, "192.0.2.130", 41.88, -87.63, 26, 1, 0, "mixed, second file");
		expect_loc(db, "2001:db8:4::9", 20.59, -100.39, 48, 0, 1e-5, "mixed, first file");
		geo_db_free(db);
	}
	/* Only an IPv4 file: IPv6 clients are not looked up at all. */
	db = open_dbs(&d, NULL, true, "flat-ipv4.mmdb", NULL, err);
	if (ok(db != NULL, "open flat v4 only: %s", err)) {
		expect_miss(db, "2001:db8:1::1", 0, 0, "v4 file only, IPv6 client");
		struct geo_location loc;
		is_int(geo_db_locate(db, 5, (const uint8_t *)"xxxx", &loc), -EINVAL, "bad family");
		geo_db_free(db);
	}
	/* Errors. */
	db = open_dbs(&d, NULL, true, "missing.mmdb", NULL, err);
	ok(db == NULL && strstr(err, "missing.mmdb"), "missing file: %s", err);
	memset(&d, 0, sizeof(d));
	err[0] = 0;
	ok(geo_db_open(&d.g, NULL, err) == NULL && err[0], "no databases, no default: %s", err);
	d.g.has_default_location = true;
	d.g.default_lat = -1;
	d.g.default_lon = 2;
	db = geo_db_open(&d.g, NULL, err);
	if (ok(db != NULL, "default location alone is enough")) {
		struct geo_location loc;
		uint8_t a4[4] = { 192, 0, 2, 1 };
		ok(geo_db_locate(db, 4, a4, &loc) == 0 && !loc.found && loc.lat == -1 &&
		   loc.prefix == 0, "default only: -1,2 for everyone, prefix 0");
		geo_db_free(db);
	}
	geo_db_free(NULL);
}

/* Fixture networks through the whole rule: the integration test's view. */
static void test_end_to_end(void)
{
	struct test_config tc;
	char err[256];
	struct db_setup d;
	make_config(&tc, example, N_EXAMPLE);
	struct geo_sites *s = geo_sites_new(&tc.c, err);
	struct arena *a = arena_new(0);
	struct config_geo_name gn = default_gn();
	struct geo_sets *gs = geo_sets_build(a, s, &gn, err);
	struct geo_db *db = open_dbs(&d, NULL, true, "flat-ipv4.mmdb", "flat-ipv6.mmdb", err);
	if (!ok(db && gs, "end to end setup: %s", err))
		goto out;
	struct { const char *ip; const char *first, *second; } cases[] = {
		{ "192.0.2.1", "paris", "nuremberg" },
		{ "192.0.2.65", "ashburn", "sanjose" },
		{ "192.0.2.129", "ashburn", NULL },
		{ "192.0.2.193", "sanjose", "ashburn" },
		{ "198.51.100.1", "saopaulo", NULL },
		{ "203.0.113.1", "ashburn", NULL },
		{ "203.0.113.17", "ashburn", "sanjose" },
		{ "203.0.113.33", "sanjose", NULL },
		{ "203.0.113.49", "sanjose", "ashburn" },
		{ "2001:db8:3::1", "ashburn", NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct geo_location loc;
		struct geo_choice ch;
		locate(db, cases[i].ip, &loc);
		geo_sets_choose(gs, s, RR_A, loc.lat, loc.lon, &ch);
		bool good = ch.n == (cases[i].second ? 2 : 1) &&
		            !strcmp(geo_site_name(s, ch.site[0]), cases[i].first) &&
		            (!cases[i].second || !strcmp(geo_site_name(s, ch.site[1]), cases[i].second));
		ok(good, "%s -> %s%s%s", cases[i].ip, cases[i].first, cases[i].second ? " + " : " only",
		   cases[i].second ? cases[i].second : "");
	}
out:
	geo_db_free(db);
	arena_free(a);
	geo_sites_free(s);
}

/* ------------------------------------------------------------- explain */

/* Runs `geoacme explain` with stdout (and stderr) in a file; returns the exit code. */
static int run_explain(char *out, size_t cap, const char *name, const char *type,
                       const char *opt, const char *val, const char *config)
{
	char cfg[256], outp[256];
	snprintf(cfg, sizeof(cfg), "%s/%s", fixture_dir, config);
	snprintf(outp, sizeof(outp), "%s/explain.out", fixture_dir);
	char *argv[10];
	int argc = 0;
	argv[argc++] = "explain";
	argv[argc++] = "-c";
	argv[argc++] = cfg;
	argv[argc++] = (char *)name;
	if (type)
		argv[argc++] = (char *)type;
	argv[argc++] = (char *)opt;
	argv[argc++] = (char *)val;
	argv[argc] = NULL;
	fflush(stdout);
	fflush(stderr);
	int saved_out = dup(1), saved_err = dup(2);
	int fd = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fd, 1);
	dup2(fd, 2);
	close(fd);
	int rc = cmd_explain(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, 1);
	dup2(saved_err, 2);
	close(saved_out);
	close(saved_err);
	FILE *f = fopen(outp, "r");
	size_t n = f ? fread(out, 1, cap - 1, f) : 0;
	out[n] = 0;
	if (f)
		fclose(f);
	return rc;
}

static void test_explain(void)
{
	char p[256], out[8192];
	snprintf(p, sizeof(p), "%s/geo.toml", fixture_dir);
	FILE *f = fopen(p, "w");
	if (!ok(f != NULL, "write explain config"))
		return;
	fprintf(f, "listen_addrs_ipv4 = [\"127.0.0.1\"]\n\n[geo]\ndatabases = [\"city.mmdb\"]\n"
	           "default_location = [50.0, 10.0]\n\n");
	for (size_t i = 0; i < N_EXAMPLE; i++) {
		fprintf(f, "[[sites]]\nname = \"%s\"\nipv4 = \"%s\"\n", example[i].name, example[i].v4);
		if (example[i].v6)
			fprintf(f, "ipv6 = \"%s\"\n", example[i].v6);
		fprintf(f, "latitude = %.2f\nlongitude = %.2f\n%s\n", example[i].lat, example[i].lon,
		        strcmp(example[i].name, "singapore") ? "" : "enabled = false");
	}
	fprintf(f, "[[zones]]\nzone = \"example.com\"\nfile = \"example.com.zone\"\n\n"
	           "[[zones.geo]]\nname = \"www\"\n");
	fclose(f);

	int rc = run_explain(out, sizeof(out), "www", NULL, "--client", "192.0.2.130", "geo.toml");
	is_int(rc, EXIT_OK, "explain Chicago: exit 0");
	ok(strstr(out, "network 192.0.2.128/26") != NULL, "explain: matched network");
	ok(strstr(out, "3.238 > 2 and second-first = 1270.3 mi > 1000 → nearest only, TTL 120"),
	   "explain: decision with numbers");
	ok(strstr(out, "\nwww.example.com. 120 IN A 203.0.113.10\n") && !strstr(out, "IN A 203.0.113.5"),
	   "explain: the record sent");
	ok(strstr(out, "not a candidate: disabled") != NULL, "explain: disabled site shown");

	rc = run_explain(out, sizeof(out), "www.example.com.", "A", "--client", "192.0.2.1",
	                 "geo.toml");
	is_int(rc, EXIT_OK, "explain Amsterdam: exit 0");
	const char *paris = strstr(out, "www.example.com. 3600 IN A 198.51.100.7\n");
	const char *nbg = strstr(out, "www.example.com. 3600 IN A 198.51.100.3\n");
	ok(paris && nbg && paris < nbg, "explain: pair, Paris first although it sorts second");

	rc = run_explain(out, sizeof(out), "WWW.example.com", "aaaa", "--at", "41.88,-87.63",
	                 "geo.toml");
	is_int(rc, EXIT_OK, "explain AAAA --at: exit 0");
	ok(strstr(out, "www.example.com. 3600 IN AAAA 2001:db8:100::7\n") &&
	   strstr(out, "www.example.com. 3600 IN AAAA 2001:db8:100::3\n"), "explain: AAAA pair");

	rc = run_explain(out, sizeof(out), "www", NULL, "--client", "10.9.9.9", "geo.toml");
	ok(rc == EXIT_OK && strstr(out, "default location") && strstr(out, "0.0.0.0/1"),
	   "explain: default location and the miss's network");

	is_int(run_explain(out, sizeof(out), "ftp", NULL, "--at", "1,1", "geo.toml"), EXIT_USAGE,
	       "explain: unknown name -> 2");
	ok(strstr(out, "www.example.com.") != NULL, "explain: lists the geo names");
	is_int(run_explain(out, sizeof(out), "www", NULL, "--client", "1.2.3", "geo.toml"),
	       EXIT_USAGE, "explain: bad address -> 2");
	is_int(run_explain(out, sizeof(out), "www", NULL, "--at", "1,1", "missing.toml"),
	       EXIT_CONFIG, "explain: missing config -> 3");
}

/* The target of HTTPS record k (0-based) of a choice, as text. */
static void https_target(const struct geo_choice *ch, int k, char *out, size_t cap)
{
	const struct rdata *rd = &ch->rrset->rr[k];
	if (dname_to_str(rd->data + 2, out, cap) < 0)
		snprintf(out, cap, "(bad)");
}

static void expect_https(const struct geo_sets *gs, const struct geo_sites *s, double lat,
                         double lon, const char *first, const char *second, uint32_t ttl,
                         const char *label)
{
	struct geo_choice ch;
	char t[300], want[300];
	is_int(geo_sets_choose(gs, s, RR_HTTPS, lat, lon, &ch), 0, "%s: choose", label);
	if (!ok(ch.rrset && ch.rrset->type == RR_HTTPS, "%s: an HTTPS set", label))
		return;
	is_int(ch.rrset->count, second ? 3 : 2, "%s: records", label);
	is_int(ch.rrset->ttl, ttl, "%s: TTL", label);
	ok(!ch.reversed, "%s: written as stored (priority order)", label);
	for (int k = 0; k < ch.rrset->count; k++) {
		const uint8_t *d = ch.rrset->rr[k].data;
		int prio = d[0] << 8 | d[1];
		is_int(prio, k == ch.rrset->count - 1 ? 3 : k + 1, "%s: priority of record %d", label, k);
		https_target(&ch, k, t, sizeof(t));
		const char *site = k == 0 ? first : k == 1 && second ? second : NULL;
		if (site)
			snprintf(want, sizeof(want), "%s.sites.example.com.", site);
		else
			snprintf(want, sizeof(want), ".");
		is_str(t, want, "%s: target of record %d", label, k);
		char err[256];
		is_int(svcb_check_wire(d, ch.rrset->rr[k].len, err), 0, "%s: valid SVCB rdata", label);
	}
}

static void test_https(void)
{
	struct test_config tc;
	char err[256] = "";
	static const uint8_t apex[] = { 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0 };
	static char *alpn[] = { "h3", "h2" };
	make_config(&tc, example, N_EXAMPLE);
	tc.s[5].has_v4 = false;   /* saopaulo: no address at all would be refused; give it IPv6 */
	tc.s[5].has_v6 = inet_pton(AF_INET6, "2001:db8:100::50", tc.s[5].v6) == 1;
	struct geo_sites *s = geo_sites_new(&tc.c, err);
	struct arena *a = arena_new(0);
	struct config_geo_name gn = default_gn();
	gn.https = (struct config_geo_https){ .enabled = true, .alpn = alpn, .n_alpn = 2,
	                                      .site_names = "sites" };
	struct geo_sets *gs = geo_sets_build(a, s, &gn, err);
	ok(gs && geo_sets_build_https(gs, a, s, &gn, apex, err) == 0, "build HTTPS sets: %s", err);
	if (!gs)
		goto out;
	ok(geo_sets_has_type(gs, RR_HTTPS), "HTTPS answered");
	/* A: 6 sites (6 + 15), AAAA: 5 (5 + 10), HTTPS: 7 singles + 2 x 42 ordered. */
	is_int(geo_sets_rrset_count(gs), 21 + 15 + 7 + 84, "7 sites: 42 ordered pairs, both TTLs");
	/* Amsterdam: Paris + Nuremberg, pair TTL. */
	expect_https(gs, s, 52.37, 4.90, "paris", "nuremberg", 3600, "Amsterdam");
	/* Chicago: A is Ashburn alone (120), HTTPS still lists San Jose second. */
	expect_https(gs, s, 41.88, -87.63, "ashburn", "sanjose", 120, "Chicago");
	/* Buenos Aires: Sao Paulo has only IPv6 but competes for HTTPS. */
	expect_https(gs, s, -34.60, -58.38, "saopaulo", "ashburn", 120, "Buenos Aires");
	struct geo_choice ch;
	geo_sets_choose(gs, s, RR_A, -34.60, -58.38, &ch);
	ok(ch.site[0] == 2, "Buenos Aires A: Ashburn (Sao Paulo has no IPv4)");
	/* A site down over IPv4 only still serves HTTPS clients over IPv6. */
	geo_site_set_alive(s, 1, GEO_IPV4, false);
	expect_https(gs, s, 52.37, 4.90, "paris", "nuremberg", 3600, "Nuremberg down over IPv4");
	geo_sets_choose(gs, s, RR_A, 52.37, 4.90, &ch);
	ok(ch.n == 1 && ch.site[0] == 0, "Amsterdam A without Nuremberg's IPv4: Paris alone");
	/* Down in both: the second is the next alive site. */
	geo_site_set_alive(s, 1, GEO_IPV6, false);
	expect_https(gs, s, 52.37, 4.90, "paris", "ashburn", 120, "Amsterdam, Nuremberg dead");
	/* One alive: records 1 and 3, ttl_single. */
	for (size_t i = 0; i < geo_sites_count(s); i++) {
		geo_site_set_alive(s, i, GEO_IPV4, i == 6);
		geo_site_set_alive(s, i, GEO_IPV6, i == 6);
	}
	expect_https(gs, s, 52.37, 4.90, "sydney", NULL, 120, "only Sydney alive");
	/* Ashburn has IPv4 only: alive over IPv6 means nothing for it. */
	geo_site_set_alive(s, 2, GEO_IPV6, true);
	expect_https(gs, s, 41.88, -87.63, "sydney", NULL, 120, "Ashburn's missing IPv6 is no life");
	geo_site_set_alive(s, 2, GEO_IPV6, false);
	/* None alive: fail open as for A. */
	geo_site_set_alive(s, 6, GEO_IPV4, false);
	geo_site_set_alive(s, 6, GEO_IPV6, false);
	expect_https(gs, s, 52.37, 4.90, "paris", "nuremberg", 3600, "none alive");
	geo_sets_choose(gs, s, RR_HTTPS, 52.37, 4.90, &ch);
	ok(ch.fail_open, "none alive: fail_open");

	/* No `https`: no HTTPS sets, HTTPS not a geo type. */
	struct config_geo_name plain = default_gn();
	struct geo_sets *gp = geo_sets_build(a, s, &plain, err);
	ok(gp && geo_sets_build_https(gp, a, s, &plain, apex, err) == 0 &&
	   !geo_sets_has_type(gp, RR_HTTPS), "without https: no HTTPS sets");

	/* A site name that is no label is refused at build. */
	struct test_config bad;
	static const struct site_def bad_sites[] = {
		{ "a.b", 0, 0, "192.0.2.1", NULL }, { "c", 1, 1, "192.0.2.2", NULL },
	};
	make_config(&bad, bad_sites, 2);
	struct geo_sites *sb = geo_sites_new(&bad.c, err);
	struct geo_sets *gb = sb ? geo_sets_build(a, sb, &gn, err) : NULL;
	ok(gb && geo_sets_build_https(gb, a, sb, &gn, apex, err) == 0,
	   "a dotted site name makes a deeper name (%s)", err);
	geo_sites_free(sb);
out:
	arena_free(a);
	geo_sites_free(s);
}

int main(void)
{
	test_distance();
	test_observations();
	test_sets();
	test_thresholds();
	test_liveness();
	test_https();
	test_families();
	test_ties();
	test_sites_errors();
	test_mmdb();
	test_end_to_end();
	if (fixture_dir[0])
		test_explain();
	if (fixture_dir[0])
		remove_fixtures();
	return done_testing();
}
