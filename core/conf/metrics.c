/* SPDX-License-Identifier: MIT */
/*
 * The counter registry.  Series are few (zones, geo names × sites) and are
 * looked up only at start and on reload, so a linked list is enough.
 *
 * A reload builds its generation on a helper thread (cmd/builder.h), which
 * looks series up while the loop counts and writes the exposition: lookups
 * take a mutex, a new series is published with a release store after it is
 * filled, and every walk reads the links with acquire loads.  Series are
 * never unlinked before metrics_free() at exit.
 */
#include "core/conf/metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire/rrset.h"

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

struct sec_series {
	struct sec_series *next;
	char *apex;
	uint64_t v[METRICS_SEC_N];
};

static pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;
#define LINK(p) __atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define PUBLISH(at, v) __atomic_store_n(&(at), (v), __ATOMIC_RELEASE)

static struct zone_series *zones;
static struct sec_series *secs;
static uint64_t sec_scratch[METRICS_SEC_N];
static struct geo_series *geos;
static uint64_t geo_scratch[2];

/*
 * The fixed qtype label set, in this order (the value is the label's
 * index + 1), named by the record-type table (core/wire/rrset.h); any
 * other type counts as "other", the last index.  Every label type is
 * below 256, so the query path indexes by type (metrics.h).
 */
const uint8_t metrics_qtype_by_type[256] = {
	[RR_A] = 1, [RR_NS] = 2, [RR_CNAME] = 3, [RR_SOA] = 4, [RR_PTR] = 5, [RR_MX] = 6,
	[RR_TXT] = 7, [RR_AAAA] = 8, [RR_SRV] = 9, [RR_NAPTR] = 10, [RR_DS] = 11,
	[RR_RRSIG] = 12, [RR_NSEC] = 13, [RR_DNSKEY] = 14, [RR_SVCB] = 15, [RR_HTTPS] = 16,
	[RR_AXFR] = 17, [RR_IXFR] = 18, [RR_ANY] = 19,
};

const char *metrics_qtype_name(size_t index)
{
	char unused[16];   /* every label type has a mnemonic */
	for (unsigned t = 0; t < 256 && index < METRICS_QTYPES - 1; t++)
		if (metrics_qtype_by_type[t] == index + 1)
			return rrset_type_to_str((uint16_t)t, unused);
	return "other";
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static struct metrics_zone *zone_locked(const char *apex)
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
	PUBLISH(*tail, z);   /* appended: the exposition keeps the configuration's order */
	return &z->block;
}

struct metrics_zone *metrics_zone(const char *apex)
{
	pthread_mutex_lock(&registry);
	struct metrics_zone *b = zone_locked(apex);
	pthread_mutex_unlock(&registry);
	return b;
}

static uint64_t *geo_locked(const char *geo_name, const char *site)
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
	PUBLISH(*tail, g);
	return g->rank;
}

uint64_t *metrics_geo_site(const char *geo_name, const char *site)
{
	pthread_mutex_lock(&registry);
	uint64_t *v = geo_locked(geo_name, site);
	pthread_mutex_unlock(&registry);
	return v;
}

static uint64_t *secondary_locked(const char *apex)
{
	struct sec_series **tail = &secs;
	for (struct sec_series *z = secs; z; z = z->next) {
		if (strcmp(z->apex, apex) == 0)
			return z->v;
		tail = &z->next;
	}
	struct sec_series *z = calloc(1, sizeof(*z));
	if (!z || !(z->apex = strdup(apex))) {
		free(z);
		return sec_scratch;
	}
	PUBLISH(*tail, z);
	return z->v;
}

uint64_t *metrics_secondary(const char *apex)
{
	pthread_mutex_lock(&registry);
	uint64_t *v = secondary_locked(apex);
	pthread_mutex_unlock(&registry);
	return v;
}

void metrics_free(void)
{
	while (secs) {
		struct sec_series *n = secs->next;
		free(secs->apex);
		free(secs);
		secs = n;
	}
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

/* A counter without labels: its HELP and TYPE lines, then its value. */
static void counter(FILE *out, const char *name, const char *help, uint64_t v)
{
	family(out, name, "counter", help);
	fprintf(out, "%s %llu\n", name, (unsigned long long)v);
}

/* A counter with one label: one line per value of the label. */
static void counters_by(FILE *out, const char *name, const char *help, const char *label,
                        const char *const *values, const uint64_t *v, size_t n)
{
	family(out, name, "counter", help);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s{%s=\"%s\"} %llu\n", name, label, values[i], (unsigned long long)v[i]);
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

const char *metrics_rcode_name(unsigned rcode, char buf[16])
{
	if (rcode < METRICS_RCODES && strncmp(rcode_names[rcode], "RCODE", 5) != 0)
		return rcode_names[rcode];
	snprintf(buf, 16, "RCODE%u", rcode);
	return buf;
}

static void write_queries(FILE *out)
{
	static const char *const transports[3] = { "udp", "tcp", "xdp" };
	static const char *const families[2] = { "ipv4", "ipv6" };
	char zone[1024];

	family(out, "geoacme_queries_total", "counter",
	       "Standard queries (opcode QUERY) resolved, by zone (\"\" when no zone matched), "
	       "type, transport and client address family.");
	for (struct zone_series *z = LINK(zones); z; z = LINK(z->next)) {
		metrics_label_escape(z->apex ? z->apex : "", zone, sizeof(zone));
		for (size_t t = 0; t < METRICS_QTYPES; t++)
			for (int p = 0; p < 3; p++)
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
	counters_by(out, "geoacme_responses_total", "Responses sent at once to any message (queries, errors, UPDATE, NOTIFY), "
	            "by rcode; UPDATE acknowledgements sent after the commit and zone transfer "
	            "streams are not counted here.", "rcode",
	            rcode_names, metrics.responses, METRICS_RCODES);
	counter(out, "geoacme_dropped_total",
	        "Messages given no response: shorter than a header, responses (QR=1), "
	        "and UDP responses withheld by rate limiting.",
	        metrics.dropped);
	counter(out, "geoacme_truncated_total", "Responses sent with TC=1 (too large for the UDP size, or a rate-limiting slip).", metrics.truncated);
	counter(out, "geoacme_ecs_queries_total",
	        "Queries that carried an EDNS Client Subnet option.",
	        metrics.ecs_queries);
	counter(out, "geoacme_rrl_dropped_total",
	        "UDP responses not sent because their client prefix was over the rate limit.",
	        metrics.rrl_dropped);
	counter(out, "geoacme_rrl_slipped_total",
	        "Rate-limited UDP responses sent truncated and empty instead (slip), so a real "
	        "client retries over TCP.",
	        metrics.rrl_slipped);

	char name[1024], site[256];
	family(out, "geoacme_geo_decisions_total", "counter",
	       "Geo answers by geo name, site and rank (1 nearest, 2 runner-up in a pair).");
	for (struct geo_series *g = LINK(geos); g; g = LINK(g->next)) {
		metrics_label_escape(g->name, name, sizeof(name));
		metrics_label_escape(g->site, site, sizeof(site));
		for (int r = 0; r < 2; r++)
			fprintf(out, "geoacme_geo_decisions_total{name=\"%s\",site=\"%s\",rank=\"%d\"} %llu\n",
			        name, site, r + 1, (unsigned long long)g->rank[r]);
	}
	counter(out, "geoacme_geo_fail_open_answers_total",
	        "Geo answers given while no candidate site was alive (fail open).",
	        metrics.fail_open_answers);
	counter(out, "geoacme_geo_fail_open_episodes_total",
	        "Times every health-checked site was down at once.",
	        metrics.fail_open_episodes);
	family(out, "geoacme_health_probes_total", "counter", "Health probes completed for all sites, by result (ok or failed).");
	fprintf(out, "geoacme_health_probes_total{result=\"ok\"} %llu\n",
	        (unsigned long long)metrics.probes_ok);
	fprintf(out, "geoacme_health_probes_total{result=\"failed\"} %llu\n",
	        (unsigned long long)metrics.probes_failed);
	counters_by(out, "geoacme_updates_total", "DNS UPDATE messages (RFC 2136) received, by result: accepted, or why refused.", "result",
	            update_results, metrics.updates, METRICS_UPDATE_RESULTS);
	counter(out, "geoacme_stale_txt_purged_total",
	        "TXT records removed from ACME zones by the stale-record purge.",
	        metrics.stale_txt_purged);
	counter(out, "geoacme_signatures_made_total",
	        "RRSIGs computed by signing (signature cache misses), at start, on UPDATE and on "
	        "re-signing.",
	        __atomic_load_n(&metrics.signatures_made, __ATOMIC_RELAXED));
	static const char *const xfr_out[METRICS_XFR_OUT] = {
		"axfr", "ixfr", "ixfr_full_zone", "soa_only", "refused",
	};
	counters_by(out, "geoacme_transfers_out_total",
	            "Zone transfer requests answered, by what was sent.", "result", xfr_out,
	            metrics.xfr_out, METRICS_XFR_OUT);
	counter(out, "geoacme_notify_sent_total", "NOTIFY messages sent to secondaries, retries included.",
	        metrics.notify_sent);
	counter(out, "geoacme_notify_answered_total", "NOTIFY messages sent that a secondary answered.",
	        metrics.notify_answered);
	static const char *const xfr_in[METRICS_XFR_IN] = { "axfr", "ixfr", "current", "failed" };
	counters_by(out, "geoacme_transfers_in_total",
	            "Checks of secondary zones against their primaries, by outcome.", "result",
	            xfr_in, metrics.xfr_in, METRICS_XFR_IN);
	counter(out, "geoacme_transfers_in_patched_total",
	        "IXFRs of secondary zones applied by patching the served copy in place, in time "
	        "proportional to the difference (the others were built whole).",
	        metrics.xfr_in_patched);
	static const char *const sec_refused[METRICS_SEC_N] = {
		NULL, "records_cap", "bytes_cap", "closing_soa", "diverged",
	};
	family(out, "geoacme_secondary_outdated_offers_total", "counter",
	       "Offers to a secondary zone (NOTIFY, SOA, IXFR, AXFR) of a serial not newer than its "
	       "copy's (RFC 1982), which were not taken.");
	for (struct sec_series *z = LINK(secs); z; z = LINK(z->next)) {
		metrics_label_escape(z->apex, name, sizeof(name));
		fprintf(out, "geoacme_secondary_outdated_offers_total{zone=\"%s\"} %llu\n", name,
		        (unsigned long long)z->v[METRICS_SEC_OUTDATED]);
	}
	family(out, "geoacme_secondary_transfers_refused_total", "counter",
	       "Transfers into a secondary zone refused (the copy kept), by reason; \"diverged\" "
	       "is an IXFR that did not fit the copy, followed by an AXFR.");
	for (struct sec_series *z = LINK(secs); z; z = LINK(z->next)) {
		metrics_label_escape(z->apex, name, sizeof(name));
		for (size_t i = METRICS_SEC_RECORDS_CAP; i < METRICS_SEC_N; i++)
			fprintf(out, "geoacme_secondary_transfers_refused_total{zone=\"%s\",reason=\"%s\"} "
			        "%llu\n", name, sec_refused[i], (unsigned long long)z->v[i]);
	}
	family(out, "geoacme_dnstap_frames_total", "counter",
	       "dnstap messages (frames) for the collector, by result: sent (written to its "
	       "socket) or dropped (no connection, or the buffer was full: a slow collector).");
	fprintf(out, "geoacme_dnstap_frames_total{result=\"sent\"} %llu\n",
	        (unsigned long long)metrics.dnstap_sent);
	fprintf(out, "geoacme_dnstap_frames_total{result=\"dropped\"} %llu\n",
	        (unsigned long long)metrics.dnstap_dropped);
	counter(out, "geoacme_udp_busy_total",
	        "Times a UDP socket under load left the epoll set to be waited on in recvmmsg "
	        "until it went quiet.",
	        metrics.udp_busy_entered);
	family(out, "geoacme_udp_busy_sockets", "gauge",
	       "UDP sockets being waited on in recvmmsg now (0: all are in the epoll set).");
	fprintf(out, "geoacme_udp_busy_sockets %llu\n", (unsigned long long)metrics.udp_busy_now);
	family(out, "geoacme_xdp_sockets", "gauge",
	       "AF_XDP sockets answering UDP (one per receive queue of each xdp_listen interface "
	       "served; 0: the sockets answer all UDP).");
	fprintf(out, "geoacme_xdp_sockets %llu\n", (unsigned long long)metrics.xdp_sockets);
	counter(out, "geoacme_xdp_dropped_total",
	        "Frames the XDP program handed to geoacme that got no reply: malformed (bad "
	        "lengths or checksums).",
	        metrics.xdp_dropped);
	counter(out, "geoacme_xdp_tx_full_total",
	        "Times an AF_XDP socket's transmit ring had no room for a whole batch of replies "
	        "even after a send: the queries behind waited on the receive ring (none dropped).",
	        metrics.xdp_tx_full);
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
