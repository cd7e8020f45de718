/* SPDX-License-Identifier: MIT */
/*
 * dnssec/key: PKCS#8 and SEC1 loading, permission and key type refusals,
 * DNSKEY rdata and key tag (checked against openssl and ldns), key_generate
 * and the keygen subcommand.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ldns/ldns.h>
#include <openssl/evp.h>

#include "cmd/cmd.h"
#include "dnssec/key.h"
#include "tests/unit/check.h"

static char dir[64];

static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static const char *path(const char *name)
{
	static char bufs[8][256];
	static int next;
	char *p = bufs[next++ % 8];
	snprintf(p, 256, "%s/%s", dir, name);
	return p;
}

static size_t slurp(const char *p, uint8_t *out, size_t cap)
{
	FILE *f = fopen(p, "rb");
	if (!f)
		return 0;
	size_t n = fread(out, 1, cap, f);
	fclose(f);
	return n;
}

static bool file_has(const char *p, const char *needle)
{
	char buf[4096];
	size_t n = slurp(p, (uint8_t *)buf, sizeof(buf) - 1);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

static void test_pkcs8_and_sec1(void)
{
	const char *pk8 = path("pk8.pem"), *sec1 = path("sec1.pem");
	is_int(sh("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out %s 2>/dev/null",
	          pk8), 0, "openssl genpkey P-256");
	is_int(sh("openssl ec -in %s -out %s 2>/dev/null", pk8, sec1), 0, "openssl ec -> SEC1");
	chmod(pk8, 0600);
	chmod(sec1, 0600);
	ok(file_has(pk8, "BEGIN PRIVATE KEY"), "genpkey wrote PKCS#8");
	ok(file_has(sec1, "BEGIN EC PRIVATE KEY"), "openssl ec wrote SEC1");

	char err[256] = "";
	struct key *a = key_load(pk8, err);
	ok(a != NULL, "PKCS#8 key loads (%s)", err);
	struct key *b = key_load(sec1, err);
	ok(b != NULL, "SEC1 key loads (%s)", err);
	if (!a || !b) {
		key_free(a);
		key_free(b);
		return;
	}
	const uint8_t *dk = key_dnskey(a);
	is_int(dk[0] << 8 | dk[1], 257, "DNSKEY flags 257");
	is_int(dk[2], 3, "DNSKEY protocol 3");
	is_int(dk[3], 13, "DNSKEY algorithm 13");
	is_mem(key_dnskey(b), dk, KEY_DNSKEY_LEN, "both encodings give the same DNSKEY");

	/* Independent: the SubjectPublicKeyInfo DER ends with 04 || X || Y. */
	uint8_t spki[200];
	sh("openssl pkey -in %s -pubout -outform DER -out %s 2>/dev/null", pk8, path("pub.der"));
	size_t n = slurp(path("pub.der"), spki, sizeof(spki));
	ok(n == 91 && spki[n - 65] == 0x04, "SPKI is 91 bytes with an uncompressed point");
	if (n == 91)
		is_mem(dk + 4, spki + n - 64, 64, "DNSKEY public key = X || Y from openssl");

	is_int(key_tag(a), ldns_calc_keytag_raw(dk, KEY_DNSKEY_LEN), "key tag = ldns_calc_keytag_raw");
	/* And through ldns parsing the presentation form. */
	char b64[128];
	EVP_EncodeBlock((unsigned char *)b64, dk + 4, 64);
	char line[512];
	snprintf(line, sizeof(line), "example.com. 3600 IN DNSKEY 257 3 13 %s", b64);
	ldns_rr *rr = NULL;
	is_int(ldns_rr_new_frm_str(&rr, line, 0, NULL, NULL), LDNS_STATUS_OK, "ldns parses DNSKEY");
	if (rr)
		is_int(key_tag(a), ldns_calc_keytag(rr), "key tag = ldns_calc_keytag");
	ldns_rr_free(rr);
	key_free(a);
	key_free(b);
}

static void test_key_tag_vector(void)
{
	/* RFC 4034 Appendix B on a tiny input: words 0x0102 + 0x0300 = 0x0402. */
	const uint8_t v[] = { 1, 2, 3 };
	is_int(key_tag_of(v, 3), 0x0402, "key tag of 01 02 03");
	/* Carry folding: ff ff + ff ff = 1fffe -> fffe + 1 = ffff. */
	const uint8_t w[] = { 0xff, 0xff, 0xff, 0xff };
	is_int(key_tag_of(w, 4), 0xffff, "key tag folds the carry");
	is_int(key_tag_of(w, 4), ldns_calc_keytag_raw(w, 4), "same as ldns on ff ff ff ff");
}

static void test_permissions(void)
{
	char p[96];
	snprintf(p, sizeof(p), "%s/perm.pem", dir);
	sh("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out %s 2>/dev/null", p);
	char err[256], want[512];

	chmod(p, 0644);
	ok(key_load(p, err) == NULL, "0644 key refused");
	snprintf(want, sizeof(want), "%s: readable by other users (mode 0644); run: chmod 600 %s", p, p);
	is_str(err, want, "0644 message names the file and the fix");

	chmod(p, 0640);
	ok(key_load(p, err) == NULL, "0640 key refused (group-readable)");
	snprintf(want, sizeof(want), "%s: readable by other users (mode 0640); run: chmod 600 %s", p, p);
	is_str(err, want, "0640 message");

	chmod(p, 0620);
	ok(key_load(p, err) == NULL, "0620 key refused (group-writable)");
	snprintf(want, sizeof(want), "%s: writable by other users (mode 0620); run: chmod 600 %s", p, p);
	is_str(err, want, "0620 message");

	chmod(p, 0400);
	struct key *k = key_load(p, err);
	ok(k != NULL, "0400 key accepted");
	key_free(k);

	ok(key_load(path("missing.pem"), err) == NULL, "missing file refused");
	snprintf(want, sizeof(want), "%s: No such file or directory", path("missing.pem"));
	is_str(err, want, "missing file message");
}

static void test_wrong_keys(void)
{
	char err[256];
	const char *p384 = path("p384.pem"), *ed = path("ed.pem"), *enc = path("enc.pem");
	const char *junk = path("junk.pem");
	sh("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out %s 2>/dev/null", p384);
	sh("openssl genpkey -algorithm ED25519 -out %s 2>/dev/null", ed);
	sh("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -aes256 -pass pass:x "
	   "-out %s 2>/dev/null", enc);
	sh("echo 'not a key' > %s", junk);
	chmod(p384, 0600);
	chmod(ed, 0600);
	chmod(enc, 0600);
	chmod(junk, 0600);

	ok(key_load(p384, err) == NULL, "P-384 refused");
	ok(strstr(err, "EC key on curve secp384r1") && strstr(err, "P-256") && strstr(err, p384),
	   "P-384 message: %s", err);
	ok(key_load(ed, err) == NULL, "Ed25519 refused");
	ok(strstr(err, "ED25519 key") && strstr(err, "P-256"), "Ed25519 message: %s", err);
	ok(key_load(enc, err) == NULL, "encrypted key refused");
	ok(strstr(err, "encrypted") != NULL, "encrypted message: %s", err);
	ok(key_load(junk, err) == NULL, "junk refused");
	ok(strstr(err, "not a PEM private key") != NULL, "junk message: %s", err);
}

static void test_generate(void)
{
	const char *p = path("gen.pem");
	char err[256] = "";
	is_int(key_generate(p, err), 0, "key_generate writes a key (%s)", err);
	struct stat st;
	ok(stat(p, &st) == 0 && (st.st_mode & 07777) == 0600, "generated key has mode 0600");
	ok(file_has(p, "BEGIN PRIVATE KEY"), "generated key is PKCS#8");
	struct key *k = key_load(p, err);
	ok(k != NULL, "generated key loads");
	uint8_t before[KEY_DNSKEY_LEN];
	if (k)
		memcpy(before, key_dnskey(k), sizeof(before));
	key_free(k);

	is_int(key_generate(p, err), -EEXIST, "key_generate refuses to overwrite");
	ok(strstr(err, "already exists") != NULL, "overwrite message: %s", err);
	k = key_load(p, err);
	if (k)
		is_mem(key_dnskey(k), before, KEY_DNSKEY_LEN, "existing key untouched");
	key_free(k);
	is_int(sh("openssl pkey -in %s -noout -check >/dev/null 2>&1", p), 0,
	       "openssl accepts the generated key");
}

static int run_keygen(int n, ...)
{
	char *argv[8];
	va_list ap;
	va_start(ap, n);
	argv[0] = "keygen";
	for (int i = 0; i < n; i++)
		argv[i + 1] = va_arg(ap, char *);
	va_end(ap);
	argv[n + 1] = NULL;
	fflush(stdout);
	return cmd_keygen(n + 1, argv);
}

static void test_cmd_keygen(void)
{
	char key[256], tsig[256];
	snprintf(key, sizeof(key), "%s", path("cmd.pem"));
	snprintf(tsig, sizeof(tsig), "%s", path("tsig.key"));
	is_int(run_keygen(4, "--key", key, "--tsig", tsig), EXIT_OK, "keygen --key --tsig");
	struct stat st;
	ok(stat(key, &st) == 0 && (st.st_mode & 07777) == 0600, "key file mode 0600");
	ok(stat(tsig, &st) == 0 && (st.st_mode & 07777) == 0600 && st.st_size == 32,
	   "tsig file: 32 bytes, mode 0600");
	char err[256];
	struct key *k = key_load(key, err);
	ok(k != NULL, "keygen's key loads");
	key_free(k);

	is_int(run_keygen(2, "--tsig", tsig), EXIT_RUNTIME, "keygen refuses an existing tsig file");
	is_int(run_keygen(2, "--key", key), EXIT_RUNTIME, "keygen refuses an existing key file");
	is_int(run_keygen(0), EXIT_USAGE, "keygen without arguments is a usage error");
	is_int(run_keygen(1, "--bogus"), EXIT_USAGE, "unknown option is a usage error");
	is_int(run_keygen(1, "--key"), EXIT_USAGE, "--key without FILE");
	is_int(run_keygen(1, "--help"), EXIT_OK, "--help");
	char other[256];
	snprintf(other, sizeof(other), "%s", path("same"));
	is_int(run_keygen(4, "--key", other, "--tsig", other), EXIT_USAGE, "same file twice");
	ok(access(other, F_OK) != 0, "nothing written on usage error");
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_dnssec_key.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_key_tag_vector();
	test_pkcs8_and_sec1();
	test_permissions();
	test_wrong_keys();
	test_generate();
	test_cmd_keygen();
	sh("rm -rf %s", dir);
	return done_testing();
}
