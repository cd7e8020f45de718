/* SPDX-License-Identifier: MIT */
/*
 * geoacme: an authoritative DNS server for a geo zone and an ACME zone.
 * Dispatches to one subcommand per file in cmd/.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "core/test_hooks.h"
#include <geoacme_version.h>   /* generated in the build folder: project VERSION and git commit */

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: geoacme COMMAND [OPTIONS]\n"
	        "\n"
	        "commands:\n"
	        "  serve -c FILE      answer DNS queries in the foreground\n"
	        "  check -c FILE      validate the config, zone files and keys\n"
	        "  ds -c FILE [ZONE]  print the DS record to publish in the parent zone\n"
	        "  keygen ...         write a DNSSEC signing key and a TSIG secret\n"
	        "  explain -c FILE NAME [A|AAAA|HTTPS] (--client IP[/LEN] | --at LAT,LON)\n"
	        "  explain -c FILE NAME [A|AAAA] --map[=cities|grid]\n"
	        "                     show how a geo answer is chosen\n"
	        "  reload --pid PID   make a running server reload; exits 1 if it failed\n"
	        "  ctl -c FILE COMMAND [ARGS]\n"
	        "                     control a running server: status, zone-status ZONE,\n"
	        "                     site-drain SITE ... (geoacme ctl --help lists them)\n"
	        "  version            print the version and the git commit\n"
	        "\n"
	        "Each command takes --help.  Exit codes: 0 ok, 1 runtime failure,\n"
	        "2 usage error, 3 configuration error.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	argc--;
	argv++;
	if (strcmp(cmd, "serve") == 0)
		return cmd_serve(argc, argv);
	if (strcmp(cmd, "check") == 0)
		return cmd_check(argc, argv);
	if (strcmp(cmd, "ds") == 0)
		return cmd_ds(argc, argv);
	if (strcmp(cmd, "keygen") == 0)
		return cmd_keygen(argc, argv);
	if (strcmp(cmd, "explain") == 0)
		return cmd_explain(argc, argv);
	if (strcmp(cmd, "reload") == 0)
		return cmd_reload(argc, argv);
	if (strcmp(cmd, "ctl") == 0)
		return cmd_ctl(argc, argv);
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		/* "test-hooks": built with GEOACME_TEST_HOOKS (core/test_hooks.h); the
		 * integration tests that need a hook look for it. */
		printf("geoacme %s (commit %s)%s\n", GEOACME_VERSION, GEOACME_COMMIT,
		       TEST_HOOKS_ON ? " test-hooks" : "");
		return EXIT_OK;
	}
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	fprintf(stderr, "geoacme: unknown command '%s'\n", cmd);
	usage(stderr);
	return EXIT_USAGE;
}
