/* SPDX-License-Identifier: MIT */
/*
 * core/tsig/replay: the per-key memory of accepted UPDATE MACs.  (Through the
 * whole UPDATE path: test_update.c test_replay.)
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "core/tsig/replay.h"

/* A MAC per number, different in its first bytes. */
static void mac_of(unsigned i, uint8_t mac[32])
{
	for (int k = 0; k < 32; k++)
		mac[k] = (uint8_t)(k * 37 + 11);
	mac[0] = (uint8_t)(i >> 8);
	mac[1] = (uint8_t)i;
}

int main(void)
{
	uint8_t a[32], b[32];
	mac_of(1, a);
	mac_of(2, b);
	struct replay *r = replay_new(1000);
	ok(r != NULL, "made");

	is_int(replay_check(r, 1000, 300, a, 32, 1000), 0, "a new MAC: accepted");
	is_int(replay_check(r, 1000, 300, a, 32, 1001), -EALREADY, "the same MAC: a replay");
	is_int(replay_check(r, 1000, 300, a, 10, 1001), -EALREADY, "cut to 10 bytes: still a replay");
	is_int(replay_check(r, 1000, 300, b, 32, 1001), 0, "another MAC, same second: accepted");
	is_int(replay_check(r, 999, 300, a + 1, 31, 1001), -ESTALE, "signed before the floor");
	/* Past its window the time check refuses a replay: the memory may forget it. */
	is_int(replay_check(r, 1000, 300, a, 32, 1301), 0, "forgotten once outside the fudge");

	/* Full: the earliest signed is forgotten, and nothing signed then or before is accepted. */
	struct replay *f = replay_new(0);
	uint8_t m[32];
	int fails = 0;
	for (unsigned i = 0; i < REPLAY_MAX; i++) {
		mac_of(100 + i, m);
		fails += replay_check(f, 2000 + i / 4, 300, m, 32, 2300) != 0;
	}
	is_int(fails, 0, "%d UPDATEs in the window remembered", REPLAY_MAX);
	mac_of(99, m);
	is_int(replay_check(f, 2100, 300, m, 32, 2300), 0, "one more: the earliest is forgotten");
	mac_of(100, m);
	is_int(replay_check(f, 2000, 300, m, 32, 2300), -ESTALE, "which cannot be replayed");
	mac_of(98, m);
	is_int(replay_check(f, 2000, 300, m, 32, 2300), -ESTALE,
	       "nor anything else signed as early (it cannot be told from a replay)");
	mac_of(104, m);
	is_int(replay_check(f, 2001, 300, m, 32, 2300), -EALREADY, "later ones are still known");

	/* A reload carries the memory over. */
	struct replay *c = replay_new(5000);
	replay_copy(c, r);
	is_int(replay_check(c, 1000, 300, a, 32, 1002), -EALREADY, "copied: known MACs");
	is_int(replay_check(c, 999, 300, m, 32, 1002), -ESTALE, "copied: the floor");

	replay_free(r);
	replay_free(f);
	replay_free(c);
	replay_free(NULL);
	return done_testing();
}
