/* SPDX-License-Identifier: MIT */
/*
 * toml_load: a configuration file and the files it includes, read and
 * merged into one tree (toml.h says how; issue #21.5).  Parsing one file's
 * text is toml.c's job; this file reads files, follows `include`, guards
 * against cycles and depth, and merges the trees.
 */
#include "core/conf/toml.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/conf/diag.h"
#include "core/conf/toml_internal.h"

#define TOML_MAX_BYTES (16u << 20)
#define TOML_INCLUDE_DEPTH 8

struct toml_files {
	char **v;
	size_t n;
};

void toml_files_free(struct toml_files *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i]);
	free(f->v);
	free(f);
}

static int read_file(const char *path, char **text, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0;
	if (!f)
		return -errno;
	for (;;) {
		if (n == cap) {
			if (cap >= TOML_MAX_BYTES) {
				free(buf);
				fclose(f);
				return -EFBIG;
			}
			cap = cap ? cap * 2 : 8192;
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = nb;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	int e = ferror(f) ? errno : 0;
	fclose(f);
	if (e) {
		free(buf);
		return -e;
	}
	*text = buf;
	*len = n;
	return 0;
}

struct loading {
	struct diag *d;
	struct toml_files *files;       /* every file name nodes point at */
	char *stack[TOML_INCLUDE_DEPTH + 1];   /* realpaths of the files being read, outermost first */
	size_t depth;
	bool oom;
};

static const char *keep_name(struct loading *ld, const char *path)
{
	char **v = realloc(ld->files->v, (ld->files->n + 1) * sizeof(*v));
	char *s = v ? strdup(path) : NULL;
	if (v)
		ld->files->v = v;
	if (!s) {
		ld->oom = true;
		return NULL;
	}
	v[ld->files->n++] = s;
	return s;
}

/* Lays `over` (a table) over `base`, key by key, taking over's contents. */
static bool merge_into(struct toml_node *base, struct toml_node *over)
{
	bool ok = true;
	for (size_t i = 0; i < over->u.tab.n; i++) {
		struct toml_kv *kv = &over->u.tab.kv[i];
		struct toml_kv *b = toml_find_kv(base, kv->key);
		if (!b) {
			struct toml_kv *v = realloc(base->u.tab.kv, (base->u.tab.n + 1) * sizeof(*v));
			if (!v) {
				ok = false;
				free(kv->key);
				toml_free(kv->val);
				continue;
			}
			base->u.tab.kv = v;
			v[base->u.tab.n++] = *kv;
			continue;
		}
		struct toml_node *bv = b->val, *ov = kv->val;
		if (bv->type == TOML_TABLE && ov->type == TOML_TABLE) {
			ok = merge_into(bv, ov) && ok;
			toml_free(ov);
		} else if (bv->type == TOML_ARRAY && ov->type == TOML_ARRAY && (bv->flags & TF_AOT) &&
		           (ov->flags & TF_AOT)) {
			/* [[zones]] in both: the later file's entries come after. */
			size_t n = bv->u.arr.n + ov->u.arr.n;
			struct toml_node **items = realloc(bv->u.arr.items, (n ? n : 1) * sizeof(*items));
			if (items) {
				bv->u.arr.items = items;
				memcpy(items + bv->u.arr.n, ov->u.arr.items, ov->u.arr.n * sizeof(*items));
				bv->u.arr.n = n;
				ov->u.arr.n = 0;
			} else {
				ok = false;
			}
			toml_free(ov);
		} else {
			toml_free(bv);
			b->val = ov;
			b->line = kv->line;
			b->col = kv->col;
			b->file = kv->file;
			b->used = false;
		}
		free(kv->key);
	}
	free(over->u.tab.kv);
	over->u.tab.kv = NULL;
	over->u.tab.n = 0;
	return ok;
}

/* The folder of `file` joined with `rel` (rel as is when absolute). */
static char *beside(const char *file, const char *rel)
{
	const char *slash = strrchr(file, '/');
	char *out = NULL;
	if (rel[0] == '/' || !slash)
		return strdup(rel);
	if (asprintf(&out, "%.*s/%s", (int)(slash - file), file, rel) < 0)
		return NULL;
	return out;
}

static struct toml_node *load_file(struct loading *ld, const char *path,
                                   const struct toml_node *at);

/* Reads the files `inc` names (beside `file`) and lays them over each other. */
static struct toml_node *load_includes(struct loading *ld, const char *file,
                                       const struct toml_node *inc, bool *failed)
{
	struct toml_node *base = NULL;
	size_t n = inc->type == TOML_ARRAY ? inc->u.arr.n : 1;
	for (size_t i = 0; i < n; i++) {
		const struct toml_node *v = inc->type == TOML_ARRAY ? inc->u.arr.items[i] : inc;
		if (v->type != TOML_STRING || !v->u.s[0]) {
			diag_add(ld->d, v->file, v->line, v->col, "expected 'include' to be a file name "
			         "or an array of file names, found %s", v->type == TOML_STRING ?
			         "an empty string" : toml_type_a_name(v->type));
			*failed = true;
			continue;
		}
		char *joined = beside(file, v->u.s);
		if (!joined) {
			ld->oom = *failed = true;
			continue;
		}
		struct toml_node *sub = load_file(ld, joined, v);
		free(joined);
		if (!sub) {
			*failed = true;
			continue;
		}
		if (!base) {
			base = sub;
		} else {
			if (!merge_into(base, sub))
				ld->oom = true;
			toml_free(sub);
		}
	}
	return base;
}

/* `at`: the include value naming this file, NULL for the file given. */
static struct toml_node *load_file(struct loading *ld, const char *path,
                                   const struct toml_node *at)
{
	char *text = NULL;
	size_t len = 0;
	int rc = read_file(path, &text, &len);
	if (rc < 0) {
		const char *why = rc == -EFBIG ? "larger than 16 MiB" : strerror(-rc);
		if (at)
			diag_add(ld->d, at->file, at->line, at->col, "cannot read the included file "
			         "'%s': %s", path, why);
		else
			diag_add(ld->d, path, 0, 0, "cannot read the configuration: %s", why);
		return NULL;
	}
	char *real = realpath(path, NULL);
	for (size_t i = 0; real && i < ld->depth; i++) {
		if (strcmp(ld->stack[i], real) != 0)
			continue;
		diag_add(ld->d, at->file, at->line, at->col, "expected no include cycle: '%s' is "
		         "already being read (it includes, directly or not, the file that names it)",
		         path);
		free(real);
		free(text);
		return NULL;
	}
	if (ld->depth >= TOML_INCLUDE_DEPTH) {
		diag_add(ld->d, at->file, at->line, at->col, "expected at most %d levels of include",
		         TOML_INCLUDE_DEPTH);
		free(real);
		free(text);
		return NULL;
	}
	const char *name = keep_name(ld, path);
	if (!real || !name) {
		ld->oom = true;
		free(real);
		free(text);
		return NULL;
	}
	struct toml_node *root = toml_parse(text, len, name, ld->d);
	free(text);
	if (!root) {
		free(real);
		return NULL;
	}
	struct toml_kv *inc = toml_find_kv(root, "include");
	if (!inc) {
		free(real);
		return root;
	}
	ld->stack[ld->depth++] = real;
	bool failed = false;
	struct toml_node *base = load_includes(ld, name, inc->val, &failed);
	ld->depth--;
	free(real);
	/* The include key goes: it is the reader's, not the consumer's. */
	size_t k = (size_t)(inc - root->u.tab.kv);
	free(inc->key);
	toml_free(inc->val);
	memmove(inc, inc + 1, (root->u.tab.n - k - 1) * sizeof(*inc));
	root->u.tab.n--;
	if (failed) {
		toml_free(base);
		toml_free(root);
		return NULL;
	}
	if (!base)
		return root;
	if (!merge_into(base, root))
		ld->oom = true;
	toml_free(root);
	return base;
}

struct toml_node *toml_load(const char *path, struct diag *d)
{
	struct loading ld = { .d = d, .files = calloc(1, sizeof(struct toml_files)) };
	if (!ld.files) {
		diag_add(d, path, 0, 0, "out of memory while reading the configuration");
		return NULL;
	}
	struct toml_node *root = load_file(&ld, path, NULL);
	if (ld.oom) {
		diag_add(d, path, 0, 0, "out of memory while reading the configuration");
		toml_free(root);
		root = NULL;
	}
	if (!root) {
		toml_files_free(ld.files);
		return NULL;
	}
	root->files = ld.files;
	return root;
}
