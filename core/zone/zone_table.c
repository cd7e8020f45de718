/* SPDX-License-Identifier: MIT */
/*
 * The served zones.  We serve a handful of zones, so a small array scanned
 * from the longest apex down is both simple and fast.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/wire/dname.h"
#include "core/zone/zone.h"
#include "core/zone/zone_table.h"

struct zone_table {
	struct zone **zones;   /* sorted by label count, longest first */
	uint8_t *labels;       /* each apex's label count, so lookups need not count */
	/* Each apex and its length, beside the count: a lookup reads no zone
	 * (an apex never changes for the life of a zone in the table). */
	const uint8_t **apex;
	uint8_t *apex_len;
	size_t n, cap;
	zone_table_watch_fn watch;
	zone_table_patch_fn watch_patch;
	void *watch_ctx;
};

void zone_table_watch(struct zone_table *t, zone_table_watch_fn fn, void *ctx)
{
	t->watch = fn;
	t->watch_ctx = ctx;
}

void zone_table_watch_patches(struct zone_table *t, zone_table_patch_fn fn)
{
	t->watch_patch = fn;
}

void zone_table_patched(struct zone_table *t, const struct zone *z, const uint8_t *diff,
                        size_t len)
{
	if (t->watch_patch)
		t->watch_patch(t->watch_ctx, z, diff, len);
}

struct zone_table *zone_table_new(void)
{
	return calloc(1, sizeof(struct zone_table));
}

void zone_table_free(struct zone_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		zone_free(t->zones[i]);
	free(t->zones);
	free(t->labels);
	free(t->apex);
	free(t->apex_len);
	free(t);
}

static ssize_t index_of(const struct zone_table *t, const uint8_t *apex)
{
	size_t len = dname_len(apex);
	for (size_t i = 0; i < t->n; i++)
		if (dname_len(zone_apex(t->zones[i])) == len &&
		    memcmp(zone_apex(t->zones[i]), apex, len) == 0)
			return (ssize_t)i;
	return -1;
}

int zone_table_add(struct zone_table *t, struct zone *z)
{
	if (index_of(t, zone_apex(z)) >= 0)
		return -EEXIST;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;
		struct zone **zones = realloc(t->zones, cap * sizeof(*zones));
		if (!zones)
			return -ENOMEM;
		t->zones = zones;
		uint8_t *labels = realloc(t->labels, cap);
		if (!labels)
			return -ENOMEM;
		t->labels = labels;
		const uint8_t **apex = realloc(t->apex, cap * sizeof(*apex));
		if (!apex)
			return -ENOMEM;
		t->apex = apex;
		uint8_t *apex_len = realloc(t->apex_len, cap);
		if (!apex_len)
			return -ENOMEM;
		t->apex_len = apex_len;
		t->cap = cap;
	}
	int labels = dname_label_count(zone_apex(z));
	size_t at = t->n;
	while (at > 0 && t->labels[at - 1] < labels) {
		t->zones[at] = t->zones[at - 1];
		t->labels[at] = t->labels[at - 1];
		t->apex[at] = t->apex[at - 1];
		t->apex_len[at] = t->apex_len[at - 1];
		at--;
	}
	t->zones[at] = z;
	t->labels[at] = (uint8_t)labels;
	t->apex[at] = zone_apex(z);
	t->apex_len[at] = (uint8_t)zone_apex_len(z);
	t->n++;
	if (t->watch)
		t->watch(t->watch_ctx, NULL, z);
	return 0;
}

int zone_table_replace(struct zone_table *t, struct zone *z)
{
	ssize_t i = index_of(t, zone_apex(z));
	if (i < 0)
		return zone_table_add(t, z);
	struct zone *old = t->zones[i];
	t->zones[i] = z;
	t->apex[i] = zone_apex(z);   /* same name, the new snapshot's copy */
	if (t->watch)
		t->watch(t->watch_ctx, old, z);
	/* Single-threaded: no query is in flight, the old snapshot can go
	 * (a zone transfer still sending it holds its own reference). */
	zone_free(old);
	return 0;
}

int zone_table_replace_diffed(struct zone_table *t, struct zone *z, const uint8_t *diff,
                              size_t len)
{
	ssize_t i = index_of(t, zone_apex(z));
	if (i < 0)
		return zone_table_add(t, z);
	struct zone *old = t->zones[i];
	t->zones[i] = z;
	t->apex[i] = zone_apex(z);
	zone_table_patched(t, z, diff, len);
	zone_free(old);
	return 0;
}

struct zone *zone_table_swap(struct zone_table *t, struct zone *z)
{
	ssize_t i = index_of(t, zone_apex(z));
	if (i < 0) {
		if (zone_table_add(t, z) < 0)
			zone_free(z);
		return NULL;
	}
	struct zone *old = t->zones[i];
	t->zones[i] = z;
	t->apex[i] = zone_apex(z);
	return old;
}

const struct zone *zone_table_find(const struct zone_table *t, const uint8_t *name)
{
	uint8_t off[DNAME_LABELS_MAX];
	unsigned labels = 0;
	size_t o = 0;
	for (; name[o]; o += name[o] + 1u)
		off[labels++] = (uint8_t)o;
	return zone_table_find_labels(t, name, o + 1, labels, off);
}

const struct zone *zone_table_find_labels(const struct zone_table *t, const uint8_t *name,
                                          size_t len, unsigned labels,
                                          const uint8_t *label_off)
{
	for (size_t i = 0; i < t->n; i++) {
		unsigned zl = t->labels[i];
		if (zl > labels)
			continue;
		/* The root zone has no label to start at: its suffix is the end. */
		size_t at = zl == labels ? 0 : zl == 0 ? len - 1 : label_off[labels - zl];
		size_t apex_len = t->apex_len[i];
		if (apex_len == len - at && dname_same(name + at, t->apex[i], apex_len))
			return t->zones[i];
	}
	return NULL;
}

const struct zone *zone_table_get(const struct zone_table *t, const uint8_t *apex)
{
	ssize_t i = index_of(t, apex);
	return i < 0 ? NULL : t->zones[i];
}

struct zone *zone_table_edit(struct zone_table *t, const uint8_t *apex)
{
	ssize_t i = index_of(t, apex);
	return i < 0 ? NULL : t->zones[i];
}

size_t zone_table_count(const struct zone_table *t)
{
	return t->n;
}

const struct zone *zone_table_at(const struct zone_table *t, size_t i)
{
	return i < t->n ? t->zones[i] : NULL;
}

int zone_table_remove(struct zone_table *t, const uint8_t *apex)
{
	ssize_t i = index_of(t, apex);
	if (i < 0)
		return -ENOENT;
	struct zone *old = t->zones[i];
	size_t after = t->n - (size_t)i - 1;
	memmove(t->zones + i, t->zones + i + 1, after * sizeof(*t->zones));
	memmove(t->labels + i, t->labels + i + 1, after);   /* each zone keeps its count */
	memmove(t->apex + i, t->apex + i + 1, after * sizeof(*t->apex));
	memmove(t->apex_len + i, t->apex_len + i + 1, after);
	t->n--;
	zone_free(old);
	return 0;
}
