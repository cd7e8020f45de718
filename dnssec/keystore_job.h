/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * The key store's disk work beside the loop (issue #26): a new key file
 * generated in key_dir, the state file written (keystore_save: a write and
 * two fsyncs), the files of retired generated keys deleted.  On a busy disk
 * that was 40-140 ms of a loop round per key change (bench/keyroll.sh),
 * and the first P-256 key generation in a process costs OpenSSL some ms of
 * CPU.  The rollover (dnssec/rollover.h) hands a job a copy of its store
 * and goes on answering; nothing of the key change takes effect before the
 * job's callback, on the loop, says the store is on disk.
 *
 * One job at a time per rollover; a job frees itself after its callback.
 */
#include <stdbool.h>
#include <stdint.h>

#include "dnssec/keystore.h"

struct loop;

struct keystore_job_in {
	struct keystore ks;                 /* written whole, unless generate */
	bool generate;                      /* make a new key file (out.key); ks is not written */
	char key_dir[KEYSTORE_PATH_MAX];    /* generate: where */
	int64_t now;                        /* generate: the new key's created time */
	bool unlink[KEYSTORE_MAX];          /* once ks is written: delete these keys' files */
};

struct keystore_job_out {
	int rc;                             /* 0 or -errno, with err */
	char err[256];
	struct keystore_key key;            /* generate: the new key, standby */
	bool unlinked[KEYSTORE_MAX];        /* the files deleted */
};

/* On the loop, once the job is done; the job is freed after it returns. */
typedef void (*keystore_job_fn)(void *ctx, const struct keystore_job_out *out);

struct keystore_job;

/* Starts a job on a thread of its own.  NULL with err (no thread, no eventfd). */
struct keystore_job *keystore_job_start(struct loop *l, const struct keystore_job_in *in,
                                        keystore_job_fn fn, void *ctx, char err[256]);
/* On the loop: no callback; waits for the thread (a write under way
 * completes), then frees the job.  NULL-safe. */
void keystore_job_free(struct keystore_job *j);

/* What a job's thread does, here (for want of a thread). */
void keystore_job_run(const struct keystore_job_in *in, struct keystore_job_out *out);

/*
 * What a job with generate does, callable anywhere (the first key at
 * start): a P-256 key in key_dir, <zone>.<tag>.pem, its tag unlike every
 * key's in ks, made durable (the file and the folder synced); *out is the
 * key as standby, created at now.  0 or -errno with err.
 */
int keystore_generate(const struct keystore *ks, const char *key_dir, int64_t now,
                      struct keystore_key *out, char err[256]);
