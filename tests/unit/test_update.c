/* SPDX-License-Identifier: MIT */
/*
 * acme: RFC 2136 UPDATE through the real query path (process_handle ->
 * update hook): every prerequisite and update form, prescan errors, zone
 * section errors, duplicates and TTLs, the serial (once per change, RFC
 * 1982 wrap), policy refusals and caps (nothing changes), CNAME and apex
 * rules, TSIG error responses (BADKEY, BADSIG, BADTIME), signed queries,
 * the stale purge, and a restart that keeps everything.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acme/acme_zone.h"
#include "acme/update.h"
#include "check.h"
#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/tsig/tsig.h"
#include "core/wire/arena.h"
#include "core/wire/dname.h"
#include "core/wire/query.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/process.h"
#include "core/zone/zone.h"
#include "core/zone/zone_table.h"

static char dir[256];
static struct zone_table *table;
static struct acme *acme;
static struct process_env env;
static struct config_zone zc, wrapzc;
static struct config_tsig_key ckeys[5];
static struct tsig_key kdefault, kwide, klimited, kapex, kwrap;

static const uint8_t secret_a[32] = "secret-for-the-default-key-32by";
static const uint8_t secret_b[20] = "wide-key-secret-20by";
static const uint8_t secret_c[32] = "limited-key-secret-limited-key-";

static uint16_t wide_types[] = { RR_TXT, RR_A, RR_CNAME, RR_MX, RR_NS, RR_SOA, RR_DNSKEY };
static uint16_t txt_only[] = { RR_TXT };
static char *limited_names[] = { "sub" };
static char *apex_names[] = { "acme.example." };

static const char *zone_text =
	"$ORIGIN acme.example.\n"
	"$TTL 300\n"
	"@ SOA ns1.example. hostmaster.example. 10 3600 600 86400 300\n"
	"@ NS ns1.example.\n"
	"@ NS ns2.example.\n"
	"@ TXT \"apex-static\"\n"
	"www A 192.0.2.1\n"
	"existing TXT \"a\"\n"
	"existing TXT \"b\"\n"
	"alias CNAME www\n"
	"mixed TXT \"m\"\n"
	"mixed A 192.0.2.7\n";

/* --- message building --- */

struct mb {
	uint8_t buf[65535];
	size_t len;
};

static void mb_init(struct mb *m, uint8_t opcode, const char *zone, uint16_t ztype, uint16_t zclass)
{
	memset(m->buf, 0, 12);
	wire_set_u16(m->buf, 0x4242);
	wire_set_u16(m->buf + 2, (uint16_t)(opcode << 11));
	m->len = 12;
	if (!zone)
		return;
	int n = dname_from_str(zone, m->buf + m->len);
	m->len += (size_t)n;
	wire_set_u16(m->buf + m->len, ztype);
	wire_set_u16(m->buf + m->len + 2, zclass);
	m->len += 4;
	wire_set_u16(m->buf + 4, 1);
}

/* section: 1 prerequisite (answer), 2 update (authority), 3 additional */
static void mb_rr(struct mb *m, int section, const char *name, uint16_t type, uint16_t rclass,
                  uint32_t ttl, const void *rdata, uint16_t rdlen)
{
	int n = dname_from_str(name, m->buf + m->len);
	m->len += (size_t)n;
	wire_set_u16(m->buf + m->len, type);
	wire_set_u16(m->buf + m->len + 2, rclass);
	wire_set_u32(m->buf + m->len + 4, ttl);
	wire_set_u16(m->buf + m->len + 8, rdlen);
	m->len += 10;
	if (rdlen)
		memcpy(m->buf + m->len, rdata, rdlen);
	m->len += rdlen;
	size_t at = 4 + 2 * (size_t)section;
	wire_set_u16(m->buf + at, (uint16_t)(wire_get_u16(m->buf + at) + 1));
}

/* TXT rdata with one string. */
static uint16_t txt(uint8_t *out, const char *s)
{
	size_t n = strlen(s);
	out[0] = (uint8_t)n;
	memcpy(out + 1, s, n);
	return (uint16_t)(n + 1);
}

static void add_txt(struct mb *m, const char *name, uint32_t ttl, const char *s)
{
	uint8_t rd[256];
	mb_rr(m, 2, name, RR_TXT, CLASS_IN, ttl, rd, txt(rd, s));
}

/* --- sending --- */

static struct query q;
static uint8_t txbuf[65535 + 1024];
static uint8_t last_req_mac[TSIG_MAC_MAX];
static uint16_t last_id;
static size_t last_req_mac_len;

static int run(const uint8_t *msg, size_t len, enum query_transport tr)
{
	query_reset(&q);
	q.rx = msg;
	q.rx_len = len;
	q.transport = tr;
	q.tx = txbuf;
	q.tx_cap = sizeof(txbuf);
	q.max_size = 65535;
	process_handle(&env, &q);
	return q.tx_len >= 12 ? (q.tx[3] & 0xF) : -1;
}

/* The message with a fresh ID, signed by k (when not NULL) at `when`, into out. */
static size_t sign_copy(const struct mb *m, const struct tsig_key *k, uint64_t when, uint8_t *out,
                        size_t cap)
{
	/*
	 * Each message its own ID, as real clients do: the same signed UPDATE
	 * sent twice is a replay, refused (core/tsig/replay.h).
	 */
	static uint16_t next_id = 0x4242;
	memcpy(out, m->buf, m->len);
	wire_set_u16(out, last_id = next_id++);
	size_t len = m->len;
	last_req_mac_len = 0;
	if (k) {
		struct tsig_rr f;
		memset(&f, 0, sizeof(f));
		memcpy(f.key_name, k->name, dname_len(k->name));
		memcpy(f.alg_name, tsig_alg_name(k->alg), dname_len(tsig_alg_name(k->alg)));
		f.time_signed = when;
		f.fudge = 300;
		f.orig_id = last_id;
		int n = tsig_append(out, &len, cap, &f, k, NULL, 0, last_req_mac);
		last_req_mac_len = n > 0 ? (size_t)n : 0;
	}
	return len;
}

static int send_at(const struct mb *m, const struct tsig_key *k, uint64_t when,
                   enum query_transport tr)
{
	static uint8_t signed_msg[65535 + 1024];
	size_t len = sign_copy(m, k, when, signed_msg, sizeof(signed_msg));
	return run(signed_msg, len, tr);
}

static int send_msg(const struct mb *m, const struct tsig_key *k)
{
	return send_at(m, k, (uint64_t)time(NULL), QUERY_UDP);
}

/* Checks the last response's TSIG MAC by signing its body again. */
static bool response_verifies(const struct tsig_key *k)
{
	struct tsig_rr t;
	if (tsig_find(q.tx, q.tx_len, &t) != 1 || t.mac_len == 0)
		return false;
	uint8_t body[65535 + 1024];
	memcpy(body, q.tx, t.offset);
	wire_set_u16(body + 10, (uint16_t)(wire_get_u16(body + 10) - 1));
	size_t len = t.offset;
	uint8_t mac[TSIG_MAC_MAX];
	int n = tsig_append(body, &len, sizeof(body), &t, k, last_req_mac, last_req_mac_len, mac);
	return n == t.mac_len && memcmp(mac, t.mac, (size_t)n) == 0;
}

/* --- looking at the served zone --- */

static const struct zone *served(const char *apex)
{
	uint8_t a[DNAME_MAX];
	dname_from_str(apex, a);
	return zone_table_get(table, a);
}

static uint32_t serial_of(const char *apex)
{
	const struct zone *z = served(apex);
	return z ? zone_serial(z) : 0xdeadbeef;
}

static uint32_t serial(void)
{
	return serial_of("acme.example.");
}

static const struct rrset *rrset_at(const char *name, uint16_t type)
{
	uint8_t n[DNAME_MAX];
	int len = dname_from_str(name, n);
	const struct zone *z = served("acme.example.");
	if (!z || len < 0)
		return NULL;
	const struct zone_node *node = zone_find(z, n, (size_t)len);
	return node ? zone_node_rrset(node, type) : NULL;
}

static int count_at(const char *name, uint16_t type)
{
	const struct rrset *s = rrset_at(name, type);
	return s ? s->count : 0;
}

static bool has_txt(const char *name, const char *value)
{
	const struct rrset *s = rrset_at(name, RR_TXT);
	uint8_t rd[256];
	uint16_t len = txt(rd, value);
	for (uint16_t i = 0; s && i < s->count; i++)
		if (s->rr[i].len == len && memcmp(s->rr[i].data, rd, len) == 0)
			return true;
	return false;
}

/* --- setup --- */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

static void key_cfg(struct config_tsig_key *c, struct tsig_key *k, const char *name,
                    enum tsig_alg alg, const uint8_t *secret, size_t len)
{
	char err[256];
	memset(c, 0, sizeof(*c));
	c->name = (char *)name;
	c->algorithm = alg;
	memcpy(c->secret, secret, len);
	c->secret_len = len;
	c->fudge = 300;
	tsig_key_init(k, name, alg, secret, len, 300, err);
}

static char jpath[512], zpath[512], wjpath[512], wzpath[512];

static int start(void)
{
	char err[256] = "";
	table = zone_table_new();
	acme = acme_new(table, NULL, err);
	if (!acme) {
		printf("# acme_new: %s\n", err);
		return -1;
	}
	if (acme_add_zone(acme, NULL, &zc, NULL, err) < 0) {
		printf("# acme_add_zone: %s\n", err);
		return -1;
	}
	if (acme_add_zone(acme, NULL, &wrapzc, NULL, err) < 0) {
		printf("# acme_add_zone (wrap): %s\n", err);
		return -1;
	}
	if (acme_apply_file_edits(acme, false, err) < 0) {
		printf("# acme_apply_file_edits: %s\n", err);
		return -1;
	}
	/* A file-backed zone without updates, to be REFUSED. */
	uint8_t apex[DNAME_MAX];
	dname_from_str("static.example.", apex);
	struct zone_builder *b = zone_builder_new(apex);
	static const uint8_t soa[] = "\x03ns1\x07" "example\x00\x01h\x07" "example\x00"
	                             "\x00\x00\x00\x01\x00\x00\x0e\x10\x00\x00\x02\x58"
	                             "\x00\x01\x51\x80\x00\x00\x01\x2c";
	zone_builder_add(b, apex, RR_SOA, 300, soa, sizeof(soa) - 1);
	zone_builder_add(b, apex, RR_NS, 300, (const uint8_t *)"\x03ns1\x07" "example", 13);
	struct diag d;
	diag_init(&d);
	struct zone *z = zone_builder_finish(b, NULL, "static", &d);
	for (size_t i = 0; i < d.n; i++)
		printf("# %s\n", d.msgs[i]);
	diag_clear(&d);
	if (!z || zone_table_add(table, z) < 0) {
		printf("# the static zone cannot be built\n");
		return -1;
	}
	memset(&env, 0, sizeof(env));
	env.zones = table;
	env.udp_max_size = 1232;
	env.update = acme_update_handler(acme, &env);
	return 0;
}

static void stop(void)
{
	acme_free(acme);
	zone_table_free(table);
	acme = NULL;
	table = NULL;
}

static void setup(void)
{
	snprintf(jpath, sizeof(jpath), "%s/acme.db", dir);
	snprintf(zpath, sizeof(zpath), "%s/acme.zone", dir);
	snprintf(wjpath, sizeof(wjpath), "%s/wrap.db", dir);
	snprintf(wzpath, sizeof(wzpath), "%s/wrap.zone", dir);
	write_file(zpath, zone_text);
	write_file(wzpath, "$ORIGIN wrap.example.\n$TTL 60\n"
	                   "@ SOA ns1.example. h.example. 4294967295 1 1 1 1\n@ NS ns1.example.\n");

	key_cfg(&ckeys[0], &kdefault, "update.acme.example.", TSIG_HMAC_SHA256, secret_a, 32);
	key_cfg(&ckeys[1], &kwide, "wide.acme.example.", TSIG_HMAC_SHA1, secret_b, 20);
	ckeys[1].allow_types = wide_types;
	ckeys[1].n_allow_types = sizeof(wide_types) / sizeof(wide_types[0]);
	key_cfg(&ckeys[2], &klimited, "limited.", TSIG_HMAC_SHA512, secret_c, 32);
	ckeys[2].allow_names = limited_names;
	ckeys[2].n_allow_names = 1;
	key_cfg(&ckeys[3], &kapex, "apex-key.", TSIG_HMAC_SHA256, secret_c, 32);
	ckeys[3].allow_names = apex_names;
	ckeys[3].n_allow_names = 1;
	ckeys[3].allow_types = txt_only;
	ckeys[3].n_allow_types = 1;
	key_cfg(&ckeys[4], &kwrap, "wrap-key.", TSIG_HMAC_SHA256, secret_a, 32);

	memset(&zc, 0, sizeof(zc));
	zc.zone = "acme.example";
	zc.store_type = "sqlite";
	zc.allow_update = true;
	zc.journal_path = jpath;
	zc.zone_path = zpath;
	zc.tsig_keys = ckeys;
	zc.n_tsig_keys = 4;
	zc.stale_txt_age_s = 100;
	zc.max_records_per_name = 4;
	zc.max_records = 1000;
	zc.max_txt_len = 200;

	wrapzc = zc;
	wrapzc.zone = "wrap.example.";
	wrapzc.journal_path = wjpath;
	wrapzc.zone_path = wzpath;
	wrapzc.tsig_keys = &ckeys[4];
	wrapzc.n_tsig_keys = 1;
}

/* --- tests --- */

static void test_start(void)
{
	is_int(serial(), 10, "seeded: serial 10 from the zone file");
	is_int(count_at("existing.acme.example.", RR_TXT), 2, "seeded: two TXT at existing");
	is_int(count_at("acme.example.", RR_NS), 2, "seeded: two apex NS");
	is_int(serial_of("wrap.example."), 0xffffffffu, "wrap zone at serial 0xffffffff");
}

static void test_basic_forms(void)
{
	struct mb m;
	uint8_t rd[256];
	const char *n = "_acme-challenge.site.acme.example.";

	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, n, 60, "token-1");
	is_int(send_msg(&m, NULL), RCODE_REFUSED, "unsigned UPDATE: REFUSED");
	is_int(count_at(n, RR_TXT), 0, "unsigned UPDATE changed nothing");
	ok(tsig_find(q.tx, q.tx_len, &(struct tsig_rr){ 0 }) == 0, "unsigned request, unsigned answer");

	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "add TXT: NOERROR");
	ok(has_txt(n, "token-1"), "the TXT is served");
	is_int(serial(), 11, "serial bumped once");
	ok(response_verifies(&kdefault), "the response is signed with the request's key");
	is_int(q.tx[2] & 0x80, 0x80, "QR set");
	is_int((q.tx[2] >> 3) & 0xF, OPCODE_UPDATE, "opcode UPDATE echoed");
	is_int(wire_get_u16(q.tx), last_id, "ID echoed");
	is_int(wire_get_u16(q.tx + 4), 1, "zone section echoed");
	is_int(wire_get_u16(q.tx + 6) + wire_get_u16(q.tx + 8), 0, "no prerequisite/update sections");

	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "the same add again: NOERROR");
	is_int(serial(), 11, "an identical RR is a no-op: serial unchanged");

	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, n, 120, "token-1");
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "the same RR with another TTL");
	is_int(serial(), 12, "a TTL change bumps the serial");
	is_int(rrset_at(n, RR_TXT)->ttl, 120, "TTL now 120");

	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, n, 30, "token-2");
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "a second TXT with TTL 30");
	is_int(count_at(n, RR_TXT), 2, "two TXT");
	is_int(rrset_at(n, RR_TXT)->ttl, 30, "the whole RRset takes the new TTL");
	is_int(serial(), 13, "serial 13");

	/* Delete one RR: class NONE, TTL 0. */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, n, RR_TXT, CLASS_NONE, 0, rd, txt(rd, "token-1"));
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "delete one RR");
	ok(!has_txt(n, "token-1") && has_txt(n, "token-2"), "only that RR went");
	is_int(serial(), 14, "serial 14");

	/* Delete an RR that is not there: no change. */
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "delete a missing RR: NOERROR");
	is_int(serial(), 14, "and no serial bump");

	/* Lego's present(): delete the RRset, then add. */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, n, RR_TXT, CLASS_ANY, 0, NULL, 0);
	add_txt(&m, n, 120, "token-3");
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "delete RRset + add in one UPDATE");
	is_int(count_at(n, RR_TXT), 1, "one TXT left");
	ok(has_txt(n, "token-3"), "the new one");
	is_int(serial(), 15, "one serial bump for the whole UPDATE");

	/* Delete an RRset: class ANY, TTL 0, RDLENGTH 0. */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, n, RR_TXT, CLASS_ANY, 0, NULL, 0);
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "delete RRset");
	is_int(count_at(n, RR_TXT), 0, "gone");
	is_int(serial(), 16, "serial 16");

	/* Delete all RRsets of a name (wide key may change TXT and A). */
	is_int(count_at("mixed.acme.example.", RR_A), 1, "mixed has an A");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, "mixed.acme.example.", RR_ANY, CLASS_ANY, 0, NULL, 0);
	is_int(send_msg(&m, &kwide), RCODE_NOERROR, "delete all RRsets of a name");
	is_int(count_at("mixed.acme.example.", RR_A) + count_at("mixed.acme.example.", RR_TXT), 0,
	       "the name is empty");
	ok(response_verifies(&kwide), "hmac-sha1 response verifies");
	is_int(serial(), 17, "serial 17");
}

static void test_prerequisites(void)
{
	struct mb m;
	uint8_t rd[256];
	const char *e = "existing.acme.example.";
	const char *t = "p.acme.example.";
	uint32_t s0 = serial();

	/* RRset exists (value independent). */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, e, RR_TXT, CLASS_ANY, 0, NULL, 0);
	add_txt(&m, t, 60, "p1");
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "RRset exists, met: applied");
	ok(has_txt(t, "p1"), "the update happened");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, "nothere.acme.example.", RR_TXT, CLASS_ANY, 0, NULL, 0);
	add_txt(&m, t, 60, "p2");
	is_int(send_msg(&m, &kdefault), RCODE_NXRRSET, "RRset exists, not met: NXRRSET");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, "www.acme.example.", RR_TXT, CLASS_ANY, 0, NULL, 0);
	add_txt(&m, t, 60, "p2");
	is_int(send_msg(&m, &kdefault), RCODE_NXRRSET, "the name exists but not the type: NXRRSET");

	/* RRset does not exist. */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, e, RR_TXT, CLASS_NONE, 0, NULL, 0);
	add_txt(&m, t, 60, "p2");
	is_int(send_msg(&m, &kdefault), RCODE_YXRRSET, "RRset does not exist, but does: YXRRSET");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, e, RR_A, CLASS_NONE, 0, NULL, 0);
	add_txt(&m, t, 60, "p2");
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "RRset does not exist, met");

	/* Name is in use / not in use. */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, "nothere.acme.example.", RR_ANY, CLASS_ANY, 0, NULL, 0);
	add_txt(&m, t, 60, "p3");
	is_int(send_msg(&m, &kdefault), RCODE_NXDOMAIN, "name in use, not met: NXDOMAIN");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, "site.acme.example.", RR_ANY, CLASS_ANY, 0, NULL, 0);
	add_txt(&m, t, 60, "p3");
	is_int(send_msg(&m, &kdefault), RCODE_NXDOMAIN, "an empty non-terminal is not in use: NXDOMAIN");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, e, RR_ANY, CLASS_NONE, 0, NULL, 0);
	add_txt(&m, t, 60, "p3");
	is_int(send_msg(&m, &kdefault), RCODE_YXDOMAIN, "name not in use, but is: YXDOMAIN");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, "fresh.acme.example.", RR_ANY, CLASS_NONE, 0, NULL, 0);
	mb_rr(&m, 1, e, RR_ANY, CLASS_ANY, 0, NULL, 0);
	add_txt(&m, "fresh.acme.example.", 60, "f");
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "name not in use + name in use, both met");

	/* RRset exists (value dependent): the whole set, TTLs aside. */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, e, RR_TXT, CLASS_IN, 0, rd, txt(rd, "b"));
	mb_rr(&m, 1, e, RR_TXT, CLASS_IN, 0, rd, txt(rd, "a"));
	add_txt(&m, t, 60, "v1");
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "value-dependent, exact set: met");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, e, RR_TXT, CLASS_IN, 0, rd, txt(rd, "a"));
	mb_rr(&m, 1, e, RR_TXT, CLASS_IN, 0, rd, txt(rd, "b"));
	mb_rr(&m, 1, e, RR_TXT, CLASS_IN, 0, rd, txt(rd, "a"));
	add_txt(&m, t, 60, "v2");
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "value-dependent with a duplicate: met");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, e, RR_TXT, CLASS_IN, 0, rd, txt(rd, "a"));
	add_txt(&m, t, 60, "v3");
	is_int(send_msg(&m, &kdefault), RCODE_NXRRSET, "value-dependent, a subset: NXRRSET");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, e, RR_TXT, CLASS_IN, 0, rd, txt(rd, "a"));
	mb_rr(&m, 1, e, RR_TXT, CLASS_IN, 0, rd, txt(rd, "b"));
	mb_rr(&m, 1, e, RR_TXT, CLASS_IN, 0, rd, txt(rd, "c"));
	add_txt(&m, t, 60, "v3");
	is_int(send_msg(&m, &kdefault), RCODE_NXRRSET, "value-dependent, a superset: NXRRSET");
	ok(!has_txt(t, "v3"), "failed prerequisites changed nothing");

	/* Malformed prerequisites. */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, e, RR_TXT, CLASS_ANY, 60, NULL, 0);
	is_int(send_msg(&m, &kdefault), RCODE_FORMERR, "prerequisite with TTL 60: FORMERR");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, e, RR_TXT, CLASS_ANY, 0, rd, txt(rd, "a"));
	is_int(send_msg(&m, &kdefault), RCODE_FORMERR, "class ANY prerequisite with rdata: FORMERR");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, e, RR_TXT, CLASS_NONE, 0, rd, txt(rd, "a"));
	is_int(send_msg(&m, &kdefault), RCODE_FORMERR, "class NONE prerequisite with rdata: FORMERR");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, e, RR_TXT, CLASS_CH, 0, NULL, 0);
	is_int(send_msg(&m, &kdefault), RCODE_FORMERR, "class CH prerequisite: FORMERR");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 1, "www.example.org.", RR_TXT, CLASS_ANY, 0, NULL, 0);
	is_int(send_msg(&m, &kdefault), RCODE_NOTZONE, "prerequisite outside the zone: NOTZONE");
	is_int(serial(), s0 + 5, "five UPDATEs applied, one serial bump each");
}

static void test_prescan_and_zone(void)
{
	struct mb m;
	uint8_t rd[256];
	uint32_t s0 = serial();
	const char *n = "scan.acme.example.";

	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, n, 60, "good");
	add_txt(&m, "x.example.org.", 60, "outside");
	is_int(send_msg(&m, &kdefault), RCODE_NOTZONE, "an update outside the zone: NOTZONE");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, n, 60, "good");
	mb_rr(&m, 2, n, RR_ANY, CLASS_IN, 60, NULL, 0);
	is_int(send_msg(&m, &kdefault), RCODE_FORMERR, "adding type ANY: FORMERR");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, n, 60, "good");
	mb_rr(&m, 2, n, RR_TXT, CLASS_ANY, 60, NULL, 0);
	is_int(send_msg(&m, &kdefault), RCODE_FORMERR, "delete RRset with TTL 60: FORMERR");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, n, RR_TXT, CLASS_ANY, 0, rd, txt(rd, "x"));
	is_int(send_msg(&m, &kdefault), RCODE_FORMERR, "delete RRset with rdata: FORMERR");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, n, RR_AXFR, CLASS_ANY, 0, NULL, 0);
	is_int(send_msg(&m, &kdefault), RCODE_FORMERR, "delete RRset of type AXFR: FORMERR");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, n, RR_ANY, CLASS_NONE, 0, NULL, 0);
	is_int(send_msg(&m, &kdefault), RCODE_FORMERR, "delete RR of type ANY: FORMERR");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, n, RR_TXT, CLASS_NONE, 60, rd, txt(rd, "x"));
	is_int(send_msg(&m, &kdefault), RCODE_FORMERR, "delete RR with TTL 60: FORMERR");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, n, RR_TXT, CLASS_CH, 60, rd, txt(rd, "x"));
	is_int(send_msg(&m, &kdefault), RCODE_FORMERR, "update of class CH: FORMERR");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, n, RR_TXT, CLASS_IN, 60, "\x05" "abc", 4);
	is_int(send_msg(&m, &kdefault), RCODE_FORMERR, "malformed TXT rdata: FORMERR");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, n, RR_TXT, CLASS_IN, 60, NULL, 0);
	is_int(send_msg(&m, &kdefault), RCODE_FORMERR, "empty TXT rdata: FORMERR");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, n, RR_A, CLASS_IN, 60, "\x01\x02\x03", 3);
	is_int(send_msg(&m, &kwide), RCODE_FORMERR, "a 3-byte A: FORMERR");
	is_int(count_at(n, RR_TXT), 0, "no prescan failure applied its good first update");
	is_int(serial(), s0, "serial unchanged");

	/* The zone section. */
	mb_init(&m, OPCODE_UPDATE, NULL, 0, 0);
	add_txt(&m, n, 60, "z");
	is_int(send_msg(&m, &kdefault), RCODE_FORMERR, "ZOCOUNT 0: FORMERR");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_A, CLASS_IN);
	add_txt(&m, n, 60, "z");
	is_int(send_msg(&m, &kdefault), RCODE_FORMERR, "ZTYPE A: FORMERR");
	mb_init(&m, OPCODE_UPDATE, "other.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "a.other.example.", 60, "z");
	is_int(send_msg(&m, &kdefault), RCODE_NOTAUTH, "a zone we do not serve: NOTAUTH");
	mb_init(&m, OPCODE_UPDATE, "sub.acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "a.sub.acme.example.", 60, "z");
	is_int(send_msg(&m, &kdefault), RCODE_NOTAUTH, "a name below our apex is not a zone: NOTAUTH");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_CH);
	add_txt(&m, n, 60, "z");
	is_int(send_msg(&m, &kdefault), RCODE_NOTAUTH, "zone class CH: NOTAUTH");
	mb_init(&m, OPCODE_UPDATE, "static.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "a.static.example.", 60, "z");
	is_int(send_msg(&m, &kdefault), RCODE_REFUSED, "a static zone: REFUSED");
	is_int(send_msg(&m, NULL), RCODE_REFUSED, "a static zone, unsigned: REFUSED");
	mb_init(&m, OPCODE_UPDATE, "wrap.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "a.wrap.example.", 60, "z");
	is_int(send_msg(&m, &kdefault), RCODE_REFUSED, "a key of another zone: REFUSED");
	is_int(serial_of("wrap.example."), 0xffffffffu, "the other zone did not change");
	is_int(serial(), s0, "serial still unchanged");
}

static void test_policy(void)
{
	struct mb m;
	uint8_t rd[2048];
	uint32_t s0 = serial();

	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, "host.acme.example.", RR_A, CLASS_IN, 60, "\xc0\x00\x02\x05", 4);
	is_int(send_msg(&m, &kdefault), RCODE_REFUSED, "default key adding an A: REFUSED");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "acme.example.", 60, "apex");
	is_int(send_msg(&m, &kdefault), RCODE_REFUSED, "default key adding at the apex: REFUSED");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "ok1.acme.example.", 60, "fine");
	mb_rr(&m, 2, "host.acme.example.", RR_A, CLASS_IN, 60, "\xc0\x00\x02\x05", 4);
	is_int(send_msg(&m, &kdefault), RCODE_REFUSED, "one refused RR refuses the whole UPDATE");
	is_int(count_at("ok1.acme.example.", RR_TXT), 0, "its allowed RR was not applied");

	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "elsewhere.acme.example.", 60, "x");
	is_int(send_msg(&m, &klimited), RCODE_REFUSED, "limited key outside sub: REFUSED");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "a.sub.acme.example.", 60, "x");
	is_int(send_msg(&m, &klimited), RCODE_NOERROR, "limited key inside sub: NOERROR");
	ok(response_verifies(&klimited), "hmac-sha512 response verifies");
	s0++;

	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "*.wild.acme.example.", 60, "x");
	is_int(send_msg(&m, &kdefault), RCODE_REFUSED, "a wildcard owner: REFUSED");

	/* Never changeable, whatever the key's types. */
	static const uint8_t soa[] = "\x03ns1\x07" "example\x00\x01h\x07" "example\x00"
	                             "\x00\x00\x10\x00\x00\x00\x0e\x10\x00\x00\x02\x58"
	                             "\x00\x01\x51\x80\x00\x00\x01\x2c";
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, "acme.example.", RR_SOA, CLASS_IN, 300, soa, sizeof(soa) - 1);
	is_int(send_msg(&m, &kwide), RCODE_REFUSED, "adding an SOA: REFUSED");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, "acme.example.", RR_NS, CLASS_NONE, 0, "\x03ns1\x07" "example", 13);
	is_int(send_msg(&m, &kwide), RCODE_REFUSED, "deleting an apex NS: REFUSED");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, "k.acme.example.", RR_DNSKEY, CLASS_IN, 300, "\x01\x01\x03\x0d\x01\x02", 6);
	is_int(send_msg(&m, &kwide), RCODE_REFUSED, "adding a DNSKEY: REFUSED");
	is_int(count_at("acme.example.", RR_NS), 2, "apex NS intact");

	/* An ANY deletion that would reach a type the key may not change. */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, "www.acme.example.", RR_ANY, CLASS_ANY, 0, NULL, 0);
	is_int(send_msg(&m, &kdefault), RCODE_REFUSED, "TXT-only key deleting all of a name with an A");
	is_int(count_at("www.acme.example.", RR_A), 1, "the A is still there");

	/* Deleting everything at the apex keeps the SOA and NS (RFC 2136 3.4.2.3). */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, "acme.example.", RR_ANY, CLASS_ANY, 0, NULL, 0);
	is_int(send_msg(&m, &kapex), RCODE_NOERROR, "apex key deleting all of the apex");
	is_int(count_at("acme.example.", RR_TXT), 0, "the apex TXT went");
	is_int(count_at("acme.example.", RR_NS), 2, "the NS stayed");
	is_int(count_at("acme.example.", RR_SOA), 1, "the SOA stayed");
	s0++;

	/* TXT sizes: max_txt_len is 200 here, and a record may hold 1024 bytes. */
	char s201[202];
	memset(s201, 'x', 201);
	s201[201] = 0;
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "big.acme.example.", 60, s201);
	is_int(send_msg(&m, &kdefault), RCODE_REFUSED, "a 201-byte string over max_txt_len 200: REFUSED");
	uint16_t l = 0;
	for (int i = 0; i < 6; i++) {
		rd[l] = 200;
		memset(rd + l + 1, 'y', 200);
		l = (uint16_t)(l + 201);
	}
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, "big.acme.example.", RR_TXT, CLASS_IN, 60, rd, l);
	is_int(send_msg(&m, &kdefault), RCODE_REFUSED, "a 1206-byte TXT record: REFUSED");
	is_int(count_at("big.acme.example.", RR_TXT), 0, "neither added");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, "big.acme.example.", RR_TXT, CLASS_IN, 60, rd, (uint16_t)(5 * 201));
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "five 200-byte strings (1005 bytes): fine");
	s0++;

	/* Caps: max_records_per_name is 4. */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "cap.acme.example.", 60, "1");
	add_txt(&m, "cap.acme.example.", 60, "2");
	add_txt(&m, "cap.acme.example.", 60, "3");
	add_txt(&m, "cap.acme.example.", 60, "4");
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "four TXT at one name");
	s0++;
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "cap.acme.example.", 60, "5");
	is_int(send_msg(&m, &kdefault), RCODE_REFUSED, "a fifth: REFUSED (max_records_per_name)");
	is_int(count_at("cap.acme.example.", RR_TXT), 4, "still four");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, "cap.acme.example.", RR_TXT, CLASS_NONE, 0, rd, txt(rd, "1"));
	add_txt(&m, "cap.acme.example.", 60, "5");
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "replace one at a full name: fine");
	s0++;

	/* Many names, each touched at places far apart in the message (the
	 * names are found through an index, and the cap counts a name's
	 * changes wherever they are). */
	char name[64], value[16];
	for (int every = 50; every <= 75; every += 25) {
		mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
		for (int round = 0; round < 2; round++) {
			for (int i = 0; i < 150; i++) {
				snprintf(name, sizeof(name), "many%d.acme.example.", i);
				add_txt(&m, name, 60, round ? "second" : "first");
				snprintf(value, sizeof(value), "%d-%d", round, i);
				if (i % every == 0)
					add_txt(&m, "over.acme.example.", 60, value);
			}
		}
		if (every == 50) {
			is_int(send_msg(&m, &kdefault), RCODE_REFUSED,
			       "150 names, and 6 TXT at one of them spread over the message: REFUSED");
			is_int(count_at("over.acme.example.", RR_TXT), 0, "nothing added there");
			is_int(count_at("many7.acme.example.", RR_TXT), 0, "nor anywhere");
		}
	}
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "the same with 4 at that name: NOERROR");
	s0++;
	is_int(count_at("over.acme.example.", RR_TXT), 4, "the four");
	is_int(count_at("many0.acme.example.", RR_TXT), 2, "two at the first name");
	is_int(count_at("many149.acme.example.", RR_TXT), 2, "two at the last");
	/* Gone again, for the tests that count the zone's records. */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, "over.acme.example.", RR_ANY, CLASS_ANY, 0, NULL, 0);
	for (int i = 0; i < 150; i++) {
		snprintf(name, sizeof(name), "many%d.acme.example.", i);
		mb_rr(&m, 2, name, RR_ANY, CLASS_ANY, 0, NULL, 0);
	}
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "all of them deleted again");
	s0++;
	is_int(count_at("many7.acme.example.", RR_TXT), 0, "none left");
	is_int(serial(), s0, "serial counts the applied UPDATEs only");
}

static void test_cname_rules(void)
{
	struct mb m;
	uint32_t s0 = serial();
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "alias.acme.example.", 60, "beside a cname");
	is_int(send_msg(&m, &kwide), RCODE_NOERROR, "TXT at a CNAME name: NOERROR");
	is_int(count_at("alias.acme.example.", RR_TXT), 0, "but ignored");
	is_int(serial(), s0, "no change, no bump");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, "existing.acme.example.", RR_CNAME, CLASS_IN, 60, "\x03www\x04" "acme\x07" "example", 18);
	is_int(send_msg(&m, &kwide), RCODE_NOERROR, "CNAME at a name with data: NOERROR");
	is_int(count_at("existing.acme.example.", RR_CNAME), 0, "but ignored");
	/* Upper case and compression in rdata are canonicalized. */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	mb_rr(&m, 2, "alias.acme.example.", RR_CNAME, CLASS_IN, 60, "\x05" "OTHER\xc0\x0c", 8);
	is_int(send_msg(&m, &kwide), RCODE_NOERROR, "CNAME replaces the CNAME");
	const struct rrset *c = rrset_at("alias.acme.example.", RR_CNAME);
	ok(c && c->count == 1 && c->rr[0].len == 20 &&
	   memcmp(c->rr[0].data, "\x05other\x04" "acme\x07" "example", 20) == 0,
	   "one CNAME, decompressed and lowercased");
	is_int(serial(), s0 + 1, "one bump");
}

static void test_serial_wrap(void)
{
	struct mb m;
	mb_init(&m, OPCODE_UPDATE, "wrap.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "a.wrap.example.", 60, "1");
	is_int(send_msg(&m, &kwrap), RCODE_NOERROR, "update in the wrap zone");
	is_int(serial_of("wrap.example."), 0, "0xffffffff + 1 = 0 (RFC 1982)");
	mb_init(&m, OPCODE_UPDATE, "wrap.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "a.wrap.example.", 60, "2");
	is_int(send_msg(&m, &kwrap), RCODE_NOERROR, "another");
	is_int(serial_of("wrap.example."), 1, "then 1");
	is_int(update_serial_next(41), 42, "update_serial_next(41)");
	is_int(update_serial_next(0x7fffffffu), 0x80000000u, "update_serial_next(2^31 - 1)");
}

static void test_large(void)
{
	/* 400 names in one UPDATE (about 25 KB), over TCP and over UDP. */
	static struct mb m;
	char name[64];
	uint32_t s0 = serial();
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	for (int i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "bulk%d.t.acme.example.", i);
		add_txt(&m, name, 60, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	}
	ok(m.len > 20000, "a %zu-byte UPDATE", m.len);
	is_int(send_at(&m, &kdefault, (uint64_t)time(NULL), QUERY_TCP), RCODE_NOERROR,
	       "400 additions over TCP");
	is_int(count_at("bulk399.t.acme.example.", RR_TXT), 1, "the last one is served");
	is_int(serial(), s0 + 1, "one serial bump for 400 records");
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	for (int i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "bulk%d.t.acme.example.", i);
		mb_rr(&m, 2, name, RR_TXT, CLASS_ANY, 0, NULL, 0);
	}
	is_int(send_at(&m, &kdefault, (uint64_t)time(NULL), QUERY_UDP), RCODE_NOERROR,
	       "400 deletions in one large UDP message");
	is_int(count_at("bulk0.t.acme.example.", RR_TXT), 0, "gone");
	is_int(serial(), s0 + 2, "one more bump");

	/* max_records: the zone allows 1000 records; 1900 more would exceed it. */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	for (int i = 0; i < 2001 && m.len < 65000; i++) {
		snprintf(name, sizeof(name), "m%d.t.acme.example.", i);
		uint8_t rd[4];
		mb_rr(&m, 2, name, RR_TXT, CLASS_IN, 60, rd, txt(rd, "x"));
	}
	is_int(send_at(&m, &kdefault, (uint64_t)time(NULL), QUERY_TCP), RCODE_REFUSED,
	       "more than max_records: REFUSED");
	is_int(count_at("m0.t.acme.example.", RR_TXT), 0, "nothing added");
}

static void test_tsig_errors(void)
{
	struct mb m;
	struct tsig_rr t;
	uint32_t s0 = serial();
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "t.acme.example.", 60, "tsig");

	struct tsig_key unknown = kdefault;
	dname_from_str("nobody.example.", unknown.name);
	is_int(send_msg(&m, &unknown), RCODE_NOTAUTH, "unknown key: NOTAUTH");
	ok(tsig_find(q.tx, q.tx_len, &t) == 1, "with a TSIG");
	is_int(t.error, TSIG_BADKEY, "error BADKEY");
	is_int(t.mac_len, 0, "unsigned (MAC size 0)");

	struct tsig_key wrongalg = kdefault;
	wrongalg.alg = TSIG_HMAC_SHA384;
	is_int(send_msg(&m, &wrongalg), RCODE_NOTAUTH, "right name, wrong algorithm: NOTAUTH");
	tsig_find(q.tx, q.tx_len, &t);
	is_int(t.error, TSIG_BADKEY, "error BADKEY");

	struct tsig_key wrong = kdefault;
	wrong.secret[3] ^= 0x40;
	is_int(send_msg(&m, &wrong), RCODE_NOTAUTH, "wrong secret: NOTAUTH");
	ok(tsig_find(q.tx, q.tx_len, &t) == 1, "with a TSIG");
	is_int(t.error, TSIG_BADSIG, "error BADSIG");
	is_int(t.mac_len, 0, "unsigned (MAC size 0)");

	uint64_t now = (uint64_t)time(NULL);
	is_int(send_at(&m, &kdefault, now - 1000, QUERY_UDP), RCODE_NOTAUTH, "1000 s skew: NOTAUTH");
	ok(tsig_find(q.tx, q.tx_len, &t) == 1, "with a TSIG");
	is_int(t.error, TSIG_BADTIME, "error BADTIME");
	is_int(t.time_signed, now - 1000, "Time Signed is the client's");
	is_int(t.other_len, 6, "Other Len 6");
	if (t.other_len == 6) {
		uint64_t server = (uint64_t)wire_get_u16(t.other) << 32 | wire_get_u32(t.other + 2);
		ok(server >= now && server <= now + 5, "Other Data is the server's time");
	}
	ok(response_verifies(&kdefault), "the BADTIME response is signed");
	is_int(count_at("t.acme.example.", RR_TXT), 0, "no TSIG failure changed anything");
	is_int(serial(), s0, "serial unchanged");

	/* A truncated MAC below the floor: FORMERR. */
	uint8_t buf[1024];
	memcpy(buf, m.buf, m.len);
	size_t len = m.len;
	struct tsig_rr f;
	memset(&f, 0, sizeof(f));
	memcpy(f.key_name, kdefault.name, dname_len(kdefault.name));
	memcpy(f.alg_name, "\x0bhmac-sha256", 13);
	f.time_signed = now;
	f.fudge = 300;
	f.orig_id = wire_get_u16(m.buf);
	tsig_append(buf, &len, sizeof(buf), &f, &kdefault, NULL, 0, NULL);
	/* Rewrite the MAC size from 32 to 8 and drop 24 bytes of MAC. */
	size_t mac_at = m.len + dname_len(kdefault.name) + 10 + 13 + 10;
	wire_set_u16(buf + mac_at - 2, 8);
	memmove(buf + mac_at + 8, buf + mac_at + 32, len - mac_at - 32);
	len -= 24;
	size_t rdlen_at = m.len + dname_len(kdefault.name) + 8;
	wire_set_u16(buf + rdlen_at, (uint16_t)(wire_get_u16(buf + rdlen_at) - 24));
	is_int(run(buf, len, QUERY_UDP), RCODE_FORMERR, "MAC truncated to 8 bytes: FORMERR");
	is_int(serial(), s0, "serial unchanged");

	/* A TSIG that is not last: core rejects the message as FORMERR. */
	memcpy(buf, m.buf, m.len);
	len = m.len;
	tsig_append(buf, &len, sizeof(buf), &f, &kdefault, NULL, 0, NULL);
	memcpy(buf + len, "\x00\x00\x01\x00\x01\x00\x00\x00\x00\x00\x04\x7f\x00\x00\x01", 15);
	len += 15;
	wire_set_u16(buf + 10, 2);
	is_int(run(buf, len, QUERY_UDP), RCODE_FORMERR, "TSIG not last: FORMERR");

	/*
	 * BADKEY with long key and algorithm names over UDP without EDNS: the
	 * echoed TSIG (496 bytes) fits in 512 after a bare header but not
	 * after the question too, so the answer is the header with TC set and
	 * every section empty, then the unsigned TSIG.
	 */
	uint8_t *kn = f.key_name, *an = f.alg_name;
	memset(&f, 0, sizeof(f));
	for (int i = 0; i < 3; i++, kn += 64, an += 64) {
		*kn = 63;
		memset(kn + 1, 'k', 63);
		*an = 63;
		memset(an + 1, 'a', 63);
	}
	*kn = 36;
	memset(kn + 1, 'k', 36);
	kn[37] = 0;
	*an = 46;
	memset(an + 1, 'a', 46);
	an[47] = 0;
	is_int(dname_len(f.key_name) + dname_len(f.alg_name), 470, "names of 470 bytes");
	f.time_signed = now;
	f.fudge = 300;
	f.orig_id = wire_get_u16(m.buf);
	memcpy(buf, m.buf, m.len);
	len = m.len;
	tsig_append(buf, &len, sizeof(buf), &f, NULL, NULL, 0, NULL);
	is_int(run(buf, len, QUERY_UDP), RCODE_NOTAUTH, "long unknown key: NOTAUTH");
	is_int(q.tx_len, 12 + 496, "bare header + TSIG: 508 bytes");
	ok(q.tx[2] & 0x02, "TC set");
	ok(wire_get_u16(q.tx + 4) == 0 && wire_get_u16(q.tx + 6) == 0 &&
	   wire_get_u16(q.tx + 8) == 0 && wire_get_u16(q.tx + 10) == 1,
	   "no question, answer or authority; the TSIG alone in additional");
	is_int(wire_get_u16(q.tx), wire_get_u16(m.buf), "ID echoed");
	ok(tsig_find(q.tx, q.tx_len, &t) == 1 && t.error == TSIG_BADKEY && t.mac_len == 0,
	   "an unsigned BADKEY TSIG");
}

/* Issue #16 item 4: a captured signed UPDATE, sent again within the fudge. */
static void test_replay(void)
{
	struct mb m;
	struct tsig_rr t;
	static uint8_t add[2048], cut[2048];
	const char *n = "replay.acme.example.";
	uint64_t now = (uint64_t)time(NULL);
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, n, 60, "challenge-1");
	size_t add_len = sign_copy(&m, &kdefault, now, add, sizeof(add));

	uint32_t s0 = serial();
	is_int(run(add, add_len, QUERY_UDP), RCODE_NOERROR, "the UPDATE: NOERROR");
	is_int(serial(), s0 + 1, "applied");
	is_int(run(add, add_len, QUERY_UDP), RCODE_NOTAUTH, "the same bytes again: NOTAUTH");
	ok(tsig_find(q.tx, q.tx_len, &t) == 1 && t.error == TSIG_BADTIME, "TSIG error BADTIME");
	ok(response_verifies(&kdefault), "the refusal is signed, as BADTIME answers are");
	is_int(serial(), s0 + 1, "the replay changed nothing");
	is_int(run(add, add_len, QUERY_TCP), RCODE_NOTAUTH, "over TCP too");

	/* Lego's cleanup, then the captured present replayed: the record must stay gone. */
	struct mb del;
	mb_init(&del, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	uint8_t rd[64];
	mb_rr(&del, 2, n, RR_TXT, CLASS_NONE, 0, rd, txt(rd, "challenge-1"));
	is_int(send_msg(&del, &kdefault), RCODE_NOERROR, "cleanup: NOERROR");
	is_int(run(add, add_len, QUERY_UDP), RCODE_NOTAUTH, "the old present replayed: NOTAUTH");
	is_int(count_at(n, RR_TXT), 0, "it did not come back");

	/* The MAC cut to 16 of its 32 bytes still verifies (RFC 8945 5.2.2.1): still a replay. */
	memcpy(cut, add, add_len);
	size_t mac_at = m.len + dname_len(kdefault.name) + 10 + 13 + 10;
	wire_set_u16(cut + mac_at - 2, 16);
	memmove(cut + mac_at + 16, cut + mac_at + 32, add_len - mac_at - 32);
	size_t rdlen_at = m.len + dname_len(kdefault.name) + 8;
	wire_set_u16(cut + rdlen_at, (uint16_t)(wire_get_u16(cut + rdlen_at) - 16));
	is_int(run(cut, add_len - 16, QUERY_UDP), RCODE_NOTAUTH, "replayed with a truncated MAC");
	ok(tsig_find(q.tx, q.tx_len, &t) == 1 && t.error == TSIG_BADTIME, "BADTIME");

	/* What Lego does: several UPDATEs within one second, each its own MAC. */
	for (int i = 0; i < 3; i++) {
		mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
		add_txt(&m, n, 60, i == 1 ? "b" : "a");
		is_int(send_at(&m, &kdefault, now, QUERY_UDP), RCODE_NOERROR,
		       "UPDATE %d of the same second: NOERROR", i);
	}

	/* Signed before the server started (within the fudge): the process before a restart
	 * may have accepted it. */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, n, 60, "before-start");
	is_int(send_at(&m, &kdefault, now - 200, QUERY_UDP), RCODE_NOTAUTH,
	       "signed before the server started: NOTAUTH");
	ok(tsig_find(q.tx, q.tx_len, &t) == 1 && t.error == TSIG_BADTIME, "BADTIME");
	ok(!has_txt(n, "before-start"), "not applied");

	/* Signed queries change nothing and are not remembered. */
	mb_init(&m, OPCODE_QUERY, "www.acme.example.", RR_A, CLASS_IN);
	size_t qlen = sign_copy(&m, &kdefault, now, cut, sizeof(cut));
	is_int(run(cut, qlen, QUERY_UDP), RCODE_NOERROR, "a signed query");
	is_int(run(cut, qlen, QUERY_UDP), RCODE_NOERROR, "the same signed query again");
}

static void test_signed_query(void)
{
	struct mb m;
	mb_init(&m, OPCODE_QUERY, "www.acme.example.", RR_A, CLASS_IN);
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "signed query: NOERROR");
	is_int(wire_get_u16(q.tx + 6), 1, "one answer");
	is_int(q.tx[2] & 0x04, 0x04, "authoritative");
	ok(response_verifies(&kdefault), "the answer is signed");
	mb_init(&m, OPCODE_QUERY, "www.static.example.", RR_A, CLASS_IN);
	is_int(send_msg(&m, &kwide), RCODE_NXDOMAIN, "signed query into a static zone: answered");
	ok(response_verifies(&kwide), "and signed");
	struct tsig_key wrong = kdefault;
	wrong.secret[0] ^= 1;
	mb_init(&m, OPCODE_QUERY, "www.acme.example.", RR_A, CLASS_IN);
	is_int(send_msg(&m, &wrong), RCODE_NOTAUTH, "signed query with a wrong MAC: NOTAUTH");
	is_int(wire_get_u16(q.tx + 6), 0, "no answer");
	mb_init(&m, OPCODE_NOTIFY, "acme.example.", RR_SOA, CLASS_IN);
	is_int(send_msg(&m, &kdefault), RCODE_NOTIMP, "signed NOTIFY: NOTIMP");
	ok(response_verifies(&kdefault), "signed");
}

/* TXT records at the names fmt % 0 .. n - 1. */
static int count_prefixed(const char *fmt, int n)
{
	char name[64];
	int sum = 0;
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), fmt, i);
		sum += count_at(name, RR_TXT);
	}
	return sum;
}

static void test_purge(void)
{
	struct mb m;
	const char *n = "stale.acme.example.";
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, n, 60, "old");
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "add a TXT to go stale");
	uint32_t s0 = serial();
	uint8_t apex[DNAME_MAX];
	dname_from_str("acme.example.", apex);
	int64_t now = (int64_t)time(NULL);
	is_int(acme_purge_stale(acme, apex, now + 50), 0, "50 s later: nothing stale");
	is_int(serial(), s0, "no bump");
	int removed = acme_purge_stale(acme, apex, now + 101);
	ok(removed >= 1, "101 s later (age 100): stale TXT removed (%d)", removed);
	is_int(count_at(n, RR_TXT), 0, "it is gone");
	is_int(serial(), s0 + 1, "one serial bump for the purge");
	is_int(count_at("existing.acme.example.", RR_TXT), 2, "zone-file TXT records are never stale");
	is_int(acme_purge_stale(acme, apex, now + 102), 0, "nothing left to purge");

	/* More than one commit takes (64, purge.c): 100 stale records go in two
	 * commits, each with its serial. */
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	char name[64];
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "p%d.acme.example.", i);
		add_txt(&m, name, 60, "old");
	}
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "add 100 TXT records to go stale");
	uint32_t s1 = serial();
	is_int(acme_purge_stale(acme, apex, now + 201), 64, "the first commit removes 64");
	is_int(serial(), s1 + 1, "with one serial bump");
	is_int(count_prefixed("p%d.acme.example.", 100), 36, "36 left");
	is_int(acme_purge_stale(acme, apex, now + 201), 36, "the next commit removes the rest");
	is_int(serial(), s1 + 2, "with its own serial");
	is_int(count_prefixed("p%d.acme.example.", 100), 0, "all 100 gone");
	is_int(acme_purge_stale(acme, apex, now + 202), 0, "nothing left to purge");
}

static bool has_ns(const char *target)
{
	const struct rrset *s = rrset_at("acme.example.", RR_NS);
	uint8_t rd[DNAME_MAX];
	dname_from_str(target, rd);
	size_t len = dname_len(rd);
	for (uint16_t i = 0; s && i < s->count; i++)
		if (s->rr[i].len == len && memcmp(s->rr[i].data, rd, len) == 0)
			return true;
	return false;
}

/*
 * A later start compares the zone file with what it said when it was last
 * applied and applies the difference (acme/file_diff.h); UPDATE-made
 * records stay, an unchanged file changes nothing, a bad edit nothing.
 */
static void test_restart(void)
{
	struct mb m;
	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "kept.acme.example.", 60, "by UPDATE");
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "an UPDATE adds a TXT");
	uint32_t s0 = serial();
	stop();
	ok(start() == 0, "restart, the zone file unchanged");
	is_int(serial(), s0, "nothing to apply: the serial stays");

	/* The edit: ns2 out, ns3 in, "existing b" out, a new TXT, serial 999. */
	write_file(zpath, "$ORIGIN acme.example.\n$TTL 300\n"
	                  "@ SOA ns1.example. hostmaster.example. 999 3600 600 86400 300\n"
	                  "@ NS ns1.example.\n@ NS ns3.example.\n"
	                  "@ TXT \"apex-static\"\nwww A 192.0.2.1\nexisting TXT \"a\"\n"
	                  "alias CNAME www\nmixed TXT \"m\"\nmixed A 192.0.2.7\n"
	                  "new TXT \"from the edited file\"\n");
	stop();
	ok(start() == 0, "restart after an edit");
	is_int(serial(), 999, "the file's serial 999, newer than the served %u", s0);
	is_int(count_at("acme.example.", RR_NS), 2, "two apex NS");
	ok(has_ns("ns1.example.") && has_ns("ns3.example.") && !has_ns("ns2.example."),
	   "the NS set is ns1 and ns3: ns2 removed, ns3 added");
	is_int(count_at("new.acme.example.", RR_TXT), 1, "the added TXT is served");
	ok(has_txt("existing.acme.example.", "a") && !has_txt("existing.acme.example.", "b"),
	   "the removed TXT is gone, the kept one stays");
	ok(has_txt("kept.acme.example.", "by UPDATE"), "the UPDATE-made TXT stays");

	stop();
	ok(start() == 0, "restart, the edit already applied");
	is_int(serial(), 999, "applied once: no second change");

	/* A serial the operator forgot to raise: served + 1. */
	write_file(zpath, "$ORIGIN acme.example.\n$TTL 300\n"
	                  "@ SOA ns1.example. hostmaster.example. 5 3600 600 86400 300\n"
	                  "@ NS ns1.example.\n@ NS ns3.example.\n"
	                  "@ TXT \"apex-static\"\nwww A 192.0.2.1\nexisting TXT \"a\"\n"
	                  "alias CNAME www\nmixed TXT \"m\"\nmixed A 192.0.2.7\n");
	stop();
	ok(start() == 0, "restart after a second edit");
	is_int(serial(), 1000, "serial 5 in the file is older: 999 + 1");
	is_int(count_at("new.acme.example.", RR_TXT), 0, "the TXT the file dropped is gone");

	/* Bad edits are refused and change nothing. */
	write_file(zpath, "$ORIGIN acme.example.\n$TTL 300\n"
	                  "@ SOA ns1.example. hostmaster.example. 2000 3600 600 86400 300\n"
	                  "new TXT \"no NS left\"\n");
	stop();
	ok(start() < 0, "an edit that removes every apex NS is refused");
	stop();
	write_file(zpath, "$ORIGIN acme.example.\n$TTL 300\n"
	                  "@ SOA ns1.example. hostmaster.example. 2000 3600 600 86400 300\n"
	                  "@ NS ns1.example.\nbad A 300.1.2.3\n");
	ok(start() < 0, "an edit with a bad address is refused");
	stop();
	write_file(zpath, "$ORIGIN acme.example.\n$TTL 300\n"
	                  "@ SOA ns1.example. hostmaster.example. 5 3600 600 86400 300\n"
	                  "@ NS ns1.example.\n@ NS ns3.example.\n"
	                  "@ TXT \"apex-static\"\nwww A 192.0.2.1\nexisting TXT \"a\"\n"
	                  "alias CNAME www\nmixed TXT \"m\"\nmixed A 192.0.2.7\n");
	ok(start() == 0, "the good file again");
	is_int(serial(), 1000, "nothing changed by the refused edits");
	ok(has_txt("kept.acme.example.", "by UPDATE"), "the UPDATE-made TXT stays");

	mb_init(&m, OPCODE_UPDATE, "acme.example.", RR_SOA, CLASS_IN);
	add_txt(&m, "after.acme.example.", 60, "restart");
	is_int(send_msg(&m, &kdefault), RCODE_NOERROR, "updates work after the restart");
	is_int(serial(), 1001, "serial continues");
}

/* The error convention of update.h: an errno back, the RCODE beside it. */
static void test_error_contract(void)
{
	const uint8_t *apex = (const uint8_t *)"\x04" "acme\x07" "example";
	struct update_rr out = { .name = (const uint8_t *)"\x05other\x07" "example", .type = RR_TXT,
	                         .rclass = CLASS_IN, .ttl = 60, .rdata = (const uint8_t *)"\x01x",
	                         .rdlen = 2 };
	struct update_msg m = { .zclass = CLASS_IN, .upd = &out, .n_upd = 1 };
	uint8_t rcode = 0xff;
	is_int(update_prescan(apex, &m, &rcode), -ERANGE, "prescan outside the zone: -ERANGE");
	is_int(rcode, RCODE_NOTZONE, "... with NOTZONE in the out parameter");
	out.name = (const uint8_t *)"\x01t\x04" "acme\x07" "example";
	out.rclass = 7;
	is_int(update_prescan(apex, &m, &rcode), -EBADMSG, "prescan, class 7: -EBADMSG");
	is_int(rcode, RCODE_FORMERR, "... with FORMERR");
	out.rclass = CLASS_IN;
	is_int(update_prescan(apex, &m, &rcode), 0, "prescan of a good TXT: 0");
	is_int(rcode, RCODE_NOERROR, "... with NOERROR");
	uint8_t hdr[12] = { 0 };
	is_int(update_parse(hdr, sizeof(hdr), q.arena, &m, &rcode), -EBADMSG,
	       "parse with ZOCOUNT 0: -EBADMSG");
	is_int(rcode, RCODE_FORMERR, "... with FORMERR");
	is_int(update_parse(hdr, 5, q.arena, &m, &rcode), -EBADMSG, "parse of 5 bytes: -EBADMSG");
}

int main(void)
{
	log_set_level(LOG_WARN);
	snprintf(dir, sizeof(dir), "/tmp/test_update.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	q.arena = arena_new(0);
	setup();
	if (start() < 0) {
		ok(0, "start");
		return done_testing();
	}
	test_start();
	test_basic_forms();
	test_prerequisites();
	test_prescan_and_zone();
	test_policy();
	test_cname_rules();
	test_serial_wrap();
	test_large();
	test_tsig_errors();
	test_replay();
	test_signed_query();
	test_purge();
	test_restart();
	test_error_contract();
	stop();
	arena_free(q.arena);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return done_testing();
}
