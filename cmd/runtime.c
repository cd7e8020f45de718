/* SPDX-License-Identifier: MIT */
/*
 * Wiring one generation together: the only place that knows every module.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acme/acme_zone.h"
#include "acme/file_diff.h"
#include "acme/update.h"
#include "cmd/resign_job.h"
#include "cmd/runtime.h"
#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/conf/metrics.h"
#include "core/geo/geo_db.h"
#include "core/geo/geo_rule.h"
#include "core/geo/geo_sites.h"
#include "core/geo/health.h"
#include "core/net/dnstap.h"
#include "core/net/loop.h"
#include "core/net/rrl.h"
#include "core/net/source.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/geo_sets.h"
#include "core/zone/query_log.h"
#include "core/zone/zone.h"
#include "core/zone/zone_load.h"
#include "xfr/notify.h"
#include "xfr/secondary.h"
#include "xfr/xfr.h"
#include <geoacme_version.h>   /* generated: Dnstap.version */
#include "core/zone/zone_table.h"
#include "dnssec/rollover.h"
#include "dnssec/signer.h"
#include "storage/db.h"
#include "storage/records.h"
#include "storage/zonefile.h"

#define RESIGN_CHECK_MS 60000
/* How often the .mmdb files are stat'ed for a new version (doc/geo.md). */
#define GEO_DB_WATCH_MS 1000

/*
 * Signers outlive generations.  A reload that keeps a zone's key file and
 * signature settings reuses the zone's signer, and with it every cached
 * signature, so the new snapshot is built without signing what did not
 * change (and secondaries see the same signatures).  The reload builder
 * thread (cmd/builder.h) signs with it while the loop does too (UPDATEs,
 * geo pairs on first use): the signer locks its cache (dnssec/signer.h),
 * and the pool itself is locked here.
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
static pthread_mutex_t signer_pool_lock = PTHREAD_MUTEX_INITIALIZER;

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Signatures take their times from the loop's clock (a test may step it). */
static uint64_t loop_clock(void *arg)
{
	return (uint64_t)loop_wall_s(arg);
}

static struct signer *acquire_locked(const struct config *c, const struct config_zone *zc,
                                     const char *key_path, struct loop *loop, char err[256])
{
	/* A key policy publishes CDS/CDNSKEY: they name the key the parent should have. */
	bool publish_cds = zc->publish_cds || zc->key_policy.present;
	struct stat st;
	if (stat(key_path, &st) < 0) {
		snprintf(err, 256, "%s: %s", key_path, strerror(errno));
		return NULL;
	}
	for (struct signer_slot *sl = signer_pool; sl; sl = sl->next) {
		if (strcmp(sl->zone, zc->zone) == 0 && strcmp(sl->key_path, key_path) == 0 &&
		    same_file(&sl->key_stat, &st) && sl->validity == c->sig_validity_s &&
		    sl->inception == c->sig_inception_s && sl->refresh == c->sig_refresh_s &&
		    sl->publish_cds == publish_cds) {
			sl->refs++;
			return sl->signer;
		}
	}
	struct signer_slot *sl = calloc(1, sizeof(*sl));
	if (!sl) {
		snprintf(err, 256, "out of memory");
		return NULL;
	}
	sl->signer = signer_new(zc->zone, key_path, c, publish_cds, err);
	if (sl->signer && loop)
		signer_set_clock(sl->signer, loop_clock, loop);
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
	sl->publish_cds = publish_cds;
	sl->refs = 1;
	sl->next = signer_pool;
	signer_pool = sl;
	return sl->signer;
}

static struct signer *signer_acquire(const struct config *c, const struct config_zone *zc,
                                     const char *key_path, struct loop *loop, char err[256])
{
	pthread_mutex_lock(&signer_pool_lock);
	struct signer *s = acquire_locked(c, zc, key_path, loop, err);
	pthread_mutex_unlock(&signer_pool_lock);
	return s;
}

static void release_locked(struct signer *s)
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

static void signer_release(struct signer *s)
{
	pthread_mutex_lock(&signer_pool_lock);
	release_locked(s);
	pthread_mutex_unlock(&signer_pool_lock);
}

static bool is_sqlite(const struct config_zone *zc)
{
	return zc->store_type && strcmp(zc->store_type, "sqlite") == 0;
}

static void resign_check(struct loop *l, void *arg);

/*
 * A zone from a file re-signed (a key change, or signatures that came due):
 * one job at a time per zone, beside the loop (cmd/resign_job.h).  A key
 * change during a job makes it run again once it ends, with the keys as
 * they are then; what the first made is not served (the signer may have
 * changed keys halfway through it), its signatures stay in the cache.
 */
struct resign_slot {
	struct generation *g;
	size_t i;
	struct resign_job *job;
	bool again;           /* the key set changed during the job */
};

static void resign_start(struct generation *g, size_t i, const struct zone *cur);

static void resign_done(void *ctx, struct resign_job_out *out)
{
	struct resign_slot *sl = ctx;
	struct generation *g = sl->g;
	const struct config_zone *zc = &g->cfg->zones[sl->i];
	sl->job = NULL;
	for (size_t k = 0; k < out->d.n; k++)
		log_error("%s", out->d.msgs[k]);
	uint8_t apex[DNAME_MAX];
	const struct zone *cur = NULL;
	if (dname_from_str(zc->zone, apex) >= 0) {
		dname_lower(apex);
		cur = zone_table_get(g->zones, apex);
	}
	if (sl->again && cur) {
		sl->again = false;
		log_info("%s: the key set changed again meanwhile; re-signing again", zc->zone);
		resign_start(g, sl->i, cur);
		return;
	}
	if (!out->z || !cur) {
		/* Still due, or still awaited by the rollover: the re-sign check
		 * tries again. */
		log_error("%s: re-signing failed; keeping the current snapshot", zc->zone);
		return;
	}
	struct zone *z = out->z;
	out->z = NULL;
	log_info("%s: re-signed beside the loop in %.0f ms (%llu new signatures), serial %u; "
	         "swapping it in", zc->zone, out->ms, (unsigned long long)zone_signatures_made(z),
	         zone_serial(z));
	/* The difference was made from the snapshot served now (a zone from a
	 * file changes only here, or by a reload, which ends this generation). */
	if (zone_table_replace_diffed(g->zones, z, out->diff, out->diff_len) < 0) {
		zone_free(z);
		return;
	}
	if (g->rolls && g->rolls[sl->i])
		rollover_resigned(g->rolls[sl->i]);
}

static void resign_start(struct generation *g, size_t i, const struct zone *cur)
{
	const struct config_zone *zc = &g->cfg->zones[i];
	struct resign_slot *sl = &g->resigns[i];
	struct resign_job_in in = {
		.cfg = g->cfg, .zc = zc, .sites = g->sites, .signer = signer_hook(g->signers[i]),
		.cur = cur, .diff = zc->axfr_policy != AXFR_DENY,
	};
	char err[256] = "";
	sl->g = g;
	sl->i = i;
	sl->job = resign_job_start(g->loop, &in, resign_done, sl, err);
	if (!sl->job)
		log_error("%s: cannot re-sign beside the loop (%s); trying again at the next check",
		          zc->zone, err);
}

/* A signed zone signed anew from what it serves (the cache keeps what did
 * not change) and swapped in; `keys`: because its key set changed. */
static void rebuild_signed(struct generation *g, size_t i, bool keys)
{
	const struct config_zone *zc = &g->cfg->zones[i];
	uint8_t apex[DNAME_MAX];
	if (!g->signers[i] || dname_from_str(zc->zone, apex) < 0)
		return;
	dname_lower(apex);
	const struct zone *z = zone_table_get(g->zones, apex);
	if (!z)
		return;
	if (is_sqlite(zc)) {
		char err[256] = "";
		int ret = acme_resign(g->acme, apex, keys, err);
		if (ret < 0)
			log_error("%s: re-signing failed: %s", zc->zone, err);
		else if (ret == 0 && keys && g->rolls[i])
			rollover_resigned(g->rolls[i]);   /* built whole on the loop: served already */
		/* 1: built beside the loop; zone_rekeyed tells the rollover. */
		return;
	}
	if (g->resigns && g->loop) {
		if (g->resigns[i].job) {
			g->resigns[i].again = g->resigns[i].again || keys;
			return;   /* one at a time; a due re-sign is what it does anyway */
		}
		resign_start(g, i, z);
		return;
	}
	struct diag d;
	diag_init(&d);
	/* From the snapshot in memory: only SIGHUP reads zone files. */
	struct zone *nz = zone_load_resign(g->cfg, zc, z, g->sites, signer_hook(g->signers[i]), &d);
	if (nz)
		zone_table_replace(g->zones, nz);
	else
		log_error("%s: re-signing failed; keeping the current snapshot", zc->zone);
	for (size_t k = 0; k < d.n; k++)
		log_error("%s", d.msgs[k]);
	diag_clear(&d);
	if (nz && keys && g->rolls[i])
		rollover_resigned(g->rolls[i]);
}

static int journal_to_xfr(void *arg, const uint8_t *apex, const uint8_t *diff, size_t len)
{
	return xfr_history_add(arg, apex, diff, len) == -ENOMEM ? -ENOMEM : 0;
}

/*
 * A secondary keeps serving its copy until the SOA expire runs out, with
 * the signatures it received; the oldest of those can have as little as
 * signature_refresh left when they were sent.  Say so when the expire is
 * longer: the secondary could outlive its signatures.
 */
static void warn_expire(const struct generation *g)
{
	const struct config *c = g->cfg;
	for (size_t i = 0; i < c->n_zones; i++) {
		const struct config_zone *zc = &c->zones[i];
		uint8_t apex[DNAME_MAX];
		if (!zc->n_keys || zc->axfr_policy == AXFR_DENY || dname_from_str(zc->zone, apex) < 0)
			continue;
		dname_lower(apex);
		const struct zone *z = zone_table_get(g->zones, apex);
		if (!z)
			continue;
		const struct rdata *rd = &zone_soa(z)->rr[0];
		uint32_t expire = wire_get_u32(rd->data + rd->len - 8);
		if (expire > c->sig_refresh_s)
			log_warn("%s: the SOA expire (%u s) is longer than signature_refresh (%u s): a "
			         "secondary cut off from this server could serve signatures after they "
			         "expire; lower the expire or raise signature_refresh", zc->zone, expire,
			         c->sig_refresh_s);
	}
}

/*
 * Secondaries are told of a new serial once it is on disk: an ACME
 * commit's fdatasync runs after the change is served (acme_zone.h), and
 * NOTIFY waits for it (zone_durable below).  A secondary that polls the
 * SOA on its own in that window of a few ms may still copy it.
 */
static void announce(struct generation *g, const struct zone *z)
{
	if (g->notify && acme_durable(g->acme, zone_apex(z)))
		notify_zone_changed(g->notify, z);
}

/* An ACME zone's commits are all on disk: the news held for them. */
static void zone_durable(void *arg, const uint8_t *apex)
{
	struct generation *g = arg;
	const struct zone *z = zone_table_get(g->zones, apex);
	if (g->notify && z)
		notify_zone_changed(g->notify, z);
}

/* An ACME zone's snapshot signed with its new keys beside the loop is
 * served (acme_resign): the rollover's step takes its time from now. */
static void zone_rekeyed(void *arg, const uint8_t *apex)
{
	struct generation *g = arg;
	for (size_t i = 0; g->rolls && i < g->cfg->n_zones; i++) {
		uint8_t a[DNAME_MAX];
		if (!g->rolls[i] || dname_from_str(g->cfg->zones[i].zone, a) < 0)
			continue;
		dname_lower(a);
		if (dname_equal(a, apex))
			rollover_resigned(g->rolls[i]);
	}
}

/* A zone is served with a new snapshot: history first, then the news. */
static void zone_changed(void *arg, const struct zone *old, const struct zone *z)
{
	struct generation *g = arg;
	if (g->xfr)
		xfr_zone_changed(g->xfr, old, z);
	announce(g, z);
}

/* A snapshot patched in place (an ACME UPDATE): its difference continues
 * the IXFR history (none: the history starts over), then the news. */
static void zone_patched(void *arg, const struct zone *z, const uint8_t *diff, size_t len)
{
	struct generation *g = arg;
	if (g->xfr && (!diff || xfr_history_add(g->xfr, zone_apex(z), diff, len) < 0))
		xfr_history_clear(g->xfr, zone_apex(z));
	announce(g, z);
}

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
	uint64_t now = (uint64_t)loop_wall_s(l);
	for (size_t i = 0; i < g->cfg->n_zones; i++) {
		const struct config_zone *zc = &g->cfg->zones[i];
		if (!g->signers[i])
			continue;
		uint8_t apex[DNAME_MAX];
		if (dname_from_str(zc->zone, apex) < 0)
			continue;
		const struct zone *z = zone_table_get(g->zones, apex);
		if (g->resigns && g->resigns[i].job)
			continue;   /* being re-signed beside the loop */
		if (g->acme && acme_rekeying(g->acme, apex))
			continue;   /* an ACME zone's key change, signed beside the loop */
		if (z && rollover_awaits_resign(g->rolls[i]) && !zone_resigning(z)) {
			/* The key change's re-signing failed: again. */
			log_info("%s: re-signing with the new key set again", zc->zone);
			rebuild_signed(g, i, true);
			continue;
		}
		if (!z || !zone_expires_at(z) || now < zone_expires_at(z) || zone_resigning(z))
			continue;   /* unsigned, not due, or being renewed in slices */
		log_info("%s: signatures reach their refresh point; re-signing", zc->zone);
		rebuild_signed(g, i, false);
	}
	schedule_resign(g);
}

/* The key set of a zone changed (dnssec/rollover.h): a new snapshot signed with it. */
static void keys_changed(void *arg, const char *zone)
{
	struct generation *g = arg;
	for (size_t i = 0; i < g->cfg->n_zones; i++) {
		uint8_t a[DNAME_MAX], b[DNAME_MAX];
		if (dname_from_str(g->cfg->zones[i].zone, a) < 0 || dname_from_str(zone, b) < 0 ||
		    !dname_equal(a, b))
			continue;
		log_info("%s: the key set changed; re-signing", g->cfg->zones[i].zone);
		rebuild_signed(g, i, true);
		return;
	}
}

size_t generation_geo_names(const struct generation *g, struct generation_geo *out, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < g->cfg->n_zones && n < cap; i++) {
		const struct config_zone *zc = &g->cfg->zones[i];
		uint8_t apex[DNAME_MAX], owner[DNAME_MAX];
		if (!zc->n_geo || dname_from_str(zc->zone, apex) < 0)
			continue;
		const struct zone *z = zone_table_get(g->zones, apex);
		for (size_t k = 0; z && k < zc->n_geo && n < cap; k++) {
			int len = zone_load_geo_owner(zc, zc->geo[k].name, owner);
			const struct zone_node *node = len > 0 ? zone_find(z, owner, (size_t)len) : NULL;
			if (!node || !node->geo)
				continue;
			dname_to_str(owner, out[n].fqdn, sizeof(out[n].fqdn));
			out[n].sets = node->geo;
			n++;
		}
	}
	return n;
}

uint64_t generation_signature_expiry(const struct generation *g, const struct zone *z)
{
	struct secondary_state st;
	if (g->secondary && secondary_zone_state(g->secondary, zone_apex(z), &st))
		return st.signature_expiry > 0 ? (uint64_t)st.signature_expiry : 0;
	int64_t at = zone_signature_expiry(z);
	return at > 0 ? (uint64_t)at : 0;
}

/* True when some candidate of the geo name (either family) is alive. */
static bool geo_name_has_alive(const struct geo_sets *sets, const struct geo_sites *sites)
{
	const struct geo_rule *r = geo_sets_rule(sets);
	for (int f = 0; f < GEO_FAMILIES; f++)
		for (size_t k = 0; k < geo_rule_candidates(r, (enum geo_family)f); k++)
			if (geo_site_serving(sites, geo_rule_candidate_site(r, (enum geo_family)f, k),
			                   (enum geo_family)f))
				return true;
	return false;
}

/*
 * After every liveness change: a geo name whose candidates are all down
 * answers as if all were up (fail open).  Logged once when that starts and
 * once when it ends, with the names affected, instead of once per query.
 */
static void on_health_change(void *arg, size_t site, enum geo_family f, bool alive)
{
	struct generation *g = arg;
	struct generation_geo refs[GENERATION_GEO_MAX];
	(void)site;
	(void)f;
	(void)alive;
	if (!g->health_settled)
		return;   /* the first round is still running */
	size_t n = generation_geo_names(g, refs, GENERATION_GEO_MAX);
	for (size_t i = 0; i < n && g->failing_open; i++) {
		bool failing = !geo_name_has_alive(refs[i].sets, g->sites);
		if (failing && !g->failing_open[i]) {
			metrics.fail_open_episodes++;
			log_error("geo: %s: no site is alive; answering as if all were (fail open)",
			          refs[i].fqdn);
		} else if (!failing && g->failing_open[i]) {
			log_warn("geo: %s: a site is alive again; fail open is over", refs[i].fqdn);
		}
		g->failing_open[i] = failing;
	}
}

static void first_round_settled(void *arg)
{
	generation_health_settled(arg);
}

/* At start and after a reload: every site's state, once. */
static void log_sites(const struct generation *g)
{
	for (size_t i = 0; i < geo_sites_count(g->sites); i++) {
		const char *last = health_last_result(g->health, i);
		uint8_t addr[16];
		bool dual = geo_site_address(g->sites, i, 4, addr) && geo_site_address(g->sites, i, 6, addr);
		log_info("health: site %s: state %s (%s)", geo_site_name(g->sites, i),
		         !geo_site_enabled(g->sites, i) ? "disabled"
		         : geo_site_up(g->sites, i) ? "up"
		         : !dual ? "down"
		         : geo_site_alive(g->sites, i, GEO_IPV4) ? "up over IPv4, down over IPv6"
		         : geo_site_alive(g->sites, i, GEO_IPV6) ? "down over IPv4, up over IPv6"
		                                                 : "down",
		         last ? "health-checked" : "not checked");
	}
}

static bool has_site(const struct geo_sites *s, const char *name)
{
	return s && geo_sites_find(s, name) >= 0;
}

static const struct zone *zone_named(const struct generation *g, const char *name)
{
	for (size_t i = 0; i < zone_table_count(g->zones); i++)
		if (strcmp(zone_name(zone_table_at(g->zones, i)), name) == 0)
			return zone_table_at(g->zones, i);
	return NULL;
}

void generation_log_changes(const struct generation *old, const struct generation *g)
{
	size_t added = 0, removed = 0, kept = 0;
	for (size_t i = 0; g->sites && i < geo_sites_count(g->sites); i++) {
		const char *name = geo_site_name(g->sites, i);
		if (has_site(old->sites, name)) {
			kept++;
			continue;
		}
		added++;
		log_info("reload: site %s added", name);
	}
	for (size_t i = 0; old->sites && i < geo_sites_count(old->sites); i++)
		if (!has_site(g->sites, geo_site_name(old->sites, i))) {
			removed++;
			log_info("reload: site %s removed", geo_site_name(old->sites, i));
		}
	for (size_t i = 0; i < zone_table_count(g->zones); i++) {
		const struct zone *z = zone_table_at(g->zones, i), *was = zone_named(old, zone_name(z));
		if (!was)
			log_info("reload: zone %s added, serial %u", zone_name(z), zone_serial(z));
		else if (zone_serial(was) != zone_serial(z))
			log_info("reload: zone %s serial %u -> %u", zone_name(z), zone_serial(was), zone_serial(z));
	}
	for (size_t i = 0; i < zone_table_count(old->zones); i++)
		if (!zone_named(g, zone_name(zone_table_at(old->zones, i))))
			log_info("reload: zone %s removed", zone_name(zone_table_at(old->zones, i)));
	for (size_t i = 0; g->geo_db && i < geo_db_count(g->geo_db); i++) {
		time_t built = (time_t)geo_db_build_epoch(g->geo_db, i);
		struct tm tm;
		char when[32] = "unknown";
		if (built && gmtime_r(&built, &tm))
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
		log_info("reload: database %s (%s) built %s", geo_db_path(g->geo_db, i),
		         geo_db_type(g->geo_db, i), when);
	}
	log_info("reload: %zu site%s (%zu added, %zu removed), %zu zone%s", kept + added,
	         kept + added == 1 ? "" : "s", added, removed, zone_table_count(g->zones),
	         zone_table_count(g->zones) == 1 ? "" : "s");
}

/*
 * A zone file serve could not open, reported at the key that names it, so
 * that check lists it with every other problem.  One not there under
 * `directory` gets a hint: Hickory's configs often rely on its default
 * directory, /var/named, which geoacme does not assume.
 */
static bool zone_file_readable(const struct config *c, const struct config_zone *zc,
                               const char *file, struct diag *d)
{
	if (access(file, R_OK) == 0)
		return true;
	int e = errno;
	size_t n = strlen(c->directory);
	bool hint = e == ENOENT && strncmp(file, c->directory, n) == 0 && file[n] == '/' &&
	            strcmp(c->directory, "/var/named") != 0;
	struct config_pos at = zc->file_pos.line ? zc->file_pos : zc->pos;
	diag_add(d, config_file_of(c, at), at.line, at.col,
	         "zone %s: cannot read zone file '%s': %s%s%s%s", zc->zone, file, strerror(e),
	         hint ? "; relative paths are resolved against directory = \"" : "",
	         hint ? c->directory : "",
	         hint ? "\"; a Hickory config without `directory` means /var/named: set "
	                "directory = \"/var/named\" if the zone files are there" : "");
	return false;
}

/* A database this start made and could not fill: gone, with its WAL files. */
static void remove_fresh_db(const char *path)
{
	static const char *const tails[] = { "", "-wal", "-shm", "-journal" };
	char p[4096];
	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++)
		if (snprintf(p, sizeof(p), "%s%s", path, tails[i]) < (int)sizeof(p))
			unlink(p);
}

struct check_peek {
	struct change_list file;
	uint8_t soa[2 * DNAME_MAX + 20];
	uint16_t soa_len;
	uint32_t soa_ttl;
	const uint8_t *apex;
};

static int peek_file(void *arg, const struct records_row *row)
{
	struct check_peek *p = arg;
	return file_diff_collect(&p->file, row);
}

static int peek_record(void *arg, const struct records_row *row)
{
	struct check_peek *p = arg;
	if (row->type == RR_SOA && dname_equal(row->name, p->apex) && row->rdlen <= sizeof(p->soa)) {
		memcpy(p->soa, row->rdata, row->rdlen);
		p->soa_len = row->rdlen;
		p->soa_ttl = row->ttl;
	}
	return 0;
}

/*
 * Check mode, a seeded database: the zone file compared with what it said
 * when last applied (acme/file_diff.h), read-only; the difference serve
 * would apply is printed, a bad edit is an error at its line.  `bumped`:
 * a signed zone that is transferred, whose serial serve raises by one
 * before it applies the edit when it signs anew (always at start, at a
 * reload only when some signature is new: acme_zone.c attach_zone).  A
 * reload usually takes every signature from the cache, so the difference
 * is printed as it applies then, and one more line gives the serials of a
 * start, worked out as serve does (file_diff_rebase onto the raised SOA).
 */
static void check_edit(const struct config_zone *zc, bool bumped, struct diag *d)
{
	struct check_peek p = { .soa_len = 0 };
	uint8_t apex[DNAME_MAX];
	char err[256];
	if (dname_from_str(zc->zone, apex) < 0)
		return;
	dname_lower(apex);
	p.apex = apex;
	change_list_init(&p.file);
	if (zonefile_peek(zc->journal_path, peek_file, peek_record, &p, err) < 0) {
		diag_add(d, NULL, 0, 0, "zone %s: %s", zc->zone, err);
		goto out;
	}
	struct file_diff fd;
	file_diff_init(&fd);
	if (p.soa_len < 22) {
		diag_add(d, NULL, 0, 0, "zone %s: %s holds no SOA record at the apex", zc->zone,
		         zc->journal_path);
	} else if (file_diff_compute(zc->zone_path, apex, &p.file, p.soa, p.soa_len, p.soa_ttl,
	                             &fd, d) == 1) {
		printf("zone %s: %s changed since it was applied; serve applies this difference "
		       "(%zu removed, %zu added%s, serial %u -> %u):\n", zc->zone, zc->zone_path,
		       fd.n_del, fd.n_add, fd.soa ? ", SOA changed" : "", fd.serial_from, fd.serial_to);
		file_diff_print(&fd, stdout);
		uint32_t stored = fd.serial_from;
		wire_set_u32(p.soa + p.soa_len - 20, update_serial_next(stored));
		if (bumped && file_diff_rebase(&fd, p.soa, p.soa_len, p.soa_ttl) == 0)
			printf("zone %s: serve signs it anew at start (and at a reload that makes new "
			       "signatures), raising the serial %u -> %u first; the difference then gets "
			       "serial %u -> %u\n", zc->zone, stored, fd.serial_from, fd.serial_from,
			       fd.serial_to);
	}
	file_diff_clear(&fd);
out:
	change_list_clear(&p.file);
}

/*
 * Check mode: what acme_add_zone() would meet at journal_path, found
 * without writing (db_identify opens nothing read-write): the folder, a
 * foreign or newer file, another zone's database; and the seed file when
 * serve would seed.
 */
static void check_journal(const struct config *c, const struct config_zone *zc,
                          const struct zone_signer *hook, struct diag *d)
{
	char err[256];
	struct db_info info;
	if (db_identify(zc->journal_path, &info, err) < 0) {
		diag_add(d, config_file_of(c, zc->pos), zc->pos.line, zc->pos.col, "zone %s: %s", zc->zone, err);
		return;
	}
	uint8_t apex[DNAME_MAX];
	if (info.apex_len > 0 && dname_from_str(zc->zone, apex) >= 0) {
		dname_lower(apex);
		if ((size_t)info.apex_len != dname_len(apex) ||
		    memcmp(info.apex, apex, (size_t)info.apex_len) != 0) {
			char other[DNAME_MAX * 4 + 2];
			if (dname_to_str(info.apex, other, sizeof(other)) < 0)
				snprintf(other, sizeof(other), "(unreadable)");
			diag_add(d, config_file_of(c, zc->pos), zc->pos.line, zc->pos.col, "zone %s: %s holds zone %s, not %s",
			         zc->zone, zc->journal_path, other, zc->zone);
			return;
		}
	}
	if (info.state == DB_OURS && db_quick_check(zc->journal_path, err) < 0) {
		diag_add(d, config_file_of(c, zc->pos), zc->pos.line, zc->pos.col, "zone %s: %s", zc->zone, err);
		return;
	}
	if (zc->secondary)
		return;   /* the primaries are the truth: no zone file to read */
	if (info.state == DB_OURS && info.seeded) {
		/* No file: serve warns and serves the database (acme_zone.c). */
		if (zc->zone_path && !(access(zc->zone_path, F_OK) < 0 && errno == ENOENT) &&
		    zone_file_readable(c, zc, zc->zone_path, d))
			check_edit(zc, hook && zc->axfr_policy != AXFR_DENY, d);
		return;
	}
	if (!zc->zone_path)
		diag_add(d, config_file_of(c, zc->pos), zc->pos.line, zc->pos.col,
		         "zone %s: %s is empty and no zone_path is configured to seed it", zc->zone,
		         zc->journal_path);
	else if (zone_file_readable(c, zc, zc->zone_path, d))
		zone_free(zone_load_static(c, zc, NULL, hook, d));
}

struct generation *generation_build(const char *path, struct loop *loop, bool check_only,
                                    struct diag *d)
{
	size_t before = d->n;
	struct generation *g = calloc(1, sizeof(*g));
	if (!g) {
		diag_add(d, NULL, 0, 0, "out of memory");
		return NULL;
	}
	g->loop = loop;
	g->check_only = check_only;
	/* check goes on past unreadable key and CA files to report the rest too */
	g->cfg = check_only ? config_load_all(path, d) : config_load(path, d);
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
		size_t bad;
		g->geo_db = geo_db_open(&c->geo, &bad, err);
		if (!g->geo_db && bad < c->geo.n_databases && c->geo.database_pos)
			diag_add(d, config_file_of(c, c->geo.database_pos[bad]), c->geo.database_pos[bad].line, c->geo.database_pos[bad].col,
			         "[geo] databases: %s", err);
		else if (!g->geo_db)
			diag_add(d, c->path, 0, 0, "%s", err);
	}
	g->signers = calloc(c->n_zones ? c->n_zones : 1, sizeof(*g->signers));
	g->rolls = calloc(c->n_zones ? c->n_zones : 1, sizeof(*g->rolls));
	g->resigns = calloc(c->n_zones ? c->n_zones : 1, sizeof(*g->resigns));
	g->zones = zone_table_new();
	if (!g->signers || !g->rolls || !g->resigns || !g->zones) {
		diag_add(d, NULL, 0, 0, "out of memory");
		goto fail;
	}
	/* Outgoing DNS's source addresses, tried now so that check reports one
	 * this host does not have (core/net/source.h). */
	struct net_source src;
	bool src_ok = net_source_init(&src, c, d) == 0;   /* failed: d says why, and we fail below */
	if (src_ok && !check_only && loop) {
		char what[160];
		net_source_describe(&src, what, sizeof(what));
		log_info("outgoing DNS (NOTIFY, SOA checks, transfers): %s", what);
	}
	if (!check_only) {
		g->acme = acme_new(g->zones, loop, err);
		g->xfr = g->acme ? xfr_new(g->zones, loop, err) : NULL;
		if (!g->acme || !g->xfr) {
			diag_add(d, c->path, 0, 0, "%s", err);
			goto fail;
		}
	}
	for (size_t i = 0; i < c->n_zones; i++) {
		const struct config_zone *zc = &c->zones[i];
		/* A key that cannot be used is one problem; the zone's other ones
		 * (its file above all) are still looked for, so one `check` names
		 * them all.  The generation fails either way (d has a problem). */
		bool key_failed = false;
		if (zc->key_policy.present) {
			/* The key store says which keys sign (doc/dnssec.md). */
			const struct config_pos *at = &zc->key_policy.pos;
			g->rolls[i] = rollover_new(zc, loop, src_ok ? &src : NULL, err);
			const char *first = g->rolls[i] ? rollover_first_key(g->rolls[i]) : NULL;
			if (!g->rolls[i]) {
				diag_add(d, c->path, at->line, at->col, "zone %s: %s", zc->zone, err);
				key_failed = true;
			}
			char notes[1024];
			if (!key_failed && check_only && rollover_check_notes(zc, notes, sizeof(notes)) > 0)
				fprintf(stderr, "%s:%d:%d: note: %s\n", c->path, at->line, at->col, notes);
			if (!key_failed && first) {
				g->signers[i] = signer_acquire(c, zc, first, loop, err);
				signer_building(g->signers[i], true);
				if (g->signers[i] &&
				    rollover_attach(g->rolls[i], g->signers[i], keys_changed, g, err) < 0) {
					diag_add(d, c->path, at->line, at->col, "zone %s: %s", zc->zone, err);
					key_failed = true;
				} else if (!g->signers[i]) {
					diag_add(d, c->path, at->line, at->col, "%s", err);
					key_failed = true;
				}
			}
		} else if (zc->n_keys > 0) {
			g->signers[i] = signer_acquire(c, zc, zc->keys[0].key_path, loop, err);
			signer_building(g->signers[i], true);
			if (!g->signers[i]) {
				diag_add(d, config_file_of(c, zc->keys[0].pos), zc->keys[0].pos.line, zc->keys[0].pos.col, "%s", err);
				key_failed = true;
			}
			/* A second [[zones.keys]] entry is a standby key: published, not signing. */
			struct signer_key_spec v[SIGNER_KEYS_MAX];
			size_t n = 0;
			for (size_t k = 0; k < zc->n_keys && n < SIGNER_KEYS_MAX; k++)
				v[n++] = (struct signer_key_spec){
					zc->keys[k].key_path,
					k == 0 ? SIGNER_PUBLISH | SIGNER_SIGN | SIGNER_CDS : SIGNER_PUBLISH };
			if (!key_failed && n > 1 && signer_set_keys(g->signers[i], v, n, err) < 0) {
				diag_add(d, c->path, zc->keys[1].pos.line, zc->keys[1].pos.col, "%s", err);
				key_failed = true;
			}
		}
		const struct zone_signer *hook =
			g->signers[i] && !key_failed ? signer_hook(g->signers[i]) : NULL;
		if (g->xfr && xfr_add_zone(g->xfr, zc, err) < 0)
			diag_add(d, config_file_of(c, zc->pos), zc->pos.line, zc->pos.col, "zone %s: %s", zc->zone, err);
		if (zc->secondary) {
			/* Check mode reads the stored copy as serve would, and writes
			 * nothing; serve loads it in generation_attach(). */
			if (check_only)
				check_journal(c, zc, hook, d);
			continue;
		}
		if (is_sqlite(zc)) {
			if (zc->n_geo)
				diag_add(d, config_file_of(c, zc->pos), zc->pos.line, zc->pos.col,
				         "zone %s: geo names are served from file-backed zones only", zc->zone);
			/* A database that is not there yet is made only with a seed to read:
			 * a failed start leaves no empty database behind. */
			bool fresh = access(zc->journal_path, F_OK) != 0 && errno == ENOENT;
			if (check_only)
				check_journal(c, zc, hook, d);
			else if (fresh && zc->zone_path && !zone_file_readable(c, zc, zc->zone_path, d))
				continue;
			/* After a key problem the generation fails: its database is not touched. */
			else if (!key_failed && acme_load_zone(g->acme, c, zc, hook, err) < 0) {
				diag_add(d, config_file_of(c, zc->pos), zc->pos.line, zc->pos.col, "zone %s: %s", zc->zone, err);
				if (fresh)
					remove_fresh_db(zc->journal_path);
			}
			continue;
		}
		if (zc->n_geo && (!g->sites || (!g->geo_db && !c->geo.has_default_location)))
			diag_add(d, config_file_of(c, zc->pos), zc->pos.line, zc->pos.col,
			         "zone %s has geo names: configure [[sites]] and [geo] databases or a "
			         "default_location", zc->zone);
		if (zc->file && !zone_file_readable(c, zc, zc->file, d))
			continue;
		struct zone *z = zone_load_static(c, zc, g->sites, hook, d);
		if (!z)
			continue;
		int rc = zone_table_add(g->zones, z);
		if (rc < 0) {
			diag_add(d, config_file_of(c, zc->pos), zc->pos.line, zc->pos.col, "zone %s is configured twice", zc->zone);
			zone_free(z);
		}
	}
	/* Built: patches of the running generation may drop signatures again. */
	for (size_t i = 0; i < c->n_zones; i++)
		signer_building(g->signers[i], false);
	if (d->n > before)
		goto fail;
	return g;

fail:
	generation_free(g);
	return NULL;
}

int generation_attach(struct generation *g, const struct generation *prev, struct diag *d)
{
	size_t before = d->n;
	struct loop *loop = g->loop;
	const struct config *c = g->cfg;
	char err[256] = "";
	if (!g->check_only && loop) {
		/* Read again here: the build checked it (and logged it) on its thread. */
		struct net_source src;
		if (net_source_init(&src, c, d) < 0)
			return -EINVAL;
		g->notify = notify_new(loop, &src, err);
		g->secondary = g->notify ? secondary_new(g->zones, loop, &src, err) : NULL;
		if (!g->notify || !g->secondary) {
			diag_add(d, c->path, 0, 0, "%s", err);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < c->n_zones; i++) {
		const struct config_zone *zc = &c->zones[i];
		if (g->notify && notify_add_zone(g->notify, zc, err) < 0)
			diag_add(d, c->path, zc->pos.line, zc->pos.col, "zone %s: %s", zc->zone, err);
		if (zc->secondary && g->secondary &&
		    secondary_add_zone(g->secondary, zc, prev ? prev->secondary : NULL, err) < 0)
			diag_add(d, c->path, zc->pos.line, zc->pos.col, "zone %s: %s", zc->zone, err);
	}
	if (d->n > before)
		return -EINVAL;
	/* The changes committed while this generation was built, then the loop's part;
	 * one that must be built whole: this generation is built again (-EAGAIN). */
	int ret = g->acme ? acme_attach(g->acme, prev ? prev->acme : NULL, err) : 0;
	if (ret == -EAGAIN)
		return ret;
	if (ret < 0) {
		diag_add(d, c->path, 0, 0, "%s", err);
		return -EINVAL;
	}
	for (size_t i = 0; g->xfr && i < c->n_zones; i++) {
		/* The IXFR history outlives restarts (storage/journal.h); read after
		 * acme_attach, which may have started the journal over. */
		const struct config_zone *zc = &c->zones[i];
		uint8_t apex[DNAME_MAX];
		if (zc->secondary || !is_sqlite(zc) || dname_from_str(zc->zone, apex) < 0)
			continue;
		dname_lower(apex);
		int rc = acme_journal_foreach(g->acme, apex, journal_to_xfr, g->xfr);
		if (rc < 0 && rc != -ENOENT) {
			/* A history with a gap would answer IXFR wrongly: none at all. */
			log_warn("zone %s: cannot read the IXFR journal (%s); secondaries "
			         "get AXFR until the next change", zc->zone, strerror(-rc));
			xfr_history_clear(g->xfr, apex);
		}
	}
	if (loop && g->sites) {
		/* A reload keeps what the health checks already know, by site name. */
		if (prev && prev->sites)
			geo_sites_copy_alive(g->sites, prev->sites);
		g->health = health_new(loop, g->sites, c, err);
		if (!g->health) {
			diag_add(d, c->path, 0, 0, "%s", err);
			return -EINVAL;
		}
		g->failing_open = calloc(GENERATION_GEO_MAX, sizeof(*g->failing_open));
		if (!g->failing_open) {
			diag_add(d, NULL, 0, 0, "out of memory");
			return -EINVAL;
		}
		health_on_change(g->health, on_health_change, g);
		/* After a reload that adds checked sites, they settle a moment
		 * later (serve waits for the first round itself at start). */
		if (health_first_round_done(g->health))
			generation_health_settled(g);
		else
			health_on_first_round(g->health, first_round_settled, g);
	}
	if (loop && g->geo_db && geo_db_watch(g->geo_db, loop, GEO_DB_WATCH_MS) < 0) {
		diag_add(d, NULL, 0, 0, "geo: cannot watch the databases");
		return -EINVAL;
	}
	g->env.zones = g->zones;
	g->env.loop = loop;
	g->env.sites = g->sites;
	g->env.geo_db = g->geo_db;
	g->env.outside_metrics = metrics_zone(NULL);
	if (loop && c->query_log_sample) {
		g->query_log = query_log_new(loop, c->query_log_sample, c->query_log_rate, g->sites);
		if (!g->query_log) {
			diag_add(d, NULL, 0, 0, "out of memory");
			return -EINVAL;
		}
		g->env.query_log = g->query_log;
	}
	if (loop && c->dnstap_socket) {
		/* A generation's own stream: a reload reconnects (the collector
		 * sees a new connection; frames still queued on the old one are
		 * written, or counted as dropped, when it is freed). */
		const struct dnstap_config dc = {
			.path = c->dnstap_socket, .sample = c->dnstap_sample,
			.queries = c->dnstap_queries, .responses = c->dnstap_responses,
			.updates = c->dnstap_updates, .identity = c->nsid,
			.version = "geoacme " GEOACME_VERSION,
		};
		char why[256];
		g->dnstap = dnstap_new(loop, &dc, why);
		if (!g->dnstap) {
			diag_add(d, NULL, 0, 0, "%s", why);
			return -EINVAL;
		}
		g->env.dnstap = g->dnstap;
	}
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
			return -EINVAL;
		}
		g->env.rrl = g->rrl;
	}
	if (c->nsid) {
		g->env.nsid = (const uint8_t *)c->nsid;
		g->env.nsid_len = (uint8_t)strlen(c->nsid);
	}
	if (c->cookies) {
		if (prev && prev->env.cookies)
			g->cookie = prev->cookie;
		else if (cookie_secret_random(&g->cookie) < 0) {
			diag_add(d, NULL, 0, 0, "cannot read random bytes for the cookie secret");
			return -EINVAL;
		}
		g->env.cookies = &g->cookie;
	}
	if (g->acme) {
		if (prev)
			acme_keep_replay(g->acme, prev->acme);
		g->env.update = acme_update_handler(g->acme, &g->env);
	}
	if (g->xfr) {
		if (prev)
			xfr_keep_replay(g->xfr, prev->xfr);
		g->env.xfr = xfr_handler(g->xfr);
	}
	if (secondary_count(g->secondary))
		g->env.notify = secondary_notify_handler(g->secondary);
	if (g->notify) {
		/* Secondaries hear of every zone at start, then of every new serial. */
		for (size_t i = 0; i < zone_table_count(g->zones); i++)
			notify_zone_changed(g->notify, zone_table_at(g->zones, i));
	}
	if (g->xfr) {
		zone_table_watch(g->zones, zone_changed, g);
		zone_table_watch_patches(g->zones, zone_patched);
	}
	if (g->acme && g->notify)
		acme_on_durable(g->acme, zone_durable, g);
	if (g->acme)
		acme_on_rekeyed(g->acme, zone_rekeyed, g);
	/* Last, when nothing else can fail: a configuration that is refused
	 * leaves the databases as they were.  The edits were read and checked
	 * with the zones (acme_add_zone); applying them changes the database,
	 * this generation's table and NOTIFY, so it belongs where the swap
	 * runs (the loop), after whatever a build off the loop does. */
	ret = g->acme ? acme_apply_file_edits(g->acme, prev != NULL, err) : 0;
	if (ret < 0) {
		diag_add(d, c->path, 0, 0, "%s", err);
		return ret == -EBUSY ? -EBUSY : -EINVAL;   /* -EBUSY: locked (cmd/serve.c waits) */
	}
	for (size_t i = 0; g->rolls && i < c->n_zones; i++)
		if (g->rolls[i])
			rollover_schedule_first(g->rolls[i]);
	warn_expire(g);
	schedule_resign(g);
	return 0;
}

struct generation *generation_new(const char *path, struct loop *loop,
                                  const struct generation *prev, bool check_only,
                                  struct diag *d)
{
	struct generation *g = generation_build(path, loop, check_only, d);
	if (g && generation_attach(g, prev, d) < 0) {
		generation_free(g);
		return NULL;
	}
	return g;
}

void generation_health_settled(struct generation *g)
{
	if (!g->health || g->health_settled)
		return;
	g->health_settled = true;
	on_health_change(g, 0, GEO_IPV4, true);
	log_sites(g);
}

void generation_detach(struct generation *g)
{
	if (!g || g->detached)
		return;
	g->detached = true;
	if (g->loop && g->resign_timer > 0)
		loop_timer_cancel(g->loop, g->resign_timer);
	g->resign_timer = 0;
	query_log_free(g->query_log);
	g->query_log = NULL;
	dnstap_free(g->dnstap);
	g->dnstap = NULL;
	health_free(g->health);
	g->health = NULL;
	acme_detach(g->acme);
	secondary_free(g->secondary);
	g->secondary = NULL;
	if (g->zones) {
		zone_table_watch(g->zones, NULL, NULL);
		zone_table_watch_patches(g->zones, NULL);
	}
	notify_free(g->notify);
	g->notify = NULL;
	if (g->cfg && g->rolls)
		for (size_t i = 0; i < g->cfg->n_zones; i++) {
			rollover_free(g->rolls[i]);
			g->rolls[i] = NULL;
		}
	/* A re-signing under way ends beside the loop (generation_free). */
	for (size_t i = 0; g->cfg && g->resigns && i < g->cfg->n_zones; i++)
		resign_job_detach(g->resigns[i].job);
	geo_db_unwatch(g->geo_db);
}

void generation_free(struct generation *g)
{
	if (!g)
		return;
	/* On the loop, unless a generation_detach() there came first. */
	generation_detach(g);
	/* First: a re-signing thread reads the config, sites and signers. */
	for (size_t i = 0; g->cfg && g->resigns && i < g->cfg->n_zones; i++)
		resign_job_free(g->resigns[i].job);
	free(g->resigns);
	free(g->failing_open);
	rrl_free(g->rrl);
	/* The records' mirrors and the databases' connections (acme_zone.h). */
	acme_free(g->acme);
	xfr_free(g->xfr);
	/* A zone a transfer still sends stays until it is sent (zone.h). */
	zone_table_free(g->zones);
	free(g->rolls);
	if (g->cfg && g->signers)
		for (size_t i = 0; i < g->cfg->n_zones; i++)
			signer_release(g->signers[i]);
	free(g->signers);
	geo_db_free(g->geo_db);
	geo_sites_free(g->sites);
	config_free(g->cfg);
	free(g);
}
