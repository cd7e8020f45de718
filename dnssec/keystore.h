/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A zone's keys and where each stands in its lifecycle: the state file in
 * the key policy's key_dir (doc/dnssec.md), one per zone,
 * <key_dir>/<zone>.keys (the zone without its final dot, lowercase).
 *
 * The file is text, one line per item, written whole and atomically
 * (write a temporary file, fsync it, rename it over, fsync the folder), so
 * that after kill -9 it is either the old state or the new one:
 *
 *   geoacme-keys 1
 *   zone example.com.
 *   ds_ttl 3600                       (the DS TTL last read at the parent)
 *   key <tag> <origin> <state> <times> <file>
 *
 * origin is "config" (named in [[zones.keys]]: never deleted) or
 * "generated" (made in key_dir: deleted once it has left every cache).
 * times are seven unix seconds separated by commas, 0 when not (yet)
 * reached: created, published, signing, parent (its DS became the one the
 * parent should have: CDS), ds_seen (every parent server served it),
 * withdrawn (left the DNSKEY set), retired.  The file name comes last and
 * runs to the end of the line.
 *
 * Process lifetime: loaded at start and after a reload, kept by the
 * rollover (dnssec/rollover.h).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KEYSTORE_MAX 8
#define KEYSTORE_PATH_MAX 4096

enum keystore_state {
	KS_STANDBY,     /* published, not signing */
	KS_INCOMING,    /* published and signing; the parent still has the old DS */
	KS_ACTIVE,      /* published and signing; its DS is the one the parent should have */
	KS_OUTGOING,    /* published and signing until the new DS has reached every cache */
	KS_REMOVED,     /* out of the DNSKEY set; waiting for caches to forget it */
	KS_RETIRED,     /* done; a generated key's file is deleted */
};

enum keystore_time {
	KT_CREATED, KT_PUBLISHED, KT_SIGNING, KT_PARENT, KT_DS_SEEN, KT_WITHDRAWN, KT_RETIRED,
	KT_COUNT,
};

struct keystore_key {
	uint16_t tag;
	bool generated;
	enum keystore_state state;
	int64_t t[KT_COUNT];
	char file[KEYSTORE_PATH_MAX];
};

struct keystore {
	char path[KEYSTORE_PATH_MAX];   /* the state file */
	char zone[256];                 /* "example.com." */
	uint32_t ds_ttl;
	struct keystore_key keys[KEYSTORE_MAX];
	size_t n;
};

/* "standby", "incoming", ... */
const char *keystore_state_name(enum keystore_state s);
const char *keystore_time_name(enum keystore_time t);

/*
 * Reads <key_dir>/<zone>.keys into ks.  A file that is not there gives an
 * empty store (ks->n == 0) and 0.  -EBADMSG (with file:line in err) for a
 * file we cannot read back, -errno for I/O.
 */
int keystore_load(struct keystore *ks, const char *key_dir, const char *zone, char err[256]);
/* Writes ks atomically (see above).  0 or -errno with err. */
int keystore_save(const struct keystore *ks, char err[256]);

/* The key with this file name, or NULL. */
struct keystore_key *keystore_find_file(struct keystore *ks, const char *file);
/* The first key in this state, or NULL. */
struct keystore_key *keystore_first(struct keystore *ks, enum keystore_state s);
