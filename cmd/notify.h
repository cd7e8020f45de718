/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The service manager's readiness protocol (systemd's sd_notify), spoken by
 * hand: one datagram of newline-separated KEY=VALUE lines to the AF_UNIX
 * socket named by $NOTIFY_SOCKET (a path, or "@name" for the abstract
 * namespace).  Without $NOTIFY_SOCKET every call does nothing.
 *
 *   READY=1                      after the sockets are bound and the first
 *                                generation serves, and after each reload
 *   RELOADING=1 + MONOTONIC_USEC when a SIGHUP reload starts (systemd wants
 *                                the CLOCK_MONOTONIC time with it)
 *   STOPPING=1                   on SIGTERM/SIGINT
 *   STATUS=...                   a line for `systemctl status`
 *
 * notify_open() runs before the privilege drop, so the socket is reachable
 * whatever the new user may open.
 */

/* Opens and connects the socket; 0 (also when there is none) or -errno. */
int notify_open(void);
/* Sends one message (printf format, KEY=VALUE lines); failures are logged once. */
void notify_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* CLOCK_MONOTONIC in microseconds, for MONOTONIC_USEC=. */
unsigned long long notify_monotonic_usec(void);
void notify_close(void);
