/* SPDX-License-Identifier: MIT */
/*
 * Configuration loader: TOML tree -> struct config.
 *
 * Each section takes its defaults, its typed keys and its list of known
 * keys from the key table (config_schema.c); this file reads what a table
 * cannot say: sections that hold sections, names with duplicate checks,
 * address lists, Hickory's aliases and refusals, and the checks across
 * keys.  Every key nobody read is reported as unknown, with the nearest
 * known key as a suggestion.  Problems are collected with their positions,
 * sorted into file order and added to the caller's diag at the end, so an
 * operator sees them top to bottom no matter in which order the walk found
 * them.  Any problem means no config.
 *
 * Only the TSIG key files are read while loading (config_tsig.c: they are
 * small secrets that the update path needs as bytes); zone files, DNSSEC
 * keys and .mmdb databases are opened by their own modules, which report
 * their own errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* vasprintf, asprintf, explicit_bzero */
#endif
#include "core/conf/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/conf/conf_internal.h"
#include "core/conf/decimal.h"
#include "core/conf/diag.h"
#include "core/conf/toml.h"


char *config_resolve_path(const struct config *c, const char *rel)
{
	struct loader l = { 0 };
	if (!rel)
		return NULL;
	if (rel[0] == '/' || !c || !c->directory)
		return strdup(rel);
	return conf_path_join(&l, c->directory, rel);
}

/*
 * "192.0.2.0/24", "2001:db8::/32", or an address alone (a host).  Returns
 * NULL, or what was wrong.
 */
static const char *parse_prefix(const char *s, struct config_prefix *p)
{
	char buf[INET6_ADDRSTRLEN + 8];
	if (strlen(s) >= sizeof(buf))
		return "too long for an address";
	strcpy(buf, s);
	char *slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	memset(p, 0, sizeof(*p));
	if (inet_pton(AF_INET, buf, p->addr) == 1)
		p->family = 4;
	else if (inet_pton(AF_INET6, buf, p->addr) == 1)
		p->family = 6;
	else
		return "not an IPv4 or IPv6 address";
	unsigned long max = p->family == 4 ? 32 : 128, len = max;
	if (slash && !decimal_parse(slash + 1, max, &len))
		return p->family == 4 ? "the prefix length must be digits from 0 to 32"
		                      : "the prefix length must be digits from 0 to 128";
	p->len = (uint8_t)len;
	return NULL;
}

/* "192.0.2.2", "192.0.2.2:5300", "2001:db8::2", "[2001:db8::2]:5300". */
static bool parse_addr_port(const char *s, struct config_addr *a)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *port = NULL;
	if (strlen(s) >= sizeof(buf))
		return false;
	memset(a, 0, sizeof(*a));
	a->port = CONFIG_PORT_DEFAULT;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || (size_t)(close - s - 1) >= sizeof(buf))
			return false;
		memcpy(buf, s + 1, (size_t)(close - s - 1));
		buf[close - s - 1] = '\0';
		if (close[1] == ':')
			port = close + 2;
		else if (close[1])
			return false;
	} else {
		strcpy(buf, s);
		char *colon = strchr(buf, ':');
		if (colon && !strchr(colon + 1, ':')) {
			*colon = '\0';
			port = colon + 1;
		}
	}
	if (port) {
		unsigned long v;
		if (!decimal_parse(port, 65535, &v) || v < 1)
			return false;
		a->port = (uint16_t)v;
	}
	if (inet_pton(AF_INET, buf, a->addr) == 1)
		a->family = 4;
	else if (inet_pton(AF_INET6, buf, a->addr) == 1)
		a->family = 6;
	else
		return false;
	return true;
}

/* ---- sections ---- */

static void free_strs(char **v, size_t n);

static void load_directory(struct loader *l, struct toml_node *root)
{
	struct config *c = l->c;
	struct toml_node *n = conf_get_type(l, root, "directory", TOML_STRING);
	struct stat st;

	if (!n || n->u.s[0] == '\0') {
		if (n)
			conf_err_node(l, n, "expected a non-empty string for 'directory'");
		c->directory = conf_strdup(l, l->cfg_dir);
		return;
	}
	char *joined = n->u.s[0] == '/' ? conf_strdup(l, n->u.s) : conf_path_join(l, l->cfg_dir, n->u.s);
	if (!joined)
		return;
	char *abs = realpath(joined, NULL);
	if (!abs || stat(abs, &st) != 0 || !S_ISDIR(st.st_mode)) {
		int e = abs ? ENOTDIR : errno;
		conf_err_node(l, n, "expected an existing folder for 'directory', found '%s': %s", joined,
		              strerror(e));
		free(abs);
		c->directory = joined;   /* keeps later paths meaningful in messages */
		return;
	}
	free(joined);
	c->directory = abs;
}

static void load_listen(struct loader *l, struct toml_node *root)
{
	struct config *c = l->c;
	static const struct {
		const char *key;
		int af;
		const char *what;
	} fam[2] = {
		{ "listen_addrs_ipv4", AF_INET, "an IPv4" },
		{ "listen_addrs_ipv6", AF_INET6, "an IPv6" },
	};
	bool bad = false;
	for (int f = 0; f < 2; f++) {
		struct toml_node *present = toml_get(root, fam[f].key);
		struct toml_node *arr = conf_get_str_array(l, root, fam[f].key);
		uint8_t buf[16];
		if (!arr) {
			bad = bad || present;
			continue;
		}
		for (size_t i = 0; i < arr->u.arr.n; i++) {
			struct toml_node *it = arr->u.arr.items[i];
			if (inet_pton(fam[f].af, it->u.s, buf) != 1) {
				conf_err_node(l, it, "expected %s address in '%s', found '%s'", fam[f].what,
				              fam[f].key, it->u.s);
				bad = true;
			}
		}
		if (f == 0)
			c->listen_addrs_ipv4 = conf_copy_strs(l, arr, false, &c->n_listen_ipv4);
		else
			c->listen_addrs_ipv6 = conf_copy_strs(l, arr, false, &c->n_listen_ipv6);
	}
	if (bad || c->n_listen_ipv4 + c->n_listen_ipv6 > 0)
		return;
	/* Neither list: every address, both families, as Hickory does. */
	free_strs(c->listen_addrs_ipv4, c->n_listen_ipv4);
	free_strs(c->listen_addrs_ipv6, c->n_listen_ipv6);
	c->listen_addrs_ipv4 = calloc(1, sizeof(char *));
	c->listen_addrs_ipv6 = calloc(1, sizeof(char *));
	if (!c->listen_addrs_ipv4 || !c->listen_addrs_ipv6) {
		l->oom = true;
		return;
	}
	c->listen_addrs_ipv4[0] = conf_strdup(l, "0.0.0.0");
	c->listen_addrs_ipv6[0] = conf_strdup(l, "::");
	c->n_listen_ipv4 = c->listen_addrs_ipv4[0] != NULL;
	c->n_listen_ipv6 = c->listen_addrs_ipv6[0] != NULL;
}

/*
 * Hickory's other top-level keys.  Each is read, so none is reported as
 * unknown: the harmless settings are accepted, the rest refused with why.
 */
static void load_hickory_top(struct loader *l, struct toml_node *root)
{
	static const char *const networks[] = { "deny_networks", "allow_networks" };
	for (size_t i = 0; i < 2; i++) {
		struct toml_node *arr = conf_get_str_array(l, root, networks[i]);
		if (arr && arr->u.arr.n > 0)
			conf_err_node(l, arr, "'%s' (Hickory's client filter) is not supported: leave it out "
			              "or empty and filter clients with a firewall (nftables)", networks[i]);
	}
	static const char *const transports[] = { "disable_tcp", "disable_udp" };
	for (size_t i = 0; i < 2; i++) {
		bool off = false;
		if (conf_get_bool(l, root, transports[i], &off) && off)
			conf_err_node(l, toml_get(root, transports[i]),
			              "expected '%s' to be false: an authoritative server answers over both UDP "
			              "and TCP (RFC 7766 section 5)", transports[i]);
	}
	/* Hickory's encrypted transports and extras: named, so the message says why. */
	static const char *const unsupported[] = {
		"tls_cert", "tls_listen_port", "https_listen_port", "quic_listen_port",
		"h3_listen_port", "http_endpoint", "ssl_keylog_enabled", "prometheus_listen_addr",
		"metrics_listen_addr", NULL,
	};
	struct toml_node *dnstap = toml_get(root, "dnstap");
	if (dnstap)
		conf_err_node(l, dnstap, "expected [server] dnstap_socket = \"PATH\" (a Frame Streams "
		              "Unix socket) instead of Hickory's [dnstap] table");
	for (const char *const *k = unsupported; *k; k++) {
		struct toml_node *n = toml_get(root, *k);
		if (n)
			conf_err_node(l, n, "Hickory's '%s' is not supported: geoacme answers plain DNS over "
			              "UDP and TCP only; remove it", *k);
	}
}

static void load_top(struct loader *l, struct toml_node *root)
{
	struct config *c = l->c;

	load_listen(l, root);
	load_hickory_top(l, root);
	/* listen_port 0 lets the kernel pick a port: the integration tests read it from the log. */
	config_schema_read(l, "[top level]", root, c);
	/* The privilege drop is keyed on `user`; a lone `group` would be ignored. */
	if (c->group && !toml_get(root, "user"))
		conf_err_node(l, toml_get(root, "group"), "expected 'user' with 'group' (the privilege "
		              "drop needs a user)");
}

/* "127.0.0.1:9153" or "[::1]:9153": a numeric address and a port. */
static bool http_addr_ok(const char *s)
{
	char host[64];
	const char *port;
	uint8_t buf[16];
	int af = AF_INET;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (!end || end[1] != ':' || (size_t)(end - s - 1) >= sizeof(host))
			return false;
		memcpy(host, s + 1, (size_t)(end - s - 1));
		host[end - s - 1] = '\0';
		port = end + 2;
		af = AF_INET6;
	} else {
		const char *colon = strchr(s, ':');
		if (!colon || strrchr(s, ':') != colon || (size_t)(colon - s) >= sizeof(host))
			return false;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = '\0';
		port = colon + 1;
	}
	unsigned long p;
	return decimal_parse(port, 65535, &p) && inet_pton(af, host, buf) == 1;
}

static void load_http_listen(struct loader *l, struct toml_node *t)
{
	struct config *c = l->c;
	struct toml_node *arr = conf_get_str_array(l, t, "http_listen");
	if (!arr)
		return;
	for (size_t i = 0; i < arr->u.arr.n; i++) {
		struct toml_node *it = arr->u.arr.items[i];
		if (!http_addr_ok(it->u.s))
			conf_err_node(l, it, "expected \"address:port\" or \"[IPv6]:port\" in 'http_listen', "
			              "found '%s'", it->u.s);
	}
	if (arr->u.arr.n > 8)
		conf_err_node(l, arr, "expected at most 8 addresses in 'http_listen'");
	c->http_listen = conf_copy_strs(l, arr, false, &c->n_http_listen);
}

/* An interface name as the kernel takes it: 1 to 15 bytes, no '/', no
 * blank (IFNAMSIZ; dev_valid_name in the kernel). */
static bool ifname_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 15 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (; *s; s++)
		if (*s == '/' || *s == ':' || *s <= ' ' || *s == 0x7f)
			return false;
	return true;
}

static void load_xdp_listen(struct loader *l, struct toml_node *t)
{
	struct config *c = l->c;
	struct toml_node *arr = conf_get_str_array(l, t, "xdp_listen");
	if (!arr)
		return;
	for (size_t i = 0; i < arr->u.arr.n; i++) {
		struct toml_node *it = arr->u.arr.items[i];
		if (!ifname_ok(it->u.s))
			conf_err_node(l, it, "expected an interface name (1 to 15 characters, no '/', ':' "
			              "or blank) in 'xdp_listen', found '%s'", it->u.s);
		for (size_t k = 0; k < i; k++)
			if (strcmp(arr->u.arr.items[k]->u.s, it->u.s) == 0)
				conf_err_node(l, it, "expected each interface once in 'xdp_listen', found "
				              "'%s' twice", it->u.s);
	}
	if (arr->u.arr.n > 8)
		conf_err_node(l, arr, "expected at most 8 interfaces in 'xdp_listen'");
	c->xdp_listen = conf_copy_strs(l, arr, false, &c->n_xdp_listen);
}

/* ---- the control channel's socket (one block: control_socket_default() runs after the zones) ---- */

/* sun_path's size, less the NUL: longer paths cannot be bound. */
#define CONTROL_SOCKET_PATH_MAX 107

static char *folder_of(const char *path);

static void load_control_socket(struct loader *l, struct toml_node *t)
{
	struct config *c = l->c;
	struct toml_node *n = conf_get_type(l, t, "control_socket", TOML_STRING);
	if (!n)
		return;
	c->control_socket_pos = conf_pos(l, n);
	if (n->u.s[0] == '\0')
		return;   /* "": off */
	c->control_socket = config_resolve_path(c, n->u.s);
	if (!c->control_socket)
		l->oom = true;
	else if (strlen(c->control_socket) > CONTROL_SOCKET_PATH_MAX)
		conf_err_node(l, n, "expected a path of at most %d bytes for 'control_socket' (a "
		              "Unix socket's limit), found %zu: '%s'", CONTROL_SOCKET_PATH_MAX,
		              strlen(c->control_socket), c->control_socket);
}

/*
 * Left out: control.sock in the state directory, the folder of the first
 * zone database (journal_path, where a service can write: /var/lib/geoacme
 * under contrib/geoacme.service), else in `directory`.
 */
static void control_socket_default(struct loader *l, struct toml_node *root)
{
	struct config *c = l->c;
	struct toml_node *server = toml_get(root, "server");
	if (server && toml_get(server, "control_socket"))
		return;
	const char *dir = c->directory;
	char *db_dir = NULL;
	for (size_t i = 0; i < c->n_zones && !db_dir; i++)
		if (c->zones[i].journal_path)
			db_dir = folder_of(c->zones[i].journal_path);
	if (db_dir)
		dir = db_dir;
	if (dir)
		c->control_socket = conf_path_join(l, dir, "control.sock");
	free(db_dir);
}

/*
 * [server] source_ipv4 / source_ipv6: the address outgoing DNS leaves from,
 * per family (issue #21.1).  A wildcard ("0.0.0.0", "::") lets the kernel
 * pick; whether the address can be bound is judged at start and by check
 * (core/net/source.h), not here.
 */
static void load_sources(struct loader *l, struct toml_node *t)
{
	static const struct {
		const char *key;
		int af;
		const char *what;
	} fam[2] = {
		{ "source_ipv4", AF_INET, "an IPv4" },
		{ "source_ipv6", AF_INET6, "an IPv6" },
	};
	struct config *c = l->c;
	for (int f = 0; f < 2; f++) {
		struct toml_node *n = conf_get_type(l, t, fam[f].key, TOML_STRING);
		uint8_t buf[16];
		if (!n)
			continue;
		if (inet_pton(fam[f].af, n->u.s, buf) != 1) {
			conf_err_node(l, n, "expected %s address for '%s', found '%s'", fam[f].what,
			              fam[f].key, n->u.s);
			continue;
		}
		*(f == 0 ? &c->source_ipv4 : &c->source_ipv6) = conf_strdup(l, n->u.s);
		c->source_pos[f] = conf_pos(l, n);
	}
}

static void load_server(struct loader *l, struct toml_node *root)
{
	struct toml_node *t = conf_get_table(l, root, "server");
	if (!t)
		return;
	config_schema_read(l, "[server]", t, l->c);
	/* UDP is served by epoll only: an old config's "epoll"
	 * still loads, its "io_uring" is refused with why (doc/config.md). */
	struct toml_node *io = conf_get_type(l, t, "udp_io", TOML_STRING);
	if (io && strcmp(io->u.s, "io_uring") == 0)
		conf_err_node(l, io, "expected 'udp_io' to be \"epoll\" (io_uring was removed; "
		              "delete the key), found 'io_uring'");
	else if (io && strcmp(io->u.s, "epoll") != 0)
		conf_err_node(l, io, "expected 'udp_io' to be \"epoll\", found '%s'", io->u.s);
	load_http_listen(l, t);
	load_xdp_listen(l, t);
	load_control_socket(l, t);
	load_sources(l, t);
	config_schema_unknown(l, "[server]", t, "[server]");
}

static void load_dnssec(struct loader *l, struct toml_node *root)
{
	struct config *c = l->c;
	struct toml_node *t = conf_get_table(l, root, "dnssec");
	if (!t)
		return;
	config_schema_read(l, "[dnssec]", t, c);
	/* Refreshing only once validity is nearly over would let signatures lapse. */
	struct toml_node *val = toml_get(t, "signature_validity");
	struct toml_node *ref = toml_get(t, "signature_refresh");
	if (!conf_has_problem(l, val) && !conf_has_problem(l, ref) &&
	    c->sig_refresh_s >= c->sig_validity_s) {
		char a[32], b[32];
		conf_fmt_duration(c->sig_refresh_s * CONF_SECOND, a, sizeof(a));
		conf_fmt_duration(c->sig_validity_s * CONF_SECOND, b, sizeof(b));
		conf_err_node(l, ref ? ref : val,
		              "expected 'signature_refresh' (%s) to be less than 'signature_validity' (%s)",
		              a, b);
	}
	config_schema_unknown(l, "[dnssec]", t, "[dnssec]");
}

static void load_geo_health(struct loader *l);

static void load_geo(struct loader *l, struct toml_node *root)
{
	struct config_geo *g = &l->c->geo;
	struct toml_node *t = conf_get_table(l, root, "geo");
	if (!t)
		return;
	l->geo_health = conf_get_table(l, t, "health");
	if (l->geo_health)
		load_geo_health(l);
	struct toml_node *dbs = conf_get_str_array(l, t, "databases");
	if (dbs) {
		g->databases = conf_copy_strs(l, dbs, true, &g->n_databases);
		g->database_pos = calloc(dbs->u.arr.n ? dbs->u.arr.n : 1, sizeof(*g->database_pos));
		if (!g->database_pos)
			l->oom = true;
		for (size_t i = 0; g->database_pos && i < dbs->u.arr.n; i++)
			g->database_pos[i] = conf_pos(l, dbs->u.arr.items[i]);
	}
	config_schema_read(l, "[geo]", t, g);
	struct toml_node *dl = conf_get_type(l, t, "default_location", TOML_ARRAY);
	if (dl) {
		bool ok = dl->u.arr.n == 2;
		double v[2] = { 0, 0 };
		for (size_t i = 0; ok && i < 2; i++) {
			struct toml_node *it = dl->u.arr.items[i];
			double lim = i == 0 ? 90 : 180;
			if (it->type == TOML_INT)
				v[i] = (double)it->u.i;
			else if (it->type == TOML_FLOAT)
				v[i] = it->u.f;
			else
				ok = false;
			ok = ok && v[i] >= -lim && v[i] <= lim;
		}
		if (ok) {
			g->has_default_location = true;
			g->default_lat = v[0];
			g->default_lon = v[1];
		} else {
			conf_err_node(l, dl, "expected 'default_location' to be [latitude, longitude] within "
			              "[-90..90, -180..180]");
		}
	}
	config_schema_unknown(l, "[geo]", t, "[geo]");
}

/* http_status: integers (301) or classes ("2xx"), each 100..599. */
static void load_http_status(struct loader *l, struct toml_node *t, struct config_health *h)
{
	struct toml_node *arr = conf_get_type(l, t, "http_status", TOML_ARRAY);
	if (!arr)
		return;
	uint64_t bits[CONFIG_HTTP_STATUS_WORDS] = { 0 };
	bool ok = arr->u.arr.n > 0;
	for (size_t i = 0; i < arr->u.arr.n; i++) {
		struct toml_node *it = arr->u.arr.items[i];
		int lo = -1, hi = -1;
		if (it->type == TOML_INT && it->u.i >= 100 && it->u.i <= 599) {
			lo = hi = (int)it->u.i;
		} else if (it->type == TOML_STRING && strlen(it->u.s) == 3 && it->u.s[0] >= '1' &&
		           it->u.s[0] <= '5' && (it->u.s[1] == 'x' || it->u.s[1] == 'X') &&
		           (it->u.s[2] == 'x' || it->u.s[2] == 'X')) {
			lo = (it->u.s[0] - '0') * 100;
			hi = lo + 99;
		} else {
			conf_err_node(l, it, "expected an HTTP status code (100..599) or a class like \"2xx\" "
			              "in 'http_status'");
			ok = false;
			continue;
		}
		for (int c = lo; c <= hi; c++)
			bits[c / 64] |= (uint64_t)1 << (c % 64);
	}
	if (arr->u.arr.n == 0)
		conf_err_node(l, arr, "expected at least one status in 'http_status'");
	if (ok)
		memcpy(h->http_status, bits, sizeof(bits));
}

/*
 * One layer of probe settings: `[geo] health` first (the defaults), then
 * the site's own `[sites.health]`, each key of the second replacing the
 * first's.  Only what a table says is set here.
 */
/* Where `key` was read without a problem; else what an earlier layer said. */
static struct toml_node *read_at(struct loader *l, struct toml_node *t, const char *key,
                                 struct toml_node *prev)
{
	struct toml_node *n = toml_get(t, key);
	return n && !conf_has_problem(l, n) ? n : prev;
}

static void apply_health(struct loader *l, struct toml_node *t, struct config_health *h,
                         struct conf_health_at *at, const char *where)
{
	struct toml_node *n;
	config_schema_read(l, "[sites.health]", t, h);
	if ((n = toml_get(t, "port")))
		at->port = n;
	struct toml_node *path = conf_get_type(l, t, "http_path", TOML_STRING);
	if (path) {
		at->path = path;
		if (path->u.s[0] != '/') {
			conf_err_node(l, path, "expected 'http_path' to start with '/', found '%s'",
			              path->u.s);
		} else {
			free(h->http_path);
			h->http_path = conf_strdup(l, path->u.s);
		}
	}
	at->tls = read_at(l, t, "tls", at->tls);
	at->verify = read_at(l, t, "verify", at->verify);
	at->ca = read_at(l, t, "ca_file", at->ca);
	at->interval = read_at(l, t, "interval", at->interval);
	at->timeout = read_at(l, t, "timeout", at->timeout);
	if ((n = toml_get(t, "http_status"))) {
		at->status = n;
		load_http_status(l, t, h);
	}
	at->unknown += config_schema_unknown(l, "[sites.health]", t, where);
}

static void health_defaults(struct config_health *h)
{
	*h = (struct config_health){ .enabled = true };
	config_schema_defaults("[sites.health]", h);
	for (int c = 200; c < 400; c++)
		h->http_status[c / 64] |= (uint64_t)1 << (c % 64);
}

/* [geo] health, read once: each site starts from it. */
static void load_geo_health(struct loader *l)
{
	health_defaults(&l->health_base);
	struct conf_health_at *at = &l->health_base_at;
	apply_health(l, l->geo_health, &l->health_base, at, "[geo] health");
	if (at->ca && l->health_base.ca_file && access(l->health_base.ca_file, R_OK) != 0) {
		l->n_file_probs++;
		conf_err_node(l, at->ca, "cannot read CA file '%s': %s", l->health_base.ca_file,
		              strerror(errno));
	}
}

/*
 * A site's probe: the `[geo] health` defaults (when given, every site is
 * checked), then its own `[sites.health]`.  Port 443 means TLS unless
 * `tls = false` asks for a plain TCP connect: an HTTP request or a bare
 * connect to an HTTPS port that skipped the handshake would prove little.
 */
static void load_health(struct loader *l, struct toml_node *site_t, struct config_site *s)
{
	struct config_health *h = &s->health;
	struct toml_node *t = conf_get_table(l, site_t, "health");
	struct conf_health_at at = l->health_base_at;
	if (!t && !l->geo_health)
		return;
	if (l->geo_health) {
		uint64_t st[CONFIG_HTTP_STATUS_WORDS];
		memcpy(st, l->health_base.http_status, sizeof(st));
		*h = l->health_base;
		h->http_path = l->health_base.http_path ? conf_strdup(l, l->health_base.http_path) : NULL;
		h->http_host = l->health_base.http_host ? conf_strdup(l, l->health_base.http_host) : NULL;
		h->ca_file = l->health_base.ca_file ? conf_strdup(l, l->health_base.ca_file) : NULL;
	} else {
		health_defaults(h);
	}
	if (t)
		apply_health(l, t, h, &at, "[sites.health]");
	if (!h->http_host && s->name)
		h->http_host = conf_strdup(l, s->name);
	if (!at.port && !at.unknown)
		conf_missing(l, t ? t : site_t, "port", t ? "[sites.health]" : "[sites.health] or [geo] health");
	if (!at.tls)
		h->tls = h->port == 443;
	/* A misspelt key has its did-you-mean; what depends on it is not judged. */
	if (at.unknown)
		return;
	if (!h->tls && (at.verify || at.ca))
		conf_err_node(l, at.tls ? at.tls : at.verify ? at.verify : at.ca,
		              "expected 'tls = true' with '%s' (it applies to TLS checks only)",
		              at.verify ? "verify" : "ca_file");
	if (at.status && !h->http_path)
		conf_err_node(l, at.status, "expected 'http_path' with 'http_status' (statuses need an HTTP "
		              "request)");
	if ((at.interval || at.timeout) && h->timeout_ms > h->interval_ms) {
		char a[32], b[32];
		conf_fmt_duration(h->timeout_ms, a, sizeof(a));
		conf_fmt_duration(h->interval_ms, b, sizeof(b));
		conf_err_node(l, at.timeout ? at.timeout : at.interval,
		              "expected 'timeout' (%s) to be at most 'interval' (%s)", a, b);
	}
	if (h->tls && at.ca && at.ca != l->health_base_at.ca && access(h->ca_file, R_OK) != 0) {
		l->n_file_probs++;
		conf_err_node(l, at.ca, "cannot read CA file '%s': %s", h->ca_file, strerror(errno));
	}
}

static void load_sites(struct loader *l, struct toml_node *root)
{
	struct config *c = l->c;
	void *room;
	struct toml_node *arr = conf_get_tables_alloc(l, root, "sites", "[[sites]]",
	                                              sizeof(*c->sites), &room);
	if (!arr)
		return;
	c->sites = room;
	c->n_sites = arr->u.arr.n;
	for (size_t i = 0; i < arr->u.arr.n; i++) {
		struct toml_node *t = arr->u.arr.items[i];
		struct config_site *s = &c->sites[i];
		struct toml_node *n;
		s->pos = conf_pos(l, t);
		config_schema_defaults("[[sites]]", s);
		s->health = (struct config_health){
			.interval_ms = 10000, .timeout_ms = 3000, .rise = 2, .fall = 3,
		};
		config_schema_read(l, "[[sites]]", t, s);
		for (size_t j = 0; s->name && j < i; j++) {
			if (c->sites[j].name && strcmp(c->sites[j].name, s->name) == 0) {
				conf_err_node(l, toml_get(t, "name"), "site '%s' is defined twice (first at "
				              "line %d)", s->name, c->sites[j].pos.line);
				break;
			}
		}
		bool addr_err = false;
		if ((n = conf_get_type(l, t, "ipv4", TOML_STRING))) {
			s->has_v4 = inet_pton(AF_INET, n->u.s, s->v4) == 1;
			if (!s->has_v4) {
				conf_err_node(l, n, "expected an IPv4 address for 'ipv4', found '%s'", n->u.s);
				addr_err = true;
			}
		} else {
			addr_err = addr_err || toml_get(t, "ipv4");
		}
		if ((n = conf_get_type(l, t, "ipv6", TOML_STRING))) {
			s->has_v6 = inet_pton(AF_INET6, n->u.s, s->v6) == 1;
			if (!s->has_v6) {
				conf_err_node(l, n, "expected an IPv6 address for 'ipv6', found '%s'", n->u.s);
				addr_err = true;
			}
		} else {
			addr_err = addr_err || toml_get(t, "ipv6");
		}
		if (!addr_err && !s->has_v4 && !s->has_v6)
			conf_err_node(l, t, "expected 'ipv4' or 'ipv6' in [[sites]]");
		load_health(l, t, s);
		config_schema_unknown(l, "[[sites]]", t, "[[sites]]");
	}
}

static void load_zone_keys(struct loader *l, struct toml_node *zt, struct config_zone *z)
{
	void *room;
	struct toml_node *arr = conf_get_tables_alloc(l, zt, "keys", "[[zones.keys]]",
	                                              sizeof(*z->keys), &room);
	if (!arr)
		return;
	z->keys = room;
	for (size_t i = 0; i < arr->u.arr.n; i++) {
		struct toml_node *t = arr->u.arr.items[i];
		struct config_zone_key k = { .pos = conf_pos(l, t) };
		bool signing = true, b;

		/*
		 * Hickory keys that only authenticate SIG(0) updates do not sign the
		 * zone; geoacme has no SIG(0), so such keys are skipped, whatever
		 * their algorithm.
		 */
		if (conf_get_bool(l, t, "is_zone_signing_key", &b) && !b)
			signing = false;
		struct toml_node *purpose = conf_get_type(l, t, "purpose", TOML_STRING);
		if (purpose) {
			if (strcmp(purpose->u.s, "ZoneUpdateAuth") == 0)
				signing = false;
			else if (strcmp(purpose->u.s, "ZoneSigning") != 0)
				conf_err_node(l, purpose, "expected 'purpose' to be \"ZoneSigning\" or "
				              "\"ZoneUpdateAuth\", found '%s'", purpose->u.s);
		}
		struct toml_node *pw = toml_get(t, "password");
		if (pw)
			conf_err_node(l, pw, "expected no 'password': encrypted keys are not supported, "
			              "store the key unencrypted");

		struct toml_node *alg = conf_get_type(l, t, "algorithm", TOML_STRING);
		if (signing && alg && strcasecmp(alg->u.s, "ECDSAP256SHA256") != 0)
			conf_err_node(l, alg, "expected 'algorithm' to be \"ECDSAP256SHA256\" (the only one "
			              "supported), found '%s'", alg->u.s);
		/* key_path; is_zone_update_auth and signer_name are read and ignored. */
		config_schema_read(l, "[[zones.keys]]", t, &k);
		config_schema_unknown(l, "[[zones.keys]]", t, "[[zones.keys]]");
		if (!signing) {
			free(k.key_path);
			continue;
		}
		k.algorithm = conf_strdup(l, "ECDSAP256SHA256");
		z->keys[z->n_keys++] = k;
	}
}

/*
 * Reads `key` or its older Hickory spelling `old` (zone_file_path,
 * journal_file_path) as a path.
 */
static struct toml_node *get_path_alias(struct loader *l, struct toml_node *t, const char *key,
                                        const char *old, char **out)
{
	struct toml_node *a = toml_get(t, key), *b = toml_get(t, old);
	if (a && b) {
		conf_err_node(l, b, "expected only one of '%s' and '%s'", key, old);
		return a;
	}
	conf_get_path(l, t, a ? key : old, out);
	return a ? a : b;
}

/* [zones.stores]; returns where allow_update was set to true, if it was. */
static struct toml_node *load_store(struct loader *l, struct toml_node *zt, struct config_zone *z)
{
	const char *where = "[zones.stores]";
	struct toml_node *t = toml_get(zt, "stores");
	if (!t)
		return NULL;
	/* Hickory also takes a list of stores; we serve from exactly one. */
	if (t->type == TOML_ARRAY) {
		if (t->u.arr.n != 1 || t->u.arr.items[0]->type != TOML_TABLE) {
			conf_err_node(l, t, "expected exactly one store in [[zones.stores]], found %zu",
			              t->u.arr.n);
			return NULL;
		}
		t = t->u.arr.items[0];
	} else if (t->type != TOML_TABLE) {
		conf_err_node(l, t, "expected a table for 'stores', found %s", toml_type_name(t->type));
		return NULL;
	}

	/* type, and the ACME zone's limits (their defaults are set with the zone's). */
	config_schema_read(l, where, t, z);

	struct toml_node *upd = NULL;
	bool b;
	if (conf_get_bool(l, t, "allow_update", &b) && b) {
		z->allow_update = true;
		upd = toml_get(t, "allow_update");
	}
	char *zone_path = NULL, *journal = NULL;
	struct toml_node *zp = get_path_alias(l, t, "zone_path", "zone_file_path", &zone_path);
	struct toml_node *jp = get_path_alias(l, t, "journal_path", "journal_file_path", &journal);
	bool sqlite = z->store_type && strcmp(z->store_type, "sqlite") == 0;
	bool file = z->store_type && strcmp(z->store_type, "file") == 0;
	if (zp)
		z->file_pos = conf_pos(l, zp);
	if (sqlite) {
		z->journal_path = journal;
		z->zone_path = zone_path;
		journal = zone_path = NULL;
		if (!jp)
			conf_err_node(l, t, "expected 'journal_path' in %s (type = \"sqlite\")", where);
	} else if (file) {
		if (jp)
			conf_err_node(l, jp, "expected no 'journal_path' in %s (type = \"file\")", where);
		if (zp) {
			free(z->file);
			z->file = zone_path;
			zone_path = NULL;
		} else if (!z->file) {
			conf_err_node(l, t, "expected 'zone_path' in %s (type = \"file\")", where);
		}
	}
	free(zone_path);
	free(journal);

	config_tsig_load(l, t, z);
	config_schema_unknown(l, where, t, where);
	return upd;
}

/* ---- [zones.key_policy]: automatic key rollover (doc/dnssec.md) ---- */

/*
 * One rollover, in the waits the config alone fixes (RFC 7583 section 3.3,
 * double signature): the new key's DNSKEY and signatures reach the caches
 * (dnskey_ttl + delay), the new DS theirs (its TTL, read from the parent,
 * is not known here: delay alone), the old DNSKEY leaves them (dnskey_ttl
 * + delay).  The zone's longest TTL and the DS TTL only lengthen the real
 * waits, and the next rollover never starts before the last one ended.
 */
uint32_t config_key_policy_min_lifetime(uint32_t dnskey_ttl_s, uint32_t propagation_delay_s)
{
	uint64_t v = 2ull * dnskey_ttl_s + 3ull * propagation_delay_s;
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* [zones.key_policy] durations, in whole seconds. */
static bool kp_seconds(struct loader *l, struct toml_node *t, const char *key, uint64_t lo_s,
                       uint64_t hi_s, uint32_t *out)
{
	uint64_t ms;
	if (!conf_get_duration(l, t, key, lo_s * CONF_SECOND, hi_s * CONF_SECOND, true, &ms))
		return false;
	*out = (uint32_t)(ms / CONF_SECOND);
	return true;
}

static void load_key_policy(struct loader *l, struct toml_node *zt, struct config_zone *z)
{
	static const char *const keys[] = {
		"lifetime", "dnskey_ttl", "propagation_delay", "key_dir", "parent", "ds_push",
		"ds_push_key", NULL,
	};
	const char *where = "[zones.key_policy]";
	struct config_key_policy *kp = &z->key_policy;
	struct toml_node *t = conf_get_table(l, zt, "key_policy");
	if (!t)
		return;
	kp->present = true;
	kp->pos = conf_pos(l, t);
	kp->dnskey_ttl_s = 3600;
	kp->propagation_delay_s = 3600;
	if (z->secondary)
		conf_err_node(l, t, "expected no %s in a secondary zone (its keys are the primary's)",
		         where);
	kp_seconds(l, t, "dnskey_ttl", 1, 7 * 86400, &kp->dnskey_ttl_s);
	kp_seconds(l, t, "propagation_delay", 0, 7 * 86400, &kp->propagation_delay_s);
	struct toml_node *lt = toml_get(t, "lifetime");
	if (kp_seconds(l, t, "lifetime", 0, 100ull * 365 * 86400, &kp->lifetime_s) &&
	    kp->lifetime_s) {
		uint32_t min = config_key_policy_min_lifetime(kp->dnskey_ttl_s,
		                                              kp->propagation_delay_s);
		char a[32], b[32];
		if (kp->lifetime_s < min) {
			conf_fmt_duration(kp->lifetime_s * CONF_SECOND, a, sizeof(a));
			conf_fmt_duration(min * CONF_SECOND, b, sizeof(b));
			conf_err_node(l, lt, "expected 'lifetime' of at least %s (one rollover: 2 x "
			         "dnskey_ttl + 3 x propagation_delay), or \"0\" to never roll; found %s",
			         b, a);
		}
	}
	if (!conf_get_path(l, t, "key_dir", &kp->key_dir) && !toml_get(t, "key_dir"))
		conf_missing(l, t, "key_dir", where);

	struct toml_node *par = conf_get_str_array(l, t, "parent");
	if (par && par->u.arr.n) {
		kp->parent = calloc(par->u.arr.n, sizeof(*kp->parent));
		if (!kp->parent)
			l->oom = true;
		for (size_t j = 0; kp->parent && j < par->u.arr.n; j++) {
			struct toml_node *it = par->u.arr.items[j];
			if (!parse_addr_port(it->u.s, &kp->parent[kp->n_parent]))
				conf_err_node(l, it, "expected an address with an optional port in 'parent' "
				         "(\"192.0.2.53:53\"), found '%s'", it->u.s);
			else
				kp->n_parent++;
		}
	} else if (!toml_get(t, "parent") || par) {
		/* The old key is withdrawn only once every parent server serves the new DS. */
		conf_err_node(l, par ? par : t, "expected 'parent' (at least one address of the parent "
		         "zone's servers, asked for the DS) in %s", where);
	}
	struct toml_node *push = conf_get_type(l, t, "ds_push", TOML_STRING);
	if (push && !parse_addr_port(push->u.s, &kp->ds_push))
		conf_err_node(l, push, "expected an address with an optional port in 'ds_push' "
		         "(\"192.0.2.53:53\"), found '%s'", push->u.s);
	else if (push)
		kp->has_ds_push = true;
	struct toml_node *pk = conf_get_table(l, t, "ds_push_key");
	if (pk) {
		kp->has_ds_push_key = true;
		config_tsig_load_outbound(l, pk, &kp->ds_push_key, "ds_push_key");
		if (!toml_get(t, "ds_push"))
			conf_err_node(l, pk, "expected 'ds_push' with 'ds_push_key' (the key signs the "
			         "UPDATE sent there)");
	}
	conf_check_unknown(l, t, keys, where);
}

static void load_zones(struct loader *l, struct toml_node *root)
{
	const char *where = "[[zones]]";
	struct config *c = l->c;
	void *room;
	struct toml_node *arr = conf_get_tables_alloc(l, root, "zones", "[[zones]]",
	                                              sizeof(*c->zones), &room);
	if (!arr)
		return;
	c->zones = room;
	c->n_zones = arr->u.arr.n;
	for (size_t i = 0; i < arr->u.arr.n; i++) {
		struct toml_node *t = arr->u.arr.items[i];
		struct config_zone *z = &c->zones[i];
		bool b;
		z->pos = conf_pos(l, t);
		config_schema_defaults(where, z);
		config_schema_defaults("[zones.stores]", z);

		struct toml_node *n = conf_get_type(l, t, "zone", TOML_STRING);
		if (n && !conf_valid_name(n->u.s)) {
			conf_err_node(l, n, "expected a domain name for 'zone', found '%s'", n->u.s);
		} else if (n) {
			z->zone = conf_strdup(l, n->u.s);
			for (size_t j = 0; j < i; j++) {
				if (c->zones[j].zone && conf_name_eq(c->zones[j].zone, n->u.s)) {
					conf_err_node(l, n, "zone '%s' is defined twice (first at line %d)", n->u.s,
					              c->zones[j].pos.line);
					break;
				}
			}
		} else if (!toml_get(t, "zone")) {
			conf_missing(l, t, "zone", where);
		}

		struct toml_node *ty = conf_get_type(l, t, "zone_type", TOML_STRING);
		if (ty && (strcmp(ty->u.s, "Secondary") == 0 || strcmp(ty->u.s, "Slave") == 0))
			z->secondary = true;
		else if (ty && strcmp(ty->u.s, "Primary") != 0 && strcmp(ty->u.s, "Master") != 0)
			conf_err_node(l, ty, "expected 'zone_type' to be \"Primary\" or \"Secondary\" "
			              "(\"Master\" and \"Slave\" are their old names), found '%s'", ty->u.s);
		z->zone_type = conf_strdup(l, z->secondary ? "Secondary" : "Primary");
		struct toml_node *prim = conf_get_str_array(l, t, "primaries");
		if (prim && !z->secondary) {
			conf_err_node(l, prim, "expected 'primaries' only with zone_type = \"Secondary\"");
		} else if (prim && prim->u.arr.n) {
			z->primaries = calloc(prim->u.arr.n, sizeof(*z->primaries));
			if (!z->primaries)
				l->oom = true;
			for (size_t j = 0; z->primaries && j < prim->u.arr.n; j++) {
				struct toml_node *it = prim->u.arr.items[j];
				if (!parse_addr_port(it->u.s, &z->primaries[z->n_primaries]))
					conf_err_node(l, it, "expected an address with an optional port in "
					              "'primaries' (\"192.0.2.1:53\"), found '%s'", it->u.s);
				else
					z->n_primaries++;
			}
		}
		if (z->secondary && (!prim || !prim->u.arr.n))
			conf_err_node(l, ty, "expected 'primaries' (at least one address) for a secondary zone");
		static const char *const caps[] = { "xfr_in_max_records", "xfr_in_max_bytes" };
		for (size_t j = 0; j < 2; j++) {
			struct toml_node *cap = toml_get(t, caps[j]);
			if (cap && !z->secondary)
				conf_err_node(l, cap, "expected '%s' only with zone_type = \"Secondary\"", caps[j]);
		}
		struct toml_node *upd = NULL;
		if (conf_get_bool(l, t, "allow_update", &b) && b) {
			z->allow_update = true;
			upd = toml_get(t, "allow_update");
		}
		/* Hickory's older boolean: true is AllowAll; axfr_policy, read next, wins. */
		if (conf_get_bool(l, t, "allow_axfr", &b) && b)
			z->axfr_policy = AXFR_ALLOW_ALL;
		/* file, publish_cds, enable_dnssec (ignored: signing follows [[zones.keys]]),
		 * axfr_policy, the journal's caps and a secondary's transfer caps. */
		config_schema_read(l, where, t, z);
		struct toml_node *file = toml_get(t, "file");
		if (z->file)
			z->file_pos = conf_pos(l, file);
		struct toml_node *from = conf_get_str_array(l, t, "axfr_from");
		if (from && from->u.arr.n == 0) {
			conf_err_node(l, from, "expected at least one address in 'axfr_from' (leave it out to "
			              "allow any address the policy allows)");
		} else if (from) {
			z->axfr_from = calloc(from->u.arr.n, sizeof(*z->axfr_from));
			if (!z->axfr_from)
				l->oom = true;
			for (size_t j = 0; z->axfr_from && j < from->u.arr.n; j++) {
				struct toml_node *it = from->u.arr.items[j];
				const char *why = parse_prefix(it->u.s, &z->axfr_from[z->n_axfr_from]);
				if (why)
					conf_err_node(l, it, "expected an address or address/prefix in 'axfr_from', "
					              "found '%s': %s", it->u.s, why);
				else
					z->n_axfr_from++;
			}
		}
		struct toml_node *nt = conf_get_str_array(l, t, "notify");
		if (nt && nt->u.arr.n) {
			z->notify = calloc(nt->u.arr.n, sizeof(*z->notify));
			if (!z->notify)
				l->oom = true;
			for (size_t j = 0; z->notify && j < nt->u.arr.n; j++) {
				struct toml_node *it = nt->u.arr.items[j];
				if (!parse_addr_port(it->u.s, &z->notify[z->n_notify]))
					conf_err_node(l, it, "expected an address with an optional port in 'notify' "
					              "(\"192.0.2.2:53\", \"[2001:db8::2]:53\"), found '%s'", it->u.s);
				else
					z->n_notify++;
			}
		}

		struct toml_node *stores = toml_get(t, "stores");
		struct toml_node *store_upd = load_store(l, t, z);
		if (!upd)
			upd = store_upd;
		bool sqlite = z->store_type && strcmp(z->store_type, "sqlite") == 0;
		if (sqlite && z->file) {
			/*
			 * Hickory loads `file` as a second store that is never consulted;
			 * here it seeds the database when zone_path is not given.
			 */
			if (!z->zone_path)
				z->zone_path = z->file;
			else
				free(z->file);
			z->file = NULL;
		}
		if (z->secondary) {
			/* Served as received: the copy lives in SQLite, nothing else feeds it. */
			if (file)
				conf_err_node(l, file, "expected no 'file' in a secondary zone (its records "
				              "come from the primaries)");
			if (!sqlite)
				conf_err_node(l, t, "expected [zones.stores] type = \"sqlite\" with "
				              "'journal_path' for a secondary zone (where the copy is kept)");
			if (upd)
				conf_err_node(l, upd, "expected no 'allow_update' in a secondary zone (UPDATEs "
				              "go to the primary; a secondary refuses them)");
			if (toml_get(t, "keys") || toml_get(t, "geo"))
				conf_err_node(l, t, "expected no [[zones.keys]] or [[zones.geo]] in a secondary "
				              "zone (it is served as received, signatures included)");
		} else if (!file && !stores) {
			conf_err_node(l, t, "expected 'file' or [zones.stores] in %s", where);
		}
		if (upd && z->store_type && !sqlite)
			conf_err_node(l, upd, "expected [zones.stores] type = \"sqlite\" for 'allow_update'");
		else if (upd && !stores)
			conf_err_node(l, upd, "expected [zones.stores] type = \"sqlite\" for 'allow_update'; "
			              "a zone file alone cannot take updates");

		config_zone_geo_load(l, t, z);
		load_zone_keys(l, t, z);
		load_key_policy(l, t, z);
		if (z->axfr_policy == AXFR_ALLOW_SIGNED) {
			bool any = false;
			for (size_t j = 0; j < z->n_tsig_keys; j++)
				any = any || z->tsig_keys[j].allow_axfr;
			if (!any)
				conf_err_node(l, toml_get(t, "axfr_policy"), "expected a [[zones.stores.tsig_keys]] "
				              "entry with allow_axfr for axfr_policy = \"AllowSigned\"");
		}
		config_schema_unknown(l, where, t, where);
	}
}

/* Checks that need several sections at once. */
static void cross_checks(struct loader *l)
{
	struct config *c = l->c;
	for (size_t i = 0; i < c->n_zones; i++) {
		struct config_zone *z = &c->zones[i];
		if (!z->n_geo)
			continue;
		struct config_pos p = z->geo[0].pos;
		if (c->n_sites == 0)
			conf_err_at(l, config_file_of(l->c, p), p.line, p.col, "expected at least one [[sites]] entry for the geo "
			            "names of zone '%s'", z->zone ? z->zone : "");
		if (c->geo.n_databases == 0)
			conf_err_at(l, config_file_of(l->c, p), p.line, p.col, "expected [geo] databases for the geo names of zone "
			            "'%s'", z->zone ? z->zone : "");
	}
}

/* ---- entry points ---- */

static char *folder_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	if (!slash)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return NULL;
	char *abs = realpath(dir, NULL);
	if (abs) {
		free(dir);
		return abs;
	}
	return dir;
}

static struct config *load(const char *path, struct diag *d, bool keep_if_files_only)
{
	struct loader l = { .file = path };
	/* The file, and the files it includes laid under it (toml.h). */
	struct toml_node *root = toml_load(path, d);
	if (!root)
		return NULL;

	struct config *c = calloc(1, sizeof(*c));
	l.cfg_dir = folder_of(path);
	if (!c || !l.cfg_dir) {
		diag_add(d, path, 0, 0, "out of memory while loading the configuration");
		free(c);
		free(l.cfg_dir);
		toml_free(root);
		return NULL;
	}
	l.c = c;
	/* The defaults (the table's); what the file says replaces them. */
	config_schema_defaults("[top level]", c);
	config_schema_defaults("[server]", c);
	config_schema_defaults("[dnssec]", c);
	c->path = conf_strdup(&l, path);

	load_directory(&l, root);
	load_top(&l, root);
	load_server(&l, root);
	load_dnssec(&l, root);
	load_geo(&l, root);
	load_sites(&l, root);
	load_zones(&l, root);
	control_socket_default(&l, root);
	cross_checks(&l);
	config_schema_unknown(&l, "[top level]", root, "[top level]");

	conf_sort_problems(&l);
	for (size_t i = 0; i < l.n_probs; i++) {
		diag_add(d, l.probs[i].file, l.probs[i].line, l.probs[i].col, "%s", l.probs[i].msg);
		free(l.probs[i].msg);
	}
	toml_free(root);   /* after the messages: they point at its file names */
	if (l.oom)
		diag_add(d, path, 0, 0, "out of memory while loading the configuration");
	free(l.health_base.http_path);
	free(l.health_base.http_host);
	free(l.health_base.ca_file);
	bool failed = l.n_probs > 0 || l.oom;
	if (keep_if_files_only && !l.oom && l.n_probs == l.n_file_probs)
		failed = false;
	free(l.probs);
	free(l.cfg_dir);
	if (failed) {
		config_free(c);
		return NULL;
	}
	return c;
}

struct config *config_load(const char *path, struct diag *d)
{
	return load(path, d, false);
}

struct config *config_load_all(const char *path, struct diag *d)
{
	return load(path, d, true);
}

static void free_strs(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void config_free(struct config *c)
{
	if (!c)
		return;
	free(c->path);
	free(c->directory);
	free_strs(c->listen_addrs_ipv4, c->n_listen_ipv4);
	free_strs(c->http_listen, c->n_http_listen);
	free_strs(c->xdp_listen, c->n_xdp_listen);
	free_strs(c->listen_addrs_ipv6, c->n_listen_ipv6);
	free(c->user);
	free(c->group);
	free(c->pid_file);
	free(c->nsid);
	free(c->source_ipv4);
	for (size_t i = 0; i < c->n_files; i++)
		free(c->files[i]);
	free(c->files);
	free(c->source_ipv6);
	free(c->dnstap_socket);
	free(c->control_socket);
	for (size_t i = 0; i < c->n_sites; i++) {
		free(c->sites[i].name);
		free(c->sites[i].health.http_path);
		free(c->sites[i].health.http_host);
		free(c->sites[i].health.ca_file);
	}
	free(c->sites);
	free_strs(c->geo.databases, c->geo.n_databases);
	free(c->geo.database_pos);
	free(c->geo.lookup_path);
	for (size_t i = 0; i < c->n_zones; i++) {
		struct config_zone *z = &c->zones[i];
		free(z->zone);
		free(z->zone_type);
		free(z->file);
		free(z->store_type);
		free(z->journal_path);
		free(z->zone_path);
		for (size_t j = 0; j < z->n_tsig_keys; j++) {
			struct config_tsig_key *k = &z->tsig_keys[j];
			free(k->name);
			free(k->key_file);
			explicit_bzero(k->secret, sizeof(k->secret));
			free(k->allow_types);
			free_strs(k->allow_names, k->n_allow_names);
		}
		free(z->tsig_keys);
		for (size_t j = 0; j < z->n_keys; j++) {
			free(z->keys[j].algorithm);
			free(z->keys[j].key_path);
		}
		free(z->keys);
		free(z->key_policy.key_dir);
		free(z->key_policy.parent);
		free(z->key_policy.ds_push_key.name);
		free(z->key_policy.ds_push_key.key_file);
		explicit_bzero(z->key_policy.ds_push_key.secret, sizeof(z->key_policy.ds_push_key.secret));
		for (size_t j = 0; j < z->n_geo; j++) {
			free(z->geo[j].name);
			free_strs(z->geo[j].sites, z->geo[j].n_sites);
			free_strs(z->geo[j].https.alpn, z->geo[j].https.n_alpn);
			free(z->geo[j].https.site_names);
			free(z->geo[j].https.ech);
			free_strs(z->geo[j].fallback_sites, z->geo[j].n_fallback_sites);
		}
		free(z->axfr_from);
		free(z->primaries);
		free(z->notify);
		free(z->geo);
	}
	free(c->zones);
	free(c);
}
