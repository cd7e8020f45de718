/* SPDX-License-Identifier: MIT */
/*
 * The query path allocates nothing: malloc, calloc and realloc are wrapped
 * (-Wl,--wrap) and counted while warm queries of every class are answered
 * through the same entry point the network layer calls (answer_handle).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "cmd/runtime.h"
#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/wire/arena.h"
#include "core/wire/dname.h"
#include "core/wire/query.h"
#include "core/zone/answer.h"
#include "core/zone/zone_table.h"
#include "tests/unit/check.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);

static int counting;
static unsigned long allocations;

void *__wrap_malloc(size_t n)
{
	if (counting)
		allocations++;
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
	if (counting)
		allocations++;
	return __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
	if (counting)
		allocations++;
	return __real_realloc(p, n);
}

/* Builds a query message: name, type, optional EDNS with DO and ECS. */
static size_t make_query(uint8_t *buf, const char *name, uint16_t type, bool edns, bool do_bit,
                         const char *ecs_v4, uint8_t ecs_prefix)
{
	uint8_t wire[DNAME_MAX];
	int len = dname_from_str(name, wire);
	size_t n = 0;
	memcpy(buf, "\x12\x34\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00", 12);
	n = 12;
	memcpy(buf + n, wire, (size_t)len);
	n += (size_t)len;
	buf[n++] = (uint8_t)(type >> 8);
	buf[n++] = (uint8_t)type;
	buf[n++] = 0;
	buf[n++] = 1;
	if (!edns)
		return n;
	buf[11] = 1;
	size_t opt_len = ecs_v4 ? 4 + 4 + ((size_t)ecs_prefix + 7) / 8 : 0;
	uint8_t opt[] = { 0, 0, 41, 0x04, 0xd0, 0, 0, (uint8_t)(do_bit ? 0x80 : 0), 0, 0,
		          (uint8_t)opt_len };
	memcpy(buf + n, opt, sizeof(opt));
	n += sizeof(opt);
	if (ecs_v4) {
		uint8_t addr[4];
		inet_pton(AF_INET, ecs_v4, addr);
		uint8_t hdr[] = { 0, 8, 0, (uint8_t)(4 + (ecs_prefix + 7) / 8), 0, 1, ecs_prefix, 0 };
		memcpy(buf + n, hdr, sizeof(hdr));
		n += sizeof(hdr);
		memcpy(buf + n, addr, ((size_t)ecs_prefix + 7) / 8);
		n += ((size_t)ecs_prefix + 7) / 8;
	}
	return n;
}

static const char zone_text[] =
	"$ORIGIN example.com.\n$TTL 3600\n"
	"@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300\n"
	"@ IN NS ns1\nns1 IN A 192.0.2.53\nwww IN A 192.0.2.80\nmail IN A 192.0.2.25\n"
	"blog IN CNAME alias\nalias IN CNAME www\n";

static const char config_text[] =
	"listen_addrs_ipv4 = [\"127.0.0.1\"]\nlisten_port = 0\n"
	"[geo]\ndatabases = [\"city.mmdb\"]\ndefault_location = [48.86, 2.35]\n"
	"[[sites]]\nname = \"paris\"\nipv4 = \"192.0.2.1\"\nipv6 = \"2001:db8::1\"\nlatitude = 48.88\nlongitude = 2.22\n"
	"[[sites]]\nname = \"nuremberg\"\nipv4 = \"192.0.2.2\"\nipv6 = \"2001:db8::2\"\nlatitude = 49.45\nlongitude = 11.08\n"
	"[[sites]]\nname = \"ashburn\"\nipv4 = \"192.0.2.3\"\nlatitude = 39.04\nlongitude = -77.49\n"
	"[[sites]]\nname = \"sydney\"\nipv4 = \"192.0.2.7\"\nipv6 = \"2001:db8::7\"\nlatitude = -33.87\nlongitude = 151.21\n"
	"[[zones]]\nzone = \"example.com\"\nzone_type = \"Primary\"\nfile = \"example.com.zone\"\n"
	"[[zones.geo]]\nname = \"geo\"\n"
	"https = { alpn = [\"h3\", \"h2\"], site_names = \"sites\" }\n"
	"[[zones.keys]]\nalgorithm = \"ECDSAP256SHA256\"\nkey_path = \"example.com.pem\"\n";

/* A temporary directory with the zone, a fresh key and a fixture database. */
static int setup(char *dir, char *config, size_t cap)
{
	const char *fixtures = getenv("FIXTURES");
	char cmd[1024];
	if (!fixtures || !mkdtemp(dir))
		return -1;
	snprintf(config, cap, "%s/config.toml", dir);
	char path[512];
	snprintf(path, sizeof(path), "%s/example.com.zone", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(zone_text, f);
	fclose(f);
	f = fopen(config, "w");
	if (!f)
		return -1;
	fputs(config_text, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
	         "cd %s && umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 "
	         "-out example.com.pem 2>/dev/null && perl %s/make_mmdb.pl --layout city --out %s",
	         dir, fixtures, dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	char dir[] = "/tmp/geoacme-noalloc-XXXXXX";
	char config[600];
	if (setup(dir, config, sizeof(config)) < 0) {
		fprintf(stderr, "setup failed (FIXTURES set? openssl and perl installed?)\n");
		return 1;
	}
	struct diag d;
	diag_init(&d);
	struct generation *g = generation_new(config, NULL, NULL, true, &d);
	if (!g) {
		diag_print(&d);
		return 1;
	}
	static uint8_t rx[512], tx[65536];
	struct query q;
	memset(&q, 0, sizeof(q));
	q.arena = arena_new(0);
	q.tx = tx;
	q.tx_cap = sizeof(tx);
	struct sockaddr_in *sin = (struct sockaddr_in *)&q.client;
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, "127.0.0.1", &sin->sin_addr);

	struct {
		const char *what, *name;
		uint16_t type;
		bool edns, do_bit;
		const char *ecs;
		uint8_t prefix;
		int rcode;
	} cases[] = {
		{ "static A", "www.example.com", 1, false, false, NULL, 0, 0 },
		{ "static A, EDNS", "www.example.com", 1, true, false, NULL, 0, 0 },
		{ "static A, DO", "www.example.com", 1, true, true, NULL, 0, 0 },
		{ "NXDOMAIN, DO", "random-1234.example.com", 1, true, true, NULL, 0, 3 },
		{ "NODATA, DO", "mail.example.com", 28, true, true, NULL, 0, 0 },
		{ "CNAME chain, DO", "blog.example.com", 1, true, true, NULL, 0, 0 },
		{ "geo A, ECS", "geo.example.com", 1, true, false, "192.0.2.0", 24, 0 },
		{ "geo A, ECS, DO", "geo.example.com", 1, true, true, "192.0.2.0", 24, 0 },
		{ "geo AAAA, DO", "geo.example.com", 28, true, true, NULL, 0, 0 },
		{ "geo HTTPS, ECS, DO (+ Additional)", "geo.example.com", 65, true, true, "192.0.2.0", 24, 0 },
		{ "geo HTTPS, DO, 512 bytes", "geo.example.com", 65, false, false, NULL, 0, 0 },
		{ "per-site A, DO", "paris.sites.example.com", 1, true, true, NULL, 0, 0 },
		{ "refused", "www.example.org", 1, true, true, NULL, 0, 5 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = make_query(rx, cases[i].name, cases[i].type, cases[i].edns, cases[i].do_bit,
		                        cases[i].ecs, cases[i].prefix);
		for (int round = 0; round < 3; round++) {
			/* Round 0 warms the arena and any lazy state; rounds 1-2 are counted. */
			query_reset(&q);
			q.rx = rx;
			q.rx_len = len;
			q.transport = QUERY_UDP;
			q.max_size = 1232;
			allocations = 0;
			counting = round > 0;
			answer_handle(&g->env, &q);
			counting = 0;
			if (round == 0)
				continue;
			ok(q.tx_len > 12 && (tx[3] & 0xF) == cases[i].rcode, "%s: answered (rcode %d)",
			   cases[i].what, tx[3] & 0xF);
			if (cases[i].type == 65 && cases[i].do_bit)
				ok(tx[6] == 0 && tx[7] == 4 && tx[10] == 0 && tx[11] == 9,
				   "%s: 3 HTTPS + RRSIG; 4 signed address sets + OPT in Additional (%u)", cases[i].what,
				   tx[11]);
			is_int(allocations, 0, "%s: no heap allocation", cases[i].what);
		}
	}
	arena_free(q.arena);
	generation_free(g);
	diag_clear(&d);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return done_testing();
}
