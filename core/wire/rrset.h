/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The RRset value type shared by core, dnssec and storage.  Record data is
 * kept in uncompressed wire form (names inside rdata lowercase), the
 * records sorted in canonical order (RFC 4034 section 6.3) and deduplicated,
 * which is exactly what an RRSIG covers.  Up to RRSET_SIGS RRSIGs per RRset:
 * a zone signs with one combined signing key, and with two while a key
 * rollover runs (double signature, RFC 7583 section 3.3; doc/dnssec.md).
 * A secondary's copy serves every RRSIG its primary sends, as received,
 * and a primary mid-rollover may send more than two: DNSKEY signed by two
 * KSKs, the other sets by two ZSKs plus a standby (issue #22.4), or twice
 * that during an algorithm rollover (RFC 6781 section 4.1.4).  Hence room
 * for four; a fifth is dropped when the copy is built, with a warning.
 */
#include <stdbool.h>
#include <stdint.h>

/*
 * Record types.  The numbers are here; their mnemonics and properties are
 * in one table in rrset.c, read through the functions below — config
 * (allow_types), policy (log lines) and the packet writer (which rdata
 * names may be compressed) all use it.  core/wire keeps its own small
 * table instead of ldns's (ldns_rr_descript): core uses ldns only where it
 * reads presentation format, and the wire layer links none.
 */
enum {
	RR_A = 1, RR_NS = 2, RR_CNAME = 5, RR_SOA = 6, RR_PTR = 12, RR_HINFO = 13,
	RR_MX = 15, RR_TXT = 16, RR_AAAA = 28, RR_LOC = 29, RR_SRV = 33, RR_NAPTR = 35,
	RR_DNAME = 39, RR_OPT = 41, RR_DS = 43, RR_SSHFP = 44, RR_RRSIG = 46,
	RR_NSEC = 47, RR_DNSKEY = 48, RR_NSEC3 = 50, RR_NSEC3PARAM = 51,
	RR_TLSA = 52, RR_SMIMEA = 53, RR_CDS = 59, RR_CDNSKEY = 60, RR_OPENPGPKEY = 61,
	RR_SVCB = 64, RR_HTTPS = 65, RR_SPF = 99,
	RR_TKEY = 249, RR_TSIG = 250, RR_IXFR = 251, RR_AXFR = 252,
	RR_MAILB = 253, RR_MAILA = 254, RR_ANY = 255, RR_URI = 256, RR_CAA = 257,
};
enum { CLASS_IN = 1, CLASS_CH = 3, CLASS_NONE = 254, CLASS_ANY = 255 };

struct rdata {
	uint16_t len;
	const uint8_t *data;
};

#define RRSET_SIGS 4

struct rrset {
	uint16_t type;
	uint16_t count;        /* records in rr[] */
	uint32_t ttl;
	struct rdata *rr;      /* canonical order, no duplicates */
	/* RRSIG rdata, the used ones first: sig[0].len == 0 when unsigned;
	 * more than one while several keys sign (a rollover). */
	struct rdata sig[RRSET_SIGS];
};

/* The RRSIGs an RRset carries (0 .. RRSET_SIGS). */
static inline unsigned rrset_sig_count(const struct rrset *s)
{
	unsigned n = 0;
	while (n < RRSET_SIGS && s->sig[n].len)
		n++;
	return n;
}

/*
 * The type of a mnemonic ("TXT", any case) or of RFC 3597's "TYPEnnn"
 * (1..65535); 0 when unknown.
 */
uint16_t rrset_type_from_str(const char *s);
/* The mnemonic of a type, or "TYPEnnn" written into buf. */
const char *rrset_type_to_str(uint16_t type, char buf[16]);
/*
 * Flags of a type's rdata in the record type table (core/wire/rrset.c).
 */
enum rrset_rdata_flags {
	/* RFC 3597 section 4: a sender may compress the names of these types
	 * (RFC 1035's, and those later RFCs kept compressible); a receiver
	 * decompresses them.  Stored rdata is never compressed. */
	RDATA_DECOMPRESS = 1 << 0,
	/* RFC 4034 section 6.2 as amended by RFC 6840 section 5.1 (NSEC left
	 * out): the names of these types are lowercased in canonical form. */
	RDATA_LOWER = 1 << 1,
	/* We compress them on output: RFC 1035's NS, CNAME, SOA, PTR, MX. */
	RDATA_COMPRESS = 1 << 2,
};
/*
 * The rdata wire format of a type, one letter per field (core/wire/
 * rdata_check.c), with its flags; NULL (flags 0) for opaque types.
 */
const char *rrset_type_rdata_format(uint16_t type, uint8_t *flags);
/*
 * Types whose rdata names are compressed on output (RFC 3597 section 4:
 * the RFC 1035 types only).  The rdata is `prefix` bytes, then `names`
 * uncompressed names, then the rest; returns names (0: not compressible).
 */
int rrset_type_rdata_names(uint16_t type, uint8_t *prefix);
bool rrset_type_compressible(uint16_t type);
/* Meta and question-only types that can never be stored in a zone. */
bool rrset_type_is_meta(uint16_t type);
/* Compares two rdata in canonical order (memcmp, shorter first on tie). */
int rdata_canonical_cmp(const struct rdata *a, const struct rdata *b);
