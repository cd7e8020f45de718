/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * DNS cookies (RFC 7873) with the interoperable server cookie of RFC 9018:
 * version 1, three reserved bytes, a 32-bit timestamp, and SipHash-2-4 of
 * client cookie | version | reserved | timestamp | client address under a
 * 16-byte secret.  A valid server cookie shows the client can receive at
 * its address, so rate limiting lets it through.
 */
#include <stdbool.h>
#include <stdint.h>

struct query;

#define COOKIE_SERVER_LEN 16

struct cookie_secret {
	uint8_t key[16];
};

/* Fills the secret from the kernel's random source; -errno on failure. */
int cookie_secret_random(struct cookie_secret *s);

/*
 * For a query that carried a COOKIE option: checks the server part (if
 * any) and writes the server cookie to return in out[16] (reusing a valid
 * one younger than half an hour).  Returns true when the query's server
 * cookie was valid.
 */
bool cookie_process(const struct cookie_secret *s, const struct query *q, uint32_t now,
                    uint8_t out[COOKIE_SERVER_LEN]);
