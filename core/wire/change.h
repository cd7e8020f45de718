/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A change list: the records one UPDATE (or one stale purge, or the first
 * seeding) deletes and adds, in order.  It is what storage applies in one
 * SQLite transaction and what acme applies to its in-memory mirror, so the
 * two stay identical.  Every entry owns a copy of its name and rdata, so a
 * list outlives the message and the records it was computed from.
 *
 * Names are uncompressed lowercase wire form; rdata is canonical wire form
 * (uncompressed, names inside lowercase).  The class is always IN.
 * A TTL change is a delete followed by an add of the same rdata.
 *
 * The entries' names and rdata live in blocks the list owns (a few large
 * allocations instead of one per entry): a 1M-record AXFR read on the loop
 * and freed on a helper thread (xfr/copy_build.h) left a million small
 * chunks in the loop's malloc arena, which the loop's next large malloc
 * then walked (147 ms, issue #26).  Never free() an entry's name.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum change_op { CHANGE_DEL = 0, CHANGE_ADD = 1 };

struct change {
	uint8_t op;              /* enum change_op */
	uint8_t name_len;
	uint16_t type;
	uint16_t rdlen;
	uint32_t ttl;
	int64_t created_at;      /* unix seconds; 0 = from the zone file, never stale */
	uint8_t *name;           /* in the list's blocks, with rdata after it */
	uint8_t *rdata;
};

struct change_block;

struct change_list {
	struct change *v;
	size_t n, cap;
	bool mapped;             /* v is its own mapping (a big list: change.c) */
	struct change_block *blocks;   /* where names and rdata live, newest first */
};

void change_list_init(struct change_list *cl);
/* Frees every entry; the list is empty and reusable afterwards. */
void change_list_clear(struct change_list *cl);
/* Appends a copy; -ENOMEM or -EINVAL (name not a valid wire name). */
int change_list_add(struct change_list *cl, enum change_op op, const uint8_t *name,
                    uint16_t type, uint32_t ttl, const uint8_t *rdata, uint16_t rdlen,
                    int64_t created_at);
/* Gives entry i new rdata (a copy; the old stays in its block until the
 * list is cleared).  -ENOMEM. */
int change_list_set_rdata(struct change_list *cl, size_t i, const uint8_t *rdata,
                          uint16_t rdlen);
