/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Seeding: on the very first start the zone file fills the database
 * (Hickory's semantics); from then on the database is the truth, and an
 * edit of the file is applied as a difference (acme/file_diff.h), which
 * seeding prepares by storing what the file said (zonefile.h).  "Seeded"
 * is a marker in the meta table written in the same transaction as the
 * records, so a crash during seeding leaves an unseeded, empty database
 * that seeds again.
 */
#include <stdbool.h>
#include <stdint.h>

struct change_list;
struct db;
struct diag;

/* 1 when the database was never seeded, 0 when it was, or a negative errno. */
int seed_needed(struct db *db);
/*
 * Reads the zone file into `cl` as additions with created_at 0 (zone-file
 * records are never purged as stale).  Returns 0, or -EINVAL with the
 * problems in d.  *soa_line (when not NULL): the line of the apex SOA, 0
 * when there is none.
 */
int seed_read(const char *path, const uint8_t *apex, struct change_list *cl, struct diag *d,
              int *soa_line);
/*
 * Writes the records, the same as the stored zone file (zonefile.h), the
 * apex and the seeded marker in one durable transaction.  Returns 0 or -EIO.
 */
int seed_commit(struct db *db, const struct change_list *cl, const uint8_t *apex,
                const char *path, int64_t now);
