/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Replies sent later (core/wire/query.h, struct query_later): a handler
 * that cannot answer yet (an UPDATE is acknowledged only once its commit
 * is on disk, and the disk is not waited for on the loop) gets a token for
 * the message's client and, later, sends the reply through it.
 *
 * UDP: the token holds the socket, the client's address and, on a socket
 * bound to a wildcard address, the address the query arrived at, so the
 * reply leaves from it (as udp.c answers); the reply is one sendmsg, outside
 * any batch.  TCP: the token holds the connection, which answers nothing
 * more until the reply is sent or dropped (replies stay in order) and which
 * the idle timeout leaves alone meanwhile; a connection that closes first
 * makes its token dead: sending through it then only frees it.
 *
 * Whoever took a token owns it and ends it exactly once, with
 * reply_later_send() or reply_later_drop(), never from inside the handler
 * call that made it (take() only stores it).
 */
#include <stddef.h>
#include <stdint.h>

struct reply_later;

/* Sends msg[0 .. len) as the reply (len at most 65535) and frees the token. */
void reply_later_send(struct reply_later *r, const uint8_t *msg, size_t len);
/* Frees the token without a reply (a TCP connection then goes on answering). */
void reply_later_drop(struct reply_later *r);
