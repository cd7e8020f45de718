/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The configuration's keys as a table: for each key its section, name,
 * type with range, default, where it is stored (an offset into the
 * section's struct) and a one-line description.  config_load() walks the
 * table to read, check and default every key it describes, and takes the
 * list of known keys for "did you mean" from it; config.c reads by hand
 * only what a table cannot say (sections holding sections, lists with
 * checks of their own, checks across keys).  Every key, including those
 * read by hand, has its row, so the table is the list of what geoacme
 * accepts: tests/unit/test_config_schema.c checks that doc/config.md and
 * config.toml.example name each one.
 *
 * A section is named as the loader's messages name it: "[top level]",
 * "[server]", "[dnssec]", "[geo]", "[[sites]]", "[sites.health]" (also
 * read as [geo] health), "[[zones]]", "[[zones.geo]]", "https" (in
 * [[zones.geo]]), "[[zones.keys]]", "[zones.stores]",
 * "[[zones.stores.tsig_keys]]".
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum config_key_type {
	CONFIG_KEY_BOOL,        /* bool */
	CONFIG_KEY_INT,         /* integer lo..hi, in an unsigned field of 1, 2, 4 or 8 bytes */
	CONFIG_KEY_MIB,         /* integer lo..hi MiB, stored in bytes (uint64_t) */
	CONFIG_KEY_NUM,         /* integer or float lo..hi (double) */
	CONFIG_KEY_DURATION,    /* seconds or "500ms", "15m"...: lo..hi ms, stored in ms (uint32_t) */
	CONFIG_KEY_SECONDS,     /* the same in whole seconds: lo..hi ms, stored in s (uint32_t) */
	CONFIG_KEY_STRING,      /* non-empty string (char *); when hi > 0, lo..hi bytes */
	CONFIG_KEY_PATH,        /* non-empty string, resolved against `directory` (char *) */
	CONFIG_KEY_ENUM,        /* one of `choices`, stored as its value (int) */
	CONFIG_KEY_WORD,        /* one of `choices`, stored as a copy of the string (char *) */
	CONFIG_KEY_CUSTOM,      /* read by config.c: a list, a value with checks of its own */
	CONFIG_KEY_SECTION,     /* read by config.c: a table of its own, the section `sub` */
};

/*
 * The values an ENUM or WORD key takes.  `expect` lists them for the
 * message "expected 'key' to be <expect>, found '...'".  A `parse`
 * function, when given, decides instead of `names` (the log level, parsed
 * by core/conf/log.h).
 */
struct config_choices {
	const char *expect;
	const char *const *names;   /* NULL-terminated */
	const int *values;          /* ENUM: the value of each name */
	bool (*parse)(const char *s, int *out);
};

struct config_key {
	const char *section;
	const char *name;
	enum config_key_type type;
	bool required;              /* absent: "expected 'name' in <section>" */
	int64_t lo, hi;             /* INT, MIB, NUM; ms for DURATION and SECONDS; STRING bytes */
	int64_t def;                /* BOOL, INT, ENUM; ms for DURATION, s for SECONDS */
	double fdef;                /* NUM */
	size_t offset, size;        /* in the section's struct; size 0: checked, then ignored */
	const struct config_choices *choices;
	const char *sub;            /* SECTION: the section it holds, as named above */
	const char *doc;            /* one line */
};

/* Every key, section by section, in the order "did you mean" prefers them. */
const struct config_key *config_schema_keys(size_t *n);
