/* SPDX-License-Identifier: MIT */
/*
 * geoacme check: load everything serve would load (config, zone files,
 * keys, geo databases, what is at each journal_path) without binding or
 * writing, print every problem.  Started as root with `user =` set, the
 * check runs in a child that has dropped to that user first, as serve does
 * after binding, so a file that user cannot read is reported here.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/privs.h"
#include "cmd/runtime.h"
#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/zone/zone_table.h"

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: geoacme check -c FILE\n"
	        "\n"
	        "Validates the config, the zone files, the DNSSEC keys and the geo\n"
	        "databases, prints every problem found, and exits non-zero on any.\n"
	        "ACME databases are identified read-only (never written); a seed zone\n"
	        "file is checked when serve would seed.  As root with `user =` set, the\n"
	        "files are opened as that user, as serve opens them after binding.\n"
	        "\n"
	        "  -c, --config FILE   the TOML configuration\n"
	        "  -h, --help          this help\n");
}

/* The check proper, as the current user: the generation serve would build. */
static int run_check(const char *path, const char *as_user)
{
	struct diag d;
	diag_init(&d);
	struct generation *g = generation_new(path, NULL, NULL, true, &d);
	if (!g) {
		diag_print(&d);
		fprintf(stderr, "%s: %zu problem%s found\n", path, d.n, d.n == 1 ? "" : "s");
		diag_clear(&d);
		return EXIT_CONFIG;
	}
	printf("%s: ok (%zu zones%s%s)\n", path, g->cfg->n_zones, as_user ? ", read as user " : "",
	       as_user ? as_user : "");
	generation_free(g);
	diag_clear(&d);
	return EXIT_OK;
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
	/* A first reading, quiet, for `user`; its problems are the full check's too. */
	enum log_level level = log_get_level();
	log_set_level(LOG_ERROR);
	struct diag d;
	diag_init(&d);
	struct config *pre = config_load(path, &d);
	log_set_level(level);
	if (!pre) {
		diag_clear(&d);
		return run_check(path, NULL);
	}
	diag_clear(&d);
	char user[256] = "", group[256] = "";
	if (pre->user)
		snprintf(user, sizeof(user), "%s", pre->user);
	if (pre->group)
		snprintf(group, sizeof(group), "%s", pre->group);
	config_free(pre);
	if (!user[0])
		return run_check(path, NULL);
	if (geteuid() != 0) {
		fprintf(stderr, "%s: note: not run as root, so files were opened as uid %u, not as "
		        "user '%s' (serve opens them as '%s' after binding)\n", path,
		        (unsigned)geteuid(), user, user);
		return run_check(path, NULL);
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "geoacme check: fork: %s\n", strerror(errno));
		return EXIT_RUNTIME;
	}
	if (pid == 0) {
		char err[256];
		log_set_level(LOG_WARN);   /* not the "running as user" line */
		if (privs_drop(user, group[0] ? group : NULL, err) < 0) {
			fprintf(stderr, "%s: %s\n%s: 1 problem found\n", path, err, path);
			fflush(stderr);
			_exit(EXIT_CONFIG);
		}
		log_set_level(level);
		int rc = run_check(path, user);
		fflush(stdout);
		fflush(stderr);
		_exit(rc);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "geoacme check: waitpid: %s\n", strerror(errno));
			return EXIT_RUNTIME;
		}
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	fprintf(stderr, "geoacme check: the check as user '%s' died (signal %d)\n", user,
	        WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return EXIT_RUNTIME;
}
