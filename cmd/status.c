/* SPDX-License-Identifier: MIT */
/*
 * /metrics, /status.json and the status page.  Runs on the event loop
 * between queries; it may allocate (open_memstream) but changes nothing.
 */
#include "cmd/status.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cmd/runtime.h"
#include "cmd/status_map.h"
#include "core/conf/config.h"
#include "core/conf/metrics.h"
#include "core/geo/geo_db.h"
#include "core/geo/geo_rule.h"
#include "core/geo/geo_sites.h"
#include "core/geo/health.h"
#include "core/wire/dname.h"
#include "core/zone/geo_sets.h"
#include "core/zone/zone.h"
#include "core/zone/zone_load.h"
#include "core/zone/zone_table.h"
#include "dnssec/rollover.h"
#include "xfr/notify.h"
#include "xfr/secondary.h"

#include <geoacme_version.h>   /* generated in the build folder: the same as `geoacme version` */

void status_html_escape(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default: fputc(*s, out);
		}
	}
}

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

/* Resident memory from /proc/self/statm (pages). */
static uint64_t rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%lu %lu", &size, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static double cpu_seconds(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* The earliest RRSIG expiration of a served zone (unix seconds), or 0. */
static uint64_t signature_expiry(const struct generation *g, const struct zone *z)
{
	return generation_signature_expiry(g, z);
}

static uint64_t site_answers(const struct generation_geo *refs, size_t n_refs, const char *site)
{
	uint64_t total = 0;
	for (size_t i = 0; i < n_refs; i++) {
		const uint64_t *c = metrics_geo_site(refs[i].fqdn, site);
		total += c[0];
	}
	return total;
}

static void family_line(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * One sample per site, address family and state, 1 for the state it is in
 * (a Prometheus state set): "up" and "down" for a family whose health is
 * checked, "unchecked" for one that is never probed (served as alive).
 */
static void write_health_states(const struct generation *g, FILE *out)
{
	static const char *const states[3] = { "up", "down", "unchecked" };
	static const char *const families[GEO_FAMILIES] = { "ipv4", "ipv6" };
	char a[1024];
	uint8_t addr[16];

	family_line(out, "geoacme_site_health_state", "gauge",
	            "1 for the state each address family of a site is in: up or down by its "
	            "health checks, or unchecked (no checks; answered as alive); 0 for the others.");
	for (size_t i = 0; i < geo_sites_count(g->sites); i++) {
		metrics_label_escape(geo_site_name(g->sites, i), a, sizeof(a));
		bool checked = health_last_result(g->health, i) != NULL;
		for (int f = 0; f < GEO_FAMILIES; f++) {
			if (!geo_site_address(g->sites, i, f == GEO_IPV4 ? 4 : 6, addr))
				continue;
			int state = !checked ? 2 : geo_site_alive(g->sites, i, (enum geo_family)f) ? 0 : 1;
			for (int k = 0; k < 3; k++)
				fprintf(out, "geoacme_site_health_state{site=\"%s\",family=\"%s\","
				        "state=\"%s\"} %d\n", a, families[f], states[k], k == state);
		}
	}
}

/* The operator's admin state of each site (geoacme ctl site-drain ...), a state set. */
static void write_admin_states(const struct generation *g, FILE *out)
{
	static const enum geo_admin states[] = { GEO_ADMIN_AUTO, GEO_ADMIN_DRAINED,
	                                         GEO_ADMIN_UNDRAINED };
	char a[1024];
	family_line(out, "geoacme_site_admin_state", "gauge",
	            "1 for the admin state each site is in, 0 for the others: auto (its health "
	            "checks decide), drained (out of every geo answer) or undrained (in every "
	            "answer whatever its health), set with geoacme ctl.");
	for (size_t i = 0; i < geo_sites_count(g->sites); i++) {
		metrics_label_escape(geo_site_name(g->sites, i), a, sizeof(a));
		for (size_t k = 0; k < 3; k++)
			fprintf(out, "geoacme_site_admin_state{site=\"%s\",state=\"%s\"} %d\n", a,
			        geo_admin_name(states[k]), geo_site_admin(g->sites, i) == states[k]);
	}
}

/*
 * Config zone i as a copy (a secondary zone the server has state for): its
 * name as text and its timers.  False for a primary zone or no state.
 */
static bool copy_at(const struct generation *g, size_t i, char name[256],
                    struct secondary_state *st)
{
	uint8_t apex[DNAME_BUF] = {0};
	if (!g->secondary || !g->cfg->zones[i].secondary ||
	    dname_from_str(g->cfg->zones[i].zone, apex) < 0 ||
	    !secondary_zone_state(g->secondary, apex, st))
		return false;
	dname_to_str(apex, name, 256);
	return true;
}

/* Config zone i's NOTIFY targets, at most cap, when it is a primary zone; 0 otherwise. */
static size_t notify_targets_at(const struct generation *g, size_t i, char name[256],
                                struct notify_target_state *t, size_t cap)
{
	uint8_t apex[DNAME_BUF] = {0};
	if (!g->notify || g->cfg->zones[i].secondary ||
	    dname_from_str(g->cfg->zones[i].zone, apex) < 0)
		return 0;
	dname_to_str(apex, name, 256);
	size_t n = notify_targets(g->notify, apex, t, cap);
	return n < cap ? n : cap;
}

/* Copied zones' refresh and expiry; NOTIFY targets' answers (issue #21.4). */
static void write_secondaries(const struct generation *g, FILE *out)
{
	char a[1024], b[256];
	const struct config *c = g->cfg;
	struct secondary_state st;
	family_line(out, "geoacme_secondary_last_refresh_timestamp_seconds", "gauge",
	            "When a copied zone was last confirmed current with its primary (a check or "
	            "a transfer), as a Unix time; 0 before the first.");
	for (size_t i = 0; i < c->n_zones; i++) {
		if (!copy_at(g, i, b, &st))
			continue;
		metrics_label_escape(b, a, sizeof(a));
		fprintf(out, "geoacme_secondary_last_refresh_timestamp_seconds{zone=\"%s\"} %lld\n", a,
		        (long long)st.refreshed_at);
	}
	family_line(out, "geoacme_secondary_expire_timestamp_seconds", "gauge",
	            "When a copied zone stops being served unless a primary confirms it first: "
	            "the last refresh plus the SOA expire, as a Unix time; 0 without a copy.");
	for (size_t i = 0; i < c->n_zones; i++) {
		if (!copy_at(g, i, b, &st))
			continue;
		metrics_label_escape(b, a, sizeof(a));
		fprintf(out, "geoacme_secondary_expire_timestamp_seconds{zone=\"%s\"} %lld\n", a,
		        (long long)(st.refreshed_at ? st.refreshed_at + st.expire : 0));
	}
	struct notify_target_state t[64];
	char tl[256];
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0)
			family_line(out, "geoacme_notify_target_acknowledged_serial", "gauge",
			            "The serial of the last NOTIFY each secondary (target) answered; no "
			            "sample before its first answer.");
		else
			family_line(out, "geoacme_notify_target_unanswered_since_timestamp_seconds",
			            "gauge", "Since when a secondary (target) has left a NOTIFY "
			            "unanswered (the first send of those it did not answer in time), as a "
			            "Unix time; 0 when it has answered the latest, or is not late yet.");
		for (size_t i = 0; i < c->n_zones; i++) {
			size_t n = notify_targets_at(g, i, b, t, 64);
			metrics_label_escape(b, a, sizeof(a));
			for (size_t k = 0; k < n; k++) {
				metrics_label_escape(t[k].target, tl, sizeof(tl));
				if (pass == 0 && t[k].acked)
					fprintf(out, "geoacme_notify_target_acknowledged_serial{zone=\"%s\","
					        "target=\"%s\"} %u\n", a, tl, t[k].acked_serial);
				if (pass == 1)
					fprintf(out, "geoacme_notify_target_unanswered_since_timestamp_seconds{"
					        "zone=\"%s\",target=\"%s\"} %lld\n", a, tl,
					        (long long)t[k].unanswered_since);
			}
		}
	}
}

/* One metric family's samples for every zone with a key policy. */
static void rollover_family(const struct generation *g, enum rollover_metric which, FILE *out)
{
	for (size_t i = 0; i < g->cfg->n_zones; i++) {
		char buf[8192];
		if (g->rolls[i] && rollover_metrics(g->rolls[i], which, buf, sizeof(buf)))
			fputs(buf, out);
	}
}

static void write_metrics(const struct status_ctx *st, FILE *out)
{
	const struct generation *g = st->gen;
	char a[1024], b[1024];

	metrics_write_counters(out);
	family_line(out, "geoacme_build_info", "gauge",
	            "Always 1; the labels are the version and git commit of this binary, as "
	            "`geoacme version` prints them.");
	fprintf(out, "geoacme_build_info{version=\"%s\",commit=\"%s\"} 1\n", GEOACME_VERSION,
	        GEOACME_COMMIT);
	if (g->sites) {
		/* Only health-checked sites: an unchecked site is assumed alive,
		 * and a 1 for it would read as "checked and up". */
		family_line(out, "geoacme_site_up", "gauge",
		            "1 when every family of a health-checked site passes its checks, else 0 "
		            "(sites without checks have no sample: see geoacme_site_health_state).");
		for (size_t i = 0; i < geo_sites_count(g->sites); i++) {
			if (!health_last_result(g->health, i))
				continue;
			metrics_label_escape(geo_site_name(g->sites, i), a, sizeof(a));
			fprintf(out, "geoacme_site_up{site=\"%s\"} %d\n", a,
			        geo_site_up(g->sites, i) ? 1 : 0);
		}
		write_health_states(g, out);
		write_admin_states(g, out);
		family_line(out, "geoacme_site_probes_total", "counter",
		            "Health probes completed for the site (since it was configured).");
		for (size_t i = 0; i < geo_sites_count(g->sites); i++) {
			if (!health_last_result(g->health, i))
				continue;
			metrics_label_escape(geo_site_name(g->sites, i), a, sizeof(a));
			fprintf(out, "geoacme_site_probes_total{site=\"%s\"} %lu\n", a,
			        health_checks_done(g->health, i));
		}
	}
	family_line(out, "geoacme_zone_serial", "gauge", "SOA serial of the snapshot of the zone being served now.");
	for (size_t i = 0; i < zone_table_count(g->zones); i++) {
		const struct zone *z = zone_table_at(g->zones, i);
		metrics_label_escape(zone_name(z), a, sizeof(a));
		fprintf(out, "geoacme_zone_serial{zone=\"%s\"} %u\n", a, zone_serial(z));
	}
	family_line(out, "geoacme_zone_signature_expiry_timestamp_seconds", "gauge",
	            "Earliest RRSIG expiration in the zone, as a Unix time.");
	for (size_t i = 0; i < zone_table_count(g->zones); i++) {
		const struct zone *z = zone_table_at(g->zones, i);
		if (!signature_expiry(g, z))
			continue;
		metrics_label_escape(zone_name(z), a, sizeof(a));
		fprintf(out, "geoacme_zone_signature_expiry_timestamp_seconds{zone=\"%s\"} %llu\n", a,
		        (unsigned long long)signature_expiry(g, z));
	}
	bool any_policy = false;
	for (size_t i = 0; i < g->cfg->n_zones; i++)
		any_policy = any_policy || (g->rolls && g->rolls[i]);
	if (any_policy) {
		/* Each family's samples right after its HELP and TYPE. */
		family_line(out, "geoacme_dnssec_key_state", "gauge",
		            "1 for the state each key of a zone with a key policy is in (standby, "
		            "incoming, active, outgoing, removed, retired; doc/dnssec.md), 0 for the others.");
		rollover_family(g, ROLLOVER_METRIC_KEY_STATE, out);
		family_line(out, "geoacme_dnssec_key_next_transition_seconds", "gauge",
		            "When the zone's key rollover takes its next step, as a Unix time (0: none planned).");
		rollover_family(g, ROLLOVER_METRIC_NEXT_TRANSITION, out);
	}
	write_secondaries(g, out);
	family_line(out, "geoacme_zone_build_seconds", "gauge",
	            "How long the zone's current snapshot took to build and sign.");
	for (size_t i = 0; i < zone_table_count(g->zones); i++) {
		const struct zone *z = zone_table_at(g->zones, i);
		metrics_label_escape(zone_name(z), a, sizeof(a));
		fprintf(out, "geoacme_zone_build_seconds{zone=\"%s\"} %.6f\n", a, zone_build_seconds(z));
	}
	if (g->geo_db) {
		family_line(out, "geoacme_geo_database_build_timestamp_seconds", "gauge",
		            "Build time of each location database, from its metadata.");
		for (size_t i = 0; i < geo_db_count(g->geo_db); i++) {
			metrics_label_escape(geo_db_path(g->geo_db, i), a, sizeof(a));
			metrics_label_escape(geo_db_type(g->geo_db, i), b, sizeof(b));
			fprintf(out, "geoacme_geo_database_build_timestamp_seconds{path=\"%s\",type=\"%s\"} "
			        "%llu\n", a, b, (unsigned long long)geo_db_build_epoch(g->geo_db, i));
		}
	}
	family_line(out, "process_cpu_seconds_total", "counter", "User and system CPU time the process has used, in seconds.");
	fprintf(out, "process_cpu_seconds_total %.3f\n", cpu_seconds());
	family_line(out, "process_resident_memory_bytes", "gauge", "Resident memory of the process (its resident set size), in bytes.");
	fprintf(out, "process_resident_memory_bytes %llu\n", (unsigned long long)rss_bytes());
	family_line(out, "process_start_time_seconds", "gauge", "When the process started, as a Unix time in seconds.");
	fprintf(out, "process_start_time_seconds %lld\n", (long long)st->started);
}

/*
 * "copies": each secondary zone configured, served or not, with its timers
 * (unix seconds, 0: never / none); "notify_targets": each NOTIFY target of
 * a primary zone with its state, "answered" (at acknowledged_serial),
 * "pending" (a NOTIFY is out and its first wait for an answer has not
 * ended), "unanswered" (since unanswered_since; acknowledged_serial is the
 * last answer before, or null) or "not sent".  Issue #21.4.
 */
static void write_json_transfers(const struct generation *g, FILE *out)
{
	const struct config *c = g->cfg;
	char name[256];
	struct secondary_state st;
	bool first = true;
	fputs("],\"copies\":[", out);
	for (size_t i = 0; i < c->n_zones; i++) {
		if (!copy_at(g, i, name, &st))
			continue;
		fputs(first ? "{\"zone\":" : ",{\"zone\":", out);
		first = false;
		json_string(out, name);
		fprintf(out, ",\"role\":\"secondary\",\"have_copy\":%s,\"serving\":%s,\"serial\":",
		        st.have_copy ? "true" : "false", st.serving ? "true" : "false");
		if (st.have_copy)
			fprintf(out, "%u", st.serial);
		else
			fputs("null", out);
		fprintf(out, ",\"last_refresh\":%lld,\"next_refresh\":%lld,\"checking\":%s,"
		        "\"expires_at\":%lld,\"signature_expiry\":%lld,\"soa_refresh\":%u,"
		        "\"soa_retry\":%u,\"soa_expire\":%u}", (long long)st.refreshed_at,
		        (long long)st.next_check_at, st.checking ? "true" : "false",
		        (long long)(st.refreshed_at ? st.refreshed_at + st.expire : 0),
		        (long long)st.signature_expiry, st.refresh, st.retry, st.expire);
	}
	fputs("],\"notify_targets\":[", out);
	first = true;
	struct notify_target_state t[64];
	for (size_t i = 0; i < c->n_zones; i++) {
		size_t n = notify_targets_at(g, i, name, t, 64);
		for (size_t k = 0; k < n; k++) {
			fputs(first ? "{\"zone\":" : ",{\"zone\":", out);
			first = false;
			json_string(out, name);
			fputs(",\"target\":", out);
			json_string(out, t[k].target);
			fprintf(out, ",\"state\":\"%s\",\"acknowledged_serial\":",
			        t[k].unanswered_since ? "unanswered" : t[k].pending ? "pending"
			        : t[k].acked ? "answered" : "not sent");
			if (t[k].acked)
				fprintf(out, "%u", t[k].acked_serial);
			else
				fputs("null", out);
			fprintf(out, ",\"unanswered_since\":%lld}", (long long)t[k].unanswered_since);
		}
	}
}

static void write_json(const struct status_ctx *st, FILE *out)
{
	const struct generation *g = st->gen;
	struct generation_geo refs[GENERATION_GEO_MAX];
	size_t n_refs = generation_geo_names(g, refs, GENERATION_GEO_MAX);

	fprintf(out, "{\"version\":\"%s\",\"started\":%lld,\"sites\":[", GEOACME_VERSION,
	        (long long)st->started);
	for (size_t i = 0; g->sites && i < geo_sites_count(g->sites); i++) {
		double lat, lon;
		const char *name = geo_site_name(g->sites, i);
		const char *last = health_last_result(g->health, i);
		geo_site_position(g->sites, i, &lat, &lon);
		fprintf(out, "%s{\"name\":", i ? "," : "");
		json_string(out, name);
		fprintf(out, ",\"latitude\":%.4f,\"longitude\":%.4f,\"up\":%s,\"checked\":%s,"
		        "\"last_probe\":", lat, lon, geo_site_up(g->sites, i) ? "true" : "false",
		        last ? "true" : "false");
		if (last)
			json_string(out, last);
		else
			fputs("null", out);
		fprintf(out, ",\"admin\":\"%s\",\"answers\":%llu,\"colour\":\"%s\"}",
		        geo_admin_name(geo_site_admin(g->sites, i)),
		        (unsigned long long)site_answers(refs, n_refs, name), status_site_colour(i));
	}
	fputs("],\"zones\":[", out);
	for (size_t i = 0; i < zone_table_count(g->zones); i++) {
		const struct zone *z = zone_table_at(g->zones, i);
		fprintf(out, "%s{\"zone\":", i ? "," : "");
		json_string(out, zone_name(z));
		struct secondary_state ss;
		bool copy = g->secondary && secondary_zone_state(g->secondary, zone_apex(z), &ss);
		fprintf(out, ",\"role\":\"%s\",\"serial\":%u,\"signed\":%s,\"signature_expiry\":%llu}",
		        copy ? "secondary" : "primary", zone_serial(z),
		        zone_is_signed(z) ? "true" : "false", (unsigned long long)signature_expiry(g, z));
	}
	write_json_transfers(g, out);
	fputs("],\"geo_names\":[", out);
	for (size_t i = 0; i < n_refs; i++) {
		fputs(i ? "," : "", out);
		json_string(out, refs[i].fqdn);
	}
	fputs("],\"databases\":[", out);
	for (size_t i = 0; g->geo_db && i < geo_db_count(g->geo_db); i++) {
		fprintf(out, "%s{\"path\":", i ? "," : "");
		json_string(out, geo_db_path(g->geo_db, i));
		fputs(",\"type\":", out);
		json_string(out, geo_db_type(g->geo_db, i));
		fprintf(out, ",\"build_epoch\":%llu}", (unsigned long long)geo_db_build_epoch(g->geo_db, i));
	}
	fputs("]}\n", out);
}

/* "name=www.example.com.&family=6" -> the values, or defaults. */
static void query_param(const char *query, const char *key, char *out, size_t cap)
{
	size_t klen = strlen(key);
	out[0] = '\0';
	for (const char *p = query; p && *p;) {
		const char *amp = strchr(p, '&');
		size_t len = amp ? (size_t)(amp - p) : strlen(p);
		if (len > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
			size_t v = len - klen - 1;
			if (v >= cap)
				v = cap - 1;
			memcpy(out, p + klen + 1, v);
			out[v] = '\0';
			return;
		}
		p = amp ? amp + 1 : NULL;
	}
}

static void fmt_time(uint64_t t, char *out, size_t cap)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (!t || !gmtime_r(&tt, &tm) || !strftime(out, cap, "%Y-%m-%d %H:%M UTC", &tm))
		snprintf(out, cap, "-");
}

/* Copies (secondary zones) with refresh and expiry; NOTIFY targets with their answers. */
static void write_page_transfers(const struct generation *g, FILE *out)
{
	const struct config *c = g->cfg;
	char name[256], when[64], when2[64];
	struct secondary_state st;
	bool head = false;
	for (size_t i = 0; i < c->n_zones; i++) {
		if (!copy_at(g, i, name, &st))
			continue;
		if (!head)
			fputs("<h2>Copies (secondary zones)</h2>\n<table id=\"copies\"><tr><th>zone</th>"
			      "<th>serial</th><th>last refresh</th><th>expires</th><th>next refresh</th>"
			      "<th>earliest signature expiry</th></tr>\n", out);
		head = true;
		fmt_time((uint64_t)st.refreshed_at, when, sizeof(when));
		fmt_time(st.refreshed_at ? (uint64_t)(st.refreshed_at + st.expire) : 0, when2,
		         sizeof(when2));
		fputs("<tr><td>", out);
		status_html_escape(out, name);
		fprintf(out, "</td><td>%u</td><td>%s</td><td>%s</td><td>", st.serial, when, when2);
		fmt_time((uint64_t)st.next_check_at, when, sizeof(when));
		fputs(st.checking ? "checking now" : when, out);
		fmt_time((uint64_t)(st.signature_expiry > 0 ? st.signature_expiry : 0), when,
		         sizeof(when));
		fprintf(out, "</td><td>%s</td></tr>\n", st.signature_expiry > 0 ? when : "unsigned");
	}
	if (head)
		fputs("</table>\n", out);
	head = false;
	struct notify_target_state t[64];
	for (size_t i = 0; i < c->n_zones; i++) {
		size_t n = notify_targets_at(g, i, name, t, 64);
		for (size_t k = 0; k < n; k++) {
			if (!head)
				fputs("<h2>NOTIFY targets</h2>\n<table id=\"notify\"><tr><th>zone</th>"
				      "<th>secondary</th><th>state</th></tr>\n", out);
			head = true;
			fputs("<tr><td>", out);
			status_html_escape(out, name);
			fputs("</td><td>", out);
			status_html_escape(out, t[k].target);
			if (t[k].unanswered_since) {
				fmt_time((uint64_t)t[k].unanswered_since, when, sizeof(when));
				fprintf(out, "</td><td class=\"down\">unanswered since %s</td></tr>\n", when);
			} else if (t[k].pending) {
				fprintf(out, "</td><td class=\"unchecked\">pending: serial %u sent</td></tr>\n",
				        t[k].pending_serial);
			} else if (t[k].acked) {
				fprintf(out, "</td><td class=\"up\">answered at serial %u</td></tr>\n",
				        t[k].acked_serial);
			} else {
				fputs("</td><td class=\"unchecked\">not sent yet</td></tr>\n", out);
			}
		}
	}
	if (head)
		fputs("</table>\n", out);
}

/* Zones under a key policy: each key's state and times, as `geoacme ctl key-status`
 * prints them (issue #25.8: key states on the page). */
static void write_page_keys(const struct generation *g, FILE *out)
{
	bool head = false;
	for (size_t i = 0; g->rolls && i < g->cfg->n_zones; i++) {
		if (!g->rolls[i])
			continue;
		if (!head)
			fputs("<h2>DNSSEC keys</h2>\n", out);
		head = true;
		char buf[8192];
		size_t n = rollover_status(g->rolls[i], buf, sizeof(buf));
		buf[n < sizeof(buf) ? n : sizeof(buf) - 1] = '\0';
		fputs("<pre class=\"keys\">", out);
		status_html_escape(out, buf);
		fputs("</pre>\n", out);
	}
}

static void write_page(const struct status_ctx *st, const char *query, FILE *out)
{
	const struct generation *g = st->gen;
	struct generation_geo refs[GENERATION_GEO_MAX];
	size_t n_refs = generation_geo_names(g, refs, GENERATION_GEO_MAX);
	char want[256], fam[8], when[64];
	query_param(query, "name", want, sizeof(want));
	query_param(query, "family", fam, sizeof(fam));
	enum geo_family f = strcmp(fam, "6") == 0 ? GEO_IPV6 : GEO_IPV4;
	const struct generation_geo *shown = n_refs ? &refs[0] : NULL;
	for (size_t i = 0; i < n_refs; i++)
		if (strcmp(refs[i].fqdn, want) == 0)
			shown = &refs[i];

	/* A meta refresh keeps the page current with no script, so the strict CSP stays. */
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	      "<meta http-equiv=\"refresh\" content=\"30\">"
	      "<meta name=\"viewport\" content=\"width=device-width\">"
	      "<title>geoacme status</title><style>"
	      "body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222}"
	      "table{border-collapse:collapse;margin:.5em 0 1.5em}"
	      "td,th{border-bottom:1px solid #ddd;padding:.25em .8em;text-align:left}"
	      ".up{color:#176117}.down{color:#b00020;font-weight:bold}"
	      ".unchecked{color:#666;font-style:italic}.off{color:#666}"
	      ".admin-drained{color:#8a4b00;font-weight:bold}.admin-undrained{color:#00578a;"
	      "font-weight:bold}"
	      ".swatch{display:inline-block;width:.9em;height:.9em;border:1px solid #000;"
	      "vertical-align:middle;margin-right:.3em}"
	      "#mapbox{max-width:1100px}svg{width:100%;height:auto;border:1px solid #999}"
	      "</style></head><body>\n<h1>geoacme</h1>\n", out);
	fprintf(out, "<p>Version %s. Every cell of the map is coloured by the site the rule "
	        "answers with there, with the current health: solid where the nearest site "
	        "answers alone, striped where a pair answers (nearest and runner-up).</p>\n",
	        GEOACME_VERSION);
	if (shown && g->sites) {
		fputs("<h2>Map: ", out);
		status_html_escape(out, shown->fqdn);
		fprintf(out, " %s</h2>\n<p>", f == GEO_IPV6 ? "AAAA" : "A");
		bool has[2] = { false, false };
		uint8_t addr[16];
		for (size_t i = 0; i < geo_sites_count(g->sites); i++)
			for (int k = 0; k < 2; k++)
				has[k] = has[k] || geo_site_address(g->sites, i, k ? 6 : 4, addr);
		for (size_t i = 0; i < n_refs; i++) {
			for (int k = 0; k < 2; k++) {
				if (!has[k])
					continue;   /* no site of that family: no map to show */
				fputs("<a href=\"/?name=", out);
				status_html_escape(out, refs[i].fqdn);
				fprintf(out, "&amp;family=%d\">", k ? 6 : 4);
				status_html_escape(out, refs[i].fqdn);
				fprintf(out, " %s</a> ", k ? "AAAA" : "A");
			}
		}
		fputs("</p>\n<div id=\"mapbox\">\n", out);
		status_map_svg(out, geo_sets_rule(shown->sets), g->sites, f);
		fputs("</div>\n<p id=\"legend\">Legend: a solid cell is answered by its nearest "
		      "site alone; a striped cell by a pair (nearest and runner-up, in their "
		      "colours); a white marker is a site that is down. The page reloads every "
		      "30 s.</p>\n", out);
	}
	if (g->sites) {
		fputs("<h2>Sites</h2>\n<table id=\"sites\"><tr><th>site</th><th>health</th>"
		      "<th>admin</th><th>last probe</th><th>answers (nearest)</th><th>position</th>"
		      "</tr>\n", out);
		for (size_t i = 0; i < geo_sites_count(g->sites); i++) {
			const char *name = geo_site_name(g->sites, i);
			const char *last = health_last_result(g->health, i);
			bool up = geo_site_up(g->sites, i);
			const char *state = !geo_site_enabled(g->sites, i) ? "off" : !last ? "unchecked" :
			                    up ? "up" : "down";
			double lat, lon;
			geo_site_position(g->sites, i, &lat, &lon);
			fprintf(out, "<tr class=\"site-row\" data-site=\"");
			status_html_escape(out, name);
			fprintf(out, "\"><td><span class=\"swatch\" style=\"background:%s\"></span>",
			        status_site_colour(i));
			status_html_escape(out, name);
			enum geo_admin adm = geo_site_admin(g->sites, i);
			fprintf(out, "</td><td class=\"%s\">%s</td><td class=\"admin-%s\">%s</td><td>",
			        state, strcmp(state, "off") == 0 ? "disabled (enabled = false)" : state,
			        geo_admin_name(adm),
			        adm == GEO_ADMIN_DRAINED ? "drained: out of every answer"
			        : adm == GEO_ADMIN_UNDRAINED ? "undrained: in every answer" : "auto");
			status_html_escape(out, last ? last : "not checked");
			fprintf(out, "</td><td>%llu</td><td>%.2f, %.2f</td></tr>\n",
			        (unsigned long long)site_answers(refs, n_refs, name), lat, lon);
		}
		fputs("</table>\n", out);
	}
	fputs("<h2>Zones</h2>\n<table id=\"zones\"><tr><th>zone</th><th>serial</th>"
	      "<th>earliest signature expiry</th></tr>\n", out);
	for (size_t i = 0; i < zone_table_count(g->zones); i++) {
		const struct zone *z = zone_table_at(g->zones, i);
		fmt_time(signature_expiry(g, z), when, sizeof(when));
		fputs("<tr><td>", out);
		status_html_escape(out, zone_name(z));
		fprintf(out, "</td><td>%u</td><td>%s</td></tr>\n", zone_serial(z),
		        signature_expiry(g, z) ? when : zone_is_signed(z) ? "-" : "unsigned");
	}
	fputs("</table>\n", out);
	write_page_transfers(g, out);
	write_page_keys(g, out);
	if (g->geo_db) {
		fputs("<h2>Location databases</h2>\n<table><tr><th>file</th><th>type</th>"
		      "<th>built</th></tr>\n", out);
		for (size_t i = 0; i < geo_db_count(g->geo_db); i++) {
			fmt_time(geo_db_build_epoch(g->geo_db, i), when, sizeof(when));
			fputs("<tr><td>", out);
			status_html_escape(out, geo_db_path(g->geo_db, i));
			fputs("</td><td>", out);
			status_html_escape(out, geo_db_type(g->geo_db, i));
			fprintf(out, "</td><td>%s</td></tr>\n", when);
		}
		fputs("</table>\n", out);
	}
	fputs("<p>Also: <a href=\"/metrics\">/metrics</a> (Prometheus), "
	      "<a href=\"/status.json\">/status.json</a>. Land outline: Natural Earth 1:110m "
	      "(public domain) via world-atlas.</p>\n</body></html>\n", out);
}

int status_http(void *ctx, const char *path, const char *query, FILE *body,
                const char **content_type)
{
	const struct status_ctx *st = ctx;
	if (!st || !st->gen)
		return 500;
	if (strcmp(path, "/metrics") == 0) {
		*content_type = "text/plain; version=0.0.4; charset=utf-8";
		write_metrics(st, body);
		return 200;
	}
	if (strcmp(path, "/status.json") == 0) {
		*content_type = "application/json";
		write_json(st, body);
		return 200;
	}
	if (strcmp(path, "/") == 0) {
		*content_type = "text/html; charset=utf-8";
		write_page(st, query, body);
		return 200;
	}
	return 404;
}
