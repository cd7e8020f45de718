/* SPDX-License-Identifier: MIT */
/*
 * sd_notify by hand: a connected AF_UNIX datagram socket and one send per
 * message.  No libsystemd: the protocol is a datagram of text.
 */
#include "cmd/notify.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/conf/log.h"
#include "core/conf/sysclock.h"

static int notify_fd = -1;
static bool notify_failed;   /* log the first failure only */

int notify_open(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	if (!path || !*path)
		return 0;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sa.sun_path)) {
		log_warn("NOTIFY_SOCKET '%s' is not a socket path; not notifying", path);
		return -EINVAL;
	}
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';   /* abstract namespace: the name is not NUL-terminated */
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
	                            (path[0] == '/' ? 1 : 0));
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, len) < 0) {
		int e = errno;
		log_warn("cannot reach NOTIFY_SOCKET %s: %s; not notifying", path, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	notify_fd = fd;
	return 0;
}

void notify_send(const char *fmt, ...)
{
	if (notify_fd < 0)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;   /* a STATUS line cut short still parses */
	ssize_t w;
	do
		w = send(notify_fd, msg, (size_t)n, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	if (w < 0 && !notify_failed) {
		notify_failed = true;
		log_warn("cannot notify the service manager: %s", strerror(errno));
	}
}

unsigned long long notify_monotonic_usec(void)
{
	struct timespec ts;
	sysclock_mono_ts(&ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
}

void notify_close(void)
{
	if (notify_fd >= 0)
		close(notify_fd);
	notify_fd = -1;
}
