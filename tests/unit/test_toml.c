/* SPDX-License-Identifier: MIT */
/*
 * TOML reader: every value kind, positions, tables, and every error path
 * with its exact "file:line:col: message".  Also the diag list it reports
 * into.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/conf/diag.h"
#include "core/conf/toml.h"
#include "tests/unit/check.h"

static struct diag d;

static struct toml_node *parse(const char *text)
{
	diag_clear(&d);
	return toml_parse(text, strlen(text), "t.toml", &d);
}

/* Follows a dotted path of table keys (no array steps). */
static struct toml_node *at(struct toml_node *t, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && t; k = strtok_r(NULL, ".", &save))
		t = toml_get(t, k);
	return t;
}

static const char *str_at(struct toml_node *t, const char *path)
{
	struct toml_node *n = at(t, path);
	return n && n->type == TOML_STRING ? n->u.s : NULL;
}

static long long int_at(struct toml_node *t, const char *path)
{
	struct toml_node *n = at(t, path);
	return n && n->type == TOML_INT ? n->u.i : -999999;
}

/* One document, one expected error. */
static void one_error(const char *text, const char *want, const char *what)
{
	struct toml_node *r = parse(text);
	ok(r == NULL, "%s: parse fails", what);
	is_int(d.n, 1, "%s: one message", what);
	is_str(d.n ? d.msgs[0] : NULL, want, "%s: message", what);
	toml_free(r);
}

static void test_strings(void)
{
	struct toml_node *r = parse(
	    "a = \"plain\"\n"
	    "b = \"\\b\\t\\n\\f\\r\\\"\\\\\"\n"
	    "c = \"\\u00e9\\u20AC\\U0001F600\"\n"
	    "d = 'C:\\path\\n \"q\"'\n"
	    "e = \"\"\n"
	    "f = ''\n"
	    "g = \"tab\tinside é\"\n"
	    "\"quoted.key\" = 1\n"
	    "'lit key' = 2\n");
	ok(r != NULL, "strings parse");
	is_int(d.n, 0, "no messages");
	is_str(str_at(r, "a"), "plain", "basic string");
	is_str(str_at(r, "b"), "\b\t\n\f\r\"\\", "every simple escape");
	is_str(str_at(r, "c"), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\\u and \\U become UTF-8");
	is_str(str_at(r, "d"), "C:\\path\\n \"q\"", "literal string keeps backslashes");
	is_str(str_at(r, "e"), "", "empty basic string");
	is_str(str_at(r, "f"), "", "empty literal string");
	is_str(str_at(r, "g"), "tab\tinside \xc3\xa9", "tab and UTF-8 kept");
	is_int(toml_get(r, "quoted.key")->u.i, 1, "quoted key with a dot is one key");
	is_int(toml_get(r, "lit key")->u.i, 2, "literal-string key");
	is_int(toml_get(r, "a")->type, TOML_STRING, "type string");
	toml_free(r);
}

static void test_numbers(void)
{
	struct toml_node *r = parse(
	    "i1 = 42\n"
	    "i2 = +17\n"
	    "i3 = -5_000\n"
	    "i4 = 0\n"
	    "i5 = -0\n"
	    "i6 = 0xDEAD_beef\n"
	    "i7 = 0o755\n"
	    "i8 = 0b1101\n"
	    "i9 = 9223372036854775807\n"
	    "i10 = -9223372036854775808\n"
	    "i11 = 0x7fffffffffffffff\n"
	    "f1 = 3.14\n"
	    "f2 = -1e-3\n"
	    "f3 = 6.02E+23\n"
	    "f4 = 1_000.5\n"
	    "f5 = 5e2\n"
	    "f6 = inf\n"
	    "f7 = -inf\n"
	    "f8 = nan\n"
	    "f9 = +inf\n"
	    "f10 = 0.5\n"
	    "t = true\n"
	    "f = false\n");
	ok(r != NULL, "numbers parse");
	is_int(d.n, 0, "no messages");
	is_int(int_at(r, "i1"), 42, "decimal");
	is_int(int_at(r, "i2"), 17, "plus sign");
	is_int(int_at(r, "i3"), -5000, "minus sign and underscore");
	is_int(int_at(r, "i4"), 0, "zero");
	is_int(int_at(r, "i5"), 0, "minus zero");
	is_int(int_at(r, "i6"), 0xdeadbeefLL, "hex with underscore, mixed case");
	is_int(int_at(r, "i7"), 0755, "octal");
	is_int(int_at(r, "i8"), 13, "binary");
	ok(at(r, "i9")->u.i == INT64_MAX, "INT64_MAX");
	ok(at(r, "i10")->u.i == INT64_MIN, "INT64_MIN");
	ok(at(r, "i11")->u.i == INT64_MAX, "largest hex");
	is_int(at(r, "i1")->type, TOML_INT, "type integer");
	is_int(at(r, "f1")->type, TOML_FLOAT, "type float");
	ok(at(r, "f1")->u.f == 3.14, "3.14");
	ok(at(r, "f2")->u.f == -1e-3, "-1e-3");
	ok(at(r, "f3")->u.f == 6.02e23, "6.02E+23");
	ok(at(r, "f4")->u.f == 1000.5, "1_000.5");
	ok(at(r, "f5")->u.f == 500.0 && at(r, "f5")->type == TOML_FLOAT, "5e2 is a float");
	ok(isinf(at(r, "f6")->u.f) && at(r, "f6")->u.f > 0, "inf");
	ok(isinf(at(r, "f7")->u.f) && at(r, "f7")->u.f < 0, "-inf");
	ok(isnan(at(r, "f8")->u.f), "nan");
	ok(isinf(at(r, "f9")->u.f) && at(r, "f9")->u.f > 0, "+inf");
	ok(at(r, "f10")->u.f == 0.5, "0.5 (leading zero before the point)");
	is_int(at(r, "t")->type, TOML_BOOL, "type boolean");
	ok(at(r, "t")->u.b == true, "true");
	ok(at(r, "f")->u.b == false, "false");
	toml_free(r);
}

static void test_arrays_and_inline(void)
{
	struct toml_node *r = parse(
	    "empty = []\n"
	    "mixed = [1, \"two\", 3.0, true, [4, 5], {x = 6}]\n"
	    "multi = [\n"
	    "  \"a\",  # first\n"
	    "\n"
	    "  # a comment line\n"
	    "  \"b\",\n"
	    "]\n"
	    "it = { a = 1, b.c = \"d\", e = { f = [1] } }\n"
	    "ie = {}\n"
	    "loc = [48.86, 2]\n");
	ok(r != NULL, "arrays parse");
	is_int(d.n, 0, "no messages");
	struct toml_node *n = at(r, "empty");
	ok(n && n->type == TOML_ARRAY && n->u.arr.n == 0, "empty array");
	n = at(r, "mixed");
	ok(n && n->u.arr.n == 6, "mixed array has 6 items");
	if (n && n->u.arr.n == 6) {
		is_int(n->u.arr.items[0]->type, TOML_INT, "mixed[0] integer");
		is_str(n->u.arr.items[1]->u.s, "two", "mixed[1] string");
		is_int(n->u.arr.items[2]->type, TOML_FLOAT, "mixed[2] float");
		is_int(n->u.arr.items[3]->type, TOML_BOOL, "mixed[3] boolean");
		is_int(n->u.arr.items[4]->u.arr.n, 2, "mixed[4] nested array");
		is_int(int_at(n->u.arr.items[5], "x"), 6, "mixed[5] inline table");
		is_int(n->u.arr.items[1]->col, 13, "item column");
	}
	n = at(r, "multi");
	ok(n && n->u.arr.n == 2, "multi-line array with comments and trailing comma");
	if (n && n->u.arr.n == 2) {
		is_str(n->u.arr.items[1]->u.s, "b", "second item");
		is_int(n->u.arr.items[1]->line, 7, "second item line");
		is_int(n->u.arr.items[1]->col, 3, "second item column");
	}
	is_int(int_at(r, "it.a"), 1, "inline table value");
	is_str(str_at(r, "it.b.c"), "d", "dotted key inside an inline table");
	n = at(r, "it.e.f");
	ok(n && n->type == TOML_ARRAY && n->u.arr.n == 1, "nested inline table");
	n = at(r, "ie");
	ok(n && n->type == TOML_TABLE && n->u.tab.n == 0, "empty inline table");
	n = at(r, "loc");
	ok(n && n->u.arr.items[0]->type == TOML_FLOAT && n->u.arr.items[1]->type == TOML_INT,
	   "float and integer in one array");
	toml_free(r);
}

static void test_tables(void)
{
	struct toml_node *r = parse(
	    "top = 1\n"
	    "a.b.c = 2\n"
	    "a.b.d = 3\n"
	    "[server]\n"
	    "port = 53\n"
	    "[ x . y . z ]\n"
	    "v = 1\n"
	    "[x]\n"
	    "w = 2\n"
	    "[[zones]]\n"
	    "zone = \"one\"\n"
	    "[zones.stores]\n"
	    "type = \"sqlite\"\n"
	    "[[zones.stores.tsig_keys]]\n"
	    "name = \"k1\"\n"
	    "[[zones.stores.tsig_keys]]\n"
	    "name = \"k2\"\n"
	    "[[zones.geo]]\n"
	    "name = \"www\"\n"
	    "[[zones]]\n"
	    "zone = \"two\"\n"
	    "[zones.stores]\n"
	    "type = \"file\"\n"
	    "[fruit]\n"
	    "apple.color = \"red\"\n"
	    "[fruit.apple.texture]\n"
	    "smooth = true\n"
	    "[\"quoted . header\"]\n"
	    "q = 1\n");
	ok(r != NULL, "tables parse");
	is_int(d.n, 0, "no messages");
	is_int(int_at(r, "top"), 1, "top-level key");
	is_int(int_at(r, "a.b.c"), 2, "dotted key");
	is_int(int_at(r, "a.b.d"), 3, "dotted key adds to a dotted table");
	is_int(int_at(r, "server.port"), 53, "[server]");
	is_int(int_at(r, "x.y.z.v"), 1, "[x.y.z] with blanks around dots");
	is_int(int_at(r, "x.w"), 2, "[x] defined after its child");
	ok(at(r, "fruit.apple.texture.smooth") && at(r, "fruit.apple.texture.smooth")->u.b,
	   "sub-table of a dotted-key table");
	is_str(str_at(r, "fruit.apple.color"), "red", "dotted key in a header table");
	is_int(int_at(toml_get(r, "quoted . header"), "q"), 1, "quoted header key");

	struct toml_node *zones = toml_get(r, "zones");
	ok(zones && zones->type == TOML_ARRAY && zones->u.arr.n == 2, "two [[zones]]");
	if (zones && zones->u.arr.n == 2) {
		struct toml_node *z0 = zones->u.arr.items[0], *z1 = zones->u.arr.items[1];
		is_str(str_at(z0, "zone"), "one", "first zone");
		is_str(str_at(z0, "stores.type"), "sqlite", "[zones.stores] went to the first zone");
		struct toml_node *keys = at(z0, "stores.tsig_keys");
		ok(keys && keys->u.arr.n == 2, "two tsig keys in the first zone");
		if (keys && keys->u.arr.n == 2) {
			is_str(str_at(keys->u.arr.items[1], "name"), "k2", "second key");
			is_int(keys->u.arr.items[1]->line, 16, "array element table line is its header");
			is_int(keys->u.arr.items[1]->col, 1, "header column");
		}
		ok(at(z0, "geo") && at(z0, "geo")->u.arr.n == 1, "[[zones.geo]] in the first zone");
		is_str(str_at(z1, "stores.type"), "file", "second [zones.stores] went to the last zone");
		ok(toml_get(z1, "geo") == NULL, "second zone has no geo");
		is_int(z1->line, 20, "second zone line");
	}
	toml_free(r);
}

static void test_positions_and_get(void)
{
	struct toml_node *r = parse("\xef\xbb\xbf"
	                            "a = 1\n"
	                            "\t  key   =   \"v\"  # c\r\n"
	                            "[t]\n"
	                            "x = 1\n");
	ok(r != NULL, "BOM, tabs and CRLF parse");
	is_int(r->u.tab.n, 3, "three top-level keys");
	is_str(r->u.tab.kv[0].key, "a", "first key");
	is_int(r->u.tab.kv[0].line, 1, "first key line");
	is_int(r->u.tab.kv[0].col, 4, "column counts the BOM's bytes");
	is_int(r->u.tab.kv[1].line, 2, "second key line");
	is_int(r->u.tab.kv[1].col, 4, "second key column after a tab and two blanks");
	struct toml_node *v = toml_get(r, "key");
	is_int(v->line, 2, "value line");
	is_int(v->col, 14, "value column");
	struct toml_node *t = toml_get(r, "t");
	is_int(t->line, 3, "table line is its header");
	is_int(t->col, 1, "table column is its header");
	is_int(r->u.tab.kv[2].col, 2, "table key column is the name inside the header");

	ok(!r->u.tab.kv[0].used, "keys start unused");
	ok(toml_get(r, "a") != NULL && r->u.tab.kv[0].used, "toml_get marks the key used");
	ok(toml_get(r, "nope") == NULL, "absent key is NULL");
	ok(toml_get(v, "x") == NULL, "toml_get on a non-table is NULL");
	ok(toml_get(NULL, "x") == NULL, "toml_get on NULL is NULL");
	toml_free(r);
	toml_free(NULL);

	r = parse("");
	ok(r && r->type == TOML_TABLE && r->u.tab.n == 0, "empty document is an empty table");
	toml_free(r);
	r = parse("# only a comment");
	ok(r && r->u.tab.n == 0, "comment without newline at end of file");
	toml_free(r);
	r = parse("a = 1");
	is_int(int_at(r, "a"), 1, "no newline at end of file");
	toml_free(r);

	is_str(toml_type_name(TOML_STRING), "string", "type name string");
	is_str(toml_type_name(TOML_INT), "integer", "type name integer");
	is_str(toml_type_name(TOML_FLOAT), "float", "type name float");
	is_str(toml_type_name(TOML_BOOL), "boolean", "type name boolean");
	is_str(toml_type_name(TOML_ARRAY), "array", "type name array");
	is_str(toml_type_name(TOML_TABLE), "table", "type name table");
}

static void test_errors(void)
{
	/* Keys and statements. */
	one_error("= 1\n", "t.toml:1:1: expected a key, found '='", "missing key");
	one_error("a\n", "t.toml:1:2: expected '=' after the key, found end of line", "missing =");
	one_error("a b = 1\n", "t.toml:1:3: expected '=' after the key, found 'b'", "space in key");
	one_error("a. = 1\n", "t.toml:1:4: expected a key, found '='", "empty dotted part");
	one_error("a = \n", "t.toml:1:5: expected a value, found end of line", "missing value");
	one_error("a = 1 b = 2\n", "t.toml:1:7: expected end of line, found 'b'", "two on a line");
	one_error("a = 1\rb = 2\n", "t.toml:1:6: expected end of line, found byte 0x0d", "lone CR");
	one_error("\x01 = 1\n", "t.toml:1:1: expected a key, found byte 0x01", "control byte");

	/* Headers. */
	one_error("[tab\n", "t.toml:1:5: expected ']' to close the table header, found end of line",
	          "unclosed header");
	one_error("[[aot]\n",
	          "t.toml:1:6: expected ']]' to close the array-of-tables header, found ']'",
	          "unclosed array-of-tables header");
	one_error("[]\n", "t.toml:1:2: expected a key, found ']'", "empty header");
	one_error("[a] x\n", "t.toml:1:5: expected end of line, found 'x'", "junk after header");

	/* Strings. */
	one_error("a = \"abc\n", "t.toml:1:9: expected closing '\"', found end of line",
	          "unterminated basic string");
	one_error("a = 'abc", "t.toml:1:9: expected closing \"'\", found end of file",
	          "unterminated literal string");
	one_error("a = \"\\q\"\n", "t.toml:1:6: expected an escape sequence after '\\', found 'q'",
	          "bad escape");
	one_error("a = \"\\u12\"\n", "t.toml:1:6: expected 4 hex digits after '\\u'", "short \\u");
	one_error("a = \"\\U0001F60\"\n", "t.toml:1:6: expected 8 hex digits after '\\U'",
	          "short \\U");
	one_error("a = \"\\uD800\"\n", "t.toml:1:6: expected a Unicode scalar value, found '\\uD800'",
	          "surrogate");
	one_error("a = \"\\U00110000\"\n",
	          "t.toml:1:6: expected a Unicode scalar value, found '\\U00110000'", "past U+10FFFF");
	one_error("a = \"\\u0000\"\n",
	          "t.toml:1:6: expected a character other than NUL, found '\\u0000'", "NUL escape");
	one_error("a = \"x\x01\"\n",
	          "t.toml:1:7: expected a printable character in a string, found byte 0x01",
	          "control character in a string");
	one_error("a = 'x\x7f'\n",
	          "t.toml:1:7: expected a printable character in a string, found byte 0x7f",
	          "DEL in a literal string");
	one_error("a = \"\xc3\x28\"\n", "t.toml:1:6: expected valid UTF-8 in a string, found byte 0xc3",
	          "invalid UTF-8");
	one_error("a = \"\xc0\xaf\"\n", "t.toml:1:6: expected valid UTF-8 in a string, found byte 0xc0",
	          "overlong UTF-8");
	one_error("# bad \x02\n",
	          "t.toml:1:7: expected a printable character in a comment, found byte 0x02",
	          "control character in a comment");
	one_error("a = \"\"\"x\"\"\"\n",
	          "t.toml:1:5: expected a single-line string (multi-line strings are not supported)",
	          "multi-line basic string");
	one_error("a = '''x'''\n",
	          "t.toml:1:5: expected a single-line string (multi-line strings are not supported)",
	          "multi-line literal string");

	/* Scalars. */
	one_error("a = 1979-05-27\n",
	          "t.toml:1:5: expected a value, found '1979-05-27' (dates and times are not supported)",
	          "date");
	one_error("a = 1979-05-27T07:32:00Z\n",
	          "t.toml:1:5: expected a value, found '1979-05-27T07:32:00Z' (dates and times are not "
	          "supported)", "date-time");
	one_error("a = 07:32:00\n",
	          "t.toml:1:5: expected a value, found '07:32:00' (dates and times are not supported)",
	          "time");
	one_error("a = 012\n", "t.toml:1:5: expected a number without leading zeros, found '012'",
	          "leading zero");
	one_error("a = 1__2\n", "t.toml:1:5: expected a number, found '1__2'", "double underscore");
	one_error("a = _1\n", "t.toml:1:5: expected a number, found '_1'", "leading underscore");
	one_error("a = 1_\n", "t.toml:1:5: expected a number, found '1_'", "trailing underscore");
	one_error("a = 1.\n", "t.toml:1:5: expected a number, found '1.'", "trailing point");
	one_error("a = .5\n", "t.toml:1:5: expected a number, found '.5'", "leading point");
	one_error("a = 1e\n", "t.toml:1:5: expected a number, found '1e'", "empty exponent");
	one_error("a = 0x\n", "t.toml:1:5: expected a number, found '0x'", "empty hex");
	one_error("a = 0xg1\n", "t.toml:1:5: expected a number, found '0xg1'", "bad hex digit");
	one_error("a = 0o8\n", "t.toml:1:5: expected a number, found '0o8'", "bad octal digit");
	one_error("a = 0b2\n", "t.toml:1:5: expected a number, found '0b2'", "bad binary digit");
	one_error("a = +0x1\n", "t.toml:1:5: expected a number, found '+0x1'", "signed hex");
	one_error("a = 9223372036854775808\n",
	          "t.toml:1:5: expected a number that fits in 64 bits, found '9223372036854775808'",
	          "integer overflow");
	one_error("a = 0x8000000000000000\n",
	          "t.toml:1:5: expected a number that fits in 64 bits, found '0x8000000000000000'",
	          "hex overflow");
	one_error("a = 1e999\n", "t.toml:1:5: expected a number that fits in 64 bits, found '1e999'",
	          "float overflow");
	one_error("a = hello\n", "t.toml:1:5: expected a value, found 'hello' (strings must be quoted)",
	          "bare word");
	one_error("a = True\n", "t.toml:1:5: expected a value, found 'True' (strings must be quoted)",
	          "capitalised boolean");
	one_error("a = @\n", "t.toml:1:5: expected a value, found '@'", "stray character");

	/* Arrays and inline tables. */
	one_error("a = [1 2]\n", "t.toml:1:8: expected ',' or ']', found '2'", "missing comma");
	one_error("a = [1,,2]\n", "t.toml:1:8: expected a value, found ','", "double comma");
	one_error("a = [1,\n", "t.toml:2:1: expected ']' to close the array, found end of file",
	          "unclosed array at end of file");
	one_error("a = {b = 1,}\n", "t.toml:1:12: expected a key, found '}'",
	          "trailing comma in an inline table");
	one_error("a = {b = 1 c = 2}\n", "t.toml:1:12: expected ',' or '}', found 'c'",
	          "missing comma in an inline table");
	one_error("a = {b = 1\n", "t.toml:1:11: expected ',' or '}', found end of line",
	          "inline table across lines");
	one_error("a = {b 1}\n", "t.toml:1:8: expected '=' after the key, found '1'",
	          "inline table missing =");
	one_error("a = {b = 1, b = 2}\n", "t.toml:1:13: duplicate key 'b' (first set at line 1)",
	          "duplicate key in an inline table");
	{
		char deep[200];
		memset(deep, '[', 70);
		snprintf(deep + 70, sizeof(deep) - 70, "\n");
		char doc[220];
		snprintf(doc, sizeof(doc), "a = %s", deep);
		one_error(doc, "t.toml:1:69: expected at most 64 levels of nested arrays and tables",
		          "nesting limit");
	}

	/* Duplicates and table rules. */
	one_error("a = 1\na = 2\n", "t.toml:2:1: duplicate key 'a' (first set at line 1)",
	          "duplicate key");
	one_error("a.b = 1\na.b = 2\n", "t.toml:2:3: duplicate key 'b' (first set at line 1)",
	          "duplicate dotted key");
	one_error("[s]\n[s]\n", "t.toml:2:1: table [s] is defined twice (first at line 1)",
	          "table defined twice");
	one_error("[a.b]\n[a]\n[a.b]\n", "t.toml:3:1: table [a.b] is defined twice (first at line 1)",
	          "sub-table defined twice");
	one_error("a = 1\n[a]\n", "t.toml:2:1: key 'a' is already set to an integer (line 1); "
	          "expected a table", "header over a value");
	one_error("a = 1\n[a.b]\n", "t.toml:2:2: key 'a' is already set to an integer (line 1); "
	          "expected a table", "header through a value");
	one_error("a = [1]\n[[a]]\n", "t.toml:2:1: key 'a' is already set to an array (line 1); "
	          "expected an array of tables", "array of tables over a static array");
	one_error("[a]\n[[a]]\n", "t.toml:2:1: key 'a' is already set to a table (line 1); "
	          "expected an array of tables", "array of tables over a table");
	one_error("[[a]]\n[a]\n", "t.toml:2:1: key 'a' is already set to an array (line 1); "
	          "expected a table", "table over an array of tables");
	one_error("a = 1\na.b = 2\n", "t.toml:2:1: key 'a' is already set to an integer (line 1); "
	          "expected a table", "dotted key through a value");
	one_error("[a.b]\n[a]\nb.c = 1\n", "t.toml:3:1: table 'b' is already defined (line 1); "
	          "expected a key that is not set", "dotted key into a header table");
	one_error("[a]\nb.c = 1\n[a.b]\n", "t.toml:3:1: table [a.b] is defined twice (first at line 2)",
	          "header over a dotted-key table");
	one_error("a = {x = 1}\n[a]\n", "t.toml:2:1: table [a] is defined twice (first at line 1)",
	          "header over an inline table");
	one_error("a = {x = 1}\n[a.y]\n", "t.toml:2:2: table 'a' was written inline (line 1); "
	          "expected a table that can be extended", "extending an inline table");
	one_error("a = {x = 1}\na.y = 2\n", "t.toml:2:1: table 'a' is already defined (line 1); "
	          "expected a key that is not set", "dotted key into an inline table");
}

static void test_many_errors(void)
{
	/* Every broken statement is reported once; the good ones around them parse. */
	struct toml_node *r = parse(
	    "a = 1\n"               /* 1 */
	    "b = \n"                /* 2: error */
	    "c = [1,\n"             /* 3 */
	    "  x,\n"                /* 4: error inside the array */
	    "  2, \"y\",\n"         /* 5: skipped */
	    "]\n"                   /* 6: skipped, brackets balance */
	    "d = 2\n"               /* 7 */
	    "e = [1,\n"             /* 8 */
	    "f = 3\n"               /* 9: error, and a new statement: not skipped */
	    "g = 3\n"               /* 10 */
	    "[h\n"                  /* 11: error */
	    "a = 4\n"               /* 12: goes nowhere, so no clash with line 1 */
	    "[j]\n"                 /* 13 */
	    "a = 5\n"               /* 14 */
	    "k = 'x\n"              /* 15: error */
	    "[j]\n");               /* 16: error */
	ok(r == NULL, "document with errors fails");
	is_int(d.n, 6, "six messages");
	const char *want[] = {
		"t.toml:2:5: expected a value, found end of line",
		"t.toml:4:3: expected a value, found 'x' (strings must be quoted)",
		"t.toml:9:1: expected a value, found 'f' (strings must be quoted)",
		"t.toml:11:3: expected ']' to close the table header, found end of line",
		"t.toml:15:7: expected closing \"'\", found end of line",
		"t.toml:16:1: table [j] is defined twice (first at line 13)",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		is_str(i < d.n ? d.msgs[i] : NULL, want[i], "message %zu", i);
	toml_free(r);
}

static void test_diag(void)
{
	struct diag x;
	diag_init(&x);
	is_int(x.n, 0, "diag starts empty");
	diag_add(&x, "c.toml", 12, 3, "expected %s", "a thing");
	diag_add(&x, "c.toml", 0, 0, "whole file");
	diag_add(&x, "c.toml", 7, 0, "line only");
	diag_add(&x, NULL, 4, 5, "no file");
	diag_add(&x, NULL, 0, 0, "bare %d", 42);
	is_int(x.n, 5, "five messages");
	is_str(x.msgs[0], "c.toml:12:3: expected a thing", "file:line:col: message");
	is_str(x.msgs[1], "c.toml: whole file", "file: message");
	is_str(x.msgs[2], "c.toml:7: line only", "file:line: message");
	is_str(x.msgs[3], "4:5: no file", "line:col: message");
	is_str(x.msgs[4], "bare 42", "message alone");
	for (int i = 0; i < 40; i++)
		diag_add(&x, "f", i + 1, 1, "m%d", i);
	is_int(x.n, 45, "list grows");
	is_str(x.msgs[44], "f:40:1: m39", "last message kept");
	diag_clear(&x);
	is_int(x.n, 0, "diag_clear empties");
	ok(x.msgs == NULL, "diag_clear frees");
	diag_clear(NULL);
}

int main(void)
{
	diag_init(&d);
	test_strings();
	test_numbers();
	test_arrays_and_inline();
	test_tables();
	test_positions_and_get();
	test_errors();
	test_many_errors();
	test_diag();
	diag_clear(&d);
	return done_testing();
}
