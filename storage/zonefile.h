/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * What the zone file of an ACME zone said when it was last applied: its
 * records as parsed (table zonefile, db.h schema 5), written by the first
 * seeding (seed.c) and by every edit applied since, in the same
 * transaction as the records it changed (journal_commit_file).  An edited
 * file is compared with this, not with the records, so what an UPDATE
 * added or removed stays as the UPDATE left it (acme/file_diff.h: Knot's
 * "zonefile-load: difference" in place of Hickory's "seed once").
 */
#include <stdint.h>

#include "storage/records.h"

struct db;

/*
 * Calls fn for every stored record of the file (created_at 0); as
 * records_load().  A database seeded before schema 5 starts from its
 * records with created_at 0 (the migration copies them).
 */
int zonefile_load(struct db *db, records_fn fn, void *arg);

/*
 * The same without opening the database for writing (geoacme check): a
 * read-only connection that runs no migration.  `file` gets the stored
 * file (from a database older than schema 5: its records with created_at
 * 0), `records` every record.  0, or a negative errno with err.
 */
int zonefile_peek(const char *db_path, records_fn file, records_fn records, void *arg,
                  char err[256]);
