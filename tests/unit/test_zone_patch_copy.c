/* SPDX-License-Identifier: MIT */
/*
 * Patching a secondary's presigned copy (core/zone/zone_patch.h): every
 * record, RRSIGs included, is data the primary sent.  After each random
 * change the patched copy equals the copy built whole, signatures byte for
 * byte; what such a patch cannot do answers -EAGAIN.  Moved out of
 * test_zone_patch.c, which it shares zone_patch_model.h with.
 */
#include "tests/unit/zone_patch_model.h"

/* --- a presigned copy (a secondary's): every record is data --- */

/*
 * The copy holds what a primary sends: every record of the primary's
 * snapshot, NSEC, DNSKEY and each RRSIG as a record of its own, in the
 * order given (which RRSIG wins when several cover one RRset depends on it).
 */
struct crec {
	uint8_t owner[DNAME_MAX];
	uint16_t type;
	uint32_t ttl;
	uint16_t len;
	uint8_t rd[256];
};

#define COPY_MAX 2048
static struct crec copy_v[2][COPY_MAX];
static size_t copy_n[2];

static void copy_push(int c, const uint8_t *owner, uint16_t type, uint32_t ttl,
                      const struct rdata *rd)
{
	if (copy_n[c] == COPY_MAX || rd->len > sizeof(copy_v[c][0].rd))
		abort();
	struct crec *r = &copy_v[c][copy_n[c]++];
	memcpy(r->owner, owner, dname_len(owner));
	r->type = type;
	r->ttl = ttl;
	r->len = rd->len;
	memcpy(r->rd, rd->data, rd->len);
}

/* Copy c := the records of the primary's snapshot, as a transfer sends them. */
static void copy_export(int c, const struct zone *z)
{
	copy_n[c] = 0;
	for (uint32_t h = 0; h <= z->bucket_mask; h++)
		for (const struct zone_node *n = z->buckets[h]; n; n = n->hash_next)
			for (uint16_t j = 0; j < n->rrset_count; j++) {
				const struct rrset *s = &n->rrsets[j];
				for (uint16_t i = 0; i < s->count; i++)
					copy_push(c, n->name, s->type, s->ttl, &s->rr[i]);
				if (s->sig[0].len)
					copy_push(c, n->name, RR_RRSIG, s->ttl, &s->sig[0]);
			}
}

static struct zone *copy_build(int c)
{
	struct zone_builder *b = zone_builder_new(name("example.com"));
	zone_builder_set_presigned(b);
	for (size_t i = 0; i < copy_n[c]; i++)
		if (zone_builder_add(b, copy_v[c][i].owner, copy_v[c][i].type, copy_v[c][i].ttl,
		                     copy_v[c][i].rd, copy_v[c][i].len) < 0)
			abort();
	struct diag d;
	diag_init(&d);
	struct zone *z = zone_builder_finish(b, NULL, "copy", &d);
	for (size_t i = 0; i < d.n; i++)
		printf("# %s\n", d.msgs[i]);
	diag_clear(&d);
	return z;
}

/* A name's records in copy c, in order, as bytes (to tell changed names). */
static size_t copy_name_bytes(int c, const uint8_t *owner, uint8_t *out, size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; i < copy_n[c]; i++) {
		const struct crec *r = &copy_v[c][i];
		if (!dname_equal(r->owner, owner) || k + 8 + r->len > cap)
			continue;
		wire_set_u16(out + k, r->type);
		wire_set_u32(out + k + 2, r->ttl);
		wire_set_u16(out + k + 6, r->len);
		memcpy(out + k + 8, r->rd, r->len);
		k += 8 + (size_t)r->len;
	}
	return k;
}

/* The names whose records differ between copy 0 (old) and 1 (new). */
static size_t copy_changed(const uint8_t **names, size_t cap)
{
	static uint8_t a[16384], b[16384];
	size_t n = 0;
	for (int c = 0; c < 2; c++)
		for (size_t i = 0; i < copy_n[c]; i++) {
			const uint8_t *owner = copy_v[c][i].owner;
			bool seen = false;
			for (size_t k = 0; k < n && !seen; k++)
				seen = dname_equal(names[k], owner);
			if (seen)
				continue;
			size_t al = copy_name_bytes(0, owner, a, sizeof(a));
			size_t bl = copy_name_bytes(1, owner, b, sizeof(b));
			if ((al != bl || memcmp(a, b, al) != 0) && n < cap)
				names[n++] = owner;
		}
	return n;
}

/* The patch a secondary makes: each changed name with all its new records. */
static struct zone_patch *copy_patch(struct zone *z, const uint8_t **names, size_t n)
{
	struct zone_patch *p = zone_patch_new(z);
	for (size_t k = 0; k < n; k++) {
		if (zone_patch_name(p, names[k]) <= 0)
			continue;
		for (size_t i = 0; i < copy_n[1]; i++)
			if (dname_equal(copy_v[1][i].owner, names[k]) &&
			    zone_patch_add(p, copy_v[1][i].owner, copy_v[1][i].type, copy_v[1][i].ttl,
			                   copy_v[1][i].rd, copy_v[1][i].len) < 0)
				printf("# zone_patch_add refused a record\n");
	}
	return p;
}

/*
 * What a copy sees besides the primary's changes: an RRSIG re-made (other
 * bytes), a second RRSIG of an RRset (the last given wins), one taken away.
 */
static void copy_mutate(void)
{
	size_t sigs[COPY_MAX], k = 0;
	for (size_t i = 0; i < copy_n[1]; i++)
		if (copy_v[1][i].type == RR_RRSIG)
			sigs[k++] = i;
	if (!k)
		return;
	struct crec *r = &copy_v[1][sigs[rnd((uint32_t)k)]];
	switch (rnd(4)) {
	case 0:
		r->rd[r->len - 1] ^= (uint8_t)(1 + rnd(255));
		break;
	case 1: {
		struct crec extra = *r;
		extra.rd[extra.len - 2] ^= 0x5a;
		copy_v[1][copy_n[1]++] = extra;
		break;
	}
	case 3:
		/* The zone cut's DS changes (a key rollover below). */
		for (size_t i = 0; i < copy_n[1]; i++)
			if (copy_v[1][i].type == RR_DS)
				copy_v[1][i].rd[copy_v[1][i].len - 1] ^= (uint8_t)(1 + rnd(255));
		break;
	default:
		/* Drop it only where another RRSIG of the same RRset stays. */
		for (size_t i = 0; i < copy_n[1]; i++) {
			const struct crec *o = &copy_v[1][i];
			if (o != r && o->type == RR_RRSIG && dname_equal(o->owner, r->owner) &&
			    wire_get_u16(o->rd) == wire_get_u16(r->rd)) {
				*r = copy_v[1][--copy_n[1]];
				break;
			}
		}
	}
}

/* A zone cut with glue and a DS: the copy patches its NSEC and DS as the
 * names around it come and go. */
static void model_add_cut(void)
{
	const uint8_t *ns = name("ns.sub.example.com");
	model_add("sub.example.com", RR_NS, 3600, ns, dname_len(ns));
	model_add("ns.sub.example.com", RR_A, 3600, "\xc0\x00\x02\x63", 4);
	uint8_t ds[36] = { 0x30, 0x39, 13, 2 };
	for (int i = 4; i < 36; i++)
		ds[i] = (uint8_t)i;
	model_add("sub.example.com", RR_DS, 3600, ds, sizeof(ds));
}

static void test_presigned(struct signer *s)
{
	model_init();
	model_add_cut();
	struct zone *primary = build_fresh(s);
	copy_export(0, primary);
	struct zone *z = copy_build(0);
	ok(z && zone_is_signed(z) && z->presigned && z->nsec_complete, "a presigned copy");
	int steps = 300, refused = 0, mismatches = 0, diffs = 0, covering = 0;
	int joined = 0, left = 0, sig_only = 0, cut_changed = 0;
	const uint8_t *sub = name("sub.example.com");
	uint8_t sub_name[DNAME_MAX];
	memcpy(sub_name, sub, dname_len(sub));
	char err[256];
	exact_sigs = true;
	for (int step = 0; step < steps && z; step++) {
		if (rnd(4) == 0) {
			/* The copy's own: signatures change, the names stay. */
			copy_n[1] = copy_n[0];
			memcpy(copy_v[1], copy_v[0], copy_n[0] * sizeof(copy_v[0][0]));
			copy_mutate();
			sig_only++;
		} else {
			/* The primary changes (patched, so only what changed is signed
			 * anew, as a signing primary does) and the copy follows. */
			const char *touched[16];
			size_t n = random_change(touched);
			struct zone_patch *pp = patch_for(primary, touched, n);
			if (zone_patch_prepare(pp, signer_hook(s), err) == 0) {
				zone_patch_apply(pp);
			} else {
				zone_free(primary);
				primary = build_fresh(s);
			}
			zone_patch_free(pp);
			copy_export(1, primary);
		}
		const uint8_t *names[COPY_MAX];
		size_t n = copy_changed(names, COPY_MAX);
		uint32_t nsec_before = z->nsec_count;
		for (size_t k = 0; k < n; k++)
			cut_changed += dname_equal(names[k], sub_name);
		struct zone_patch *p = copy_patch(z, names, n);
		int rc = zone_patch_prepare(p, NULL, err);
		if (rc < 0) {
			if (!refused++)
				printf("# step %d: prepare %d (%s)\n", step, rc, err);
			zone_patch_free(p);
			break;
		}
		struct zone *before = copy_build(0);
		uint8_t *pd = NULL;
		size_t pl = 0;
		int prc = zone_diff_patch(z, p, &pd, &pl);
		zone_patch_apply(p);
		zone_patch_free(p);
		joined += z->nsec_count > nsec_before;
		left += z->nsec_count < nsec_before;
		/* The new copy becomes the old one. */
		copy_n[0] = copy_n[1];
		memcpy(copy_v[0], copy_v[1], copy_n[1] * sizeof(copy_v[0][0]));
		struct zone *fresh = copy_build(0);
		check_patched(step, z, before, fresh, prc, pd, pl,
		              zone_serial(before) != zone_serial(fresh), &diffs, &mismatches);
		for (int q = 0; q < 8; q++) {
			const uint8_t *probe = name(q & 1 ? "nx.q.example.com" : pool[rnd(POOL)]);
			const struct zone_node *x = zone_nsec_covering(z, probe);
			const struct zone_node *y = zone_nsec_covering(fresh, probe);
			if (!x || !y || !dname_equal(x->name, y->name))
				covering++;
		}
		zone_free(fresh);
		if (mismatches)
			break;
	}
	exact_sigs = false;
	is_int(refused, 0, "every change to the copy is one a patch makes");
	is_int(mismatches, 0, "patched copy == copy built whole, RRSIG bytes included, after %d "
	       "changes", steps);
	is_int(diffs, 0, "the patch's IXFR difference equals the whole builds', RRSIGs included");
	is_int(covering, 0, "the covering NSEC of probe names is the same");
	ok(joined > 10 && left > 10 && sig_only > 10,
	   "names joined (%d) and left (%d) the NSEC order; %d signature-only changes", joined, left,
	   sig_only);
	ok(cut_changed > 5, "the zone cut's NSEC or DS changed %d times", cut_changed);
	const struct zone_node *cut = zone_find(z, sub_name, dname_len(sub_name));
	const struct zone_node *glue = zone_find(z, name("ns.sub.example.com"),
	                                         dname_len(name("ns.sub.example.com")));
	ok(cut && (cut->flags & ZONE_NODE_DELEGATION) && glue && (glue->flags & ZONE_NODE_GLUE) &&
	   glue->cut == cut, "still a cut, with its glue below");
	zone_free(z);
	zone_free(primary);
}

/* What a patch of a copy does not do: -EAGAIN (built whole instead). */
static void test_presigned_refuse(struct signer *s)
{
	model_init();
	struct zone *primary = build_fresh(s);
	copy_export(0, primary);
	zone_free(primary);
	struct zone *z = copy_build(0);
	char err[256];
	static uint8_t www[DNAME_MAX], sub[DNAME_MAX];   /* name() reuses its buffers */
	memcpy(www, name("www.example.com"), dname_len(name("www.example.com")));
	memcpy(sub, name("sub.example.com"), dname_len(name("sub.example.com")));
	/* Copies: they outlive the snapshots below. */
	static uint8_t nsec_rd[256], sig_rd[256];
	const struct zone_node *n = zone_find(z, www, dname_len(www));
	struct rdata nsec = zone_node_rrset(n, RR_NSEC)->rr[0], sig = zone_node_rrset(n, RR_A)->sig[0];
	memcpy(nsec_rd, nsec.data, nsec.len);
	memcpy(sig_rd, sig.data, sig.len);
	nsec.data = nsec_rd;
	sig.data = sig_rd;
	static const uint8_t a1[4] = { 192, 0, 2, 9 };
	struct {
		const char *what;
		bool with_nsec, sig_of_nothing, delegation;
	} cases[] = {
		{ "records without an NSEC", false, false, false },
		{ "an RRSIG that covers no RRset", true, true, false },
		{ "a delegation beside other data", true, false, true },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct zone_patch *p = zone_patch_new(z);
		zone_patch_name(p, www);
		zone_patch_add(p, www, RR_A, 300, a1, 4);
		if (cases[c].with_nsec)
			zone_patch_add(p, www, RR_NSEC, 300, nsec.data, nsec.len);
		if (cases[c].sig_of_nothing) {
			uint8_t rd[256];
			memcpy(rd, sig.data, sig.len);
			wire_set_u16(rd, RR_MX);
			zone_patch_add(p, www, RR_RRSIG, 300, rd, sig.len);
		}
		if (cases[c].delegation) {
			const uint8_t *ns = name("ns.elsewhere.net");
			zone_patch_add(p, www, RR_NS, 300, ns, (uint16_t)dname_len(ns));
		}
		is_int(zone_patch_prepare(p, NULL, err), -EAGAIN, "copy: -EAGAIN for %s",
		       cases[c].what);
		zone_patch_free(p);
	}
	/* A cut that loses its NS: the names below would stop being glue. */
	zone_free(z);
	model_init();
	model_add_cut();
	primary = build_fresh(s);
	copy_export(0, primary);
	zone_free(primary);
	z = copy_build(0);
	struct zone_patch *p = zone_patch_new(z);
	zone_patch_name(p, sub);
	for (size_t i = 0; i < copy_n[0]; i++)
		if (dname_equal(copy_v[0][i].owner, sub) && copy_v[0][i].type != RR_NS)
			zone_patch_add(p, sub, copy_v[0][i].type, copy_v[0][i].ttl, copy_v[0][i].rd,
			               copy_v[0][i].len);
	is_int(zone_patch_prepare(p, NULL, err), -EAGAIN, "copy: -EAGAIN for a cut without NS");
	zone_patch_free(p);
	/* ... and with it, its records are data like any other. */
	p = zone_patch_new(z);
	zone_patch_name(p, sub);
	for (size_t i = 0; i < copy_n[0]; i++)
		if (dname_equal(copy_v[0][i].owner, sub))
			zone_patch_add(p, sub, copy_v[0][i].type, copy_v[0][i].ttl, copy_v[0][i].rd,
			               copy_v[0][i].len);
	is_int(zone_patch_prepare(p, NULL, err), 0, "copy: a cut given as it is is patched");
	zone_patch_free(p);

	/* Held by an outgoing transfer: patched all the same (test_held). */
	struct zone *held = zone_hold(z);
	p = zone_patch_new(z);
	zone_patch_name(p, www);
	zone_patch_add(p, www, RR_A, 300, a1, 4);
	zone_patch_add(p, www, RR_NSEC, 300, nsec.data, nsec.len);
	is_int(zone_patch_prepare(p, NULL, err), 0, "copy held by a transfer: patched");
	zone_patch_free(p);
	zone_free(held);
	/* Malformed rdata never enters a snapshot. */
	p = zone_patch_new(z);
	zone_patch_name(p, www);
	is_int(zone_patch_add(p, www, RR_A, 300, a1, 3), -EBADMSG, "a 3-byte A: -EBADMSG");
	zone_patch_free(p);
	zone_free(z);
	/* A copy built with a name that holds records but no NSEC is built whole. */
	copy_push(0, name("bare.example.com"), RR_A, 300, &(struct rdata){ 4, a1 });
	z = copy_build(0);
	ok(z && !z->nsec_complete, "a copy with a name outside the NSEC order");
	p = zone_patch_new(z);
	zone_patch_name(p, www);
	zone_patch_add(p, www, RR_A, 300, a1, 4);
	zone_patch_add(p, www, RR_NSEC, 300, nsec.data, nsec.len);
	is_int(zone_patch_prepare(p, NULL, err), -EAGAIN, "... is not patched: -EAGAIN");
	zone_patch_free(p);
	zone_free(z);
	/* A zone we sign takes no RRSIG as data. */
	model_init();
	z = build_fresh(s);
	p = zone_patch_new(z);
	zone_patch_name(p, www);
	is_int(zone_patch_add(p, www, RR_RRSIG, 300, sig.data, sig.len), -EINVAL,
	       "an RRSIG given to a zone we sign: -EINVAL");
	zone_patch_free(p);
	zone_free(z);
}

int main(void)
{
	char dir[64], key_path[128], cmd[256];
	snprintf(dir, sizeof(dir), "/tmp/test_zone_patch_copy.XXXXXX");
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

	test_presigned(s);
	test_presigned_refuse(s);

	ldns_rr_list_deep_free(keys);
	signer_free(s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return done_testing();
}
