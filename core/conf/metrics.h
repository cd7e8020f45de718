/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Process-wide counters for /metrics (Prometheus text format).
 *
 * Counting must cost the query path nothing but an increment: every
 * counter is a uint64_t that lives for the whole process, found once, off
 * the query path (at start and on each reload), by its metric name and
 * label values, and then incremented through a plain pointer.  Because a
 * series is found by name and labels, a reload that keeps a zone, a geo
 * name or a site keeps counting into the same series: counters never reset
 * on reload or scrape.  Label values come from the configuration and from
 * fixed sets (query types, transports, families, rcodes), never from a
 * query: a client cannot create series.
 *
 * The query-path counters that depend on no configured name sit in one
 * global struct, `metrics`, written directly.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Counting on the query path goes through METRICS_INC, so a build with
 * -DGEOACME_METRICS=OFF compiles it away: bench/metrics-cost.sh builds both
 * and compares the instructions per query (the cost of counting).
 */
#ifdef GEOACME_NO_METRICS
#define METRICS_INC(counter) ((void)sizeof(counter))   /* uses, never evaluates */
#else
#define METRICS_INC(counter) ((counter)++)
#endif

/* Query types with a label of their own; everything else is "other". */
#define METRICS_QTYPES 20
#define METRICS_RCODES 24     /* rcodes 0..23 (extended ones included) */

enum metrics_update_result {
	METRICS_UPDATE_ACCEPTED = 0,
	METRICS_UPDATE_BADKEY,
	METRICS_UPDATE_BADSIG,
	METRICS_UPDATE_BADTIME,
	METRICS_UPDATE_POLICY,
	METRICS_UPDATE_PREREQ,
	METRICS_UPDATE_FORMERR,
	METRICS_UPDATE_OTHER,
	METRICS_UPDATE_RESULTS
};

enum metrics_xfr_out {
	METRICS_XFR_AXFR = 0,       /* a whole zone sent for an AXFR */
	METRICS_XFR_IXFR,           /* a condensed difference sent */
	METRICS_XFR_IXFR_FULL,      /* an IXFR answered with the whole zone */
	METRICS_XFR_SOA,            /* an IXFR answered with the SOA alone */
	METRICS_XFR_REFUSED,        /* refused: policy, key, address */
	METRICS_XFR_OUT
};

enum metrics_xfr_in {
	METRICS_XFRIN_AXFR = 0, METRICS_XFRIN_IXFR, METRICS_XFRIN_CURRENT, METRICS_XFRIN_FAILED,
	METRICS_XFR_IN
};

struct metrics_global {
	uint64_t responses[METRICS_RCODES];  /* by rcode of the response sent */
	uint64_t dropped;                    /* messages never answered (too short, QR=1) */
	uint64_t truncated;                  /* responses with TC=1 */
	uint64_t ecs_queries;                /* queries that carried EDNS Client Subnet */
	uint64_t rrl_dropped, rrl_slipped;
	uint64_t fail_open_answers;          /* geo answers given while failing open */
	uint64_t fail_open_episodes;         /* times every site went down */
	uint64_t updates[METRICS_UPDATE_RESULTS];
	uint64_t stale_txt_purged;
	uint64_t signatures_made;
	uint64_t loop_busy_max_us;           /* longest loop iteration (events + timers), µs */
	uint64_t loop_busy_recent_us;        /* ... since the previous /metrics scrape */
	uint64_t udp_busy_entered;           /* times a UDP socket was waited on in recvmmsg */
	uint64_t udp_busy_now;               /* 1 while one is (0 when all are in epoll) */
	uint64_t probes_ok, probes_failed;
	/* Zone transfers and NOTIFY (xfr/xfr.c, notify.c, secondary.c). */
	uint64_t xfr_out[METRICS_XFR_OUT];   /* by enum metrics_xfr_out */
	uint64_t notify_sent, notify_answered;
	uint64_t xfr_in[METRICS_XFR_IN];     /* by enum metrics_xfr_in */
	uint64_t xfr_in_patched;             /* ... IXFRs applied by patching the copy in place */
	uint64_t dnstap_sent, dnstap_dropped; /* dnstap frames written, or lost (core/net/dnstap.c) */
	uint64_t xdp_sockets;                /* AF_XDP sockets answering (one per interface queue) */
	uint64_t xdp_dropped;                /* frames the XDP program handed over but not answered */
	uint64_t xdp_tx_full;                /* batches cut short: the tx ring full even after a kick */
};
extern struct metrics_global metrics;

/* Queries of one zone, by qtype label, transport (udp, tcp), family (4, 6). */
struct metrics_zone {
	uint64_t queries[METRICS_QTYPES][3][2];   /* transport: udp, tcp, xdp */
};

/* Label helpers for the fixed sets.  The index is inline: it runs for
 * every query (metrics_qtype_by_type holds each label type's index + 1). */
extern const uint8_t metrics_qtype_by_type[256];
static inline size_t metrics_qtype_index(uint16_t qtype)
{
	size_t k = qtype < 256 ? metrics_qtype_by_type[qtype] : 0;
	return k ? k - 1 : METRICS_QTYPES - 1;
}
const char *metrics_qtype_name(size_t index);
/* The name of an rcode (RFC 6895 2.3: "NXDOMAIN", "BADCOOKIE"), or
 * "RCODEnn" written into buf for one without a name. */
const char *metrics_rcode_name(unsigned rcode, char buf[16]);

/*
 * The counter block of a zone (apex in presentation form, "example.com."),
 * or of queries that matched no zone (name NULL).  Made on first use and
 * kept for the process; NULL only when out of memory.
 */
struct metrics_zone *metrics_zone(const char *apex);
/*
 * Geo decisions of one geo name for one site: [0] times it was the nearest
 * (rank 1), [1] the runner-up in a pair answer (rank 2).  Never NULL: out
 * of memory returns a scratch pair that is not exported.
 */
uint64_t *metrics_geo_site(const char *geo_name, const char *site);

/*
 * What a secondary zone (xfr/secondary.c) did not take from its primaries:
 * offers of a serial not newer than its copy's (RFC 1982), and transfers
 * refused, by reason.
 */
enum metrics_secondary {
	METRICS_SEC_OUTDATED = 0,   /* a NOTIFY, SOA, IXFR or AXFR offered an older serial */
	METRICS_SEC_RECORDS_CAP,    /* refused: more records than xfr_in_max_records */
	METRICS_SEC_BYTES_CAP,      /* refused: more bytes than xfr_in_max_bytes */
	METRICS_SEC_CLOSING_SOA,    /* refused: an AXFR's closing SOA differs from its first */
	METRICS_SEC_DIVERGED,       /* an IXFR that does not fit the copy (then AXFR) */
	METRICS_SEC_N
};
/*
 * The counters of one secondary zone (apex "example.com."), indexed by
 * enum metrics_secondary.  Made on first use and kept for the process;
 * never NULL (out of memory returns scratch that is not exported).
 */
uint64_t *metrics_secondary(const char *apex);

/* Frees every series (at exit, so leak checkers stay quiet). */
void metrics_free(void);

/*
 * Writes every counter above in the text exposition format, each family
 * with its HELP and TYPE lines.  Gauges that describe the current state
 * (sites, zones, databases, process) are written by the caller.
 */
void metrics_write_counters(FILE *out);
/* Escapes a label value (backslash, quote, newline) into out. */
void metrics_label_escape(const char *in, char *out, size_t cap);
