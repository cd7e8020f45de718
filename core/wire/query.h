/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The per-query context.  A fixed number are made at start with their
 * buffers; the query path fills one in place, answers into q->tx, and
 * query_reset() clears it for the next datagram (no malloc, no free).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "core/wire/dname.h"
#include "core/wire/edns.h"

struct arena;
struct query;

#define QUERY_MSG_MAX 65535

/*
 * An answer of several messages (a zone transfer over TCP, RFC 5936 2.2).
 * A handler that answers this way leaves q->tx_len at 0 and fills
 * q->stream; the TCP layer then owns the stream and calls next() whenever
 * its output queue has room, each time with q->tx pointing at fresh space
 * of q->tx_cap bytes, and frames whatever next() wrote (q->tx_len, 0 =
 * nothing this time).  next() returns 1 while more messages follow, 0
 * after the last, or a negative errno (the connection is closed); or
 * QUERY_STREAM_LATER when it did a slice of work and wrote nothing: it is
 * called again in a later loop round, so the loop answers other queries
 * in between (a transfer listing a big zone, issue #26).  Later
 * queries on the connection wait until the stream has ended, so answers
 * stay in order.  release() is called exactly once: at the end, or when
 * the connection goes away first.  Only TCP takes streams; over UDP a
 * handler must not set one.
 */
#define QUERY_STREAM_LATER 2
struct query_stream {
	void *ctx;
	int (*next)(void *ctx, struct query *q);
	void (*release)(void *ctx);
};

/*
 * A reply that comes later (an UPDATE acknowledged once its commit is on
 * disk).  A handler that answers this way leaves q->tx_len at 0 and fills
 * q->later; once the handler has returned, the network layer calls take()
 * with a token for this message's client (core/net/reply_later.h: whoever
 * takes it sends the reply through it, or drops it, exactly once), or
 * with NULL when it cannot make one (out of memory: no reply).  Over TCP
 * the connection answers nothing more until then, so replies stay in order.
 */
struct reply_later;
struct query_later {
	void *ctx;
	void (*take)(void *ctx, struct reply_later *r);
};

enum query_transport { QUERY_UDP = 0, QUERY_TCP = 1 };

enum {
	RCODE_NOERROR = 0, RCODE_FORMERR = 1, RCODE_SERVFAIL = 2, RCODE_NXDOMAIN = 3,
	RCODE_NOTIMP = 4, RCODE_REFUSED = 5, RCODE_YXDOMAIN = 6, RCODE_YXRRSET = 7,
	RCODE_NXRRSET = 8, RCODE_NOTAUTH = 9, RCODE_NOTZONE = 10,
	RCODE_BADVERS = 16, RCODE_BADSIG = 16, RCODE_BADKEY = 17, RCODE_BADTIME = 18,
	RCODE_BADTRUNC = 22, RCODE_BADCOOKIE = 23,
};
enum { OPCODE_QUERY = 0, OPCODE_NOTIFY = 4, OPCODE_UPDATE = 5 };

/* An address and port as dnstap records them (4 or 16 bytes). */
struct query_addr {
	uint8_t family;              /* 4 or 6; 0: unknown */
	uint16_t port;
	uint8_t addr[16];
};

struct query {
	/* Input, set by the network layer. */
	const uint8_t *rx;
	size_t rx_len;
	struct sockaddr_storage client;
	socklen_t client_len;
	enum query_transport transport;
	bool xdp;                    /* UDP that came over AF_XDP: counted apart, answered alike */
	struct query_addr local;     /* where it arrived: our address and port (dnstap) */

	/* Parsed by packet_parse(). */
	uint16_t id;
	uint16_t flags;              /* header flags word as received */
	uint8_t opcode;
	uint16_t qdcount, ancount, nscount, arcount;
	uint8_t qname[DNAME_BUF];    /* lowercase */
	uint8_t qname_orig[DNAME_BUF];
	uint8_t qname_len;
	/* Worked out once at parse, so lookups need not walk the name again. */
	uint8_t qname_labels;        /* label count (root = 0) */
	uint8_t qname_label_off[DNAME_LABELS_MAX];   /* where each label starts */
	uint32_t qname_hash;         /* dname_hash(qname, qname_len) */
	uint16_t qtype, qclass;
	size_t question_end;         /* offset just past the question */
	struct edns edns;
	size_t opt_offset;           /* where the OPT RR starts, 0 if none */
	size_t tsig_offset;          /* where a TSIG RR (last in additional) starts, 0 if none */

	/* Output. */
	uint8_t *tx;
	size_t tx_cap;               /* buffer size */
	size_t tx_len;               /* response length; 0 = send nothing */
	size_t max_size;             /* what this response may use (UDP: EDNS size, capped) */
	uint8_t rcode;               /* extended rcodes are split into OPT on output */
	uint16_t udp_advertise;      /* the UDP size we put in our OPT record */
	bool question_ok;            /* the question parsed: echo it in errors */
	bool edns_ok;                /* the OPT record parsed: include ours in errors */
	bool cookie_valid;           /* the client's server cookie checked out */
	bool cookie_out_set;         /* return cookie_out in our OPT */
	bool tc;                     /* truncated: set by packet_write or a slip */
	uint8_t cookie_out[16];      /* server cookie to return */
	struct query_stream stream;  /* next != NULL: more messages follow (TCP only) */
	struct query_later later;    /* take != NULL: the reply comes later */
	const uint8_t *nsid_out;     /* our identity, sent when the client asked (RFC 5001) */
	uint8_t nsid_out_len;

	struct arena *arena;         /* per-query scratch, reset after each reply */
	void *server;                /* the serving context (struct server), opaque here */
};

/* Clears the per-query fields; keeps buffers and arena (reset, no free). */
void query_reset(struct query *q);
/* Client address as family + bytes (IPv4-mapped IPv6 is unwrapped). */
int query_client_addr(const struct query *q, uint8_t addr[16]);   /* returns 4 or 6 */
/* A socket address as a query_addr (IPv4-mapped IPv6 unwrapped); family 0 for another kind. */
void query_addr_from(struct query_addr *out, const struct sockaddr_storage *sa);
