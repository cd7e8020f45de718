/* SPDX-License-Identifier: MIT */
/*
 * [[zones.geo]]: a zone's names answered per client, the sites they choose
 * among (each must be a [[sites]] entry; a misspelt one gets a did-you-mean
 * from the site names) and their `https = { ... }` records.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* asprintf */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/conf/base64.h"
#include "core/conf/conf_internal.h"
#include "core/conf/toml.h"

/* `name` (absolute, trailing dot) is the zone or below it. */
static bool name_in_zone(const char *name, const char *zone)
{
	size_t ln = strlen(name), lz = strlen(zone);
	if (ln && name[ln - 1] == '.')
		ln--;
	if (lz && zone[lz - 1] == '.')
		lz--;
	if (ln == lz)
		return strncasecmp(name, zone, ln) == 0;
	return ln > lz && name[ln - lz - 1] == '.' && strncasecmp(name + ln - lz, zone, lz) == 0;
}

static const struct config_site *find_site(const struct config *c, const char *name)
{
	for (size_t i = 0; i < c->n_sites; i++)
		if (c->sites[i].name && strcmp(c->sites[i].name, name) == 0)
			return &c->sites[i];
	return NULL;
}

/* The site name closest to a misspelt one, with conf_check_unknown()'s slack. */
static const char *nearest_site(const struct config *c, const char *name)
{
	size_t best_d = strlen(name) >= 6 ? 2 : 1;
	const char *best = NULL;
	for (size_t i = 0; i < c->n_sites; i++) {
		if (!c->sites[i].name)
			continue;
		size_t d = conf_edit_distance(name, c->sites[i].name);
		/* Nothing in common is no suggestion ("q" is not a typo of "p"). */
		if (d >= strlen(name))
			continue;
		if (d <= best_d && (!best || d < best_d)) {
			best = c->sites[i].name;
			best_d = d;
		}
	}
	return best;
}

/* "www" in "example.com" -> "www.example.com"; for duplicate checks only. */
static char *geo_owner(struct loader *l, const char *name, const char *zone)
{
	char *r = NULL;
	size_t lz = strlen(zone);
	if (lz > 1 && zone[lz - 1] == '.')
		lz--;
	if (strcmp(name, "@") == 0)
		name = "";
	size_t ln = strlen(name);
	if (ln && name[ln - 1] == '.')
		return conf_strdup(l, name);
	if (asprintf(&r, "%s%s%.*s.", name, ln ? "." : "", (int)lz, zone) < 0) {
		l->oom = true;
		return NULL;
	}
	return r;
}

/* `https = { alpn = [...], site_names = "sites", port = 443, ech = "<base64>" }` */
static void load_geo_https(struct loader *l, struct toml_node *gt, struct config_geo_name *g)
{
	struct toml_node *t = conf_get_table(l, gt, "https");
	if (!t)
		return;
	struct config_geo_https *h = &g->https;
	h->enabled = true;
	h->pos = conf_pos(l, t);
	struct toml_node *alpn = conf_get_str_array(l, t, "alpn");
	if (alpn) {
		bool ok = true;
		for (size_t j = 0; j < alpn->u.arr.n; j++) {
			struct toml_node *it = alpn->u.arr.items[j];
			if (strlen(it->u.s) > 255) {
				conf_err_node(l, it, "expected an ALPN id of at most 255 bytes in 'alpn'");
				ok = false;
			}
		}
		if (ok)
			h->alpn = conf_copy_strs(l, alpn, false, &h->n_alpn);
	}
	struct toml_node *sn = conf_get_type(l, t, "site_names", TOML_STRING);
	if (sn) {
		size_t len = strlen(sn->u.s);
		if (len == 0 || sn->u.s[len - 1] == '.' || !conf_valid_name(sn->u.s))
			conf_err_node(l, sn, "expected a name relative to the zone for 'site_names' "
			              "(e.g. \"sites\"), found '%s'", sn->u.s);
		else
			h->site_names = conf_strdup(l, sn->u.s);
	} else if (!toml_get(t, "site_names")) {
		conf_missing(l, t, "site_names", "https");
	}
	config_schema_read(l, "https", t, h);
	h->has_port = h->port != 0;     /* 1..65535 when given */
	struct toml_node *ech = conf_get_type(l, t, "ech", TOML_STRING);
	if (ech) {
		size_t cap = strlen(ech->u.s) + 1;
		h->ech = malloc(cap);
		int n = h->ech ? base64_decode(ech->u.s, cap - 1, h->ech, cap) : -1;
		if (n <= 0) {
			conf_err_node(l, ech, "expected a non-empty base64 ECHConfigList for 'ech'");
			free(h->ech);
			h->ech = NULL;
		} else {
			h->ech_len = (size_t)n;
		}
	}
	config_schema_unknown(l, "https", t, "https");
}

void config_zone_geo_load(struct loader *l, struct toml_node *zt, struct config_zone *z)
{
	struct config *c = l->c;
	void *room;
	struct toml_node *arr = conf_get_tables_alloc(l, zt, "geo", "[[zones.geo]]", sizeof(*z->geo),
	                                              &room);
	if (!arr)
		return;
	z->geo = room;
	z->n_geo = arr->u.arr.n;
	char **owners = calloc(arr->u.arr.n, sizeof(*owners));
	if (!owners)
		l->oom = true;
	for (size_t i = 0; i < arr->u.arr.n; i++) {
		struct toml_node *t = arr->u.arr.items[i];
		struct config_geo_name *g = &z->geo[i];
		g->pos = conf_pos(l, t);
		config_schema_defaults("[[zones.geo]]", g);

		struct toml_node *n = conf_get_type(l, t, "name", TOML_STRING);
		if (n) {
			const char *s = n->u.s;
			size_t len = strlen(s);
			if (strcmp(s, "@") != 0 && !conf_valid_name(s)) {
				conf_err_node(l, n, "expected a domain name for 'name', found '%s'", s);
			} else if (len && s[len - 1] == '.' && z->zone && !name_in_zone(s, z->zone)) {
				conf_err_node(l, n, "expected a name inside zone '%s' for 'name', found '%s'",
				              z->zone, s);
			} else {
				g->name = conf_strdup(l, s);
				if (owners && z->zone)
					owners[i] = geo_owner(l, s, z->zone);
				for (size_t j = 0; owners && owners[i] && j < i; j++) {
					if (owners[j] && conf_name_eq(owners[j], owners[i])) {
						conf_err_node(l, n, "geo name '%s' is defined twice in zone '%s' "
						              "(first at line %d)", s, z->zone, z->geo[j].pos.line);
						break;
					}
				}
			}
		} else if (!toml_get(t, "name")) {
			conf_missing(l, t, "name", "[[zones.geo]]");
		}

		struct toml_node *sites = conf_get_str_array(l, t, "sites");
		if (sites) {
			bool ok = true;
			for (size_t j = 0; j < sites->u.arr.n; j++) {
				struct toml_node *it = sites->u.arr.items[j];
				if (!find_site(c, it->u.s)) {
					const char *near = nearest_site(c, it->u.s);
					if (near)
						conf_err_node(l, it, "expected the name of a [[sites]] entry in 'sites', "
						              "found '%s'; did you mean '%s'?", it->u.s, near);
					else
						conf_err_node(l, it, "expected the name of a [[sites]] entry in 'sites', "
						              "found '%s'", it->u.s);
					ok = false;
				}
			}
			if (ok)
				g->sites = conf_copy_strs(l, sites, false, &g->n_sites);
		}
		config_schema_read(l, "[[zones.geo]]", t, g);
		load_geo_https(l, t, g);
		struct toml_node *fb = conf_get_str_array(l, t, "fallback_sites");
		if (fb && (fb->u.arr.n < 1 || fb->u.arr.n > 2)) {
			conf_err_node(l, fb, "expected one or two site names in 'fallback_sites', found %zu",
			              fb->u.arr.n);
		} else if (fb) {
			bool ok = true;
			for (size_t j = 0; j < fb->u.arr.n; j++) {
				struct toml_node *it = fb->u.arr.items[j];
				if (!find_site(c, it->u.s)) {
					conf_err_node(l, it, "expected the name of a [[sites]] entry in "
					              "'fallback_sites', found '%s'", it->u.s);
					ok = false;
				}
			}
			if (ok)
				g->fallback_sites = conf_copy_strs(l, fb, false, &g->n_fallback_sites);
		}
		config_schema_unknown(l, "[[zones.geo]]", t, "[[zones.geo]]");
	}
	for (size_t i = 0; owners && i < arr->u.arr.n; i++)
		free(owners[i]);
	free(owners);
}
