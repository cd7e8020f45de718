/*
 * geoacme check: load everything serve would load (config, zone files,
 * keys, geo databases) without binding or writing, print every problem.
 */
#include <getopt.h>
#include <stdio.h>

#include "cmd/cmd.h"
#include "cmd/runtime.h"
#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/zone/zone_table.h"

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: geoacme check -c FILE\n"
	        "\n"
	        "Validates the config, the zone files, the DNSSEC keys and the geo\n"
	        "databases, prints every problem found, and exits non-zero on any.\n"
	        "ACME databases are not opened; their seed zone files are checked.\n"
	        "\n"
	        "  -c, --config FILE   the TOML configuration\n"
	        "  -h, --help          this help\n");
}

int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL;
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': path = optarg; break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (!path || optind != argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	struct diag d;
	diag_init(&d);
	struct generation *g = generation_new(path, NULL, NULL, true, &d);
	if (!g) {
		diag_print(&d);
		fprintf(stderr, "%s: %zu problem%s found\n", path, d.n, d.n == 1 ? "" : "s");
		diag_clear(&d);
		return EXIT_CONFIG;
	}
	printf("%s: ok (%zu zones)\n", path, g->cfg->n_zones);
	generation_free(g);
	diag_clear(&d);
	return EXIT_OK;
}
