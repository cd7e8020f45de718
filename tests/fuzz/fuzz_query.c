/* SPDX-License-Identifier: MIT */
/*
 * The query path end to end: bytes in, process_handle() (parse, cookies,
 * resolve through the zone table, geo, pre-made signatures, RRL, write)
 * and the response out, once as a UDP datagram and once as a TCP message.
 *
 * The generation is built once, the way `geoacme check` builds one (no
 * sockets, no timers, no health checks): a signed zone with geo names, a
 * delegation, a CNAME chain and a big TXT RRset, an unsigned child zone,
 * seven sites and the fixture .mmdb.  The client address is taken from a
 * hash of the input so that the same input always comes from the same
 * place (geo by source address, IPv4 and IPv6, mapped addresses).
 *
 * Every response is checked by fuzz_check_response() (well formed, same ID,
 * echoed question) and must fit: over UDP in what the query offered (512
 * without EDNS) capped at udp_max_size, over TCP in 65535 bytes.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/runtime.h"
#include "core/conf/diag.h"
#include "core/wire/arena.h"
#include "core/wire/query.h"
#include "core/zone/process.h"
#include "tests/fuzz/fuzz_common.h"

#define UDP_MAX 1232
#define TX_CAP (QUERY_MSG_MAX + 4096)   /* what net.c gives a query */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char zone_text[] =
	"$ORIGIN example.com.\n$TTL 3600\n"
	"@ IN SOA ns1 hostmaster 2026010101 7200 3600 1209600 300\n"
	"@ IN NS ns1\n@ IN NS ns2.example.net.\n"
	"@ IN MX 10 mail\n@ IN TXT \"v=spf1 mx -all\"\n@ IN CAA 0 issue \"letsencrypt.org\"\n"
	"ns1 IN A 192.0.2.53\nns1 IN AAAA 2001:db8::53\n"
	"mail IN A 192.0.2.25\n"
	"www 600 IN A 192.0.2.80\nwww 600 IN AAAA 2001:db8::80\n"
	"blog IN CNAME alias\nalias IN CNAME www\next IN CNAME www.example.org.\n"
	"loop1 IN CNAME loop2\nloop2 IN CNAME loop1\n"
	"sub IN NS ns.sub\nsub IN NS ns.elsewhere.net.\nns.sub IN A 192.0.2.99\n"
	"secure IN NS ns1\nsecure IN DS 12345 13 2 "
	"0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF\n"
	"_sip._tcp IN SRV 10 60 5060 mail\n"
	"a.b.c IN TXT \"deep\"\n"
	"svc IN HTTPS 1 . alpn=\"h2,h3\"\n"
	"80.2.0.192.in-addr IN PTR www\n";

static const char child_text[] =
	"$ORIGIN child.example.com.\n$TTL 60\n"
	"@ IN SOA ns1.example.com. hostmaster.example.com. 7 7200 3600 1209600 30\n"
	"@ IN NS ns1.example.com.\nwww IN A 192.0.2.7\n";

static const char config_text[] =
	"listen_addrs_ipv4 = [\"127.0.0.1\"]\nlisten_port = 0\n"
	"[server]\nudp_max_size = 1232\nrrl_rate = 1000000\ncookies = true\n"
	"[geo]\ndatabases = [\"city.mmdb\"]\n"
	"[[sites]]\nname = \"paris\"\nipv4 = \"45.90.160.60\"\nipv6 = \"2a0c:8881:5:100::1\"\n"
	"latitude = 48.88\nlongitude = 2.22\n"
	"[[sites]]\nname = \"nuremberg\"\nipv4 = \"116.203.18.48\"\nipv6 = \"2a01:4f8:1c0c:5eb5::1\"\n"
	"latitude = 49.45\nlongitude = 11.08\n"
	"[[sites]]\nname = \"ashburn\"\nipv4 = \"5.161.44.145\"\nlatitude = 39.04\nlongitude = -77.49\n"
	"[[sites]]\nname = \"singapore\"\nipv4 = \"192.0.2.65\"\nipv6 = \"2001:db8:65::1\"\n"
	"latitude = 1.35\nlongitude = 103.82\n"
	"[[sites]]\nname = \"sanjose\"\nipv4 = \"149.28.219.155\"\nlatitude = 37.34\n"
	"longitude = -121.89\n"
	"[[sites]]\nname = \"saopaulo\"\nipv4 = \"192.0.2.66\"\nipv6 = \"2001:db8:66::1\"\n"
	"latitude = -23.55\nlongitude = -46.63\n"
	"[[sites]]\nname = \"sydney\"\nipv4 = \"139.180.162.114\"\n"
	"ipv6 = \"2001:19f0:5800:1855:5400:6ff:fef0:4c0a\"\nlatitude = -33.87\nlongitude = 151.21\n"
	"[[zones]]\nzone = \"example.com\"\nfile = \"example.com.zone\"\n"
	"[[zones.geo]]\nname = \"geo\"\n"
	"[[zones.geo]]\nname = \"@\"\nsites = [\"paris\", \"sydney\"]\n"
	"[[zones.geo]]\nname = \"eu\"\nsites = [\"paris\", \"nuremberg\"]\nratio = 1.5\n"
	"[[zones.keys]]\nalgorithm = \"ECDSAP256SHA256\"\nkey_path = \"example.com.pem\"\n"
	"[[zones]]\nzone = \"child.example.com\"\nfile = \"child.example.com.zone\"\n";

/* Where queries come from: located, unknown, IPv6, IPv4-mapped. */
static const char *const sources[] = {
	"192.0.2.10", "10.0.0.1", "203.0.113.70", "2001:db8:2::1", "::ffff:198.51.100.7",
	"2001:db8:abcd::1", "127.0.0.1",
};

static struct generation *gen;
static struct query q;
static uint8_t *tx;
static bool verbose;   /* FUZZ_VERBOSE: one line per response, to see what seeds reach */

static void teardown(void)
{
	generation_free(gen);
	arena_free(q.arena);
	free(tx);
}

static void setup(void)
{
	fuzz_quiet();
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	char big[2048];
	/* A TXT RRset of about 1.3 KB: never fits 512, sometimes 1232. */
	size_t n = 0;
	for (int i = 0; i < 6; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "big IN TXT \"%0200d\"\n", i);
	fuzz_write("example.com.zone", zone_text, strlen(zone_text), 0644);
	char path[512];
	FILE *f = fopen(fuzz_path("example.com.zone", path, sizeof(path)), "a");
	if (!f || fputs(big, f) < 0 || fclose(f) != 0)
		abort();
	fuzz_write("child.example.com.zone", child_text, strlen(child_text), 0644);
	fuzz_write("config.toml", config_text, strlen(config_text), 0644);
	fuzz_make_key("example.com.pem");
	fuzz_make_mmdb();

	struct diag d;
	diag_init(&d);
	gen = generation_new(fuzz_path("config.toml", path, sizeof(path)), NULL, NULL, true, &d);
	if (!gen) {
		diag_print(&d);
		abort();
	}
	diag_clear(&d);
	q.arena = arena_new(0);
	tx = malloc(TX_CAP);
	if (!q.arena || !tx)
		abort();
	atexit(teardown);
}

static uint32_t hash(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;   /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static void set_source(struct query *qq, const char *addr, uint16_t port)
{
	memset(&qq->client, 0, sizeof(qq->client));
	if (strchr(addr, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&qq->client;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		inet_pton(AF_INET6, addr, &s6->sin6_addr);
		qq->client_len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&qq->client;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		inet_pton(AF_INET, addr, &s4->sin_addr);
		qq->client_len = sizeof(*s4);
	}
}

static void run(const uint8_t *msg, size_t len, enum query_transport t, const char *source)
{
	query_reset(&q);
	q.rx = msg;
	q.rx_len = len;
	set_source(&q, source, 40000);
	q.transport = t;
	q.tx = tx;
	q.tx_cap = TX_CAP;
	q.max_size = t == QUERY_UDP ? UDP_MAX : QUERY_MSG_MAX;
	process_handle(&gen->env, &q);
	if (verbose)
		fprintf(stderr, "%s from %s: %zu bytes, rcode %u, flags %02x%02x, counts %u/%u/%u/%u\n",
		        t == QUERY_UDP ? "udp" : "tcp", source, q.tx_len, q.tx_len ? q.tx[3] & 15 : 0,
		        q.tx_len ? q.tx[2] : 0, q.tx_len ? q.tx[3] : 0, q.tx_len ? q.tx[5] : 0,
		        q.tx_len ? q.tx[7] : 0, q.tx_len ? q.tx[9] : 0, q.tx_len ? q.tx[11] : 0);
	fuzz_check_answer(msg, len, q.tx, q.tx_len, q.tx_cap, t == QUERY_UDP, UDP_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!gen)
		setup();
	if (size > QUERY_MSG_MAX)
		return 0;
	uint32_t h = hash(data, size);
	size_t ns = sizeof(sources) / sizeof(sources[0]);
	run(data, size, QUERY_UDP, sources[h % ns]);
	run(data, size, QUERY_TCP, sources[(h >> 8) % ns]);
	return 0;
}
