/* SPDX-License-Identifier: MIT */
/*
 * The control socket: check the peer's uid, split its line into words, call
 * the handler, answer "ok"/"error" and the text.  The connections' bytes
 * (accept, read, write, idle limit, close) are conn_table.c's.  See
 * control.h.
 */
#include "core/net/control.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/conf/log.h"
#include "core/net/conn_table.h"
#include "core/net/loop.h"

static struct log_limit control_lim;

/* What the channel keeps of a connection; the bytes are the table's. */
struct control_conn {
	unsigned uid;
	long pid;
	bool deferred;                  /* the answer comes later (control_defer) */
	uint32_t serial;                /* which connection the slot holds: tokens name it */
};

struct control {
	struct loop *loop;
	control_fn fn;
	void *ctx;
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t dev;                      /* the socket file we made, to remove only ours */
	ino_t ino;
	struct conn_table *conns;
	struct control_conn conn[CONTROL_CONN_MAX];   /* by conn_index() */
	struct conn *current;           /* the one whose command runs (control_defer) */
	uint32_t serial;
};

/* Sends "ok\n" or "error\n" followed by text. */
static void respond(struct conn *k, bool ok, const char *text, size_t len)
{
	const char *head = ok ? "ok\n" : "error\n";
	size_t hl = strlen(head);
	char *buf = malloc(hl + len + 2);
	if (buf) {
		memcpy(buf, head, hl);
		memcpy(buf + hl, text, len);
		if (len && text[len - 1] != '\n')
			buf[hl + len++] = '\n';
	}
	conn_respond(k, buf, hl + len);
}

static void respond_str(struct conn *k, bool ok, const char *text)
{
	respond(k, ok, text, strlen(text));
}

/* A whole line has arrived: split it into words and run it. */
static void serve(void *arg, struct conn *k, char *line, char *nl)
{
	struct control *c = arg;
	struct control_conn *cc = &c->conn[conn_index(k)];
	*nl = '\0';
	char *argv[CONTROL_ARGS_MAX + 1];
	int argc = 0;
	for (char *save = NULL, *w = strtok_r(line, " \t\r", &save); w;
	     w = strtok_r(NULL, " \t\r", &save)) {
		if (argc == CONTROL_ARGS_MAX) {
			respond_str(k, false, "too many words (at most 16)");
			return;
		}
		argv[argc++] = w;
	}
	argv[argc] = NULL;
	if (argc == 0) {
		respond_str(k, false, "empty command (try: help)");
		return;
	}
	log_info("control: %s%s%s (uid %u)", argv[0], argc > 1 ? " " : "",
	         argc > 1 ? argv[1] : "", cc->uid);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	if (!out) {
		respond_str(k, false, "out of memory");
		return;
	}
	c->current = k;
	int rc = c->fn(c->ctx, argc, argv, out);
	c->current = NULL;
	bool later = rc == CONTROL_LATER;
	if (fclose(out) != 0 && !later) {
		free(text);
		respond_str(k, false, "out of memory");
		return;
	}
	if (later && cc->deferred) {
		/* No idle limit while the command runs: a reload may take minutes.
		 * What the client sends meanwhile is read and dropped; its EOF
		 * closes the connection (the answer then goes nowhere). */
		conn_hold(k);
	} else if (!later) {
		cc->deferred = false;
		respond(k, rc == 0, text, len);
	}
	/* later and not deferred: control_answer() ran in the handler already. */
	free(text);
}

uint64_t control_defer(struct control *c)
{
	struct conn *k = c ? c->current : NULL;
	if (!k)
		return 0;
	size_t i = conn_index(k);
	c->conn[i].deferred = true;
	return (uint64_t)c->conn[i].serial << 8 | (uint64_t)i;
}

bool control_answer(struct control *c, uint64_t token, bool ok, const char *text)
{
	size_t i = (size_t)(token & 0xff);
	if (!c || !token || i >= CONTROL_CONN_MAX)
		return false;
	struct conn *k = conn_table_slot(c->conns, i);
	struct control_conn *cc = &c->conn[i];
	if (!conn_is_open(k) || !cc->deferred || cc->serial != (uint32_t)(token >> 8))
		return false;   /* the client went away */
	cc->deferred = false;
	/* The write and the drain that follows get a limit again. */
	conn_idle_restart(k);
	respond_str(k, ok, text);
	return true;
}

static char *line_end(char *req)
{
	return strchr(req, '\n');
}

static void bad_request(void *arg, struct conn *k, enum conn_bad why)
{
	(void)arg;
	respond_str(k, false, why == CONN_TOO_LONG ? "request too long (at most 1024 bytes)"
	                                           : "NUL byte in the request");
}

static void idle(void *arg, struct conn *k)
{
	(void)arg;
	respond_str(k, false, "no whole command line within 5 s");
	/* One more period to deliver it, then close whatever happens. */
	conn_idle_restart(k);
}

/* Who is on the other end: a connection whose uid cannot be read is not taken. */
static struct conn *admit(void *arg, int fd, const struct sockaddr_storage *peer)
{
	struct control *c = arg;
	(void)peer;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0)
		return NULL;
	/* Full: closed; an operator's channel, not a service. */
	struct conn *k = conn_table_free_slot(c->conns);
	if (!k)
		return NULL;
	struct control_conn *cc = &c->conn[conn_index(k)];
	/* Never 0: a token is never 0. */
	cc->serial = ++c->serial ? c->serial : ++c->serial;
	cc->uid = (unsigned)cred.uid;
	cc->pid = (long)cred.pid;
	cc->deferred = false;
	return k;
}

static void opened(void *arg, struct conn *k)
{
	struct control *c = arg;
	const struct control_conn *cc = &c->conn[conn_index(k)];
	if (cc->uid == 0 || cc->uid == geteuid())
		return;
	log_limited(&control_lim, LOG_WARN, "control: refused a connection from uid %u (pid %ld): "
	            "only uid %u (the server's) and root may use %s", cc->uid, cc->pid,
	            (unsigned)geteuid(), c->path);
	/* Answered and drained like any other, so the client reads why. */
	respond_str(k, false, "permission denied: only the server's user and root may "
	            "use this socket");
}

/*
 * A socket file already at the path: left by a server that was killed
 * (nobody accepts: ECONNREFUSED) it is removed; one that answers belongs to
 * a running server.  Returns 0 when the path is free now.
 */
static int clear_stale(const char *path, const struct sockaddr_un *sa, char err[256])
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : (snprintf(err, 256, "control_socket %s: %s", path,
		                                       strerror(errno)), -1);
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, 256, "control_socket %s: exists and is not a socket; remove it or "
		         "choose another path", path);
		return -1;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, 256, "control_socket %s: %s", path, strerror(errno));
		return -1;
	}
	int rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	int e = errno;
	close(fd);
	if (rc == 0) {
		snprintf(err, 256, "control_socket %s: another server is listening on it (stop it, "
		         "or give this one another control_socket)", path);
		return -1;
	}
	if (e != ECONNREFUSED) {
		snprintf(err, 256, "control_socket %s: cannot tell whether it is in use: %s", path,
		         strerror(e));
		return -1;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		snprintf(err, 256, "control_socket %s: cannot remove the stale socket: %s", path,
		         strerror(errno));
		return -1;
	}
	log_info("control: removed a stale socket at %s (left by a server that did not stop "
	         "cleanly)", path);
	return 0;
}

struct control *control_new(struct loop *l, const char *path, control_fn fn, void *ctx,
                            char err[256])
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, 256, "control_socket %s: longer than %zu bytes (a Unix socket's limit)",
		         path, sizeof(sa.sun_path) - 1);
		return NULL;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	struct control *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, 256, "control: out of memory");
		return NULL;
	}
	c->loop = l;
	c->fn = fn;
	c->ctx = ctx;
	c->fd = -1;
	memcpy(c->path, sa.sun_path, sizeof(c->path));
	const struct conn_table_ops ops = {
		.ctx = c, .admit = admit, .opened = opened, .request_end = line_end,
		.request = serve, .bad = bad_request, .idle = idle,
	};
	c->conns = conn_table_new(l, CONTROL_CONN_MAX, CONTROL_REQUEST_MAX, CONTROL_IDLE_MS, &ops);
	if (!c->conns) {
		snprintf(err, 256, "control: out of memory");
		errno = ENOMEM;
		goto fail;
	}
	if (clear_stale(path, &sa, err) < 0)
		goto fail;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		snprintf(err, 256, "control_socket %s: %s", path, strerror(errno));
		goto fail;
	}
	/* Made 0600 from the start: no moment where others could connect. */
	mode_t old = umask(0177);
	int rc = bind(c->fd, (const struct sockaddr *)&sa, sizeof(sa));
	int e = errno;
	umask(old);
	if (rc < 0) {
		snprintf(err, 256, "control_socket %s: %s", path, strerror(e));
		errno = e;
		goto fail;
	}
	struct stat st;
	if (chmod(path, 0600) < 0 || stat(path, &st) < 0 || listen(c->fd, 8) < 0) {
		snprintf(err, 256, "control_socket %s: %s", path, strerror(errno));
		unlink(path);
		goto fail;
	}
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	rc = conn_table_listen(c->conns, c->fd);
	if (rc < 0) {
		snprintf(err, 256, "control_socket %s: %s", path, strerror(-rc));
		unlink(path);
		goto fail;
	}
	log_info("control: listening on %s", path);
	return c;
fail:
	e = errno;   /* the caller may tell "not allowed here" (EACCES) from the rest */
	if (c->fd >= 0)
		close(c->fd);
	conn_table_free(c->conns);
	free(c);
	errno = e;
	return NULL;
}

void control_free(struct control *c)
{
	if (!c)
		return;
	conn_table_free(c->conns);
	loop_del_fd(c->loop, c->fd);
	close(c->fd);
	/* Remove the file only if it is the one we made (not a successor's). */
	struct stat st;
	if (lstat(c->path, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
		unlink(c->path);
	free(c);
}
