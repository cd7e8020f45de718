/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The records of an ACME zone in SQLite (schema in db.h): load them all at
 * start, apply a change list in one transaction after each UPDATE.
 */
#include <stdint.h>

struct change_list;
struct db;

struct records_row {
	const uint8_t *name;     /* lowercase wire form */
	uint16_t type;
	uint16_t rclass;         /* always IN for rows we wrote */
	uint32_t ttl;
	const uint8_t *rdata;    /* canonical wire form */
	uint16_t rdlen;
	int64_t created_at;      /* 0 = from the zone file */
};

/*
 * Calls fn for every record; the row's pointers are valid during the call
 * only.  A non-zero return from fn stops the walk and is returned.  Rows
 * that are not well-formed (bad name, rdata over 65535 bytes) are skipped
 * with a warning.
 */
typedef int (*records_fn)(void *arg, const struct records_row *row);
int records_load(struct db *db, records_fn fn, void *arg);

/*
 * Applies every change, in order, in one transaction, and commits it
 * (durably with synchronous=FULL, the default: the caller may acknowledge
 * the UPDATE once this returns 0; under wal_sync.h's NORMAL, after its
 * next sync).  Deleting a missing row is a no-op and
 * adding an existing row replaces its TTL and created_at, so applying is
 * idempotent.  On error nothing is changed: -EIO.
 */
int records_apply(struct db *db, const struct change_list *cl);

/* The number of rows, or a negative errno. */
int64_t records_count(struct db *db);
