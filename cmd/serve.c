/* SPDX-License-Identifier: MIT */
/*
 * geoacme serve: bind, drop privileges, build the first generation, answer
 * until SIGTERM/SIGINT; SIGHUP rebuilds the generation beside the running
 * one, on the builder thread (cmd/builder.h), and swaps it in only when it
 * is complete.  SIGHUPs during a build coalesce into one build after it.
 * `geoacme reload` sends RELOAD_SIGNAL instead, handled as a queued SIGHUP.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acme/acme_zone.h"
#include "cmd/builder.h"
#include "cmd/cmd.h"
#include "cmd/ctl_commands.h"
#include "cmd/notify.h"
#include "cmd/privs.h"
#include "cmd/reload.h"
#include "cmd/runtime.h"
#include "cmd/site_admin.h"
#include "cmd/status.h"
#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/conf/metrics.h"
#include "core/conf/side_thread.h"
#include "core/conf/sysclock.h"
#include "core/geo/health.h"
#include "core/net/control.h"
#include "core/net/http.h"
#include "core/net/loop.h"
#include "core/net/net.h"
#include "core/test_hooks.h"
#include "core/wire/query.h"
#include "core/zone/zone_table.h"

/* `geoacme reload` clients answered per build; more get "failed busy" at once. */
#define RELOAD_WAITERS 16
/*
 * Builds of one reload in a row sent back because an UPDATE committed
 * during the build needs its zone built whole (on_built); the one after
 * them builds that zone on the loop, so such UPDATEs cannot keep a
 * reload from ever being served.
 */
#define REBUILDS_MAX 3
/*
 * A reload whose zone-file edit commits to a database that is locked (an
 * operator's sqlite3, or a write of this process under way: a staged
 * UPDATE, a compaction's journal) waits for the lock, looking every
 * RELOAD_LOCK_RETRY_MS, the previous configuration answering; after
 * RELOAD_LOCKWAIT_MS it fails, having changed nothing.  Longer than an
 * UPDATE's bound (acme/lockwait.h): an operator asked for this one.
 */
#define RELOAD_LOCKWAIT_MS 10000
#define RELOAD_LOCK_RETRY_MS 10

struct server {
	const char *config_path;
	int port;                    /* -p/--port; -1 = listen_port from the config */
	char listen[1024];           /* the sockets' settings, to notice a reload changing them */
	struct loop *loop;
	struct net *net;
	struct generation *gen;
	struct http *http;           /* NULL: no http_listen */
	struct status_ctx status;
	struct control *control;     /* NULL: control_socket = "" */
	struct site_admin *admin;    /* the sites' admin states (kept on disk) */
	struct ctl_ctx ctl;
	struct builder *builder;     /* reloads (builder.h) */
	/* `geoacme reload` clients (reload.h) waiting for the build under way,
	 * and for the one after it (SIGHUPs that came during a build). */
	int32_t tokens[RELOAD_WAITERS], next_tokens[RELOAD_WAITERS];
	size_t n_tokens, n_next_tokens;
	/* `geoacme ctl reload` connections waiting likewise (control.h tokens). */
	uint64_t ctl_tokens[RELOAD_WAITERS], next_ctl_tokens[RELOAD_WAITERS];
	size_t n_ctl_tokens, n_next_ctl_tokens;
	bool reload_again;           /* a SIGHUP came during the build */
	unsigned rebuilds;           /* builds of this reload sent back (REBUILDS_MAX) */
	/* A built generation waiting for a database lock (wait_for_lock). */
	struct generation *locked;
	int64_t lock_timer;
	uint64_t lock_since_ms;      /* when this reload began to wait */
	bool lock_waiting;
};

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: geoacme serve -c FILE [-p PORT]\n"
	        "\n"
	        "Answers DNS queries in the foreground until SIGTERM or SIGINT.\n"
	        "SIGHUP reloads the config and zone files; on error the old ones stay.\n"
	        "Logs go to stderr; one line says when the server is ready.\n"
	        "\n"
	        "With $NOTIFY_SOCKET set (systemd Type=notify) it reports READY=1,\n"
	        "RELOADING=1 and STOPPING=1; `geoacme reload --pid PID` reloads and\n"
	        "reports whether the reload worked.\n"
	        "\n"
	        "  -c, --config FILE   the TOML configuration\n"
	        "  -p, --port PORT     listen on PORT instead of listen_port (0: any free port)\n"
	        "  -h, --help          this help\n");
}

/* The settings bound at start, as one comparable string. */
static void listen_summary(const struct config *c, int port, char *out, size_t cap)
{
	size_t n = (size_t)snprintf(out, cap, "port %u:",
	                            (unsigned)(port >= 0 ? port : c->listen_port));
	for (size_t i = 0; i < c->n_listen_ipv4 && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, " %s", c->listen_addrs_ipv4[i]);
	for (size_t i = 0; i < c->n_listen_ipv6 && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, " %s", c->listen_addrs_ipv6[i]);
	for (size_t i = 0; i < c->n_xdp_listen && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? " " : "; xdp ", c->xdp_listen[i]);
	if (n < cap)
		snprintf(out + n, cap - n, "; user %s; control_socket %s", c->user ? c->user : "(none)",
		         c->control_socket ? c->control_socket : "(off)");
}

static void on_stop(struct loop *l, void *arg)
{
	(void)arg;
	log_info("stopping");
	notify_send("STOPPING=1\nSTATUS=stopping");
	loop_stop(l);
}

/* The outcome of a reload, for `geoacme reload` and the service manager. */
static void reload_done(struct server *s, bool ok, const char *summary, const struct diag *d)
{
	notify_send("READY=1\nSTATUS=%s%s", ok ? "" : "reload failed, serving the previous "
	            "configuration: ", summary);
	char msg[RELOAD_REPLY_MAX];
	size_t n = (size_t)snprintf(msg, sizeof(msg), "%s %s", ok ? "ok" : "failed", summary);
	for (size_t i = 0; d && i < d->n && n < sizeof(msg); i++)
		n += (size_t)snprintf(msg + n, sizeof(msg) - n, "\n%s", d->msgs[i]);
	for (size_t i = 0; i < s->n_tokens; i++)
		reload_reply(s->tokens[i], msg);
	s->n_tokens = 0;
	/* `geoacme ctl reload` says it as it did when it built on the loop. */
	char text[RELOAD_REPLY_MAX];
	n = (size_t)snprintf(text, sizeof(text), "%s%s", ok ? "reloaded: " : "reload failed, still "
	                     "serving the previous configuration: ", summary);
	for (size_t i = 0; !ok && d && i < d->n && n < sizeof(text); i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "\n%s", d->msgs[i]);
	for (size_t i = 0; i < s->n_ctl_tokens; i++)
		control_answer(s->control, s->ctl_tokens[i], ok, text);
	s->n_ctl_tokens = 0;
}

/* A new generation, complete, takes over between two loop iterations. */
static void swap_in(struct server *s, struct generation *g, char *summary, size_t cap)
{
	/* The operator's drains hold across reloads as across restarts. */
	site_admin_apply(s->admin, g->sites);
	char listen[sizeof(s->listen)];
	listen_summary(g->cfg, s->port, listen, sizeof(listen));
	if (strcmp(listen, s->listen) != 0)
		log_warn("listen addresses, port or user changed (%s); they take effect on restart, "
		         "still serving with %s", listen, s->listen);
	generation_log_changes(s->gen, g);
	/* Between two loop iterations: no query holds a pointer into the old one. */
	net_set_handler(s->net, process_handle, &g->env);
	/* Let go of on the loop, freed beside it (0.7 s at 100 000 records). */
	builder_dispose(s->builder, s->gen);
	s->gen = g;
	s->status.gen = g;
	s->ctl.gen = g;
	log_set_level((enum log_level)g->cfg->log_level);
	log_info("reloaded: %zu zone%s", zone_table_count(g->zones),
	         zone_table_count(g->zones) == 1 ? "" : "s");
	snprintf(summary, cap, "serving %zu zone%s", zone_table_count(g->zones),
	         zone_table_count(g->zones) == 1 ? "" : "s");
}

/* The build itself, for a reload or once more for the same one (on_built). */
static void build(struct server *s)
{
	char err[256] = "";
	/* From here on the ACME zones keep what they commit, for the new
	 * generation (acme_attach): an UPDATE answered during the build is in it. */
	acme_capture_start(s->gen->acme);
	if (builder_start(s->builder, s->config_path, err) < 0) {
		acme_capture_stop(s->gen->acme);
		s->rebuilds = 0;
		log_error("reload failed: %s; still serving the previous configuration", err);
		reload_done(s, false, err, NULL);
	}
}

static void start_build(struct server *s)
{
	log_info("reloading %s", s->config_path);
	notify_send("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading", notify_monotonic_usec());
	build(s);
}

/*
 * The clients waiting for the build after this one join this one's, and
 * it is no longer owed, if they fit: for a build that starts now, and so
 * reads the configuration as it is after they asked.
 */
static void take_next_waiters(struct server *s)
{
	if (s->n_tokens + s->n_next_tokens > RELOAD_WAITERS ||
	    s->n_ctl_tokens + s->n_next_ctl_tokens > RELOAD_WAITERS)
		return;
	memcpy(s->tokens + s->n_tokens, s->next_tokens, s->n_next_tokens * sizeof(*s->tokens));
	s->n_tokens += s->n_next_tokens;
	s->n_next_tokens = 0;
	memcpy(s->ctl_tokens + s->n_ctl_tokens, s->next_ctl_tokens,
	       s->n_next_ctl_tokens * sizeof(*s->ctl_tokens));
	s->n_ctl_tokens += s->n_next_ctl_tokens;
	s->n_next_ctl_tokens = 0;
	s->reload_again = false;
}

/* A reload that is not swapped in: the clients hear why. */
static void reload_failed(struct server *s, const char *why, const struct diag *d)
{
	acme_capture_stop(s->gen->acme);
	for (size_t i = 0; d && i < d->n; i++)
		log_error("%s", d->msgs[i]);
	log_error("reload failed%s%s; still serving the previous configuration", d ? "" : ": ",
	          d ? "" : why);
	reload_done(s, false, why, d);
}

/* The SIGHUPs that came during a reload: one more build, from the config as it is now. */
static void reload_next(struct server *s)
{
	if (!s->reload_again)
		return;
	take_next_waiters(s);
	start_build(s);
}

static void on_built(void *arg, struct generation *g, struct diag *d);

static void on_lock_retry(struct loop *l, void *arg)
{
	(void)l;
	struct server *s = arg;
	struct generation *g = s->locked;
	s->lock_timer = 0;
	s->locked = NULL;
	struct diag d;
	diag_init(&d);
	on_built(s, g, &d);
	diag_clear(&d);
}

/*
 * Whether g must wait for a database its zone-file edits commit to
 * (RELOAD_LOCKWAIT_MS): true when it waits (a timer looks again) or the
 * reload failed, the wait over; false to attach g now.  Looked at before
 * generation_attach, which is not undone: a lock taken between the look
 * and the commit builds the reload again (on_built).
 */
static bool wait_for_lock(struct server *s, struct generation *g)
{
	const char *zone = NULL;
	if (acme_edits_lock_free(g->acme, &zone) != -EBUSY) {
		s->lock_waiting = false;
		return false;
	}
	uint64_t now = loop_now_ms(s->loop);
	if (!s->lock_waiting) {
		s->lock_waiting = true;
		s->lock_since_ms = now;
		log_info("reload: the database of %s is locked by another process or a write under "
		         "way; the new configuration waits for it (at most %d ms)", zone,
		         RELOAD_LOCKWAIT_MS);
	}
	if (now - s->lock_since_ms < RELOAD_LOCKWAIT_MS) {
		int64_t id = loop_timer_add(s->loop, RELOAD_LOCK_RETRY_MS, on_lock_retry, s);
		if (id > 0) {
			s->locked = g;
			s->lock_timer = id;
			return true;
		}
	}
	s->lock_waiting = false;
	builder_dispose(s->builder, g);
	char why[DNAME_MAX * 4 + 64];
	snprintf(why, sizeof(why), "the database of %s stayed locked for %llu ms", zone,
	         (unsigned long long)(now - s->lock_since_ms));
	s->rebuilds = 0;
	reload_failed(s, why, NULL);
	reload_next(s);
	return true;
}

/*
 * The same reload built once more, its built generation thrown away; the
 * clients wait for that build (and those who asked during this one join
 * them: it reads the configuration as it is now).
 */
static void build_again(struct server *s, const char *why)
{
	s->rebuilds++;
	log_info("reload: %s; building the new configuration again", why);
	if (s->reload_again)
		take_next_waiters(s);
	build(s);
}

/* On the loop, once the builder thread is done: attach, then swap. */
static void on_built(void *arg, struct generation *g, struct diag *d)
{
	struct server *s = arg;
	if (g && wait_for_lock(s, g))
		return;
	struct timespec T0, T1;
	sysclock_mono_ts(&T0);
	/* Built again often enough: a zone that needs it is built whole on the
	 * loop this time (and says so, acme/commit.c commit_replay). */
	if (g && s->rebuilds >= REBUILDS_MAX)
		acme_replay_on_loop(g->acme, true);
	int ret = g ? generation_attach(g, s->gen, d) : 0;
	if (ret < 0)
		builder_dispose(s->builder, g);
	if (ret == -EBUSY && s->rebuilds < REBUILDS_MAX) {
		/* Locked after wait_for_lock looked, by another process or this
		 * one's compaction: nothing of the edit was committed, and g is
		 * half attached.  Built again, it looks (and waits) again. */
		build_again(s, "a database was locked at the swap");
		return;
	}
	if (ret == -EAGAIN) {
		/*
		 * An UPDATE committed during the build that a patch cannot make:
		 * building that zone whole on the loop would silence it for
		 * seconds at 100 000 names.  The new generation may not serve
		 * without it, so it is built again, beside the loop, from the
		 * database that has it.
		 */
		build_again(s, "a change committed during the build needs the zone built whole");
		return;
	}
	s->rebuilds = 0;
	if (ret < 0)
		g = NULL;
	if (!g) {
		char why[64];
		snprintf(why, sizeof(why), "%zu problem%s", d->n, d->n == 1 ? "" : "s");
		reload_failed(s, why, d);
	} else {
		char summary[64];
		swap_in(s, g, summary, sizeof(summary));
		sysclock_mono_ts(&T1);
		log_info("reload: swapped in on the loop in %.1f ms",
		         (double)(T1.tv_sec - T0.tv_sec) * 1e3 + (double)(T1.tv_nsec - T0.tv_nsec) / 1e6);
		reload_done(s, true, summary, NULL);
	}
	reload_next(s);   /* every client was answered: theirs fit */
}

/* A build under way, or one built and waiting for a lock: a reload asked now follows it. */
static bool reload_busy(const struct server *s)
{
	return builder_busy(s->builder) || s->locked;
}

/* A reload asked for: a build now, or one more after the one under way. */
static void request_reload(struct server *s)
{
	if (!reload_busy(s)) {
		start_build(s);
		return;
	}
	/* It may have read the config before it changed: build once more after it. */
	if (!s->reload_again)
		log_info("reload requested during a reload's build; one more build follows it");
	s->reload_again = true;
}

static void on_reload(struct loop *l, void *arg)
{
	struct server *s = arg;
	const struct loop_siginfo *si = loop_signal_info(l);
	bool busy = reload_busy(s);
	int32_t *tokens = busy ? s->next_tokens : s->tokens;
	size_t *n = busy ? &s->n_next_tokens : &s->n_tokens;
	if (si->queued && *n < RELOAD_WAITERS)
		tokens[(*n)++] = si->value;
	else if (si->queued)
		reload_reply(si->value, "failed busy: too many reloads waiting; try again");
	request_reload(s);
}

/*
 * `geoacme ctl reload`: the same reload as SIGHUP, built beside the loop
 * (coalesced with one under way as SIGHUPs are); the connection is
 * answered with the outcome once the new configuration is swapped in or
 * refused (reload_done).
 */
static int ctl_reload_later(void *arg, FILE *out)
{
	struct server *s = arg;
	if (!s->builder) {
		fputs("the server is starting; try again", out);
		return -EAGAIN;
	}
	bool busy = reload_busy(s);
	uint64_t *tokens = busy ? s->next_ctl_tokens : s->ctl_tokens;
	size_t *n = busy ? &s->n_next_ctl_tokens : &s->n_ctl_tokens;
	if (*n == RELOAD_WAITERS) {
		fputs("too many reloads waiting; try again", out);
		return -EBUSY;
	}
	uint64_t token = control_defer(s->control);
	if (!token) {
		fputs("no connection to answer on", out);
		return -EINVAL;
	}
	tokens[(*n)++] = token;
	request_reload(s);
	return CONTROL_LATER;
}

/*
 * The control channel (core/net/control.h) and the sites' admin states it
 * changes, kept in "<control_socket>.sites".  Off with control_socket = "":
 * then no state file is read either.
 */
static int control_start(struct server *s, const struct config *c)
{
	char err[256] = "";
	char *state = NULL;
	if (c->control_socket && asprintf(&state, "%s.sites", c->control_socket) < 0) {
		log_error("out of memory");
		return -1;
	}
	s->admin = site_admin_new(state, err);
	free(state);
	if (!s->admin) {
		log_error("%s", err);
		return -1;
	}
	site_admin_apply(s->admin, s->gen->sites);
	for (size_t i = 0; s->gen->sites && i < geo_sites_count(s->gen->sites); i++)
		if (geo_site_admin(s->gen->sites, i) != GEO_ADMIN_AUTO)
			log_warn("site %s: admin state %s (set with geoacme ctl; site-auto undoes it)",
			         geo_site_name(s->gen->sites, i),
			         geo_admin_name(geo_site_admin(s->gen->sites, i)));
	s->ctl = (struct ctl_ctx){
		.gen = s->gen, .loop = s->loop, .started = loop_wall_s(s->loop), .admin = s->admin,
		.reload = ctl_reload_later, .reload_arg = s,
	};
	if (!c->control_socket)
		return 0;
	errno = 0;
	s->control = control_new(s->loop, c->control_socket, ctl_dispatch, &s->ctl, err);
	s->ctl.control = s->control;
	if (!s->control && c->control_socket_pos.line == 0 && (errno == EACCES || errno == EPERM)) {
		/* The default place (the state directory, else the config's
		 * folder) may not be writable by `user =` after the privilege
		 * drop: a server that ran before the channel existed still runs,
		 * without it, and says how to get it. */
		log_warn("%s; the control channel is off (set [server] control_socket to a path "
		         "this user can create, or \"\" to silence this)", err);
		return 0;
	}
	if (!s->control) {
		log_error("%s", err);
		return -1;
	}
	return 0;
}

#ifdef GEOACME_TEST_HOOKS
/*
 * The test clock (test builds only, core/test_hooks.h; doc/testing.md).
 * With GEOACME_TEST_CLOCK_FILE set, that file holds a whole number of seconds, possibly negative, by
 * which the loop's clock (core/net/loop.h: timers, health checks, RRSIG
 * times, record ages, TSIG time, cookies, RRL) runs ahead of the system's.  It is read
 * at start and again on SIGUSR2, so a test steps time by writing the file
 * and sending the signal: hours of re-signing and purging happen in one
 * loop iteration, with no sleep and no wall-clock assertion.  Without the
 * variable nothing is read and SIGUSR2 keeps its default action.
 */
static int read_test_clock(struct loop *l, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		log_error("%s: %s", path, strerror(errno));
		return -1;
	}
	long long secs;
	char extra;
	int n = fscanf(f, "%lld %c", &secs, &extra);
	fclose(f);
	if (n != 1 || secs < -(1LL << 40) || secs > (1LL << 40)) {
		log_error("%s:1:1: expected a whole number of seconds", path);
		return -1;
	}
	loop_set_clock_offset(l, (int64_t)secs * 1000);
	log_info("test clock: %lld s ahead of the system clock", secs);
	return 0;
}

static void on_test_clock(struct loop *l, void *arg)
{
	(void)arg;
	const char *path = test_hook(TEST_HOOK_CLOCK_FILE);
	if (path && read_test_clock(l, path) < 0)
		log_error("test clock unchanged");
}
#endif

/* Before ready: queries wait unanswered (resolvers retry), none gets a dead site. */
static void not_ready(void *ctx, struct query *q)
{
	(void)ctx;
	q->tx_len = 0;
}

static void first_round_done(void *arg)
{
	loop_stop(arg);
}

static void first_round_timeout(struct loop *l, void *arg)
{
	(void)arg;
	log_warn("health: the first round of checks is taking too long; starting anyway");
	loop_stop(l);
}

/*
 * Runs the loop until every health probe has its first verdict, so the
 * server never answers with a site nobody has checked.  Each check is
 * bounded by its timeout; the guard timer only covers a stuck loop.
 */
static int wait_first_health_round(struct server *s)
{
	struct health *h = s->gen->health;
	if (!h || health_first_round_done(h))
		return 0;
	uint64_t start = loop_now_ms(s->loop);
	health_on_first_round(h, first_round_done, s->loop);
	int64_t guard = loop_timer_add(s->loop, 120000, first_round_timeout, NULL);
	net_set_handler(s->net, not_ready, NULL);
	int rc = loop_run(s->loop);
	if (guard > 0)
		loop_timer_cancel(s->loop, guard);
	health_on_first_round(h, NULL, NULL);
	log_info("health: first round of checks done in %llu ms",
	         (unsigned long long)(loop_now_ms(s->loop) - start));
	return rc;
}

/* Ports below ip_unprivileged_port_start need a privilege: say which ways there are. */
static void bind_hint(unsigned port, const char *err)
{
	if (!strstr(err, strerror(EACCES)) || port == 0)
		return;
	log_error("port %u needs root or CAP_NET_BIND_SERVICE: start geoacme as root with "
	          "`user = \"geoacme\"` in the config (it drops to that user after binding), or "
	          "grant the capability (systemd: AmbientCapabilities=CAP_NET_BIND_SERVICE as in "
	          "contrib/geoacme.service; otherwise: setcap cap_net_bind_service=+ep "
	          "/path/to/geoacme), or use -p with a port from 1024", port);
}

static void write_pid_file(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		log_warn("cannot write pid file %s: %s", path, strerror(errno));
		return;
	}
	fprintf(f, "%ld\n", (long)getpid());
	fclose(f);
}

int cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "port", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct server s = { .port = -1 };
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:p:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': s.config_path = optarg; break;
		case 'p': {
			char *end;
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 0 || v > 65535 ||
			    strspn(optarg, "0123456789") != strlen(optarg)) {   /* no sign, no blank */
				fprintf(stderr, "geoacme serve: --port needs 0 to 65535, not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			s.port = (int)v;
			break;
		}
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (!s.config_path || optind != argc) {
		usage(stderr);
		return EXIT_USAGE;
	}

	/*
	 * Snapshots are built in large arena chunks and freed whole on every
	 * swap.  Keep those chunks on the heap and do not hand freed memory back
	 * to the kernel each time: a rebuild then reuses pages instead of paying
	 * for mmap/munmap and page faults (measured: about a third of an UPDATE's
	 * cost on a 100 000-record zone).
	 */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);

	/* Read the config once for the listen settings and the user. */
	struct diag d;
	diag_init(&d);
	/* Errors only: the first generation reads the config again and warns then. */
	log_set_level(LOG_ERROR);
	struct config *boot = config_load(s.config_path, &d);
	if (!boot) {
		diag_print(&d);
		diag_clear(&d);
		return EXIT_CONFIG;
	}
	log_set_level((enum log_level)boot->log_level);
	listen_summary(boot, s.port, s.listen, sizeof(s.listen));

	char err[256] = "";
	s.loop = loop_new(err);
	if (!s.loop) {
		log_error("%s", err);
		config_free(boot);
		return EXIT_RUNTIME;
	}
	side_thread_loop_first();   /* this thread is the loop's */
#ifdef GEOACME_TEST_HOOKS
	const char *test_clock = test_hook(TEST_HOOK_CLOCK_FILE);
	if (test_clock && read_test_clock(s.loop, test_clock) < 0) {
		loop_free(s.loop);
		config_free(boot);
		return EXIT_CONFIG;
	}
#endif
	/* Every configured address, however many. */
	const char **addrs = calloc(boot->n_listen_ipv4 + boot->n_listen_ipv6 + 1, sizeof(*addrs));
	if (!addrs) {
		log_error("out of memory");
		loop_free(s.loop);
		config_free(boot);
		return EXIT_RUNTIME;
	}
	size_t n_addrs = 0;
	for (size_t i = 0; i < boot->n_listen_ipv4; i++)
		addrs[n_addrs++] = boot->listen_addrs_ipv4[i];
	for (size_t i = 0; i < boot->n_listen_ipv6; i++)
		addrs[n_addrs++] = boot->listen_addrs_ipv6[i];
	struct net_config nc = {
		.addrs = addrs,
		.n_addrs = n_addrs,
		.port = s.port >= 0 ? (uint16_t)s.port : boot->listen_port,
		.udp_max_size = boot->udp_max_size,
		.tcp_max_connections = boot->tcp_max_connections,
		.tcp_idle_timeout_ms = boot->tcp_idle_timeout_ms,
		.tcp_max_per_prefix = boot->tcp_max_connections_per_prefix,
		.tcp_lifetime_ms = boot->tcp_lifetime_ms,
		.xdp_ifaces = (const char *const *)boot->xdp_listen,
		.n_xdp_ifaces = boot->n_xdp_listen,
	};
	/* The handler context is set once the first generation exists. */
	s.net = net_new(s.loop, &nc, process_handle, NULL, err);
	int rc = EXIT_RUNTIME;
	if (!s.net) {
		log_error("%s", err);
		bind_hint(nc.port, err);
		goto out;
	}
	notify_open();
	if (boot->user && privs_drop(boot->user, boot->group, err) < 0) {
		log_error("%s", err);
		goto out;
	}
	if (boot->n_xdp_listen) {
		/* AF_XDP is set up (or fell back): what only its setup needed
		 * goes, also where `user =` kept the capabilities (systemd's
		 * AmbientCapabilities=, contrib/geoacme-xdp.conf). */
		char dropped[96];
		if (privs_drop_xdp_caps(dropped, sizeof(dropped), err) < 0)
			log_warn("xdp: cannot drop the capabilities of its setup (%s); they are kept", err);
		else if (dropped[0])
			log_info("xdp: set up; capabilities dropped: %s", dropped);
	}

	s.gen = generation_new(s.config_path, s.loop, NULL, false, &d);
	if (!s.gen) {
		diag_print(&d);
		rc = EXIT_CONFIG;
		goto out;
	}
	if (control_start(&s, s.gen->cfg) < 0)
		goto out;
	if (wait_first_health_round(&s) < 0)
		goto out;
	if (!(s.builder = builder_new(s.loop, on_built, &s, err))) {
		log_error("%s", err);
		goto out;
	}
	generation_health_settled(s.gen);
	net_set_handler(s.net, process_handle, &s.gen->env);
	s.status.gen = s.gen;
	s.status.started = loop_wall_s(s.loop);
	if (boot->n_http_listen) {
		s.http = http_new(s.loop, boot->http_listen, boot->n_http_listen, status_http, &s.status,
		                  err);
		if (!s.http) {
			log_error("%s", err);
			goto out;
		}
	}
	/*
	 * Without these the daemon could not be stopped or reloaded (the
	 * signals are blocked before the signalfd is made): refuse to start.
	 */
	const struct { int signo; loop_timer_fn fn; const char *name; } sigs[] = {
		{ SIGTERM, on_stop, "SIGTERM" },
		{ SIGINT, on_stop, "SIGINT" },
		{ SIGHUP, on_reload, "SIGHUP" },
		/* geoacme reload's: queued with its token however many come (reload.h). */
		{ RELOAD_SIGNAL, on_reload, RELOAD_SIGNAL_NAME },
#ifdef GEOACME_TEST_HOOKS
		{ test_clock ? SIGUSR2 : 0, on_test_clock, "SIGUSR2" },
#endif
	};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		if (!sigs[i].signo)
			continue;   /* the test clock's, without a test clock */
		int src = loop_add_signal(s.loop, sigs[i].signo, sigs[i].fn, &s);
		if (src < 0) {
			log_error("cannot handle %s: %s", sigs[i].name, strerror(-src));
			goto out;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (boot->pid_file)
		write_pid_file(boot->pid_file);
	log_info("ready: %zu zone%s, listening on port %u", zone_table_count(s.gen->zones),
	         zone_table_count(s.gen->zones) == 1 ? "" : "s", (unsigned)net_bound_port(s.net));
	notify_send("READY=1\nSTATUS=serving %zu zone%s on port %u", zone_table_count(s.gen->zones),
	            zone_table_count(s.gen->zones) == 1 ? "" : "s", (unsigned)net_bound_port(s.net));
	rc = loop_run(s.loop) < 0 ? EXIT_RUNTIME : EXIT_OK;

out:
	notify_close();
	diag_clear(&d);
	/* A build under way is waited for and thrown away, as is one waiting for a lock. */
	if (s.locked) {
		loop_timer_cancel(s.loop, s.lock_timer);
		builder_dispose(s.builder, s.locked);
	}
	builder_free(s.builder);
	control_free(s.control);
	site_admin_free(s.admin);
	http_free(s.http);
	/* UPDATE replies still waiting for the disk go out as the generation
	 * goes (acme syncs them on the spot), while the sockets are open; no
	 * message is answered meanwhile. */
	if (s.net)
		net_set_handler(s.net, not_ready, NULL);
	generation_free(s.gen);
	s.gen = NULL;
	net_free(s.net);
	free(addrs);
	loop_free(s.loop);
	config_free(boot);
	metrics_free();
	return rc;
}
