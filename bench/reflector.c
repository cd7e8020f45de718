/* SPDX-License-Identifier: MIT */
/*
 * UDP reflector: the ceiling for one core on this machine.  It does what
 * the server's UDP path does minus the DNS work: recvmmsg a batch, set the
 * QR bit in each datagram, sendmmsg the batch back.  Comparing a load
 * generator's rate against this and against geoacme tells how much of the
 * cost is the kernel and how much is ours.
 *
 *   gcc -O2 -o reflector bench/reflector.c
 *   ./reflector 127.0.0.1 5300 [batch]      (batch 1..256, default 32)
 *
 * Prints datagrams per second to stderr once a second while traffic
 * flows, and a total on SIGINT/SIGTERM.
 *
 * REFLECTOR_EPOLL=1 also puts the socket in an epoll set that is never
 * waited on: what that registration alone costs per datagram (the kernel
 * calls the set's waiter for every datagram that arrives and every reply
 * it frees; doc/performance.md, "The kernel's side").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_BATCH 256
#define BUF_SIZE 4096   /* DNS queries are small; longer datagrams are truncated and dropped */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s ADDRESS PORT [BATCH]\n", argv[0]);
		return 2;
	}
	int batch = argc > 3 ? atoi(argv[3]) : 32;
	if (batch < 1 || batch > MAX_BATCH) {
		fprintf(stderr, "batch must be 1..%d\n", MAX_BATCH);
		return 2;
	}

	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
	                          .ai_socktype = SOCK_DGRAM };
	struct addrinfo *ai;
	int rc = getaddrinfo(argv[1], argv[2], &hints, &ai);
	if (rc != 0) {
		fprintf(stderr, "%s %s: %s\n", argv[1], argv[2], gai_strerror(rc));
		return 1;
	}
	int fd = socket(ai->ai_family, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		perror("socket/bind");
		return 1;
	}
	freeaddrinfo(ai);
	int sz = 4 << 20;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	/* Wake once a second even when idle, to print and to see a signal. */
	struct timeval tv = { 1, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

	if (getenv("REFLECTOR_EPOLL")) {
		int ep = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			perror("epoll");
			return 1;
		}
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	static uint8_t bufs[MAX_BATCH][BUF_SIZE];
	static struct sockaddr_storage names[MAX_BATCH];
	static struct iovec rx_iov[MAX_BATCH], tx_iov[MAX_BATCH];
	static struct mmsghdr rx[MAX_BATCH], tx[MAX_BATCH];
	for (int i = 0; i < batch; i++) {
		rx_iov[i] = (struct iovec){ bufs[i], BUF_SIZE };
		rx[i].msg_hdr.msg_iov = &rx_iov[i];
		rx[i].msg_hdr.msg_iovlen = 1;
		rx[i].msg_hdr.msg_name = &names[i];
		tx[i].msg_hdr.msg_iov = &tx_iov[i];
		tx[i].msg_hdr.msg_iovlen = 1;
		tx[i].msg_hdr.msg_name = &names[i];
	}

	unsigned long long total = 0, window = 0, batches = 0, dropped = 0;
	double start = now_s(), mark = start;
	while (!stop) {
		for (int i = 0; i < batch; i++)
			rx[i].msg_hdr.msg_namelen = sizeof(names[i]);
		/* MSG_WAITFORONE: block for the first, then take what is queued. */
		int n = recvmmsg(fd, rx, (unsigned)batch, MSG_WAITFORONE, NULL);
		if (n > 0) {
			int k = 0;
			for (int i = 0; i < n; i++) {
				if (rx[i].msg_len < 12 || (rx[i].msg_hdr.msg_flags & MSG_TRUNC))
					continue;
				bufs[i][2] |= 0x80;
				tx_iov[k] = (struct iovec){ bufs[i], rx[i].msg_len };
				tx[k].msg_hdr.msg_name = &names[i];
				tx[k].msg_hdr.msg_namelen = rx[i].msg_hdr.msg_namelen;
				k++;
			}
			int sent = 0;
			while (sent < k) {
				int r = sendmmsg(fd, tx + sent, (unsigned)(k - sent), 0);
				if (r > 0) {
					sent += r;
				} else if (r < 0 && errno == EINTR) {
					continue;
				} else {
					/* Skip the message that failed (see sendmmsg(2)). */
					sent++;
					dropped++;
				}
			}
			total += (unsigned)k;
			window += (unsigned)k;
			batches++;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			perror("recvmmsg");
			return 1;
		}
		double t = now_s();
		if (t - mark >= 1.0) {
			if (window)
				fprintf(stderr, "%.0f datagrams/s, %.1f per batch\n", window / (t - mark),
				        batches ? (double)window / batches : 0.0);
			window = batches = 0;
			mark = t;
		}
	}
	double dt = now_s() - start;
	fprintf(stderr, "total %llu datagrams in %.1f s (%.0f/s), %llu send errors\n", total, dt,
	        dt > 0 ? total / dt : 0.0, dropped);
	close(fd);
	return 0;
}
