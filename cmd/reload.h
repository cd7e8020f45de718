/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * How `geoacme reload` learns whether a reload worked (systemctl reload
 * must fail when it did not).  The client binds an AF_UNIX datagram socket
 * in the abstract namespace, "geoacme-reload-<token>", with a random
 * 31-bit token, and sends RELOAD_SIGNAL with sigqueue(3) carrying that
 * token.  The server reloads and, for a queued signal, sends one datagram
 * back to that name: "ok <summary>" or "failed <reason>\n<problem>\n...".
 * A SIGHUP from kill(1) reloads the same way and gets no reply.
 *
 * RELOAD_SIGNAL is realtime because the kernel queues every instance of it
 * with its value, where a SIGHUP sent while another is pending is dropped
 * (sigqueue still returning 0), and with it the client's token.  Its default
 * action kills, so the client sends it only to a process that blocks or
 * catches it (a server reading it from its signalfd blocks it), and queues a
 * SIGHUP to any other (an older geoacme), as it did before.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#define RELOAD_SIGNAL (SIGRTMIN + 1)
#define RELOAD_SIGNAL_NAME "SIGRTMIN+1"

#define RELOAD_REPLY_MAX 8192

/* Server side: sends the outcome to the client that queued `token`. */
void reload_reply(int32_t token, const char *msg);
