/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Resolution: a parsed standard query against the served zones, into a
 * plan (pointers into the current snapshot, on the caller's stack) that
 * packet_write() encodes.  Nothing is copied or allocated.  Dispatch
 * (opcode, class, EDNS, cookies, rate limiting, metrics) is
 * core/zone/process.c, which calls this once per answered query.
 */
#include "core/wire/packet.h"

struct query;
struct zone;
struct zone_table;
struct geo_sites;
struct geo_db;

/* What resolution reads. */
struct answer_source {
	const struct zone_table *zones;
	const struct geo_sites *sites;   /* may be NULL: no geo names */
	const struct geo_db *geo_db;     /* may be NULL: every client unlocated */
};

/*
 * Fills plan (rcode, AA, sections, ECS scope, geo sites; plan->geo_fail_open
 * when a geo answer failed open) and returns the zone that answered, or
 * NULL (plan->rcode REFUSED) when no served zone holds the name.
 */
const struct zone *answer_resolve(const struct query *q, const struct answer_source *src,
                                  struct answer_plan *plan);
