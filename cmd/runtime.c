/*
 * Wiring one generation together: the only place that knows every module.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acme/acme_zone.h"
#include "cmd/runtime.h"
#include "core/config.h"
#include "core/diag.h"
#include "core/dname.h"
#include "core/geo.h"
#include "core/health.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/rrl.h"
#include "core/zone.h"
#include "core/zone_load.h"
#include "core/zone_table.h"
#include "dnssec/signer.h"

#define RESIGN_CHECK_MS 60000

/*
 * Signers outlive generations.  A reload that keeps a zone's key file and
 * signature settings reuses the zone's signer, and with it every cached
 * signature, so the new snapshot is built without signing what did not
 * change: with hundreds of geo sites that is the difference between a
 * reload of milliseconds and one of seconds with queries waiting.
 */
struct signer_slot {
	struct signer_slot *next;
	char *zone;
	char *key_path;
	struct stat key_stat;        /* a rotated key file makes a new signer */
	uint32_t validity, inception, refresh;
	bool publish_cds;
	struct signer *signer;
	unsigned refs;
};

static struct signer_slot *signer_pool;

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static struct signer *signer_acquire(const struct config *c, const struct config_zone *zc,
                                     char err[256])
{
	const char *key_path = zc->keys[0].key_path;
	struct stat st;
	if (stat(key_path, &st) < 0) {
		snprintf(err, 256, "%s: %s", key_path, strerror(errno));
		return NULL;
	}
	for (struct signer_slot *sl = signer_pool; sl; sl = sl->next) {
		if (strcmp(sl->zone, zc->zone) == 0 && strcmp(sl->key_path, key_path) == 0 &&
		    same_file(&sl->key_stat, &st) && sl->validity == c->sig_validity_s &&
		    sl->inception == c->sig_inception_s && sl->refresh == c->sig_refresh_s &&
		    sl->publish_cds == zc->publish_cds) {
			sl->refs++;
			return sl->signer;
		}
	}
	struct signer_slot *sl = calloc(1, sizeof(*sl));
	if (!sl) {
		snprintf(err, 256, "out of memory");
		return NULL;
	}
	sl->signer = signer_new(zc->zone, key_path, c, zc->publish_cds, err);
	sl->zone = strdup(zc->zone);
	sl->key_path = strdup(key_path);
	if (!sl->signer || !sl->zone || !sl->key_path) {
		signer_free(sl->signer);
		free(sl->zone);
		free(sl->key_path);
		free(sl);
		return NULL;
	}
	sl->key_stat = st;
	sl->validity = c->sig_validity_s;
	sl->inception = c->sig_inception_s;
	sl->refresh = c->sig_refresh_s;
	sl->publish_cds = zc->publish_cds;
	sl->refs = 1;
	sl->next = signer_pool;
	signer_pool = sl;
	return sl->signer;
}

static void signer_release(struct signer *s)
{
	for (struct signer_slot **p = &signer_pool; s && *p; p = &(*p)->next) {
		struct signer_slot *sl = *p;
		if (sl->signer != s)
			continue;
		if (--sl->refs == 0) {
			*p = sl->next;
			signer_free(sl->signer);
			free(sl->zone);
			free(sl->key_path);
			free(sl);
		}
		return;
	}
}

static bool is_sqlite(const struct config_zone *zc)
{
	return zc->store_type && strcmp(zc->store_type, "sqlite") == 0;
}

static void resign_check(struct loop *l, void *arg);

static void schedule_resign(struct generation *g)
{
	if (g->loop)
		g->resign_timer = loop_timer_add(g->loop, RESIGN_CHECK_MS, resign_check, g);
}

/*
 * Rebuilds every snapshot whose signatures reach their refresh point.  The
 * signer's cache makes this cheap: only signatures that are due are made.
 */
static void resign_check(struct loop *l, void *arg)
{
	struct generation *g = arg;
	(void)l;
	uint64_t now = (uint64_t)time(NULL);
	for (size_t i = 0; i < g->cfg->n_zones; i++) {
		const struct config_zone *zc = &g->cfg->zones[i];
		if (!g->signers[i])
			continue;
		uint8_t apex[DNAME_MAX];
		if (dname_from_str(zc->zone, apex) < 0)
			continue;
		const struct zone *z = zone_table_get(g->zones, apex);
		if (!z || !z->expires_at || now < z->expires_at)
			continue;
		log_info("%s: signatures reach their refresh point; re-signing", zc->zone);
		if (is_sqlite(zc)) {
			char err[256] = "";
			if (acme_resign(g->acme, apex, err) < 0)
				log_error("%s: re-signing failed: %s", zc->zone, err);
			continue;
		}
		struct diag d;
		diag_init(&d);
		struct zone *nz = zone_load_static(g->cfg, zc, g->sites, signer_hook(g->signers[i]), &d);
		if (nz)
			zone_table_replace(g->zones, nz);
		else
			log_error("%s: re-signing failed; keeping the current snapshot", zc->zone);
		for (size_t k = 0; k < d.n; k++)
			log_error("%s", d.msgs[k]);
		diag_clear(&d);
	}
	schedule_resign(g);
}

struct generation *generation_new(const char *path, struct loop *loop,
                                  const struct generation *prev, bool check_only,
                                  struct diag *d)
{
	size_t before = d->n;
	struct generation *g = calloc(1, sizeof(*g));
	if (!g) {
		diag_add(d, NULL, 0, 0, "out of memory");
		return NULL;
	}
	g->loop = loop;
	g->cfg = config_load(path, d);
	if (!g->cfg)
		goto fail;
	const struct config *c = g->cfg;
	char err[256] = "";

	if (c->n_sites) {
		g->sites = geo_sites_new(c, err);
		if (!g->sites)
			diag_add(d, c->path, 0, 0, "%s", err);
	}
	if (c->geo.n_databases || c->geo.has_default_location) {
		g->geo_db = geo_db_open(&c->geo, err);
		if (!g->geo_db)
			diag_add(d, c->path, 0, 0, "%s", err);
	}
	g->signers = calloc(c->n_zones ? c->n_zones : 1, sizeof(*g->signers));
	g->zones = zone_table_new();
	if (!g->signers || !g->zones) {
		diag_add(d, NULL, 0, 0, "out of memory");
		goto fail;
	}
	if (!check_only) {
		g->acme = acme_new(g->zones, loop, err);
		if (!g->acme) {
			diag_add(d, c->path, 0, 0, "%s", err);
			goto fail;
		}
	}
	for (size_t i = 0; i < c->n_zones; i++) {
		const struct config_zone *zc = &c->zones[i];
		if (zc->n_keys > 0) {
			g->signers[i] = signer_acquire(c, zc, err);
			if (!g->signers[i]) {
				diag_add(d, c->path, zc->keys[0].pos.line, zc->keys[0].pos.col, "%s", err);
				continue;
			}
		}
		const struct zone_signer *hook = g->signers[i] ? signer_hook(g->signers[i]) : NULL;
		if (is_sqlite(zc)) {
			if (zc->n_geo)
				diag_add(d, c->path, zc->pos.line, zc->pos.col,
				         "zone %s: geo names are served from file-backed zones only", zc->zone);
			if (check_only) {
				/* The seed file must load; the database is not touched. */
				if (zc->zone_path || zc->file)
					zone_free(zone_load_static(c, zc, NULL, hook, d));
			} else if (acme_add_zone(g->acme, c, zc, hook, err) < 0)
				diag_add(d, c->path, zc->pos.line, zc->pos.col, "zone %s: %s", zc->zone, err);
			continue;
		}
		if (zc->n_geo && (!g->sites || (!g->geo_db && !c->geo.has_default_location)))
			diag_add(d, c->path, zc->pos.line, zc->pos.col,
			         "zone %s has geo names: configure [[sites]] and [geo] databases or a "
			         "default_location", zc->zone);
		struct zone *z = zone_load_static(c, zc, g->sites, hook, d);
		if (!z)
			continue;
		int rc = zone_table_add(g->zones, z);
		if (rc < 0) {
			diag_add(d, c->path, zc->pos.line, zc->pos.col, "zone %s is configured twice", zc->zone);
			zone_free(z);
		}
	}
	if (d->n > before)
		goto fail;

	if (loop && g->sites) {
		/* A reload keeps what the health checks already know, by site name. */
		if (prev && prev->sites)
			geo_sites_copy_alive(g->sites, prev->sites);
		g->health = health_new(loop, g->sites, c, err);
		if (!g->health) {
			diag_add(d, c->path, 0, 0, "%s", err);
			goto fail;
		}
	}
	g->env.zones = g->zones;
	g->env.sites = g->sites;
	g->env.geo_db = g->geo_db;
	g->env.udp_max_size = c->udp_max_size;
	if (c->rrl_rate) {
		struct rrl_config rc = {
			.rate = c->rrl_rate,
			.slip = c->rrl_slip,
			.ipv4_prefix = c->rrl_ipv4_prefix,
			.ipv6_prefix = c->rrl_ipv6_prefix,
			.buckets = 65536,
		};
		g->rrl = rrl_new(&rc);
		if (!g->rrl) {
			diag_add(d, NULL, 0, 0, "cannot set up response rate limiting (no memory or "
			         "no random bytes)");
			goto fail;
		}
		g->env.rrl = g->rrl;
	}
	if (c->cookies) {
		if (prev && prev->env.cookies)
			g->cookie = prev->cookie;
		else if (cookie_secret_random(&g->cookie) < 0) {
			diag_add(d, NULL, 0, 0, "cannot read random bytes for the cookie secret");
			goto fail;
		}
		g->env.cookies = &g->cookie;
	}
	if (g->acme) {
		if (prev)
			acme_keep_replay(g->acme, prev->acme);
		g->env.update = acme_update_handler(g->acme, &g->env);
	}
	schedule_resign(g);
	return g;

fail:
	generation_free(g);
	return NULL;
}

void generation_free(struct generation *g)
{
	if (!g)
		return;
	if (g->loop && g->resign_timer > 0)
		loop_timer_cancel(g->loop, g->resign_timer);
	health_free(g->health);
	rrl_free(g->rrl);
	acme_free(g->acme);
	zone_table_free(g->zones);
	if (g->cfg && g->signers)
		for (size_t i = 0; i < g->cfg->n_zones; i++)
			signer_release(g->signers[i]);
	free(g->signers);
	geo_db_free(g->geo_db);
	geo_sites_free(g->sites);
	config_free(g->cfg);
	free(g);
}
