/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * How `geoacme reload` learns whether a reload worked (systemctl reload
 * must fail when it did not).  The client binds an AF_UNIX datagram socket
 * in the abstract namespace, "geoacme-reload-<token>", with a random
 * 31-bit token, and sends SIGHUP with sigqueue(3) carrying that token.  The
 * server reloads and, for a queued SIGHUP, sends one datagram back to that
 * name: "ok <summary>" or "failed <reason>\n<problem>\n...".  A SIGHUP from
 * kill(1) reloads the same way and gets no reply.
 */
#include <stdbool.h>
#include <stdint.h>

#define RELOAD_REPLY_MAX 8192

/* Server side: sends the outcome to the client that queued `token`. */
void reload_reply(int32_t token, const char *msg);
