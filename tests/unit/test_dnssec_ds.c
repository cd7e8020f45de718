/*
 * dnssec/ds: DS rdata and presentation, checked against BIND's
 * dnssec-dsfromkey run on the DNSKEY we publish; the deSEC JSON body.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "core/dname.h"
#include "dnssec/ds.h"
#include "dnssec/key.h"
#include "tests/unit/check.h"

static char dir[64];

/* dnssec-dsfromkey's line for our DNSKEY at `zone`, without the newline. */
static bool dsfromkey(const char *zone, const struct key *k, const char *alg, char *out,
                      size_t cap)
{
	char file[128], cmd[512], b64[128];
	snprintf(file, sizeof(file), "%s/dnskey.txt", dir);
	EVP_EncodeBlock((unsigned char *)b64, key_dnskey(k) + 4, 64);
	FILE *f = fopen(file, "w");
	if (!f)
		return false;
	fprintf(f, "%s. 3600 IN DNSKEY 257 3 13 %s\n", zone, b64);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "dnssec-dsfromkey %s -f - %s < %s 2>&1", alg, zone, file);
	FILE *p = popen(cmd, "r");
	if (!p)
		return false;
	out[0] = '\0';
	bool got = fgets(out, (int)cap, p) != NULL;
	int st = pclose(p);
	out[strcspn(out, "\n")] = '\0';
	return got && st == 0;
}

static struct key *make_key(const char *file)
{
	char p[128], cmd[256], err[256];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	snprintf(cmd, sizeof(cmd),
	         "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out %s 2>/dev/null", p);
	if (system(cmd) != 0 || chmod(p, 0600) != 0)
		return NULL;
	struct key *k = key_load(p, err);
	if (!k)
		printf("# %s\n", err);
	return k;
}

static void check_zone(const struct key *k, const char *zone, const char *subname)
{
	uint8_t apex[DNAME_MAX];
	dname_from_str(zone, apex);
	uint8_t ds[DS_RDATA_MAX];
	char line[DS_TEXT_MAX], want[DS_TEXT_MAX];

	int len = ds_rdata(apex, key_dnskey(k), KEY_DNSKEY_LEN, DS_DIGEST_SHA256, ds, sizeof(ds));
	is_int(len, 4 + 32, "%s: SHA-256 DS rdata length", zone);
	is_int(ds[0] << 8 | ds[1], key_tag(k), "%s: DS key tag", zone);
	ok(ds[2] == 13 && ds[3] == 2, "%s: algorithm 13, digest type 2", zone);
	ok(ds_format_text(apex, ds, (size_t)len, line, sizeof(line)) > 0, "%s: text", zone);
	ok(dsfromkey(zone, k, "-2", want, sizeof(want)), "dnssec-dsfromkey -2 ran: %s", want);
	is_str(line, want, "%s: identical to dnssec-dsfromkey -2", zone);

	/* deSEC: the same record, lowercase hex, subname relative to the parent. */
	char rec[256], body[DS_TEXT_MAX], json[DS_TEXT_MAX];
	const char *fields = strstr(want, " IN DS ");
	snprintf(rec, sizeof(rec), "%s", fields ? fields + 7 : "");
	for (char *c = rec; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	snprintf(json, sizeof(json),
	         "{\"subname\": \"%s\", \"type\": \"DS\", \"ttl\": 3600, \"records\": [\"%s\"]}",
	         subname, rec);
	ok(ds_format_desec(apex, ds, (size_t)len, 3600, body, sizeof(body)) > 0, "%s: desec", zone);
	is_str(body, json, "%s: deSEC JSON body", zone);

	len = ds_rdata(apex, key_dnskey(k), KEY_DNSKEY_LEN, DS_DIGEST_SHA384, ds, sizeof(ds));
	is_int(len, 4 + 48, "%s: SHA-384 DS rdata length", zone);
	ds_format_text(apex, ds, (size_t)len, line, sizeof(line));
	ok(dsfromkey(zone, k, "-a SHA-384", want, sizeof(want)), "dnssec-dsfromkey SHA-384 ran");
	is_str(line, want, "%s: identical to dnssec-dsfromkey -a SHA-384", zone);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_dnssec_ds.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	struct key *k = make_key("a.pem");
	struct key *k2 = make_key("b.pem");
	ok(k && k2, "keys");
	if (!k || !k2)
		return done_testing();

	check_zone(k, "example.com", "example");
	check_zone(k, "acme.luffy.cx", "acme");
	check_zone(k2, "geo.example.org", "geo");

	/* The owner name is part of the digest, in canonical (lowercase) form. */
	uint8_t lower[DNAME_MAX], a[DS_RDATA_MAX], b[DS_RDATA_MAX];
	const uint8_t upper[] = "\x07" "EXAMPLE" "\x03" "com";
	dname_from_str("example.com", lower);
	ds_rdata(lower, key_dnskey(k), KEY_DNSKEY_LEN, 2, a, sizeof(a));
	ds_rdata(upper, key_dnskey(k), KEY_DNSKEY_LEN, 2, b, sizeof(b));
	is_mem(a, b, 36, "owner case does not change the digest");
	uint8_t other[DNAME_MAX];
	dname_from_str("example.net", other);
	ds_rdata(other, key_dnskey(k), KEY_DNSKEY_LEN, 2, b, sizeof(b));
	ok(memcmp(a + 4, b + 4, 32) != 0, "another owner gives another digest");

	is_int(ds_rdata(lower, key_dnskey(k), KEY_DNSKEY_LEN, 1, a, sizeof(a)), -EINVAL,
	       "SHA-1 (type 1) is not offered");
	is_int(ds_rdata(lower, key_dnskey(k), KEY_DNSKEY_LEN, 2, a, 35), -ENOSPC, "too small");
	char small[20];
	ds_rdata(lower, key_dnskey(k), KEY_DNSKEY_LEN, 2, a, sizeof(a));
	is_int(ds_format_text(lower, a, 36, small, sizeof(small)), -ENOSPC, "text: too small");
	is_int(ds_format_desec(lower, a, 36, 3600, small, sizeof(small)), -ENOSPC, "desec: too small");

	char parent[DS_TEXT_MAX];
	uint8_t n[DNAME_MAX];
	dname_from_str("acme.luffy.cx", n);
	is_int(ds_desec_parent(n, parent, sizeof(parent)), 8, "parent length");
	is_str(parent, "luffy.cx", "deSEC parent of acme.luffy.cx");
	dname_from_str("com", n);
	ds_desec_parent(n, parent, sizeof(parent));
	is_str(parent, "", "deSEC parent of a one-label zone");
	char body[DS_TEXT_MAX];
	ds_format_desec(n, a, 36, 3600, body, sizeof(body));
	ok(strncmp(body, "{\"subname\": \"com\"", 17) == 0, "one-label zone subname: %s", body);

	key_free(k);
	key_free(k2);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# cleanup failed\n");
	return done_testing();
}
