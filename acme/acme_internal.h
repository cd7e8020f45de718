/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * What the acme files share (included only from acme/): the zones, their
 * keys, and a few helpers.  acme_zone.c sets zones up, tsig_handler.c is
 * core's update_handler (TSIG for any zone), commit.c the update path
 * (check, commit durably, patch or rebuild the snapshot, re-sign), purge.c
 * the stale TXT timer.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "acme/acme_zone.h"
#include "acme/policy.h"
#include "core/hooks.h"
#include "core/tsig/tsig.h"
#include "core/wire/dname.h"
#include "core/zone/zone_patch.h"
#include "core/wire/change.h"
#include "storage/journal.h"

struct process_env;
struct db;
struct durable;
struct wal_sync;
struct checkpoint;
struct compact;
struct held_reply;
struct presign;
struct staged;
struct lockwait;
struct loop;
struct recset;
struct replay;
struct zone_table;

struct acme_zone;

/* A change committed while a reload's generation is built (acme_capture_start). */
struct acme_change {
	struct acme_change *next;
	uint32_t serial;             /* the zone's serial after it */
	struct change_list cl;       /* as committed, serial bump included */
};

struct acme_capture {
	struct acme_change *head, **tail;
	bool lost;                   /* a change could not be kept (out of memory) */
};

struct acme_key {
	struct tsig_key tk;
	struct policy pol;
	struct replay *replay;       /* the UPDATEs it signed lately (replay.h) */
	struct acme_zone *zone;
};

struct acme_zone {
	struct acme *a;
	uint8_t apex[DNAME_MAX];
	char name[DNAME_MAX * 4 + 2];    /* presentation, for logs */
	char *journal_path;
	struct db *db;
	struct recset *rs;
	struct zone_signer signer;
	bool has_signer;
	bool allow_update;
	bool serial_per_signing;         /* signed and transferred: see acme_resign */
	struct journal_caps caps;        /* the IXFR journal's */
	uint32_t stale_age;
	uint32_t checkpoint_pages;
	bool attached;                   /* acme_attach() ran: timers, syncs, serial */
	bool built_signing;              /* its build made signatures anew (attach_zone) */
	struct acme_capture *captured;   /* non-NULL while a reload builds beside us */
	int64_t purge_timer;
	bool purge_more;                 /* the last purge stopped at PURGE_SLICE (purge.c) */
	/* A signature renewal pass in slices, while resign_timer is set. */
	struct zone_resign resign;
	const struct zone *resign_zone;   /* the snapshot the pass renews */
	int64_t resign_timer;
	struct timespec resign_started;
	struct acme_key *keys;
	size_t n_keys;
	bool mirror_stale;           /* rs may differ from the database: reload first */
	/* Durable commits off the loop (commit.c); NULL: every commit returns durable. */
	struct wal_sync *ws;
	struct checkpoint *ckpt;     /* WAL checkpoints in a helper thread; NULL: SQLite's own */
	struct durable *dur;         /* the replies waiting for the disk */
	bool ws_watched;             /* the sync's eventfd is in the loop */
	char sync_why[256];          /* why commits sync in COMMIT (commit_durable_prepare) */
	uint32_t sync_hold_ms;       /* GEOACME_TEST_SYNC=hold=MS (commit.c) */
	bool sync_fail;              /* GEOACME_TEST_SYNC=fail */
	int64_t sync_late_timer;
	int sync_late_result;
	/* How the last commit changed the served snapshot, for the log. */
	bool last_patched;           /* patched in place (else built whole) */
	bool last_beside;            /* committed, to be built beside the loop (compact_cut) */
	double last_ms;              /* from the change list to the committed, served change */
	double last_commit_ms;       /* ... of which SQLite's durable commit */
	/* Compaction beside the loop (compact.h); NULL until the first. */
	struct compact *compact;
	/*
	 * A committed change the served snapshot does not show yet: one a patch
	 * cannot make (zone_patch.h), built whole beside the loop as a
	 * compaction (compact_cut).  Until it is swapped in, commits are noted
	 * for it rather than patched, UPDATEs wait (lockwait.h), and the
	 * replies of those committed wait here, in order (commit.c).
	 */
	bool cut_owed;
	struct held_reply *cut_held, **cut_tail;
	/*
	 * ... and its difference from the served snapshot goes on in the IXFR
	 * history: the commits meanwhile journal none, the build computes it
	 * beside the loop and its swap journals it (compact.c).  false: the
	 * history started over at the commit (a compaction under way became
	 * the build, or a commit meanwhile reset it).
	 */
	bool cut_history;
	/*
	 * Such a build failed beside the loop and on it (commit_cut_served,
	 * not ok): the served snapshot lacks a committed change, so the next
	 * commit is not patched onto it but built whole again (beside the
	 * loop), which serves both; until one is served.
	 */
	bool served_behind;
	/* A large UPDATE's signatures made ahead (presign.h); NULL: none. */
	struct presign *presign;
	/* A large UPDATE committed in stages (staged.h); NULL: none. */
	struct staged *staged;
	/* A zone-file edit found at setup, applied by acme_apply_file_edits(). */
	struct file_diff *edit;
	char *zone_path;
};

struct acme {
	struct zone_table *t;
	struct loop *l;
	struct process_env *env;
	acme_durable_fn on_durable;  /* NOTIFY waits for this (acme_zone.h) */
	void *on_durable_ctx;
	acme_durable_fn on_rekeyed;  /* a re-keying beside the loop is served (acme_zone.h) */
	void *on_rekeyed_ctx;
	struct acme_zone **zones;
	size_t n;
	struct lockwait *lw;         /* UPDATEs waiting for a database lock (lockwait.h) */
	bool capturing;              /* a reload builds beside us: commits are kept */
	bool edits_beside;           /* acme_apply_file_edits(beside) is under way */
	bool replay_on_loop;         /* acme_replay_on_loop(): commit_replay may build whole */
	bool detached;               /* acme_detach() ran: nothing of ours is in the loop */
};

/* Drops what was captured of az's commits and stops capturing them. */
void acme_capture_stop_zone(struct acme_zone *az);
/* The zone with this (lowercase wire) apex, or NULL. */
struct acme_zone *acme_find_zone(const struct acme *a, const uint8_t *apex);
/* A name for logs; "(unprintable)" when it cannot be shown. */
void acme_name_str(const uint8_t *name, char *out, size_t cap);
/* Fills err; names may be long, and a cut message is better than none. */
__attribute__((format(printf, 2, 3)))
void acme_errf(char err[256], const char *fmt, ...);
/* The loop's clock (a test may step it), the system clock without a loop. */
uint64_t acme_now(const struct acme *a);   /* unix seconds */
/* records_load() callback: one database row into the zone's mirror. */
struct records_row;
int acme_load_row(void *arg, const struct records_row *row);
/* The same into any recset; zname and path for the warnings.  Any thread. */
int acme_row_into(struct recset *rs, const char *zname, const char *path,
                  const struct records_row *row);
/*
 * A snapshot of the records in rs, signed with signer (NULL: unsigned);
 * NULL with err when it cannot be served.  Touches nothing else, so the
 * compaction's thread calls it too (compact.h).
 */
struct zone;
struct zone_signer;
struct zone *acme_build(const uint8_t *apex, const char *zname, const struct recset *rs,
                        const struct zone_signer *signer, const char *path, char err[256]);
