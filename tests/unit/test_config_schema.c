/* SPDX-License-Identifier: MIT */
/*
 * The key table (core/conf/config_schema.h) against the documentation: a
 * key cannot be added undocumented.  Every row must have a doc line, a row
 * of its section's table in doc/config.md, and an assignment (commented or
 * not) in config.toml.example; an integer key's documented range must be
 * the table's.  Also the table itself: no key twice in a section, ranges
 * that hold their defaults.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/conf/config_schema.h"
#include "tests/unit/check.h"

/* The repository: $FIXTURES/../.. (set by ctest), else from this file's path. */
static void repo_path(const char *rel, char *out, size_t size)
{
	const char *f = getenv("FIXTURES");
	if (f) {
		snprintf(out, size, "%s/../../%s", f, rel);
		return;
	}
	const char *slash = strrchr(__FILE__, '/');
	snprintf(out, size, "%.*s/../../%s", slash ? (int)(slash - __FILE__) : 1,
	         slash ? __FILE__ : ".", rel);
}

static char *slurp(const char *rel)
{
	char path[PATH_MAX];
	repo_path(rel, path, sizeof(path));
	FILE *f = fopen(path, "rb");
	if (!f) {
		printf("# cannot open %s\n", path);
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		printf("# cannot read %s\n", path);
		exit(2);
	}
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Start of the next line after p (or the end). */
static const char *next_line(const char *p)
{
	const char *nl = strchr(p, '\n');
	return nl ? nl + 1 : p + strlen(p);
}

/*
 * The text of doc/config.md under the heading of `section`, up to the next
 * heading: "## Top level", "## `[server]`", "#### `https` (in ...)".
 */
static const char *doc_block(const char *doc, const char *section, const char **end)
{
	char want[64];
	if (strcmp(section, "[top level]") == 0)
		snprintf(want, sizeof(want), "Top level");
	else
		snprintf(want, sizeof(want), "`%s`", section);
	for (const char *p = doc; *p; p = next_line(p)) {
		const char *e = next_line(p);
		if (p[0] != '#' || !memmem(p, (size_t)(e - p), want, strlen(want)))
			continue;
		const char *q = e;
		while (*q && *q != '#')
			q = next_line(q);
		*end = q;
		return e;
	}
	return NULL;
}

/* The table row of `key` in a doc block: a line starting with '|' naming `key`. */
static const char *doc_row(const char *block, const char *end, const char *key, size_t *len)
{
	char want[80];
	snprintf(want, sizeof(want), "`%s`", key);
	for (const char *p = block; p < end; p = next_line(p)) {
		const char *e = next_line(p);
		if (p[0] == '|' && memmem(p, (size_t)(e - p), want, strlen(want))) {
			*len = (size_t)(e - p);
			return p;
		}
	}
	return NULL;
}

/* `key = ...` in the example: at a line's start (after '#' and blanks), or in an inline table. */
static bool example_assigns(const char *ex, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = ex; (p = strstr(p, key)); p += kl) {
		char before = p == ex ? '\n' : p[-1];
		if (!strchr("\n \t#{,", before))
			continue;
		const char *q = p + kl;
		while (*q == ' ' || *q == '\t')
			q++;
		if (*q == '=' && q[1] != '=')
			return true;
	}
	return false;
}

/* A table `key` in the example: "[key]", "[[key]]", "[a.key]", "[[a.key]]" or "key = {". */
static bool example_has_table(const char *ex, const char *key)
{
	char want[80];
	size_t kl = strlen(key);
	for (const char *p = ex; (p = strstr(p, key)); p += kl) {
		char before = p == ex ? '\n' : p[-1];
		if (strchr("[.", before) && p[kl] == ']')
			return true;
	}
	snprintf(want, sizeof(want), "%s = {", key);
	return strstr(ex, want) != NULL;
}

int main(void)
{
	size_t n;
	const struct config_key *keys = config_schema_keys(&n);
	char *doc = slurp("doc/config.md");
	char *ex = slurp("config.toml.example");

	ok(n > 100, "the table has every key (%zu rows)", n);
	for (size_t i = 0; i < n; i++) {
		const struct config_key *k = &keys[i];
		ok(k->doc && k->doc[0], "%s %s: a doc line", k->section, k->name);
		for (size_t j = 0; j < i; j++)
			if (strcmp(keys[j].section, k->section) == 0 && strcmp(keys[j].name, k->name) == 0)
				ok(0, "%s %s: listed twice", k->section, k->name);
		/* A default of 0 outside the range means none (a port that must be given). */
		if (k->type == CONFIG_KEY_INT && k->size && (k->def != 0 || k->lo <= 0))
			ok(k->lo <= k->def && k->def <= k->hi, "%s %s: default %lld in %lld..%lld",
			   k->section, k->name, (long long)k->def, (long long)k->lo, (long long)k->hi);

		const char *end = NULL;
		const char *block = doc_block(doc, k->section, &end);
		size_t len = 0;
		const char *row = block ? doc_row(block, end, k->name, &len) : NULL;
		if (k->type == CONFIG_KEY_SECTION) {
			/* A table of its own: its heading, and its header in the example. */
			ok(k->sub && doc_block(doc, k->sub, &end) != NULL,
			   "doc/config.md has a heading for %s %s", k->section, k->name);
			ok(example_has_table(ex, k->name), "config.toml.example shows %s %s",
			   k->section, k->name);
			continue;
		}
		ok(row != NULL, "doc/config.md has a row for %s %s", k->section, k->name);
		if (row && k->type == CONFIG_KEY_INT) {
			/* "integer 512–4096" (an en dash) */
			char range[64];
			snprintf(range, sizeof(range), "%lld\xe2\x80\x93%lld", (long long)k->lo,
			         (long long)k->hi);
			ok(memmem(row, len, range, strlen(range)) != NULL,
			   "doc/config.md gives %s %s the range %s", k->section, k->name, range);
		}
		ok(example_assigns(ex, k->name), "config.toml.example shows %s %s", k->section, k->name);
	}
	free(doc);
	free(ex);
	return done_testing();
}
