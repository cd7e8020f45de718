/* SPDX-License-Identifier: MIT */
/*
 * The control socket: accept, check the peer's uid, read one line, call
 * the handler, write "ok"/"error" and the text, close.  See control.h.
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
#include "core/net/loop.h"
#include "core/net/sock_drain.h"

static struct log_limit control_lim;

struct control_conn {
	struct control *c;
	int fd;                         /* -1: free slot */
	int64_t timer;
	unsigned uid;
	char req[CONTROL_REQUEST_MAX + 1];
	size_t req_len;
	char *resp;                     /* malloc'd: "ok\n..." or "error\n..." */
	size_t resp_len, resp_sent;
	bool draining;                  /* answered: read to EOF, then close */
	bool deferred;                  /* the answer comes later (control_defer) */
	uint32_t serial;                /* which connection this slot holds: tokens name it */
};

struct control {
	struct loop *loop;
	control_fn fn;
	void *ctx;
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t dev;                      /* the socket file we made, to remove only ours */
	ino_t ino;
	struct control_conn conn[CONTROL_CONN_MAX];
	struct control_conn *current;   /* the one whose command runs (control_defer) */
	uint32_t serial;
};

static void conn_close(struct control_conn *k)
{
	if (k->fd < 0)
		return;
	loop_del_fd(k->c->loop, k->fd);
	close(k->fd);
	loop_timer_cancel(k->c->loop, k->timer);
	free(k->resp);
	k->resp = NULL;
	k->fd = -1;
	k->deferred = false;
}

static void conn_write(struct loop *l, int fd, int events, void *arg)
{
	struct control_conn *k = arg;
	(void)events;
	while (k->resp_sent < k->resp_len) {
		ssize_t n = send(fd, k->resp + k->resp_sent, k->resp_len - k->resp_sent, MSG_NOSIGNAL);
		if (n > 0) {
			k->resp_sent += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;   /* resumed when writable */
		conn_close(k);
		return;
	}
	/* Half-close so the client reads everything, then wait for its EOF. */
	if (shutdown(fd, SHUT_WR) < 0) {
		conn_close(k);
		return;
	}
	k->draining = true;
	if (loop_mod_fd(l, fd, LOOP_READ) < 0)
		conn_close(k);
}

/* Starts writing "ok\n" or "error\n" followed by text. */
static void respond(struct control_conn *k, bool ok, const char *text, size_t len)
{
	const char *head = ok ? "ok\n" : "error\n";
	size_t hl = strlen(head);
	char *buf = malloc(hl + len + 2);
	if (!buf) {
		conn_close(k);
		return;
	}
	memcpy(buf, head, hl);
	memcpy(buf + hl, text, len);
	size_t n = hl + len;
	if (len && text[len - 1] != '\n')
		buf[n++] = '\n';
	k->resp = buf;
	k->resp_len = n;
	k->resp_sent = 0;
	if (loop_mod_fd(k->c->loop, k->fd, LOOP_WRITE) < 0) {
		conn_close(k);
		return;
	}
	conn_write(k->c->loop, k->fd, LOOP_WRITE, k);
}

static void respond_str(struct control_conn *k, bool ok, const char *text)
{
	respond(k, ok, text, strlen(text));
}

static void conn_timeout(struct loop *l, void *arg);

/* A whole line has arrived: split it into words and run it. */
static void serve(struct control_conn *k, char *line)
{
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
	         argc > 1 ? argv[1] : "", k->uid);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	if (!out) {
		respond_str(k, false, "out of memory");
		return;
	}
	k->c->current = k;
	int rc = k->c->fn(k->c->ctx, argc, argv, out);
	k->c->current = NULL;
	bool later = rc == CONTROL_LATER;
	if (fclose(out) != 0 && !later) {
		free(text);
		respond_str(k, false, "out of memory");
		return;
	}
	if (later && k->deferred) {
		/* No idle limit while the command runs: a reload may take minutes.
		 * What the client sends meanwhile is read and dropped; its EOF
		 * closes the connection (the answer then goes nowhere). */
		loop_timer_cancel(k->c->loop, k->timer);
		k->timer = 0;
	} else if (!later) {
		k->deferred = false;
		respond(k, rc == 0, text, len);
	}
	/* later and not deferred: control_answer() ran in the handler already. */
	free(text);
}

uint64_t control_defer(struct control *c)
{
	struct control_conn *k = c ? c->current : NULL;
	if (!k)
		return 0;
	k->deferred = true;
	return (uint64_t)k->serial << 8 | (uint64_t)(k - c->conn);
}

bool control_answer(struct control *c, uint64_t token, bool ok, const char *text)
{
	size_t i = (size_t)(token & 0xff);
	if (!c || !token || i >= CONTROL_CONN_MAX)
		return false;
	struct control_conn *k = &c->conn[i];
	if (k->fd < 0 || !k->deferred || k->serial != (uint32_t)(token >> 8))
		return false;   /* the client went away */
	k->deferred = false;
	/* The write and the drain that follows get a limit again. */
	loop_timer_cancel(c->loop, k->timer);
	k->timer = loop_timer_add(c->loop, CONTROL_IDLE_MS, conn_timeout, k);
	respond_str(k, ok, text);
	return true;
}

static void conn_drain(struct control_conn *k)
{
	if (!sock_drain(k->fd))
		conn_close(k);
}

static void conn_read(struct loop *l, int fd, int events, void *arg)
{
	struct control_conn *k = arg;
	(void)l;
	(void)events;
	if (k->draining || k->deferred) {
		conn_drain(k);
		return;
	}
	for (;;) {
		if (k->req_len == CONTROL_REQUEST_MAX) {
			respond_str(k, false, "request too long (at most 1024 bytes)");
			return;
		}
		ssize_t n = recv(fd, k->req + k->req_len, CONTROL_REQUEST_MAX - k->req_len, 0);
		if (n > 0) {
			k->req_len += (size_t)n;
			k->req[k->req_len] = '\0';
			if (memchr(k->req, '\0', k->req_len)) {
				respond_str(k, false, "NUL byte in the request");
				return;
			}
			char *nl = strchr(k->req, '\n');
			if (nl) {
				*nl = '\0';
				serve(k, k->req);
				return;
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		conn_close(k);   /* gone before a whole line */
		return;
	}
}

static void conn_timeout(struct loop *l, void *arg)
{
	struct control_conn *k = arg;
	(void)l;
	k->timer = 0;
	if (k->resp || k->draining) {
		conn_close(k);
		return;
	}
	respond_str(k, false, "no whole command line within 5 s");
	/* One more period to deliver it, then close whatever happens. */
	k->timer = loop_timer_add(k->c->loop, CONTROL_IDLE_MS, conn_timeout, k);
}

static void on_accept(struct loop *l, int fd, int events, void *arg)
{
	struct control *c = arg;
	(void)events;
	for (;;) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0)
			return;   /* EAGAIN, or an error the next readiness shows again */
		struct ucred cred;
		socklen_t clen = sizeof(cred);
		if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
			close(cfd);
			continue;
		}
		struct control_conn *k = NULL;
		for (size_t i = 0; i < CONTROL_CONN_MAX && !k; i++)
			if (c->conn[i].fd < 0)
				k = &c->conn[i];
		if (!k) {
			close(cfd);   /* busy: an operator's channel, not a service */
			continue;
		}
		k->fd = cfd;
		/* Never 0: a token is never 0. */
		k->serial = ++c->serial ? c->serial : ++c->serial;
		k->uid = (unsigned)cred.uid;
		k->req_len = 0;
		k->req[0] = '\0';
		k->resp = NULL;
		k->draining = false;
		k->timer = loop_timer_add(l, CONTROL_IDLE_MS, conn_timeout, k);
		if (k->timer < 0 || loop_add_fd(l, cfd, LOOP_READ, conn_read, k) < 0) {
			if (k->timer > 0)
				loop_timer_cancel(l, k->timer);
			close(cfd);
			k->fd = -1;
			continue;
		}
		if (cred.uid != 0 && cred.uid != geteuid()) {
			log_limited(&control_lim, LOG_WARN, "control: refused a connection from uid %u "
			            "(pid %ld): only uid %u (the server's) and root may use %s",
			            (unsigned)cred.uid, (long)cred.pid, (unsigned)geteuid(), c->path);
			/* Answered and drained like any other, so the client reads why. */
			respond_str(k, false, "permission denied: only the server's user and root may "
			            "use this socket");
		}
	}
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
	for (size_t i = 0; i < CONTROL_CONN_MAX; i++) {
		c->conn[i].fd = -1;
		c->conn[i].c = c;
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
	rc = loop_add_fd(l, c->fd, LOOP_READ, on_accept, c);
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
	free(c);
	errno = e;
	return NULL;
}

void control_free(struct control *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < CONTROL_CONN_MAX; i++)
		conn_close(&c->conn[i]);
	loop_del_fd(c->loop, c->fd);
	close(c->fd);
	/* Remove the file only if it is the one we made (not a successor's). */
	struct stat st;
	if (lstat(c->path, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
		unlink(c->path);
	free(c);
}
