/* SPDX-License-Identifier: MIT */
/*
 * The stall bench's load and its control (bench/stall.sh, doc/performance.md
 * "Stalls"): tells a wait that is geoacme's from one that is the machine's.
 *
 * It sends the same queries, interleaved, to two servers pinned to the same
 * core: geoacme and a control (bench/reflector.c, which does no DNS work
 * and never stalls by itself).  At QPS queries/s each, one query goes to
 * geoacme and, half a spacing later, the same query to the control.  Each
 * is stamped with the clock just before it is sent, and its answer with the
 * time the kernel put it on this socket (SO_TIMESTAMPNS: on loopback, on
 * the server's core as it sends) and with the time this client read it.
 * A host that takes that core delays the control's queries in flight at
 * that moment as much as geoacme's; a loop round of geoacme's own delays
 * only geoacme's; a hiccup of this client in reading delays neither's
 * stamp.
 *
 * A pause of the whole machine (every core: the host stops the VM) holds
 * what is in flight when it starts, but then this client sends nothing
 * either: the control, which answers in microseconds, is seldom in
 * flight, and geoacme's query is.  Run at SCHED_FIFO on a core of its own,
 * this client is only ever late to send because its core did not run, so
 * its late sends are the machine's too: a send more than PAUSE_NS after
 * its slot marks [slot, send] a pause.
 *
 * A query's wait is read time - send time (what a client sees, as dnsperf
 * measures it).  A geoacme query's UNSHARED wait is the part of [send,
 * kernel stamp of its answer] during which no control query was in flight
 * (sent, its answer not yet stamped) and this client was not paused (when
 * it runs at SCHED_FIFO; otherwise a late send may be another process's
 * doing, and excuses nothing): the time only geoacme kept it.  A control
 * query never answered covers nothing (it cannot excuse a wait); a query
 * with no answer within 2 s is lost, as in dnsperf -t 2.
 *
 *   gcc -O2 -o stall_probe bench/stall_probe.c
 *   ./stall_probe GEOACME_PORT CONTROL_PORT SECONDS QPS NAMES [RAW_FILE]
 *
 * NAMES: a file of domain names, one a line, queried in turn as TXT with
 * EDNS0 DO (as dnsperf -D), on 127.0.0.1.  Prints one line of NAME=VALUE
 * to stdout (times in ms):
 *   g_sent g_lost g_max g_p999   geoacme's queries, lost, longest wait, p99.9
 *   g_unshared                the longest unshared wait
 *   g_unshared_wait g_unshared_at   that query's wait and when it was sent
 *                             (s from the start)
 *   g_unshared_ctl            the longest unshared wait with the control's
 *                             flights alone excusing (this client's pauses
 *                             not counted): what they excused
 *   c_sent c_lost c_max       the control's (c_max to the kernel's stamp)
 *   p_fifo p_pauses p_pause_max   whether this client ran at SCHED_FIFO (its
 *                             pauses excuse waits only then), how many sends
 *                             were late by more than PAUSE_NS, the most late (ms)
 * RAW_FILE gets one line per query: g|c, send (us from the start), wait to
 * the kernel's stamp, wait to the read (us, -1 if lost), unshared (us, -
 * for the control).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LOST_AFTER_NS 2000000000LL   /* dnsperf -t 2 */
/* A send this late was not this client's doing (at SCHED_FIFO, alone on its
 * core, it sends within tens of microseconds of its slot). */
#define PAUSE_NS 1000000LL

struct flight {
	int64_t sent;       /* ns, CLOCK_REALTIME, just before send() */
	int64_t answered;   /* ns, the kernel's stamp of the answer; 0 while none */
	int64_t read;       /* ns, when this client read it (as dnsperf measures) */
};

struct stream {
	int fd;
	struct flight *q;
	size_t sent;
	size_t cap;
};

/* CLOCK_REALTIME, the kernel's receive stamps' clock (SO_TIMESTAMPNS): a
 * step of the clock during a run would show as one odd wait. */
static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* QNAME TXT, RD clear, one OPT record with DO set (as dnsperf -D).  The
 * ID (bytes 0-1) is set per send. */
static size_t build_query(uint8_t *buf, size_t cap, const char *qname)
{
	size_t n = 12;
	memset(buf, 0, 12);
	buf[5] = 1;    /* QDCOUNT */
	buf[11] = 1;   /* ARCOUNT */
	const char *p = qname;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		if (len == 0 || len > 63 || n + len + 1 + 16 > cap)
			return 0;
		buf[n++] = (uint8_t)len;
		memcpy(buf + n, p, len);
		n += len;
		p += len;
		if (*p == '.')
			p++;
	}
	static const uint8_t tail[] = {
		0, 0, 16, 0, 1,                     /* root, TXT, IN */
		0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0   /* OPT, 1232 bytes, DO */
	};
	memcpy(buf + n, tail, sizeof(tail));
	return n + sizeof(tail);
}

static int open_stream(struct stream *s, int port, size_t cap)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (s->fd < 0 || connect(s->fd, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -1;
	int sz = 1 << 20, on = 1;
	setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (setsockopt(s->fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on)) < 0)
		return -1;
	s->q = calloc(cap, sizeof(*s->q));
	s->cap = cap;
	s->sent = 0;
	return s->q ? 0 : -1;
}

struct query {
	uint8_t wire[300];
	size_t len;
};

static void send_one(struct stream *s, struct query *q)
{
	if (s->sent == s->cap)
		return;
	size_t k = s->sent++;
	uint8_t *query = q->wire;
	size_t len = q->len;
	query[0] = (uint8_t)(k >> 8);
	query[1] = (uint8_t)k;
	s->q[k].sent = now_ns();
	/* A send that fails is a query with no answer: lost, as it should be. */
	(void)send(s->fd, query, len, 0);
}

/* Reads every answer queued on the stream's socket and stamps it with the
 * time the kernel queued it on the socket (SO_TIMESTAMPNS): on loopback,
 * right after the server sent it, on the server's core, so that a hiccup
 * of this client in reading it is no one's wait.  The ID is the query's
 * index modulo 65 536: the latest query sent with that ID (at 2 000/s, an
 * ID comes back after 32 s, far past the 2 s timeout). */
static void read_answers(struct stream *s)
{
	uint8_t buf[4096];
	union {
		struct cmsghdr align;
		char bytes[CMSG_SPACE(sizeof(struct timespec))];
	} control;
	for (;;) {
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.bytes,
		                      .msg_controllen = sizeof(control.bytes) };
		ssize_t r = recvmsg(s->fd, &msg, 0);
		int64_t read_at = now_ns(), t = read_at;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return;   /* EAGAIN, or an ICMP error: nothing to stamp */
		}
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
				struct timespec ts;
				memcpy(&ts, CMSG_DATA(c), sizeof(ts));
				t = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
			}
		}
		if (r < 12 || !(buf[2] & 0x80) || s->sent == 0)
			continue;
		size_t id = ((size_t)buf[0] << 8) | buf[1];
		size_t last = s->sent - 1;
		size_t k = last - ((last - id) & 0xffff);
		if (k > last || s->q[k].answered)
			continue;
		if (t - s->q[k].sent <= LOST_AFTER_NS) {
			s->q[k].answered = t;
			s->q[k].read = read_at;
		}
	}
}

/* Waits until the time DEADLINE, reading answers meanwhile. */
static void wait_until(struct stream *g, struct stream *c, int64_t deadline)
{
	struct pollfd fds[2] = { { .fd = g->fd, .events = POLLIN }, { .fd = c->fd, .events = POLLIN } };
	for (;;) {
		int64_t left = deadline - now_ns();
		if (left <= 0)
			return;
		struct timespec ts = { left / 1000000000LL, left % 1000000000LL };
		if (ppoll(fds, 2, &ts, NULL) > 0) {
			if (fds[0].revents)
				read_answers(g);
			if (fds[1].revents)
				read_answers(c);
		}
	}
}

struct span {
	int64_t from, to;
};

static int by_from(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return (x->from > y->from) - (x->from < y->from);
}

/* The moments the machine held everyone: the control's flights (sent, its
 * answer stamped) and this client's pauses, merged into disjoint spans in
 * time order.  `out` has room for both. */
static size_t shared_spans(const struct stream *c, const struct span *pauses, size_t npauses,
                           struct span *out)
{
	size_t n = 0;
	for (size_t k = 0; k < c->sent; k++)
		if (c->q[k].answered)
			out[n++] = (struct span){ c->q[k].sent, c->q[k].answered };
	for (size_t k = 0; k < npauses; k++)
		out[n++] = pauses[k];
	qsort(out, n, sizeof(*out), by_from);
	size_t m = 0;
	for (size_t k = 0; k < n; k++) {
		if (m && out[k].from <= out[m - 1].to) {
			if (out[k].to > out[m - 1].to)
				out[m - 1].to = out[k].to;
		} else {
			out[m++] = out[k];
		}
	}
	return m;
}

/* How much of f's flight, from its send to its answer's stamp, the spans
 * cover.  *first moves past spans that end before f's send: they end before
 * every later one's too (sends are in time order). */
static int64_t covered_by(const struct span *spans, size_t n, size_t *first, const struct flight *f)
{
	int64_t covered = 0;
	while (*first < n && spans[*first].to <= f->sent)
		(*first)++;
	for (size_t i = *first; i < n && spans[i].from < f->answered; i++) {
		int64_t a = spans[i].from > f->sent ? spans[i].from : f->sent;
		int64_t b = spans[i].to < f->answered ? spans[i].to : f->answered;
		if (b > a)
			covered += b - a;
	}
	return covered;
}

static double ms(int64_t ns)
{
	return (double)ns / 1e6;
}

static int by_value(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The names file, each name made a query; NULL if none could be read. */
static struct query *read_names(const char *path, size_t *count)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t n = 0, cap = 1024;
	struct query *qs = malloc(cap * sizeof(*qs));
	char line[512];
	while (qs && fgets(line, sizeof(line), f)) {
		line[strcspn(line, " \t\r\n")] = 0;
		if (!line[0])
			continue;
		if (n == cap) {
			struct query *more = realloc(qs, 2 * cap * sizeof(*qs));
			if (!more)
				break;
			qs = more;
			cap *= 2;
		}
		qs[n].len = build_query(qs[n].wire, sizeof(qs[n].wire), line);
		if (qs[n].len)
			n++;
		else
			fprintf(stderr, "skipped a bad name: %s\n", line);
	}
	fclose(f);
	*count = n;
	if (n == 0) {
		free(qs);
		return NULL;
	}
	return qs;
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: %s GEOACME_PORT CONTROL_PORT SECONDS QPS NAMES [RAW_FILE]\n",
		        argv[0]);
		return 2;
	}
	int gport = atoi(argv[1]), cport = atoi(argv[2]);
	double secs = atof(argv[3]), qps = atof(argv[4]);
	if (gport <= 0 || cport <= 0 || secs <= 0 || qps <= 0 || qps > 100000) {
		fprintf(stderr, "bad port, seconds or rate (1..100000 queries/s)\n");
		return 2;
	}
	int64_t period = (int64_t)(1e9 / qps);
	size_t nq;
	struct query *queries = read_names(argv[5], &nq);
	if (!queries) {
		fprintf(stderr, "%s: no names\n", argv[5]);
		return 2;
	}
	size_t cap = (size_t)(secs * qps) + 2;
	struct stream g, c;
	if (open_stream(&g, gport, cap) < 0 || open_stream(&c, cport, cap) < 0) {
		perror("socket");
		return 1;
	}

	/* This client's pauses are the machine's only if nothing else could
	 * take its core first. */
	int fifo = sched_getscheduler(0) == SCHED_FIFO;
	struct span *pauses = malloc((2 * cap + 1) * sizeof(*pauses));
	size_t npauses = 0;
	int64_t pause_max = 0;
	if (!pauses) {
		perror("malloc");
		return 1;
	}

	/* The schedule: geoacme at start + k * period, the control half a
	 * period later, the same name to both.  After a hiccup of this client
	 * the missed slots are skipped, not sent in a burst. */
	int64_t start = now_ns(), end = start + (int64_t)(secs * 1e9);
	int64_t next_g = start, next_c = start + period / 2;
	for (;;) {
		int to_g = next_g <= next_c;
		int64_t at = to_g ? next_g : next_c;
		if (at >= end)
			break;
		wait_until(&g, &c, at);
		int64_t t = now_ns();
		if (t - at > PAUSE_NS) {
			if (t - at > pause_max)
				pause_max = t - at;
			pauses[npauses++] = (struct span){ at, t };
		}
		int64_t *next = to_g ? &next_g : &next_c;
		struct stream *s = to_g ? &g : &c;
		send_one(s, &queries[s->sent % nq]);
		*next += period;
		if (*next < t)
			*next += (t - *next) / period * period + period;
	}
	wait_until(&g, &c, now_ns() + LOST_AFTER_NS);

	struct span *spans = malloc((c.sent + npauses + 1) * sizeof(*spans));
	struct span *ctl = malloc((c.sent + 1) * sizeof(*ctl));
	int64_t *waits = malloc((g.sent + 1) * sizeof(*waits));
	if (!spans || !ctl || !waits) {
		perror("malloc");
		return 1;
	}
	size_t nspans = shared_spans(&c, pauses, fifo ? npauses : 0, spans), nwaits = 0;
	/* The same with the control alone: what the pauses excused is shown. */
	size_t nctl = shared_spans(&c, NULL, 0, ctl), first_ctl = 0;
	int64_t worst_ctl = 0;

	FILE *raw = argc > 6 ? fopen(argv[6], "w") : NULL;
	size_t g_lost = 0, c_lost = 0, first = 0;
	int64_t c_max = 0, worst = 0, worst_wait = 0, worst_at = 0;
	for (size_t k = 0; k < g.sent; k++) {
		const struct flight *f = &g.q[k];
		if (!f->answered) {
			g_lost++;
			if (raw)
				fprintf(raw, "g\t%lld\t-1\t-1\t-1\n", (long long)((f->sent - start) / 1000));
			continue;
		}
		int64_t stamped = f->answered - f->sent;
		int64_t unshared = stamped - covered_by(spans, nspans, &first, f);
		int64_t unshared_ctl = stamped - covered_by(ctl, nctl, &first_ctl, f);
		int64_t wait = f->read - f->sent;
		if (unshared_ctl > worst_ctl)
			worst_ctl = unshared_ctl;
		waits[nwaits++] = wait;
		if (unshared > worst) {
			worst = unshared;
			worst_wait = wait;
			worst_at = f->sent - start;
		}
		if (raw)
			fprintf(raw, "g\t%lld\t%lld\t%lld\t%lld\n", (long long)((f->sent - start) / 1000),
			        (long long)(stamped / 1000), (long long)(wait / 1000),
			        (long long)(unshared / 1000));
	}
	for (size_t k = 0; k < c.sent; k++) {
		const struct flight *f = &c.q[k];
		if (!f->answered)
			c_lost++;
		else if (f->answered - f->sent > c_max)
			c_max = f->answered - f->sent;
		if (raw)
			fprintf(raw, "c\t%lld\t%lld\t%lld\t-\n", (long long)((f->sent - start) / 1000),
			        (long long)(f->answered ? (f->answered - f->sent) / 1000 : -1),
			        (long long)(f->answered ? (f->read - f->sent) / 1000 : -1));
	}
	if (raw)
		fclose(raw);
	qsort(waits, nwaits, sizeof(*waits), by_value);
	int64_t g_max = nwaits ? waits[nwaits - 1] : 0;
	int64_t p999 = nwaits ? waits[(size_t)((double)(nwaits - 1) * 0.999)] : 0;
	printf("g_sent=%zu g_lost=%zu g_max=%.2f g_p999=%.2f g_unshared=%.2f g_unshared_wait=%.2f "
	       "g_unshared_at=%.3f g_unshared_ctl=%.2f c_sent=%zu c_lost=%zu c_max=%.2f p_fifo=%d "
	       "p_pauses=%zu p_pause_max=%.2f\n",
	       g.sent, g_lost, ms(g_max), ms(p999), ms(worst), ms(worst_wait),
	       (double)worst_at / 1e9, ms(worst_ctl), c.sent, c_lost, ms(c_max), fifo, npauses,
	       ms(pause_max));
	return 0;
}
