/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The configuration, loaded from TOML.  The shape follows Hickory DNS so an
 * operator's existing Hickory zone blocks load unchanged; geoacme adds
 * [server], [dnssec], [geo], [[sites]] and [[zones.geo]].  Every string is
 * owned by the config; paths are already resolved against `directory`
 * (default: the config file's folder), and absolute.  config_load() reports
 * every problem as "file:line:col: expected ..." and fails once; it reads
 * the TSIG key files but opens no zone file, DNSSEC key or database.
 * doc/config.md documents every key.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/conf/tsig_alg.h"

struct diag;

/*
 * Defaults written once: config_load() starts from these, and code that
 * runs without a config (a signer or listener made by a test or a tool)
 * falls back to the same values.  The UDP size default is EDNS_UDP_DEFAULT
 * (core/wire/edns.h), the TSIG fudge TSIG_FUDGE_DEFAULT (tsig_alg.h).
 */
#define CONFIG_PORT_DEFAULT 53
#define CONFIG_TCP_MAX_DEFAULT 256
#define CONFIG_TCP_PER_PREFIX_DEFAULT 16
#define CONFIG_TCP_IDLE_MS_DEFAULT 10000
#define CONFIG_TCP_LIFETIME_MS_DEFAULT 120000
#define CONFIG_SIG_VALIDITY_DEFAULT (14 * 86400)   /* RRSIG lifetime, s */
#define CONFIG_SIG_INCEPTION_DEFAULT 3600          /* backdating, s */
#define CONFIG_SIG_REFRESH_DEFAULT (7 * 86400)     /* re-sign when less remains, s */


/* Where a key was written: file is NULL for the config file itself (c->path),
 * else the included file (owned by the config); config_file_of() picks. */
struct config_pos { int line, col; const char *file; };

/* An address block ("192.0.2.0/24", "::1"): family 4 or 6, prefix length. */
struct config_prefix {
	uint8_t family;
	uint8_t len;
	uint8_t addr[16];
};

/* An address and port ("192.0.2.2:53", "[2001:db8::2]:53"; port 53 if left out). */
struct config_addr {
	uint8_t family;
	uint8_t addr[16];
	uint16_t port;
};

/* Who may transfer a zone (Hickory's axfr_policy). */
enum config_axfr { AXFR_DENY = 0, AXFR_ALLOW_ALL, AXFR_ALLOW_SIGNED };

struct config_tsig_key {
	char *name;                 /* "update.acme.luffy.cx." as written */
	enum tsig_alg algorithm;
	char *key_file;             /* raw secret bytes (Hickory), or NULL */
	uint8_t secret[TSIG_SECRET_MAX]; /* from `secret` (base64) or read from key_file */
	size_t secret_len;          /* 0 until read (key_file is read by config_load) */
	uint16_t fudge;             /* allowed clock skew in seconds: 300 (Hickory's `fudge`) */
	/* Policy: what this key may change.  Defaults: TXT, below the apex. */
	uint16_t *allow_types;
	size_t n_allow_types;
	char **allow_names;         /* suffixes ("*" style not used); NULL = whole zone below apex */
	size_t n_allow_names;
	bool allow_axfr;            /* may sign zone transfers (AllowSigned): true */
	struct config_pos pos;
};

struct config_zone_key {
	char *algorithm;            /* "ECDSAP256SHA256" */
	char *key_path;
	struct config_pos pos;
};

/*
 * [zones.key_policy]: automatic key rollover (doc/dnssec.md).  Present only
 * when the section is; the zone's first [[zones.keys]] entry is its first
 * key, a second one a standby key (published, not signing).
 */
struct config_key_policy {
	bool present;
	uint32_t lifetime_s;            /* from the start of signing; 0 = never roll */
	uint32_t dnskey_ttl_s;          /* TTL of DNSKEY, CDS, CDNSKEY: 3600 */
	uint32_t propagation_delay_s;   /* 3600 */
	char *key_dir;                  /* the state file and generated keys */
	struct config_addr *parent;     /* the parent's servers, asked for the DS */
	size_t n_parent;
	bool has_ds_push;
	struct config_addr ds_push;     /* RFC 2136 UPDATE of the DS at the parent */
	bool has_ds_push_key;
	struct config_tsig_key ds_push_key;   /* signs the push; outbound only */
	struct config_pos pos;
};

/* The shortest lifetime a policy accepts: one rollover (doc/dnssec.md). */
uint32_t config_key_policy_min_lifetime(uint32_t dnskey_ttl_s, uint32_t propagation_delay_s);

/*
 * `https = { ... }` in a geo name: an HTTPS RRset (RFC 9460) tailored per
 * client like the A answer, pointing at per-site names.
 */
struct config_geo_https {
	bool enabled;
	char **alpn;                /* ALPN ids in order ("h3", "h2"); may be empty */
	size_t n_alpn;
	char *site_names;           /* "sites": <site>.sites.<zone> holds each site's A/AAAA */
	bool has_port;
	uint16_t port;
	uint8_t *ech;               /* ECHConfigList (decoded from base64); NULL: none */
	size_t ech_len;
	struct config_pos pos;
};

struct config_geo_name {
	char *name;                 /* owner, relative to the zone or absolute with '.' */
	char **sites;               /* site names; empty = every site */
	size_t n_sites;
	double ratio;               /* 2.0 */
	double margin_miles;        /* 1000 */
	uint32_t ttl_single;        /* 120 */
	uint32_t ttl_pair;          /* 3600 */
	struct config_geo_https https;
	/* What a zone transfer carries for this name (1 or 2 site names); NULL =
	 * the rule's answer at default_location with every site alive. */
	char **fallback_sites;
	size_t n_fallback_sites;
	struct config_pos pos;
};

struct config_zone {
	char *zone;                 /* "acme.luffy.cx" as written */
	char *zone_type;            /* "Primary" or "Secondary" */
	bool secondary;             /* zone_type = "Secondary": copied from `primaries` */
	struct config_addr *primaries;  /* where transfers come from; NOTIFY accepted from these */
	size_t n_primaries;
	/* Caps on one received AXFR/IXFR (#26.4): past either, it is refused. */
	uint32_t xfr_in_max_records;    /* 2 000 000 */
	uint32_t xfr_in_max_bytes;      /* 512 MiB of DNS messages */
	char *file;                 /* zone file of a file-backed zone */
	char *store_type;           /* "file" or "sqlite"; NULL when no [zones.stores] */
	bool allow_update;
	char *journal_path;         /* sqlite database */
	char *zone_path;            /* seeds the database on first start */
	struct config_pos file_pos; /* where `file` or `zone_path` is named (0:0 if not) */
	struct config_tsig_key *tsig_keys;
	size_t n_tsig_keys;
	struct config_zone_key *keys;
	size_t n_keys;
	bool publish_cds;           /* CDS + CDNSKEY at the apex (RFC 7344) */
	struct config_key_policy key_policy;
	struct config_geo_name *geo;
	size_t n_geo;
	/* Zone transfers out and NOTIFY. */
	enum config_axfr axfr_policy;   /* Deny */
	struct config_prefix *axfr_from;   /* when set, only these clients may transfer */
	size_t n_axfr_from;
	struct config_addr *notify;     /* secondaries told of every new serial */
	size_t n_notify;
	/* IXFR history (the journal): oldest differences dropped past either cap. */
	uint32_t ixfr_max_changes;      /* 100; 0 = no history, IXFR answered by AXFR */
	uint32_t ixfr_max_bytes;        /* 1 MiB */
	/* ACME policy and hygiene. */
	uint32_t stale_txt_age_s;       /* 86400; 0 = never purge */
	uint32_t checkpoint_pages;      /* 1000: WAL pages that start a checkpoint */
	uint32_t max_records_per_name;  /* 16 */
	uint32_t max_records;           /* 10000 */
	uint32_t max_txt_len;           /* 255 bytes per string, total rdata 1024 */
	struct config_pos pos;
};

/* Accepted HTTP status codes, a bit per code 0..639. */
#define CONFIG_HTTP_STATUS_WORDS 10

struct config_health {
	bool enabled;
	uint16_t port;              /* TCP connect target */
	char *http_path;            /* optional: GET path */
	char *http_host;            /* Host header, TLS name; default the site name */
	bool tls;                   /* HTTPS / TLS; default true when port is 443 */
	bool verify;                /* check the certificate chain and name: true */
	char *ca_file;              /* PEM CA bundle; NULL = the system store */
	uint64_t http_status[CONFIG_HTTP_STATUS_WORDS];   /* default 200..399 */
	uint32_t interval_ms;       /* 10000 */
	uint32_t timeout_ms;        /* 3000 */
	uint32_t rise;              /* 2 */
	uint32_t fall;              /* 3 */
};

struct config_site {
	char *name;
	bool has_v4;
	uint8_t v4[4];
	bool has_v6;
	uint8_t v6[16];
	double latitude, longitude; /* degrees */
	bool enabled;               /* default true */
	struct config_health health;
	struct config_pos pos;
};

struct config_geo {
	char **databases;           /* .mmdb files, tried in order */
	struct config_pos *database_pos;   /* where each is named in the config */
	size_t n_databases;
	char *lookup_path;          /* "location" or "" (flat); NULL = detect */
	uint64_t max_database_bytes;   /* max_database_mib; 0 = the default, 512 MiB */
	bool has_default_location;
	double default_lat, default_lon;
};

struct config {
	char *path;                 /* the config file */
	char **files;               /* the files it includes, for config_pos.file */
	size_t n_files;
	char *directory;            /* base for relative paths */
	/* Hickory-style listen settings. */
	char **listen_addrs_ipv4;
	size_t n_listen_ipv4;
	char **listen_addrs_ipv6;
	size_t n_listen_ipv6;
	uint16_t listen_port;       /* 53; 0 = the kernel picks (tests) */
	char *user, *group;         /* privilege drop after bind; NULL = stay */
	int log_level;              /* enum log_level */
	char *pid_file;             /* optional */
	/* [server] */
	uint16_t udp_max_size;      /* 1232 */
	uint32_t tcp_max_connections;   /* 256 */
	uint32_t tcp_max_connections_per_prefix;   /* 16, per IPv4 /24 or IPv6 /56 */
	uint32_t tcp_idle_timeout_ms;   /* 10000 (tcp_request_timeout in Hickory, seconds) */
	uint32_t tcp_lifetime_ms;   /* 120000: the progress window (core/net/tcp.c) */
	/* [server] response rate limiting (off by default) and DNS cookies (on). */
	uint32_t rrl_rate;              /* responses/s per client prefix; 0 = off */
	uint32_t rrl_slip;              /* every Nth limited response truncated: 2 */
	uint8_t rrl_ipv4_prefix;        /* 24 */
	uint8_t rrl_ipv6_prefix;        /* 56 */
	bool cookies;                   /* answer RFC 7873 cookies: true */
	char *nsid;                     /* NSID identity (RFC 5001); NULL = none */
	/* [server] source_ipv4 / source_ipv6: where outgoing DNS (NOTIFY, SOA
	 * checks, transfer requests) leaves from; NULL = the first listen
	 * address of the family (core/net/source.h). */
	char *source_ipv4, *source_ipv6;
	struct config_pos source_pos[2];
	/* [server] observability */
	char **http_listen;             /* "127.0.0.1:9153"; none = no HTTP endpoint */
	size_t n_http_listen;
	/* [server] xdp_listen: interfaces whose UDP queries AF_XDP takes
	 * (core/net/xdp.h); none = the sockets answer all UDP. */
	char **xdp_listen;
	size_t n_xdp_listen;
	uint32_t query_log_sample;      /* log one query in N; 0 = off */
	uint32_t query_log_rate;        /* at most this many sampled lines a second: 10 */
	char *dnstap_socket;            /* Frame Streams collector (Unix socket); NULL = off */
	uint32_t dnstap_sample;         /* one exchange in N: 1 (all) */
	bool dnstap_queries;            /* AUTH_QUERY: true */
	bool dnstap_responses;          /* AUTH_RESPONSE: true */
	bool dnstap_updates;            /* UPDATE_QUERY and UPDATE_RESPONSE: true */
	/* The control channel (`geoacme ctl`, core/net/control.h): a Unix socket.
	 * Default: control.sock in the folder of the first zone's journal_path
	 * (the state directory), else in `directory`; NULL when set to "" (off). */
	char *control_socket;
	struct config_pos control_socket_pos;   /* 0:0 when defaulted */
	/* [dnssec] */
	uint32_t sig_validity_s;    /* 14 days */
	uint32_t sig_inception_s;   /* backdate 3600 */
	uint32_t sig_refresh_s;     /* re-sign when less than this remains: 7 days */
	/* geo */
	struct config_site *sites;
	size_t n_sites;
	struct config_geo geo;
	struct config_zone *zones;
	size_t n_zones;
};

/* Loads and validates; on failure returns NULL with every problem in d. */
struct config *config_load(const char *path, struct diag *d);
/*
 * For `check`, which reports every problem in one run: like config_load(),
 * but a config whose only problems are files it names that cannot be read
 * (TSIG key files, CA files) is returned, with those problems in d, so the
 * caller goes on to find the others.  Such a config must never be served.
 */
struct config *config_load_all(const char *path, struct diag *d);
void config_free(struct config *c);   /* NULL-safe */
/* The file a position is in: an included file, or the config itself. */
static inline const char *config_file_of(const struct config *c, struct config_pos p)
{
	return p.file ? p.file : c->path;
}
/* Resolves `rel` against c->directory; returns a malloc'd string. */
char *config_resolve_path(const struct config *c, const char *rel);
