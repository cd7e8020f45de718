/* SPDX-License-Identifier: MIT */
/*
 * geoacme reload --pid PID: asks a running server to reload and exits with
 * the outcome, for systemd's ExecReload (see reload.h for the exchange).
 */
#include "cmd/reload.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/conf/sysclock.h"

static socklen_t reload_addr(int32_t token, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* Abstract: sun_path[0] is NUL and the name is the bytes after it. */
	int n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "geoacme-reload-%08x",
	                 (unsigned)token);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

void reload_reply(int32_t token, const char *msg)
{
	struct sockaddr_un sa;
	socklen_t len = reload_addr(token, &sa);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	size_t n = strlen(msg);
	if (n > RELOAD_REPLY_MAX)
		n = RELOAD_REPLY_MAX;
	/* Best effort: nobody listening (the client gave up) is not an error. */
	(void)!sendto(fd, msg, n, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
	close(fd);
}

/*
 * Whether process pid blocks or catches signo, so that sending it cannot
 * kill it (the signal's default action).  SigBlk is the main thread's mask,
 * the one a signalfd reader blocks the signal in (sigwaitinfo would unblock
 * it while waiting); SigCgt is the process's.
 * False when /proc says nothing (no such process, hidden, not Linux).
 */
static bool takes_signal(long pid, int signo)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	unsigned long long blocked = 0, caught = 0, mask;
	char line[256];
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "SigBlk: %llx", &mask) == 1)
			blocked = mask;
		else if (sscanf(line, "SigCgt: %llx", &mask) == 1)
			caught = mask;
	}
	fclose(f);
	unsigned long long bit = 1ULL << (signo - 1);
	return ((blocked | caught) & bit) != 0;
}

/*
 * Queues the request: RELOAD_SIGNAL to a process that takes it, else SIGHUP,
 * whose token the kernel drops when another SIGHUP is pending (reload.h).
 */
static int send_request(long pid, int32_t token)
{
	union sigval v = { .sival_int = token };
	if (takes_signal(pid, RELOAD_SIGNAL)) {
		if (sigqueue((pid_t)pid, RELOAD_SIGNAL, v) == 0)
			return 0;
		if (errno != EAGAIN)   /* EAGAIN: the user's queue of signals is full */
			return -1;
	} else {
		fprintf(stderr, "geoacme reload: process %ld does not take " RELOAD_SIGNAL_NAME
		        " (an older geoacme?); sending SIGHUP, whose answer is lost if another "
		        "reload request comes at the same time\n", pid);
	}
	return sigqueue((pid_t)pid, SIGHUP, v);
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: geoacme reload --pid PID [--timeout SECONDS]\n"
	        "\n"
	        "Asks the server with process id PID to reload its configuration and zone\n"
	        "files (as SIGHUP does), waits for the outcome and prints it.  Exits 0 when\n"
	        "the reload worked, 1 when it failed (the server keeps serving the previous\n"
	        "configuration) or no answer came in time.  For systemd:\n"
	        "  ExecReload=geoacme reload --pid $MAINPID\n"
	        "\n"
	        "  --pid PID           the server's process id\n"
	        "  --timeout SECONDS   how long to wait (default 120)\n"
	        "  -h, --help          this help\n");
}

static bool parse_uint(const char *s, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > max ||
	    strspn(s, "0123456789") != strlen(s))   /* no sign, no blank */
		return false;
	*out = v;
	return true;
}

int cmd_reload(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long pid = 0, timeout = 120;
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (!parse_uint(optarg, 0x7fffffffL, &pid)) {
				fprintf(stderr, "geoacme reload: --pid needs a process id, not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 't':
			if (!parse_uint(optarg, 86400, &timeout)) {
				fprintf(stderr, "geoacme reload: --timeout needs 1 to 86400 seconds, not '%s'\n",
				        optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (!pid || optind != argc) {
		usage(stderr);
		return EXIT_USAGE;
	}

	int32_t token;
	if (getrandom(&token, sizeof(token), 0) != sizeof(token)) {
		fprintf(stderr, "geoacme reload: cannot read random bytes: %s\n", strerror(errno));
		return EXIT_RUNTIME;
	}
	token &= 0x7fffffff;
	struct sockaddr_un sa;
	socklen_t len = reload_addr(token, &sa);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) < 0) {
		fprintf(stderr, "geoacme reload: cannot make the reply socket: %s\n", strerror(errno));
		if (fd >= 0)
			close(fd);
		return EXIT_RUNTIME;
	}
	if (send_request(pid, token) < 0) {
		fprintf(stderr, "geoacme reload: cannot signal process %ld: %s\n", pid, strerror(errno));
		close(fd);
		return EXIT_RUNTIME;
	}
	char msg[RELOAD_REPLY_MAX + 1];
	struct timespec start, now;
	sysclock_mono_ts(&start);
	for (;;) {
		sysclock_mono_ts(&now);
		long left = timeout * 1000 - ((now.tv_sec - start.tv_sec) * 1000 +
		                              (now.tv_nsec - start.tv_nsec) / 1000000);
		if (left <= 0)
			break;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		ssize_t n = recv(fd, msg, sizeof(msg) - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		msg[n] = '\0';
		close(fd);
		if (strncmp(msg, "ok", 2) == 0) {
			printf("geoacme reload: %s\n", msg);
			return EXIT_OK;
		}
		fprintf(stderr, "geoacme reload: %s\n", msg);
		return EXIT_RUNTIME;
	}
	close(fd);
	fprintf(stderr, "geoacme reload: no answer from process %ld within %ld s (is it geoacme "
	        "serve?); the reload may still happen\n", pid, timeout);
	return EXIT_RUNTIME;
}
