/* SPDX-License-Identifier: MIT */
/*
 * Change lists: entries kept whole as the list grows past the size where
 * its array becomes a mapping grown by mremap and its names and rdata
 * fill many blocks (core/wire/change.c), an entry given new rdata, and a
 * cleared list reusable.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/wire/change.h"
#include "tests/unit/check.h"

#define COUNT 200000   /* 200 000 entries: an 8 MiB array, grown in place */

/* "\004hNNN\007example\0" style names, distinct per i. */
static size_t name_of(uint32_t i, uint8_t *out)
{
	char label[16];
	int n = snprintf(label, sizeof(label), "h%u", i);
	out[0] = (uint8_t)n;
	memcpy(out + 1, label, (size_t)n);
	memcpy(out + 1 + n, "\007example", 8);
	out[1 + n + 8] = 0;
	return (size_t)n + 10;
}

static int fill(struct change_list *cl, uint32_t count)
{
	uint8_t name[64];
	for (uint32_t i = 0; i < count; i++) {
		name_of(i, name);
		uint8_t rdata[4] = { (uint8_t)(i >> 24), (uint8_t)(i >> 16), (uint8_t)(i >> 8),
		                     (uint8_t)i };
		int ret = change_list_add(cl, i % 3 ? CHANGE_ADD : CHANGE_DEL, name, 1, i, rdata, 4, i);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int intact(const struct change_list *cl, uint32_t count)
{
	uint8_t name[64];
	if (cl->n != count)
		return 0;
	for (uint32_t i = 0; i < count; i++) {
		const struct change *c = &cl->v[i];
		size_t len = name_of(i, name);
		if (c->op != (i % 3 ? CHANGE_ADD : CHANGE_DEL) || c->type != 1 || c->ttl != i ||
		    c->created_at != (int64_t)i || c->name_len != len || memcmp(c->name, name, len) ||
		    c->rdlen != 4 || c->rdata[0] != (uint8_t)(i >> 24) || c->rdata[3] != (uint8_t)i)
			return 0;
	}
	return 1;
}

int main(void)
{
	struct change_list cl;
	change_list_init(&cl);
	is_int(fill(&cl, 100), 0, "100 entries added");
	ok(!cl.mapped, "a small list is an ordinary allocation");
	ok(intact(&cl, 100), "every entry as added");
	change_list_clear(&cl);
	is_int(cl.n, 0, "cleared: empty");

	is_int(fill(&cl, COUNT), 0, "%d entries added", COUNT);
	ok(cl.mapped, "a big list is a mapping");
	ok(cl.cap >= COUNT, "room for them all");
	ok(intact(&cl, COUNT), "every entry as added, across the copy into the mapping and "
	   "the mremaps after it");
	change_list_clear(&cl);
	ok(cl.n == 0 && cl.v == NULL && !cl.mapped, "cleared: empty, no mapping");
	is_int(fill(&cl, 5000), 0, "the cleared list takes entries again");
	ok(intact(&cl, 5000), "... kept as added");
	change_list_clear(&cl);

	/* New rdata for one entry: the others stay as they were. */
	is_int(fill(&cl, 3000), 0, "3000 entries");
	uint8_t big[600];
	memset(big, 0xab, sizeof(big));
	is_int(change_list_set_rdata(&cl, 1234, big, sizeof(big)), 0, "entry 1234 gets 600 bytes");
	uint8_t name[64];
	size_t len = name_of(1234, name);
	ok(cl.v[1234].rdlen == sizeof(big) && memcmp(cl.v[1234].rdata, big, sizeof(big)) == 0 &&
	   cl.v[1234].name_len == len && memcmp(cl.v[1234].name, name, len) == 0,
	   "... with its name kept");
	cl.v[1234].rdlen = 4;   /* back to what intact() expects, bar the bytes */
	memcpy(cl.v[1234].rdata, (uint8_t[]){ 0, 0, 4, 210 }, 4);
	ok(intact(&cl, 3000), "every other entry as added");
	change_list_clear(&cl);

	uint8_t empty[1] = { 0 };
	is_int(change_list_add(&cl, CHANGE_ADD, empty, 1, 0, NULL, 0, 0), 0, "the root name is a name");
	change_list_clear(&cl);
	return done_testing();
}
