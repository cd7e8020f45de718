/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A small TOML reader for our configuration: tables, arrays of tables,
 * dotted headers ([zones.stores], [[zones.keys]]), dotted keys, basic and
 * literal strings with escapes, integers (decimal with underscores, 0x, 0o,
 * 0b, signs), floats (exponents, inf, nan), booleans, arrays (possibly
 * nested, multi-line, trailing comma, mixed types), inline tables, and
 * comments.  Not supported (rejected with a clear error): multi-line
 * strings, dates and times.  Every node remembers where it was written so
 * the config loader can report file:line:col (columns count bytes, from 1).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct diag;

enum toml_type { TOML_STRING, TOML_INT, TOML_FLOAT, TOML_BOOL, TOML_ARRAY, TOML_TABLE };

struct toml_node;
struct toml_files;

struct toml_kv {
	char *key;
	int line, col;           /* where the key was written */
	const char *file;        /* in which file (toml_parse's `file`; toml_load: owned by the root) */
	struct toml_node *val;
	bool used;               /* set by the consumer; unused keys are reported */
};

struct toml_node {
	enum toml_type type;
	int line, col;           /* where the value (or the table header) starts */
	const char *file;        /* in which file, as for toml_kv */
	struct toml_files *files;   /* the root of toml_load only: the file names nodes point at */
	unsigned flags;          /* parser bookkeeping (how a table or array was made); not for consumers */
	union {
		char *s;             /* NUL-terminated; embedded NULs are rejected */
		int64_t i;
		double f;
		bool b;
		struct { struct toml_node **items; size_t n; } arr;
		struct { struct toml_kv *kv; size_t n; } tab;
	} u;
};

/*
 * Parses `text`.  On syntax errors adds "file:line:col: expected ..." to
 * `d` for every error found (it resynchronises at the next line) and
 * returns NULL.  The root is a TOML_TABLE owned by the caller.
 */
struct toml_node *toml_parse(const char *text, size_t len, const char *file, struct diag *d);
void toml_free(struct toml_node *root);   /* NULL-safe */

/*
 * Reads the file at `path` (at most 16 MiB) and parses it, following
 * `include` (issue #21.5: one shared file for several instances):
 *
 *   include = "common.toml"              # or ["a.toml", "b.toml"]
 *
 * a top-level key naming files (relative to the including file's folder)
 * that are read first, in order, each later one and then the including
 * file itself laid over them: a table is merged key by key, an array of
 * tables ([[zones]]) gets the later file's entries appended, and any other
 * value (a string, a number, a plain array) is replaced whole.  Included
 * files may include others; a cycle, more than 8 levels, or a file that
 * cannot be read is an error at the `include` that names it.  Every node
 * and key keeps the file it was written in (`file`), so a consumer's
 * messages name the right file:line:col.  The `include` key itself is not
 * in the result.
 */
struct toml_node *toml_load(const char *path, struct diag *d);

/* Looks up a direct child of a table; marks it used.  NULL when absent. */
struct toml_node *toml_get(struct toml_node *table, const char *key);
const char *toml_type_name(enum toml_type t);        /* "string" */
const char *toml_type_a_name(enum toml_type t);      /* "a string", for messages */
