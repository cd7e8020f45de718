/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * dnstap out: every message answered, as AUTH_QUERY and AUTH_RESPONSE
 * (UPDATE_QUERY and UPDATE_RESPONSE for opcode UPDATE), streamed to a
 * Frame Streams collector on a Unix socket (fstrm_capture, or a dnstap
 * pipeline's reader).
 *
 * Written from the event loop, never blocking it: the query path encodes
 * each message (core/net/dnstap_encode.h) into a buffer made at start and
 * returns; the socket is written with non-blocking sends when epoll says it
 * is writable, once per loop round for everything queued.  A collector that
 * reads slowly, is stopped, or is gone costs the answers nothing: what does
 * not fit in the buffer, or arrives while there is no connection, is
 * dropped and counted (geoacme_dnstap_frames_total{result="dropped"}), and
 * a lost connection is retried on loop timers with a backoff of 100 ms
 * doubling to 5 s.
 *
 * The Frame Streams protocol is written here by hand, not with libfstrm:
 * libfstrm's writer (fstrm_iothr) runs its own I/O thread and queues
 * through it, and this server is one thread that owns its sockets.  The
 * bidirectional handshake over a stream socket: we send READY with the
 * content type "protobuf:dnstap.Dnstap", the collector answers ACCEPT with
 * the types it takes, we send START, then data frames (a 32-bit big-endian
 * length and the protobuf); STOP before we close.  A control frame is an
 * escape (a zero length), its own length, its type (ACCEPT 1, START 2,
 * STOP 3, READY 4, FINISH 5) and fields (CONTENT_TYPE 1: length, bytes).
 */
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct loop;
struct query;
struct dnstap;

struct dnstap_config {
	const char *path;       /* the collector's Unix socket */
	uint32_t sample;        /* log one exchange in N (>= 1) */
	bool queries;           /* AUTH_QUERY for every other opcode */
	bool responses;         /* AUTH_RESPONSE */
	bool updates;           /* UPDATE_QUERY and UPDATE_RESPONSE */
	const char *identity;   /* Dnstap.identity; NULL: the host name */
	const char *version;    /* Dnstap.version, e.g. "geoacme 0.1.0" */
};

/*
 * Allocates the buffer and starts connecting (a collector that is not
 * there yet is retried, not an error).  Returns NULL with err filled when
 * the path cannot be a Unix socket path or memory runs out.
 */
struct dnstap *dnstap_new(struct loop *l, const struct dnstap_config *c, char err[256]);
/* Flushes what it can without blocking, sends STOP, closes.  NULL-safe. */
void dnstap_free(struct dnstap *d);

/* The wall clock for a message's times (the loop's clock offset applied). */
void dnstap_clock(const struct dnstap *d, struct timespec *ts);
/*
 * Called by dispatch for every message, once it is answered: q->rx is the
 * query, q->tx and q->tx_len the response (none when 0: dropped, or a reply
 * that comes later, or a transfer stream).  `received` is dnstap_clock()
 * from before the message was handled.  Allocates nothing.
 */
void dnstap_note(struct dnstap *d, const struct query *q, const struct timespec *received);
