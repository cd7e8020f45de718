/* SPDX-License-Identifier: MIT */
/*
 * Shared by the TOML reader's two files: toml.c (one file's text into a
 * tree) and toml_include.c (toml_load: a file and what it includes, merged).
 */
#ifndef GEOACME_CORE_CONF_TOML_INTERNAL_H
#define GEOACME_CORE_CONF_TOML_INTERNAL_H

#include "core/conf/toml.h"

/* toml_node.flags: which TOML rule made each node (toml.c's header). */
enum {
	TF_HEADER = 1,      /* table defined by a [header] or [[header]] element */
	TF_IMPLICIT = 2,    /* parent of a header, not defined yet */
	TF_DOTTED = 4,      /* table made by a dotted key */
	TF_INLINE = 8,      /* inline table or anything inside one: closed */
	TF_AOT = 16,        /* array made by [[header]]: headers may append */
};

/* The key/value of `key` in table t, or NULL. */
struct toml_kv *toml_find_kv(struct toml_node *t, const char *key);
/* The file names a toml_load root owns (toml_free calls it).  NULL-safe. */
void toml_files_free(struct toml_files *f);

#endif
