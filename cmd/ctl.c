/* SPDX-License-Identifier: MIT */
/*
 * geoacme ctl: sends one command to a running server over its control
 * socket (core/net/control.h: the protocol) and prints the answer.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/ctl_commands.h"
#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/net/control.h"

/* A reload can take as long as building every zone: wait generously. */
#define CTL_WAIT_MS 300000

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: geoacme ctl -c FILE COMMAND [ARGS]\n"
	        "\n"
	        "Sends COMMAND to the server running with config FILE, over its\n"
	        "control_socket, and prints the answer.  Exit codes: 0 done, 1 the\n"
	        "command failed or no server is listening, 2 usage, 3 configuration.\n"
	        "\n"
	        "  -c, --config FILE    the server's TOML configuration (names the socket)\n"
	        "  -s, --socket PATH    this socket instead of the config's control_socket\n"
	        "  -h, --help           this help\n"
	        "\n"
	        "commands:\n");
	for (const struct ctl_command *k = ctl_commands; k->name; k++)
		fprintf(out, "  %-28s %s\n", k->usage, k->help);
	fprintf(out, "  %-28s %s\n", "help", "the commands the server knows");
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "geoacme ctl: %s: path too long for a Unix socket\n", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "geoacme ctl: socket: %s\n", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	int e = errno;
	close(fd);
	if (e == ENOENT || e == ECONNREFUSED)
		fprintf(stderr, "geoacme ctl: no server is listening on %s\n", path);
	else if (e == EACCES || e == EPERM)
		fprintf(stderr, "geoacme ctl: permission denied: %s (only the server's user and "
		        "root may use it)\n", path);
	else
		fprintf(stderr, "geoacme ctl: %s: %s\n", path, strerror(e));
	return -1;
}

/* Sends the line, reads the answer to EOF into *resp. */
static int exchange(int fd, const char *line, size_t len, char **resp, size_t *resp_len)
{
	/* A send that fails still leaves the server's answer to read (a refusal). */
	for (size_t sent = 0; sent < len;) {
		ssize_t n = send(fd, line + sent, len - sent, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		sent += (size_t)n;
	}
	FILE *f = open_memstream(resp, resp_len);
	if (!f)
		return -ENOMEM;
	int rc = 0;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = poll(&p, 1, CTL_WAIT_MS);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r == 0 ? -ETIMEDOUT : -errno;
			break;
		}
		char buf[4096];
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		fwrite(buf, 1, (size_t)n, f);
	}
	if (fclose(f) != 0 && rc == 0)
		rc = -ENOMEM;
	return rc;
}

int cmd_ctl(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config_path = NULL, *socket_path = NULL;
	int opt;
	optind = 1;
	/* "+": options stop at the command, so its own arguments (--force) pass through. */
	while ((opt = getopt_long(argc, argv, "+c:s:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': config_path = optarg; break;
		case 's': socket_path = optarg; break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if ((!config_path && !socket_path) || optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	/* The request line: words joined by spaces; a word may not hold a blank. */
	char line[CONTROL_REQUEST_MAX + 1];
	size_t len = 0;
	if (argc - optind > CONTROL_ARGS_MAX) {
		fprintf(stderr, "geoacme ctl: at most %d words\n", CONTROL_ARGS_MAX);
		return EXIT_USAGE;
	}
	for (int i = optind; i < argc; i++) {
		size_t wl = strlen(argv[i]);
		if (!wl || strpbrk(argv[i], " \t\r\n")) {
			fprintf(stderr, "geoacme ctl: '%s': an argument cannot be empty or hold a blank\n",
			        argv[i]);
			return EXIT_USAGE;
		}
		if (len + wl + 2 > sizeof(line)) {
			fprintf(stderr, "geoacme ctl: the command is longer than %d bytes\n",
			        CONTROL_REQUEST_MAX);
			return EXIT_USAGE;
		}
		if (len)
			line[len++] = ' ';
		memcpy(line + len, argv[i], wl);
		len += wl;
	}
	line[len++] = '\n';

	struct config *cfg = NULL;
	if (!socket_path) {
		struct diag d;
		diag_init(&d);
		log_set_level(LOG_ERROR);
		cfg = config_load(config_path, &d);
		if (!cfg) {
			diag_print(&d);
			diag_clear(&d);
			return EXIT_CONFIG;
		}
		diag_clear(&d);
		if (!cfg->control_socket) {
			fprintf(stderr, "geoacme ctl: the control channel is off in %s "
			        "(control_socket = \"\")\n", config_path);
			config_free(cfg);
			return EXIT_RUNTIME;
		}
		socket_path = cfg->control_socket;
	}
	int rc = EXIT_RUNTIME;
	int fd = connect_to(socket_path);
	if (fd < 0)
		goto out;
	char *resp = NULL;
	size_t resp_len = 0;
	int e = exchange(fd, line, len, &resp, &resp_len);
	close(fd);
	if (e < 0 && !resp_len) {
		fprintf(stderr, "geoacme ctl: %s: %s\n", socket_path,
		        e == -ETIMEDOUT ? "no answer" : strerror(-e));
		free(resp);
		goto out;
	}
	bool ok = resp_len >= 3 && memcmp(resp, "ok\n", 3) == 0;
	bool err = resp_len >= 6 && memcmp(resp, "error\n", 6) == 0;
	if (ok) {
		fwrite(resp + 3, 1, resp_len - 3, stdout);
		rc = EXIT_OK;
	} else if (err) {
		fputs("geoacme ctl: ", stderr);
		fwrite(resp + 6, 1, resp_len - 6, stderr);
	} else {
		fprintf(stderr, "geoacme ctl: %s: the server's answer was cut off or not understood\n",
		        socket_path);
	}
	free(resp);
out:
	config_free(cfg);
	return rc;
}
