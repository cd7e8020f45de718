/* SPDX-License-Identifier: MIT */
/*
 * core/tsig/tsig: RFC 8945 sign/verify for the five HMAC algorithms, checked
 * against an independent implementation (dnspython, run with Debian's
 * /usr/bin/python3), plus the error cases: BADKEY, BADSIG, BADTIME,
 * truncation (FORMERR / BADTRUNC), misplaced TSIG records, and that the
 * MAC is compared with CRYPTO_memcmp.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/tsig/tsig.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"

/*
 * Constant-time comparison: this definition in the executable takes the
 * place of libcrypto's for the code linked in here, so we can count the
 * calls tsig_verify makes.  It still compares every byte.
 */
static int memcmp_calls;
int CRYPTO_memcmp(const void *a, const void *b, size_t len)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char d = 0;
	memcmp_calls++;
	for (size_t i = 0; i < len; i++)
		d |= x[i] ^ y[i];
	return d != 0;
}

static const uint8_t secret[32] = "0123456789abcdef0123456789abcdef";
static char script[300];

static const struct { enum tsig_alg alg; const char *py; size_t size; } algs[] = {
	{ TSIG_HMAC_SHA1, "hmac-sha1", 20 },
	{ TSIG_HMAC_SHA224, "hmac-sha224", 28 },
	{ TSIG_HMAC_SHA256, "hmac-sha256", 32 },
	{ TSIG_HMAC_SHA384, "hmac-sha384", 48 },
	{ TSIG_HMAC_SHA512, "hmac-sha512", 64 },
};

/* The independent side: dnspython signs and verifies. */
static const char *py_source =
	"import sys, binascii, dns.tsig, dns.message, dns.update, dns.name\n"
	"secret = b'0123456789abcdef0123456789abcdef'\n"
	"mode, alg = sys.argv[1], sys.argv[2]\n"
	"key = dns.tsig.Key('k.example.', secret, dns.name.from_text(alg))\n"
	"try:\n"
	"    if mode == 'sign':\n"
	"        u = dns.update.UpdateMessage('acme.example.', keyring=key)\n"
	"        u.add('x', 60, 'TXT', 'hello')\n"
	"        print(u.to_wire().hex())\n"
	"    elif mode == 'verify':\n"
	"        dns.message.from_wire(binascii.unhexlify(sys.argv[3]), keyring=key)\n"
	"        print('ok')\n"
	"    elif mode == 'response':\n"
	"        req = dns.message.from_wire(binascii.unhexlify(sys.argv[3]), keyring=key)\n"
	"        mac = req.mac if sys.argv[5] == 'right' else bytes(len(req.mac))\n"
	"        dns.message.from_wire(binascii.unhexlify(sys.argv[4]), keyring=key, request_mac=mac)\n"
	"        print('ok')\n"
	"except Exception as e:\n"
	"    print(type(e).__name__)\n";

static int run_py(char *out, size_t cap, const char *mode, const char *alg, const char *a3,
                  const char *a4, const char *a5)
{
	size_t n = strlen(script) + strlen(mode) + strlen(alg) + 64 + (a3 ? strlen(a3) : 0) +
	           (a4 ? strlen(a4) : 0) + (a5 ? strlen(a5) : 0);
	char *cmd = malloc(n);
	snprintf(cmd, n, "/usr/bin/python3 %s %s %s %s %s %s", script, mode, alg, a3 ? a3 : "",
	         a4 ? a4 : "", a5 ? a5 : "");
	FILE *p = popen(cmd, "r");
	free(cmd);
	out[0] = 0;
	if (!p)
		return -1;
	if (!fgets(out, (int)cap, p))
		out[0] = 0;
	pclose(p);
	out[strcspn(out, "\n")] = 0;
	return 0;
}

static void to_hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = 0;
}

static size_t from_hex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	while (s[0] && s[1] && n < cap) {
		unsigned v;
		sscanf(s, "%2x", &v);
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

static void make_key(struct tsig_key *k, enum tsig_alg alg, const char *name)
{
	char err[256];
	if (tsig_key_init(k, name, alg, secret, sizeof(secret), 300, err) < 0)
		printf("# %s\n", err);
}

/* A query for www.acme.example. A, ID 0x1234. */
static size_t make_query(uint8_t *buf)
{
	static const uint8_t q[] = "\x12\x34\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	                           "\x03www\x04" "acme\x07" "example\x00\x00\x01\x00\x01";
	memcpy(buf, q, sizeof(q) - 1);
	return sizeof(q) - 1;
}

static void fields_for(struct tsig_rr *f, const struct tsig_key *k, uint64_t t, uint16_t id)
{
	memset(f, 0, sizeof(*f));
	memcpy(f->key_name, k->name, dname_len(k->name));
	memcpy(f->alg_name, tsig_alg_name(k->alg), dname_len(tsig_alg_name(k->alg)));
	f->time_signed = t;
	f->fudge = 300;
	f->orig_id = id;
}

/* Appends a TSIG with a chosen MAC (for truncation cases) and bumps ARCOUNT. */
static size_t append_raw_tsig(uint8_t *buf, size_t len, const struct tsig_rr *f,
                              const uint8_t *mac, size_t mac_len, uint16_t rclass)
{
	struct wire w;
	wire_init(&w, buf, 4096);
	wire_seek(&w, len);
	size_t kl = dname_len(f->key_name), al = dname_len(f->alg_name);
	wire_write_bytes(&w, f->key_name, kl);
	wire_write_u16(&w, RR_TSIG);
	wire_write_u16(&w, rclass);
	wire_write_u32(&w, 0);
	wire_write_u16(&w, (uint16_t)(al + 16 + mac_len));
	wire_write_bytes(&w, f->alg_name, al);
	wire_write_u16(&w, (uint16_t)(f->time_signed >> 32));
	wire_write_u32(&w, (uint32_t)f->time_signed);
	wire_write_u16(&w, f->fudge);
	wire_write_u16(&w, (uint16_t)mac_len);
	wire_write_bytes(&w, mac, mac_len);
	wire_write_u16(&w, f->orig_id);
	wire_write_u16(&w, 0);
	wire_write_u16(&w, 0);
	wire_set_u16(buf + 10, (uint16_t)(wire_get_u16(buf + 10) + 1));
	return wire_pos(&w);
}

/*
 * tsig_verify's outcome as one number for the tables below: the TSIG error
 * when it refuses, else what it returned (0 is TSIG_NOERROR).  Checks the
 * contract on the way: -EACCES always comes with a TSIG error in the out
 * parameter, 0 and -EBADMSG never do.
 */
static int verify(const uint8_t *msg, const struct tsig_rr *t, const struct tsig_key *k,
                  uint64_t now)
{
	uint16_t error = 0xffff;
	int rc = tsig_verify(msg, t, k, now, &error);
	if (rc == -EACCES) {
		if (error == TSIG_NOERROR)
			ok(0, "-EACCES without a TSIG error");
		return error;
	}
	if (error != TSIG_NOERROR)
		ok(0, "return %d with TSIG error %u", rc, error);
	return rc;
}

static void test_names(void)
{
	is_int(tsig_alg_from_name((const uint8_t *)"\x0bhmac-sha256"), TSIG_HMAC_SHA256,
	       "hmac-sha256. is known");
	is_int(tsig_alg_from_name((const uint8_t *)"\x09hmac-sha1"), TSIG_HMAC_SHA1,
	       "hmac-sha1. is known");
	is_int(tsig_alg_from_name((const uint8_t *)"\x08hmac-md5\x07sig-alg\x03reg\x03int"), 0,
	       "hmac-md5.sig-alg.reg.int. is not supported");
	for (size_t i = 0; i < 5; i++) {
		is_int(tsig_alg_mac_size(algs[i].alg), algs[i].size, "%s MAC size", algs[i].py);
		is_int(tsig_alg_from_str(algs[i].py), algs[i].alg, "%s by its name", algs[i].py);
		ok(tsig_alg_digest(algs[i].alg) != NULL, "%s has a digest", algs[i].py);
	}
	is_int(tsig_alg_from_str("HMAC-SHA384."), TSIG_HMAC_SHA384, "any case, trailing dot");
	is_int(tsig_alg_from_str("hmac-md5"), 0, "hmac-md5 is not supported");
	is_int(tsig_alg_from_str("hmac-sha256.."), 0, "one trailing dot only");
	is_str(tsig_alg_list(), "hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384 or hmac-sha512",
	       "the list for messages");
	is_int(tsig_alg_mac_size(TSIG_ALG_DEFAULT), 32, "the default is hmac-sha256's 32 bytes");
	char err0[256] = "";
	uint8_t big[TSIG_SECRET_MAX + 1] = { 0 };
	struct tsig_key k0;
	is_int(tsig_key_init(&k0, "k.", TSIG_HMAC_SHA256, big, sizeof(big), 0, err0), -EINVAL,
	       "a secret over TSIG_SECRET_MAX is refused");
	ok(strstr(err0, "longer than 128 bytes") != NULL, "with the limit (%s)", err0);
	struct tsig_key k;
	char err[256] = "";
	is_int(tsig_key_init(&k, "Update.ACME.example", TSIG_HMAC_SHA256, secret, 0, 0, err), -EINVAL,
	       "an empty secret is refused");
	ok(strstr(err, "empty") != NULL, "with a reason (%s)", err);
	is_int(tsig_key_init(&k, "Update.ACME.example", TSIG_HMAC_SHA256, secret, 32, 0, err), 0,
	       "key init");
	is_mem(k.name, "\x06update\x04" "acme\x07" "example", 21, "key name lowercased wire form");
	is_int(k.fudge, TSIG_FUDGE_DEFAULT, "default fudge 300");
}

/* dnspython signs; we verify; and the error cases on the same message. */
static void test_verify_dnspython(size_t ai)
{
	const char *alg = algs[ai].py;
	char hex[4096];
	uint8_t msg[2048];
	run_py(hex, sizeof(hex), "sign", alg, NULL, NULL, NULL);
	size_t len = from_hex(hex, msg, sizeof(msg));
	ok(len > 40, "%s: dnspython signed an UPDATE (%zu bytes)", alg, len);
	if (len <= 40)
		return;
	struct tsig_rr t;
	is_int(tsig_find(msg, len, &t), 1, "%s: TSIG found", alg);
	is_mem(t.key_name, "\x01k\x07" "example", 11, "%s: key name (compressed on the wire)", alg);
	is_int(tsig_alg_from_name(t.alg_name), algs[ai].alg, "%s: algorithm", alg);
	is_int(t.mac_len, algs[ai].size, "%s: full-length MAC", alg);
	is_int(t.fudge, 300, "%s: fudge", alg);

	struct tsig_key k, wrong, other;
	make_key(&k, algs[ai].alg, "k.example.");
	uint64_t ts = t.time_signed;
	int before = memcmp_calls;
	is_int(verify(msg, &t, &k, ts), TSIG_NOERROR, "%s: verifies", alg);
	ok(memcmp_calls > before, "%s: the MAC was compared with CRYPTO_memcmp", alg);
	is_int(verify(msg, &t, &k, ts + 300), TSIG_NOERROR, "%s: 300 s late is in the window", alg);
	is_int(verify(msg, &t, &k, ts - 300), TSIG_NOERROR, "%s: 300 s early too", alg);
	is_int(verify(msg, &t, &k, ts + 301), TSIG_BADTIME, "%s: 301 s late: BADTIME", alg);
	is_int(verify(msg, &t, &k, ts - 301), TSIG_BADTIME, "%s: 301 s early: BADTIME", alg);
	is_int(verify(msg, &t, NULL, ts), TSIG_BADKEY, "%s: no such key: BADKEY", alg);
	make_key(&other, algs[(ai + 1) % 5].alg, "k.example.");
	is_int(verify(msg, &t, &other, ts), TSIG_BADKEY, "%s: same name, other algorithm: BADKEY",
	       alg);
	make_key(&wrong, algs[ai].alg, "k.example.");
	wrong.secret[0] ^= 1;
	is_int(verify(msg, &t, &wrong, ts), TSIG_BADSIG, "%s: wrong secret: BADSIG", alg);
	/* The contract itself: an errno back, the TSIG error beside it. */
	uint16_t error = 0xffff;
	is_int(tsig_verify(msg, &t, &wrong, ts, &error), -EACCES, "%s: wrong secret: -EACCES", alg);
	is_int(error, TSIG_BADSIG, "%s: ... with BADSIG in the out parameter", alg);
	is_int(tsig_verify(msg, &t, &k, ts, &error), 0, "%s: right secret: 0", alg);
	is_int(error, TSIG_NOERROR, "%s: ... with NOERROR in the out parameter", alg);

	/* A flipped bit in the signed data. */
	uint8_t copy[2048];
	memcpy(copy, msg, len);
	copy[t.offset - 3] ^= 0x20;   /* inside the TXT data */
	is_int(verify(copy, &t, &k, ts), TSIG_BADSIG, "%s: altered message: BADSIG", alg);
	/* The ID is not signed as sent: Original ID stands in (RFC 8945 4.3.1). */
	memcpy(copy, msg, len);
	copy[0] ^= 0xff;
	is_int(verify(copy, &t, &k, ts), TSIG_NOERROR, "%s: a changed ID still verifies", alg);
	/* Our own key shorter window: the smaller fudge wins. */
	k.fudge = 10;
	is_int(verify(msg, &t, &k, ts + 11), TSIG_BADTIME, "%s: key fudge 10: 11 s is BADTIME",
	       alg);
}

/* We sign; dnspython verifies requests and responses. */
static void test_sign_dnspython(size_t ai)
{
	const char *alg = algs[ai].py;
	struct tsig_key k;
	make_key(&k, algs[ai].alg, "k.example.");
	uint8_t buf[1024];
	size_t len = make_query(buf);
	struct tsig_rr f;
	fields_for(&f, &k, (uint64_t)time(NULL), 0x1234);
	uint8_t mac[TSIG_MAC_MAX];
	int n = tsig_append(buf, &len, sizeof(buf), &f, &k, NULL, 0, mac);
	is_int(n, (int)algs[ai].size, "%s: tsig_append returns the MAC length", alg);
	is_int(wire_get_u16(buf + 10), 1, "%s: ARCOUNT counts the TSIG", alg);
	char hex[4096], out[256];
	to_hex(buf, len, hex);
	run_py(out, sizeof(out), "verify", alg, hex, NULL, NULL);
	is_str(out, "ok", "%s: dnspython verifies our signed query", alg);

	/* And it notices tampering: the check can fail. */
	buf[13] ^= 0x20;
	to_hex(buf, len, hex);
	run_py(out, sizeof(out), "verify", alg, hex, NULL, NULL);
	is_str(out, "BadSignature", "%s: dnspython rejects an altered one", alg);
	buf[13] ^= 0x20;

	/* A response to a dnspython request, chained on the request MAC. */
	char reqhex[4096];
	uint8_t req[2048];
	run_py(reqhex, sizeof(reqhex), "sign", alg, NULL, NULL, NULL);
	size_t rlen = from_hex(reqhex, req, sizeof(req));
	struct tsig_rr t;
	if (tsig_find(req, rlen, &t) != 1) {
		ok(0, "%s: request parsed", alg);
		return;
	}
	/* Header + zone section of the request, QR set, other counts zero. */
	uint8_t resp[1024];
	size_t zone_end = 12 + 14 + 4;   /* acme.example. SOA IN */
	memcpy(resp, req, zone_end);
	resp[2] |= 0x80;
	memset(resp + 6, 0, 6);
	size_t plen = zone_end;
	fields_for(&f, &k, (uint64_t)time(NULL), wire_get_u16(resp));
	ok(tsig_append(resp, &plen, sizeof(resp), &f, &k, t.mac, t.mac_len, NULL) > 0,
	   "%s: signed a response", alg);
	char resphex[4096];
	to_hex(resp, plen, resphex);
	run_py(out, sizeof(out), "response", alg, reqhex, resphex, "right");
	is_str(out, "ok", "%s: dnspython verifies our response with the request MAC", alg);
	run_py(out, sizeof(out), "response", alg, reqhex, resphex, "wrong");
	is_str(out, "BadSignature", "%s: and rejects it against another request MAC", alg);
}

static void test_truncation(void)
{
	struct tsig_key k;
	make_key(&k, TSIG_HMAC_SHA256, "k.example.");
	uint8_t base[1024], buf[1024];
	size_t blen = make_query(base);
	struct tsig_rr f, t;
	uint64_t now = 1700000000;
	fields_for(&f, &k, now, 0x1234);
	/* The full MAC, computed by signing a copy. */
	uint8_t mac[TSIG_MAC_MAX], extra[TSIG_MAC_MAX + 1];
	memcpy(buf, base, blen);
	size_t len = blen;
	tsig_append(buf, &len, sizeof(buf), &f, &k, NULL, 0, mac);

	struct { size_t mac_len; int want; const char *what; } cases256[] = {
		{ 16, TSIG_NOERROR, "sha256 truncated to 16 (half): accepted" },
		{ 20, TSIG_NOERROR, "sha256 truncated to 20: accepted" },
		{ 15, -EBADMSG, "sha256 truncated to 15: FORMERR" },
		{ 10, -EBADMSG, "sha256 truncated to 10: FORMERR (half the hash is 16)" },
		{ 0, -EBADMSG, "sha256 with no MAC: FORMERR" },
	};
	for (size_t i = 0; i < sizeof(cases256) / sizeof(cases256[0]); i++) {
		memcpy(buf, base, blen);
		len = append_raw_tsig(buf, blen, &f, mac, cases256[i].mac_len, CLASS_ANY);
		is_int(tsig_find(buf, len, &t), 1, "parsed (%zu-byte MAC)", cases256[i].mac_len);
		is_int(verify(buf, &t, &k, now), cases256[i].want, "%s", cases256[i].what);
	}
	memcpy(extra, mac, 32);
	extra[32] = 0;
	memcpy(buf, base, blen);
	len = append_raw_tsig(buf, blen, &f, extra, 33, CLASS_ANY);
	tsig_find(buf, len, &t);
	is_int(verify(buf, &t, &k, now), -EBADMSG, "MAC longer than the hash: FORMERR");

	/* SHA-1: the floor is 10 bytes; a stricter local policy gives BADTRUNC. */
	struct tsig_key k1;
	make_key(&k1, TSIG_HMAC_SHA1, "k.example.");
	fields_for(&f, &k1, now, 0x1234);
	memcpy(buf, base, blen);
	len = blen;
	tsig_append(buf, &len, sizeof(buf), &f, &k1, NULL, 0, mac);
	memcpy(buf, base, blen);
	len = append_raw_tsig(buf, blen, &f, mac, 10, CLASS_ANY);
	tsig_find(buf, len, &t);
	is_int(verify(buf, &t, &k1, now), TSIG_NOERROR, "sha1 truncated to 10: accepted");
	memcpy(buf, base, blen);
	len = append_raw_tsig(buf, blen, &f, mac, 9, CLASS_ANY);
	tsig_find(buf, len, &t);
	is_int(verify(buf, &t, &k1, now), -EBADMSG, "sha1 truncated to 9: FORMERR");
	k1.min_mac_len = 16;
	memcpy(buf, base, blen);
	len = append_raw_tsig(buf, blen, &f, mac, 12, CLASS_ANY);
	tsig_find(buf, len, &t);
	is_int(verify(buf, &t, &k1, now), TSIG_BADTRUNC,
	       "sha1 truncated to 12 under a 16-byte policy: BADTRUNC");
	is_int(verify(buf, &t, &k1, now + 1000), TSIG_BADTIME,
	       "time is checked before the truncation policy");
	uint8_t bad[TSIG_MAC_MAX];
	memcpy(bad, mac, 20);
	bad[11] ^= 1;
	memcpy(buf, base, blen);
	len = append_raw_tsig(buf, blen, &f, bad, 12, CLASS_ANY);
	tsig_find(buf, len, &t);
	is_int(verify(buf, &t, &k1, now), TSIG_BADSIG,
	       "a wrong truncated MAC is BADSIG before BADTRUNC");
	memcpy(buf, base, blen);
	len = append_raw_tsig(buf, blen, &f, mac, 20, CLASS_ANY);
	tsig_find(buf, len, &t);
	is_int(verify(buf, &t, &k1, now), TSIG_NOERROR, "the full MAC passes the policy");
}

static void test_placement(void)
{
	struct tsig_key k;
	make_key(&k, TSIG_HMAC_SHA256, "k.example.");
	uint8_t buf[1024];
	struct tsig_rr f, t;
	size_t len = make_query(buf);
	is_int(tsig_find(buf, len, &t), 0, "no TSIG: 0");
	fields_for(&f, &k, 1700000000, 0x1234);
	tsig_append(buf, &len, sizeof(buf), &f, &k, NULL, 0, NULL);
	is_int(tsig_find(buf, len, &t), 1, "TSIG last in additional: found");
	is_int(t.offset, 34, "its offset is where the query ended");

	/* Another record after the TSIG. */
	uint8_t after[1024];
	memcpy(after, buf, len);
	static const uint8_t a_rr[] = "\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\xc0\x00\x02\x01";
	memcpy(after + len, a_rr, 16);
	wire_set_u16(after + 10, 2);
	is_int(tsig_find(after, len + 16, &t), -EBADMSG, "TSIG not last: FORMERR");

	/* The TSIG in the authority section. */
	memcpy(after, buf, len);
	wire_set_u16(after + 8, 1);
	wire_set_u16(after + 10, 0);
	is_int(tsig_find(after, len, &t), -EBADMSG, "TSIG in the authority section: FORMERR");

	/* Two TSIGs. */
	size_t two = len;
	memcpy(after, buf, len);
	tsig_append(after, &two, sizeof(after), &f, &k, NULL, 0, NULL);
	is_int(wire_get_u16(after + 10), 2, "second TSIG appended");
	is_int(tsig_find(after, two, &t), -EBADMSG, "two TSIGs: FORMERR");

	/* Trailing garbage, wrong class, short rdata. */
	memcpy(after, buf, len);
	after[len] = 0;
	is_int(tsig_find(after, len + 1, &t), -EBADMSG, "a byte after the TSIG: FORMERR");
	size_t base = make_query(after);
	size_t l2 = append_raw_tsig(after, base, &f, (const uint8_t *)"0123456789abcdef", 16, CLASS_IN);
	is_int(tsig_find(after, l2, &t), -EBADMSG, "TSIG of class IN: FORMERR");
	l2 = append_raw_tsig(after, base, &f, (const uint8_t *)"0123456789abcdef", 16, CLASS_ANY);
	wire_set_u16(after + base + 11 + 8, (uint16_t)(wire_get_u16(after + base + 11 + 8) - 3));
	is_int(tsig_find(after, l2 - 3, &t), -EBADMSG, "TSIG rdata cut short: FORMERR");

	/* No room: the message is left as it was. */
	size_t small = make_query(after);
	size_t before = small;
	is_int(tsig_append(after, &small, small + 20, &f, &k, NULL, 0, NULL), -ENOSPC,
	       "no room for the TSIG: -ENOSPC");
	is_int(small, before, "length unchanged");
	is_int(wire_get_u16(after + 10), 0, "ARCOUNT unchanged");

	/* Unsigned error TSIG: MAC size 0. */
	small = make_query(after);
	f.error = TSIG_BADKEY;
	is_int(tsig_append(after, &small, sizeof(after), &f, NULL, NULL, 0, NULL), 0,
	       "unsigned TSIG has no MAC");
	is_int(tsig_find(after, small, &t), 1, "and parses");
	is_int(t.mac_len, 0, "MAC size 0");
	is_int(t.error, TSIG_BADKEY, "error BADKEY");
	ok(small - make_query(buf) <= tsig_space(&k), "tsig_space is an upper bound");
}

int main(void)
{
	snprintf(script, sizeof(script), "/tmp/test_tsig.%d.py", (int)getpid());
	FILE *f = fopen(script, "w");
	fputs(py_source, f);
	fclose(f);
	char out[64];
	run_py(out, sizeof(out), "verify", "hmac-sha256", "00", NULL, NULL);
	ok(out[0] != 0, "/usr/bin/python3 with dnspython runs (%s)", out);

	test_names();
	for (size_t i = 0; i < 5; i++) {
		test_verify_dnspython(i);
		test_sign_dnspython(i);
	}
	test_truncation();
	test_placement();
	unlink(script);
	return done_testing();
}
