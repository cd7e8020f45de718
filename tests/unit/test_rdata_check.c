/* SPDX-License-Identifier: MIT */
/*
 * core/wire/rdata_check: the rdata wire-format table.
 *
 * Every sample record, parsed from presentation format by ldns (an
 * independent reading of the formats), passes; the same rdata with a byte
 * appended or (for name-bearing types) cut short fails; the malformed
 * rdata of issue #16 fails with a reason; names in messages are
 * decompressed and lowercased only where RFC 3597 and RFC 4034 say; and
 * the table agrees with ldns's type descriptors on which types carry names.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <ldns/ldns.h>

#include "check.h"
#include "core/wire/rdata_check.h"
#include "core/wire/rrset.h"

/* A record's rdata in wire form, through ldns; returns the length or -1. */
static int ldns_rdata(const char *text, uint16_t *type, uint8_t *out, size_t cap)
{
	ldns_rr *rr = NULL;
	if (ldns_rr_new_frm_str(&rr, text, 3600, NULL, NULL) != LDNS_STATUS_OK)
		return -1;
	ldns_rr2canonical(rr);   /* as zone_file.c reads records */
	ldns_buffer *b = ldns_buffer_new(1024);
	int n = -1;
	if (b && ldns_rr_rdata2buffer_wire(b, rr) == LDNS_STATUS_OK &&
	    ldns_buffer_position(b) <= cap) {
		n = (int)ldns_buffer_position(b);
		memcpy(out, ldns_buffer_begin(b), (size_t)n);
		*type = (uint16_t)ldns_rr_get_type(rr);
	}
	ldns_buffer_free(b);
	ldns_rr_free(rr);
	return n;
}

/* Sample records; `rest` when the format ends in "the rest" (a byte more is fine). */
static const struct sample {
	const char *text;
	bool rest;
} samples[] = {
	{ "a.example. A 192.0.2.1", false },
	{ "a.example. NS Ns1.Example.", false },
	{ "a.example. CNAME www.example.", false },
	{ "a.example. SOA ns1.example. h.example. 1 7200 3600 1209600 300", false },
	{ "a.example. PTR host.example.", false },
	{ "a.example. HINFO \"x86\" \"linux\"", false },
	{ "a.example. MINFO rm.example. em.example.", false },
	{ "a.example. MX 10 mx.example.", false },
	{ "a.example. TXT \"a\" \"bc\"", false },
	{ "a.example. RP mbox.example. txt.example.", false },
	{ "a.example. AFSDB 1 afs.example.", false },
	{ "a.example. X25 311061700956", false },
	{ "a.example. ISDN 150862028003217 004", false },
	{ "a.example. RT 10 relay.example.", false },
	{ "a.example. PX 10 net2.example. prmd.example.", false },
	{ "a.example. GPOS -32.6882 116.8652 10.0", false },
	{ "a.example. AAAA 2001:db8::1", false },
	{ "a.example. LOC 52 22 23.000 N 4 53 32.000 E -2.00m 0.00m 10000m 10m", false },
	{ "a.example. SRV 0 5 5060 sip.example.", false },
	{ "a.example. NAPTR 100 10 \"U\" \"E2U+sip\" \"!^.*$!sip:i@example.com!\" .", false },
	{ "a.example. KX 10 kx.example.", false },
	{ "a.example. CERT 1 0 0 AAAA", true },
	{ "a.example. DNAME target.example.", false },
	{ "a.example. APL 1:192.168.32.0/21 !1:192.168.38.0/28 2:2001:db8::/32", false },
	{ "a.example. DS 60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118", false },
	{ "a.example. DS 60485 13 2 "
	  "D4B7D520E7BB5F0F67674A0CCEB1E3E0614B93C4F9E99B8383F6A1E4469DA50A", false },
	{ "a.example. SSHFP 1 1 123456789abcdef67890123456789abcdef67890", true },
	{ "a.example. IPSECKEY 10 1 2 192.0.2.38 AQNRU3mG7TVTO2BkR47usntb102uFJtugbo6BSGvgqt4AQ==",
	  true },
	{ "a.example. IPSECKEY 10 3 2 gw.example. AQNRU3mG7TVTO2BkR47usntb102uFJtugbo6BSGvgqt4AQ==",
	  true },
	{ "a.example. NSEC host.example. A MX RRSIG NSEC TYPE1234", false },
	{ "a.example. DNSKEY 257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+"
	  "KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==", true },
	{ "a.example. DHCID AAIBY2/AuCccgoJbsaxcQc9TUapptP69lOjxfNuVAA2kjEA=", true },
	{ "a.example. NSEC3 1 1 12 aabbccdd 2vptu5timamqttgl4luu9kg21e0aor3s A RRSIG", false },
	{ "a.example. NSEC3PARAM 1 0 12 aabbccdd", false },
	{ "a.example. TLSA 3 1 1 d2abde240d7cd3ee6b4b28c54df034b97983a1d16e8a410e4561cb106618e971",
	  true },
	{ "a.example. CDS 60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118", false },
	{ "a.example. CDS 0 0 0 00", false },
	{ "a.example. CDNSKEY 0 3 0 AA==", true },
	{ "a.example. OPENPGPKEY AQNRU3mG7TVTO2BkR47usntb102uFJtugbo6BSGvgqt4AQ==", true },
	{ "a.example. CSYNC 66 3 A NS AAAA", false },
	{ "a.example. SVCB 1 svc.example. alpn=h2,h3 port=8443 ipv4hint=192.0.2.1", false },
	{ "a.example. HTTPS 0 target.example.", false },
	{ "a.example. HTTPS 1 . alpn=h2 ipv6hint=2001:db8::1", false },
	{ "a.example. SPF \"v=spf1 -all\"", false },
	{ "a.example. NID 10 0014:4fff:ff20:ee64", false },
	{ "a.example. L32 10 10.1.2.0", false },
	{ "a.example. L64 10 2001:0DB8:1140:1000", false },
	{ "a.example. LP 10 l64-subnet1.example.", false },
	{ "a.example. EUI48 00-00-5e-00-53-2a", false },
	{ "a.example. EUI64 00-00-5e-ef-10-00-00-2a", false },
	{ "a.example. URI 10 1 \"ftp://ftp1.example.com/public\"", true },
	{ "a.example. CAA 0 issue \"ca.example.net\"", true },
	{ "a.example. TYPE65280 \\# 3 010203", true },
};

static void test_samples(void)
{
	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		const struct sample *s = &samples[i];
		uint8_t rd[1024];
		uint16_t type = 0;
		int n = ldns_rdata(s->text, &type, rd, sizeof(rd) - 1);
		if (!ok(n >= 0, "ldns parses %s", s->text))
			continue;
		const char *why = NULL;
		if (!ok(rdata_check(type, rd, (size_t)n, &why) == 0, "valid: %s", s->text))
			printf("#   %s\n", why ? why : "?");
		ok(why == NULL, "no reason when valid (%s)", s->text);
		/* 0xFF can start neither a name nor a complete character-string. */
		rd[n] = 0xFF;
		is_int(rdata_check(type, rd, (size_t)n + 1, NULL), s->rest ? 0 : -EBADMSG,
		       "a byte more: %s", s->text);
		uint8_t canon[1024 + 3 * 255];
		int c = rdata_check_canonical(type, rd, (size_t)n, 0, (size_t)n, canon, sizeof(canon),
		                              NULL);
		ok(c == n && memcmp(canon, rd, (size_t)n) == 0, "stored form is canonical: %s", s->text);
		if (type != 65280 && type != 42 /* APL */ && !s->rest)
			ok(rdata_check(type, rd, 0, &why) == -EBADMSG && why, "empty: %s", s->text);
	}
}

/* Every name-bearing type, cut anywhere inside: refused, never read past. */
static void test_cut_names(void)
{
	static const char *const texts[] = {
		"a.example. NS ns1.example.", "a.example. CNAME www.example.",
		"a.example. PTR host.example.", "a.example. MX 10 mx.example.",
		"a.example. SRV 0 5 5060 sip.example.", "a.example. DNAME t.example.",
		"a.example. SOA ns1.example. h.example. 1 7200 3600 1209600 300",
		"a.example. NAPTR 100 10 \"U\" \"E2U+sip\" \"x\" repl.example.",
		"a.example. HTTPS 1 target.example.",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		uint8_t rd[512];
		uint16_t type = 0;
		int n = ldns_rdata(texts[i], &type, rd, sizeof(rd));
		int bad = 0;
		for (int cut = 0; cut < n; cut++)
			bad += rdata_check(type, rd, (size_t)cut, NULL) == -EBADMSG;
		is_int(bad, n, "every cut of %s refused", texts[i]);
	}
}

static void refused(uint16_t type, const void *rd, size_t len, const char *what)
{
	const char *why = NULL;
	int rc = rdata_check(type, rd, len, &why);
	is_int(rc, -EBADMSG, "refused: %s", what);
	ok(rc == 0 || (why && *why), "with a reason: %s", what);
}

static void test_malformed(void)
{
	/* Issue #16: empty name-bearing rdata, empty DS, a 1-byte CAA. */
	refused(RR_CNAME, "", 0, "empty CNAME");
	refused(RR_NS, "", 0, "empty NS");
	refused(RR_MX, "", 0, "empty MX");
	refused(RR_PTR, "", 0, "empty PTR");
	refused(RR_DS, "", 0, "empty DS");
	refused(RR_CAA, "\x00", 1, "1-byte CAA");
	refused(RR_MX, "\x00\x0a", 2, "MX without its exchange");
	refused(RR_SOA, "\x01" "a\x00\x01" "b\x00", 6, "SOA without its counters");
	/* Names. */
	refused(RR_CNAME, "\x03" "www", 4, "a name without its root label");
	refused(RR_CNAME, "\x03www\x00\x00", 6, "a name and a byte more");
	refused(RR_CNAME, "\x01" "a\xc0\x00", 4, "a compressed name in stored rdata");
	refused(RR_CNAME, "\x40" "a", 2, "label type 0x40");
	uint8_t long_label[66] = { 64 };
	memset(long_label + 1, 'a', 64);
	refused(RR_CNAME, long_label, 66, "a 64-byte label");
	uint8_t long_name[300];
	size_t p = 0;
	for (int i = 0; i < 5; i++) {
		long_name[p++] = 55;
		memset(long_name + p, 'a', 55);
		p += 55;
	}
	long_name[p++] = 0;
	refused(RR_NS, long_name, p, "a name of 281 bytes");
	/* Fixed sizes. */
	refused(RR_A, "\x01\x02\x03", 3, "a 3-byte A");
	refused(RR_A, "\x01\x02\x03\x04\x05", 5, "a 5-byte A");
	refused(RR_AAAA, "0123456789abcde", 15, "a 15-byte AAAA");
	refused(RR_DS, "\x00\x01\x0d\x02" "0123456789", 14, "a SHA-256 DS with a 10-byte digest");
	refused(RR_DS, "\x00\x01\x0d\x00\x00", 5, "DS digest type 0 outside a delete CDS");
	refused(RR_DS, "\x00\x01\x0d\x07", 4, "a DS without a digest");
	/* Strings, tags, bitmaps, parameters. */
	refused(RR_TXT, "", 0, "empty TXT");
	refused(RR_TXT, "\x05" "abc", 4, "a TXT string longer than its rdata");
	refused(RR_CAA, "\x00\x00", 2, "an empty CAA tag");
	refused(RR_CAA, "\x00\x05iss-e", 7, "a CAA tag with a dash");
	refused(RR_CAA, "\x00\x09issue", 7, "a CAA tag running past the rdata");
	refused(RR_NSEC, "\x00\x01\x00\x00\x01\x40", 6, "NSEC windows out of order");
	refused(RR_NSEC, "\x00\x00\x02\x40\x00", 5, "an NSEC window ending in zero");
	refused(RR_NSEC, "\x00\x00\x21" "0123456789012345678901234567890123", 36, "a 33-byte window");
	refused(RR_HTTPS, "\x00\x01\x00\x00\x03\x00\x02\x01\xbb\x01\x00\x03\x02h2", 16,
	        "SVCB keys out of order");
	refused(RR_HTTPS, "\x00\x01\x00\x00\x03\x00\x01\x01", 8, "an SVCB port of one byte");
	refused(RR_HTTPS, "\x00\x01\x00\x00\x01\x00\x01", 7, "an SVCB parameter cut short");
	refused(RR_HTTPS, "\x00\x01\x01", 3, "an SVCB target cut short");
	refused(29 /* LOC */, "\x01" "012345678901234", 16, "LOC version 1");
	refused(RR_SSHFP, "\x01\x01", 2, "an SSHFP without a fingerprint");
	refused(42 /* APL */, "\x00\x01\x21\x00", 4, "an APL IPv4 prefix of 33");
	refused(45 /* IPSECKEY */, "\x0a\x04\x02" "key", 6, "an IPSECKEY gateway type 4");
	/* Opaque types take anything, also nothing. */
	ok(rdata_check(65280, (const uint8_t *)"", 0, NULL) == 0, "an unknown type is opaque (RFC 3597)");
	ok(rdata_check(65280, (const uint8_t *)"\xff\xff", 2, NULL) == 0, "any bytes of an unknown type");
	ok(rdata_check(42 /* APL */, (const uint8_t *)"", 0, NULL) == 0, "an empty APL (RFC 3123: zero or more items)");
}

/* In a message: compression where RFC 3597 allows it, lowercase where RFC 4034 says. */
static void test_canonical(void)
{
	/* A message: at 12 the name "Example.", then MX rdata "10 MX + pointer to 12". */
	uint8_t msg[64] = { 0 };
	size_t at = 12;
	memcpy(msg + at, "\x07" "Example\x00", 9);
	size_t rd = at + 9;
	memcpy(msg + rd, "\x00\x0a\x02" "MX\xc0\x0c", 7);
	uint8_t out[600];
	const char *why = NULL;
	int n = rdata_check_canonical(RR_MX, msg, rd + 7, rd, 7, out, sizeof(out), &why);
	is_int(n, 2 + 3 + 9, "MX exchange decompressed");
	ok(n > 0 && memcmp(out, "\x00\x0a\x02" "mx\x07" "example\x00", (size_t)n) == 0,
	   "and lowercased (RFC 4034 6.2)");
	ok(rdata_check_cap(RR_MX, 7) >= (size_t)n, "cap is enough");
	/* The same pointer in an HTTPS target: not allowed (RFC 9460 2.2). */
	memcpy(msg + rd, "\x00\x01\x02" "MX\xc0\x0c", 7);
	n = rdata_check_canonical(RR_HTTPS, msg, rd + 7, rd, 7, out, sizeof(out), &why);
	is_int(n, -EBADMSG, "compressed SVCB target refused");
	ok(why && strstr(why, "compressed"), "saying so");
	/* NSEC's next name keeps its case (RFC 6840 5.1); CNAME's is lowercased. */
	memcpy(msg + rd, "\x01" "A\x00\x00\x01\x40", 6);
	n = rdata_check_canonical(RR_NSEC, msg, rd + 6, rd, 6, out, sizeof(out), NULL);
	ok(n == 6 && out[1] == 'A', "NSEC next name keeps its case");
	n = rdata_check_canonical(RR_CNAME, msg, rd + 3, rd, 3, out, sizeof(out), NULL);
	ok(n == 3 && out[1] == 'a', "CNAME target lowercased");
	/* A pointer forward, or to itself: refused. */
	memcpy(msg + rd, "\x00\x0a\xc0\x20", 4);
	is_int(rdata_check_canonical(RR_MX, msg, rd + 4, rd, 4, out, sizeof(out), NULL), -EBADMSG,
	       "forward pointer refused");
	/* Rdata past the message. */
	is_int(rdata_check_canonical(RR_A, msg, 20, 18, 4, out, sizeof(out), NULL), -EBADMSG,
	       "rdata past the message refused");
	/* Too small an output buffer. */
	memcpy(msg + rd, "\x00\x0a\x02" "MX\xc0\x0c", 7);
	is_int(rdata_check_canonical(RR_MX, msg, rd + 7, rd, 7, out, 5, NULL), -ENOSPC,
	       "no room: -ENOSPC");
}

/*
 * ldns's descriptors, a second reading of the RFCs: every type ldns
 * compresses we decompress, and every type ldns knows to carry a name
 * is in our table (its empty rdata is refused) -- a name-bearing type
 * missing from the table would be served opaque and read as a name.
 */
static void test_against_ldns(void)
{
	int compressed = 0, named = 0;
	for (unsigned t = 1; t <= 65535; t++) {
		const ldns_rr_descriptor *d = ldns_rr_descript((uint16_t)t);
		if (!d || d->_type != t || rrset_type_is_meta((uint16_t)t))
			continue;
		if (ldns_rr_descriptor_field_type(d, 0) == LDNS_RDF_TYPE_NONE)
			continue;
		if (d->_compress == LDNS_RR_COMPRESS) {
			compressed++;
			ok(rdata_check_cap((uint16_t)t, 0) > 0, "type %u: names decompressed as ldns does",
			   t);
		}
		if (d->_dname_count > 0 && t != 249 && t != 250) {
			named++;
			ok(rdata_check((uint16_t)t, (const uint8_t *)"", 0, NULL) == -EBADMSG,
			   "type %u (%s) carries names: it has a format", t, d->_name ? d->_name : "?");
		}
	}
	ok(compressed >= 10, "ldns compresses the RFC 1035 types (%d)", compressed);
	ok(named >= 20, "ldns knows name-bearing types (%d)", named);
}

int main(void)
{
	test_samples();
	test_cut_names();
	test_malformed();
	test_canonical();
	test_against_ldns();
	return done_testing();
}
