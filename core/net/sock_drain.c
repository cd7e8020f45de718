/* SPDX-License-Identifier: MIT */
#include "core/net/sock_drain.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/types.h>

bool sock_drain(int fd)
{
	char scratch[4096];
	for (;;) {
		ssize_t n = recv(fd, scratch, sizeof(scratch), 0);
		if (n > 0 || (n < 0 && errno == EINTR))
			continue;
		return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
	}
}
