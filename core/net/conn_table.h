/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A fixed table of stream connections that each carry one request and one
 * answer, inside the event loop (no thread, nothing blocking): what the
 * HTTP endpoint (http.c) and the control channel (control.c) share.  They
 * differ in what a request is and how it is answered, which their owner
 * says through conn_table_ops; not in how the bytes come and go, which is
 * here:
 *
 *  - accept: every pending connection of a listening socket; the owner
 *    picks its slot (admit) or refuses it (closed at once);
 *  - read: into the slot's buffer of request_max bytes until the owner
 *    finds a whole request in it; a request that would not fit, or that
 *    holds a NUL byte, goes to the owner as bad (it answers);
 *  - write: the owner's answer, resumed when the socket is writable again;
 *    then a half-close, and the rest of what the client sends is read and
 *    dropped until its EOF: closing with request bytes unread would make
 *    the kernel send RST, and the client could lose the answer;
 *  - idle: each connection has idle_ms from its accept; when that ends
 *    before an answer started, the owner may answer (idle) or it is closed;
 *    once answering, the end of idle_ms closes it whatever happens.
 *
 * The owner keeps its own state of a connection in an array of its own,
 * indexed by conn_index().
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loop;
struct sockaddr_storage;
struct conn;
struct conn_table;

/* Why a request was not read to its end. */
enum conn_bad {
	CONN_TOO_LONG,   /* request_max bytes and still no whole request */
	CONN_NUL,        /* a NUL byte in it */
};

struct conn_table_ops {
	void *ctx;
	/*
	 * A new connection on fd from peer (the address accept gave; its port
	 * is the owner's to ignore): returns its slot, one conn_table_free()
	 * found or one the owner closed to make room, or NULL to refuse it (fd
	 * is then closed).  May read the socket's options (SO_PEERCRED).
	 */
	struct conn *(*admit)(void *ctx, int fd, const struct sockaddr_storage *peer);
	/* Optional: the connection is in its slot and being read (the owner
	 * may answer at once, e.g. to refuse it with a reason). */
	void (*opened)(void *ctx, struct conn *c);
	/* The end of a whole request in req (NUL-terminated, no NUL inside),
	 * or NULL while it is incomplete. */
	char *(*request_end)(char *req);
	/* A whole request: req is the slot's buffer, end what request_end
	 * found (the owner may write into req).  Answer it with conn_respond(),
	 * now or later (conn_hold). */
	void (*request)(void *ctx, struct conn *c, char *req, char *end);
	/* A request that cannot be read (above): answer it. */
	void (*bad)(void *ctx, struct conn *c, enum conn_bad why);
	/* Optional: idle_ms ended with no answer started.  The owner answers
	 * (and may give the answer one more period, conn_idle_restart); NULL:
	 * the connection is closed. */
	void (*idle)(void *ctx, struct conn *c);
};

/* Slots and buffers are made here, for the process's life; NULL: out of memory. */
struct conn_table *conn_table_new(struct loop *l, size_t max_conns, size_t request_max,
                                  uint64_t idle_ms, const struct conn_table_ops *ops);
/* Closes every connection; the listening sockets stay the owner's.  NULL-safe. */
void conn_table_free(struct conn_table *t);
/* Accepts the connections of listening socket fd (non-blocking) from now
 * on.  0 or a negative errno.  The owner calls loop_del_fd() before it
 * closes fd. */
int conn_table_listen(struct conn_table *t, int fd);

/* Slot i (0 .. max_conns - 1), open or not: for an owner's admit(). */
struct conn *conn_table_slot(struct conn_table *t, size_t i);
/* The first slot that holds no connection, or NULL. */
struct conn *conn_table_free_slot(struct conn_table *t);

size_t conn_index(const struct conn *c);
bool conn_is_open(const struct conn *c);
/*
 * Sends buf (malloc'd, len bytes; ownership passes here, freed at close),
 * then half-closes and waits for the client's EOF.  buf NULL: closes (the
 * owner could not make its answer).
 */
void conn_respond(struct conn *c, char *buf, size_t len);
/*
 * The request is answered later (conn_respond): no idle limit meanwhile,
 * and what the client sends is read and dropped; its EOF closes the
 * connection.
 */
void conn_hold(struct conn *c);
/* A new idle_ms from now (one more period to deliver an answer). */
void conn_idle_restart(struct conn *c);
/* Closes it and frees its slot (nothing if it is not open). */
void conn_close(struct conn *c);
