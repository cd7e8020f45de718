/* SPDX-License-Identifier: MIT */
/*
 * The UPDATE and TSIG path: process_handle() -> the ACME handler (TSIG
 * find/verify, RFC 2136 parse, prerequisites, policy, prescan, change
 * list, SQLite commit, re-signed snapshot swap, signed response).
 *
 * Input: one mode byte, then a DNS message.
 *   mode & 3 == 0  the message as it is (unsigned, or carrying its own TSIG)
 *   mode & 3 == 1  the target signs it with the ACME key (hmac-sha256,
 *                  may change TXT under _acme-challenge), so the fuzzer
 *                  gets past the MAC
 *   mode & 3 == 2  signed with the admin key (hmac-sha512, many types
 *                  anywhere in the zone)
 *   mode & 3 == 3  signed with the ACME key, one hour off (BADTIME)
 *   mode & 4       sent over TCP instead of UDP
 *
 * The generation is built as `geoacme serve` builds it but without a loop
 * (no timers), in a scratch folder on tmpfs.  An input that changes the
 * zone (its serial moves) is followed by a fresh database and generation,
 * so every input starts from the same zone and a finding replays alone.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/runtime.h"
#include "core/conf/diag.h"
#include "core/tsig/replay.h"
#include "core/tsig/tsig.h"
#include "core/wire/arena.h"
#include "core/wire/dname.h"
#include "core/wire/query.h"
#include "core/zone/process.h"
#include "core/zone/zone.h"
#include "core/zone/zone_table.h"
#include "tests/fuzz/fuzz_common.h"

#define UDP_MAX 1232
#define TX_CAP (QUERY_MSG_MAX + 4096)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The secrets the corpus was captured with (tests/fuzz/make_corpus.py). */
static const char acme_secret[] = "0123456789abcdef0123456789abcdef";
static const char admin_secret[] = "admin-secret-for-fuzzing-only-0123456789abcdef0123456789abcdef!";

static const char zone_text[] =
	"$ORIGIN example.com.\n$TTL 3600\n"
	"@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300\n@ IN NS ns1\n"
	"ns1 IN A 192.0.2.53\nwww IN A 192.0.2.80\n";

static const char acme_text[] =
	"$ORIGIN acme.example.net.\n$TTL 300\n"
	"@ IN SOA ns1.example.com. hostmaster.example.com. 100 7200 3600 1209600 60\n"
	"@ IN NS ns1.example.com.\n@ IN NS ns2.example.com.\n"
	"_acme-challenge IN TXT \"seeded\"\n"
	"www IN A 192.0.2.1\nwww IN AAAA 2001:db8::1\n"
	"alias IN CNAME www\n";

static const char config_text[] =
	"listen_addrs_ipv4 = [\"127.0.0.1\"]\nlisten_port = 0\n"
	"[server]\nudp_max_size = 1232\n"
	"[[zones]]\nzone = \"example.com\"\nfile = \"example.com.zone\"\n"
	"[[zones.keys]]\nkey_path = \"example.com.pem\"\n"
	"[[zones]]\nzone = \"acme.example.net\"\nzone_type = \"Primary\"\n"
	"[[zones.keys]]\nalgorithm = \"ECDSAP256SHA256\"\nkey_path = \"acme.pem\"\n"
	"[zones.stores]\ntype = \"sqlite\"\nzone_path = \"acme.zone\"\n"
	"journal_path = \"acme.sqlite\"\nallow_update = true\n"
	"max_records = 64\nmax_records_per_name = 8\nstale_txt_age = \"1h\"\n"
	"[[zones.stores.tsig_keys]]\nname = \"lego.acme.example.net.\"\nalgorithm = \"hmac-sha256\"\n"
	"secret = \"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\"\n"
	"allow_names = [\"_acme-challenge\"]\n"
	"[[zones.stores.tsig_keys]]\nname = \"admin.\"\nalgorithm = \"hmac-sha512\"\n"
	"key_file = \"admin.key\"\n"
	"allow_types = [\"A\", \"AAAA\", \"TXT\", \"CNAME\", \"MX\", \"SRV\", \"CAA\", \"NS\", \"PTR\", "
	"\"HTTPS\", \"TYPE65280\"]\n";

static struct generation *gen;
static struct query q;
static uint8_t *tx, *rx;
static struct tsig_key acme_key, admin_key;
static uint8_t acme_apex[DNAME_MAX];
static uint32_t first_serial;
static unsigned since_build;      /* inputs since the generation was built */
static char config_path[512];

static void build(void)
{
	/* A fresh database: seeded again from acme.zone. */
	gen = fuzz_fresh_generation(config_path, "acme.sqlite", acme_apex, &first_serial);
	since_build = 0;
}

static void teardown(void)
{
	generation_free(gen);
	arena_free(q.arena);
	free(tx);
	free(rx);
}

static void setup(void)
{
	fuzz_quiet();
	fuzz_write("example.com.zone", zone_text, strlen(zone_text), 0644);
	fuzz_write("acme.zone", acme_text, strlen(acme_text), 0644);
	fuzz_write("admin.key", admin_secret, strlen(admin_secret), 0600);
	fuzz_write("config.toml", config_text, strlen(config_text), 0644);
	fuzz_make_key("example.com.pem");
	fuzz_make_key("acme.pem");
	fuzz_path("config.toml", config_path, sizeof(config_path));
	char err[256];
	if (tsig_key_init(&acme_key, "lego.acme.example.net.", TSIG_HMAC_SHA256,
	                  (const uint8_t *)acme_secret, strlen(acme_secret), 300, err) < 0 ||
	    tsig_key_init(&admin_key, "admin.", TSIG_HMAC_SHA512, (const uint8_t *)admin_secret,
	                  strlen(admin_secret), 300, err) < 0 ||
	    dname_from_str("acme.example.net", acme_apex) < 0) {
		fprintf(stderr, "fuzz: %s\n", err);
		abort();
	}
	build();
	q.arena = arena_new(0);
	tx = malloc(TX_CAP);
	rx = malloc(QUERY_MSG_MAX + 1);
	if (!q.arena || !tx || !rx)
		abort();
	atexit(teardown);
}

/* Appends a TSIG made with `key`; leaves the message unsigned when it cannot. */
static size_t sign(uint8_t *msg, size_t len, const struct tsig_key *key, int64_t skew)
{
	if (len < 12)
		return len;
	struct tsig_rr f;
	tsig_rr_init(&f, key, (uint64_t)((int64_t)time(NULL) + skew), (uint16_t)(msg[0] << 8 | msg[1]));
	if (tsig_append(msg, &len, QUERY_MSG_MAX, &f, key, NULL, 0, NULL) < 0)
		return len;
	return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!gen)
		setup();
	if (size < 1 || size - 1 > QUERY_MSG_MAX - 512)
		return 0;
	uint8_t mode = data[0];
	size_t len = size - 1;
	/* The copy is exactly the message (plus room for a TSIG when signing). */
	uint8_t *msg = rx;
	memcpy(msg, data + 1, len);
	switch (mode & 3) {
	case 1: len = sign(msg, len, &acme_key, 0); break;
	case 2: len = sign(msg, len, &admin_key, 0); break;
	case 3: len = sign(msg, len, &acme_key, 3600); break;
	default: break;
	}
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact)
		abort();
	memcpy(exact, msg, len);

	enum query_transport t = mode & 4 ? QUERY_TCP : QUERY_UDP;
	query_reset(&q);
	q.rx = exact;
	q.rx_len = len;
	struct sockaddr_in *sin = (struct sockaddr_in *)&q.client;
	memset(&q.client, 0, sizeof(q.client));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(40000);
	inet_pton(AF_INET, "127.0.0.1", &sin->sin_addr);
	q.client_len = sizeof(*sin);
	q.transport = t;
	q.tx = tx;
	q.tx_cap = TX_CAP;
	q.max_size = t == QUERY_UDP ? UDP_MAX : QUERY_MSG_MAX;
	process_handle(&gen->env, &q);
	fuzz_check_answer(exact, len, q.tx, q.tx_len, q.tx_cap, t == QUERY_UDP, UDP_MAX);
	free(exact);

	const struct zone *z = zone_table_get(gen->zones, acme_apex);
	if (!z)
		fuzz_fail("the ACME zone left the zone table", data + 1, size - 1, NULL, 0);
	if (zone_serial(z) != first_serial) {
		/* Only an UPDATE answered NOERROR may have changed the zone. */
		if (q.tx_len < 12 || (q.tx[3] & 0xF) != RCODE_NOERROR ||
		    ((q.tx[2] >> 3) & 0xF) != OPCODE_UPDATE)
			fuzz_fail("the zone changed, but the answer was not a NOERROR to an UPDATE",
			          data + 1, size - 1, q.tx, q.tx_len);
		generation_free(gen);
		build();
	} else if (++since_build >= REPLAY_MAX / 2) {
		/*
		 * Every key remembers the UPDATEs it accepted (core/tsig/replay.h);
		 * past REPLAY_MAX in one second it refuses the rest of that
		 * second, which would hide everything after from the fuzzer.
		 */
		generation_free(gen);
		build();
	}
	return 0;
}
