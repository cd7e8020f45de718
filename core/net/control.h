/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The control channel's socket (`geoacme ctl`, doc/operations.md "The
 * control channel"): a Unix stream socket inside the event loop, no thread,
 * nothing blocking.  This file knows the transport only; what the words
 * mean is the handler's (cmd/ctl_table.c lists the commands).
 *
 * The protocol, one exchange per connection:
 *   client: one line, the command and its arguments separated by blanks,
 *           ended by "\n" (at most CONTROL_REQUEST_MAX bytes, at most
 *           CONTROL_ARGS_MAX words);
 *   server: "ok\n" or "error\n", then the answer's text, then it closes.
 * A request that is too long, has no words, holds a NUL or does not end
 * in time (CONTROL_IDLE_MS) gets "error" and a reason.
 *
 * Who may talk to it: the socket file is made mode 0600 (owner only), and
 * every connection's SO_PEERCRED uid must be the server's effective uid or
 * 0.  The mode keeps other users from connecting at all; the uid check
 * still refuses them if the file's mode or a folder's ACL is loosened, or
 * the descriptor is passed on.  Root is allowed because root could read or
 * signal the server anyway (`sudo geoacme ctl` is the common way to run it).
 *
 * Start: a socket file left by a server that died (kill -9) is replaced; a
 * socket some process still answers on is an error ("another server is
 * listening"), and so is a path that exists and is not a socket.  The file
 * is removed at control_free() when it is still ours.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct loop;
struct control;

#define CONTROL_REQUEST_MAX 1024
#define CONTROL_ARGS_MAX 16
#define CONTROL_CONN_MAX 4
#define CONTROL_IDLE_MS 5000

/*
 * Runs one command.  argv[0] is the command; writes the answer's text to
 * `out` and returns 0 ("ok"), or a negative errno with the reason written
 * to `out` ("error").  Runs on the loop: it must not block.
 */
typedef int (*control_fn)(void *ctx, int argc, char **argv, FILE *out);
/*
 * A command that answers later (a reload being built beside the loop):
 * its handler calls control_defer() and returns CONTROL_LATER; what it
 * wrote to `out` is dropped.  The connection then waits with no idle
 * limit; control_answer() sends "ok"/"error" and text, once.  A token
 * whose client went away (or was answered) is refused: false.
 */
#define CONTROL_LATER 1
uint64_t control_defer(struct control *c);   /* 0: no command runs */
bool control_answer(struct control *c, uint64_t token, bool ok, const char *text);

/* Binds and listens at `path` (see above).  NULL with err filled on failure. */
/* NULL with err on failure; errno then says why (EACCES: the folder is not
 * ours to write). */
struct control *control_new(struct loop *l, const char *path, control_fn fn, void *ctx,
                            char err[256]);
/* Closes every connection and the listener, removes the socket file.  NULL-safe. */
void control_free(struct control *c);
