/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Presentation-format parsers for the record types whose ldns parser we do
 * not trust with operator input (issue #27.5), so zone files never reach it
 * with them (core/zone/zone_file.c hands ldns a stand-in rdata, as for SVCB):
 *
 * - IPSECKEY (RFC 4025 section 3.1): ldns 1.8.3's ldns_str2rdf_ipseckey()
 *   leaks its copies of the gateway and key (19 bytes in the fuzz target)
 *   when the key is not base64 or more fields follow, and reads the three
 *   numbers with atoi(): "300" became 44, "x" 0.
 * - CERT (RFC 4398 section 2.2): its type and algorithm parsers leak the
 *   rdf they made when the value is 0 or unknown ("CERT 0"), and take
 *   "-1" and "256" as algorithms.
 *
 * Found by running every type of core/wire/rrset.c's table through
 * ldns_rr_new_frm_str() under LeakSanitizer with a few thousand valid and
 * broken rdata each; no other type leaked.
 *
 * Numbers are digits only and in range; the key or certificate is base64,
 * which may be split into several blank-separated pieces (as DNSKEY's key
 * is); a gateway name may be relative to `origin`; names are lowercased.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { RDATA_TEXT_CERT = 37, RDATA_TEXT_IPSECKEY = 45 };

/* Whether rdata_text_parse() reads this type. */
bool rdata_text_handles(uint16_t type);

/*
 * Parses `text` (the rdata, after the type) into wire form in out[cap].
 * Returns the length, or -EINVAL with err saying what was expected.
 */
int rdata_text_parse(uint16_t type, const char *text, const uint8_t *origin, uint8_t *out,
                     size_t cap, char err[256]);
