/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The sites' admin states (`geoacme ctl site-drain|site-undrain|site-auto`,
 * core/geo/geo_sites.h enum geo_admin), kept for the life of the process
 * and in a small file so they survive a restart: process lifetime, one
 * owner (cmd/serve.c), applied to each generation's sites as it is built.
 *
 * The file (doc/operations.md "Draining a site"): one line per site that
 * is not "auto", "<state> <site name>", e.g. "drained par"; lines starting
 * with '#' and blank lines are ignored.  It is written whole to a
 * temporary file, fsync'd and renamed over the old one, so a crash leaves
 * the old or the new file, never a mix.  A site that leaves the config
 * keeps its line (a site that comes back comes back in that state).
 */
#include "core/geo/geo_sites.h"

struct site_admin;

/*
 * Reads `path` when it exists (a missing file: every site auto).  path
 * NULL: kept in memory only.  NULL with err ("file:line:col: expected
 * ...") when the file cannot be read or a line is not understood.
 */
struct site_admin *site_admin_new(const char *path, char err[256]);
void site_admin_free(struct site_admin *a);   /* NULL-safe */
enum geo_admin site_admin_get(const struct site_admin *a, const char *site);
/* Records and writes the file; on failure (err filled) nothing changes. */
int site_admin_set(struct site_admin *a, const char *site, enum geo_admin state, char err[256]);
/* Gives every site of s its recorded state (auto when none). */
void site_admin_apply(const struct site_admin *a, struct geo_sites *s);
const char *site_admin_path(const struct site_admin *a);   /* NULL: memory only */
