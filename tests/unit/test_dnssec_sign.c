/* SPDX-License-Identifier: MIT */
/*
 * dnssec/sign: RRSIGs over hand-built RRsets, verified by ldns as an
 * independent validator; RRSIG fields; DER -> r||s.  (Signing speed is
 * bench/signing.sh's, not a test's.)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ldns/ldns.h>

#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "dnssec/key.h"
#include "dnssec/sign.h"
#include "tests/unit/check.h"
#include "tests/unit/ldns_util.h"

static char dir[64];
static struct key *key;
static struct sign_ctx *ctx;
static uint8_t apex[DNAME_MAX];
static ldns_rr_list *keys;

#define NOW 1700000000u
#define INCEPTION (NOW - 3600)
#define EXPIRATION (NOW + 14 * 86400)

/* Verifies `sig` over the RRset with ldns at time `when`. */
static ldns_status verify(const uint8_t *owner, const struct rrset *s, const uint8_t *sig,
                          size_t sig_len, time_t when)
{
	ldns_rr_list *set = ldns_rr_list_new();
	for (uint16_t i = 0; i < s->count; i++)
		ldns_rr_list_push_rr(set, to_ldns(owner, s->type, s->ttl, s->rr[i].data, s->rr[i].len));
	ldns_rr *rrsig = to_ldns(owner, RR_RRSIG, s->ttl, sig, (uint16_t)sig_len);
	ldns_rr_list *good = ldns_rr_list_new();
	ldns_status st = rrsig ? ldns_verify_rrsig_keylist_time(set, rrsig, keys, when, good)
	                       : LDNS_STATUS_ERR;
	ldns_rr_list_free(good);
	ldns_rr_free(rrsig);
	ldns_rr_list_deep_free(set);
	return st;
}

static void setup(void)
{
	char p[128], err[256] = "";
	snprintf(p, sizeof(p), "%s/k.pem", dir);
	char cmd[256];
	snprintf(cmd, sizeof(cmd),
	         "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out %s 2>/dev/null", p);
	if (system(cmd) != 0 || chmod(p, 0600) != 0)
		abort();
	key = key_load(p, err);
	if (!key) {
		printf("# %s\n", err);
		abort();
	}
	dname_from_str("Example.COM", apex);
	ctx = sign_ctx_new(key, apex, err);
	if (!ctx)
		abort();
	keys = ldns_rr_list_new();
	ldns_rr_list_push_rr(keys, to_ldns(apex, RR_DNSKEY, 3600, key_dnskey(key), KEY_DNSKEY_LEN));
}

static void test_fields(void)
{
	struct rdata rr[2] = {
		{ 4, (const uint8_t *)"\xc0\x00\x02\x01" },
		{ 4, (const uint8_t *)"\xc0\x00\x02\x02" },
	};
	struct rrset s = { .type = RR_A, .count = 2, .ttl = 300, .rr = rr };
	uint8_t sig[SIGN_RRSIG_MAX];
	const uint8_t *owner = name("www.example.com");
	int len = sign_rrset(ctx, owner, &s, INCEPTION, EXPIRATION, sig, sizeof(sig));
	is_int(len, 18 + 13 + 64, "RRSIG length: 18 + signer name + 64");
	if (len < 0)
		return;
	is_int(wire_get_u16(sig), RR_A, "type covered");
	is_int(sig[2], 13, "algorithm 13");
	is_int(sig[3], 3, "labels of www.example.com");
	is_int(wire_get_u32(sig + 4), 300, "original TTL");
	is_int(wire_get_u32(sig + 8), EXPIRATION, "expiration");
	is_int(wire_get_u32(sig + 12), INCEPTION, "inception");
	is_int(wire_get_u16(sig + 16), key_tag(key), "key tag");
	is_mem(sig + 18, "\x07" "example\x03" "com\x00", 13, "signer name lowercase, uncompressed");
	is_int(verify(owner, &s, sig, (size_t)len, NOW), LDNS_STATUS_OK, "ldns verifies A RRset");
	is_int(verify(owner, &s, sig, (size_t)len, EXPIRATION + 10), LDNS_STATUS_CRYPTO_SIG_EXPIRED,
	       "ldns: expired after expiration");
	is_int(sign_count(ctx), 1, "one ECDSA operation counted");

	/* Tampering with the data must break it (the test can fail). */
	struct rdata bad_rr[2] = { rr[0], { 4, (const uint8_t *)"\xc0\x00\x02\x03" } };
	struct rrset bad = s;
	bad.rr = bad_rr;
	ok(verify(owner, &bad, sig, (size_t)len, NOW) != LDNS_STATUS_OK,
	   "ldns rejects the signature over changed rdata");
	/* Validators use the RRSIG's original TTL, so a changed TTL in it
	 * must break the signature. */
	uint8_t sig2[SIGN_RRSIG_MAX];
	memcpy(sig2, sig, (size_t)len);
	sig2[7] ^= 1;
	ok(verify(owner, &s, sig2, (size_t)len, NOW) != LDNS_STATUS_OK,
	   "ldns rejects the signature when its original TTL is changed");

	uint8_t small[40];
	is_int(sign_rrset(ctx, owner, &s, INCEPTION, EXPIRATION, small, sizeof(small)), -ENOSPC,
	       "-ENOSPC when the output is too small");
	struct rrset empty = { .type = RR_A };
	is_int(sign_rrset(ctx, owner, &empty, INCEPTION, EXPIRATION, sig, sizeof(sig)), -EINVAL,
	       "-EINVAL for an empty RRset");
}

static void test_kinds(void)
{
	uint8_t sig[SIGN_RRSIG_MAX];
	int len;

	/* MX with a name in the rdata, at the apex. */
	uint8_t mx[64];
	wire_set_u16(mx, 10);
	size_t n = dname_len(name("mail.example.com"));
	memcpy(mx + 2, name("mail.example.com"), n);
	struct rdata mrr[1] = { { (uint16_t)(2 + n), mx } };
	struct rrset ms = { .type = RR_MX, .count = 1, .ttl = 3600, .rr = mrr };
	len = sign_rrset(ctx, apex, &ms, INCEPTION, EXPIRATION, sig, sizeof(sig));
	is_int(sig[3], 2, "labels of the apex");
	is_int(verify(apex, &ms, sig, (size_t)len, NOW), LDNS_STATUS_OK, "ldns verifies MX at apex");

	/* Wildcard owner: the "*" label is not counted. */
	struct rdata arr[1] = { { 4, (const uint8_t *)"\x0a\x00\x00\x01" } };
	struct rrset as = { .type = RR_A, .count = 1, .ttl = 60, .rr = arr };
	const uint8_t *wild = name("*.example.com");
	len = sign_rrset(ctx, wild, &as, INCEPTION, EXPIRATION, sig, sizeof(sig));
	is_int(sig[3], 2, "labels of *.example.com");
	is_int(sign_labels(wild), 2, "sign_labels(*.example.com)");
	is_int(sign_labels(name("a.b.c.example.com")), 5, "sign_labels of five labels");
	is_int(sign_labels(name(".")), 0, "sign_labels(root)");
	is_int(verify(wild, &as, sig, (size_t)len, NOW), LDNS_STATUS_OK, "ldns verifies wildcard owner");

	/* Upper-case owner: signed as lowercase. */
	const uint8_t upper[] = "\x03" "WWW" "\x07" "example" "\x03" "com";
	len = sign_rrset(ctx, upper, &as, INCEPTION, EXPIRATION, sig, sizeof(sig));
	is_int(verify(name("www.example.com"), &as, sig, (size_t)len, NOW), LDNS_STATUS_OK,
	       "upper-case owner is signed in canonical (lowercase) form");

	/* A large RRset: 60 TXT records of 201 bytes, sorted. */
	static uint8_t txt[60][201];
	struct rdata trr[60];
	for (int i = 0; i < 60; i++) {
		txt[i][0] = 200;
		memset(txt[i] + 1, 'a', 200);
		txt[i][1] = (uint8_t)('A' + i);   /* distinct, increasing */
		trr[i].len = 201;
		trr[i].data = txt[i];
	}
	struct rrset ts = { .type = RR_TXT, .count = 60, .ttl = 120, .rr = trr };
	len = sign_rrset(ctx, name("big.example.com"), &ts, INCEPTION, EXPIRATION, sig, sizeof(sig));
	is_int(verify(name("big.example.com"), &ts, sig, (size_t)len, NOW), LDNS_STATUS_OK,
	       "ldns verifies a 60-record TXT RRset (12 KB signed data)");

	/* Empty rdata is legal for some types (e.g. an empty TXT is not, but NULL-ish rdata). */
	struct rdata e[1] = { { 0, (const uint8_t *)"" } };
	struct rrset es = { .type = 65280, .count = 1, .ttl = 60, .rr = e };
	len = sign_rrset(ctx, name("e.example.com"), &es, INCEPTION, EXPIRATION, sig, sizeof(sig));
	is_int(verify(name("e.example.com"), &es, sig, (size_t)len, NOW), LDNS_STATUS_OK,
	       "ldns verifies an RRset with empty rdata (private type)");
}

/* Many signatures: r and s with the top bit set (33-byte DER INTEGER) and
 * with leading zero bytes (31 bytes) both occur; every one must verify. */
static void test_many(void)
{
	uint8_t sig[SIGN_RRSIG_MAX];
	int failures = 0, short_int = 0;
	for (uint32_t i = 0; i < 600; i++) {
		uint8_t a[4];
		wire_set_u32(a, i);
		struct rdata rr[1] = { { 4, a } };
		struct rrset s = { .type = RR_A, .count = 1, .ttl = 60, .rr = rr };
		int len = sign_rrset(ctx, name("n.example.com"), &s, INCEPTION, EXPIRATION, sig,
		                     sizeof(sig));
		if (len < 0 || verify(name("n.example.com"), &s, sig, (size_t)len, NOW) != LDNS_STATUS_OK)
			failures++;
		if (len > 0 && (sig[len - 64] == 0 || sig[len - 32] == 0))
			short_int++;
	}
	is_int(failures, 0, "600 signatures all verify with ldns");
	printf("# %d of 600 had r or s with a leading zero byte\n", short_int);
}

static void test_der(void)
{
	uint8_t out[64];
	/* r = 33 bytes (sign byte + 0x80...), s = 31 bytes. */
	uint8_t der[2 + 2 + 33 + 2 + 31];
	size_t p = 0;
	der[p++] = 0x30;
	der[p++] = sizeof(der) - 2;
	der[p++] = 0x02;
	der[p++] = 33;
	der[p++] = 0x00;
	for (int i = 0; i < 32; i++)
		der[p++] = (uint8_t)(0x80 + i);
	der[p++] = 0x02;
	der[p++] = 31;
	for (int i = 0; i < 31; i++)
		der[p++] = (uint8_t)(1 + i);
	is_int(sign_der_to_raw(der, sizeof(der), out), 0, "DER with 33- and 31-byte integers");
	uint8_t want[64];
	for (int i = 0; i < 32; i++)
		want[i] = (uint8_t)(0x80 + i);
	want[32] = 0;
	for (int i = 0; i < 31; i++)
		want[33 + i] = (uint8_t)(1 + i);
	is_mem(out, want, 64, "sign byte stripped, short integer left-padded");

	uint8_t bad[sizeof(der)];
	memcpy(bad, der, sizeof(der));
	bad[1]++;
	is_int(sign_der_to_raw(bad, sizeof(bad), out), -EBADMSG, "wrong SEQUENCE length");
	memcpy(bad, der, sizeof(der));
	bad[0] = 0x31;
	is_int(sign_der_to_raw(bad, sizeof(bad), out), -EBADMSG, "not a SEQUENCE");
	uint8_t too_long[2 + 2 + 33 + 3];
	memset(too_long, 0x11, sizeof(too_long));
	memcpy(too_long, "\x30\x26\x02\x21\x01", 5);   /* r: 33 bytes, no sign byte */
	memcpy(too_long + 37, "\x02\x01\x01", 3);
	is_int(sign_der_to_raw(too_long, sizeof(too_long), out), -EBADMSG, "33 significant bytes");
	const uint8_t trailing[] = { 0x30, 0x07, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02, 0x00 };
	is_int(sign_der_to_raw(trailing, sizeof(trailing), out), -EBADMSG, "trailing byte inside");
	const uint8_t tiny[] = { 0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02 };
	is_int(sign_der_to_raw(tiny, sizeof(tiny), out), 0, "one-byte integers");
	ok(out[31] == 1 && out[63] == 2 && out[0] == 0 && out[32] == 0, "padded to 32 each");
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_dnssec_sign.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	setup();
	test_fields();
	test_kinds();
	test_many();
	test_der();
	sign_ctx_free(ctx);
	key_free(key);
	ldns_rr_list_deep_free(keys);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# cleanup failed\n");
	return done_testing();
}
