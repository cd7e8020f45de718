/* SPDX-License-Identifier: MIT */
/*
 * Replies sent later (see reply_later.h).  A token is made for each reply
 * a handler defers: that is an UPDATE's, never a query's, so its
 * allocation is off the query path.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/conf/log.h"
#include "core/net/net_internal.h"
#include "core/net/reply_later.h"
#include "core/wire/query.h"

struct reply_later {
	enum query_transport transport;
	/* UDP */
	int fd;
	struct sockaddr_storage to;
	socklen_t to_len;
	size_t ctl_len;
	union {
		struct cmsghdr align;
		uint8_t buf[NET_REPLY_CTL_MAX];
	} ctl;
	/* TCP; NULL once the connection has closed */
	struct tcp_conn *conn;
};

/* Gives the handler its token (or NULL: none could be made). */
static struct reply_later *hand_over(struct query *q, struct reply_later *r)
{
	struct query_later later = q->later;
	q->later = (struct query_later){ NULL, NULL };
	if (!r) {
		static struct log_limit lim;
		log_limited(&lim, LOG_ERROR, "out of memory: a deferred reply is lost");
	}
	later.take(later.ctx, r);
	return r;
}

void reply_later_udp(struct query *q, int fd, const void *ctl, size_t ctl_len)
{
	struct reply_later *r = ctl_len <= NET_REPLY_CTL_MAX ? calloc(1, sizeof(*r)) : NULL;
	if (r) {
		r->transport = QUERY_UDP;
		r->fd = fd;
		memcpy(&r->to, &q->client, q->client_len);
		r->to_len = q->client_len;
		if (ctl_len)
			memcpy(r->ctl.buf, ctl, ctl_len);
		r->ctl_len = ctl_len;
	}
	hand_over(q, r);
}

struct reply_later *reply_later_tcp(struct query *q, struct tcp_conn *c)
{
	struct reply_later *r = calloc(1, sizeof(*r));
	if (r) {
		r->transport = QUERY_TCP;
		r->fd = -1;
		r->conn = c;
	}
	return hand_over(q, r);
}

void reply_later_tcp_closed(struct reply_later *r)
{
	r->conn = NULL;
}

static void send_udp(struct reply_later *r, const uint8_t *msg, size_t len)
{
	static struct log_limit lim;
	struct iovec iov = { (void *)msg, len };
	struct msghdr m = {
		.msg_name = &r->to,
		.msg_namelen = r->to_len,
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = r->ctl_len ? r->ctl.buf : NULL,
		.msg_controllen = r->ctl_len,
	};
	ssize_t n;
	do
		n = sendmsg(r->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)   /* a full socket buffer too: the client retries */
		log_limited(&lim, LOG_WARN, "udp: a deferred reply: sendmsg: %s", strerror(errno));
}

void reply_later_send(struct reply_later *r, const uint8_t *msg, size_t len)
{
	if (!r)
		return;
	if (r->transport == QUERY_UDP)
		send_udp(r, msg, len);
	else if (r->conn)
		tcp_later_done(r->conn, msg, len);
	free(r);
}

void reply_later_drop(struct reply_later *r)
{
	if (!r)
		return;
	if (r->transport == QUERY_TCP && r->conn)
		tcp_later_done(r->conn, NULL, 0);
	free(r);
}
