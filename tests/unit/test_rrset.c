/* SPDX-License-Identifier: MIT */
/* The record type table: names both ways, and which rdata names compress. */
#include <string.h>

#include "core/wire/rrset.h"
#include "tests/unit/check.h"

static void test_names(void)
{
	char buf[16];
	is_int(rrset_type_from_str("TXT"), RR_TXT, "TXT");
	is_int(rrset_type_from_str("aaaa"), RR_AAAA, "aaaa: any case");
	is_int(rrset_type_from_str("NSEC3PARAM"), RR_NSEC3PARAM, "NSEC3PARAM");
	is_int(rrset_type_from_str("CAA"), RR_CAA, "CAA (257)");
	is_int(rrset_type_from_str("TYPE65280"), 65280, "RFC 3597 TYPEnnn");
	is_int(rrset_type_from_str("type16"), RR_TXT, "typennn, any case");
	is_int(rrset_type_from_str("TYPE0"), 0, "TYPE0 is not a type");
	is_int(rrset_type_from_str("TYPE65536"), 0, "TYPE65536 is out of range");
	is_int(rrset_type_from_str("TYPE1x"), 0, "TYPE1x is not a number");
	is_int(rrset_type_from_str("TXTT"), 0, "unknown mnemonic");
	is_str(rrset_type_to_str(RR_SOA, buf), "SOA", "SOA by name");
	is_str(rrset_type_to_str(RR_ANY, buf), "ANY", "ANY by name");
	is_str(rrset_type_to_str(65280, buf), "TYPE65280", "unknown: TYPEnnn");
	/* Every mnemonic comes back as the type it names. */
	static const uint16_t all[] = { RR_A, RR_NS, RR_CNAME, RR_SOA, RR_PTR, RR_HINFO, RR_MX,
		RR_TXT, RR_AAAA, RR_LOC, RR_SRV, RR_NAPTR, RR_DNAME, RR_OPT, RR_DS, RR_SSHFP,
		RR_RRSIG, RR_NSEC, RR_DNSKEY, RR_NSEC3, RR_NSEC3PARAM, RR_TLSA, RR_SMIMEA, RR_CDS,
		RR_CDNSKEY, RR_OPENPGPKEY, RR_SVCB, RR_HTTPS, RR_SPF, RR_TKEY, RR_TSIG, RR_IXFR,
		RR_AXFR, RR_MAILB, RR_MAILA, RR_ANY, RR_URI, RR_CAA };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		const char *n = rrset_type_to_str(all[i], buf);
		ok(strncmp(n, "TYPE", 4) != 0 && rrset_type_from_str(n) == all[i],
		   "type %u has a mnemonic (%s) that names it", all[i], n);
	}
}

static void test_compressible(void)
{
	uint8_t prefix = 99;
	/* RFC 3597 section 4: the RFC 1035 types with names, and only those. */
	for (unsigned t = 0; t <= 65535; t++) {
		bool want = t == RR_NS || t == RR_CNAME || t == RR_SOA || t == RR_PTR || t == RR_MX;
		if (rrset_type_compressible((uint16_t)t) != want) {
			ok(0, "type %u: compressible is %d", t, !want);
			return;
		}
	}
	ok(1, "compressible: exactly NS CNAME SOA PTR MX");
	is_int(rrset_type_rdata_names(RR_SOA, &prefix), 2, "SOA: two names");
	is_int(prefix, 0, "SOA: at the start");
	is_int(rrset_type_rdata_names(RR_MX, &prefix), 1, "MX: one name");
	is_int(prefix, 2, "MX: after the preference");
	is_int(rrset_type_rdata_names(RR_SRV, &prefix), 0, "SRV: not compressed (RFC 2782)");
	is_int(prefix, 0, "SRV: no prefix");
	is_int(rrset_type_rdata_names(RR_DNAME, &prefix), 0, "DNAME: not compressed (RFC 6672)");
}

int main(void)
{
	test_names();
	test_compressible();
	return done_testing();
}
