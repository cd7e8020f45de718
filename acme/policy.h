/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * What one TSIG key may change in its ACME zone, and the zone's caps.
 *
 * A key may change the types in allow_types (default TXT) at names under
 * one of allow_names (suffixes; default: any name strictly below the
 * apex).  Whatever the config says, an UPDATE may never touch the SOA, the
 * apex NS, or the records the signer owns (DNSKEY, RRSIG, NSEC, NSEC3,
 * NSEC3PARAM, CDS, CDNSKEY), names with a '*' label anywhere, or DNAME:
 * zone files serve both, but an ACME zone never grows a wildcard that
 * would answer every _acme-challenge name, nor a DNAME that would
 * redirect (and hide) every name below it (doc/zones.md).  Caps:
 * max_records_per_name and max_records
 * (checked only when an UPDATE grows the count), max_txt_len per TXT
 * character-string and 1024 bytes per TXT record.
 *
 * A refusal (REFUSED) is logged with the key, name, type and reason, and
 * the UPDATE changes nothing.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/wire/dname.h"

struct change_list;
struct config_tsig_key;
struct config_zone;
struct recset;
struct update_msg;

#define POLICY_TXT_RDATA_MAX 1024

struct policy {
	char key[DNAME_MAX + 1];     /* key name, for the logs */
	const uint8_t *apex;
	uint16_t *types;
	size_t n_types;
	uint8_t (*names)[DNAME_MAX]; /* wire suffixes; n_names 0 = strictly below the apex */
	size_t n_names;
	uint32_t max_records_per_name;   /* 0 = no cap */
	uint32_t max_records;            /* 0 = no cap */
	uint32_t max_txt_len;            /* 0 = 255 */
};

/*
 * Builds a key's policy.  allow_names ending in '.' are absolute; others
 * are absolute when they already end in the zone's name, else relative to
 * it.  -EINVAL with err for a name outside the zone or not a name.
 * `apex` must outlive the policy.
 */
int policy_init(struct policy *p, const struct config_zone *zc, const struct config_tsig_key *k,
                const uint8_t *apex, char err[256]);
void policy_clear(struct policy *p);

/* Before anything changes: every update record's name and type (and TXT size). */
int policy_check_request(const struct policy *p, const struct update_msg *m);
/*
 * After computing the changes: every changed record (this catches the
 * types an ANY deletion reaches) and the caps.  Returns 0, -EACCES, or
 * -ENOMEM (nothing refused: the server could not look).
 */
int policy_check_changes(const struct policy *p, const struct recset *rs,
                         const struct change_list *cl);

