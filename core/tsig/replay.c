/* SPDX-License-Identifier: MIT */
/*
 * The MACs of recently accepted UPDATEs, per key (see replay.h).  A flat
 * array scanned whole: UPDATEs are rare and each costs an fsync, so a few
 * hundred comparisons are nothing beside it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/tsig/replay.h"

/*
 * The MAC's first bytes are plenty to tell messages apart (a collision of
 * 128 bits of HMAC is not going to happen); every accepted MAC has at least
 * 10 (RFC 8945 5.2.2.1), which is what two copies are compared on at worst.
 */
#define REPLAY_MAC_KEPT 16

struct seen {
	uint64_t time_signed;
	uint64_t until;                  /* after this, the time check refuses it */
	uint8_t mac_len;
	uint8_t mac[REPLAY_MAC_KEPT];
};

struct replay {
	uint64_t floor;                  /* nothing signed before this is accepted */
	size_t n;
	struct seen v[REPLAY_MAX];
};

struct replay *replay_new(uint64_t floor)
{
	struct replay *r = calloc(1, sizeof(*r));
	if (r)
		r->floor = floor;
	return r;
}

void replay_free(struct replay *r)
{
	free(r);
}

static void forget_expired(struct replay *r, uint64_t now)
{
	size_t k = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].until >= now)
			r->v[k++] = r->v[i];
	r->n = k;
}

static bool same_mac(const struct seen *s, const uint8_t *mac, size_t len)
{
	size_t n = len < s->mac_len ? len : s->mac_len;
	return n > 0 && memcmp(s->mac, mac, n) == 0;
}

int replay_check(struct replay *r, uint64_t time_signed, uint64_t window, const uint8_t *mac,
                 size_t mac_len, uint64_t now)
{
	forget_expired(r, now);
	if (time_signed < r->floor)
		return -ESTALE;
	for (size_t i = 0; i < r->n; i++)
		if (same_mac(&r->v[i], mac, mac_len))
			return -EALREADY;
	if (r->n == REPLAY_MAX) {
		/* Forget the earliest signed, and refuse from now on what is no later. */
		size_t oldest = 0;
		for (size_t i = 1; i < r->n; i++)
			if (r->v[i].time_signed < r->v[oldest].time_signed)
				oldest = i;
		if (r->v[oldest].time_signed + 1 > r->floor)
			r->floor = r->v[oldest].time_signed + 1;
		r->v[oldest] = r->v[--r->n];
		if (time_signed < r->floor)
			return -ESTALE;
	}
	struct seen *s = &r->v[r->n++];
	s->time_signed = time_signed;
	s->until = time_signed + window;
	s->mac_len = (uint8_t)(mac_len < REPLAY_MAC_KEPT ? mac_len : REPLAY_MAC_KEPT);
	memcpy(s->mac, mac, s->mac_len);
	return 0;
}

void replay_copy(struct replay *dst, const struct replay *src)
{
	memcpy(dst, src, sizeof(*dst));
}
