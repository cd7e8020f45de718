/* SPDX-License-Identifier: MIT */
/* DNS cookies: RFC 7873 processing, RFC 9018 server cookie. */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "core/net/cookie.h"
#include "core/wire/query.h"
#include "core/wire/siphash.h"
#include "core/wire/wire.h"

#define COOKIE_LIFETIME 3600      /* RFC 9018 4.3: accept for an hour */
#define COOKIE_FUTURE 300         /* ... and up to five minutes ahead */
#define COOKIE_REFRESH 1800       /* re-issue once half an hour old */

int cookie_secret_random(struct cookie_secret *s)
{
	if (getrandom(s->key, sizeof(s->key), 0) != (ssize_t)sizeof(s->key))
		return -errno;
	return 0;
}

static void make(const struct cookie_secret *s, const struct query *q, uint32_t ts,
                 uint8_t out[COOKIE_SERVER_LEN])
{
	uint8_t buf[8 + 8 + 16];
	memcpy(buf, q->edns.cookie, 8);
	buf[8] = 1;
	buf[9] = buf[10] = buf[11] = 0;
	wire_set_u32(buf + 12, ts);
	uint8_t addr[16];
	size_t alen = query_client_addr(q, addr) == 4 ? 4 : 16;
	memcpy(buf + 16, addr, alen);
	uint64_t h = siphash24(s->key, buf, 16 + alen);
	memcpy(out, buf + 8, 8);
	for (int i = 0; i < 8; i++)
		out[8 + i] = (uint8_t)(h >> (8 * i));
}

bool cookie_process(const struct cookie_secret *s, const struct query *q, uint32_t now,
                    uint8_t out[COOKIE_SERVER_LEN])
{
	bool valid = false;
	if (q->edns.cookie_len == 8 + COOKIE_SERVER_LEN && q->edns.cookie[8] == 1) {
		const uint8_t *server = q->edns.cookie + 8;
		uint32_t ts = wire_get_u32(server + 4);
		int32_t age = (int32_t)(now - ts);   /* serial arithmetic: wraps cleanly */
		if (age <= COOKIE_LIFETIME && age >= -COOKIE_FUTURE) {
			uint8_t expect[COOKIE_SERVER_LEN];
			make(s, q, ts, expect);
			/* Not secret-dependent timing that matters here, but cheap to avoid. */
			uint8_t diff = 0;
			for (int i = 0; i < COOKIE_SERVER_LEN; i++)
				diff |= (uint8_t)(expect[i] ^ server[i]);
			valid = diff == 0;
			if (valid && age < COOKIE_REFRESH && age >= 0) {
				memcpy(out, server, COOKIE_SERVER_LEN);
				return true;
			}
		}
	}
	make(s, q, now, out);
	return valid;
}
