/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The earliest expiration of a set of RRSIGs, and how many carry it: the
 * moment the first of them stops validating, so the moment a validating
 * resolver starts to fail some answer (SERVFAIL for that RRset) unless it
 * was re-signed first.  Why the earliest of all: every RRset is validated
 * on its own, and one expired RRSIG is enough (RFC 4035 5.3.1).
 *
 * Kept as signatures come and go, in time proportional to the change: an
 * addition can only move the earliest sooner; a removal of the last RRSIG
 * at the earliest time leaves the next one unknown, which the owner finds
 * by reading all its signatures again (rrsig_expiry_drop says when).  Used
 * for a secondary's copy (xfr/copy_sigs.h) and a snapshot signed here
 * (core/zone/zone.h, zone_signature_expiry).
 *
 * Expiration is a 32-bit time compared with serial arithmetic (RFC 4034
 * 3.1.5, RFC 1982): it is read as the unix time within 2^31 s of `now`.
 */
#include <stdbool.h>
#include <stdint.h>

/* RRSIG rdata up to its Signature Expiration field and beyond: type
 * covered 2, algorithm 1, labels 1, original TTL 4, expiration 4,
 * inception 4, key tag 2. */
#define RRSIG_EXPIRY_MIN_RDLEN 18

struct rrsig_expiry {
	int64_t earliest;        /* unix s; 0 when the set holds no RRSIG */
	uint32_t count;          /* RRSIGs of the set expiring at `earliest` */
};

/* An RRSIG's expiration as a unix time (rdata of at least
 * RRSIG_EXPIRY_MIN_RDLEN bytes). */
int64_t rrsig_expiration(const uint8_t *rdata, int64_t now);

/* One RRSIG more in the set, expiring at `at`. */
void rrsig_expiry_add(struct rrsig_expiry *e, int64_t at);
/* One RRSIG less.  True when it was the last at the earliest time: e is
 * then unknown until the owner reads the whole set again. */
bool rrsig_expiry_drop(struct rrsig_expiry *e, int64_t at);
