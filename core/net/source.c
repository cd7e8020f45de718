/* SPDX-License-Identifier: MIT */
/*
 * The source address of outgoing DNS, per family (source.h says which).
 */
#include "core/net/source.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/conf/config.h"
#include "core/conf/diag.h"

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

static socklen_t fill(const struct net_source *s, int family, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET && s->has4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, s->addr4, 4);
		return sizeof(*sin);
	}
	if (family == AF_INET6 && s->has6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, s->addr6, 16);
		return sizeof(*sin6);
	}
	return 0;
}

int net_source_bind(const struct net_source *s, int fd, int family, bool stream)
{
	struct sockaddr_storage ss;
	socklen_t len = fill(s, family, &ss);
	if (!len)
		return 0;
	if (stream) {
		/* Best effort: without it bind() takes a port at once, which still works. */
		int one = 1;
		(void)setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	}
	return bind(fd, (struct sockaddr *)&ss, len) < 0 ? -errno : 0;
}

int net_source_socket(const struct net_source *s, int family, bool stream)
{
	int fd = socket(family, (stream ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = net_source_bind(s, fd, family, stream);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

/* Sets *has and addr from `text` unless it is the wildcard. */
static void choose(const char *text, int af, bool *has, uint8_t *addr)
{
	uint8_t buf[16];
	static const uint8_t zero[16];
	*has = false;
	if (!text || inet_pton(af, text, buf) != 1)
		return;
	if (memcmp(buf, zero, af == AF_INET ? 4 : 16) == 0)
		return;   /* 0.0.0.0 or ::: the kernel picks */
	*has = true;
	memcpy(addr, buf, af == AF_INET ? 4 : 16);
}

int net_source_init(struct net_source *s, const struct config *c, struct diag *d)
{
	memset(s, 0, sizeof(*s));
	const char *t4 = c->source_ipv4, *t6 = c->source_ipv6;
	s->explicit4 = t4 != NULL;
	s->explicit6 = t6 != NULL;
	if (!t4 && c->n_listen_ipv4)
		t4 = c->listen_addrs_ipv4[0];
	if (!t6 && c->n_listen_ipv6)
		t6 = c->listen_addrs_ipv6[0];
	choose(t4, AF_INET, &s->has4, s->addr4);
	choose(t6, AF_INET6, &s->has6, s->addr6);

	int rc = 0;
	for (int f = 0; f < 2; f++) {
		int af = f == 0 ? AF_INET : AF_INET6;
		const char *text = f == 0 ? t4 : t6;
		bool expl = f == 0 ? s->explicit4 : s->explicit6;
		struct sockaddr_storage ss;
		socklen_t len = fill(s, af, &ss);
		if (!len)
			continue;
		int fd = socket(af, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		int e = fd < 0 ? errno : 0;
		if (fd >= 0 && bind(fd, (struct sockaddr *)&ss, len) < 0)
			e = errno;
		if (fd >= 0)
			close(fd);
		if (!e)
			continue;
		rc = -e;
		if (expl)
			diag_add(d, config_file_of(c, c->source_pos[f]), c->source_pos[f].line,
			         c->source_pos[f].col, "expected an address of this host for "
			         "'source_%s', found '%s': %s", f == 0 ? "ipv4" : "ipv6", text, strerror(e));
		else
			diag_add(d, c->path, 0, 0,
			         "outgoing DNS leaves from the first address of 'listen_addrs_%s', '%s', "
			         "and it cannot be bound: %s (set [server] source_%s)",
			         f == 0 ? "ipv4" : "ipv6", text, strerror(e), f == 0 ? "ipv4" : "ipv6");
	}
	return rc;
}

void net_source_describe(const struct net_source *s, char *buf, size_t size)
{
	char a4[INET_ADDRSTRLEN] = "", a6[INET6_ADDRSTRLEN] = "";
	if (s->has4)
		inet_ntop(AF_INET, s->addr4, a4, sizeof(a4));
	if (s->has6)
		inet_ntop(AF_INET6, s->addr6, a6, sizeof(a6));
	snprintf(buf, size, "%s%s (IPv4%s), %s%s (IPv6%s)",
	         s->has4 ? "from " : "", s->has4 ? a4 : "the kernel's choice",
	         !s->has4 ? "" : s->explicit4 ? ", source_ipv4" : ", first listen address",
	         s->has6 ? "from " : "", s->has6 ? a6 : "the kernel's choice",
	         !s->has6 ? "" : s->explicit6 ? ", source_ipv6" : ", first listen address");
}
