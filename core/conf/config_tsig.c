/* SPDX-License-Identifier: MIT */
/*
 * [[zones.stores.tsig_keys]]: the keys that may sign a zone's UPDATEs and
 * transfers, and their key files.  A key file is read here, at load time,
 * because the update path needs the secret as bytes; it is refused like a
 * DNSSEC key when other users could read or change it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* explicit_bzero */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/conf/base64.h"
#include "core/conf/conf_internal.h"
#include "core/conf/log.h"
#include "core/conf/secret_file.h"
#include "core/conf/toml.h"
#include "core/wire/rrset.h"

/*
 * A key file is the secret's raw bytes (Hickory's format): the secret Lego
 * or nsupdate is given is the base64 of the whole file.  A file that is
 * nothing but base64 text (maybe with a final newline) is most likely the
 * base64 form saved by mistake; random raw bytes almost never are (a
 * 16-byte secret has odds of 4^-16).  Still a valid secret, so warn only.
 */
static void warn_base64_key_file(const char *path, const uint8_t *b, size_t n)
{
	size_t len = n;
	if (len && b[len - 1] == '\n')
		len--;
	char text[TSIG_SECRET_MAX + 2];
	uint8_t raw[TSIG_SECRET_MAX];
	if (len < 16 || len % 4 != 0 || len >= sizeof(text) || memchr(b, '\0', len))
		return;
	memcpy(text, b, len);
	text[len] = '\0';
	if (base64_decode(text, strlen(text), raw, sizeof(raw)) <= 0)
		return;   /* not base64 (padded, as len % 4 == 0 asks): raw bytes, as it should be */
	log_warn("TSIG key file '%s' looks like base64 text (%zu characters%s), but a key file holds "
	         "the raw secret bytes, so this text itself is the secret; if it is the base64 form, "
	         "store the decoded bytes (base64 -d < FILE > FILE.new) or use secret = \"...\"",
	         path, len, len < n ? " and a newline" : "");
}

/*
 * Reads a TSIG key file: the raw secret bytes, as Hickory does.  Refused
 * like a DNSSEC key when other users could read or change it.
 */
static void read_key_file(struct loader *l, struct toml_node *at, struct config_tsig_key *k)
{
	FILE *f = fopen(k->key_file, "rb");
	uint8_t buf[TSIG_SECRET_MAX + 1];
	if (!f) {
		l->n_file_probs++;
		conf_err_node(l, at, "cannot read TSIG key file '%s': %s", k->key_file, strerror(errno));
		return;
	}
	struct stat st;
	char why[256];
	if (fstat(fileno(f), &st) != 0) {
		conf_err_node(l, at, "cannot read TSIG key file '%s': %s", k->key_file, strerror(errno));
		fclose(f);
		return;
	}
	if (!secret_file_mode_ok(k->key_file, &st, why)) {
		l->n_file_probs++;
		conf_err_node(l, at, "TSIG key file %s", why);
		fclose(f);
		return;
	}
	size_t n = fread(buf, 1, sizeof(buf), f);
	int e = ferror(f) ? errno : 0;
	fclose(f);
	if (e) {
		conf_err_node(l, at, "cannot read TSIG key file '%s': %s", k->key_file, strerror(e));
	} else if (n == 0) {
		conf_err_node(l, at, "expected a secret in TSIG key file '%s', found an empty file",
		              k->key_file);
	} else if (n > TSIG_SECRET_MAX) {
		conf_err_node(l, at, "expected at most %d bytes in TSIG key file '%s'", TSIG_SECRET_MAX,
		              k->key_file);
	} else {
		memcpy(k->secret, buf, n);
		k->secret_len = n;
		warn_base64_key_file(k->key_file, buf, n);
	}
	explicit_bzero(buf, sizeof(buf));
}

void config_tsig_load(struct loader *l, struct toml_node *st, struct config_zone *z)
{
	void *room;
	struct toml_node *arr = conf_get_tables_alloc(l, st, "tsig_keys", "[[zones.stores.tsig_keys]]",
	                                              sizeof(*z->tsig_keys), &room);
	if (!arr)
		return;
	z->tsig_keys = room;
	z->n_tsig_keys = arr->u.arr.n;
	for (size_t i = 0; i < arr->u.arr.n; i++) {
		struct toml_node *t = arr->u.arr.items[i];
		struct config_tsig_key *k = &z->tsig_keys[i];
		const char *where = "[[zones.stores.tsig_keys]]";
		k->pos = conf_pos(l, t);
		config_schema_defaults(where, k);
		config_schema_read(l, where, t, k);     /* fudge, allow_axfr */

		struct toml_node *n = conf_get_type(l, t, "name", TOML_STRING);
		if (n && !conf_valid_name(n->u.s)) {
			conf_err_node(l, n, "expected a domain name for 'name', found '%s'", n->u.s);
		} else if (n) {
			k->name = conf_strdup(l, n->u.s);
			for (size_t j = 0; j < i; j++) {
				if (z->tsig_keys[j].name && conf_name_eq(z->tsig_keys[j].name, n->u.s)) {
					conf_err_node(l, n, "TSIG key '%s' is defined twice (first at line %d)",
					              n->u.s, z->tsig_keys[j].pos.line);
					break;
				}
			}
		} else if (!toml_get(t, "name")) {
			conf_missing(l, t, "name", where);
		}

		struct toml_node *alg = conf_get_type(l, t, "algorithm", TOML_STRING);
		if (alg && !(k->algorithm = tsig_alg_from_str(alg->u.s)))
			conf_err_node(l, alg, "expected a TSIG algorithm (%s), found '%s'", tsig_alg_list(),
			              alg->u.s);
		else if (!alg && !toml_get(t, "algorithm"))
			conf_missing(l, t, "algorithm", where);

		struct toml_node *kf = toml_get(t, "key_file");
		struct toml_node *sec = toml_get(t, "secret");
		if (kf && sec) {
			conf_err_node(l, sec, "expected only one of 'key_file' and 'secret'");
		} else if (kf) {
			if (conf_get_path(l, t, "key_file", &k->key_file))
				read_key_file(l, kf, k);
		} else if (sec) {
			sec = conf_get_type(l, t, "secret", TOML_STRING);
			int len = sec ? base64_decode(sec->u.s, strlen(sec->u.s), k->secret,
			                              sizeof(k->secret))
			              : 0;
			if (sec && len == -2)
				conf_err_node(l, sec, "expected at most %d bytes in 'secret'", TSIG_SECRET_MAX);
			else if (sec && len <= 0)
				conf_err_node(l, sec, "expected base64 for 'secret'");
			else if (sec)
				k->secret_len = (size_t)len;
		} else {
			conf_err_node(l, t, "expected 'key_file' or 'secret' in %s", where);
		}

		struct toml_node *types = conf_get_str_array(l, t, "allow_types");
		if (types && types->u.arr.n == 0) {
			/* An empty list reads as "nothing", but would fall back to TXT. */
			conf_err_node(l, types, "expected at least one record type in 'allow_types'");
		} else if (types) {
			k->allow_types = calloc(types->u.arr.n ? types->u.arr.n : 1,
			                        sizeof(*k->allow_types));
			if (!k->allow_types)
				l->oom = true;
			for (size_t j = 0; k->allow_types && j < types->u.arr.n; j++) {
				struct toml_node *it = types->u.arr.items[j];
				uint16_t ty = rrset_type_from_str(it->u.s);
				if (!ty || rrset_type_is_meta(ty))
					conf_err_node(l, it, "expected a record type (A, AAAA, TXT, ...) in "
					              "'allow_types', found '%s'", it->u.s);
				else
					k->allow_types[k->n_allow_types++] = ty;
			}
		} else if (!toml_get(t, "allow_types")) {
			k->allow_types = malloc(sizeof(*k->allow_types));
			if (k->allow_types) {
				k->allow_types[0] = RR_TXT;
				k->n_allow_types = 1;
			} else {
				l->oom = true;
			}
		}
		struct toml_node *names = conf_get_str_array(l, t, "allow_names");
		if (names && names->u.arr.n == 0) {
			/* An empty list reads as "nowhere", but would mean the whole zone. */
			conf_err_node(l, names, "expected at least one name in 'allow_names' (leave it out to "
			              "allow any name below the apex)");
		} else if (names) {
			bool ok = true;
			for (size_t j = 0; j < names->u.arr.n; j++) {
				struct toml_node *it = names->u.arr.items[j];
				if (!conf_valid_name(it->u.s)) {
					conf_err_node(l, it, "expected a domain name in 'allow_names', found '%s'",
					              it->u.s);
					ok = false;
				}
			}
			if (ok)
				k->allow_names = conf_copy_strs(l, names, false, &k->n_allow_names);
		}
		config_schema_unknown(l, where, t, where);
	}
}

/* An outbound key: { name, algorithm, secret | key_file } (ds_push_key). */
void config_tsig_load_outbound(struct loader *l, struct toml_node *t, struct config_tsig_key *k,
                               const char *where)
{
	static const char *const keys[] = { "name", "algorithm", "secret", "key_file", NULL };
	k->pos = conf_pos(l, t);
	k->fudge = TSIG_FUDGE_DEFAULT;
	struct toml_node *n = conf_get_type(l, t, "name", TOML_STRING);
	if (n && !conf_valid_name(n->u.s))
		conf_err_node(l, n, "expected a domain name for 'name', found '%s'", n->u.s);
	else if (n)
		k->name = conf_strdup(l, n->u.s);
	else if (!toml_get(t, "name"))
		conf_missing(l, t, "name", where);
	struct toml_node *alg = conf_get_type(l, t, "algorithm", TOML_STRING);
	if (alg && !(k->algorithm = tsig_alg_from_str(alg->u.s)))
		conf_err_node(l, alg, "expected a TSIG algorithm (%s), found '%s'", tsig_alg_list(),
		         alg->u.s);
	else if (!alg && !toml_get(t, "algorithm"))
		conf_missing(l, t, "algorithm", where);
	struct toml_node *kf = toml_get(t, "key_file"), *sec = toml_get(t, "secret");
	if (kf && sec) {
		conf_err_node(l, sec, "expected only one of 'key_file' and 'secret' in %s", where);
	} else if (kf) {
		if (conf_get_path(l, t, "key_file", &k->key_file))
			read_key_file(l, kf, k);
	} else if (sec) {
		sec = conf_get_type(l, t, "secret", TOML_STRING);
		int len = sec ? base64_decode(sec->u.s, strlen(sec->u.s), k->secret,
		                              sizeof(k->secret)) : 0;
		if (sec && len == -2)
			conf_err_node(l, sec, "expected at most %d bytes in 'secret'", TSIG_SECRET_MAX);
		else if (sec && len <= 0)
			conf_err_node(l, sec, "expected base64 for 'secret'");
		else if (sec)
			k->secret_len = (size_t)len;
	} else {
		conf_err_node(l, t, "expected 'key_file' or 'secret' in %s", where);
	}
	conf_check_unknown(l, t, keys, where);
}
