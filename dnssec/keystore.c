/* SPDX-License-Identifier: MIT */
/*
 * The key state file: read, and written atomically.
 */
#include "dnssec/keystore.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const state_names[] = {
	"standby", "incoming", "active", "outgoing", "removed", "retired",
};
static const char *const time_names[] = {
	"created", "published", "signing", "parent", "ds_seen", "withdrawn", "retired",
};

const char *keystore_state_name(enum keystore_state s) { return state_names[s]; }
const char *keystore_time_name(enum keystore_time t) { return time_names[t]; }

static int state_from(const char *s)
{
	for (size_t i = 0; i < sizeof(state_names) / sizeof(state_names[0]); i++)
		if (strcmp(s, state_names[i]) == 0)
			return (int)i;
	return -1;
}

/* "example.com." -> "example.com", lowercase: the file's stem. */
static void stem(const char *zone, char *out, size_t cap)
{
	size_t n = 0;
	for (; zone[n] && n + 1 < cap; n++)
		out[n] = (char)tolower((unsigned char)zone[n]);
	if (n > 1 && out[n - 1] == '.')
		n--;
	out[n] = '\0';
}

static int bad(char err[256], const char *path, int line, const char *what)
{
	snprintf(err, 256, "%.150s:%d: %.90s", path, line, what);
	return -EBADMSG;
}

int keystore_load(struct keystore *ks, const char *key_dir, const char *zone, char err[256])
{
	char st[250];
	memset(ks, 0, sizeof(*ks));
	stem(zone, st, sizeof(st));
	snprintf(ks->zone, sizeof(ks->zone), "%s.", st);
	if (snprintf(ks->path, sizeof(ks->path), "%s/%s.keys", key_dir, st) >= (int)sizeof(ks->path)) {
		snprintf(err, 256, "%.200s: key_dir too long", key_dir);
		return -ENAMETOOLONG;
	}
	FILE *f = fopen(ks->path, "r");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, 256, "%.200s: %s", ks->path, strerror(errno));
		return -errno;
	}
	char line[KEYSTORE_PATH_MAX + 256];
	int no = 0, rc = 0;
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		no++;
		line[strcspn(line, "\n")] = '\0';
		if (no == 1) {
			if (strcmp(line, "geoacme-keys 1") != 0)
				rc = bad(err, ks->path, no, "expected \"geoacme-keys 1\"");
			continue;
		}
		if (line[0] == '\0' || line[0] == '#')
			continue;
		unsigned long v;
		int used = 0;
		if (strncmp(line, "zone ", 5) == 0)
			continue;   /* the zone is the file's name; the line is for people */
		if (sscanf(line, "ds_ttl %lu", &v) == 1) {
			ks->ds_ttl = (uint32_t)v;
			continue;
		}
		if (ks->n == KEYSTORE_MAX) {
			rc = bad(err, ks->path, no, "too many keys");
			break;
		}
		struct keystore_key *k = &ks->keys[ks->n];
		unsigned tag;
		char origin[16], state[16];
		int64_t *t = k->t;
		if (sscanf(line, "key %u %15s %15s %" SCNd64 ",%" SCNd64 ",%" SCNd64 ",%" SCNd64 ",%"
		           SCNd64 ",%" SCNd64 ",%" SCNd64 " %n", &tag, origin, state, &t[0], &t[1],
		           &t[2], &t[3], &t[4], &t[5], &t[6], &used) != 10 || used == 0 ||
		    tag > 65535 || state_from(state) < 0 ||
		    (strcmp(origin, "config") != 0 && strcmp(origin, "generated") != 0) ||
		    line[used] == '\0' || strlen(line + used) >= sizeof(k->file)) {
			rc = bad(err, ks->path, no, "expected \"key <tag> config|generated <state> "
			         "<7 times> <file>\"");
			break;
		}
		k->tag = (uint16_t)tag;
		k->generated = strcmp(origin, "generated") == 0;
		k->state = (enum keystore_state)state_from(state);
		strcpy(k->file, line + used);
		ks->n++;
	}
	if (rc == 0 && ferror(f)) {
		snprintf(err, 256, "%.200s: read error", ks->path);
		rc = -EIO;
	}
	if (rc == 0 && no == 0)
		rc = bad(err, ks->path, 1, "empty file");
	fclose(f);
	return rc;
}

int keystore_save(const struct keystore *ks, char err[256])
{
	char tmp[KEYSTORE_PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", ks->path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, 256, "%.200s: %s", tmp, strerror(errno));
		return -errno;
	}
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	fprintf(f, "geoacme-keys 1\n# written by geoacme; doc/dnssec.md describes it\n");
	fprintf(f, "zone %s\nds_ttl %u\n", ks->zone, ks->ds_ttl);
	for (size_t i = 0; i < ks->n; i++) {
		const struct keystore_key *k = &ks->keys[i];
		fprintf(f, "key %u %s %s", k->tag, k->generated ? "generated" : "config",
		        state_names[k->state]);
		for (int j = 0; j < KT_COUNT; j++)
			fprintf(f, "%c%" PRId64, j ? ',' : ' ', k->t[j]);
		fprintf(f, " %s\n", k->file);
	}
	int rc = 0;
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = -errno;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, ks->path) != 0)
		rc = -errno;
	if (rc == 0) {
		/* The rename itself durable: fsync the folder. */
		char dir[KEYSTORE_PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", ks->path);
		char *slash = strrchr(dir, '/');
		if (slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
		int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 || fsync(dfd) != 0)
			rc = -errno;
		if (dfd >= 0)
			close(dfd);
	}
	if (rc < 0) {
		snprintf(err, 256, "%.200s: %s", ks->path, strerror(-rc));
		unlink(tmp);
	}
	return rc;
}

struct keystore_key *keystore_find_file(struct keystore *ks, const char *file)
{
	for (size_t i = 0; i < ks->n; i++)
		if (strcmp(ks->keys[i].file, file) == 0)
			return &ks->keys[i];
	return NULL;
}

struct keystore_key *keystore_first(struct keystore *ks, enum keystore_state s)
{
	for (size_t i = 0; i < ks->n; i++)
		if (ks->keys[i].state == s)
			return &ks->keys[i];
	return NULL;
}
