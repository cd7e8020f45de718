/* SPDX-License-Identifier: MIT */
/*
 * A TOML reader for geoacme's configuration (TOML 1.0 minus multi-line
 * strings and dates).  One recursive-descent pass builds a tree of
 * toml_node; every node keeps the line and column where it was written.
 *
 * Errors: each statement (a header or a key/value line) either parses or
 * produces exactly one "file:line:col: expected ..." message.  After an
 * error the parser skips to the next line; when the error happened inside
 * a multi-line array it keeps skipping until the brackets balance or a line
 * that looks like a new statement, so one mistake does not cascade into a
 * message per array element.  Parsing goes on to the end and fails once.
 *
 * Table rules (TOML 1.0, section "Table"): a table may be defined by one
 * header only; parents named by a header are created "implicitly" and may
 * be defined later; tables made by dotted keys can get sub-tables from
 * headers but not be redefined; inline tables are closed.  The flags below
 * record which of these made each node.
 */
#include "core/conf/toml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/conf/diag.h"
#include "core/conf/toml_internal.h"

#define TOML_MAX_DEPTH 64       /* nested arrays / inline tables */
#define TOML_MAX_KEY_PARTS 64
#define TOKEN_SHOW 40           /* longest token quoted back in a message */

struct pos {
	int line, col;
};

struct key_part {
	char *s;
	struct pos at;
};

struct key {
	struct key_part *parts;
	size_t n;
};

struct parser {
	const char *p, *end, *line_start;
	int line;
	const char *file;
	struct diag *d;
	int errors;
	bool oom;
	int depth;          /* arrays and inline tables open in this statement */
	int arrays;         /* arrays open in this statement */
	int err_arrays;     /* arrays open when the statement's error was found */
	struct toml_node *root;
	struct toml_node *cur;      /* table that key/values go into */
	struct toml_node *sink;     /* stands in for `cur` after a broken header */
};

/* ---- errors and positions ---- */

static struct pos here(const struct parser *p)
{
	struct pos at = { p->line, (int)(p->p - p->line_start) + 1 };
	return at;
}

static void fail_at(struct parser *p, struct pos at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail_at(struct parser *p, struct pos at, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vadd(p->d, p->file, at.line, at.col, fmt, ap);
	va_end(ap);
	p->errors++;
	p->err_arrays = p->arrays;
}

static void *oom(struct parser *p)
{
	p->oom = true;
	return NULL;
}

static void *xcalloc(struct parser *p, size_t n, size_t size)
{
	void *v = calloc(n, size);
	return v ? v : oom(p);
}

static char *xstrndup(struct parser *p, const char *s, size_t n)
{
	char *v = strndup(s, n);
	return v ? v : oom(p);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one. */
static size_t utf8_len(const char *s, const char *end)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t avail = (size_t)(end - s);
	uint32_t cp;
	size_t n;

	if (avail == 0)
		return 0;
	if (u[0] < 0x80)
		return 1;
	if (u[0] >= 0xc2 && u[0] <= 0xdf) {
		n = 2;
		cp = u[0] & 0x1f;
	} else if (u[0] >= 0xe0 && u[0] <= 0xef) {
		n = 3;
		cp = u[0] & 0x0f;
	} else if (u[0] >= 0xf0 && u[0] <= 0xf4) {
		n = 4;
		cp = u[0] & 0x07;
	} else {
		return 0;
	}
	if (avail < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (u[i] & 0x3f);
	}
	/* Overlong forms, surrogates and code points past U+10FFFF. */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* How the byte at `at` reads in a "found ..." clause. */
static const char *found(const struct parser *p, const char *at, char buf[24])
{
	if (at >= p->end)
		return "end of file";
	unsigned char c = (unsigned char)*at;
	if (c == '\n' || (c == '\r' && at + 1 < p->end && at[1] == '\n'))
		return "end of line";
	if (c >= 0x20 && c < 0x7f) {
		snprintf(buf, 24, "'%c'", c);
		return buf;
	}
	if (c >= 0x80) {
		size_t n = utf8_len(at, p->end);
		if (n) {
			snprintf(buf, 24, "'%.*s'", (int)n, at);
			return buf;
		}
	}
	snprintf(buf, 24, "byte 0x%02x", c);
	return buf;
}

#define FOUND(p) found((p), (p)->p, fbuf)

const char *toml_type_a_name(enum toml_type t)
{
	switch (t) {
	case TOML_STRING: return "a string";
	case TOML_INT: return "an integer";
	case TOML_FLOAT: return "a float";
	case TOML_BOOL: return "a boolean";
	case TOML_ARRAY: return "an array";
	case TOML_TABLE: return "a table";
	}
	return "a value";
}

const char *toml_type_name(enum toml_type t)
{
	switch (t) {
	case TOML_STRING: return "string";
	case TOML_INT: return "integer";
	case TOML_FLOAT: return "float";
	case TOML_BOOL: return "boolean";
	case TOML_ARRAY: return "array";
	case TOML_TABLE: return "table";
	}
	return "value";
}

/* ---- the tree ---- */

static struct toml_node *new_node(struct parser *p, enum toml_type type, struct pos at)
{
	struct toml_node *n = xcalloc(p, 1, sizeof(*n));
	if (!n)
		return NULL;
	n->type = type;
	n->line = at.line;
	n->col = at.col;
	n->file = p->file;
	return n;
}

void toml_free(struct toml_node *n)
{
	if (!n)
		return;
	switch (n->type) {
	case TOML_STRING:
		free(n->u.s);
		break;
	case TOML_ARRAY:
		for (size_t i = 0; i < n->u.arr.n; i++)
			toml_free(n->u.arr.items[i]);
		free(n->u.arr.items);
		break;
	case TOML_TABLE:
		for (size_t i = 0; i < n->u.tab.n; i++) {
			free(n->u.tab.kv[i].key);
			toml_free(n->u.tab.kv[i].val);
		}
		free(n->u.tab.kv);
		break;
	default:
		break;
	}
	toml_files_free(n->files);
	free(n);
}

struct toml_kv *toml_find_kv(struct toml_node *t, const char *key)
{
	for (size_t i = 0; i < t->u.tab.n; i++)
		if (strcmp(t->u.tab.kv[i].key, key) == 0)
			return &t->u.tab.kv[i];
	return NULL;
}

struct toml_node *toml_get(struct toml_node *table, const char *key)
{
	if (!table || table->type != TOML_TABLE)
		return NULL;
	struct toml_kv *kv = toml_find_kv(table, key);
	if (!kv)
		return NULL;
	kv->used = true;
	return kv->val;
}

/* Adds key -> val to t, taking val.  Tables are small: grow one at a time. */
static bool add_kv(struct parser *p, struct toml_node *t, const struct key_part *k,
                   struct toml_node *val)
{
	char *key = xstrndup(p, k->s, strlen(k->s));
	struct toml_kv *kv = key ? realloc(t->u.tab.kv, (t->u.tab.n + 1) * sizeof(*kv)) : NULL;
	if (!kv) {
		free(key);
		oom(p);
		return false;
	}
	t->u.tab.kv = kv;
	kv[t->u.tab.n++] = (struct toml_kv){ .key = key, .line = k->at.line, .col = k->at.col,
		                             .file = p->file, .val = val };
	return true;
}

static bool append_item(struct parser *p, struct toml_node *arr, struct toml_node *item)
{
	struct toml_node **items = realloc(arr->u.arr.items, (arr->u.arr.n + 1) * sizeof(*items));
	if (!items) {
		oom(p);
		return false;
	}
	arr->u.arr.items = items;
	items[arr->u.arr.n++] = item;
	return true;
}

static void mark_inline(struct toml_node *n)
{
	if (n->type == TOML_TABLE) {
		n->flags |= TF_INLINE;
		for (size_t i = 0; i < n->u.tab.n; i++)
			mark_inline(n->u.tab.kv[i].val);
	} else if (n->type == TOML_ARRAY) {
		for (size_t i = 0; i < n->u.arr.n; i++)
			mark_inline(n->u.arr.items[i]);
	}
}

/* ---- whitespace, newlines, comments ---- */

static void skip_ws(struct parser *p)
{
	while (p->p < p->end && (*p->p == ' ' || *p->p == '\t'))
		p->p++;
}

static bool newline(struct parser *p)
{
	if (p->p < p->end && *p->p == '\n') {
		p->p++;
	} else if (p->end - p->p >= 2 && p->p[0] == '\r' && p->p[1] == '\n') {
		p->p += 2;
	} else {
		return false;
	}
	p->line++;
	p->line_start = p->p;
	return true;
}

static bool at_eol(const struct parser *p)
{
	return p->p >= p->end || *p->p == '\n' ||
	       (p->end - p->p >= 2 && p->p[0] == '\r' && p->p[1] == '\n');
}

/* Text that is not a control character (tab allowed) and is valid UTF-8. */
static bool text_char(struct parser *p, const char *what, size_t *len)
{
	unsigned char c = (unsigned char)*p->p;
	if (c >= 0x80) {
		*len = utf8_len(p->p, p->end);
		if (*len)
			return true;
		fail_at(p, here(p), "expected valid UTF-8 in %s, found byte 0x%02x", what, c);
		return false;
	}
	if ((c < 0x20 && c != '\t') || c == 0x7f) {
		fail_at(p, here(p), "expected a printable character in %s, found byte 0x%02x", what, c);
		return false;
	}
	*len = 1;
	return true;
}

static bool skip_comment(struct parser *p)
{
	p->p++;     /* '#' */
	while (!at_eol(p)) {
		size_t n;
		if (!text_char(p, "a comment", &n))
			return false;
		p->p += n;
	}
	return true;
}

/* Inside arrays: blanks, newlines and comments. */
static bool skip_blank(struct parser *p)
{
	for (;;) {
		skip_ws(p);
		if (p->p < p->end && *p->p == '#') {
			if (!skip_comment(p))
				return false;
		} else if (!newline(p)) {
			return true;
		}
	}
}

/* ---- strings ---- */

struct buf {
	char *s;
	size_t n, cap;
};

static bool buf_put(struct parser *p, struct buf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 32;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *ns = realloc(b->s, cap);
		if (!ns) {
			oom(p);
			return false;
		}
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static size_t utf8_encode(uint32_t cp, char out[4])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* At a backslash inside a basic string: appends the escaped text. */
static bool parse_escape(struct parser *p, struct buf *b)
{
	char fbuf[24];
	struct pos at = here(p);
	const char *bs = p->p;
	char c = p->p + 1 < p->end ? p->p[1] : '\0';
	const char *simple = NULL;

	switch (c) {
	case 'b': simple = "\b"; break;
	case 't': simple = "\t"; break;
	case 'n': simple = "\n"; break;
	case 'f': simple = "\f"; break;
	case 'r': simple = "\r"; break;
	case '"': simple = "\""; break;
	case '\\': simple = "\\"; break;
	case 'u':
	case 'U':
		break;
	default:
		p->p++;
		fail_at(p, at, "expected an escape sequence after '\\', found %s", FOUND(p));
		return false;
	}
	if (simple) {
		p->p += 2;
		return buf_put(p, b, simple, 1);
	}

	int ndig = c == 'u' ? 4 : 8;
	uint32_t cp = 0;
	p->p += 2;
	for (int i = 0; i < ndig; i++) {
		int v = p->p + i < p->end ? hexval(p->p[i]) : -1;
		if (v < 0) {
			fail_at(p, at, "expected %d hex digits after '\\%c'", ndig, c);
			return false;
		}
		cp = cp << 4 | (uint32_t)v;
	}
	p->p += ndig;
	if (cp == 0) {
		fail_at(p, at, "expected a character other than NUL, found '%.*s'", ndig + 2, bs);
		return false;
	}
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
		fail_at(p, at, "expected a Unicode scalar value, found '%.*s'", ndig + 2, bs);
		return false;
	}
	char enc[4];
	return buf_put(p, b, enc, utf8_encode(cp, enc));
}

/* At an opening quote ('"' or '\''): the string's contents, malloc'd. */
static char *parse_string(struct parser *p)
{
	char fbuf[24];
	struct buf b = { 0 };
	char q = *p->p;

	if (p->end - p->p >= 3 && p->p[1] == q && p->p[2] == q) {
		fail_at(p, here(p), "expected a single-line string (multi-line strings are not supported)");
		return NULL;
	}
	p->p++;
	if (!buf_put(p, &b, "", 0))
		return NULL;
	for (;;) {
		size_t n;
		if (at_eol(p)) {
			fail_at(p, here(p), "expected closing %s, found %s", q == '"' ? "'\"'" : "\"'\"",
			        FOUND(p));
			goto fail;
		}
		if (*p->p == q) {
			p->p++;
			return b.s;
		}
		if (q == '"' && *p->p == '\\') {
			if (!parse_escape(p, &b))
				goto fail;
			continue;
		}
		if (!text_char(p, "a string", &n))
			goto fail;
		if (!buf_put(p, &b, p->p, n))
			goto fail;
		p->p += n;
	}
fail:
	free(b.s);
	return NULL;
}

/* ---- keys ---- */

static bool is_bare(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

static void key_clear(struct key *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->parts[i].s);
	free(k->parts);
	k->parts = NULL;
	k->n = 0;
}

/* A dotted key; leaves the cursor after trailing blanks. */
static bool parse_key(struct parser *p, struct key *k)
{
	char fbuf[24];
	k->parts = NULL;
	k->n = 0;
	for (;;) {
		struct key_part part = { .at = here(p) };
		if (k->n == TOML_MAX_KEY_PARTS) {
			fail_at(p, part.at, "expected at most %d dotted key parts", TOML_MAX_KEY_PARTS);
			goto fail;
		}
		if (p->p < p->end && (*p->p == '"' || *p->p == '\'')) {
			part.s = parse_string(p);
		} else if (p->p < p->end && is_bare(*p->p)) {
			const char *s = p->p;
			while (p->p < p->end && is_bare(*p->p))
				p->p++;
			part.s = xstrndup(p, s, (size_t)(p->p - s));
		} else {
			fail_at(p, part.at, "expected a key, found %s", FOUND(p));
			goto fail;
		}
		if (!part.s)
			goto fail;
		struct key_part *parts = realloc(k->parts, (k->n + 1) * sizeof(*parts));
		if (!parts) {
			free(part.s);
			oom(p);
			goto fail;
		}
		k->parts = parts;
		k->parts[k->n++] = part;
		skip_ws(p);
		if (p->p < p->end && *p->p == '.') {
			p->p++;
			skip_ws(p);
			continue;
		}
		return true;
	}
fail:
	key_clear(k);
	return false;
}

/* "a.b.c" for messages; quoted parts are shown as their text. */
static void key_text(const struct key *k, size_t nparts, char *out, size_t size)
{
	size_t len = 0;
	out[0] = '\0';
	for (size_t i = 0; i < nparts && len < size; i++) {
		int w = snprintf(out + len, size - len, "%s%s", i ? "." : "", k->parts[i].s);
		if (w < 0)
			break;
		len += (size_t)w;
	}
}

/* ---- scalars ---- */

static bool is_token_char(char c)
{
	return is_bare(c) || c == '+' || c == '.' || c == ':';
}

static bool all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static bool looks_like_date(const char *s, size_t len)
{
	if (len >= 10 && all_digits(s, 4) && s[4] == '-' && all_digits(s + 5, 2) && s[7] == '-' &&
	    all_digits(s + 8, 2))
		return true;
	return len >= 5 && all_digits(s, 2) && s[2] == ':' && all_digits(s + 3, 2);
}

/*
 * Digits of `base` with single underscores between digits, from s[*i].
 * Returns how many digits, or -1 for a misplaced underscore.
 */
static int digits(const char *s, size_t len, size_t *i, int base)
{
	int count = 0;
	while (*i < len) {
		int v = hexval(s[*i]);
		if (v >= 0 && v < base) {
			count++;
		} else if (s[*i] == '_') {
			if (count == 0 || *i + 1 >= len)
				return -1;
			int nv = hexval(s[*i + 1]);
			if (nv < 0 || nv >= base)
				return -1;
		} else {
			break;
		}
		(*i)++;
	}
	return count;
}

enum { NUM_OK, NUM_BAD, NUM_LEADING_ZERO, NUM_RANGE };

static int parse_number(const char *s, size_t len, struct toml_node *n)
{
	size_t i = 0;
	bool neg = false, sign = false;

	if (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-';
		sign = true;
		i++;
	}
	if (len - i == 3 && (memcmp(s + i, "inf", 3) == 0 || memcmp(s + i, "nan", 3) == 0)) {
		n->type = TOML_FLOAT;
		n->u.f = s[i] == 'i' ? INFINITY : NAN;
		if (neg)
			n->u.f = -n->u.f;
		return NUM_OK;
	}

	if (len - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'o' || s[i + 1] == 'b')) {
		int base = s[i + 1] == 'x' ? 16 : s[i + 1] == 'o' ? 8 : 2;
		size_t start = i + 2;
		uint64_t v = 0;
		if (sign)
			return NUM_BAD;     /* TOML: prefixed integers take no sign */
		i = start;
		if (digits(s, len, &i, base) <= 0 || i != len)
			return NUM_BAD;
		for (size_t j = start; j < len; j++) {
			if (s[j] == '_')
				continue;
			uint64_t d = (uint64_t)hexval(s[j]);
			if (v > ((uint64_t)INT64_MAX - d) / (uint64_t)base)
				return NUM_RANGE;
			v = v * (uint64_t)base + d;
		}
		n->type = TOML_INT;
		n->u.i = (int64_t)v;
		return NUM_OK;
	}

	size_t int_start = i;
	int nint = digits(s, len, &i, 10);
	bool is_float = false;
	if (nint <= 0)
		return NUM_BAD;
	if (i < len && s[i] == '.') {
		i++;
		if (digits(s, len, &i, 10) <= 0)
			return NUM_BAD;
		is_float = true;
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		if (digits(s, len, &i, 10) <= 0)
			return NUM_BAD;
		is_float = true;
	}
	if (i != len)
		return NUM_BAD;
	if (nint > 1 && s[int_start] == '0')
		return NUM_LEADING_ZERO;

	/* strtod/strtoll want the digits without underscores. */
	char clean[128];
	size_t cn = 0;
	if (len >= sizeof(clean))
		return NUM_RANGE;
	for (size_t j = 0; j < len; j++)
		if (s[j] != '_')
			clean[cn++] = s[j];
	clean[cn] = '\0';
	errno = 0;
	if (is_float) {
		n->type = TOML_FLOAT;
		n->u.f = strtod(clean, NULL);
		if (errno == ERANGE && isinf(n->u.f))
			return NUM_RANGE;
	} else {
		n->type = TOML_INT;
		n->u.i = strtoll(clean, NULL, 10);
		if (errno == ERANGE)
			return NUM_RANGE;
	}
	return NUM_OK;
}

/* Booleans, numbers, and the friendliest message for anything else. */
static struct toml_node *parse_scalar(struct parser *p)
{
	char fbuf[24];
	struct pos at = here(p);
	const char *s = p->p;
	while (p->p < p->end && is_token_char(*p->p))
		p->p++;
	size_t len = (size_t)(p->p - s);
	int show = len > TOKEN_SHOW ? TOKEN_SHOW : (int)len;

	if (len == 0) {
		fail_at(p, at, "expected a value, found %s", FOUND(p));
		return NULL;
	}
	struct toml_node *n = new_node(p, TOML_BOOL, at);
	if (!n)
		return NULL;
	if (len == 4 && memcmp(s, "true", 4) == 0) {
		n->u.b = true;
		return n;
	}
	if (len == 5 && memcmp(s, "false", 5) == 0) {
		n->u.b = false;
		return n;
	}
	if (looks_like_date(s, len)) {
		fail_at(p, at, "expected a value, found '%.*s' (dates and times are not supported)",
		        show, s);
		goto fail;
	}
	bool word = (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z');
	switch (parse_number(s, len, n)) {
	case NUM_OK:
		return n;
	case NUM_LEADING_ZERO:
		fail_at(p, at, "expected a number without leading zeros, found '%.*s'", show, s);
		break;
	case NUM_RANGE:
		fail_at(p, at, "expected a number that fits in 64 bits, found '%.*s'", show, s);
		break;
	default:
		if (word)
			fail_at(p, at, "expected a value, found '%.*s' (strings must be quoted)", show, s);
		else
			fail_at(p, at, "expected a number, found '%.*s'", show, s);
		break;
	}
fail:
	free(n);
	return NULL;
}

/* ---- arrays, inline tables, values ---- */

static struct toml_node *parse_value(struct parser *p);
static bool insert_dotted(struct parser *p, struct toml_node *t, struct key *k,
                          struct toml_node *val);

static bool enter(struct parser *p, struct pos at)
{
	if (p->depth >= TOML_MAX_DEPTH) {
		fail_at(p, at, "expected at most %d levels of nested arrays and tables",
		        TOML_MAX_DEPTH);
		return false;
	}
	p->depth++;
	return true;
}

static struct toml_node *parse_array(struct parser *p)
{
	char fbuf[24];
	struct pos at = here(p);
	if (!enter(p, at))
		return NULL;
	struct toml_node *arr = new_node(p, TOML_ARRAY, at);
	if (!arr)
		return NULL;
	p->p++;
	p->arrays++;
	for (;;) {
		if (!skip_blank(p))
			goto fail;
		if (p->p < p->end && *p->p == ']')
			break;
		if (p->p >= p->end) {
			fail_at(p, here(p), "expected ']' to close the array, found end of file");
			goto fail;
		}
		struct toml_node *item = parse_value(p);
		if (!item)
			goto fail;
		if (!append_item(p, arr, item)) {
			toml_free(item);
			goto fail;
		}
		if (!skip_blank(p))
			goto fail;
		if (p->p < p->end && *p->p == ',') {
			p->p++;
			continue;
		}
		if (p->p < p->end && *p->p == ']')
			break;
		fail_at(p, here(p), "expected ',' or ']', found %s", FOUND(p));
		goto fail;
	}
	p->p++;
	p->arrays--;
	p->depth--;
	return arr;
fail:
	toml_free(arr);
	return NULL;
}

static struct toml_node *parse_inline_table(struct parser *p)
{
	char fbuf[24];
	struct pos at = here(p);
	if (!enter(p, at))
		return NULL;
	struct toml_node *t = new_node(p, TOML_TABLE, at);
	if (!t)
		return NULL;
	p->p++;
	skip_ws(p);
	if (p->p < p->end && *p->p == '}') {
		p->p++;
		goto done;
	}
	for (;;) {
		struct key k;
		if (!parse_key(p, &k))
			goto fail;
		if (p->p >= p->end || *p->p != '=') {
			fail_at(p, here(p), "expected '=' after the key, found %s", FOUND(p));
			key_clear(&k);
			goto fail;
		}
		p->p++;
		skip_ws(p);
		struct toml_node *val = parse_value(p);
		if (!val) {
			key_clear(&k);
			goto fail;
		}
		bool ok = insert_dotted(p, t, &k, val);
		key_clear(&k);
		if (!ok)
			goto fail;
		skip_ws(p);
		if (p->p < p->end && *p->p == ',') {
			p->p++;
			skip_ws(p);
			continue;
		}
		if (p->p < p->end && *p->p == '}') {
			p->p++;
			break;
		}
		fail_at(p, here(p), "expected ',' or '}', found %s", FOUND(p));
		goto fail;
	}
done:
	mark_inline(t);
	p->depth--;
	return t;
fail:
	toml_free(t);
	return NULL;
}

static struct toml_node *parse_value(struct parser *p)
{
	char fbuf[24];
	if (p->p >= p->end || at_eol(p)) {
		fail_at(p, here(p), "expected a value, found %s", FOUND(p));
		return NULL;
	}
	switch (*p->p) {
	case '"':
	case '\'': {
		struct toml_node *n = new_node(p, TOML_STRING, here(p));
		if (!n)
			return NULL;
		n->u.s = parse_string(p);
		if (!n->u.s) {
			free(n);
			return NULL;
		}
		return n;
	}
	case '[':
		return parse_array(p);
	case '{':
		return parse_inline_table(p);
	default:
		return parse_scalar(p);
	}
}

/* ---- putting keys and tables in place ---- */

/* Creates the table named by `part` inside t (dotted or implicit); NULL when out of memory. */
static struct toml_node *add_subtable(struct parser *p, struct toml_node *t,
                                      struct key_part *part, unsigned flags)
{
	struct toml_node *sub = new_node(p, TOML_TABLE, part->at);
	if (!sub)
		return NULL;
	sub->flags = flags;
	if (!add_kv(p, t, part, sub)) {
		free(sub);
		return NULL;
	}
	return sub;
}

/* Puts val at the dotted key k below t, creating dotted tables; takes val. */
static bool insert_dotted(struct parser *p, struct toml_node *t, struct key *k,
                          struct toml_node *val)
{
	for (size_t i = 0; i + 1 < k->n; i++) {
		struct key_part *part = &k->parts[i];
		struct toml_kv *kv = toml_find_kv(t, part->s);
		if (!kv) {
			if (!(t = add_subtable(p, t, part, TF_DOTTED)))
				goto fail;
			continue;
		}
		struct toml_node *v = kv->val;
		if (v->type == TOML_TABLE && (v->flags & TF_DOTTED) && !(v->flags & TF_INLINE)) {
			t = v;
			continue;
		}
		if (v->type == TOML_TABLE)
			fail_at(p, part->at, "table '%s' is already defined (line %d); "
			        "expected a key that is not set", part->s, kv->line);
		else
			fail_at(p, part->at, "key '%s' is already set to %s (line %d); expected a table",
			        part->s, toml_type_a_name(v->type), kv->line);
		goto fail;
	}
	struct key_part *last = &k->parts[k->n - 1];
	struct toml_kv *kv = toml_find_kv(t, last->s);
	if (kv) {
		fail_at(p, last->at, "duplicate key '%s' (first set at line %d)", last->s, kv->line);
		goto fail;
	}
	if (add_kv(p, t, last, val))
		return true;
fail:
	toml_free(val);
	return false;
}

/* [a.b.c] or [[a.b.c]]: finds or makes the table that follows keys go in. */
static bool define_table(struct parser *p, struct key *k, bool aot, struct pos at)
{
	char name[256];
	struct toml_node *t = p->root;

	for (size_t i = 0; i + 1 < k->n; i++) {
		struct key_part *part = &k->parts[i];
		struct toml_kv *kv = toml_find_kv(t, part->s);
		if (!kv) {
			if (!(t = add_subtable(p, t, part, TF_IMPLICIT)))
				return false;
			continue;
		}
		struct toml_node *v = kv->val;
		if (v->type == TOML_TABLE && !(v->flags & TF_INLINE)) {
			t = v;
		} else if (v->type == TOML_ARRAY && (v->flags & TF_AOT)) {
			t = v->u.arr.items[v->u.arr.n - 1];
		} else if (v->type == TOML_TABLE) {
			fail_at(p, part->at, "table '%s' was written inline (line %d); "
			        "expected a table that can be extended", part->s, kv->line);
			return false;
		} else {
			fail_at(p, part->at, "key '%s' is already set to %s (line %d); expected a table",
			        part->s, toml_type_a_name(v->type), kv->line);
			return false;
		}
	}

	struct key_part *last = &k->parts[k->n - 1];
	struct toml_kv *kv = toml_find_kv(t, last->s);
	key_text(k, k->n, name, sizeof(name));
	if (!aot) {
		if (!kv) {
			struct toml_node *tab = new_node(p, TOML_TABLE, at);
			if (!tab)
				return false;
			tab->flags = TF_HEADER;
			if (!add_kv(p, t, last, tab)) {
				free(tab);
				return false;
			}
			p->cur = tab;
			return true;
		}
		struct toml_node *v = kv->val;
		if (v->type == TOML_TABLE && v->flags == TF_IMPLICIT) {
			v->flags = TF_HEADER;
			v->line = at.line;
			v->col = at.col;
			p->cur = v;
			return true;
		}
		if (v->type == TOML_TABLE)
			fail_at(p, at, "table [%s] is defined twice (first at line %d)", name, v->line);
		else
			fail_at(p, at, "key '%s' is already set to %s (line %d); expected a table",
			        last->s, toml_type_a_name(v->type), kv->line);
		return false;
	}

	struct toml_node *arr;
	if (!kv) {
		arr = new_node(p, TOML_ARRAY, at);
		if (!arr)
			return false;
		arr->flags = TF_AOT;
		if (!add_kv(p, t, last, arr)) {
			free(arr);
			return false;
		}
	} else if (kv->val->type == TOML_ARRAY && (kv->val->flags & TF_AOT)) {
		arr = kv->val;
	} else {
		fail_at(p, at, "key '%s' is already set to %s (line %d); expected an array of tables",
		        last->s, toml_type_a_name(kv->val->type), kv->line);
		return false;
	}
	struct toml_node *tab = new_node(p, TOML_TABLE, at);
	if (!tab)
		return false;
	tab->flags = TF_HEADER;
	if (!append_item(p, arr, tab)) {
		free(tab);
		return false;
	}
	p->cur = tab;
	return true;
}

/* ---- statements ---- */

static bool stmt_header(struct parser *p)
{
	char fbuf[24];
	struct pos at = here(p);
	bool aot = p->end - p->p >= 2 && p->p[1] == '[';
	struct key k;

	p->p += aot ? 2 : 1;
	skip_ws(p);
	if (!parse_key(p, &k))
		return false;
	bool ok;
	if (aot) {
		ok = p->end - p->p >= 2 && p->p[0] == ']' && p->p[1] == ']';
		if (ok)
			p->p += 2;
		else
			fail_at(p, here(p), "expected ']]' to close the array-of-tables header, found %s",
			        FOUND(p));
	} else {
		ok = p->p < p->end && *p->p == ']';
		if (ok)
			p->p++;
		else
			fail_at(p, here(p), "expected ']' to close the table header, found %s", FOUND(p));
	}
	ok = ok && define_table(p, &k, aot, at);
	key_clear(&k);
	return ok;
}

static bool stmt_keyval(struct parser *p)
{
	char fbuf[24];
	struct key k;
	if (!parse_key(p, &k))
		return false;
	if (p->p >= p->end || *p->p != '=') {
		fail_at(p, here(p), "expected '=' after the key, found %s", FOUND(p));
		key_clear(&k);
		return false;
	}
	p->p++;
	skip_ws(p);
	struct toml_node *val = parse_value(p);
	bool ok = val && insert_dotted(p, p->cur, &k, val);
	key_clear(&k);
	return ok;
}

static bool end_of_line(struct parser *p)
{
	char fbuf[24];
	skip_ws(p);
	if (p->p < p->end && *p->p == '#' && !skip_comment(p))
		return false;
	if (p->p >= p->end || newline(p))
		return true;
	fail_at(p, here(p), "expected end of line, found %s", FOUND(p));
	return false;
}

/* Does the line at s start a key/value or a [header]?  Used to stop skipping. */
static bool looks_like_statement(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s < end && *s == '[') {
		const char *e = s;
		while (e < end && *e != '\n' && *e != '#')
			e++;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		s++;
		if (s < end && *s == '[')
			s++;
		while (s < end && (*s == ' ' || *s == '\t'))
			s++;
		return s < end && (is_bare(*s) || *s == '"' || *s == '\'') && e[-1] == ']';
	}
	/* key ( . key )* = */
	for (;;) {
		if (s < end && (*s == '"' || *s == '\'')) {
			char q = *s++;
			while (s < end && *s != q && *s != '\n')
				s += (*s == '\\' && q == '"' && s + 1 < end) ? 2 : 1;
			if (s >= end || *s != q)
				return false;
			s++;
		} else if (s < end && is_bare(*s)) {
			while (s < end && is_bare(*s))
				s++;
		} else {
			return false;
		}
		while (s < end && (*s == ' ' || *s == '\t'))
			s++;
		if (s < end && *s == '.') {
			s++;
			while (s < end && (*s == ' ' || *s == '\t'))
				s++;
			continue;
		}
		return s < end && *s == '=';
	}
}

/*
 * After an error: skip the rest of the line, and while the statement's
 * arrays are still open, whole lines, counting brackets outside strings and
 * comments, until they balance or a line looks like a new statement.
 */
static void resync(struct parser *p)
{
	int open = p->err_arrays;
	for (;;) {
		while (p->p < p->end && *p->p != '\n') {
			char c = *p->p;
			if (c == '#') {
				while (p->p < p->end && *p->p != '\n')
					p->p++;
				break;
			}
			if (c == '"' || c == '\'') {
				p->p++;
				while (p->p < p->end && *p->p != c && *p->p != '\n')
					p->p += (*p->p == '\\' && c == '"' && p->p + 1 < p->end &&
					         p->p[1] != '\n') ? 2 : 1;
				if (p->p < p->end && *p->p == c)
					p->p++;
				continue;
			}
			if (c == '[')
				open++;
			else if (c == ']')
				open--;
			p->p++;
		}
		if (p->p >= p->end)
			return;
		p->p++;
		p->line++;
		p->line_start = p->p;
		if (open <= 0 || looks_like_statement(p->p, p->end))
			return;
	}
}

struct toml_node *toml_parse(const char *text, size_t len, const char *file, struct diag *d)
{
	struct parser p = {
		.p = text, .end = text + len, .line_start = text, .line = 1, .file = file, .d = d,
	};
	struct pos origin = { 1, 1 };

	p.root = new_node(&p, TOML_TABLE, origin);
	p.sink = new_node(&p, TOML_TABLE, origin);
	p.cur = p.root;
	/* A UTF-8 byte order mark is allowed before the first line. */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		p.p += 3;

	while (!p.oom && p.p < p.end) {
		bool ok;
		p.depth = p.arrays = 0;
		skip_ws(&p);
		if (p.p >= p.end)
			break;
		if (*p.p == '[') {
			ok = stmt_header(&p);
			if (!ok && !p.oom) {
				/* Keys after a broken header belong to no table we know. */
				toml_free(p.sink);
				p.sink = new_node(&p, TOML_TABLE, origin);
				p.cur = p.sink;
			}
			ok = ok && end_of_line(&p);
		} else if (*p.p == '#' || at_eol(&p)) {
			ok = end_of_line(&p);
		} else {
			ok = stmt_keyval(&p) && end_of_line(&p);
		}
		if (!ok && !p.oom)
			resync(&p);
		if (!p.cur)
			break;
	}
	if (p.oom) {
		diag_add(d, file, 0, 0, "out of memory while reading the configuration");
		p.errors++;
	}
	toml_free(p.sink);
	if (p.errors) {
		toml_free(p.root);
		return NULL;
	}
	return p.root;
}
