/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A small read-only HTTP/1.1 endpoint inside the event loop, for metrics
 * and the status page: no thread, nothing blocking, nothing the query path
 * waits for.
 *
 * Limits, chosen so a misbehaving client costs little and never disturbs
 * DNS: GET (and HEAD) only; the request line and headers must arrive
 * within HTTP_REQUEST_MAX bytes and HTTP_IDLE_MS; at most HTTP_CONN_MAX
 * connections (a new one beyond that is closed at once), and at most
 * HTTP_CONN_PER_CLIENT of them from one address (a new one from a client
 * at its cap closes that client's oldest), so one client can never hold
 * every slot and lock the operator out; one request per
 * connection (Connection: close), so a response is written, resumed on
 * partial writes, and the socket closed.  Bad requests get 400, unknown
 * paths 404 (from the handler), other methods 405, oversized heads 431.
 */
#include <stddef.h>
#include <stdio.h>

struct loop;
struct http;

#define HTTP_REQUEST_MAX 4096
#define HTTP_CONN_MAX 8
#define HTTP_CONN_PER_CLIENT 2
#define HTTP_IDLE_MS 5000

/*
 * Answers one GET: writes the body into `body` (an open_memstream) and
 * returns the status (200, 404...); *content_type must be set for 200.
 * `path` is the request target without the query string; `query` is what
 * followed '?' ("" if nothing).
 */
typedef int (*http_handler_fn)(void *ctx, const char *path, const char *query, FILE *body,
                               const char **content_type);

/*
 * Listens on every "addr:port" ("127.0.0.1:9153", "[::1]:9153").  Returns
 * NULL with err filled when an address does not parse or cannot be bound.
 */
struct http *http_new(struct loop *l, char *const *addrs, size_t n_addrs, http_handler_fn fn,
                      void *ctx, char err[256]);
/* Closes every connection and listener.  NULL-safe. */
void http_free(struct http *h);
