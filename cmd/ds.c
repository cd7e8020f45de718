/*
 * geoacme ds: prints the DS record(s) to publish in the parent zone, from
 * the keys named in the config, as text or as a deSEC API request body.
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

#define DESEC_TTL 3600   /* deSEC's minimum TTL; parents cap DS TTLs anyway */

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: geoacme ds -c FILE [ZONE] [--digest sha256|sha384] [--format text|desec]\n"
	        "\n"
	        "Prints the DS record of each signed zone (a zone with [[zones.keys]]),\n"
	        "or of ZONE alone, computed from its signing key.\n"
	        "\n"
	        "  -c, --config FILE   the geoacme config\n"
	        "  --digest ALG        sha256 (default, digest type 2) or sha384 (type 4)\n"
	        "  --format FMT        text (default): the DS record as dnssec-dsfromkey prints it\n"
	        "                      desec: the JSON body for deSEC's RRset API, one line per\n"
	        "                      zone; the parent domain is the zone minus its first label\n"
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

static int print_zone(const struct config_zone *z, uint8_t digest, bool desec)
{
	uint8_t apex[DNAME_MAX];
	if (dname_from_str(z->zone, apex) < 0) {
		fprintf(stderr, "geoacme ds: %s: not a valid zone name\n", z->zone);
		return EXIT_CONFIG;
	}
	const struct config_zone_key *zk = &z->keys[0];
	if (zk->algorithm && strcasecmp(zk->algorithm, "ECDSAP256SHA256") != 0) {
		fprintf(stderr, "geoacme ds: %s: key algorithm %s is not supported; "
		        "use ECDSAP256SHA256\n", z->zone, zk->algorithm);
		return EXIT_CONFIG;
	}
	if (z->n_keys > 1)
		fprintf(stderr, "geoacme ds: %s: %zu keys configured; the zone is signed with "
		        "the first (%s) only\n", z->zone, z->n_keys, zk->key_path);
	char err[256];
	struct key *k = key_load(zk->key_path, err);
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
	char line[DS_TEXT_MAX];
	int n;
	if (desec) {
		char parent[DS_TEXT_MAX];
		if (ds_desec_parent(apex, parent, sizeof(parent)) >= 0)
			fprintf(stderr, "# %s: POST to https://desec.io/api/v1/domains/%s/rrsets/\n",
			        z->zone, parent);
		n = ds_format_desec(apex, ds, (size_t)len, DESEC_TTL, line, sizeof(line));
	} else {
		n = ds_format_text(apex, ds, (size_t)len, line, sizeof(line));
	}
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
	const char *digest_s = "sha256", *format = "text";
	for (int i = 1; i < argc; i++) {
		bool missing = false;
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return EXIT_OK;
		}
		if (option(argc, argv, &i, "-c", "--config", &config_path, &missing) ||
		    option(argc, argv, &i, NULL, "--digest", &digest_s, &missing) ||
		    option(argc, argv, &i, NULL, "--format", &format, &missing)) {
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
	size_t printed = 0, signed_zones = 0;
	for (size_t i = 0; i < c->n_zones; i++) {
		const struct config_zone *z = &c->zones[i];
		if (z->n_keys == 0)
			continue;
		signed_zones++;
		uint8_t apex[DNAME_MAX];
		if (zone && (dname_from_str(z->zone, apex) < 0 || !dname_equal(apex, want)))
			continue;
		int r = print_zone(z, digest, desec);
		if (r != EXIT_OK && rc == EXIT_OK)
			rc = r;
		printed++;
	}
	if (signed_zones == 0) {
		fprintf(stderr, "geoacme ds: %s: no zone has a signing key ([[zones.keys]])\n",
		        config_path);
		rc = EXIT_CONFIG;
	} else if (printed == 0) {
		fprintf(stderr, "geoacme ds: %s: not a signed zone in %s\n", zone, config_path);
		rc = EXIT_USAGE;
	}
	config_free(c);
	return rc;
}
