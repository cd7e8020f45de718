/* SPDX-License-Identifier: MIT */
/*
 * The key store's disk work on a helper thread (see keystore_job.h).
 */
#include "dnssec/keystore_job.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/conf/side_thread.h"
#include "core/net/loop_job.h"
#include "core/test_hooks.h"
#include "dnssec/key.h"

struct keystore_job {
	struct loop_job job;
	keystore_job_fn fn;
	void *ctx;
	uint32_t delay_ms;              /* GEOACME_TEST_KEYS_WRITE_DELAY_MS (core/test_hooks.h) */
	struct keystore_job_in in;
	struct keystore_job_out out;    /* the thread's, read by the loop after it finished */
};

static void fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
}

int keystore_generate(const struct keystore *ks, const char *key_dir, int64_t now,
                      struct keystore_key *out, char err[256])
{
	char stem[256], tmp[KEYSTORE_PATH_MAX + 300], path[KEYSTORE_PATH_MAX + 300];
	snprintf(stem, sizeof(stem), "%s", ks->zone);
	if (strlen(stem) > 1)
		stem[strlen(stem) - 1] = '\0';
	for (int tries = 0; tries < 8; tries++) {
		snprintf(tmp, sizeof(tmp), "%s/%s.new.pem", key_dir, stem);
		unlink(tmp);   /* a previous attempt cut short: never published */
		int rc = key_generate(tmp, err);
		if (rc < 0)
			return rc;
		struct key *k = key_load(tmp, err);
		if (!k) {
			unlink(tmp);
			return -EINVAL;
		}
		uint16_t tag = key_tag(k);
		key_free(k);
		bool clash = false;
		for (size_t i = 0; i < ks->n; i++)
			clash = clash || ks->keys[i].tag == tag;
		if (clash)
			continue;   /* two keys with one tag would confuse validators and caches */
		snprintf(path, sizeof(path), "%s/%s.%u.pem", key_dir, stem, tag);
		if (strlen(path) >= KEYSTORE_PATH_MAX || rename(tmp, path) < 0) {
			rc = strlen(path) >= KEYSTORE_PATH_MAX ? -ENAMETOOLONG : -errno;
			snprintf(err, 256, "%.200s: %s", path, strerror(-rc));
			unlink(tmp);
			return rc;
		}
		fsync_dir(key_dir);
		memset(out, 0, sizeof(*out));
		out->tag = tag;
		out->generated = true;
		out->state = KS_STANDBY;
		out->t[KT_CREATED] = now;
		snprintf(out->file, sizeof(out->file), "%s", path);
		return 0;
	}
	snprintf(err, 256, "cannot generate a key with an unused tag");
	return -EEXIST;
}

void keystore_job_run(const struct keystore_job_in *in, struct keystore_job_out *out)
{
	if (in->generate) {
		out->rc = keystore_generate(&in->ks, in->key_dir, in->now, &out->key, out->err);
		return;
	}
	out->rc = keystore_save(&in->ks, out->err);
	for (size_t i = 0; out->rc == 0 && i < in->ks.n; i++)
		out->unlinked[i] = in->unlink[i] && unlink(in->ks.keys[i].file) == 0;
}

static void *thread_main(void *arg)
{
	struct keystore_job *j = arg;
	/* Mostly waits for the disk; below the loop where they share a core. */
	side_thread_lower(10, "key store");
	if (j->delay_ms) {
		/* A test hook: the key change is decided, not yet on disk, so a
		 * test can see it take no effect before. */
		side_thread_sleep_ms(j->delay_ms);
	}
	keystore_job_run(&j->in, &j->out);
	/* The last touch of j (a rollover would wait for ever without it). */
	loop_job_finish(&j->job);
	return NULL;
}

static void on_done(void *arg)
{
	struct keystore_job *j = arg;
	j->fn(j->ctx, &j->out);
	free(j);
}

void keystore_job_free(struct keystore_job *j)
{
	if (!j)
		return;
	loop_job_unwatch(&j->job);
	loop_job_wait(&j->job);   /* a write under way completes */
	free(j);
}

struct keystore_job *keystore_job_start(struct loop *l, const struct keystore_job_in *in,
                                        keystore_job_fn fn, void *ctx, char err[256])
{
	struct keystore_job *j = calloc(1, sizeof(*j));
	if (!j) {
		snprintf(err, 256, "out of memory");
		return NULL;
	}
	j->fn = fn;
	j->ctx = ctx;
	j->in = *in;
	const char *delay = test_hook(TEST_HOOK_KEYS_WRITE_DELAY);
	if (delay)
		j->delay_ms = (uint32_t)strtoul(delay, NULL, 10);
	if (loop_job_start(&j->job, l, thread_main, on_done, j, err) < 0) {
		free(j);
		return NULL;
	}
	return j;
}
