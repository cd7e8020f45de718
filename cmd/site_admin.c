/* SPDX-License-Identifier: MIT */
/*
 * The sites' admin states and their file (site_admin.h).
 */
#include "cmd/site_admin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct admin_entry {
	char *site;
	enum geo_admin state;
};

struct site_admin {
	char *path;
	struct admin_entry *e;
	size_t n;
};

static struct admin_entry *find(const struct site_admin *a, const char *site)
{
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->e[i].site, site) == 0)
			return &a->e[i];
	return NULL;
}

/* Adds or replaces in memory; auto removes the entry.  0 or -ENOMEM. */
static int put(struct site_admin *a, const char *site, enum geo_admin state)
{
	struct admin_entry *e = find(a, site);
	if (e && state == GEO_ADMIN_AUTO) {
		free(e->site);
		*e = a->e[--a->n];
		return 0;
	}
	if (e) {
		e->state = state;
		return 0;
	}
	if (state == GEO_ADMIN_AUTO)
		return 0;
	struct admin_entry *grown = realloc(a->e, (a->n + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	a->e = grown;
	char *copy = strdup(site);
	if (!copy)
		return -ENOMEM;
	a->e[a->n++] = (struct admin_entry){ copy, state };
	return 0;
}

static int load(struct site_admin *a, char err[256])
{
	FILE *f = fopen(a->path, "r");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, 256, "%s: %s", a->path, strerror(errno));
		return -errno;
	}
	char line[1100];
	int no = 0, rc = 0;
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		no++;
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '\0' || line[0] == '#')
			continue;
		char *sp = strchr(line, ' ');
		enum geo_admin st;
		if (sp)
			*sp = '\0';
		if (!sp || !sp[1] || !geo_admin_from(line, &st) || st == GEO_ADMIN_AUTO) {
			snprintf(err, 256, "%s:%d:1: expected \"drained SITE\" or \"undrained SITE\"",
			         a->path, no);
			rc = -EBADMSG;
		} else if (put(a, sp + 1, st) < 0) {
			snprintf(err, 256, "%s: out of memory", a->path);
			rc = -ENOMEM;
		}
	}
	fclose(f);
	return rc;
}

struct site_admin *site_admin_new(const char *path, char err[256])
{
	struct site_admin *a = calloc(1, sizeof(*a));
	if (!a || (path && !(a->path = strdup(path)))) {
		snprintf(err, 256, "out of memory");
		free(a);
		return NULL;
	}
	if (a->path && load(a, err) < 0) {
		site_admin_free(a);
		return NULL;
	}
	return a;
}

void site_admin_free(struct site_admin *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		free(a->e[i].site);
	free(a->e);
	free(a->path);
	free(a);
}

enum geo_admin site_admin_get(const struct site_admin *a, const char *site)
{
	const struct admin_entry *e = find(a, site);
	return e ? e->state : GEO_ADMIN_AUTO;
}

/* Temporary file, fsync, rename, fsync of the folder: the old file or the new one. */
static int save(const struct site_admin *a, char err[256])
{
	char tmp[4200];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", a->path) >= sizeof(tmp)) {
		snprintf(err, 256, "%.200s: path too long", a->path);
		return -ENAMETOOLONG;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, 256, "cannot write %.200s: %s", tmp, strerror(e));
		return -e;
	}
	fputs("# geoacme: sites' admin states (geoacme ctl site-drain|site-undrain|site-auto).\n"
	      "# Written by the server; a site not listed is auto.\n", f);
	for (size_t i = 0; i < a->n; i++)
		fprintf(f, "%s %s\n", geo_admin_name(a->e[i].state), a->e[i].site);
	int rc = fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : -errno;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, a->path) < 0)
		rc = -errno;
	if (rc < 0) {
		snprintf(err, 256, "cannot write %.200s: %s", a->path, strerror(-rc));
		unlink(tmp);
		return rc;
	}
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s", a->path);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*(slash == dir ? slash + 1 : slash) = '\0';
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			(void)fsync(dfd);
			close(dfd);
		}
	}
	return 0;
}

int site_admin_set(struct site_admin *a, const char *site, enum geo_admin state, char err[256])
{
	enum geo_admin old = site_admin_get(a, site);
	if (put(a, site, state) < 0) {
		snprintf(err, 256, "out of memory");
		return -ENOMEM;
	}
	if (!a->path)
		return 0;
	int rc = save(a, err);
	if (rc < 0)
		(void)put(a, site, old);   /* as before: the file and the memory agree */
	return rc;
}

void site_admin_apply(const struct site_admin *a, struct geo_sites *s)
{
	for (size_t i = 0; s && i < geo_sites_count(s); i++)
		geo_site_set_admin(s, i, site_admin_get(a, geo_site_name(s, i)));
}

const char *site_admin_path(const struct site_admin *a)
{
	return a->path;
}
