/* SPDX-License-Identifier: MIT */
/*
 * The network layer against real sockets on 127.0.0.1 and ::1.  Each
 * server runs in a child process (loop_run until SIGTERM), so the test
 * can act as a plain blocking client; the child reports its port through
 * a pipe.  The handler echoes the message with QR set and marks, in the
 * RCODE bits, what it saw: 1 = UDP with max_size as configured, 2 = TCP
 * with max_size 65535, 3 = the handler installed by net_set_handler,
 * 15 = something was wrong with the context.  An ID of 0x57nn over TCP is
 * answered with a stream (struct query_stream) of nn messages of
 * STREAM_LEN bytes, each carrying its index in byte 12.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/conf/log.h"
#include "core/net/loop.h"
#include "core/net/net.h"
#include "core/wire/query.h"
#include "tests/unit/check.h"

#define UDP_MAX 1232
#define BIG_LEN 60000   /* answer size asked for by QDCOUNT = 0xff00 */
#define STREAM_LEN 20000

static struct net *the_net;

static int check_ctx(const struct query *q, size_t want_max)
{
	if (q->max_size != want_max || q->tx_cap < QUERY_MSG_MAX || !q->arena)
		return 15;
	if (q->client.ss_family != AF_INET && q->client.ss_family != AF_INET6)
		return 15;
	if (q->client_len != (q->client.ss_family == AF_INET ? sizeof(struct sockaddr_in)
	                                                     : sizeof(struct sockaddr_in6)))
		return 15;
	return 0;
}

static void reply(struct query *q, int code)
{
	size_t len = q->rx_len;
	if (q->rx[4] == 0xff)
		len = BIG_LEN;
	memcpy(q->tx, q->rx, q->rx_len);
	for (size_t i = q->rx_len; i < len; i++)
		q->tx[i] = (uint8_t)(i * 7);
	q->tx[2] |= 0x80;
	q->tx[3] = (uint8_t)((q->tx[3] & 0xf0) | code);
	q->tx_len = len;
}

static void handler2(void *ctx, struct query *q)
{
	reply(q, 3);
}

struct stream {
	uint16_t id;
	int next, n;
};

static int stream_next(void *ctx, struct query *q)
{
	struct stream *s = ctx;
	if (q->tx_cap < STREAM_LEN)
		return -ENOSPC;
	memset(q->tx, 0, STREAM_LEN);
	q->tx[0] = (uint8_t)(s->id >> 8);
	q->tx[1] = (uint8_t)s->id;
	q->tx[2] = 0x80;
	q->tx[12] = (uint8_t)s->next;
	q->tx_len = STREAM_LEN;
	return ++s->next < s->n ? 1 : 0;
}

static void stream_release(void *ctx)
{
	free(ctx);
}

static void echo(void *ctx, struct query *q)
{
	if (q->rx_len < 12)
		return;
	uint16_t id = (uint16_t)(q->rx[0] << 8 | q->rx[1]);
	if ((id >> 8) == 0x57 && q->transport == QUERY_TCP) {
		struct stream *s = calloc(1, sizeof(*s));
		if (!s)
			return;
		s->id = id;
		s->n = id & 0xff;
		q->stream = (struct query_stream){ s, stream_next, stream_release };
		return;
	}
	if (id == 0xdead)
		return;   /* no answer */
	if (id == 0x5e75) {
		net_set_handler(the_net, handler2, NULL);
		return;
	}
	int code = q->transport == QUERY_UDP ? 1 : 2;
	int bad = check_ctx(q, q->transport == QUERY_UDP ? UDP_MAX : QUERY_MSG_MAX);
	reply(q, bad ? bad : code);
}

struct server {
	pid_t pid;
	uint16_t port;
};

static void on_term(struct loop *l, void *arg)
{
	loop_stop(l);
}

static const char *const loopbacks[] = { "127.0.0.1", "::1" };
static const char *const wildcards[] = { "0.0.0.0", "::" };

/* tcp_max_per_prefix for the next server_start(); 0 = the default. */
static uint32_t server_per_prefix;

static struct server server_start(const char *const *addrs, uint32_t max_conns,
                                  uint32_t idle_ms)
{
	struct server s = { -1, 0 };
	int p[2];
	if (pipe(p) < 0)
		return s;
	s.pid = fork();
	if (s.pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		log_set_level(LOG_WARN);
		struct net_config cfg = { addrs, 2, 0, UDP_MAX, max_conns, idle_ms, server_per_prefix, 0, NULL, 0 };
		char err[256] = "";
		struct loop *l = loop_new(err);
		uint16_t port = 0;
		if (l)
			the_net = net_new(l, &cfg, echo, NULL, err);
		if (the_net && loop_add_signal(l, SIGTERM, on_term, NULL) == 0)
			port = net_bound_port(the_net);
		else
			fprintf(stderr, "server: %s\n", err);
		if (write(p[1], &port, sizeof(port)) != sizeof(port) || !port)
			_exit(1);
		int rc = loop_run(l);
		net_free(the_net);
		loop_free(l);
		_exit(rc == 0 ? 0 : 2);
	}
	close(p[1]);
	if (s.pid > 0 && read(p[0], &s.port, sizeof(s.port)) != sizeof(s.port))
		s.port = 0;
	close(p[0]);
	return s;
}

/* Returns the child's exit status (0 = clean shutdown). */
static int server_stop(struct server s)
{
	int st = -1;
	if (s.pid <= 0)
		return -1;
	kill(s.pid, SIGTERM);
	if (waitpid(s.pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

enum { CLOSE_WAIT_MS = 20000 };

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* IPv4 clients talk to this address; all of 127/8 is local. */
static uint32_t v4_target = INADDR_LOOPBACK;

static socklen_t make_addr(int family, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		a->sin_addr.s_addr = htonl(v4_target);
		return sizeof(*a);
	}
	struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
	a->sin6_family = AF_INET6;
	a->sin6_port = htons(port);
	a->sin6_addr = in6addr_loopback;
	return sizeof(*a);
}

static int client_buf(int family, int type, uint16_t port, int rcvbuf)
{
	int fd = socket(family, type, 0);
	if (fd < 0)
		return -1;
	/* Generous: a loaded machine may be slow to answer, and nothing here
	 * expects a receive to time out. */
	struct timeval tv = { 20, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	struct sockaddr_storage ss;
	socklen_t len = make_addr(family, port, &ss);
	if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int client(int family, int type, uint16_t port)
{
	return client_buf(family, type, port, 4 << 20);
}

/* A 29-byte query for example.com/A with the given id. */
static size_t make_query(uint8_t *buf, uint16_t id, bool big)
{
	static const uint8_t q[] = { 0, 0, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
	                             7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0,
	                             0, 1, 0, 1 };
	memcpy(buf, q, sizeof(q));
	buf[0] = (uint8_t)(id >> 8);
	buf[1] = (uint8_t)id;
	if (big)
		buf[4] = 0xff;
	return sizeof(q);
}

/* The answer expected for query `qbuf` (not big) with RCODE code. */
static bool is_answer(const uint8_t *got, size_t got_len, const uint8_t *qbuf, size_t qlen,
                      int code)
{
	uint8_t want[512];
	memcpy(want, qbuf, qlen);
	want[2] |= 0x80;
	want[3] = (uint8_t)((want[3] & 0xf0) | code);
	return got_len == qlen && memcmp(got, want, qlen) == 0;
}

static bool udp_roundtrip(int family, uint16_t port, uint16_t id)
{
	int fd = client(family, SOCK_DGRAM, port);
	uint8_t q[64], r[512];
	size_t qlen = make_query(q, id, false);
	bool good = fd >= 0 && send(fd, q, qlen, 0) == (ssize_t)qlen;
	ssize_t n = good ? recv(fd, r, sizeof(r), 0) : -1;
	good = n > 0 && is_answer(r, (size_t)n, q, qlen, 1);
	if (fd >= 0)
		close(fd);
	return good;
}

/* Sends query `first`, then query `second`, on a UDP socket; true when the
 * one reply read is the answer to `second` with RCODE code. */
static bool second_answered(int fd, uint16_t first, uint16_t second, int code)
{
	uint8_t q[64], r[512];
	size_t qlen = make_query(q, first, false);
	send(fd, q, qlen, 0);
	qlen = make_query(q, second, false);
	send(fd, q, qlen, 0);
	ssize_t n = recv(fd, r, sizeof(r), 0);
	return n > 0 && is_answer(r, (size_t)n, q, qlen, code);
}

static bool write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/* Reads one framed message; returns its length, or -1 on EOF, error or timeout. */
static ssize_t tcp_read_msg(int fd, uint8_t *buf, size_t cap)
{
	uint8_t pre[2];
	if (recv(fd, pre, 2, MSG_WAITALL) != 2)
		return -1;
	size_t len = (size_t)pre[0] << 8 | pre[1];
	if (len > cap || recv(fd, buf, len, MSG_WAITALL) != (ssize_t)len)
		return -1;
	return (ssize_t)len;
}

static size_t frame(uint8_t *out, const uint8_t *msg, size_t len)
{
	out[0] = (uint8_t)(len >> 8);
	out[1] = (uint8_t)len;
	memcpy(out + 2, msg, len);
	return len + 2;
}

static bool tcp_roundtrip(int fd, uint16_t id, int code)
{
	uint8_t q[64], f[80], r[512];
	size_t qlen = make_query(q, id, false);
	if (!write_all(fd, f, frame(f, q, qlen)))
		return false;
	ssize_t n = tcp_read_msg(fd, r, sizeof(r));
	return n > 0 && is_answer(r, (size_t)n, q, qlen, code);
}

/* True when the server closes the connection within timeout_ms (a
 * generous deadline for waiting, never a measurement: it returns as soon as
 * the close is seen). */
static bool closed_within(int fd, int timeout_ms)
{
	struct pollfd p = { fd, POLLIN, 0 };
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		int left = (int)(end - now_ms());
		if (left <= 0 || poll(&p, 1, left) <= 0)
			return false;
		uint8_t b[256];
		ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
		if (n < 0 && errno != EAGAIN)
			return false;
	}
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* How many of this process's UDP sockets of `family` ignore path MTU
 * (IP_PMTUDISC_OMIT / IPV6_PMTUDISC_OMIT), and how many there are. */
static void count_pmtu_omit(int family, int *omit, int *all)
{
	*omit = *all = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		int fd = atoi(e->d_name), type = 0, mode = -1;
		struct sockaddr_storage ss;
		socklen_t len = sizeof(type), alen = sizeof(ss);
		if (fd == dirfd(d) || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
		    type != SOCK_DGRAM || getsockname(fd, (struct sockaddr *)&ss, &alen) < 0 ||
		    ss.ss_family != family)
			continue;
		len = sizeof(mode);
		if (family == AF_INET6)
			getsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &mode, &len);
		else
			getsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &mode, &len);
		(*all)++;
		*omit += family == AF_INET6 ? mode == IPV6_PMTUDISC_OMIT : mode == IP_PMTUDISC_OMIT;
	}
	if (d)
		closedir(d);
}

/* --- tests --- */

static void test_setup_errors(void)
{
	char err[256] = "";
	struct loop *l = loop_new(err);
	int before = count_fds();

	static const char *const bad[] = { "127.0.0.1", "not-an-address" };
	struct net_config cfg = { bad, 2, 0, UDP_MAX, 4, 1000, 0, 0, NULL, 0 };
	struct net *n = net_new(l, &cfg, echo, NULL, err);
	ok(n == NULL, "bad address refused");
	ok(strstr(err, "not-an-address") != NULL, "error names the address: %s", err);
	is_int(count_fds(), before, "no descriptor leaked by the failed setup");

	cfg.n_addrs = 0;
	ok(net_new(l, &cfg, echo, NULL, err) == NULL, "no addresses refused");

	/* A port already taken (by a TCP listener) fails with the bind error. */
	int busy = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_storage ss;
	socklen_t len = make_addr(AF_INET, 0, &ss);
	ok(bind(busy, (struct sockaddr *)&ss, len) == 0 && listen(busy, 1) == 0, "busy listener");
	getsockname(busy, (struct sockaddr *)&ss, &len);
	static const char *const lo[] = { "127.0.0.1" };
	struct net_config taken = { lo, 1, ntohs(((struct sockaddr_in *)&ss)->sin_port), UDP_MAX,
	                            4, 1000, 0, 0, NULL, 0 };
	before = count_fds();
	n = net_new(l, &taken, echo, NULL, err);
	ok(n == NULL, "port in use refused");
	ok(strstr(err, "bind 127.0.0.1:") && strstr(err, "(tcp)"), "error says what failed: %s",
	   err);
	is_int(count_fds(), before, "no descriptor leaked by the failed bind");
	close(busy);

	/* Success and cleanup: every socket closed by net_free. */
	before = count_fds();
	static const char *const both[] = { "127.0.0.1", "::1" };
	struct net_config good = { both, 2, 0, UDP_MAX, 4, 1000, 0, 0, NULL, 0 };
	n = net_new(l, &good, echo, NULL, err);
	ok(n != NULL, "net_new on 127.0.0.1 and ::1: %s", n ? "ok" : err);
	ok(n && net_bound_port(n) != 0, "port 0 became a real port");
	is_int(count_fds(), before + 4, "two UDP and two TCP sockets (epoll)");
	/* Answers never sized to a path MTU from ICMP (forged ones would
	 * have the kernel fragment them). */
	int omit, all;
	count_pmtu_omit(AF_INET, &omit, &all);
	ok(all == 1 && omit == 1, "the IPv4 UDP socket ignores path MTU (%d of %d)", omit, all);
	count_pmtu_omit(AF_INET6, &omit, &all);
	ok(all == 1 && omit == 1, "the IPv6 UDP socket ignores path MTU (%d of %d)", omit, all);
	net_free(n);
	net_free(NULL);
	is_int(count_fds(), before, "net_free closed them all");
	loop_free(l);
}

static void test_udp(struct server s)
{
	ok(udp_roundtrip(AF_INET, s.port, 0x1234), "UDP round trip over IPv4");
	ok(udp_roundtrip(AF_INET6, s.port, 0x4321), "UDP round trip over IPv6");

	/* No answer for one message, an answer for the next. */
	int fd = client(AF_INET, SOCK_DGRAM, s.port);
	uint8_t q[64], r[512];
	ok(second_answered(fd, 0xdead, 0x0777, 1), "tx_len 0 sends nothing");
	size_t qlen;
	ssize_t n;

	/* A burst: every datagram answered exactly once. */
	enum { BURST = 200 };
	static bool seen[BURST];
	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < BURST; i++) {
		qlen = make_query(q, (uint16_t)(0x1000 + i), false);
		send(fd, q, qlen, 0);
	}
	int got = 0, dup = 0, bad = 0;
	while (got < BURST && (n = recv(fd, r, sizeof(r), 0)) > 0) {
		int i = (r[0] << 8 | r[1]) - 0x1000;
		make_query(q, (uint16_t)(0x1000 + (i >= 0 && i < BURST ? i : 0)), false);
		if (i < 0 || i >= BURST || !is_answer(r, (size_t)n, q, qlen, 1))
			bad++;
		else if (seen[i])
			dup++;
		else
			seen[i] = true;
		got++;
	}
	is_int(got, BURST, "burst of %d datagrams: all answered", BURST);
	is_int(dup + bad, 0, "burst answers distinct and correct");
	close(fd);
}

static void test_tcp(struct server s)
{
	int fd = client(AF_INET, SOCK_STREAM, s.port);
	ok(fd >= 0 && tcp_roundtrip(fd, 0x0101, 2), "TCP round trip over IPv4");
	if (fd >= 0)
		close(fd);
	fd = client(AF_INET6, SOCK_STREAM, s.port);
	ok(fd >= 0 && tcp_roundtrip(fd, 0x0606, 2), "TCP round trip over IPv6");
	if (fd >= 0)
		close(fd);

	/* Two messages in one write, answered in order. */
	fd = client(AF_INET, SOCK_STREAM, s.port);
	uint8_t q1[64], q2[64], buf[256], r[512];
	size_t l1 = make_query(q1, 0xaaa1, false), l2 = make_query(q2, 0xaaa2, false);
	size_t len = frame(buf, q1, l1);
	len += frame(buf + len, q2, l2);
	ok(write_all(fd, buf, len), "pipelined write");
	ssize_t n = tcp_read_msg(fd, r, sizeof(r));
	ok(n > 0 && is_answer(r, (size_t)n, q1, l1, 2), "first pipelined answer first");
	n = tcp_read_msg(fd, r, sizeof(r));
	ok(n > 0 && is_answer(r, (size_t)n, q2, l2, 2), "second pipelined answer second");

	/* One message byte by byte (Nagle off so each byte is a segment). */
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	len = frame(buf, q1, l1);
	bool wrote = true;
	for (size_t i = 0; i < len; i++) {
		wrote &= write_all(fd, buf + i, 1);
		usleep(2000);
	}
	ok(wrote, "wrote byte by byte");
	n = tcp_read_msg(fd, r, sizeof(r));
	ok(n > 0 && is_answer(r, (size_t)n, q1, l1, 2), "message split into single bytes answered");

	/* A message and a half, then the rest together with a whole one. */
	len = frame(buf, q1, l1);
	len += frame(buf + len, q2, l2);
	len += frame(buf + len, q1, l1);
	ok(write_all(fd, buf, 40), "write 1.3 messages");
	usleep(20000);
	ok(write_all(fd, buf + 40, len - 40), "write the rest");
	bool order = true;
	for (int i = 0; i < 3; i++) {
		n = tcp_read_msg(fd, r, sizeof(r));
		order &= n > 0 && is_answer(r, (size_t)n, i == 1 ? q2 : q1, l1, 2);
	}
	ok(order, "messages split across writes answered in order");
	close(fd);

	/* Answers bigger than the sockets take at once (the client's receive
	 * buffer is small), all queued before the client reads any: the server
	 * holds back (backpressure) and sends every answer complete and in
	 * order as the client reads. */
	fd = client_buf(AF_INET, SOCK_STREAM, s.port, 4096);
	enum { N_BIG = 100 };   /* 6 MB: more than the kernel buffers hold */
	static uint8_t many[N_BIG * 31];
	len = 0;
	for (int i = 0; i < N_BIG; i++) {
		uint8_t q[64];
		size_t ql = make_query(q, (uint16_t)(0xb000 + i), true);
		len += frame(many + len, q, ql);
	}
	ok(write_all(fd, many, len), "%d pipelined queries for 60000-byte answers", N_BIG);
	usleep(200000);
	static uint8_t big[QUERY_MSG_MAX];
	bool all = true;
	for (int i = 0; i < N_BIG; i++) {
		n = tcp_read_msg(fd, big, sizeof(big));
		bool this_ok = n == BIG_LEN && big[0] == 0xb0 && big[1] == i && (big[2] & 0x80);
		for (size_t k = 29; this_ok && k < BIG_LEN; k++)
			this_ok = big[k] == (uint8_t)(k * 7);
		all &= this_ok;
	}
	ok(all, "all %d answers arrived intact and in order", N_BIG);
	ok(tcp_roundtrip(fd, 0x0b0b, 2), "connection still serves afterwards");
	close(fd);

	/* A stream of 50 messages of 20000 bytes (1 MB, more than the socket
	 * buffers hold) to a slow reader, with a query pipelined behind it:
	 * every message in order, then the query's answer. */
	fd = client_buf(AF_INET, SOCK_STREAM, s.port, 4096);
	uint8_t qs[64];
	size_t ls = make_query(qs, 0x5732, false);
	len = frame(buf, qs, ls);
	len += frame(buf + len, q1, l1);
	ok(write_all(fd, buf, len), "stream request and a pipelined query");
	usleep(100000);
	bool stream_ok = true;
	for (int i = 0; i < 50; i++) {
		n = tcp_read_msg(fd, big, sizeof(big));
		stream_ok &= n == STREAM_LEN && big[0] == 0x57 && big[1] == 0x32 && big[12] == i;
	}
	ok(stream_ok, "all 50 stream messages, complete and in order");
	n = tcp_read_msg(fd, r, sizeof(r));
	ok(n > 0 && is_answer(r, (size_t)n, q1, l1, 2), "the pipelined query answered after the stream");
	close(fd);

	/* A client that goes away in the middle of a stream: the stream is
	 * released (no leak at exit) and the server serves on. */
	fd = client_buf(AF_INET, SOCK_STREAM, s.port, 4096);
	ls = make_query(qs, 0x57c8, false);
	len = frame(buf, qs, ls);
	write_all(fd, buf, len);
	n = tcp_read_msg(fd, big, sizeof(big));
	ok(n == STREAM_LEN && big[12] == 0, "first message of a 200-message stream");
	close(fd);
	fd = client(AF_INET, SOCK_STREAM, s.port);
	ok(fd >= 0 && tcp_roundtrip(fd, 0x0e0e, 2), "still serving after a client left mid-stream");
	close(fd);

	/* The client half-closes after its query: still answered, then closed. */
	fd = client(AF_INET, SOCK_STREAM, s.port);
	len = frame(buf, q1, l1);
	write_all(fd, buf, len);
	shutdown(fd, SHUT_WR);
	n = tcp_read_msg(fd, r, sizeof(r));
	ok(n > 0 && is_answer(r, (size_t)n, q1, l1, 2), "answered after the client's FIN");
	ok(closed_within(fd, CLOSE_WAIT_MS), "then closed");
	close(fd);

	/* Broken framing closes the connection. */
	fd = client(AF_INET, SOCK_STREAM, s.port);
	ok(write_all(fd, "\0\0", 2), "zero length prefix");
	ok(closed_within(fd, CLOSE_WAIT_MS), "zero length prefix closes the connection");
	close(fd);
	fd = client(AF_INET6, SOCK_STREAM, s.port);
	ok(write_all(fd, "\0\5hello", 7), "5-byte message");
	ok(closed_within(fd, CLOSE_WAIT_MS), "message shorter than a header closes the connection");
	close(fd);

	/* A frame of 0xdead gets no answer; the next one does. */
	fd = client(AF_INET, SOCK_STREAM, s.port);
	uint8_t qd[64];
	size_t ld = make_query(qd, 0xdead, false);
	len = frame(buf, qd, ld);
	write_all(fd, buf, len);
	ok(tcp_roundtrip(fd, 0x0c0c, 2), "tx_len 0 sends nothing over TCP");
	close(fd);
}

static void test_set_handler(struct server s)
{
	/* The echo handler swaps itself for handler2 on id 0x5e75. */
	int fd = client(AF_INET, SOCK_DGRAM, s.port);
	ok(second_answered(fd, 0x5e75, 0x0202, 3), "UDP uses the new handler");
	close(fd);
	fd = client(AF_INET6, SOCK_STREAM, s.port);
	ok(tcp_roundtrip(fd, 0x0303, 3), "TCP uses the new handler");
	close(fd);
}

static void test_idle(void)
{
	/* No durations are measured here (a loaded machine stretches them):
	 * that an idle connection is closed, that activity keeps one open with
	 * gaps well under the timeout, and that a silent one is closed.  That
	 * timers never fire early is test_loop's, on the loop's own clock. */
	struct server s = server_start(loopbacks, 16, 1000);
	ok(s.port != 0, "server with a 1 s idle timeout");
	int fd = client(AF_INET, SOCK_STREAM, s.port);
	ok(tcp_roundtrip(fd, 1, 2), "answered");
	ok(closed_within(fd, CLOSE_WAIT_MS), "idle connection closed");
	close(fd);

	/* Activity keeps a connection open past the timeout: five queries 300
	 * ms apart (the last at 1.2 s) with a 1 s timeout, so only a stall of
	 * 700 ms between two of them could close it. */
	fd = client(AF_INET, SOCK_STREAM, s.port);
	bool alive = true;
	for (int i = 0; i < 5; i++) {
		if (i)
			usleep(300000);
		alive &= tcp_roundtrip(fd, (uint16_t)(10 + i), 2);
	}
	ok(alive, "a connection with a query every 300 ms outlives a 1 s timeout");
	close(fd);

	/* A silent connection that never sent anything is closed too. */
	fd = client(AF_INET6, SOCK_STREAM, s.port);
	ok(closed_within(fd, CLOSE_WAIT_MS), "silent connection closed");
	close(fd);
	is_int(server_stop(s), 0, "server exits cleanly on SIGTERM");
}

static void test_cap(void)
{
	struct server s = server_start(loopbacks, 4, 10000);
	ok(s.port != 0, "server with a cap of 4 connections");
	int c[6];
	bool answered = true;
	for (int i = 0; i < 4; i++) {
		c[i] = client(i % 2 ? AF_INET6 : AF_INET, SOCK_STREAM, s.port);
		answered &= tcp_roundtrip(c[i], (uint16_t)(0x100 + i), 2);
		usleep(5000);
	}
	ok(answered, "four connections answered");
	c[4] = client(AF_INET, SOCK_STREAM, s.port);
	ok(tcp_roundtrip(c[4], 0x104, 2), "a fifth connection at the cap is answered");
	ok(closed_within(c[0], CLOSE_WAIT_MS), "the connection idle longest was closed for it");
	ok(tcp_roundtrip(c[1], 0x201, 2), "the second one still works");
	/* Now c[2] is idle longest (c[1] was just used). */
	c[5] = client(AF_INET6, SOCK_STREAM, s.port);
	ok(tcp_roundtrip(c[5], 0x105, 2), "a sixth connection is answered");
	ok(closed_within(c[2], CLOSE_WAIT_MS), "the new idlest one was closed, not the one just used");
	ok(tcp_roundtrip(c[1], 0x202, 2) && tcp_roundtrip(c[3], 0x203, 2) &&
	   tcp_roundtrip(c[4], 0x204, 2), "the others still work");
	for (int i = 0; i < 6; i++)
		close(c[i]);
	is_int(server_stop(s), 0, "server exits cleanly on SIGTERM");
}

/*
 * Issue #16 item 8: at the caps, connections that never completed a query
 * go first, and a prefix's flood only closes its own connections.  (The
 * old order closed whatever was idle longest: every honest client.)
 */
static void test_cap_fairness(void)
{
	/* Cap 4, per prefix 16: the global order alone. */
	struct server s = server_start(loopbacks, 4, 10000);
	ok(s.port != 0, "server with a cap of 4 connections");
	int a = client(AF_INET, SOCK_STREAM, s.port), b = client(AF_INET6, SOCK_STREAM, s.port);
	ok(tcp_roundtrip(a, 0x301, 2) && tcp_roundtrip(b, 0x302, 2), "two clients answered");
	usleep(100000);   /* idle for 100 ms: the old order closed them first */
	int flood[20];
	for (int i = 0; i < 20; i++)
		flood[i] = client(AF_INET, SOCK_STREAM, s.port);
	usleep(100000);
	ok(!closed_within(a, 200) && !closed_within(b, 200),
	   "20 connections that never sent a query did not close the two that did");
	ok(tcp_roundtrip(a, 0x303, 2) && tcp_roundtrip(b, 0x304, 2), "both still answered");
	int closed = 0;
	for (int i = 0; i < 20; i++) {
		closed += closed_within(flood[i], 300);
		close(flood[i]);
	}
	ok(closed >= 18, "the flood's own connections were closed (%d of 20)", closed);
	close(a);
	close(b);
	is_int(server_stop(s), 0, "server exits cleanly on SIGTERM");

	/* Cap 8, 3 per prefix: 127.0.0.1 floods with queries, ::1 is not touched. */
	server_per_prefix = 3;
	s = server_start(loopbacks, 8, 10000);
	server_per_prefix = 0;
	b = client(AF_INET6, SOCK_STREAM, s.port);
	ok(tcp_roundtrip(b, 0x305, 2), "the IPv6 client answered");
	int busy[10];
	bool all = true;
	for (int i = 0; i < 10; i++) {
		busy[i] = client(AF_INET, SOCK_STREAM, s.port);
		all &= tcp_roundtrip(busy[i], (uint16_t)(0x310 + i), 2);
		usleep(2000);
	}
	ok(all, "each of the IPv4 host's 10 connections answered in turn");
	ok(!closed_within(b, 200) && tcp_roundtrip(b, 0x306, 2),
	   "the other prefix's connection survived the flood");
	closed = 0;
	for (int i = 0; i < 7; i++)
		closed += closed_within(busy[i], 300);
	is_int(closed, 7, "the host kept its newest 3, its own older ones closed");
	ok(tcp_roundtrip(busy[9], 0x320, 2), "its newest still answered");
	for (int i = 0; i < 10; i++)
		close(busy[i]);
	close(b);
	is_int(server_stop(s), 0, "server exits cleanly on SIGTERM");
}

/* Bound to the wildcard addresses, a reply must leave from the address
 * the query was sent to: a client connected to 127.0.0.2 drops a reply
 * from 127.0.0.1 (the source the routing table would pick). */
static void test_wildcard(void)
{
	struct server s = server_start(wildcards, 16, 5000);
	ok(s.port != 0, "server on 0.0.0.0 and ::");
	v4_target = INADDR_LOOPBACK + 1;
	ok(udp_roundtrip(AF_INET, s.port, 0x7001), "UDP to 127.0.0.2 answered from 127.0.0.2");
	v4_target = INADDR_LOOPBACK;
	ok(udp_roundtrip(AF_INET, s.port, 0x7002), "UDP to 127.0.0.1 answered from 127.0.0.1");
	ok(udp_roundtrip(AF_INET6, s.port, 0x7003), "UDP to ::1 answered");
	int fd = client(AF_INET, SOCK_STREAM, s.port);
	ok(tcp_roundtrip(fd, 0x7004, 2), "TCP on the wildcard answered");
	close(fd);
	is_int(server_stop(s), 0, "server exits cleanly on SIGTERM");
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_WARN);
	test_setup_errors();

	struct server s = server_start(loopbacks, 16, 5000);
	ok(s.port != 0, "server started on 127.0.0.1 and ::1 port %u", s.port);
	if (s.port) {
		test_udp(s);
		test_tcp(s);
		test_set_handler(s);
	}
	is_int(server_stop(s), 0, "server exits cleanly on SIGTERM");
	test_wildcard();

	test_idle();
	test_cap();
	test_cap_fairness();
	return done_testing();
}
