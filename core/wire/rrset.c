/* SPDX-License-Identifier: MIT */
/* Small facts about record types. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/wire/rrset.h"

/*
 * The one record type table, ordered by type: mnemonic, rdata wire format
 * and flags.  The format is one letter per field (core/wire/rdata_check.c
 * walks it and says what each letter means); NULL for types with no rdata
 * of their own in a zone (meta and question-only types).  Types not listed
 * are opaque (RFC 3597): any bytes are their rdata, and their name is
 * TYPEnnn.
 */
static const struct type_info {
	uint16_t type;
	const char *name;
	uint8_t flags;          /* enum rrset_rdata_flags */
	const char *fields;
} types[] = {
	{ 1, "A", 0, "4" },
	{ 2, "NS", RDATA_DECOMPRESS | RDATA_LOWER | RDATA_COMPRESS, "n" },
	{ 3, "MD", RDATA_DECOMPRESS | RDATA_LOWER, "n" },
	{ 4, "MF", RDATA_DECOMPRESS | RDATA_LOWER, "n" },
	{ 5, "CNAME", RDATA_DECOMPRESS | RDATA_LOWER | RDATA_COMPRESS, "n" },
	{ 6, "SOA", RDATA_DECOMPRESS | RDATA_LOWER | RDATA_COMPRESS, "nn44444" },
	{ 7, "MB", RDATA_DECOMPRESS | RDATA_LOWER, "n" },
	{ 8, "MG", RDATA_DECOMPRESS | RDATA_LOWER, "n" },
	{ 9, "MR", RDATA_DECOMPRESS | RDATA_LOWER, "n" },
	{ 10, "NULL", 0, "x" },
	{ 11, "WKS", 0, "41x" },
	{ 12, "PTR", RDATA_DECOMPRESS | RDATA_LOWER | RDATA_COMPRESS, "n" },
	{ 13, "HINFO", 0, "ss" },
	{ 14, "MINFO", RDATA_DECOMPRESS | RDATA_LOWER, "nn" },
	{ 15, "MX", RDATA_DECOMPRESS | RDATA_LOWER | RDATA_COMPRESS, "2n" },
	{ 16, "TXT", 0, "S" },
	{ 17, "RP", RDATA_DECOMPRESS | RDATA_LOWER, "nn" },
	{ 18, "AFSDB", RDATA_DECOMPRESS | RDATA_LOWER, "2n" },
	{ 19, "X25", 0, "s" },
	{ 20, "ISDN", 0, "so" },
	{ 21, "RT", RDATA_DECOMPRESS | RDATA_LOWER, "2n" },
	{ 22, "NSAP", 0, "X" },
	{ 23, "NSAP-PTR", 0, "n" },
	{ 24, "SIG", RDATA_DECOMPRESS | RDATA_LOWER, "2114442nX" },
	{ 25, "KEY", 0, "211x" },
	{ 26, "PX", RDATA_DECOMPRESS | RDATA_LOWER, "2nn" },
	{ 27, "GPOS", 0, "sss" },
	{ 28, "AAAA", 0, "a" },
	{ 29, "LOC", 0, "z111444" },
	{ 30, "NXT", RDATA_DECOMPRESS | RDATA_LOWER, "nx" },
	{ 33, "SRV", RDATA_DECOMPRESS | RDATA_LOWER, "222n" },
	{ 35, "NAPTR", RDATA_DECOMPRESS | RDATA_LOWER, "22sssn" },
	{ 36, "KX", RDATA_DECOMPRESS | RDATA_LOWER, "2n" },
	{ 37, "CERT", 0, "221X" },
	{ 38, "A6", RDATA_LOWER, "y" },
	{ 39, "DNAME", RDATA_DECOMPRESS | RDATA_LOWER, "n" },
	{ 41, "OPT", 0, NULL },
	{ 42, "APL", 0, "l" },
	{ 43, "DS", 0, "211d" },
	{ 44, "SSHFP", 0, "11X" },
	{ 45, "IPSECKEY", 0, "111gx" },
	{ 46, "RRSIG", RDATA_LOWER, "2114442nX" },
	{ 47, "NSEC", 0, "nt" },
	{ 48, "DNSKEY", 0, "211X" },
	{ 49, "DHCID", 0, "X" },
	{ 50, "NSEC3", 0, "112bBt" },
	{ 51, "NSEC3PARAM", 0, "112b" },
	{ 52, "TLSA", 0, "111X" },
	{ 53, "SMIMEA", 0, "111X" },
	{ 55, "HIP", 0, "hN" },
	{ 58, "TALINK", 0, "nn" },
	{ 59, "CDS", 0, "211d" },
	{ 60, "CDNSKEY", 0, "211X" },
	{ 61, "OPENPGPKEY", 0, "X" },
	{ 62, "CSYNC", 0, "42t" },
	{ 63, "ZONEMD", 0, "411X" },
	{ 64, "SVCB", 0, "2np" },
	{ 65, "HTTPS", 0, "2np" },
	{ 99, "SPF", 0, "S" },
	{ 104, "NID", 0, "28" },
	{ 105, "L32", 0, "24" },
	{ 106, "L64", 0, "28" },
	{ 107, "LP", 0, "2n" },
	{ 108, "EUI48", 0, "6" },
	{ 109, "EUI64", 0, "8" },
	{ 249, "TKEY", 0, NULL },
	{ 250, "TSIG", 0, NULL },
	{ 251, "IXFR", 0, NULL },
	{ 252, "AXFR", 0, NULL },
	{ 253, "MAILB", 0, NULL },
	{ 254, "MAILA", 0, NULL },
	{ 255, "ANY", 0, NULL },
	{ 256, "URI", 0, "22X" },
	{ 257, "CAA", 0, "1cx" },
	{ 258, "AVC", 0, "S" },
	{ 260, "AMTRELAY", 0, "11r" },
	{ 32768, "TA", 0, "211d" },
	{ 32769, "DLV", 0, "211d" },
};
#define N_TYPES (sizeof(types) / sizeof(types[0]))

static const struct type_info *type_info(uint16_t type)
{
	for (size_t i = 0; i < N_TYPES; i++)
		if (types[i].type == type)
			return &types[i];
	return NULL;
}

uint16_t rrset_type_from_str(const char *s)
{
	for (size_t i = 0; i < N_TYPES; i++)
		if (strcasecmp(s, types[i].name) == 0)
			return types[i].type;
	if (strncasecmp(s, "TYPE", 4) == 0 && s[4] >= '0' && s[4] <= '9') {
		char *end;
		unsigned long v = strtoul(s + 4, &end, 10);
		if (*end == '\0' && v >= 1 && v <= 65535)
			return (uint16_t)v;
	}
	return 0;
}

const char *rrset_type_to_str(uint16_t type, char buf[16])
{
	const struct type_info *t = type_info(type);
	if (t)
		return t->name;
	snprintf(buf, 16, "TYPE%u", (unsigned)type);
	return buf;
}

const char *rrset_type_rdata_format(uint16_t type, uint8_t *flags)
{
	const struct type_info *t = type_info(type);
	*flags = t ? t->flags : 0;
	return t ? t->fields : NULL;
}

int rrset_type_rdata_names(uint16_t type, uint8_t *prefix)
{
	/* RFC 3597 section 4 allows compression in RFC 1035's types only, and
	 * those end at TXT (16): the query path, which asks for every record,
	 * looks them up (at the start of the table) only for them.  The
	 * format says where the names sit: fixed fields, then the names. */
	const struct type_info *t = type >= 1 && type <= RR_TXT && types[type - 1].type == type
	                            ? &types[type - 1] : NULL;   /* types 1..16 lead the table */
	*prefix = 0;
	if (!t || !(t->flags & RDATA_COMPRESS))
		return 0;
	const char *f = t->fields;
	for (; *f >= '1' && *f <= '8'; f++)
		*prefix = (uint8_t)(*prefix + (*f - '0'));
	int names = 0;
	for (; *f == 'n'; f++)
		names++;
	return names;
}

bool rrset_type_compressible(uint16_t type)
{
	uint8_t prefix;
	return rrset_type_rdata_names(type, &prefix) > 0;
}

bool rrset_type_is_meta(uint16_t type)
{
	return type == 0 || type == RR_OPT || (type >= 128 && type <= 255);
}

int rdata_canonical_cmp(const struct rdata *a, const struct rdata *b)
{
	uint16_t m = a->len < b->len ? a->len : b->len;
	int c = m ? memcmp(a->data, b->data, m) : 0;
	if (c)
		return c;
	return (int)a->len - (int)b->len;
}
