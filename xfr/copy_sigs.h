/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The earliest RRSIG expiration of a secondary's copy: the moment its
 * first signature stops validating, so the moment a validating resolver
 * starts to fail some answer of the copy (SERVFAIL for that RRset) unless
 * a newer copy came first.  A copy is served as received, so this is the
 * primary's signing as it reached us: a primary that stopped re-signing,
 * or a copy kept past its refreshes, shows here before it breaks.
 *
 * Why the earliest of all, and not the SOA's or the DNSKEY's: every RRset
 * is validated on its own, and one expired RRSIG is enough for answers to
 * fail (RFC 4035 5.3.1).  Expiration is a 32-bit time compared with serial
 * arithmetic (RFC 4034 3.1.5, RFC 1982): it is read as the unix time
 * within 2^31 s of now.
 *
 * Kept as the copy changes, in time proportional to the change: the
 * earliest time and how many RRSIGs of the copy carry it.  Only a change
 * that removes the last of those reads the whole copy again (a primary
 * that re-signed them all sent them all, so that costs what the transfer
 * did).  Computed when the copy is built or patched, never per scrape.
 */
#include <stdint.h>

struct change_list;
struct recset;

struct copy_sigs {
	int64_t earliest;        /* unix s; 0 when the copy holds no RRSIG */
	uint32_t count;          /* RRSIGs of the copy expiring at `earliest` */
};

/* Reads every RRSIG of rs (a copy loaded, or taken whole by AXFR). */
void copy_sigs_scan(struct copy_sigs *s, const struct recset *rs, int64_t now);

/*
 * After a forward recset_apply() of cl to rs (core/zone/recset.h), and
 * before anything else changes rs: s follows what cl added and removed.
 * Falls back to copy_sigs_scan() when cl is not the list rs last applied.
 */
void copy_sigs_applied(struct copy_sigs *s, const struct recset *rs,
                       const struct change_list *cl, int64_t now);
