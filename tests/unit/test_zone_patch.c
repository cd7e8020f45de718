/* SPDX-License-Identifier: MIT */
/*
 * Patching a served snapshot (core/zone/zone_patch.h): after every change
 * of a random sequence (TXT and A records added and removed at names of
 * several depths, so empty non-terminals come and go, names join and leave
 * the NSEC chain, the last name changes), the patched snapshot equals a
 * snapshot built whole from the same records, record by record, NSEC chain
 * included, and every RRSIG in it verifies with ldns.  A patch given up
 * changes nothing; changes a patch does not make answer -EAGAIN.  An
 * unsigned zone kept with its name order is patched the same way, with no
 * signer.  The
 * presigned copy of a secondary: test_zone_patch_copy.c.  The signature
 * cache holds what is served after every patch, no more.
 */
#include "tests/unit/zone_patch_model.h"
#include "core/zone/zone_walk.h"


/* The signer's clock where a test sets it (signer_set_clock). */
static uint64_t clock_now;
static uint64_t test_clock(void *arg)
{
	(void)arg;
	return clock_now;
}

/*
 * The earliest expiration among every RRSIG the zone serves, read whole:
 * what zone_signature_expiry() keeps as the zone changes.  `now` only
 * places the 32-bit times (RFC 1982); 0 when nothing is signed.
 */
static int64_t served_sigs_min(const struct zone *z, int64_t now)
{
	int64_t m = 0;
	for (uint32_t h = 0; h <= z->bucket_mask; h++)
		for (const struct zone_node *n = z->buckets[h]; n; n = n->hash_next)
			for (uint16_t j = 0; j < n->rrset_count; j++)
				for (unsigned k = 0; k < RRSET_SIGS && n->rrsets[j].sig[k].len; k++) {
					int64_t e = rrsig_expiration(n->rrsets[j].sig[k].data, now);
					if (!m || e < m)
						m = e;
				}
	return m;
}

/* The model built unsigned, with its name order kept (zone_builder_keep_order) or not. */
static struct zone *build_unsigned(bool keep_order)
{
	struct zone_builder *b = zone_builder_new(name("example.com"));
	if (keep_order)
		zone_builder_keep_order(b);
	for (size_t i = 0; i < n_model; i++)
		if (zone_builder_add(b, name(model[i].owner), model[i].type, model[i].ttl, model[i].rd,
		                     model[i].len) < 0)
			abort();
	struct diag d;
	diag_init(&d);
	struct zone *z = zone_builder_finish(b, NULL, "test", &d);
	for (size_t i = 0; i < d.n; i++)
		printf("# %s\n", d.msgs[i]);
	diag_clear(&d);
	return z;
}

static void test_random(struct signer *s, ldns_rr_list *keys)
{
	/* Each change signed at another time, before the build and a little
	 * before or after the last change: new signatures then expire sooner
	 * or later than those they replace, so the earliest expiration moves
	 * both ways (and is replaced, which reads the zone again). */
	const uint64_t T0 = 1700000000ull;
	signer_set_clock(s, test_clock, NULL);
	clock_now = T0 + 2000;   /* the build: after every change's time below */
	verify_time = (time_t)(T0 + 2000);
	model_init();
	struct zone *z = build_fresh(s);
	ok(z != NULL, "initial build");
	int steps = 300, mismatches = 0, bad_sigs = 0, refused = 0, covering = 0, diffs = 0;
	int expiry_wrong = 0;
	const int64_t around = (int64_t)T0;   /* places the RRSIG times (RFC 1982) */
	is_int(zone_signature_expiry(z), served_sigs_min(z, around),
	       "built: the signature expiry is the earliest RRSIG's");
	for (int step = 0; step < steps; step++) {
		const char *touched[16];
		clock_now = T0 + (uint64_t)rnd(2000);
		struct zone *before = build_fresh(s);
		size_t n = random_change(touched);
		struct zone_patch *p = patch_for(z, touched, n);
		char err[256];
		int rc = zone_patch_prepare(p, signer_hook(s), err);
		if (rc < 0) {
			if (!refused++)
				printf("# step %d: prepare %d (%s)\n", step, rc, err);
			zone_patch_free(p);
			break;
		}
		uint8_t *pd = NULL;
		size_t pl = 0;
		int prc = zone_diff_patch(z, p, &pd, &pl);
		zone_patch_apply(p);
		zone_patch_free(p);
		struct zone *fresh = build_fresh(s);
		check_patched(step, z, before, fresh, prc, pd, pl, true, &diffs, &mismatches);
		bad_sigs += verify_all(z, keys);
		if (zone_signature_expiry(z) != served_sigs_min(z, around) && !expiry_wrong++)
			printf("# step %d: signature expiry %lld, served %lld\n", step,
			       (long long)zone_signature_expiry(z), (long long)served_sigs_min(z, around));
		/* The denial answer of any name is the same. */
		for (int q = 0; q < 8; q++) {
			char qn[64];
			snprintf(qn, sizeof(qn), "%s", pool[rnd(POOL)]);
			const uint8_t *probe = name(q & 1 ? qn : "nx.q.example.com");
			if (!(q & 1))
				probe = name(pool[rnd(POOL)]);
			const struct zone_node *x = zone_nsec_covering(z, probe);
			const struct zone_node *y = zone_nsec_covering(fresh, probe);
			if (!x || !y || !dname_equal(x->name, y->name))
				covering++;
		}
		zone_free(fresh);
		if (mismatches)
			break;
	}
	is_int(refused, 0, "every random change is one a patch makes");
	is_int(mismatches, 0, "patched == built whole after each of %d random changes", steps);
	is_int(bad_sigs, 0, "every RRSIG of the patched zone verifies (ldns)");
	is_int(covering, 0, "the covering NSEC of probe names is the same");
	is_int(expiry_wrong, 0, "the signature expiry kept through the patches is the served one");
	is_int(diffs, 0, "the patch's IXFR difference equals the whole builds' (RRSIGs aside)");
	ok(zone_patch_growth(z) > 0, "patches grew the arena (%zu bytes)", zone_patch_growth(z));
	zone_free(z);
	signer_set_clock(s, NULL, NULL);
	verify_time = 0;
}

/* Signed RRsets a snapshot serves: one signature each by the one key. */
static size_t signed_rrsets(const struct zone *z)
{
	size_t n = 0;
	for (const struct zone_node *x = zone_node_next(z, NULL); x; x = zone_node_next(z, x))
		for (uint16_t j = 0; j < x->rrset_count; j++)
			n += x->rrsets[j].sig[0].len != 0;
	return n;
}

/*
 * The signature cache follows the patches: what a patch takes out of the
 * served snapshot leaves the cache then (zone_signer.forget), not at the
 * next whole build, so after any number of patches the cache holds the
 * signatures served, no more.
 */
static void test_cache_follows_patches(const char *key_path)
{
	char err[256];
	struct signer *s = signer_new("example.com", key_path, NULL, true, err);
	model_init();
	struct zone *z = build_fresh(s);
	struct signer_stats st;
	signer_get_stats(s, &st);
	is_int((int)st.cached, (int)signed_rrsets(z), "after the build: one entry per signed RRset");
	int off = 0, steps = 200;
	size_t most = 0;
	for (int step = 0; step < steps; step++) {
		const char *touched[16];
		size_t n = random_change(touched);
		struct zone_patch *p = patch_for(z, touched, n);
		if (zone_patch_prepare(p, signer_hook(s), err) < 0) {
			zone_patch_free(p);
			off++;
			break;
		}
		zone_patch_apply(p);
		zone_patch_free(p);
		signer_get_stats(s, &st);
		if (st.cached != signed_rrsets(z) && !off++)
			printf("# step %d: %zu cached, %zu served\n", step, st.cached, signed_rrsets(z));
		if (st.cached > most)
			most = st.cached;
	}
	is_int(off, 0, "after each of %d patches the cache holds what is served (at most %zu)",
	       steps, most);
	zone_free(z);
	signer_free(s);
}

static void test_abandon_and_refuse(struct signer *s)
{
	model_init();
	struct zone *z = build_fresh(s);
	char why[256], err[256];

	/* Given up after prepare: the served zone is as it was. */
	static struct mrec saved[4096];
	size_t saved_n = n_model;
	uint32_t saved_serial = serial;
	memcpy(saved, model, sizeof(model));
	model_add("new.deep.example.com", RR_TXT, 60, "\x01x", 2);
	model_bump_serial();
	const char *t1[] = { "new.deep.example.com", "example.com" };
	struct zone_patch *p = patch_for(z, t1, 2);
	is_int(zone_patch_prepare(p, signer_hook(s), err), 0, "prepare a new name");
	zone_patch_free(p);
	memcpy(model, saved, sizeof(model));
	n_model = saved_n;
	serial = saved_serial;
	struct zone *fresh = build_fresh(s);
	const char *d = differ(z, fresh, why, sizeof(why));
	ok(d == NULL, "a patch given up changes nothing (%s)", d ? d : "equal");
	ok(zone_find(z, name("new.deep.example.com"), dname_len(name("new.deep.example.com"))) == NULL &&
	   zone_find(z, name("deep.example.com"), dname_len(name("deep.example.com"))) == NULL,
	   "neither the name nor its empty non-terminal is served");
	zone_free(fresh);

	/* What a patch does not do. */
	struct {
		const char *owner;
		uint16_t type;
		const char *rd;
		size_t len;
		const char *what;
	} cases[] = {
		{ "www.example.com", RR_NS, "\x02ns\x07" "example\x03" "com", 16,
		  "a delegation beside other data" },
		{ "ns1.example.com", RR_NS, "\x02ns\x07" "example\x03" "com", 16,
		  "a delegation beside other data (ns1)" },
		{ "www.example.com", RR_DS, "\x30\x39\x0d\x02" "0123456789abcdef0123456789abcdef", 36,
		  "a DS at a name that is not a cut (RFC 4035 2.4)" },
		{ "*.example.com", RR_TXT, "\x01x", 2, "a wildcard" },
		{ "www.example.com", RR_CNAME, "\x01x\x07" "example\x03" "com", 15, "a CNAME beside data" },
		{ "example.com", RR_MX, "\x00\x0a\x01x\x07" "example\x03" "com", 17, "a new RRset at the apex" },
		{ "a.example.com", RR_DNSKEY, "\x01\x01\x03\x0d" "0123", 8, "a signer type" },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		p = zone_patch_new(z);
		zone_patch_name(p, name(cases[c].owner));
		for (size_t i = 0; i < n_model; i++)
			if (dname_equal(name(model[i].owner), name(cases[c].owner)))
				zone_patch_add(p, name(model[i].owner), model[i].type, model[i].ttl, model[i].rd,
				               model[i].len);
		zone_patch_add(p, name(cases[c].owner), cases[c].type, 60, (const uint8_t *)cases[c].rd,
		               (uint16_t)cases[c].len);
		is_int(zone_patch_prepare(p, signer_hook(s), err), -EAGAIN, "-EAGAIN for %s",
		       cases[c].what);
		zone_patch_free(p);
	}
	/* The SOA's TTL or minimum: every NSEC's TTL follows (RFC 9077). */
	for (int c = 0; c < 2; c++) {
		p = zone_patch_new(z);
		zone_patch_name(p, name("example.com"));
		for (size_t i = 0; i < n_model; i++) {
			if (strcmp(model[i].owner, "example.com"))
				continue;
			uint8_t rd[64];
			memcpy(rd, model[i].rd, model[i].len);
			uint32_t ttl = model[i].ttl;
			if (model[i].type == RR_SOA) {
				wire_set_u32(rd + model[i].len - 20, serial + 1);
				if (c == 0)
					ttl = 1800;
				else
					wire_set_u32(rd + model[i].len - 4, 30);
			}
			zone_patch_add(p, name("example.com"), model[i].type, ttl, rd, model[i].len);
		}
		is_int(zone_patch_prepare(p, signer_hook(s), err), -EAGAIN, "-EAGAIN for the SOA's %s",
		       c == 0 ? "TTL" : "minimum");
		zone_patch_free(p);
	}
	/* Names outside the zone. */
	p = zone_patch_new(z);
	is_int(zone_patch_name(p, name("example.org")), -EINVAL, "a name outside the zone: -EINVAL");
	is_int(zone_patch_add(p, name("undeclared.example.com"), RR_TXT, 60, (const uint8_t *)"\x01x",
	                      2), -EINVAL, "a record of an undeclared name: -EINVAL");
	zone_patch_free(p);
	/* An unsigned zone built without its name order is built whole; one
	 * with it is not patched with a signer. */
	struct zone *u = build_unsigned(false);
	p = zone_patch_new(u);
	zone_patch_name(p, name("a.example.com"));
	is_int(zone_patch_prepare(p, NULL, err), -EAGAIN, "an unsigned zone without its order: -EAGAIN");
	zone_patch_free(p);
	zone_free(u);
	u = build_unsigned(true);
	p = zone_patch_new(u);
	zone_patch_name(p, name("a.example.com"));
	is_int(zone_patch_prepare(p, signer_hook(s), err), -EAGAIN,
	       "an unsigned zone patched with a signer: -EAGAIN");
	zone_patch_free(p);
	zone_free(u);
	zone_free(z);
}

/*
 * An unsigned zone kept with its name order (an ACME zone without dnssec):
 * the random changes patched with no signer equal the whole builds, name
 * order included, with the same IXFR difference; and its apex may change
 * (a new NS) as long as it keeps one SOA and an NS.
 */
static void test_unsigned(void)
{
	model_init();
	struct zone *z = build_unsigned(true);
	ok(z && !zone_is_signed(z) && z->nsec_count == 5,
	   "built unsigned with its order: 5 names (apex ns1 www _acme zzz)");
	int steps = 300, mismatches = 0, refused = 0, diffs = 0;
	for (int step = 0; z && step < steps; step++) {
		const char *touched[16];
		struct zone *before = build_unsigned(true);
		size_t n = random_change(touched);
		struct zone_patch *p = patch_for(z, touched, n);
		char err[256];
		int rc = zone_patch_prepare(p, NULL, err);
		if (rc < 0) {
			if (!refused++)
				printf("# step %d: prepare %d (%s)\n", step, rc, err);
			zone_patch_free(p);
			zone_free(before);
			break;
		}
		uint8_t *pd = NULL;
		size_t pl = 0;
		int prc = zone_diff_patch(z, p, &pd, &pl);
		zone_patch_apply(p);
		zone_patch_free(p);
		struct zone *fresh = build_unsigned(true);
		check_patched(step, z, before, fresh, prc, pd, pl, true, &diffs, &mismatches);
		zone_free(fresh);
		if (mismatches)
			break;
	}
	is_int(refused, 0, "unsigned: every random change is one a patch makes");
	is_int(mismatches, 0, "unsigned: patched == built whole after each of %d changes", steps);
	is_int(diffs, 0, "unsigned: the patch's IXFR difference equals the whole builds'");
	/* A second NS at the apex, with the SOA's serial: patched. */
	const uint8_t *ns2 = name("ns2.example.com");
	model_add("example.com", RR_NS, 3600, ns2, dname_len(ns2));
	model_bump_serial();
	const char *apex[] = { "example.com" };
	struct zone_patch *p = patch_for(z, apex, 1);
	char err[256];
	is_int(zone_patch_prepare(p, NULL, err), 0, "unsigned: an apex NS added is patched");
	zone_patch_apply(p);
	zone_patch_free(p);
	struct zone *fresh = build_unsigned(true);
	char why[256];
	const char *d = differ(z, fresh, why, sizeof(why));
	ok(!d, "unsigned: the apex patched == built whole (%s)", d ? d : "same");
	zone_free(fresh);
	/* The apex without its NS: built whole (which refuses it). */
	for (size_t i = n_model; i-- > 0;)
		if (!strcmp(model[i].owner, "example.com") && model[i].type == RR_NS)
			model_del_at(i);
	model_bump_serial();
	p = patch_for(z, apex, 1);
	is_int(zone_patch_prepare(p, NULL, err), -EAGAIN, "unsigned: the apex without NS: -EAGAIN");
	zone_patch_free(p);
	zone_free(z);
}

/*
 * What a transfer holding the snapshot lists at its start (xfr/xfr.c
 * build_items: owner, type, TTL, count and the rdata and RRSIG pointers),
 * and the bytes those pointers lead to, in one buffer.
 */
struct held_item {
	const uint8_t *owner;
	uint16_t type, count;
	uint32_t ttl;
	const struct rdata *rr, *sig;
};

static size_t held_view(const struct zone *z, struct held_item *v, size_t cap)
{
	size_t n = 0;
	for (const struct zone_node *node = zone_node_next(z, NULL); node;
	     node = zone_node_next(z, node))
		for (uint16_t i = 0; i < node->rrset_count && n < cap; i++) {
			const struct rrset *s = &node->rrsets[i];
			v[n++] = (struct held_item){ node->name, s->type, s->count, s->ttl, s->rr, &s->sig[0] };
		}
	return n;
}

static size_t held_bytes(const struct held_item *v, size_t n, uint8_t *out, size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = dname_len(v[i].owner);
		if (k + l + 8 > cap)
			return 0;
		memcpy(out + k, v[i].owner, l);
		k += l;
		wire_set_u16(out + k, v[i].type);
		wire_set_u16(out + k + 2, v[i].count);
		wire_set_u32(out + k + 4, v[i].ttl);
		k += 8;
		for (uint16_t r = 0; r <= v[i].count; r++) {
			const struct rdata *rd = r < v[i].count ? &v[i].rr[r] : v[i].sig;
			if (k + rd->len + 2 > cap)
				return 0;
			wire_set_u16(out + k, rd->len);
			memcpy(out + k + 2, rd->data, rd->len);
			k += 2 + rd->len;
		}
	}
	return k;
}

/*
 * A snapshot held by a transfer is patched like any other (issue #26: a
 * pinned snapshot never forces a whole build), and the transfer still
 * reads the zone as it was when it listed its records.
 */
static void test_held(struct signer *s, ldns_rr_list *keys)
{
	model_init();
	struct zone *z = build_fresh(s);
	struct zone *held = zone_hold(z);
	static struct held_item view[4096];
	static uint8_t was[1 << 20], now[1 << 20];
	size_t nv = held_view(z, view, 4096);
	size_t nb = held_bytes(view, nv, was, sizeof(was));
	ok(nv > 0 && nb > 0, "a transfer's list of %zu RRsets, %zu bytes", nv, nb);
	int refused = 0, mismatches = 0, diffs = 0;
	for (int step = 0; step < 60; step++) {
		const char *touched[16];
		struct zone *before = build_fresh(s);
		size_t n = random_change(touched);
		struct zone_patch *p = patch_for(z, touched, n);
		char err[256];
		if (zone_patch_prepare(p, signer_hook(s), err) < 0) {
			refused++;
			zone_patch_free(p);
			zone_free(before);
			break;
		}
		uint8_t *pd = NULL;
		size_t pl = 0;
		int prc = zone_diff_patch(z, p, &pd, &pl);
		zone_patch_apply(p);
		zone_patch_free(p);
		struct zone *fresh = build_fresh(s);
		check_patched(step, z, before, fresh, prc, pd, pl, true, &diffs, &mismatches);
		zone_free(fresh);
	}
	is_int(refused, 0, "60 changes to a held snapshot are all patched");
	is_int(mismatches, 0, "... each equal to the zone built whole");
	is_int(verify_all(z, keys), 0, "... with every RRSIG verifying");
	size_t nb2 = held_bytes(view, nv, now, sizeof(now));
	ok(nb2 == nb && memcmp(was, now, nb) == 0,
	   "the transfer's list still reads the zone as it was when it started");
	zone_free(held);
	zone_free(z);
}

/*
 * A walk in slices (zone_walk.h) while the snapshot is patched between its
 * steps: random changes, and once 1000 names at a time, which grows the
 * hash table mid-walk.  It sees each node of the version it started with
 * once, as it was then: the same list as a walk of that version in one go.
 */
struct walk_list {
	struct held_item *v;
	size_t n, cap;
	int nodes;
};

static int walk_collect(void *arg, const struct zone_node *node)
{
	struct walk_list *l = arg;
	l->nodes++;
	for (uint16_t i = 0; i < node->rrset_count && l->n < l->cap; i++) {
		const struct rrset *s = &node->rrsets[i];
		l->v[l->n++] = (struct held_item){ node->name, s->type, s->count, s->ttl, s->rr,
		                                   &s->sig[0] };
	}
	return 0;
}

static int held_item_cmp(const void *a, const void *b)
{
	const struct held_item *x = a, *y = b;
	size_t lx = dname_len(x->owner), ly = dname_len(y->owner);
	int c = memcmp(x->owner, y->owner, lx < ly ? lx : ly);
	if (c || lx != ly)
		return c ? c : lx < ly ? -1 : 1;
	return (int)x->type - (int)y->type;
}

static void test_walk(struct signer *s, ldns_rr_list *keys)
{
	model_init();
	static char filler[60][48];
	for (int i = 0; i < 60; i++) {
		snprintf(filler[i], sizeof(filler[i]), "_acme-challenge.f%d.example.com", i);
		model_add(filler[i], RR_TXT, 60, "\x02ok", 3);
	}
	struct zone *z = build_fresh(s);
	static struct held_item at_start[8192], walked[8192];
	static uint8_t was[1 << 21], got[1 << 21];
	struct walk_list whole = { at_start, 0, 8192, 0 }, sliced = { walked, 0, 8192, 0 };
	struct zone_walk *w = zone_walk_new(z, walk_collect, &whole);
	int rc = zone_walk_step(w, SIZE_MAX);
	zone_walk_free(w);
	is_int(rc, 0, "a walk in one step ends");
	is_int(whole.nodes, nodes_in(z), "... and sees every node once");

	w = zone_walk_new(z, walk_collect, &sliced);
	uint32_t mask = z->bucket_mask;
	int steps = 0, patched = 0, refused = 0;
	static char bulk[1000][48];
	const char *touched[1100];
	/* Small slices, random changes between them; then 1000 names, and
	 * bigger slices over the grown table. */
	while ((rc = zone_walk_step(w, steps < 40 ? 2 : 200)) == 1) {
		size_t n;
		if (++steps == 40) {
			/* Enough names at once for the hash table to grow. */
			n = 0;
			for (int i = 0; i < 1000; i++) {
				snprintf(bulk[i], sizeof(bulk[i]), "_acme-challenge.w%d.example.com", i);
				model_add(bulk[i], RR_TXT, 60, "\x02ok", 3);
				touched[n++] = bulk[i];
			}
			model_bump_serial();
			touched[n++] = "example.com";
		} else {
			n = random_change(touched);
		}
		struct zone_patch *p = patch_for(z, touched, n);
		char err[256];
		if (zone_patch_prepare(p, signer_hook(s), err) < 0) {
			refused++;
			zone_patch_free(p);
			break;
		}
		zone_patch_apply(p);
		zone_patch_free(p);
		patched++;
	}
	zone_walk_free(w);
	is_int(rc, 0, "the sliced walk ends (%d steps)", steps);
	is_int(refused, 0, "%d patches applied between its steps", patched);
	ok(z->bucket_mask > mask, "the hash table grew mid-walk (%u -> %u buckets)", mask + 1,
	   z->bucket_mask + 1);
	is_int(sliced.nodes, whole.nodes, "the sliced walk saw as many nodes as were at its start");
	qsort(at_start, whole.n, sizeof(at_start[0]), held_item_cmp);
	qsort(walked, sliced.n, sizeof(walked[0]), held_item_cmp);
	size_t nb = held_bytes(at_start, whole.n, was, sizeof(was));
	size_t nb2 = held_bytes(walked, sliced.n, got, sizeof(got));
	ok(nb > 0 && nb2 == nb && memcmp(was, got, nb) == 0,
	   "... and every RRset of them as it was then (%zu RRsets)", sliced.n);
	is_int(verify_all(z, keys), 0, "the patched zone's RRSIGs verify");
	/* A walk begun after the patches sees the new version. */
	struct walk_list after = { walked, 0, 8192, 0 };
	w = zone_walk_new(z, walk_collect, &after);
	zone_walk_step(w, SIZE_MAX);
	zone_walk_free(w);
	is_int(after.nodes, nodes_in(z), "a walk begun later sees the patched zone's nodes");
	zone_free(z);
}

/*
 * One step of test_delegation: patch `touched` (the model changed since
 * `before` was built from it, which is freed); 1 when it equals the whole
 * build.
 */
static int delegation_step(struct signer *s, ldns_rr_list *keys, struct zone *z,
                           struct zone *before, const char **touched, size_t n,
                           const char *what)
{
	struct zone_patch *p = patch_for(z, touched, n);
	char err[256];
	int rc = zone_patch_prepare(p, signer_hook(s), err);
	is_int(rc, 0, "%s: patched", what);
	if (rc < 0) {
		zone_patch_free(p);
		zone_free(before);
		return 0;
	}
	uint8_t *pd = NULL;
	size_t pl = 0;
	int prc = zone_diff_patch(z, p, &pd, &pl);
	zone_patch_apply(p);
	zone_patch_free(p);
	struct zone *fresh = build_fresh(s);
	int diffs = 0, mismatches = 0;
	check_patched(0, z, before, fresh, prc, pd, pl, true, &diffs, &mismatches);
	zone_free(fresh);
	is_int(mismatches + diffs, 0, "%s: equal to the whole build, IXFR difference too", what);
	is_int(verify_all(z, keys), 0, "%s: every RRSIG verifies", what);
	return mismatches + diffs == 0;
}

/* The model's records of one name and type go. */
static void model_del(const char *owner, uint16_t type)
{
	for (size_t i = n_model; i-- > 0;)
		if (!strcmp(model[i].owner, owner) && model[i].type == type)
			model_del_at(i);
}

/*
 * An NS below the apex makes a zone cut by patch, not by a whole build
 * (issue #26.1); so do its DS's changes.  A cut with data beside its NS, a
 * name below a new cut, or a cut that goes still build whole.
 */
static void test_delegation(struct signer *s, ldns_rr_list *keys)
{
	model_init();
	struct zone *z = build_fresh(s);
	const uint8_t *ns = name("ns.elsewhere.net");
	uint8_t ds[36] = { 0x30, 0x39, 13, 2 };
	for (int i = 4; i < 36; i++)
		ds[i] = (uint8_t)i;
	const char *t[] = { "sub.example.com", "example.com" };
	struct zone *before = build_fresh(s);
	model_add("sub.example.com", RR_NS, 3600, ns, dname_len(ns));
	model_add("sub.example.com", RR_DS, 3600, ds, sizeof(ds));
	model_bump_serial();
	delegation_step(s, keys, z, before, t, 2, "a new cut with NS and DS");
	const struct zone_node *cut = zone_find(z, name("sub.example.com"),
	                                        dname_len(name("sub.example.com")));
	ok(cut && (cut->flags & ZONE_NODE_DELEGATION) && !zone_node_rrset(cut, RR_NS)->sig[0].len &&
	   zone_node_rrset(cut, RR_DS)->sig[0].len && zone_node_rrset(cut, RR_NSEC)->sig[0].len,
	   "the cut: a delegation, its NS unsigned, its DS and NSEC signed");
	before = build_fresh(s);
	model_del("sub.example.com", RR_DS);
	ds[3] = 1;
	model_add("sub.example.com", RR_DS, 3600, ds, 24);
	model_bump_serial();
	delegation_step(s, keys, z, before, t, 2, "the cut's DS changes");
	before = build_fresh(s);
	model_del("sub.example.com", RR_DS);
	model_bump_serial();
	delegation_step(s, keys, z, before, t, 2, "the cut's DS goes (an unsigned child)");
	before = build_fresh(s);
	model_add("ins.example.com", RR_NS, 3600, ns, dname_len(ns));
	const char *t2[] = { "ins.example.com", "example.com" };
	model_bump_serial();
	delegation_step(s, keys, z, before, t2, 2, "a second cut, NS only");

	char err[256];
	struct {
		const char *owner;
		uint16_t type;
		const char *what;
	} refused[] = {
		{ "a.sub.example.com", RR_A, "a name below a cut (glue)" },
		{ "sub.example.com", RR_A, "data beside a cut's NS" },
		{ "sub.example.com", 0, "a cut that loses its NS" },
	};
	for (size_t c = 0; c < sizeof(refused) / sizeof(refused[0]); c++) {
		size_t saved_n = n_model;
		static struct mrec saved[4096];
		memcpy(saved, model, sizeof(model));
		if (refused[c].type)
			model_add(refused[c].owner, refused[c].type, 300, "\xc0\x00\x02\x07", 4);
		else
			model_del(refused[c].owner, RR_NS);
		model_bump_serial();
		const char *tc[] = { refused[c].owner, "example.com" };
		struct zone_patch *p = patch_for(z, tc, 2);
		is_int(zone_patch_prepare(p, signer_hook(s), err), -EAGAIN, "-EAGAIN for %s",
		       refused[c].what);
		zone_patch_free(p);
		memcpy(model, saved, sizeof(model));
		n_model = saved_n;
		serial--;
	}
	/* A new cut above names that exist: they would become glue. */
	before = build_fresh(s);
	model_add("x.deep.example.com", RR_TXT, 60, "\x01x", 2);
	model_bump_serial();
	const char *t3[] = { "x.deep.example.com", "example.com" };
	delegation_step(s, keys, z, before, t3, 2, "a name below an empty non-terminal");
	model_add("deep.example.com", RR_NS, 3600, ns, dname_len(ns));
	model_bump_serial();
	const char *t4[] = { "deep.example.com", "example.com" };
	struct zone_patch *p = patch_for(z, t4, 2);
	is_int(zone_patch_prepare(p, signer_hook(s), err), -EAGAIN,
	       "-EAGAIN for a new cut above an existing name");
	zone_patch_free(p);
	zone_free(z);
}

/* Many names: the hash table grows under a patch, one big change at once. */
static void test_bulk(struct signer *s, ldns_rr_list *keys)
{
	model_init();
	struct zone *z = build_fresh(s);
	const char *touched[1100];
	static char names[1000][48];
	size_t n = 0;
	for (int i = 0; i < 1000; i++) {
		snprintf(names[i], sizeof(names[i]), "_acme-challenge.h%d.example.com", i);
		model_add(names[i], RR_TXT, 60, "\x02ok", 3);
		touched[n++] = names[i];
	}
	model_bump_serial();
	touched[n++] = "example.com";
	struct zone_patch *p = patch_for(z, touched, n);
	char err[256], why[256];
	is_int(zone_patch_prepare(p, signer_hook(s), err), 0, "1000 new names in one patch");
	zone_patch_apply(p);
	zone_patch_free(p);
	struct zone *fresh = build_fresh(s);
	const char *d = differ(z, fresh, why, sizeof(why));
	ok(d == NULL, "equal to the zone built whole (%s)", d ? d : "equal");
	is_int(verify_all(z, keys), 0, "every RRSIG verifies");
	zone_free(fresh);
	/* And all of them gone again (a stale purge). */
	n = 0;
	for (size_t i = n_model; i-- > 0;)
		if (!strncmp(model[i].owner, "_acme-challenge.h", 17))
			model_del_at(i);
	for (int i = 0; i < 1000; i++)
		touched[n++] = names[i];
	model_bump_serial();
	touched[n++] = "example.com";
	p = patch_for(z, touched, n);
	is_int(zone_patch_prepare(p, signer_hook(s), err), 0, "1000 names removed in one patch");
	zone_patch_apply(p);
	zone_patch_free(p);
	fresh = build_fresh(s);
	d = differ(z, fresh, why, sizeof(why));
	ok(d == NULL, "equal to the zone built whole (%s)", d ? d : "equal");
	is_int(verify_all(z, keys), 0, "every RRSIG verifies");
	zone_free(fresh);
	zone_free(z);
}

/* --- renewing signatures in slices --- */

/* The earliest RRSIG expiration in the zone (absolute, from serial time). */
static uint64_t min_expiration(const struct zone *z, uint64_t now, int *unsigned_sets)
{
	uint64_t m = UINT64_MAX;
	for (uint32_t h = 0; h <= z->bucket_mask; h++)
		for (const struct zone_node *n = z->buckets[h]; n; n = n->hash_next)
			for (uint16_t j = 0; j < n->rrset_count; j++) {
				const struct rrset *s = &n->rrsets[j];
				if (!s->sig[0].len) {
					(*unsigned_sets)++;
					continue;
				}
				uint64_t e = now + (uint64_t)(int32_t)(wire_get_u32(s->sig[0].data + 8) - (uint32_t)now);
				if (e < m)
					m = e;
			}
	return m;
}

static void test_resign(const char *key_path, ldns_rr_list *keys)
{
	const uint64_t T0 = 1700000000ull, DAY = 86400;
	struct config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.sig_validity_s = 14 * DAY;
	cfg.sig_inception_s = 3600;
	cfg.sig_refresh_s = 7 * DAY;
	char err[256];
	struct signer *s = signer_new("example.com", key_path, &cfg, false, err);
	clock_now = T0;
	signer_set_clock(s, test_clock, NULL);
	model_init();
	for (int i = 0; i < 300; i++) {
		char owner[64];
		snprintf(owner, sizeof(owner), "_acme-challenge.r%d.example.com", i);
		model_add(owner, RR_TXT, 60, "\x02ok", 3);
	}
	struct zone *z = build_fresh(s);
	is_int(z->expires_at, T0 + 7 * DAY, "built at T0: refresh point T0 + validity - refresh");
	is_int(zone_signature_expiry(z), T0 + 14 * DAY, "built at T0: signatures expire T0 + validity");

	/* Not due yet: a pass renews nothing and keeps the refresh point. */
	struct zone_resign r;
	zone_resign_begin(z, &r);
	int rc, steps = 0;
	while ((rc = zone_resign_step(z, signer_hook(s), &r, 50, clock_now, err)) == 0)
		steps++;
	is_int(rc, 1, "the pass completes");
	is_int(r.renewed, 0, "nothing due: nothing renewed");
	is_int(z->expires_at, T0 + 7 * DAY, "refresh point unchanged");

	/* Past the refresh point: renewed in slices of at most 50 signatures,
	 * with an UPDATE patched in between two slices. */
	clock_now = T0 + 7 * DAY + 3600;
	zone_resign_begin(z, &r);
	ok(z->resigning && z->expires_at == T0 + 7 * DAY,
	   "during the pass: marked, the old refresh point kept");
	steps = 0;
	bool patched = false;
	while ((rc = zone_resign_step(z, signer_hook(s), &r, 50, clock_now, err)) == 0) {
		steps++;
		if (zone_signature_expiry(z) > served_sigs_min(z, (int64_t)clock_now))
			printf("# step %d: signature expiry %lld later than served %lld\n", steps,
			       (long long)zone_signature_expiry(z),
			       (long long)served_sigs_min(z, (int64_t)clock_now));
		ok(zone_signature_expiry(z) <= served_sigs_min(z, (int64_t)clock_now),
		   "mid-pass step %d: the signature expiry is never later than what is served", steps);
		if (steps == 3 && !patched) {
			model_add("_acme-challenge.mid.example.com", RR_TXT, 60, "\x03new", 4);
			model_bump_serial();
			const char *t[] = { "_acme-challenge.mid.example.com", "example.com" };
			struct zone_patch *p = patch_for(z, t, 2);
			patched = zone_patch_prepare(p, signer_hook(s), err) == 0;
			zone_patch_apply(p);
			zone_patch_free(p);
		}
	}
	is_int(rc, 1, "the pass completes (%s)", err);
	ok(patched, "an UPDATE was patched in mid-pass");

	ok(steps >= 6, "in slices: %d steps for %llu renewals", steps + 1,
	   (unsigned long long)r.renewed);
	ok(r.renewed >= 600, "every signature renewed (%llu)", (unsigned long long)r.renewed);
	int unsigned_sets = 0;
	uint64_t exp = min_expiration(z, clock_now, &unsigned_sets);
	is_int(unsigned_sets, 0, "every RRset signed");
	is_int(exp, clock_now + 14 * DAY, "every signature expires validity after now");
	is_int(zone_signature_expiry(z), clock_now + 14 * DAY,
	       "the pass over: the signature expiry is the renewed signatures'");
	is_int(z->expires_at, clock_now + 7 * DAY, "refresh point: now + validity - refresh");
	ok(!z->resigning, "the pass is over");
	verify_time = (time_t)clock_now;
	is_int(verify_all(z, keys), 0, "every RRSIG verifies at the new time (ldns)");
	verify_time = 0;
	struct zone *fresh = build_fresh(s);
	char why[256];
	const char *d = differ(z, fresh, why, sizeof(why));
	ok(d == NULL, "records equal to the zone built whole (%s)", d ? d : "equal");
	zone_free(fresh);

	/* A transfer holds the snapshot: a step does nothing and says to wait
	 * (not "more remains", which the caller re-arms at once: a spin). */
	clock_now += 8 * DAY;   /* past the new refresh point */
	zone_resign_begin(z, &r);
	struct zone *held = zone_hold(z);
	is_int(zone_resign_step(z, signer_hook(s), &r, 50, clock_now, err), ZONE_RESIGN_WAIT,
	       "held by a transfer: the step waits");
	is_int(r.renewed + r.kept, 0, "held: nothing looked at");
	ok(z->resigning, "held: the pass goes on");
	zone_free(held);
	while ((rc = zone_resign_step(z, signer_hook(s), &r, 50, clock_now, err)) == 0)
		;
	is_int(rc, 1, "let go: the pass completes (%s)", err);
	ok(r.renewed > 0, "let go: the due signatures renewed");
	zone_free(z);
	signer_free(s);
}

int main(void)
{
	char dir[64], key_path[128], cmd[256];
	snprintf(dir, sizeof(dir), "/tmp/test_zone_patch.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(key_path, sizeof(key_path), "%s/k.pem", dir);
	snprintf(cmd, sizeof(cmd),
	         "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out %s 2>/dev/null",
	         key_path);
	if (system(cmd) != 0 || chmod(key_path, 0600) != 0)
		return 1;
	char err[256];
	struct signer *s = signer_new("example.com", key_path, NULL, true, err);
	if (!s) {
		printf("# %s\n", err);
		return 1;
	}
	size_t klen;
	const uint8_t *dnskey = signer_dnskey(s, &klen);
	ldns_rr_list *keys = ldns_rr_list_new();
	ldns_rr_list_push_rr(keys, to_ldns(name("example.com"), RR_DNSKEY, 3600, dnskey,
	                                   (uint16_t)klen));

	test_random(s, keys);
	test_abandon_and_refuse(s);
	test_unsigned();
	test_bulk(s, keys);
	test_held(s, keys);
	test_walk(s, keys);
	test_delegation(s, keys);
	test_resign(key_path, keys);
	test_cache_follows_patches(key_path);

	ldns_rr_list_deep_free(keys);
	signer_free(s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return done_testing();
}
