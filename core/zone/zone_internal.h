/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Shared between zone.c (building, lookup) and zone_patch.c (patching a
 * served snapshot): the canonical sort key of the NSEC order and the SOA
 * serial.  Included only from inside core/zone.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/wire/dname.h"

struct rrset;

/*
 * A name's canonical sort key: its labels from the rightmost, each followed
 * by a 0 byte, with 0 and 1 bytes inside labels escaped as 1 1 and 1 2.
 * memcmp order of keys is RFC 4034 canonical order of lowercase names (a
 * shorter label, or fewer labels, sort first), so the NSEC search compares
 * with memcmp instead of splitting both names at every step.
 */
#define ZONE_CANON_KEY_MAX (2 * DNAME_MAX + DNAME_LABELS_MAX)
size_t zone_canonical_key(const uint8_t *name, uint8_t *out);

/* Compares key a (length la) with key b (length lb) in canonical order. */
int zone_key_cmp(const uint8_t *a, size_t la, const uint8_t *b, size_t lb);

/* The serial of an SOA RRset (its first record). */
uint32_t zone_soa_serial(const struct rrset *soa);
