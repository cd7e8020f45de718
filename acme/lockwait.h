/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * UPDATEs that found their zone's database locked by another process (an
 * operator's sqlite3 in a write transaction), waiting without blocking
 * the loop (issue #26.2).
 *
 * The server's connection has no busy timeout (storage/db.h): a commit
 * that cannot take SQLite's write lock fails at once with -EBUSY, having
 * changed nothing.  Its UPDATE is held here with a copy of the request,
 * its reply comes later (core/net/reply_later.h), and every
 * LOCKWAIT_RETRY_MS a loop timer looks whether the lock is free (one
 * BEGIN IMMEDIATE + ROLLBACK, no wait) and, when it is, handles the
 * UPDATE again from the start (prerequisites are checked against the
 * zone as it is then).  An UPDATE that still finds the lock taken
 * LOCKWAIT_MS after it arrived is answered SERVFAIL, having changed
 * nothing: the bound the old 2 s busy timeout gave, but queries are
 * answered all along.  UPDATEs of a zone are handled in the order they
 * arrived: once one waits, the next ones wait behind it.
 */
#include <stdbool.h>
#include <stdint.h>

#define LOCKWAIT_MS 2000
#define LOCKWAIT_RETRY_MS 10

struct acme_key;
struct acme_zone;
struct loop;
struct lockwait;
struct query;

/*
 * Handles a held UPDATE again, in q (the request's copy, a reply buffer
 * and an arena of the item's own; tx_len 0).  `give_up`: the last try,
 * whose outcome goes out whatever it is.  Returns -EBUSY to wait more
 * (never when give_up), else 0 with the outcome in q as a handler leaves
 * it: q->tx_len bytes to send, or q->later set to take the reply's token.
 */
typedef int (*lockwait_fn)(void *ctx, struct query *q, const struct acme_key *key,
                           bool give_up);

struct lockwait *lockwait_new(struct loop *l, lockwait_fn fn, void *ctx);   /* NULL: no memory */
/* NULL-safe.  Whatever still waits is dropped unanswered (and uncommitted). */
void lockwait_free(struct lockwait *w);
/* Some UPDATE of az waits: a new one must wait behind it. */
bool lockwait_waiting(const struct lockwait *w, const struct acme_zone *az);
/*
 * Holds the UPDATE in q (handled by a handler call now in progress): copies
 * the request, sets q->tx_len 0 and q->later.  0, or -ENOMEM (q unchanged).
 */
int lockwait_hold(struct lockwait *w, struct acme_zone *az, struct query *q,
                  const struct acme_key *key);
/* The zone goes away: its waiting UPDATEs are dropped unanswered. */
void lockwait_forget(struct lockwait *w, const struct acme_zone *az);
