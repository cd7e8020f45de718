/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * TSIG, RFC 8945: HMAC-SHA1/224/256/384/512 over a message, with the
 * request/response chaining of section 5.3.
 *
 * What is signed (section 4.3): for a request, the message as sent
 * without its TSIG record (ARCOUNT one lower, ID back to the Original ID),
 * then the TSIG variables: key name (canonical: uncompressed, lowercase),
 * class ANY, TTL 0, algorithm name (canonical), Time Signed (48 bits),
 * Fudge, Error, Other Len, Other Data.  A response prepends the request's
 * MAC (2-byte length, then the MAC as received, truncated or not).
 *
 * Verification order (section 5.2): key (BADKEY), MAC size (FORMERR when
 * longer than the hash or shorter than max(10, hash/2)), MAC (BADSIG,
 * compared in constant time), time (BADTIME), then the local truncation
 * policy (BADTRUNC).  BADKEY and BADSIG responses are unsigned; BADTIME
 * and BADTRUNC responses are signed and BADTIME carries our clock in
 * Other Data (section 5.2.3).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/conf/tsig_alg.h"
#include "core/wire/dname.h"


/* TSIG error codes (the Error field; the RCODE is then NOTAUTH). */
enum { TSIG_NOERROR = 0, TSIG_BADSIG = 16, TSIG_BADKEY = 17, TSIG_BADTIME = 18,
       TSIG_BADTRUNC = 22 };

struct tsig_key {
	uint8_t name[DNAME_MAX];     /* lowercase wire form */
	enum tsig_alg alg;
	uint8_t secret[TSIG_SECRET_MAX];
	size_t secret_len;
	uint16_t fudge;              /* the most clock skew we accept, seconds */
	/* Local truncation policy: shortest MAC accepted; 0 = the RFC floor. */
	size_t min_mac_len;
};

/* A TSIG record as read from a message (pointers into the message). */
struct tsig_rr {
	size_t offset;               /* where the TSIG record starts: signing stops here */
	uint8_t key_name[DNAME_MAX]; /* lowercase */
	uint8_t alg_name[DNAME_MAX]; /* lowercase */
	uint64_t time_signed;
	uint16_t fudge;
	uint16_t mac_len;
	const uint8_t *mac;
	uint16_t orig_id;
	uint16_t error;
	uint16_t other_len;
	const uint8_t *other;
};

/* The fields of a TSIG record we sign with `k` now, for message `id` (fudge 300). */
void tsig_rr_init(struct tsig_rr *f, const struct tsig_key *k, uint64_t now, uint16_t id);

/* Fills a key from the config; -EINVAL with err on a bad name or empty secret. */
int tsig_key_init(struct tsig_key *k, const char *name, enum tsig_alg alg,
                  const uint8_t *secret, size_t secret_len, uint16_t fudge, char err[256]);

/*
 * Walks the whole message.  Returns 1 and fills t when the last record of
 * the additional section is a well-formed TSIG, 0 when the message has no
 * TSIG, and -EBADMSG when the message is malformed or a TSIG sits anywhere
 * else, appears twice, or cannot be read (all FORMERR).
 */
int tsig_find(const uint8_t *msg, size_t len, struct tsig_rr *t);

/*
 * Verifies a request's TSIG against `key` (NULL when no configured key has
 * its name and algorithm).  Returns 0 when it verifies (*tsig_error
 * TSIG_NOERROR); -EACCES when it does not, with the TSIG error for the
 * response in *tsig_error (TSIG_BADKEY, TSIG_BADSIG, TSIG_BADTIME or
 * TSIG_BADTRUNC; answer NOTAUTH); -EBADMSG for a MAC size the RFC forbids
 * (answer FORMERR; *tsig_error TSIG_NOERROR).  The errno says what
 * happened, the out parameter what goes on the wire.
 */
int tsig_verify(const uint8_t *msg, const struct tsig_rr *t, const struct tsig_key *key,
                uint64_t now, uint16_t *tsig_error);

/*
 * Appends a TSIG record to the message in buf[0 .. *len) and increments
 * its ARCOUNT.  Fields come from `f` (key_name, alg_name, time_signed,
 * fudge, orig_id, error, other_len/other; mac is ignored).  With a key, the
 * MAC covers req_mac (when req_mac_len > 0), the message and the variables,
 * and is also copied to mac_out (TSIG_MAC_MAX bytes) when not NULL; with
 * key NULL the record is unsigned (MAC size 0), as BADKEY/BADSIG answers
 * must be.  Returns the MAC length (0 unsigned), -ENOSPC when it does not
 * fit in cap (buf unchanged), or -EIO when the crypto library fails.
 */
int tsig_append(uint8_t *buf, size_t *len, size_t cap, const struct tsig_rr *f,
                const struct tsig_key *key, const uint8_t *req_mac, size_t req_mac_len,
                uint8_t *mac_out);
/*
 * The TSIG of a later message in a multi-message answer (a zone transfer,
 * RFC 8945 section 5.3.1): the MAC covers the previous message's MAC
 * (2-byte length, then the MAC), this message without its TSIG, and only
 * the timers (Time Signed, Fudge).  Every message is signed.  Same returns
 * as tsig_append(); `key` is required.
 */
int tsig_append_next(uint8_t *buf, size_t *len, size_t cap, const struct tsig_rr *f,
                     const struct tsig_key *key, const uint8_t *prev_mac, size_t prev_mac_len,
                     uint8_t *mac_out);
/*
 * Verifies a response to our signed request (a zone transfer we asked for,
 * section 5.3): the MAC covers prev_mac (the request's for the first
 * message, then the previous message's), the message and the variables, or
 * for later messages of a stream only the timers (5.3.1).  Same contract
 * as tsig_verify: 0 when it verifies; -EACCES with the TSIG error in
 * *tsig_error (TSIG_BADKEY: not our key, TSIG_BADSIG, TSIG_BADTIME, or the
 * error the server put in its TSIG); -EBADMSG for a MAC size the RFC
 * forbids.
 */
int tsig_verify_response(const uint8_t *msg, const struct tsig_rr *t, const struct tsig_key *key,
                         const uint8_t *prev_mac, size_t prev_len, bool timers_only,
                         uint64_t now, uint16_t *tsig_error);
/*
 * Signs a single-message response to the signed request `req` (sections
 * 5.3 and 5.2.3): with `key` for NOERROR, BADTIME and BADTRUNC, unsigned
 * (key NULL) for BADKEY and BADSIG.  Same returns as tsig_append().
 */
int tsig_sign_reply(uint8_t *buf, size_t *len, size_t cap, const struct tsig_rr *req,
                    const struct tsig_key *key, uint16_t error, uint64_t now);
/* Bytes tsig_append() adds at most for this key (to reserve room). */
size_t tsig_space(const struct tsig_key *key);
