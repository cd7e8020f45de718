/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The control channel's commands (`geoacme ctl`, doc/operations.md "The
 * control channel").  core/net/control.c carries the lines; ctl_dispatch()
 * finds the command in ctl_commands[] (cmd/ctl_table.c), checks its number
 * of arguments and runs its handler on the event loop.
 *
 * To add a command: write its handler in a file of your own (cmd/ctl_<topic>.c),
 * declare it below, and add one row to ctl_commands[].  Nothing else
 * changes: the dispatcher, `help` and `geoacme ctl --help` read the table.
 *
 * A handler runs between two loop iterations and must not block: it reads
 * the running generation, changes state through the modules' own calls,
 * writes its answer to `out` and returns 0 (the client prints it and exits
 * 0) or a negative errno with the reason in `out` (the client prints it to
 * stderr and exits 1).  A command that starts work that takes time (a
 * refresh, a retransfer, a NOTIFY) starts it and answers "started" at once;
 * its progress is seen with zone-status and in the log.
 */
#include <stdint.h>
#include <stdio.h>

struct generation;
struct loop;
struct site_admin;
struct config_zone;
struct control;
struct zone;

struct ctl_ctx {
	struct generation *gen;        /* the running one: serve.c updates it on reload */
	struct loop *loop;
	int64_t started;               /* when the server started, unix seconds */
	struct site_admin *admin;      /* the sites' admin states, kept on disk */
	struct control *control;       /* answers that come later (control_defer) */
	/* Reloads like SIGHUP, built beside the loop: CONTROL_LATER (the
	 * outcome is the deferred answer, core/net/control.h), or a negative
	 * errno with the reason written. */
	int (*reload)(void *arg, FILE *out);
	void *reload_arg;
};

typedef int (*ctl_handler_fn)(struct ctl_ctx *c, int argc, char **argv, FILE *out);

struct ctl_command {
	const char *name;              /* argv[0] */
	int min_args, max_args;        /* arguments after the name */
	ctl_handler_fn fn;
	const char *usage;             /* "zone-status ZONE" */
	const char *help;              /* one line */
};

/* The table, ended by a row with name NULL (cmd/ctl_table.c). */
extern const struct ctl_command ctl_commands[];

/* control_fn (core/net/control.h) with ctx = struct ctl_ctx. */
int ctl_dispatch(void *ctx, int argc, char **argv, FILE *out);

/*
 * For handlers: the zone named `name` ("example.net" or "example.net."),
 * its config and its snapshot (NULL when not served now, e.g. an expired
 * secondary).  Returns the config zone's index, or -ENOENT with "unknown
 * zone" written to out.
 */
int ctl_find_zone(struct ctl_ctx *c, const char *name, const struct config_zone **zc,
                  const struct zone **z, FILE *out);
/* The site's index, or -ENOENT with "unknown site" written to out. */
int ctl_find_site(struct ctl_ctx *c, const char *name, FILE *out);

/* ---- handlers, by file ---- */
/* cmd/ctl_server.c */
int ctl_status(struct ctl_ctx *c, int argc, char **argv, FILE *out);
int ctl_reload(struct ctl_ctx *c, int argc, char **argv, FILE *out);
/* cmd/ctl_zone.c */
int ctl_zone_status(struct ctl_ctx *c, int argc, char **argv, FILE *out);
int ctl_zone_refresh(struct ctl_ctx *c, int argc, char **argv, FILE *out);
int ctl_zone_retransfer(struct ctl_ctx *c, int argc, char **argv, FILE *out);
int ctl_zone_notify(struct ctl_ctx *c, int argc, char **argv, FILE *out);
/* cmd/ctl_site.c */
int ctl_site_drain(struct ctl_ctx *c, int argc, char **argv, FILE *out);
int ctl_site_undrain(struct ctl_ctx *c, int argc, char **argv, FILE *out);
int ctl_site_auto(struct ctl_ctx *c, int argc, char **argv, FILE *out);
/* cmd/ctl_keys.c */
int ctl_key_status(struct ctl_ctx *c, int argc, char **argv, FILE *out);
int ctl_key_roll(struct ctl_ctx *c, int argc, char **argv, FILE *out);
