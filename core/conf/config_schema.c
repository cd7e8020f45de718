/* SPDX-License-Identifier: MIT */
/*
 * The table of configuration keys (config_schema.h) and the walk that
 * reads a section from it.  Each getter the walk calls reports a wrong type
 * or range at the value, in the same words whatever the section.  Keys of
 * type CUSTOM are read by config.c; their rows are here so that the table
 * lists every key, for "did you mean" and for the documentation check.
 */
#include "core/conf/config_schema.h"

#include <stdlib.h>
#include <string.h>

#include "core/conf/conf_internal.h"
#include "core/conf/log.h"
#include "core/conf/toml.h"
#include "core/conf/tsig_alg.h"
#include "core/wire/edns.h"

#define TOP "[top level]"
#define SERVER "[server]"
#define DNSSEC "[dnssec]"
#define GEO "[geo]"
#define SITES "[[sites]]"
#define HEALTH "[sites.health]"
#define ZONES "[[zones]]"
#define ZGEO "[[zones.geo]]"
#define HTTPS "https"
#define ZKEYS "[[zones.keys]]"
#define STORES "[zones.stores]"
#define TSIG "[[zones.stores.tsig_keys]]"

#define SECOND ((int64_t)CONF_SECOND)
#define MINUTE ((int64_t)CONF_MINUTE)
#define HOUR ((int64_t)CONF_HOUR)
#define DAY ((int64_t)CONF_DAY)

/* A row stored at `field` of `st`. */
#define AT(st, field) .offset = offsetof(st, field), .size = sizeof(((st *)0)->field)
#define KEY(sec, key, ty) .section = (sec), .name = (key), .type = CONFIG_KEY_##ty

static bool log_level_choice(const char *s, int *out)
{
	enum log_level level;
	if (!log_level_parse(s, &level))
		return false;
	*out = (int)level;
	return true;
}

static const struct config_choices log_levels = {
	.expect = "\"error\", \"warn\", \"info\" or \"debug\"", .parse = log_level_choice,
};
static const struct config_choices lookup_paths = {
	.expect = "\"location\" (MaxMind City) or \"\" (flat, DB-IP)",
	.names = (const char *const[]){ "location", "", NULL },
};
static const struct config_choices axfr_policies = {
	.expect = "\"Deny\", \"AllowAll\" or \"AllowSigned\"",
	.names = (const char *const[]){ "Deny", "AllowAll", "AllowSigned", NULL },
	.values = (const int[]){ AXFR_DENY, AXFR_ALLOW_ALL, AXFR_ALLOW_SIGNED },
};
static const struct config_choices store_types = {
	.expect = "\"sqlite\" or \"file\"",
	.names = (const char *const[]){ "sqlite", "file", NULL },
};

/*
 * In each section, rows keep the order of the hand-written lists they
 * replace: "did you mean" suggests the first of equally close keys.
 */
static const struct config_key keys[] = {
	/* ---- top level ---- */
	{ KEY(TOP, "directory", CUSTOM),
	  .doc = "base folder for every relative path; relative to the config file's folder" },
	{ KEY(TOP, "listen_addrs_ipv4", CUSTOM), .doc = "IPv4 addresses to answer on" },
	{ KEY(TOP, "listen_addrs_ipv6", CUSTOM), .doc = "IPv6 addresses to answer on" },
	{ KEY(TOP, "listen_port", INT), AT(struct config, listen_port), .lo = 0, .hi = 65535,
	  .def = CONFIG_PORT_DEFAULT, .doc = "UDP and TCP port; 0 lets the kernel pick one" },
	{ KEY(TOP, "tcp_request_timeout", DURATION), AT(struct config, tcp_idle_timeout_ms),
	  .lo = SECOND, .hi = HOUR, .def = CONFIG_TCP_IDLE_MS_DEFAULT,
	  .doc = "close a TCP connection without a complete query for this long" },
	{ KEY(TOP, "user", STRING), AT(struct config, user),
	  .doc = "user to switch to after binding the sockets" },
	{ KEY(TOP, "group", STRING), AT(struct config, group),
	  .doc = "group for the privilege drop (needs user)" },
	{ KEY(TOP, "log_level", ENUM), AT(struct config, log_level), .def = LOG_INFO,
	  .choices = &log_levels, .doc = "error, warn, info or debug (Hickory's trace is debug)" },
	{ KEY(TOP, "pid_file", PATH), AT(struct config, pid_file),
	  .doc = "where to write the process id once running" },
	{ KEY(TOP, "server", SECTION), .sub = "[server]", .doc = "the [server] section" },
	{ KEY(TOP, "dnssec", SECTION), .sub = "[dnssec]", .doc = "the [dnssec] section" },
	{ KEY(TOP, "geo", SECTION), .sub = "[geo]", .doc = "the [geo] section" },
	{ KEY(TOP, "sites", SECTION), .sub = "[[sites]]", .doc = "the [[sites]] entries" },
	{ KEY(TOP, "zones", SECTION), .sub = "[[zones]]", .doc = "the [[zones]] entries" },
	{ KEY(TOP, "deny_networks", CUSTOM), .doc = "Hickory's client filter: empty only" },
	{ KEY(TOP, "allow_networks", CUSTOM), .doc = "Hickory's client filter: empty only" },
	{ KEY(TOP, "disable_tcp", CUSTOM), .doc = "Hickory's switch: false only" },
	{ KEY(TOP, "disable_udp", CUSTOM), .doc = "Hickory's switch: false only" },

	/* ---- [server] ---- */
	{ KEY(SERVER, "udp_max_size", INT), AT(struct config, udp_max_size), .lo = 512,
	  .hi = 4096, .def = EDNS_UDP_DEFAULT, .doc = "largest UDP response; larger ones get TC" },
	{ KEY(SERVER, "tcp_max_connections", INT), AT(struct config, tcp_max_connections),
	  .lo = 1, .hi = 65535, .def = CONFIG_TCP_MAX_DEFAULT, .doc = "open TCP connections at most" },
	{ KEY(SERVER, "tcp_max_connections_per_prefix", INT),
	  AT(struct config, tcp_max_connections_per_prefix), .lo = 1, .hi = 65535,
	  .def = CONFIG_TCP_PER_PREFIX_DEFAULT,
	  .doc = "open TCP connections at most from one IPv4 /24 or IPv6 /56" },
	{ KEY(SERVER, "rrl_rate", INT), AT(struct config, rrl_rate), .lo = 0, .hi = 1000000,
	  .doc = "UDP responses a second per client prefix; 0 turns rate limiting off" },
	{ KEY(SERVER, "rrl_slip", INT), AT(struct config, rrl_slip), .lo = 0, .hi = 10, .def = 2,
	  .doc = "every Nth limited response is sent truncated, the others dropped" },
	{ KEY(SERVER, "rrl_ipv4_prefix", INT), AT(struct config, rrl_ipv4_prefix), .lo = 8,
	  .hi = 32, .def = 24, .doc = "IPv4 prefix length that groups clients for rate limiting" },
	{ KEY(SERVER, "rrl_ipv6_prefix", INT), AT(struct config, rrl_ipv6_prefix), .lo = 16,
	  .hi = 128, .def = 56, .doc = "IPv6 prefix length that groups clients for rate limiting" },
	{ KEY(SERVER, "cookies", BOOL), AT(struct config, cookies), .def = true,
	  .doc = "answer DNS cookies (RFC 7873)" },
	{ KEY(SERVER, "xdp_listen", CUSTOM),
	  .doc = "interfaces whose UDP queries are answered through AF_XDP, at most 8; "
	         "doc/config.md says what it needs" },
	{ KEY(SERVER, "http_listen", CUSTOM),
	  .doc = "\"address:port\" of the HTTP endpoint (/metrics, status), at most 8" },
	{ KEY(SERVER, "query_log_sample", INT), AT(struct config, query_log_sample), .lo = 0,
	  .hi = 1000000000, .doc = "log one query in N; 0 is off" },
	{ KEY(SERVER, "query_log_rate", INT), AT(struct config, query_log_rate), .lo = 1,
	  .hi = 100000, .def = 10, .doc = "at most this many sampled query lines a second" },
	{ KEY(SERVER, "nsid", STRING), AT(struct config, nsid), .lo = 1, .hi = 128,
	  .doc = "this instance's NSID (RFC 5001)" },
	{ KEY(SERVER, "source_ipv4", CUSTOM),
	  .doc = "IPv4 address outgoing NOTIFY and transfer requests leave from; default: the "
	         "first listen address" },
	{ KEY(SERVER, "source_ipv6", CUSTOM),
	  .doc = "IPv6 address outgoing NOTIFY and transfer requests leave from; default: the "
	         "first listen address" },
	{ KEY(SERVER, "tcp_lifetime", DURATION), AT(struct config, tcp_lifetime_ms), .lo = SECOND,
	  .hi = DAY, .def = CONFIG_TCP_LIFETIME_MS_DEFAULT,
	  .doc = "a TCP connection's progress window: reset unless it read 1 KiB/s over it" },
	{ KEY(SERVER, "udp_io", CUSTOM), .doc = "\"epoll\", kept for old configs (io_uring is refused)" },
	{ KEY(SERVER, "dnstap_socket", PATH), AT(struct config, dnstap_socket),
	  .doc = "Frame Streams Unix socket of a dnstap collector" },
	{ KEY(SERVER, "dnstap_sample", INT), AT(struct config, dnstap_sample), .lo = 1,
	  .hi = 1000000000, .def = 1, .doc = "stream one exchange in N" },
	{ KEY(SERVER, "dnstap_queries", BOOL), AT(struct config, dnstap_queries), .def = true,
	  .doc = "stream AUTH_QUERY messages" },
	{ KEY(SERVER, "dnstap_responses", BOOL), AT(struct config, dnstap_responses), .def = true,
	  .doc = "stream AUTH_RESPONSE messages" },
	{ KEY(SERVER, "dnstap_updates", BOOL), AT(struct config, dnstap_updates), .def = true,
	  .doc = "stream UPDATE_QUERY and UPDATE_RESPONSE messages" },
	{ KEY(SERVER, "control_socket", CUSTOM),
	  .doc = "Unix socket of the control channel (geoacme ctl); \"\" is off" },

	/* ---- [dnssec] ---- */
	{ KEY(DNSSEC, "signature_validity", SECONDS), AT(struct config, sig_validity_s),
	  .lo = HOUR, .hi = 365 * DAY, .def = CONFIG_SIG_VALIDITY_DEFAULT,
	  .doc = "how long a signature is valid from its inception" },
	{ KEY(DNSSEC, "signature_inception", SECONDS), AT(struct config, sig_inception_s),
	  .lo = 0, .hi = 7 * DAY, .def = CONFIG_SIG_INCEPTION_DEFAULT,
	  .doc = "how far before now a signature's inception is set" },
	{ KEY(DNSSEC, "signature_refresh", SECONDS), AT(struct config, sig_refresh_s),
	  .lo = MINUTE, .hi = 365 * DAY, .def = CONFIG_SIG_REFRESH_DEFAULT,
	  .doc = "sign again when less than this validity remains" },

	/* ---- [geo] ---- */
	{ KEY(GEO, "databases", CUSTOM), .doc = ".mmdb files, tried in order" },
	{ KEY(GEO, "lookup_path", WORD), AT(struct config_geo, lookup_path),
	  .choices = &lookup_paths, .doc = "\"location\" or \"\" (flat); left out, detected" },
	{ KEY(GEO, "default_location", CUSTOM),
	  .doc = "[latitude, longitude] of a client no database locates" },
	{ KEY(GEO, "max_database_mib", MIB), AT(struct config_geo, max_database_bytes), .lo = 1,
	  .hi = 65536, .doc = "largest .mmdb accepted, in MiB (512 when left out)" },
	{ KEY(GEO, "health", SECTION), .sub = "[sites.health]",
	  .doc = "probe settings every site starts from" },

	/* ---- [[sites]] ---- */
	{ KEY(SITES, "name", STRING), AT(struct config_site, name), .required = true,
	  .doc = "the site's name, unique" },
	{ KEY(SITES, "ipv4", CUSTOM), .doc = "the site's IPv4 address (the A answer)" },
	{ KEY(SITES, "ipv6", CUSTOM), .doc = "the site's IPv6 address (the AAAA answer)" },
	{ KEY(SITES, "latitude", NUM), AT(struct config_site, latitude), .required = true,
	  .lo = -90, .hi = 90, .doc = "degrees north" },
	{ KEY(SITES, "longitude", NUM), AT(struct config_site, longitude), .required = true,
	  .lo = -180, .hi = 180, .doc = "degrees east" },
	{ KEY(SITES, "enabled", BOOL), AT(struct config_site, enabled), .def = true,
	  .doc = "false keeps the site out of every answer" },
	{ KEY(SITES, "health", SECTION), .sub = "[sites.health]",
	  .doc = "the site's probe: [sites.health]" },

	/* ---- [sites.health] and [geo] health ---- */
	{ KEY(HEALTH, "port", INT), AT(struct config_health, port), .lo = 1, .hi = 65535,
	  .doc = "TCP port to connect to (required)" },
	{ KEY(HEALTH, "http_path", CUSTOM), .doc = "GET this path and check the status" },
	{ KEY(HEALTH, "http_host", STRING), AT(struct config_health, http_host),
	  .doc = "Host header and TLS name; the site's name by default" },
	{ KEY(HEALTH, "interval", DURATION), AT(struct config_health, interval_ms), .lo = 100,
	  .hi = HOUR, .def = 10000, .doc = "from the start of one probe to the next" },
	{ KEY(HEALTH, "timeout", DURATION), AT(struct config_health, timeout_ms), .lo = 100,
	  .hi = MINUTE, .def = 3000, .doc = "time a probe may take" },
	{ KEY(HEALTH, "rise", INT), AT(struct config_health, rise), .lo = 1, .hi = 100, .def = 2,
	  .doc = "successes in a row that make a down site alive" },
	{ KEY(HEALTH, "fall", INT), AT(struct config_health, fall), .lo = 1, .hi = 100, .def = 3,
	  .doc = "failures in a row that make an alive site down" },
	{ KEY(HEALTH, "tls", BOOL), AT(struct config_health, tls),
	  .doc = "speak TLS after connecting; true by default on port 443" },
	{ KEY(HEALTH, "verify", BOOL), AT(struct config_health, verify), .def = true,
	  .doc = "check the certificate chain and name" },
	{ KEY(HEALTH, "ca_file", PATH), AT(struct config_health, ca_file),
	  .doc = "PEM CA bundle instead of the system store" },
	{ KEY(HEALTH, "http_status", CUSTOM), .doc = "accepted status codes or classes (\"2xx\")" },

	/* ---- [[zones]] ---- */
	{ KEY(ZONES, "zone", CUSTOM), .doc = "the zone's name (required, unique)" },
	{ KEY(ZONES, "zone_type", CUSTOM), .doc = "\"Primary\" or \"Secondary\"" },
	{ KEY(ZONES, "file", PATH), AT(struct config_zone, file),
	  .doc = "zone file of a file-backed zone" },
	{ KEY(ZONES, "publish_cds", BOOL), AT(struct config_zone, publish_cds),
	  .doc = "publish CDS and CDNSKEY at the apex (RFC 7344)" },
	{ KEY(ZONES, "enable_dnssec", BOOL),
	  .doc = "Hickory's key, ignored: a zone is signed when it has [[zones.keys]]" },
	{ KEY(ZONES, "allow_update", CUSTOM), .doc = "Hickory's zone-level allow_update" },
	{ KEY(ZONES, "axfr_policy", ENUM), AT(struct config_zone, axfr_policy),
	  .def = AXFR_DENY, .choices = &axfr_policies, .doc = "who may transfer the zone" },
	{ KEY(ZONES, "allow_axfr", CUSTOM), .doc = "Hickory's older key: true is AllowAll" },
	{ KEY(ZONES, "axfr_from", CUSTOM), .doc = "addresses or prefixes that may transfer" },
	{ KEY(ZONES, "notify", CUSTOM), .doc = "secondaries sent a NOTIFY on each new serial" },
	{ KEY(ZONES, "ixfr_max_changes", INT), AT(struct config_zone, ixfr_max_changes), .lo = 0,
	  .hi = 100000, .def = 100, .doc = "differences the IXFR journal keeps" },
	{ KEY(ZONES, "ixfr_max_bytes", INT), AT(struct config_zone, ixfr_max_bytes), .lo = 0,
	  .hi = 1 << 30, .def = 1 << 20, .doc = "the IXFR journal's size cap in bytes" },
	{ KEY(ZONES, "primaries", CUSTOM), .doc = "where a secondary zone is copied from" },
	{ KEY(ZONES, "xfr_in_max_records", INT), AT(struct config_zone, xfr_in_max_records),
	  .lo = 1, .hi = UINT32_MAX, .def = 2000000,
	  .doc = "most records one received transfer may carry (secondary)" },
	{ KEY(ZONES, "xfr_in_max_bytes", INT), AT(struct config_zone, xfr_in_max_bytes),
	  .lo = 512, .hi = UINT32_MAX, .def = 512u << 20,
	  .doc = "most bytes one received transfer may carry (secondary)" },
	{ KEY(ZONES, "geo", SECTION), .sub = "[[zones.geo]]",
	  .doc = "the zone's [[zones.geo]] names" },
	{ KEY(ZONES, "keys", SECTION), .sub = "[[zones.keys]]",
	  .doc = "the zone's [[zones.keys]] signing key" },
	{ KEY(ZONES, "key_policy", SECTION), .sub = "[zones.key_policy]",
	  .doc = "the zone's [zones.key_policy]: automatic key rollover" },
	{ KEY(ZONES, "stores", SECTION), .sub = "[zones.stores]",
	  .doc = "the zone's [zones.stores]" },

	/* ---- [[zones.geo]] ---- */
	{ KEY(ZGEO, "name", CUSTOM), .doc = "owner name, relative to the zone, absolute or \"@\"" },
	{ KEY(ZGEO, "sites", CUSTOM), .doc = "candidate sites by name; every site by default" },
	{ KEY(ZGEO, "ratio", NUM), AT(struct config_geo_name, ratio), .lo = 1, .hi = 1000,
	  .fdef = 2.0, .doc = "answer the nearest alone when the second is this many times as far" },
	{ KEY(ZGEO, "margin_miles", NUM), AT(struct config_geo_name, margin_miles), .lo = 0,
	  .hi = 25000, .fdef = 1000.0, .doc = "... and this many miles farther" },
	{ KEY(ZGEO, "ttl_single", INT), AT(struct config_geo_name, ttl_single), .lo = 0,
	  .hi = CONF_TTL_MAX, .def = 120, .doc = "TTL of a one-site answer" },
	{ KEY(ZGEO, "ttl_pair", INT), AT(struct config_geo_name, ttl_pair), .lo = 0,
	  .hi = CONF_TTL_MAX, .def = 3600, .doc = "TTL of a two-site answer" },
	{ KEY(ZGEO, "https", SECTION), .sub = "https",
	  .doc = "also answer HTTPS (RFC 9460) per client" },
	{ KEY(ZGEO, "fallback_sites", CUSTOM), .doc = "one or two sites a zone transfer carries" },

	/* ---- https (in [[zones.geo]]) ---- */
	{ KEY(HTTPS, "alpn", CUSTOM), .doc = "the alpn SvcParam, in order of preference" },
	{ KEY(HTTPS, "site_names", CUSTOM), .doc = "label(s) under the zone of the per-site names" },
	{ KEY(HTTPS, "port", INT), AT(struct config_geo_https, port), .lo = 1, .hi = 65535,
	  .doc = "the port SvcParam" },
	{ KEY(HTTPS, "ech", CUSTOM), .doc = "the ech SvcParam: a base64 ECHConfigList" },

	/* ---- [[zones.keys]] ---- */
	{ KEY(ZKEYS, "algorithm", CUSTOM), .doc = "ECDSAP256SHA256, the only one" },
	{ KEY(ZKEYS, "key_path", PATH), AT(struct config_zone_key, key_path), .required = true,
	  .doc = "PEM file of the P-256 private key" },
	{ KEY(ZKEYS, "password", CUSTOM), .doc = "refused: encrypted keys are not supported" },
	{ KEY(ZKEYS, "is_zone_signing_key", CUSTOM), .doc = "Hickory's key: false skips the entry" },
	{ KEY(ZKEYS, "is_zone_update_auth", BOOL), .doc = "Hickory's key, ignored" },
	{ KEY(ZKEYS, "signer_name", STRING), .doc = "Hickory's key, ignored" },
	{ KEY(ZKEYS, "purpose", CUSTOM), .doc = "Hickory's ZoneSigning or ZoneUpdateAuth (skipped)" },

	/* ---- [zones.stores] ---- */
	{ KEY(STORES, "type", WORD), AT(struct config_zone, store_type), .required = true,
	  .choices = &store_types, .doc = "\"sqlite\" (the ACME zone) or \"file\"" },
	{ KEY(STORES, "allow_update", CUSTOM), .doc = "accept TSIG-signed DNS UPDATE" },
	{ KEY(STORES, "journal_path", CUSTOM), .doc = "the SQLite database" },
	{ KEY(STORES, "journal_file_path", CUSTOM), .doc = "Hickory's older name of journal_path" },
	{ KEY(STORES, "zone_path", CUSTOM), .doc = "zone file that seeds the database" },
	{ KEY(STORES, "zone_file_path", CUSTOM), .doc = "Hickory's older name of zone_path" },
	{ KEY(STORES, "stale_txt_age", SECONDS), AT(struct config_zone, stale_txt_age_s), .lo = 0,
	  .hi = 365 * DAY, .def = 86400, .doc = "TXT records older than this are removed; 0 never" },
	{ KEY(STORES, "max_records_per_name", INT), AT(struct config_zone, max_records_per_name),
	  .lo = 0, .hi = 65535, .def = 16, .doc = "records an UPDATE may grow a name to" },
	{ KEY(STORES, "max_records", INT), AT(struct config_zone, max_records), .lo = 0,
	  .hi = 10000000, .def = 10000, .doc = "records an UPDATE may grow the zone to" },
	{ KEY(STORES, "max_txt_len", INT), AT(struct config_zone, max_txt_len), .lo = 1, .hi = 255,
	  .def = 255, .doc = "longest TXT string an UPDATE may add" },
	{ KEY(STORES, "tsig_keys", SECTION), .sub = "[[zones.stores.tsig_keys]]",
	  .doc = "the keys that may sign UPDATEs" },
	{ KEY(STORES, "checkpoint_pages", INT), AT(struct config_zone, checkpoint_pages), .lo = 1,
	  .hi = 1000000, .def = 1000, .doc = "WAL pages that start a checkpoint" },

	/* ---- [[zones.stores.tsig_keys]] ---- */
	{ KEY(TSIG, "name", CUSTOM), .doc = "the key's name, as the client sends it" },
	{ KEY(TSIG, "algorithm", CUSTOM), .doc = "hmac-sha1, -sha224, -sha256, -sha384 or -sha512" },
	{ KEY(TSIG, "key_file", CUSTOM), .doc = "file of the raw secret bytes" },
	{ KEY(TSIG, "secret", CUSTOM), .doc = "the secret in base64" },
	{ KEY(TSIG, "fudge", INT), AT(struct config_tsig_key, fudge), .lo = 0, .hi = 65535,
	  .def = TSIG_FUDGE_DEFAULT, .doc = "allowed clock difference, in seconds" },
	{ KEY(TSIG, "allow_types", CUSTOM), .doc = "record types this key may change; TXT by default" },
	{ KEY(TSIG, "allow_names", CUSTOM), .doc = "names (and below) this key may change" },
	{ KEY(TSIG, "allow_axfr", BOOL), AT(struct config_tsig_key, allow_axfr), .def = true,
	  .doc = "this key may sign transfers and NOTIFYs" },
};

const struct config_key *config_schema_keys(size_t *n)
{
	*n = sizeof(keys) / sizeof(keys[0]);
	return keys;
}

/* An unsigned field of 1, 2, 4 or 8 bytes; memcpy keeps clear of aliasing rules. */
static void store_uint(void *field, size_t size, uint64_t v)
{
	uint8_t u8 = (uint8_t)v;
	uint16_t u16 = (uint16_t)v;
	uint32_t u32 = (uint32_t)v;
	switch (size) {
	case 1: memcpy(field, &u8, 1); break;
	case 2: memcpy(field, &u16, 2); break;
	case 4: memcpy(field, &u32, 4); break;
	case 8: memcpy(field, &v, 8); break;
	default: break;
	}
}

/* Replaces a char * field with s (owned); a row without a field drops it. */
static void store_str(void *field, size_t size, char *s)
{
	if (!size) {
		free(s);
		return;
	}
	char *old;
	memcpy(&old, field, sizeof(old));
	free(old);
	memcpy(field, &s, sizeof(s));
}

void config_schema_defaults(const char *section, void *base)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const struct config_key *k = &keys[i];
		void *field = (char *)base + k->offset;
		if (strcmp(k->section, section) != 0 || !k->size)
			continue;
		switch (k->type) {
		case CONFIG_KEY_BOOL: *(bool *)field = k->def != 0; break;
		case CONFIG_KEY_NUM: memcpy(field, &k->fdef, sizeof(double)); break;
		case CONFIG_KEY_MIB: store_uint(field, k->size, (uint64_t)k->def << 20); break;
		case CONFIG_KEY_INT:
		case CONFIG_KEY_ENUM:
		case CONFIG_KEY_DURATION:
		case CONFIG_KEY_SECONDS: store_uint(field, k->size, (uint64_t)k->def); break;
		default: break;     /* strings start as NULL */
		}
	}
}

/* A string key: one of the choices (ENUM, WORD) or lo..hi bytes (STRING with hi). */
static void read_string(struct loader *l, const struct config_key *k, struct toml_node *t,
                        void *field)
{
	struct toml_node *n = conf_get_type(l, t, k->name, TOML_STRING);
	if (!n)
		return;
	const char *s = n->u.s;
	if (k->type == CONFIG_KEY_STRING) {
		size_t len = strlen(s);
		if (len < (uint64_t)k->lo || len > (uint64_t)k->hi)
			conf_err_node(l, n, "expected %lld to %lld bytes for '%s', found %zu",
			              (long long)k->lo, (long long)k->hi, k->name, len);
		else
			store_str(field, k->size, conf_strdup(l, s));
		return;
	}
	const struct config_choices *ch = k->choices;
	int v = 0;
	bool found = ch->parse && ch->parse(s, &v);
	for (size_t i = 0; !ch->parse && ch->names[i]; i++) {
		if (strcmp(s, ch->names[i]) == 0) {
			found = true;
			v = ch->values ? ch->values[i] : 0;
			break;
		}
	}
	if (!found)
		conf_err_node(l, n, "expected '%s' to be %s, found '%s'", k->name, ch->expect, s);
	else if (k->type == CONFIG_KEY_WORD)
		store_str(field, k->size, conf_strdup(l, s));
	else
		store_uint(field, k->size, (uint64_t)v);
}

static void read_key(struct loader *l, const struct config_key *k, struct toml_node *t,
                     void *base)
{
	void *field = (char *)base + k->offset;
	int64_t v;
	uint64_t ms;
	double d;
	bool b;
	char *s = NULL;

	if (k->required && !toml_get(t, k->name)) {
		conf_missing(l, t, k->name, k->section);
		return;
	}
	switch (k->type) {
	case CONFIG_KEY_BOOL:
		if (conf_get_bool(l, t, k->name, &b) && k->size)
			*(bool *)field = b;
		break;
	case CONFIG_KEY_INT:
	case CONFIG_KEY_MIB:
		if (conf_get_int(l, t, k->name, k->lo, k->hi, &v))
			store_uint(field, k->size,
			           k->type == CONFIG_KEY_MIB ? (uint64_t)v << 20 : (uint64_t)v);
		break;
	case CONFIG_KEY_NUM:
		if (conf_get_num(l, t, k->name, (double)k->lo, (double)k->hi, &d))
			memcpy(field, &d, sizeof(d));
		break;
	case CONFIG_KEY_DURATION:
	case CONFIG_KEY_SECONDS:
		if (conf_get_duration(l, t, k->name, (uint64_t)k->lo, (uint64_t)k->hi,
		                      k->type == CONFIG_KEY_SECONDS, &ms))
			store_uint(field, k->size,
			           k->type == CONFIG_KEY_SECONDS ? ms / CONF_SECOND : ms);
		break;
	case CONFIG_KEY_STRING:
		if (k->hi > 0)
			read_string(l, k, t, field);
		else if (conf_get_str(l, t, k->name, false, &s))
			store_str(field, k->size, s);
		else
			free(s);
		break;
	case CONFIG_KEY_PATH:
		if (conf_get_path(l, t, k->name, &s))
			store_str(field, k->size, s);
		else
			free(s);
		break;
	case CONFIG_KEY_ENUM:
	case CONFIG_KEY_WORD:
		read_string(l, k, t, field);
		break;
	case CONFIG_KEY_CUSTOM:
	case CONFIG_KEY_SECTION:
		break;
	}
}

void config_schema_read(struct loader *l, const char *section, struct toml_node *t, void *base)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(keys[i].section, section) == 0)
			read_key(l, &keys[i], t, base);
}

size_t config_schema_unknown(struct loader *l, const char *section, struct toml_node *t,
                             const char *where)
{
	const char *known[64];
	size_t n = 0;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && n + 1 < 64; i++)
		if (strcmp(keys[i].section, section) == 0)
			known[n++] = keys[i].name;
	known[n] = NULL;
	return conf_check_unknown(l, t, known, where);
}
