/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * TLS for health checks (OpenSSL), non-blocking: the caller owns the
 * socket and the loop; every call here either makes progress or says
 * which readiness it waits for (HEALTH_TLS_WANT_READ / _WANT_WRITE), and
 * the caller re-arms the descriptor and calls again.
 *
 * The certificate is checked as a browser would: the chain against the
 * configured CA file or the system store, the name against `host` (DNS
 * name, or IP address when host is a literal).  SNI carries host unless it
 * is an IP literal (RFC 6066 section 3 forbids literals in SNI).  With
 * verify false, any certificate is accepted (the connection is still TLS).
 *
 * This is the only file of core that links libssl; health checks are the
 * only place core speaks TLS, and keeping it here keeps the rest of core
 * at libc + libmaxminddb + ldns.
 */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct health_tls_ctx;
struct health_tls;

enum { HEALTH_TLS_WANT_READ = -1001, HEALTH_TLS_WANT_WRITE = -1002 };

/* One per distinct (verify, ca_file).  ca_file NULL: the system store. */
struct health_tls_ctx *health_tls_ctx_new(bool verify, const char *ca_file, char err[256]);
void health_tls_ctx_free(struct health_tls_ctx *c);   /* NULL-safe */

/* A session on a connected non-blocking socket (not owned: the caller closes it). */
struct health_tls *health_tls_new(struct health_tls_ctx *c, int fd, const char *host,
                                  char err[256]);
void health_tls_free(struct health_tls *t);           /* NULL-safe */

/*
 * Each returns: handshake 0 when done; write/read the byte count (read: 0
 * at the end of the stream); or HEALTH_TLS_WANT_READ/_WRITE; or -EPROTO
 * (or another negative errno) with `reason` filled (certificate problems
 * are named, e.g. "certificate has expired").
 */
int health_tls_handshake(struct health_tls *t, char *reason, size_t cap);
ssize_t health_tls_write(struct health_tls *t, const void *buf, size_t len, char *reason,
                         size_t cap);
ssize_t health_tls_read(struct health_tls *t, void *buf, size_t len, char *reason, size_t cap);
