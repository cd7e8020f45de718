/* SPDX-License-Identifier: MIT */
/*
 * NSEC chain: type bitmaps and the walk over the builder's names.
 */
#include "dnssec/denial.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/zone/zone.h"
#include "core/zone/zone_patch.h"

/* Types present at one name; more than any real zone puts at a name. */
#define TYPES_MAX 512

int denial_bitmap(const uint16_t *types, size_t n, uint8_t *out, size_t cap)
{
	size_t pos = 0;
	int window = -1;      /* the window being written */
	size_t len_at = 0;    /* where its length byte sits */
	uint16_t prev = 0;
	bool any = false;

	/* Emit in increasing type order without sorting a copy: repeatedly
	 * take the smallest type above the previous one.  n is tiny (the
	 * types at one name), so O(n^2) is cheaper than a buffer. */
	for (;;) {
		bool found = false;
		uint16_t t = 0;
		for (size_t i = 0; i < n; i++) {
			if ((!any || types[i] > prev) && (!found || types[i] < t)) {
				t = types[i];
				found = true;
			}
		}
		if (!found)
			break;
		any = true;
		prev = t;
		int w = t >> 8;
		size_t byte = (t & 0xff) >> 3;
		if (w != window) {
			if (pos + 2 > cap)
				return -ENOSPC;
			window = w;
			out[pos] = (uint8_t)w;
			out[pos + 1] = 0;
			len_at = pos + 1;
			pos += 2;
		}
		/* Grow the window's bitmap (zero-filled) up to this type's byte. */
		size_t have = out[len_at];
		if (byte + 1 > have) {
			size_t grow = byte + 1 - have;
			if (pos + grow > cap)
				return -ENOSPC;
			memset(out + pos, 0, grow);
			pos += grow;
			out[len_at] = (uint8_t)(byte + 1);
		}
		out[len_at + 1 + byte] |= (uint8_t)(0x80 >> (t & 7));
	}
	return (int)pos;
}

int denial_nsec_rdata(const uint8_t *next, const uint16_t *types, size_t n,
                      uint8_t *out, size_t cap)
{
	size_t nlen = dname_len(next);
	if (cap < nlen)
		return -ENOSPC;
	memcpy(out, next, nlen);
	dname_lower(out);
	int blen = denial_bitmap(types, n, out + nlen, cap - nlen);
	if (blen < 0)
		return blen;
	return (int)(nlen + (size_t)blen);
}

/*
 * The NSEC types of one name into `types` (cap TYPES_MAX + 2): what is
 * there, filtered at a delegation, plus RRSIG and NSEC.  Returns the count,
 * 0 for a name that gets no NSEC (nothing there: an empty non-terminal).
 */
static size_t filter_types(uint16_t *types, size_t n, bool apex)
{
	if (n > TYPES_MAX)
		n = TYPES_MAX;
	bool cut = false;
	for (size_t i = 0; i < n && !apex; i++)
		cut |= types[i] == RR_NS;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		uint16_t t = types[i];
		/* RRSIG and NSEC are ours to add; a zone file's own are dropped. */
		if (t == RR_RRSIG || t == RR_NSEC)
			continue;
		/* At a zone cut only NS and DS are authoritative (RFC 4035 2.3). */
		if (cut && t != RR_NS && t != RR_DS)
			continue;
		types[k++] = t;
	}
	if (k == 0)
		return 0;
	types[k++] = RR_RRSIG;
	types[k++] = RR_NSEC;
	return k;
}

static size_t nsec_types(struct zone_builder *b, const uint8_t *name, bool apex,
                         uint16_t *types)
{
	return filter_types(types, zone_builder_types(b, name, types, TYPES_MAX), apex);
}

struct pending {
	uint8_t *owner;
	uint8_t *rdata;
	uint16_t rdlen;
};

int denial_build(struct zone_builder *b, uint32_t ttl, char err[256])
{
	const uint8_t **names = NULL;
	size_t count = zone_builder_names(b, &names);
	if (count == 0 || !names) {
		snprintf(err, 256, "NSEC chain: the zone has no names");
		return -EINVAL;
	}
	/* The chain is computed in full before any record is added: adding
	 * may move the builder's storage under `names`. */
	struct pending *list = calloc(count, sizeof(*list));
	uint16_t *types = malloc((TYPES_MAX + 2) * sizeof(*types));
	uint8_t *buf = malloc(DNAME_MAX + DENIAL_BITMAP_MAX);
	size_t made = 0;
	int rc = -ENOMEM;
	if (!list || !types || !buf) {
		snprintf(err, 256, "NSEC chain: out of memory");
		goto out;
	}
	for (size_t i = 1; i < count; i++) {
		if (dname_canonical_cmp(names[i - 1], names[i]) >= 0) {
			snprintf(err, 256, "NSEC chain: names not in canonical order");
			rc = -EINVAL;
			goto out;
		}
	}

	/* Which names get an NSEC, with their owner copied. */
	size_t first = count;   /* index of the first name with an NSEC */
	for (size_t i = 0; i < count; i++) {
		size_t nt = nsec_types(b, names[i], i == 0, types);
		if (nt == 0)
			continue;
		size_t len = dname_len(names[i]);
		list[made].owner = malloc(len);
		if (!list[made].owner) {
			snprintf(err, 256, "NSEC chain: out of memory");
			goto out;
		}
		memcpy(list[made].owner, names[i], len);
		made++;
		if (first == count)
			first = i;
	}
	if (made == 0 || first != 0) {
		snprintf(err, 256, "NSEC chain: the apex holds no records");
		rc = -EINVAL;
		goto out;
	}
	for (size_t i = 0; i < made; i++) {
		const uint8_t *next = list[(i + 1) % made].owner;
		size_t nt = nsec_types(b, list[i].owner, i == 0, types);
		int len = denial_nsec_rdata(next, types, nt, buf, DNAME_MAX + DENIAL_BITMAP_MAX);
		if (len < 0) {
			snprintf(err, 256, "NSEC chain: bitmap does not fit");
			rc = len;
			goto out;
		}
		list[i].rdata = malloc((size_t)len);
		if (!list[i].rdata) {
			snprintf(err, 256, "NSEC chain: out of memory");
			goto out;
		}
		memcpy(list[i].rdata, buf, (size_t)len);
		list[i].rdlen = (uint16_t)len;
	}
	for (size_t i = 0; i < made; i++) {
		rc = zone_builder_add(b, list[i].owner, RR_NSEC, ttl, list[i].rdata, list[i].rdlen);
		if (rc < 0) {
			char name[1024];
			if (dname_to_str(list[i].owner, name, sizeof(name)) < 0)
				snprintf(name, sizeof(name), "(name)");
			snprintf(err, 256, "NSEC chain: cannot add NSEC at %.160s: %s", name,
			         strerror(-rc));
			goto out;
		}
	}
	rc = 0;
out:
	if (list) {
		for (size_t i = 0; i < made; i++) {
			free(list[i].owner);
			free(list[i].rdata);
		}
	}
	free(list);
	free(types);
	free(buf);
	return rc;
}

int denial_patch(struct zone_patch *p, const uint8_t *apex, uint32_t ttl, char err[256])
{
	const uint8_t *const *owners, *const *nexts;
	size_t n = zone_patch_nsec_names(p, &owners, &nexts);
	uint16_t *types = malloc((TYPES_MAX + 2) * sizeof(*types));
	uint8_t *buf = malloc(DNAME_MAX + DENIAL_BITMAP_MAX);
	int rc = 0;
	if (!types || !buf) {
		snprintf(err, 256, "NSEC chain: out of memory");
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		size_t nt = zone_patch_types(p, owners[i], types, TYPES_MAX);
		nt = filter_types(types, nt, dname_equal(owners[i], apex));
		int len = denial_nsec_rdata(nexts[i], types, nt, buf, DNAME_MAX + DENIAL_BITMAP_MAX);
		if (len < 0) {
			snprintf(err, 256, "NSEC chain: bitmap does not fit");
			rc = len;
			break;
		}
		rc = zone_patch_set_nsec(p, owners[i], ttl, buf, (uint16_t)len);
		if (rc < 0)
			snprintf(err, 256, "NSEC chain: cannot set an NSEC: %s", strerror(-rc));
	}
out:
	free(types);
	free(buf);
	return rc;
}
