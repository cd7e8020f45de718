/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Zone-file edits of an ACME zone, applied as a difference (Knot's
 * "zonefile-load: difference"; it replaces Hickory's "seed once" for
 * every start after the first, doc/zones.md).
 *
 * The edited file is compared with what it said when it was last applied
 * (storage/zonefile.h), not with the records: what the file removed is
 * deleted, what it added is added, and everything else in the database,
 * such as the records UPDATEs added, stays as it is.  A record the file
 * never had is never removed; a record an UPDATE deleted that the file
 * still has is not brought back (the file did not change there).
 *
 * The SOA: its fields and TTL come from the file, its serial is the
 * larger, in RFC 1982 order (core/wire/serial.h), of the served serial + 1
 * and the file's: an operator who raises the file's serial gets it, one
 * who forgets still gets a new serial, and the serial never goes back.
 *
 * This is a function of (zone file, stored file, served SOA): it reads
 * no database and changes nothing, so it runs wherever a zone is built,
 * for serve (acme_zone.c commits the result through commit.h, one change:
 * serial, journal, NOTIFY, signatures) and for check (which prints it).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/wire/change.h"

struct diag;
struct records_row;

struct file_diff {
	struct change_list records;   /* for the records: deletions, additions, the SOA last */
	struct change_list file;      /* for the stored zone file (the same without the serial) */
	uint32_t serial_from, serial_to;
	uint32_t file_serial;         /* the file's own, for file_diff_rebase */
	size_t n_del, n_add;          /* records the edit removed and added, the SOA apart */
	bool soa;                     /* the SOA's fields or TTL changed (not just its serial) */
};

void file_diff_init(struct file_diff *fd);
void file_diff_clear(struct file_diff *fd);

/* A records_fn (storage/records.h) that appends the row to a change list
 * (arg) as an addition with created_at 0. */
int file_diff_collect(void *arg, const struct records_row *row);

/*
 * Reads the zone file at `path` and compares it with `stored` (additions:
 * what it said when last applied).  `soa` is the apex SOA served now
 * (rdata, its serial is the database's).  Returns 1 with the change in
 * fd, 0 when the file says what it said (fd empty), or -EINVAL with
 * "file:line: ..." problems in d: a syntax error, a record that is not
 * valid, no SOA or no NS at the apex, a zone that cannot be served.
 */
int file_diff_compute(const char *path, const uint8_t *apex, const struct change_list *stored,
                      const uint8_t *soa, uint16_t soa_len, uint32_t soa_ttl,
                      struct file_diff *fd, struct diag *d);

/*
 * Moves an edit onto the SOA served now (rdata, TTL) when another change
 * came after the one it was computed against: a reload applies its edit
 * after the UPDATEs committed during its build and, for a signed zone
 * that is transferred, after the serial bump of its new signatures
 * (acme_zone.c).  The deleted SOA becomes the served one and the serial is
 * chosen again by the rule above, so the edit gets a serial of its own
 * (without this it repeated the bump's, or, with a raised file serial,
 * left two SOA records and was refused).  0, or -ENOMEM with fd unchanged.
 */
int file_diff_rebase(struct file_diff *fd, const uint8_t *soa, uint16_t soa_len,
                     uint32_t soa_ttl);

/* "- owner ttl IN TYPE rdata" and "+ ..." lines, the SOA last, to out. */
void file_diff_print(const struct file_diff *fd, FILE *out);
