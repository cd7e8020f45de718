/* SPDX-License-Identifier: MIT */
/*
 * WAL checkpoints in a helper thread (see checkpoint.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/conf/log.h"
#include "core/conf/side_thread.h"
#include "core/conf/sysclock.h"
#include "storage/checkpoint.h"
#include "storage/storage_internal.h"
#include "storage/wal_pin.h"

/* A WAL frame's header; the file's own header (wal_pin.h counts both). */
#define WAL_FRAME_HEADER 24
#define WAL_FILE_HEADER 32

struct checkpoint {
	struct db *db;
	sqlite3 *sql;             /* the helper's own connection */
	uint32_t pages;
	pthread_t thread;
	struct wal_pin *pin;      /* NULL when out of memory: unpinned */
	uint32_t frame_bytes;     /* the database's page size + a frame header */
	pthread_mutex_t mu;       /* guards the fields below, nothing else */
	pthread_cond_t cond;
	bool wanted, stop;
	bool pin_wanted;          /* the WAL grew past its pin */
	uint32_t pinned_frames;   /* what the pin covers now */
	uint32_t pin_frames;      /* what it may cover (0: mlock was refused) */
};

/*
 * SQLite calls this on the loop's thread after each commit, with the WAL's
 * size in pages (the hook sqlite3_wal_autocheckpoint would otherwise
 * install).  It only raises the flag: the mutex is held for a few
 * instructions by either side, never across a checkpoint.
 */
static int on_commit(void *arg, sqlite3 *sql, const char *name, int pages)
{
	struct checkpoint *c = arg;
	(void)sql;
	(void)name;
	if (pages < 0)
		return SQLITE_OK;
	pthread_mutex_lock(&c->mu);
	bool grew = (uint32_t)pages > c->pinned_frames && c->pinned_frames < c->pin_frames;
	if (grew)
		c->pin_wanted = true;
	if ((uint32_t)pages >= c->pages)
		c->wanted = true;
	if (grew || c->wanted)
		pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->mu);
	return SQLITE_OK;
}

/* Pins what the WAL holds now (wal_pin.h); on the helper's thread. */
static void pin_again(struct checkpoint *c)
{
	if (!c->pin || wal_pin_refused(c->pin))
		return;   /* out of memory at start, or refused and said once */
	char why[256] = "";
	int r = wal_pin_update(c->pin, c->sql, why);
	bool refused = r < 0 && wal_pin_refused(c->pin);
	size_t bytes = wal_pin_wal_bytes(c->pin);
	uint32_t frames = bytes > WAL_FILE_HEADER
	                          ? (uint32_t)((bytes - WAL_FILE_HEADER) / c->frame_bytes)
	                          : 0;
	pthread_mutex_lock(&c->mu);
	bool moved = c->pinned_frames != frames;
	c->pinned_frames = frames;
	if (refused)
		c->pin_frames = 0;   /* no more asking */
	pthread_mutex_unlock(&c->mu);
	if (refused)
		log_warn("%s: the WAL is not kept in memory (%s): a commit may wait for a disk read "
		         "when the kernel has dropped the WAL's pages",
		         c->db->path, why);
	else if (r < 0)
		log_error("%s: keeping the WAL in memory: %s", c->db->path, why);
	else if (moved)
		log_debug("%s: WAL kept in memory: %zu bytes (%u frames)", c->db->path, bytes, frames);
}

static void run_one(struct checkpoint *c)
{
	struct timespec t0, t1;
	sysclock_mono_ts(&t0);
	int log_pages = 0, copied = 0;
	int rc = sqlite3_wal_checkpoint_v2(c->sql, NULL, SQLITE_CHECKPOINT_PASSIVE, &log_pages,
	                                   &copied);
	sysclock_mono_ts(&t1);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	/* BUSY: another checkpoint (the operator's sqlite3) runs; the next one
	 * copies what this one did not. */
	if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
		log_error("%s: checkpoint: %s", c->db->path, sqlite3_errmsg(c->sql));
	else
		log_debug("%s: checkpoint: %d of %d WAL pages copied in %.1f ms (helper thread)",
		          c->db->path, copied, log_pages, ms);
}

static void *helper(void *arg)
{
	struct checkpoint *c = arg;
	/* Mostly waiting for the disk: it keeps nice 0, but not the loop's
	 * short slice, which would let it cut in ahead of the loop. */
	side_thread_lower(0, "checkpoint");
	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (!c->wanted && !c->pin_wanted && !c->stop)
			pthread_cond_wait(&c->cond, &c->mu);
		if (c->stop)
			break;
		bool checkpoint = c->wanted, pin = c->pin_wanted;
		c->wanted = c->pin_wanted = false;
		pthread_mutex_unlock(&c->mu);
		/* After a checkpoint too: a WAL replaced under us (the last
		 * connection closing deletes it) is found there. */
		if (pin || checkpoint)
			pin_again(c);
		if (checkpoint)
			run_one(c);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

struct checkpoint *checkpoint_new(struct db *db, uint32_t pages, char err[256])
{
	struct checkpoint *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, 256, "out of memory");
		return NULL;
	}
	c->db = db;
	c->pages = pages ? pages : 1;
	/* Its own connection, used by the helper only (hence NOMUTEX).  PASSIVE
	 * checkpoints never call the busy handler; the synchronous level is
	 * what a checkpoint syncs with: NORMAL syncs the WAL and the database
	 * there, as FULL would. */
	if (sqlite3_open_v2(db->path, &c->sql, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
	        SQLITE_OK ||
	    sqlite3_exec(c->sql, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK) {
		snprintf(err, 256, "%s: a connection for checkpoints: %s", db->path,
		         c->sql ? sqlite3_errmsg(c->sql) : "out of memory");
		sqlite3_close(c->sql);
		free(c);
		return NULL;
	}
	sqlite3_wal_autocheckpoint(c->sql, 0);
	/* The pin covers what one checkpoint's worth of frames reaches. */
	int page_size = 4096;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(c->sql, "PRAGMA page_size", -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > 0)
			page_size = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	c->frame_bytes = (uint32_t)page_size + WAL_FRAME_HEADER;
	c->pin = wal_pin_new(db, WAL_FILE_HEADER + (size_t)c->pages * c->frame_bytes);
	c->pin_frames = c->pin ? c->pages : 0;
	c->pin_wanted = c->pin != NULL;   /* what the WAL holds at start */
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cond, NULL);
	int ret = side_thread_start(&c->thread, helper, c);
	if (ret != 0) {
		snprintf(err, 256, "%s: a thread for checkpoints: %s", db->path, strerror(ret));
		wal_pin_free(c->pin);
		pthread_cond_destroy(&c->cond);
		pthread_mutex_destroy(&c->mu);
		sqlite3_close(c->sql);
		free(c);
		return NULL;
	}
	/* Replaces the automatic checkpoint's hook on the loop's connection. */
	sqlite3_wal_hook(db->sql, on_commit, c);
	return c;
}

void checkpoint_free(struct checkpoint *c)
{
	if (!c)
		return;
	sqlite3_wal_hook(c->db->sql, NULL, NULL);
	pthread_mutex_lock(&c->mu);
	c->stop = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	wal_pin_free(c->pin);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->mu);
	if (sqlite3_close(c->sql) != SQLITE_OK)
		log_warn("%s: closing the checkpoint connection: %s", c->db->path,
		         sqlite3_errmsg(c->sql));
	/* Automatic checkpoints again, for whoever still writes (and the
	 * connection's last close, which checkpoints anyway). */
	sqlite3_wal_autocheckpoint(c->db->sql, 1000);
	free(c);
}
