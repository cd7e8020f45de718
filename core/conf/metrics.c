/* SPDX-License-Identifier: MIT */
/*
 * The counter registry.  Series are few (zones, geo names × sites) and are
 * looked up only at start and on reload, so a linked list is enough.
 */
#include "core/conf/metrics.h"

#include <stdlib.h>
#include <string.h>

struct metrics_global metrics;

struct zone_series {
	struct zone_series *next;
	char *apex;                 /* NULL: queries outside every zone */
	struct metrics_zone block;
};

struct geo_series {
	struct geo_series *next;
	char *name, *site;
	uint64_t rank[2];
};

static struct zone_series *zones;
static struct geo_series *geos;
static uint64_t geo_scratch[2];

/* The fixed qtype label set, in metrics_qtype_index() order; the last is "other". */
static const char *const qtype_names[METRICS_QTYPES] = {
	"A", "NS", "CNAME", "SOA", "PTR", "MX", "TXT", "AAAA", "SRV", "NAPTR", "DS", "RRSIG",
	"NSEC", "DNSKEY", "SVCB", "HTTPS", "AXFR", "IXFR", "ANY", "other",
};

size_t metrics_qtype_index(uint16_t qtype)
{
	/* A switch, which the compiler makes a jump table: this runs per query. */
	switch (qtype) {
	case 1: return 0;
	case 2: return 1;
	case 5: return 2;
	case 6: return 3;
	case 12: return 4;
	case 15: return 5;
	case 16: return 6;
	case 28: return 7;
	case 33: return 8;
	case 35: return 9;
	case 43: return 10;
	case 46: return 11;
	case 47: return 12;
	case 48: return 13;
	case 64: return 14;
	case 65: return 15;
	case 252: return 16;
	case 251: return 17;
	case 255: return 18;
	default: return METRICS_QTYPES - 1;
	}
}

const char *metrics_qtype_name(size_t index)
{
	return qtype_names[index < METRICS_QTYPES ? index : METRICS_QTYPES - 1];
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

struct metrics_zone *metrics_zone(const char *apex)
{
	struct zone_series **tail = &zones;
	for (struct zone_series *z = zones; z; z = z->next) {
		if (same(z->apex, apex))
			return &z->block;
		tail = &z->next;
	}
	struct zone_series *z = calloc(1, sizeof(*z));
	if (!z)
		return NULL;
	if (apex && !(z->apex = strdup(apex))) {
		free(z);
		return NULL;
	}
	*tail = z;   /* appended: the exposition keeps the configuration's order */
	return &z->block;
}

uint64_t *metrics_geo_site(const char *geo_name, const char *site)
{
	struct geo_series **tail = &geos;
	for (struct geo_series *g = geos; g; g = g->next) {
		if (strcmp(g->name, geo_name) == 0 && strcmp(g->site, site) == 0)
			return g->rank;
		tail = &g->next;
	}
	struct geo_series *g = calloc(1, sizeof(*g));
	if (!g || !(g->name = strdup(geo_name)) || !(g->site = strdup(site))) {
		if (g)
			free(g->name);
		free(g);
		return geo_scratch;
	}
	*tail = g;
	return g->rank;
}

void metrics_free(void)
{
	while (zones) {
		struct zone_series *n = zones->next;
		free(zones->apex);
		free(zones);
		zones = n;
	}
	while (geos) {
		struct geo_series *n = geos->next;
		free(geos->name);
		free(geos->site);
		free(geos);
		geos = n;
	}
}

void metrics_label_escape(const char *in, char *out, size_t cap)
{
	size_t o = 0;
	for (; *in && o + 3 < cap; in++) {
		if (*in == '\\' || *in == '"') {
			out[o++] = '\\';
			out[o++] = *in;
		} else if (*in == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else {
			out[o++] = *in;
		}
	}
	out[o] = '\0';
}

static void family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static const char *const update_results[METRICS_UPDATE_RESULTS] = {
	"accepted", "badkey", "badsig", "badtime", "policy", "prereq", "formerr", "other",
};

static const char *const rcode_names[METRICS_RCODES] = {
	"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN",
	"YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE", "DSOTYPENI", "RCODE12", "RCODE13",
	"RCODE14", "RCODE15", "BADVERS", "BADKEY", "BADTIME", "BADMODE", "BADNAME", "BADALG",
	"BADTRUNC", "BADCOOKIE",
};

static void write_queries(FILE *out)
{
	static const char *const transports[2] = { "udp", "tcp" };
	static const char *const families[2] = { "ipv4", "ipv6" };
	char zone[1024];

	family(out, "geoacme_queries_total", "counter",
	       "Queries answered, by zone (\"\" when no zone matched), type, transport and family.");
	for (struct zone_series *z = zones; z; z = z->next) {
		metrics_label_escape(z->apex ? z->apex : "", zone, sizeof(zone));
		for (size_t t = 0; t < METRICS_QTYPES; t++)
			for (int p = 0; p < 2; p++)
				for (int f = 0; f < 2; f++)
					if (z->block.queries[t][p][f])
						fprintf(out, "geoacme_queries_total{zone=\"%s\",qtype=\"%s\","
						        "transport=\"%s\",family=\"%s\"} %llu\n", zone,
						        metrics_qtype_name(t), transports[p], families[f],
						        (unsigned long long)z->block.queries[t][p][f]);
	}
}

void metrics_write_counters(FILE *out)
{
	write_queries(out);
	family(out, "geoacme_responses_total", "counter", "Responses sent, by rcode.");
	for (int r = 0; r < METRICS_RCODES; r++)
		fprintf(out, "geoacme_responses_total{rcode=\"%s\"} %llu\n", rcode_names[r],
		        (unsigned long long)metrics.responses[r]);
	family(out, "geoacme_dropped_total", "counter",
	       "Messages dropped without an answer (shorter than a header, or responses).");
	fprintf(out, "geoacme_dropped_total %llu\n", (unsigned long long)metrics.dropped);
	family(out, "geoacme_truncated_total", "counter", "Responses sent with TC=1.");
	fprintf(out, "geoacme_truncated_total %llu\n", (unsigned long long)metrics.truncated);
	family(out, "geoacme_ecs_queries_total", "counter",
	       "Queries that carried an EDNS Client Subnet option.");
	fprintf(out, "geoacme_ecs_queries_total %llu\n", (unsigned long long)metrics.ecs_queries);
	family(out, "geoacme_rrl_dropped_total", "counter", "Responses dropped by rate limiting.");
	fprintf(out, "geoacme_rrl_dropped_total %llu\n", (unsigned long long)metrics.rrl_dropped);
	family(out, "geoacme_rrl_slipped_total", "counter",
	       "Rate-limited responses sent truncated instead (slip).");
	fprintf(out, "geoacme_rrl_slipped_total %llu\n", (unsigned long long)metrics.rrl_slipped);

	char name[1024], site[256];
	family(out, "geoacme_geo_decisions_total", "counter",
	       "Geo answers by geo name, site and rank (1 nearest, 2 runner-up in a pair).");
	for (struct geo_series *g = geos; g; g = g->next) {
		metrics_label_escape(g->name, name, sizeof(name));
		metrics_label_escape(g->site, site, sizeof(site));
		for (int r = 0; r < 2; r++)
			fprintf(out, "geoacme_geo_decisions_total{name=\"%s\",site=\"%s\",rank=\"%d\"} %llu\n",
			        name, site, r + 1, (unsigned long long)g->rank[r]);
	}
	family(out, "geoacme_geo_fail_open_answers_total", "counter",
	       "Geo answers given while no candidate site was alive (fail open).");
	fprintf(out, "geoacme_geo_fail_open_answers_total %llu\n",
	        (unsigned long long)metrics.fail_open_answers);
	family(out, "geoacme_geo_fail_open_episodes_total", "counter",
	       "Times every health-checked site was down at once.");
	fprintf(out, "geoacme_geo_fail_open_episodes_total %llu\n",
	        (unsigned long long)metrics.fail_open_episodes);
	family(out, "geoacme_health_probes_total", "counter", "Health probes completed, by result.");
	fprintf(out, "geoacme_health_probes_total{result=\"ok\"} %llu\n",
	        (unsigned long long)metrics.probes_ok);
	fprintf(out, "geoacme_health_probes_total{result=\"failed\"} %llu\n",
	        (unsigned long long)metrics.probes_failed);
	family(out, "geoacme_updates_total", "counter", "DNS UPDATE messages, by result.");
	for (int u = 0; u < METRICS_UPDATE_RESULTS; u++)
		fprintf(out, "geoacme_updates_total{result=\"%s\"} %llu\n", update_results[u],
		        (unsigned long long)metrics.updates[u]);
	family(out, "geoacme_stale_txt_purged_total", "counter",
	       "TXT records removed from ACME zones by the stale-record purge.");
	fprintf(out, "geoacme_stale_txt_purged_total %llu\n",
	        (unsigned long long)metrics.stale_txt_purged);
	family(out, "geoacme_signatures_made_total", "counter", "RRSIGs computed (cache misses).");
	fprintf(out, "geoacme_signatures_made_total %llu\n",
	        (unsigned long long)metrics.signatures_made);
	static const char *const xfr_out[METRICS_XFR_OUT] = {
		"axfr", "ixfr", "ixfr_full_zone", "soa_only", "refused",
	};
	family(out, "geoacme_transfers_out_total", "counter",
	       "Zone transfer requests answered, by what was sent.");
	for (int k = 0; k < METRICS_XFR_OUT; k++)
		fprintf(out, "geoacme_transfers_out_total{result=\"%s\"} %llu\n", xfr_out[k],
		        (unsigned long long)metrics.xfr_out[k]);
	family(out, "geoacme_notify_sent_total", "counter", "NOTIFY messages sent (retries too).");
	fprintf(out, "geoacme_notify_sent_total %llu\n", (unsigned long long)metrics.notify_sent);
	family(out, "geoacme_notify_answered_total", "counter", "NOTIFY messages answered.");
	fprintf(out, "geoacme_notify_answered_total %llu\n",
	        (unsigned long long)metrics.notify_answered);
	static const char *const xfr_in[METRICS_XFR_IN] = { "axfr", "ixfr", "current", "failed" };
	family(out, "geoacme_transfers_in_total", "counter",
	       "Checks of secondary zones against their primaries, by outcome.");
	for (int k = 0; k < METRICS_XFR_IN; k++)
		fprintf(out, "geoacme_transfers_in_total{result=\"%s\"} %llu\n", xfr_in[k],
		        (unsigned long long)metrics.xfr_in[k]);
	family(out, "geoacme_loop_busy_max_seconds", "gauge",
	       "Longest time the event loop spent on one round of events and timers since start "
	       "(the longest any query can have waited for it).");
	fprintf(out, "geoacme_loop_busy_max_seconds %.6f\n", (double)metrics.loop_busy_max_us / 1e6);
	family(out, "geoacme_loop_busy_recent_max_seconds", "gauge",
	       "The same since the previous scrape of /metrics (each scrape starts a new period).");
	fprintf(out, "geoacme_loop_busy_recent_max_seconds %.6f\n",
	        (double)metrics.loop_busy_recent_us / 1e6);
	metrics.loop_busy_recent_us = 0;
}
