/* SPDX-License-Identifier: MIT */
/*
 * What an accepted UPDATE makes the server say: after every UPDATE that
 * changes the zone, every name in the zone is asked for every type it
 * holds (and ANY, RRSIG, NSEC, DS, CNAME, A, and a name below it), with
 * DO over UDP and TCP and without EDNS, and every answer must be a
 * well-formed message whose records all parse exactly by ldns, an
 * independent reading of the formats.  Issue #16: an empty CNAME was
 * accepted and the answer carried adjacent memory as a name; an empty DS
 * or a 1-byte CAA made kdig and dnspython drop the whole response.
 *
 * Input: one mode byte, then a DNS message (an UPDATE, as a rule).
 *   mode & 1   sent over TCP instead of UDP
 *   mode & 2   sent as it is (unsigned, or with its own TSIG); otherwise
 *              the target signs it with the admin key (hmac-sha512, many
 *              types anywhere in the zone, DS and CAA included)
 *
 * The answer oracle, for every record of every response: the rdata of
 * the types the server compresses (NS, CNAME, PTR, MX, SOA) is
 * decompressed with pointers that go strictly backwards and must end
 * exactly at the end of the rdata; then the record, uncompressed, must
 * parse with ldns_wire2rr, with at least its type's minimum of fields
 * (ldns alone takes an empty CNAME or DS), and re-encode to exactly the
 * same length (ldns alone ignores bytes left over); and it must be, byte
 * for byte, a record the snapshot holds (the bytes an answer reads past a
 * stored record's end may well parse).  SERVFAIL is a finding too, to the
 * UPDATE or to a query: the zone was built, so it can be answered.
 *
 * Like fuzz_update, the zone is rebuilt from its seed after any input
 * that changed it, so each input starts from the same zone.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ldns/ldns.h>

#include "cmd/runtime.h"
#include "core/conf/diag.h"
#include "core/tsig/replay.h"
#include "core/tsig/tsig.h"
#include "core/wire/arena.h"
#include "core/wire/dname.h"
#include "core/wire/query.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/process.h"
#include "core/zone/zone.h"
#include "core/zone/zone_table.h"
#include "tests/fuzz/fuzz_common.h"

#define UDP_MAX 1232
#define TX_CAP (QUERY_MSG_MAX + 4096)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char admin_secret[] = "admin-secret-for-fuzzing-only-0123456789abcdef0123456789abcdef!";

static const char acme_text[] =
	"$ORIGIN acme.example.net.\n$TTL 300\n"
	"@ IN SOA ns1.example.com. hostmaster.example.com. 100 7200 3600 1209600 60\n"
	"@ IN NS ns1.example.com.\n@ IN NS ns2.acme.example.net.\n"
	"ns2 IN A 192.0.2.2\n"
	"@ IN MX 10 mail\nmail IN A 192.0.2.25\n"
	"_acme-challenge IN TXT \"seeded\"\n"
	"www IN A 192.0.2.1\nwww IN AAAA 2001:db8::1\n"
	"alias IN CNAME www\n"
	"_sip._udp IN SRV 0 5 5060 www\n"
	"child IN NS ns.child\nns.child IN A 192.0.2.53\n"
	"child IN DS 60485 13 2 D4B7D520E7BB5F0F67674A0CCEB1E3E0614B93C4F9E99B8383F6A1E4469DA50A\n"
	"@ IN CAA 0 issue \"letsencrypt.org\"\n";

static const char config_text[] =
	"listen_addrs_ipv4 = [\"127.0.0.1\"]\nlisten_port = 0\n"
	"[server]\nudp_max_size = 1232\n"
	"[[zones]]\nzone = \"acme.example.net\"\n"
	"[[zones.keys]]\nkey_path = \"acme.pem\"\n"
	"[zones.stores]\ntype = \"sqlite\"\nzone_path = \"acme.zone\"\n"
	"journal_path = \"acme.sqlite\"\nallow_update = true\n"
	"max_records = 64\nmax_records_per_name = 8\n"
	"[[zones.stores.tsig_keys]]\nname = \"admin.\"\nalgorithm = \"hmac-sha512\"\n"
	"key_file = \"admin.key\"\n"
	"allow_types = [\"A\", \"AAAA\", \"TXT\", \"CNAME\", \"MX\", \"SRV\", \"CAA\", \"NS\", \"PTR\", "
	"\"DS\", \"HTTPS\", \"SVCB\", \"SSHFP\", \"TLSA\", \"NAPTR\", \"LOC\", \"URI\", \"HINFO\", "
	"\"DNAME\", \"TYPE65280\"]\n";

static struct generation *gen;
static struct query q;
static uint8_t *tx, *rx, *qbuf;
static struct tsig_key admin_key;
static uint8_t apex[DNAME_MAX];
static uint32_t first_serial;
static unsigned since_build;      /* inputs since the generation was built */
static char config_path[512];

static void build(void)
{
	/* A fresh database: seeded again from acme.zone. */
	gen = fuzz_fresh_generation(config_path, "acme.sqlite", apex, &first_serial);
	since_build = 0;
}

static void teardown(void)
{
	generation_free(gen);
	arena_free(q.arena);
	free(tx);
	free(rx);
	free(qbuf);
}

/* --- the answer oracle --- */

static void fail(const char *why, const uint8_t *qm, size_t qlen, const uint8_t *r, size_t rlen)
{
	fuzz_fail(why, qm, qlen, r, rlen);
}

/* The fixed bytes around the names of the types the server compresses, "n" a name. */
static const char *compressed_layout(uint16_t type)
{
	switch (type) {
	case RR_NS: case RR_CNAME: case RR_PTR: return "n";
	case RR_MX: return "2n";
	case RR_SOA: return "nnT";
	default: return NULL;
	}
}

/* The record's rdata, uncompressed, into out; -1 when it does not walk. */
static long decompress(const uint8_t *m, size_t len, size_t pos, size_t end, uint16_t type,
                       uint8_t *out)
{
	const char *l = compressed_layout(type);
	if (!l) {
		memcpy(out, m + pos, end - pos);
		return (long)(end - pos);
	}
	size_t o = 0;
	for (; *l; l++) {
		if (*l == 'n') {
			size_t n = 0;
			/* The name's bytes in place may not run past the rdata. */
			if (!fuzz_walk_name(m, end, &pos, out + o, &n))
				return -1;
			o += n;
			continue;
		}
		size_t fixed = *l == 'T' ? 20 : (size_t)(*l - '0');
		if (end - pos < fixed)
			return -1;
		memcpy(out + o, m + pos, fixed);
		o += fixed;
		pos += fixed;
	}
	(void)len;
	return pos == end ? (long)o : -1;
}

/* One record, uncompressed, must parse by ldns with its type's fields exactly. */
static const char *ldns_verdict(uint16_t type, const uint8_t *rd, size_t rdlen)
{
	static uint8_t wire[11 + 65535 + 3 * 256];
	wire[0] = 0;   /* owner: the root; the owner was checked by the walk */
	wire_set_u16(wire + 1, type);
	wire_set_u16(wire + 3, CLASS_IN);
	wire_set_u32(wire + 5, 0);
	wire_set_u16(wire + 9, (uint16_t)rdlen);
	memcpy(wire + 11, rd, rdlen);
	size_t pos = 0;
	ldns_rr *rr = NULL;
	const char *why = NULL;
	if (ldns_wire2rr(&rr, wire, 11 + rdlen, &pos, LDNS_SECTION_ANSWER) != LDNS_STATUS_OK)
		return "ldns cannot parse a record";
	const ldns_rr_descriptor *d = ldns_rr_descript(type);
	ldns_buffer *b = ldns_buffer_new(rdlen + 16);
	if (d && ldns_rr_rd_count(rr) < ldns_rr_descriptor_minimum(d))
		why = "a record has fewer fields than its type's minimum";
	else if (!b || ldns_rr_rdata2buffer_wire(b, rr) != LDNS_STATUS_OK)
		why = "ldns cannot encode a record back";
	else if (ldns_buffer_position(b) != rdlen)
		why = "a record's rdata has bytes its type's fields do not account for";
	ldns_buffer_free(b);
	ldns_rr_free(rr);
	return why;
}

/*
 * The record as sent is the record as stored: every record comes from the
 * snapshot, so its rdata, uncompressed, is one of its RRset's, byte for
 * byte (an RRSIG: one of the signatures at its owner).  This is what
 * catches an answer that reads a stored record past its end: the bytes it
 * sends may well parse.
 */
static bool stored(const uint8_t *owner, uint16_t type, const uint8_t *rd, size_t rdlen)
{
	const struct zone *z = zone_table_get(gen->zones, apex);
	uint8_t name[DNAME_MAX];
	memcpy(name, owner, dname_len(owner));
	dname_lower(name);
	const struct zone_node *n = zone_find(z, name, dname_len(name));
	if (!n)
		return false;
	for (uint16_t i = 0; i < n->rrset_count; i++) {
		const struct rrset *s = &n->rrsets[i];
		if (type == RR_RRSIG) {
			for (unsigned j = 0; j < rrset_sig_count(s); j++)
				if (s->sig[j].len == rdlen && memcmp(s->sig[j].data, rd, rdlen) == 0)
					return true;
			continue;
		}
		for (uint16_t k = 0; s->type == type && k < s->count; k++)
			if (s->rr[k].len == rdlen && memcmp(s->rr[k].data, rd, rdlen) == 0)
				return true;
	}
	return false;
}

static void check_records(const uint8_t *qm, size_t qlen, const uint8_t *r, size_t rlen)
{
	static uint8_t rd[65535 + 3 * 256];
	if (rlen < 12)
		return;
	if ((r[3] & 0xF) == RCODE_SERVFAIL)
		fail("SERVFAIL for a zone that was built", qm, qlen, r, rlen);
	ldns_pkt *pkt = NULL;
	if (ldns_wire2pkt(&pkt, r, rlen) != LDNS_STATUS_OK)
		fail("ldns cannot parse the response", qm, qlen, r, rlen);
	ldns_pkt_free(pkt);
	size_t pos = 12;
	unsigned qd = wire_get_u16(r + 4);
	unsigned total = (unsigned)wire_get_u16(r + 6) + wire_get_u16(r + 8) + wire_get_u16(r + 10);
	for (unsigned i = 0; i < qd; i++)
		if (!fuzz_walk_name(r, rlen, &pos, NULL, NULL) || (pos += 4) > rlen)
			fail("the question does not walk", qm, qlen, r, rlen);
	for (unsigned i = 0; i < total; i++) {
		uint8_t owner[256];
		if (!fuzz_walk_name(r, rlen, &pos, owner, NULL) || rlen - pos < 10)
			fail("a record does not walk", qm, qlen, r, rlen);
		uint16_t type = wire_get_u16(r + pos);
		size_t rdlen = wire_get_u16(r + pos + 8);
		pos += 10;
		if (rlen - pos < rdlen)
			fail("rdata runs past the end", qm, qlen, r, rlen);
		if (type == RR_OPT || type == RR_TSIG) {
			pos += rdlen;
			continue;
		}
		long n = decompress(r, rlen, pos, pos + rdlen, type, rd);
		if (n < 0)
			fail("a name in rdata does not fill its rdata exactly", qm, qlen, r, rlen);
		const char *why = ldns_verdict(type, rd, (size_t)n);
		if (why)
			fail(why, qm, qlen, r, rlen);
		if (!stored(owner, type, rd, (size_t)n))
			fail("a record's rdata is not what the zone stores", qm, qlen, r, rlen);
		pos += rdlen;
	}
}

/* --- asking --- */

static size_t make_query(uint8_t *m, const uint8_t *name, uint16_t type, bool edns)
{
	static uint16_t id;
	memset(m, 0, 12);
	wire_set_u16(m, ++id);
	wire_set_u16(m + 4, 1);
	size_t len = 12, n = dname_len(name);
	memcpy(m + len, name, n);
	len += n;
	wire_set_u16(m + len, type);
	wire_set_u16(m + len + 2, CLASS_IN);
	len += 4;
	if (edns) {
		/* OPT: root, 1232 bytes, DO. */
		static const uint8_t opt[] = { 0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0 };
		memcpy(m + len, opt, sizeof(opt));
		len += sizeof(opt);
		wire_set_u16(m + 10, 1);
	}
	return len;
}

static void run(const uint8_t *msg, size_t len, enum query_transport t)
{
	query_reset(&q);
	q.rx = msg;
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
}

static void ask(const uint8_t *name, uint16_t type, bool edns, enum query_transport t)
{
	size_t len = make_query(qbuf, name, type, edns);
	run(qbuf, len, t);
	if (!q.tx_len)
		fuzz_fail("no answer to a query", qbuf, len, NULL, 0);
	size_t limit = t == QUERY_UDP ? (edns ? UDP_MAX : 512) : QUERY_MSG_MAX;
	fuzz_check_response(qbuf, len, q.tx, q.tx_len, limit);
	check_records(qbuf, len, q.tx, q.tx_len);
}

/* Every name, every type it holds and a few more, a name below it. */
static int ask_node(void *arg, const struct zone_node *n)
{
	static const uint16_t extra[] = { RR_ANY, RR_RRSIG, RR_NSEC, RR_DS, RR_CNAME, RR_A };
	(void)arg;
	for (uint16_t i = 0; i < n->rrset_count; i++) {
		ask(n->name, n->rrsets[i].type, true, QUERY_UDP);
		ask(n->name, n->rrsets[i].type, true, QUERY_TCP);
		ask(n->name, n->rrsets[i].type, false, QUERY_UDP);
	}
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
		ask(n->name, extra[i], true, QUERY_TCP);
	uint8_t below[DNAME_MAX];
	if (n->name_len + 3 <= DNAME_MAX) {
		memcpy(below, "\x02nx", 3);
		memcpy(below + 3, n->name, n->name_len);
		ask(below, RR_TXT, true, QUERY_UDP);
	}
	return 0;
}

static void ask_everything(void)
{
	zone_foreach_node(zone_table_get(gen->zones, apex), ask_node, NULL);
}

static void setup(void)
{
	fuzz_quiet();
	fuzz_write("acme.zone", acme_text, strlen(acme_text), 0644);
	fuzz_write("admin.key", admin_secret, strlen(admin_secret), 0600);
	fuzz_write("config.toml", config_text, strlen(config_text), 0644);
	fuzz_make_key("acme.pem");
	fuzz_path("config.toml", config_path, sizeof(config_path));
	char err[256];
	if (tsig_key_init(&admin_key, "admin.", TSIG_HMAC_SHA512, (const uint8_t *)admin_secret,
	                  strlen(admin_secret), 300, err) < 0 ||
	    dname_from_str("acme.example.net", apex) < 0) {
		fprintf(stderr, "fuzz: %s\n", err);
		abort();
	}
	q.arena = arena_new(0);
	tx = malloc(TX_CAP);
	rx = malloc(QUERY_MSG_MAX + 1);
	qbuf = malloc(512);
	if (!q.arena || !tx || !rx || !qbuf)
		abort();
	build();
	ask_everything();   /* the seed zone itself answers well */
	atexit(teardown);
}

static size_t sign(uint8_t *msg, size_t len)
{
	if (len < 12)
		return len;
	struct tsig_rr f;
	tsig_rr_init(&f, &admin_key, (uint64_t)time(NULL), (uint16_t)(msg[0] << 8 | msg[1]));
	tsig_append(msg, &len, QUERY_MSG_MAX, &f, &admin_key, NULL, 0, NULL);
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
	memcpy(rx, data + 1, len);
	if (!(mode & 2))
		len = sign(rx, len);
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact)
		abort();
	memcpy(exact, rx, len);
	enum query_transport t = mode & 1 ? QUERY_TCP : QUERY_UDP;
	run(exact, len, t);
	if (q.tx_len) {
		size_t limit = QUERY_MSG_MAX;
		if (t == QUERY_UDP) {
			size_t offered = fuzz_offered_udp_size(exact, len);
			limit = offered && offered < UDP_MAX ? offered : UDP_MAX;
		}
		fuzz_check_response(exact, len, q.tx, q.tx_len, limit);
	}
	bool accepted = q.tx_len >= 12 && (q.tx[3] & 0xF) == RCODE_NOERROR &&
	                ((q.tx[2] >> 3) & 0xF) == OPCODE_UPDATE;
	/* An UPDATE is refused for a reason, or applied: SERVFAIL means it was
	 * accepted and then could not be served (x.*.y before issue #16). */
	if (q.tx_len >= 12 && (q.tx[3] & 0xF) == RCODE_SERVFAIL)
		fuzz_fail("SERVFAIL to an input", exact, len, q.tx, q.tx_len);
	const struct zone *z = zone_table_get(gen->zones, apex);
	if (!z)
		fuzz_fail("the ACME zone left the zone table", exact, len, NULL, 0);
	if (zone_serial(z) != first_serial) {
		if (!accepted)
			fuzz_fail("the zone changed, but the answer was not a NOERROR to an UPDATE",
			          exact, len, q.tx, q.tx_len);
		ask_everything();
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
	free(exact);
	return 0;
}
