/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Shared by the configuration loader's files, and included only from
 * core/conf/:
 *   conf_get.c       problems with their positions, and the typed getters
 *                    (a wrong type or range is reported at the value);
 *   config_schema.c  the table of keys and the walk that reads them;
 *   config_tsig.c    [[zones.stores.tsig_keys]] and their key files;
 *   config_zone_geo.c [[zones.geo]] and their https records;
 *   config.c         what a table cannot say: sections that hold other
 *                    sections, cross-key checks, the entry points.
 * A getter returns NULL or false when the key is absent or wrong; a wrong
 * one is already reported.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/conf/config.h"

struct toml_node;
enum toml_type;

#define CONF_TTL_MAX 2147483647        /* RFC 2181 section 8 */
#define CONF_SECOND 1000ull            /* durations are held in milliseconds */
#define CONF_MINUTE (60 * CONF_SECOND)
#define CONF_HOUR (60 * CONF_MINUTE)
#define CONF_DAY (24 * CONF_HOUR)

struct conf_problem {
	const char *file;           /* a toml node's file (the toml root owns it) */
	int line, col;
	unsigned seq;
	char *msg;
};

/* Where a site's probe settings were written (the value nodes), for the
 * checks between them; a site starts from what [geo] health said. */
struct conf_health_at {
	struct toml_node *port, *path, *tls, *verify, *ca, *status, *interval, *timeout;
	size_t unknown;             /* unknown keys seen: their dependents are not judged */
};

struct loader {
	const char *file;           /* as given, for messages */
	struct config *c;
	char *cfg_dir;              /* absolute folder of the config file */
	struct toml_node *geo_health;   /* [geo] health: every site's probe defaults */
	struct config_health health_base;   /* what [geo] health says, read once */
	struct conf_health_at health_base_at;
	size_t n_file_probs;        /* problems with files named, not with the config itself */
	struct conf_problem *probs;
	size_t n_probs;
	bool oom;
};

/* ---- problems (conf_get.c) ---- */
/* file: a toml node's or kv's (NULL: the config file itself). */
void conf_err_at(struct loader *l, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void conf_err_node(struct loader *l, const struct toml_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "expected 'key' in where", at the table t. */
void conf_missing(struct loader *l, const struct toml_node *t, const char *key,
                  const char *where);
/* A problem was reported at n's position (n read, but not accepted). */
bool conf_has_problem(const struct loader *l, const struct toml_node *n);
/* Where a node was written; file NULL for the config file itself, else an
 * included file's name, kept by the config (config_pos, toml_load). */
struct config_pos conf_pos(struct loader *l, const struct toml_node *n);
/* Sorts the problems into file order (position, then the order found). */
void conf_sort_problems(struct loader *l);
/*
 * Reports every key of t that nobody read, with the nearest of `known` (a
 * NULL-terminated list) as a suggestion when one is close.  Returns how many.
 */
size_t conf_check_unknown(struct loader *l, struct toml_node *t, const char *const *known,
                          const char *where);
/* Optimal string alignment distance (a transposition is one edit); SIZE_MAX past 64 bytes. */
size_t conf_edit_distance(const char *a, const char *b);

/* ---- strings, names and paths (conf_get.c) ---- */
char *conf_strdup(struct loader *l, const char *s);      /* notes out of memory */
bool conf_name_eq(const char *a, const char *b);          /* case and final dot ignored */
bool conf_valid_name(const char *s);                      /* presentation-format domain name */
char *conf_path_join(struct loader *l, const char *base, const char *rel);
/* "90s", "14d": the largest whole unit. */
void conf_fmt_duration(uint64_t ms, char *buf, size_t size);

/* ---- typed getters (conf_get.c) ---- */
struct toml_node *conf_get_type(struct loader *l, struct toml_node *t, const char *key,
                                enum toml_type want);
bool conf_get_str(struct loader *l, struct toml_node *t, const char *key, bool allow_empty,
                  char **out);
bool conf_get_path(struct loader *l, struct toml_node *t, const char *key, char **out);
bool conf_get_bool(struct loader *l, struct toml_node *t, const char *key, bool *out);
bool conf_get_int(struct loader *l, struct toml_node *t, const char *key, int64_t lo, int64_t hi,
                  int64_t *out);
/* Integers and floats both count as numbers (latitude = 48 is fine). */
bool conf_get_num(struct loader *l, struct toml_node *t, const char *key, double lo, double hi,
                  double *out);
/* Integer seconds, or a string with a unit ("500ms", "15m"); lo and hi in ms. */
bool conf_get_duration(struct loader *l, struct toml_node *t, const char *key, uint64_t lo,
                       uint64_t hi, bool whole_seconds, uint64_t *out);
/* An array whose items are all non-empty strings. */
struct toml_node *conf_get_str_array(struct loader *l, struct toml_node *t, const char *key);
/* Copies the strings of a checked array; paths are resolved when asked. */
char **conf_copy_strs(struct loader *l, struct toml_node *arr, bool paths, size_t *n);
struct toml_node *conf_get_table(struct loader *l, struct toml_node *t, const char *key);
/*
 * [[key]] (an array of tables) and zeroed room for one `size`-byte struct
 * per table in *out.  NULL when absent or empty, or out of memory (noted).
 */
struct toml_node *conf_get_tables_alloc(struct loader *l, struct toml_node *t, const char *key,
                                        const char *header, size_t size, void **out);

/* ---- the table of keys (config_schema.c) ---- */
/* Sets the default of every key of `section` in base (the section's struct). */
void config_schema_defaults(const char *section, void *base);
/*
 * Reads every key of `section` that the table reads by itself, from t into
 * base; a key left out keeps what base held.  Keys the table marks as
 * read by config.c are left alone.
 */
void config_schema_read(struct loader *l, const char *section, struct toml_node *t, void *base);
/* conf_check_unknown() with the section's keys; `where` names it in messages. */
size_t config_schema_unknown(struct loader *l, const char *section, struct toml_node *t,
                             const char *where);

/* ---- TSIG keys (config_tsig.c) ---- */
/* [[zones.stores.tsig_keys]] of the store st into z. */
void config_tsig_load(struct loader *l, struct toml_node *st, struct config_zone *z);
/* One outbound TSIG key (name, algorithm, secret or key_file) from the table t. */
void config_tsig_load_outbound(struct loader *l, struct toml_node *t, struct config_tsig_key *k,
                               const char *where);

/* ---- geo names (config_zone_geo.c) ---- */
/* [[zones.geo]] of the zone table zt into z; the sites are loaded already. */
void config_zone_geo_load(struct loader *l, struct toml_node *zt, struct config_zone *z);
