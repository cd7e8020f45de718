/* SPDX-License-Identifier: MIT */
/*
 * dnssec/ds: DS rdata and presentation, checked against BIND's
 * dnssec-dsfromkey run on the DNSKEY we publish; the deSEC JSON body.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "cmd/cmd.h"
#include "core/wire/dname.h"
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
	ok(ds_format_desec(apex, dname_skip_labels(apex, 1), ds, (size_t)len, 3600, body,
	                   sizeof(body)) > 0, "%s: desec", zone);
	is_str(body, json, "%s: deSEC JSON body", zone);

	len = ds_rdata(apex, key_dnskey(k), KEY_DNSKEY_LEN, DS_DIGEST_SHA384, ds, sizeof(ds));
	is_int(len, 4 + 48, "%s: SHA-384 DS rdata length", zone);
	ds_format_text(apex, ds, (size_t)len, line, sizeof(line));
	ok(dsfromkey(zone, k, "-a SHA-384", want, sizeof(want)), "dnssec-dsfromkey SHA-384 ran");
	is_str(line, want, "%s: identical to dnssec-dsfromkey -a SHA-384", zone);
}

/* Runs `geoacme ds ARGS`, capturing stdout into out. */
static int run_ds(char *out, size_t cap, int n, ...)
{
	char *argv[10];
	va_list ap;
	va_start(ap, n);
	argv[0] = "ds";
	for (int i = 0; i < n; i++)
		argv[i + 1] = va_arg(ap, char *);
	va_end(ap);
	argv[n + 1] = NULL;
	char file[128];
	snprintf(file, sizeof(file), "%s/stdout", dir);
	fflush(stdout);
	int saved = dup(1);
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fd, 1);
	close(fd);
	int rc = cmd_ds(n + 1, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	FILE *f = fopen(file, "r");
	size_t got = f ? fread(out, 1, cap - 1, f) : 0;
	out[got] = '\0';
	if (f)
		fclose(f);
	return rc;
}

static void test_cmd_ds(const struct key *k, const struct key *k2)
{
	char cfg[128], bad_cfg[128], out[4096], want[600], want2[600], line[512];
	snprintf(cfg, sizeof(cfg), "%s/geoacme.toml", dir);
	FILE *f = fopen(cfg, "w");
	fprintf(f, "listen_addrs_ipv4 = [\"127.0.0.1\"]\n"
	           "\n[[zones]]\nzone = \"Example.com\"\nfile = \"example.com.zone\"\n"
	           "[[zones.keys]]\nalgorithm = \"ECDSAP256SHA256\"\nkey_path = \"a.pem\"\n"
	           "\n[[zones]]\nzone = \"plain.org\"\nfile = \"plain.org.zone\"\n"
	           "\n[[zones]]\nzone = \"acme.luffy.cx.\"\nfile = \"acme.zone\"\n"
	           "[[zones.keys]]\nkey_path = \"%s/b.pem\"\n", dir);
	fclose(f);

	ok(dsfromkey("example.com", k, "-2", line, sizeof(line)), "dsfromkey example.com");
	snprintf(want, sizeof(want), "%s\n", line);
	ok(dsfromkey("acme.luffy.cx", k2, "-2", line, sizeof(line)), "dsfromkey acme.luffy.cx");
	snprintf(want2, sizeof(want2), "%s\n", line);
	char both[1400];
	snprintf(both, sizeof(both), "%s%s", want, want2);

	is_int(run_ds(out, sizeof(out), 2, "-c", cfg), EXIT_OK, "ds -c FILE");
	is_str(out, both, "one line per signed zone, as dnssec-dsfromkey prints them");
	is_int(run_ds(out, sizeof(out), 3, "-c", cfg, "ACME.luffy.cx"), EXIT_OK, "ds -c FILE ZONE");
	is_str(out, want2, "only the named zone (case-insensitive)");
	is_int(run_ds(out, sizeof(out), 5, "--config", cfg, "--digest", "sha384", "example.com."),
	       EXIT_OK, "--digest sha384");
	ok(dsfromkey("example.com", k, "-a SHA-384", line, sizeof(line)), "dsfromkey SHA-384");
	snprintf(want, sizeof(want), "%s\n", line);
	is_str(out, want, "SHA-384 line identical to dnssec-dsfromkey");

	/* deSEC: acme.luffy.cx goes into luffy.cx; example.com's parent is a TLD. */
	is_int(run_ds(out, sizeof(out), 3, "-c", cfg, "--format=desec"), EXIT_OK,
	       "--format=desec: the zones deSEC can take");
	const char *head = "[{\"subname\": \"acme\", \"type\": \"DS\", \"ttl\": 3600, \"records\": [\"";
	ok(strncmp(out, head, strlen(head)) == 0, "desec: one array, for acme (%s)", out);
	ok(strchr(out, '\n') == out + strlen(out) - 1, "desec: and nothing for example.com");
	is_int(run_ds(out, sizeof(out), 4, "-c", cfg, "--format=desec", "example.com"), EXIT_USAGE,
	       "desec: a zone under a TLD named alone fails");
	is_str(out, "", "desec: and prints no array");
	is_int(run_ds(out, sizeof(out), 6, "-c", cfg, "--format=desec", "acme.luffy.cx", "--parent",
	              "example.com"), EXIT_USAGE, "desec: --parent must be above the zone");
	is_int(run_ds(out, sizeof(out), 6, "-c", cfg, "--format=desec", "acme.luffy.cx", "--parent",
	              "cx"), EXIT_USAGE, "desec: --parent must not be a TLD");
	is_int(run_ds(out, sizeof(out), 4, "-c", cfg, "--parent", "luffy.cx"), EXIT_USAGE,
	       "desec: --parent without --format desec");

	is_int(run_ds(out, sizeof(out), 3, "-c", cfg, "plain.org"), EXIT_USAGE, "unsigned zone");
	is_int(run_ds(out, sizeof(out), 3, "-c", cfg, "nope.example"), EXIT_USAGE, "unknown zone");
	is_int(run_ds(out, sizeof(out), 0), EXIT_USAGE, "no -c");
	is_int(run_ds(out, sizeof(out), 4, "-c", cfg, "--digest", "sha1"), EXIT_USAGE, "--digest sha1");
	is_int(run_ds(out, sizeof(out), 4, "-c", cfg, "--format", "json"), EXIT_USAGE, "--format json");
	is_int(run_ds(out, sizeof(out), 3, "-c", cfg, "--bogus"), EXIT_USAGE, "unknown option");
	is_int(run_ds(out, sizeof(out), 1, "--help"), EXIT_OK, "--help");
	ok(strstr(out, "usage: geoacme ds") != NULL, "--help prints usage on stdout");
	snprintf(bad_cfg, sizeof(bad_cfg), "%s/none.toml", dir);
	is_int(run_ds(out, sizeof(out), 2, "-c", bad_cfg), EXIT_CONFIG, "missing config");

	char a[128];
	snprintf(a, sizeof(a), "%s/a.pem", dir);
	chmod(a, 0644);
	is_int(run_ds(out, sizeof(out), 3, "-c", cfg, "example.com"), EXIT_CONFIG,
	       "world-readable key is a config error");
	chmod(a, 0600);

	snprintf(bad_cfg, sizeof(bad_cfg), "%s/unsigned.toml", dir);
	f = fopen(bad_cfg, "w");
	fprintf(f, "listen_addrs_ipv4 = [\"127.0.0.1\"]\n"
	           "[[zones]]\nzone = \"plain.org\"\nfile = \"plain.org.zone\"\n");
	fclose(f);
	is_int(run_ds(out, sizeof(out), 2, "-c", bad_cfg), EXIT_CONFIG, "no signed zone at all");
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
	is_int(ds_format_desec(lower, dname_skip_labels(lower, 1), a, 36, 3600, small, sizeof(small)),
	       -ENOSPC, "desec: too small");

	/* The deSEC parent: the zone minus its first label, never a TLD or the root. */
	uint8_t n[DNAME_MAX], parent[DNAME_MAX];
	char pname[DS_TEXT_MAX], body[DS_TEXT_MAX];
	dname_from_str("acme.luffy.cx", n);
	is_int(ds_desec_parent(n, parent), 10, "parent wire length");
	ds_desec_name(parent, pname, sizeof(pname));
	is_str(pname, "luffy.cx", "deSEC parent of acme.luffy.cx");
	dname_from_str("example.com", n);
	is_int(ds_desec_parent(n, parent), -EDOM, "a zone under a TLD has no deSEC parent");
	dname_from_str("com", n);
	is_int(ds_desec_parent(n, parent), -EDOM, "nor has a TLD");
	dname_from_str(".", n);
	is_int(ds_desec_parent(n, parent), -EDOM, "nor has the root");
	/* A multi-label subname when the parent is given further up. */
	dname_from_str("a.b.example.net", n);
	dname_from_str("example.net", parent);
	ok(ds_format_desec(n, parent, a, 36, 3600, body, sizeof(body)) > 0, "two-label subname");
	ok(strstr(body, "{\"subname\": \"a.b\", \"type\": \"DS\"") == body, "subname a.b: %s", body);
	is_int(ds_format_desec(parent, parent, a, 36, 3600, body, sizeof(body)), -EINVAL,
	       "the owner must be below the parent");
	dname_from_str("other.org", n);
	is_int(ds_format_desec(n, parent, a, 36, 3600, body, sizeof(body)), -EINVAL,
	       "and inside it");

	test_cmd_ds(k, k2);

	key_free(k);
	key_free(k2);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# cleanup failed\n");
	return done_testing();
}
