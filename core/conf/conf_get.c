/* SPDX-License-Identifier: MIT */
/*
 * The configuration loader's problems and typed getters (conf_internal.h).
 *
 * A problem is kept with its position and the order it was found in; the
 * loader sorts them into file order at the end and hands them to the
 * caller's diag, so an operator reads them top to bottom whatever order
 * the walk found them in.  Each getter reports a wrong type or range at
 * the value's own position, with the key's name, and leaves its output
 * untouched then.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* vasprintf, asprintf */
#endif
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/conf/conf_internal.h"
#include "core/conf/toml.h"

/* ---- problems ---- */

static void problem_v(struct loader *l, const char *file, int line, int col, const char *fmt,
                      va_list ap)
{
	char *msg = NULL;
	struct conf_problem *p = realloc(l->probs, (l->n_probs + 1) * sizeof(*p));
	if (!p || vasprintf(&msg, fmt, ap) < 0) {
		if (p)
			l->probs = p;
		l->oom = true;
		return;
	}
	l->probs = p;
	p[l->n_probs] = (struct conf_problem){ file ? file : l->file, line, col,
		                               (unsigned)l->n_probs, msg };
	l->n_probs++;
}

void conf_err_at(struct loader *l, const char *file, int line, int col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	problem_v(l, file, line, col, fmt, ap);
	va_end(ap);
}

void conf_err_node(struct loader *l, const struct toml_node *n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	problem_v(l, n ? n->file : NULL, n ? n->line : 0, n ? n->col : 0, fmt, ap);
	va_end(ap);
}

bool conf_has_problem(const struct loader *l, const struct toml_node *n)
{
	for (size_t i = 0; n && i < l->n_probs; i++)
		if (l->probs[i].line == n->line && l->probs[i].col == n->col &&
		    strcmp(l->probs[i].file, n->file ? n->file : l->file) == 0)
			return true;
	return false;
}

static int problem_cmp(const void *a, const void *b)
{
	const struct conf_problem *x = a, *y = b;
	int f = strcmp(x->file, y->file);   /* an included file's problems apart */
	if (f)
		return f;
	long xl = x->line > 0 ? x->line : INT_MAX, yl = y->line > 0 ? y->line : INT_MAX;
	if (xl != yl)
		return xl < yl ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* An included file's name, kept by the config (config_pos.file). */
static const char *keep_file(struct loader *l, const char *file)
{
	struct config *c = l->c;
	for (size_t i = 0; i < c->n_files; i++)
		if (strcmp(c->files[i], file) == 0)
			return c->files[i];
	char **v = realloc(c->files, (c->n_files + 1) * sizeof(*v));
	char *s = v ? strdup(file) : NULL;
	if (v)
		c->files = v;
	if (!s) {
		l->oom = true;
		return NULL;
	}
	v[c->n_files++] = s;
	return s;
}

struct config_pos conf_pos(struct loader *l, const struct toml_node *n)
{
	struct config_pos p = { n->line, n->col, NULL };
	if (n->file && strcmp(n->file, l->file) != 0)
		p.file = keep_file(l, n->file);
	return p;
}

void conf_sort_problems(struct loader *l)
{
	if (l->n_probs)
		qsort(l->probs, l->n_probs, sizeof(*l->probs), problem_cmp);
}

/* ---- small helpers ---- */

char *conf_strdup(struct loader *l, const char *s)
{
	char *r = strdup(s);
	if (!r)
		l->oom = true;
	return r;
}

bool conf_name_eq(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 1 && a[la - 1] == '.')
		la--;
	if (lb > 1 && b[lb - 1] == '.')
		lb--;
	return la == lb && strncasecmp(a, b, la) == 0;
}

/* Presentation-format domain name: labels 1..63 bytes, 253 in all. */
bool conf_valid_name(const char *s)
{
	size_t len = strlen(s), label = 0;
	if (strcmp(s, ".") == 0)
		return true;
	if (len == 0 || len - (s[len - 1] == '.') > 253)
		return false;
	for (const char *p = s; *p; p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '.') {
			if (label == 0)
				return false;
			label = 0;
		} else if (ch <= ' ' || ch >= 0x7f || ++label > 63) {
			return false;
		}
	}
	return true;
}

/* Optimal string alignment distance: a transposition counts as one edit. */
size_t conf_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return SIZE_MAX;
	size_t d[65][65];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

/* Reports every key of `t` that the walk did not read. */
size_t conf_check_unknown(struct loader *l, struct toml_node *t, const char *const *known,
                          const char *where)
{
	size_t n = 0;
	if (!t)
		return 0;
	for (size_t i = 0; i < t->u.tab.n; i++) {
		struct toml_kv *kv = &t->u.tab.kv[i];
		if (kv->used)
			continue;
		/* Short keys get one edit of slack, longer ones two. */
		size_t best_d = strlen(kv->key) >= 6 ? 2 : 1;
		const char *best = NULL;
		for (const char *const *k = known; *k; k++) {
			size_t dist = conf_edit_distance(kv->key, *k);
			if (dist <= best_d && (!best || dist < best_d)) {
				best = *k;
				best_d = dist;
			}
		}
		if (best)
			conf_err_at(l, kv->file, kv->line, kv->col, "unknown key '%s' in %s; did you mean '%s'?", kv->key,
			            where, best);
		else
			conf_err_at(l, kv->file, kv->line, kv->col, "unknown key '%s' in %s", kv->key, where);
		n++;
	}
	return n;
}

/* ---- paths ---- */

char *conf_path_join(struct loader *l, const char *base, const char *rel)
{
	char *r = NULL;
	while (rel[0] == '.' && rel[1] == '/')
		for (rel += 2; *rel == '/'; rel++)
			;
	if (rel[0] == '\0' || strcmp(rel, ".") == 0)
		return conf_strdup(l, base);
	size_t bl = strlen(base);
	if (asprintf(&r, "%s%s%s", base, bl && base[bl - 1] == '/' ? "" : "/", rel) < 0) {
		l->oom = true;
		return NULL;
	}
	return r;
}

/* ---- typed getters: NULL/false when absent or wrong (already reported) ---- */

struct toml_node *conf_get_type(struct loader *l, struct toml_node *t, const char *key,
                                enum toml_type want)
{
	struct toml_node *n = toml_get(t, key);
	if (!n)
		return NULL;
	if (n->type != want) {
		conf_err_node(l, n, "expected %s for '%s', found %s", toml_type_a_name(want), key,
		              toml_type_name(n->type));
		return NULL;
	}
	return n;
}

bool conf_get_str(struct loader *l, struct toml_node *t, const char *key, bool allow_empty,
                  char **out)
{
	struct toml_node *n = conf_get_type(l, t, key, TOML_STRING);
	if (!n)
		return false;
	if (!allow_empty && n->u.s[0] == '\0') {
		conf_err_node(l, n, "expected a non-empty string for '%s'", key);
		return false;
	}
	free(*out);
	*out = conf_strdup(l, n->u.s);
	return *out != NULL;
}

bool conf_get_path(struct loader *l, struct toml_node *t, const char *key, char **out)
{
	char *rel = NULL;
	if (!conf_get_str(l, t, key, false, &rel))
		return false;
	free(*out);
	*out = config_resolve_path(l->c, rel);
	free(rel);
	if (!*out)
		l->oom = true;
	return *out != NULL;
}

bool conf_get_bool(struct loader *l, struct toml_node *t, const char *key, bool *out)
{
	struct toml_node *n = conf_get_type(l, t, key, TOML_BOOL);
	if (n)
		*out = n->u.b;
	return n != NULL;
}

bool conf_get_int(struct loader *l, struct toml_node *t, const char *key, int64_t lo, int64_t hi,
                  int64_t *out)
{
	struct toml_node *n = conf_get_type(l, t, key, TOML_INT);
	if (!n)
		return false;
	if (n->u.i < lo || n->u.i > hi) {
		conf_err_node(l, n, "expected '%s' between %lld and %lld, found %lld", key, (long long)lo,
		              (long long)hi, (long long)n->u.i);
		return false;
	}
	*out = n->u.i;
	return true;
}

/* Integers and floats both count as numbers (latitude = 48 is fine). */
bool conf_get_num(struct loader *l, struct toml_node *t, const char *key, double lo, double hi,
                  double *out)
{
	struct toml_node *n = toml_get(t, key);
	double v;
	if (!n)
		return false;
	if (n->type == TOML_INT) {
		v = (double)n->u.i;
	} else if (n->type == TOML_FLOAT) {
		v = n->u.f;
	} else {
		conf_err_node(l, n, "expected a number for '%s', found %s", key, toml_type_name(n->type));
		return false;
	}
	if (!(v >= lo && v <= hi)) {
		conf_err_node(l, n, "expected '%s' between %g and %g, found %g", key, lo, hi, v);
		return false;
	}
	*out = v;
	return true;
}

void conf_fmt_duration(uint64_t ms, char *buf, size_t size)
{
	if (ms && ms % CONF_DAY == 0)
		snprintf(buf, size, "%llud", (unsigned long long)(ms / CONF_DAY));
	else if (ms && ms % CONF_HOUR == 0)
		snprintf(buf, size, "%lluh", (unsigned long long)(ms / CONF_HOUR));
	else if (ms && ms % CONF_MINUTE == 0)
		snprintf(buf, size, "%llum", (unsigned long long)(ms / CONF_MINUTE));
	else if (ms % CONF_SECOND == 0)
		snprintf(buf, size, "%llus", (unsigned long long)(ms / CONF_SECOND));
	else
		snprintf(buf, size, "%llums", (unsigned long long)ms);
}

/* "90", "90s", "15m", "24h", "14d", "500ms" -> milliseconds; false if malformed. */
static bool parse_duration(const char *s, uint64_t *ms)
{
	char *end;
	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	uint64_t unit;
	if (errno)
		return false;
	if (strcmp(end, "") == 0 || strcmp(end, "s") == 0)
		unit = CONF_SECOND;
	else if (strcmp(end, "ms") == 0)
		unit = 1;
	else if (strcmp(end, "m") == 0)
		unit = CONF_MINUTE;
	else if (strcmp(end, "h") == 0)
		unit = CONF_HOUR;
	else if (strcmp(end, "d") == 0)
		unit = CONF_DAY;
	else
		return false;
	if (v > UINT64_MAX / unit)
		return false;
	*ms = v * unit;
	return true;
}

/* A duration: integer seconds, or a string with a unit. */
bool conf_get_duration(struct loader *l, struct toml_node *t, const char *key, uint64_t lo,
                       uint64_t hi, bool whole_seconds, uint64_t *out)
{
	struct toml_node *n = toml_get(t, key);
	char slo[32], shi[32], sv[32];
	uint64_t ms;
	if (!n)
		return false;
	if (n->type == TOML_INT) {
		if (n->u.i < 0 || (uint64_t)n->u.i > UINT64_MAX / CONF_SECOND) {
			conf_err_node(l, n, "expected a duration for '%s', found %lld", key, (long long)n->u.i);
			return false;
		}
		ms = (uint64_t)n->u.i * CONF_SECOND;
	} else if (n->type == TOML_STRING) {
		if (!parse_duration(n->u.s, &ms)) {
			conf_err_node(l, n, "expected a duration for '%s' (seconds, or a number with "
			              "ms, s, m, h or d), found '%s'", key, n->u.s);
			return false;
		}
	} else {
		conf_err_node(l, n, "expected a duration for '%s', found %s", key, toml_type_name(n->type));
		return false;
	}
	conf_fmt_duration(ms, sv, sizeof(sv));
	if (whole_seconds && ms % CONF_SECOND) {
		conf_err_node(l, n, "expected a whole number of seconds for '%s', found %s", key, sv);
		return false;
	}
	if (ms < lo || ms > hi) {
		conf_fmt_duration(lo, slo, sizeof(slo));
		conf_fmt_duration(hi, shi, sizeof(shi));
		conf_err_node(l, n, "expected '%s' between %s and %s, found %s", key, slo, shi, sv);
		return false;
	}
	*out = ms;
	return true;
}

/* An array whose items are all strings (non-empty).  NULL when absent or bad. */
struct toml_node *conf_get_str_array(struct loader *l, struct toml_node *t, const char *key)
{
	struct toml_node *n = conf_get_type(l, t, key, TOML_ARRAY);
	bool ok = true;
	if (!n)
		return NULL;
	for (size_t i = 0; i < n->u.arr.n; i++) {
		struct toml_node *it = n->u.arr.items[i];
		if (it->type != TOML_STRING) {
			conf_err_node(l, it, "expected a string in '%s', found %s", key,
			              toml_type_name(it->type));
			ok = false;
		} else if (it->u.s[0] == '\0') {
			conf_err_node(l, it, "expected a non-empty string in '%s'", key);
			ok = false;
		}
	}
	return ok ? n : NULL;
}

/* Copies the strings of a checked array; paths are resolved when asked. */
char **conf_copy_strs(struct loader *l, struct toml_node *arr, bool paths, size_t *n)
{
	char **v = calloc(arr->u.arr.n ? arr->u.arr.n : 1, sizeof(*v));
	if (!v) {
		l->oom = true;
		return NULL;
	}
	for (size_t i = 0; i < arr->u.arr.n; i++) {
		const char *s = arr->u.arr.items[i]->u.s;
		v[i] = paths ? config_resolve_path(l->c, s) : conf_strdup(l, s);
		if (!v[i])
			l->oom = true;
	}
	*n = arr->u.arr.n;
	return v;
}

struct toml_node *conf_get_table(struct loader *l, struct toml_node *t, const char *key)
{
	return conf_get_type(l, t, key, TOML_TABLE);
}

/* [[key]]: an array of tables (inline tables in a plain array work too). */
static struct toml_node *get_tables(struct loader *l, struct toml_node *t, const char *key,
                                    const char *header)
{
	struct toml_node *n = toml_get(t, key);
	bool ok = true;
	if (!n)
		return NULL;
	if (n->type != TOML_ARRAY) {
		conf_err_node(l, n, "expected an array of tables for '%s' (write %s), found %s", key,
		              header, toml_type_name(n->type));
		return NULL;
	}
	for (size_t i = 0; i < n->u.arr.n; i++) {
		struct toml_node *it = n->u.arr.items[i];
		if (it->type != TOML_TABLE) {
			conf_err_node(l, it, "expected a table in '%s', found %s", key,
			              toml_type_name(it->type));
			ok = false;
		}
	}
	return ok ? n : NULL;
}

/*
 * The array of tables at `key` and zeroed room for one `size`-byte struct
 * per table in *out.  NULL when absent or empty, or out of memory (noted).
 */
struct toml_node *conf_get_tables_alloc(struct loader *l, struct toml_node *t,
                                        const char *key, const char *header, size_t size,
                                        void **out)
{
	struct toml_node *arr = get_tables(l, t, key, header);
	*out = NULL;
	if (!arr || arr->u.arr.n == 0)
		return NULL;
	*out = calloc(arr->u.arr.n, size);
	if (!*out) {
		l->oom = true;
		return NULL;
	}
	return arr;
}

void conf_missing(struct loader *l, const struct toml_node *t, const char *key,
                  const char *where)
{
	conf_err_node(l, t, "expected '%s' in %s", key, where);
}
