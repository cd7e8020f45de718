/* SPDX-License-Identifier: MIT */
/*
 * geoacme ds: prints the DS record(s) to publish in the parent zone, from
 * the keys named in the config, as text or as the array deSEC's bulk
 * RRset endpoint takes, with the curl command that sends it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmd/cmd.h"
#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/wire/dname.h"
#include "dnssec/ds.h"
#include "dnssec/key.h"
#include "dnssec/keystore.h"

#define DESEC_TTL 3600   /* deSEC's minimum TTL; parents cap DS TTLs anyway */
#define DESEC_API "https://desec.io/api/v1/domains/"

/* What the deSEC format needs besides the zone. */
struct desec_opts {
	const char *config_path;     /* repeated in the printed command */
	const char *parent;          /* --parent, or NULL: the zone minus its first label */
};

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: geoacme ds -c FILE [ZONE] [--digest sha256|sha384] [--format text|desec]\n"
	        "                  [--parent DOMAIN]\n"
	        "\n"
	        "Prints the DS record of each signed zone (a zone with [[zones.keys]]),\n"
	        "or of ZONE alone, computed from its signing key.\n"
	        "\n"
	        "  -c, --config FILE   the geoacme config\n"
	        "  --digest ALG        sha256 (default, digest type 2) or sha384 (type 4)\n"
	        "  --format FMT        text (default): the DS record as dnssec-dsfromkey prints it\n"
	        "                      desec: for each zone, one line with the JSON array deSEC's\n"
	        "                      bulk endpoint takes, and on stderr the curl command that\n"
	        "                      sends it (the API token is read from $DESEC_TOKEN)\n"
	        "  --parent DOMAIN     the deSEC domain holding the delegation (default: the\n"
	        "                      zone minus its first label; a zone directly under a\n"
	        "                      top-level domain gets its DS from the registrar)\n"
	        "  -h, --help          this help\n");
}

/* "--name VALUE" or "--name=VALUE" (or "-c VALUE" for the short form). */
static bool option(int argc, char **argv, int *i, const char *shortname, const char *longname,
                   const char **value, bool *missing)
{
	const char *a = argv[*i];
	size_t ll = strlen(longname);
	if (strncmp(a, longname, ll) == 0 && a[ll] == '=') {
		*value = a + ll + 1;
		return true;
	}
	if (strcmp(a, longname) == 0 || (shortname && strcmp(a, shortname) == 0)) {
		if (*i + 1 >= argc) {
			*missing = true;
			return true;
		}
		*value = argv[++*i];
		return true;
	}
	return false;
}

/* An argument for a POSIX shell: as is when harmless, else single-quoted. */
static void shell_word(FILE *out, const char *s)
{
	if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	                    "._/-+=:,@%") == strlen(s)) {
		fputs(s, out);
		return;
	}
	fputc('\'', out);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", out);
		else
			fputc(*s, out);
	}
	fputc('\'', out);
}

/*
 * deSEC's bulk endpoint takes an array; PATCH changes only the RRsets it
 * lists (PUT on the collection would replace every RRset of the domain,
 * POST fails when a DS RRset is there already).  The token stays in the
 * environment: the command names $DESEC_TOKEN and never prints its value.
 */
static int print_desec(const struct config_zone *z, const uint8_t *apex, const uint8_t *ds,
                       size_t len, const struct desec_opts *o)
{
	uint8_t parent[DNAME_MAX];
	char parent_s[DS_TEXT_MAX], zone_s[DS_TEXT_MAX];
	ds_desec_name(apex, zone_s, sizeof(zone_s));
	if (o->parent) {
		if (dname_from_str(o->parent, parent) < 0 || !dname_is_subdomain(apex, parent) ||
		    dname_equal(apex, parent) || dname_label_count(parent) < 2) {
			fprintf(stderr, "geoacme ds: %s: --parent %s must be a registered domain (two "
			        "labels or more) that the zone is below\n", zone_s, o->parent);
			return EXIT_USAGE;
		}
	} else if (ds_desec_parent(apex, parent) < 0) {
		char tld[DS_TEXT_MAX];
		ds_desec_name(dname_skip_labels(apex, dname_label_count(apex) - 1), tld, sizeof(tld));
		fprintf(stderr, "geoacme ds: %s: its parent is the top-level domain '%s', which deSEC "
		        "does not host: publish the DS at your registrar for %s (the text form: "
		        "geoacme ds -c ", zone_s, dname_label_count(apex) ? tld : ".", zone_s);
		shell_word(stderr, o->config_path);
		fprintf(stderr, " %s)\n", zone_s);
		return EXIT_USAGE;
	}
	ds_desec_name(parent, parent_s, sizeof(parent_s));
	char obj[DS_TEXT_MAX];
	if (ds_format_desec(apex, parent, ds, len, DESEC_TTL, obj, sizeof(obj)) < 0) {
		fprintf(stderr, "geoacme ds: %s: cannot format the DS\n", z->zone);
		return EXIT_RUNTIME;
	}
	printf("[%s]\n", obj);
	fprintf(stderr, "# %s: the DS goes into %s at deSEC; with your token in DESEC_TOKEN:\n"
	        "geoacme ds -c ", zone_s, parent_s);
	shell_word(stderr, o->config_path);
	fprintf(stderr, " %s --format desec%s%s | curl --fail-with-body -sS -X PATCH "
	        "-H \"Authorization: Token $DESEC_TOKEN\" -H \"Content-Type: application/json\" "
	        "--data-binary @- %s%s/rrsets/\n", zone_s, o->parent ? " --parent " : "",
	        o->parent ? parent_s : "", DESEC_API, parent_s);
	return EXIT_OK;
}

static int print_zone(const struct config_zone *z, uint8_t digest, const struct desec_opts *desec)
{
	uint8_t apex[DNAME_MAX];
	if (dname_from_str(z->zone, apex) < 0) {
		fprintf(stderr, "geoacme ds: %s: not a valid zone name\n", z->zone);
		return EXIT_CONFIG;
	}
	const struct config_zone_key *zk = z->n_keys ? &z->keys[0] : NULL;
	if (zk && zk->algorithm && strcasecmp(zk->algorithm, "ECDSAP256SHA256") != 0) {
		fprintf(stderr, "geoacme ds: %s: key algorithm %s is not supported; "
		        "use ECDSAP256SHA256\n", z->zone, zk->algorithm);
		return EXIT_CONFIG;
	}
	/* The key that should be at the parent: with a key policy, the key store's
	 * active key (doc/dnssec.md); else the first [[zones.keys]] entry (a
	 * second one is a standby key, published but not signing). */
	const char *key_path = zk ? zk->key_path : NULL;
	struct keystore ks;
	char err[256];
	if (z->key_policy.present) {
		if (keystore_load(&ks, z->key_policy.key_dir, z->zone, err) < 0) {
			fprintf(stderr, "geoacme ds: %s\n", err);
			return EXIT_CONFIG;
		}
		const struct keystore_key *a = keystore_first(&ks, KS_ACTIVE);
		if (a)
			key_path = a->file;
		if (!a && !key_path) {
			fprintf(stderr, "geoacme ds: %s: no key yet: `geoacme serve` generates the first "
			        "one in %s\n", z->zone, z->key_policy.key_dir);
			return EXIT_CONFIG;
		}
	}
	struct key *k = key_load(key_path, err);
	if (!k) {
		fprintf(stderr, "geoacme ds: %s\n", err);
		return EXIT_CONFIG;
	}
	uint8_t ds[DS_RDATA_MAX];
	int len = ds_rdata(apex, key_dnskey(k), KEY_DNSKEY_LEN, digest, ds, sizeof(ds));
	key_free(k);
	if (len < 0) {
		fprintf(stderr, "geoacme ds: %s: cannot compute the DS digest\n", z->zone);
		return EXIT_RUNTIME;
	}
	if (desec)
		return print_desec(z, apex, ds, (size_t)len, desec);
	char line[DS_TEXT_MAX];
	int n = ds_format_text(apex, ds, (size_t)len, line, sizeof(line));
	if (n < 0) {
		fprintf(stderr, "geoacme ds: %s: cannot format the DS\n", z->zone);
		return EXIT_RUNTIME;
	}
	printf("%s\n", line);
	return EXIT_OK;
}

int cmd_ds(int argc, char **argv)
{
	const char *config_path = NULL, *zone = NULL;
	const char *digest_s = "sha256", *format = "text", *parent = NULL;
	for (int i = 1; i < argc; i++) {
		bool missing = false;
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return EXIT_OK;
		}
		if (option(argc, argv, &i, "-c", "--config", &config_path, &missing) ||
		    option(argc, argv, &i, NULL, "--digest", &digest_s, &missing) ||
		    option(argc, argv, &i, NULL, "--format", &format, &missing) ||
		    option(argc, argv, &i, NULL, "--parent", &parent, &missing)) {
			if (missing) {
				fprintf(stderr, "geoacme ds: %s needs a value\n", a);
				return EXIT_USAGE;
			}
			continue;
		}
		if (a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "geoacme ds: unknown option %s\n", a);
			usage(stderr);
			return EXIT_USAGE;
		}
		if (zone) {
			fprintf(stderr, "geoacme ds: one ZONE at most (got %s and %s)\n", zone, a);
			return EXIT_USAGE;
		}
		zone = a;
	}
	if (!config_path) {
		fprintf(stderr, "geoacme ds: -c FILE is required\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	uint8_t digest;
	if (strcasecmp(digest_s, "sha256") == 0 || strcmp(digest_s, "2") == 0)
		digest = DS_DIGEST_SHA256;
	else if (strcasecmp(digest_s, "sha384") == 0 || strcmp(digest_s, "4") == 0)
		digest = DS_DIGEST_SHA384;
	else {
		fprintf(stderr, "geoacme ds: --digest must be sha256 or sha384, not %s\n", digest_s);
		return EXIT_USAGE;
	}
	bool desec;
	if (strcmp(format, "text") == 0)
		desec = false;
	else if (strcmp(format, "desec") == 0)
		desec = true;
	else {
		fprintf(stderr, "geoacme ds: --format must be text or desec, not %s\n", format);
		return EXIT_USAGE;
	}
	if (parent && (!desec || !zone)) {
		fprintf(stderr, "geoacme ds: --parent goes with --format desec and one ZONE\n");
		return EXIT_USAGE;
	}
	struct desec_opts dopts = { .config_path = config_path, .parent = parent };
	uint8_t want[DNAME_MAX];
	if (zone && dname_from_str(zone, want) < 0) {
		fprintf(stderr, "geoacme ds: %s: not a valid zone name\n", zone);
		return EXIT_USAGE;
	}

	struct diag d;
	diag_init(&d);
	struct config *c = config_load(config_path, &d);
	if (!c) {
		diag_print(&d);
		diag_clear(&d);
		return EXIT_CONFIG;
	}
	diag_clear(&d);

	int rc = EXIT_OK;
	size_t printed = 0, signed_zones = 0, desec_printed = 0, desec_skipped = 0;
	for (size_t i = 0; i < c->n_zones; i++) {
		const struct config_zone *z = &c->zones[i];
		if (z->n_keys == 0 && !z->key_policy.present)
			continue;
		signed_zones++;
		uint8_t apex[DNAME_MAX];
		if (zone && (dname_from_str(z->zone, apex) < 0 || !dname_equal(apex, want)))
			continue;
		int r = print_zone(z, digest, desec ? &dopts : NULL);
		printed++;
		if (r == EXIT_OK)
			desec_printed++;
		/* All zones to deSEC: one under a TLD was explained, the others still print. */
		else if (desec && !zone && r == EXIT_USAGE)
			desec_skipped++;
		else if (rc == EXIT_OK)
			rc = r;
	}
	if (signed_zones == 0) {
		fprintf(stderr, "geoacme ds: %s: no zone has a signing key ([[zones.keys]])\n",
		        config_path);
		rc = EXIT_CONFIG;
	} else if (printed == 0) {
		fprintf(stderr, "geoacme ds: %s: not a signed zone in %s\n", zone, config_path);
		rc = EXIT_USAGE;
	} else if (desec_skipped && !desec_printed && rc == EXIT_OK) {
		rc = EXIT_USAGE;   /* nothing for deSEC at all */
	}
	config_free(c);
	return rc;
}
