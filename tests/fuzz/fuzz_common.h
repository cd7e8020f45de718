/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Shared by the fuzz targets (tests/fuzz/fuzz_*.c): a scratch folder that
 * is removed at exit, fixture files written into it, and an independent
 * check that a response is a well-formed DNS message answering the query.
 *
 * Each target defines LLVMFuzzerTestOneInput().  Built with clang and
 * -fsanitize=fuzzer it is a libFuzzer binary (scripts/fuzz.sh); built with
 * tests/fuzz/replay.c instead (the normal gcc build) it replays the seed
 * corpus and the regression inputs once each, as a unit test.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The scratch folder (made on first use, on tmpfs when there is one). */
const char *fuzz_dir(void);
/* Writes "<scratch>/name" into buf and returns buf. */
const char *fuzz_path(const char *name, char *buf, size_t cap);
/* Writes a file in the scratch folder with `mode`; aborts on failure. */
void fuzz_write(const char *name, const void *data, size_t len, unsigned mode);
/* Runs a shell command with the scratch folder as working directory; aborts on failure. */
void fuzz_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The tests/fixtures folder: $FIXTURES, else the source tree's. */
const char *fuzz_fixtures(void);
/* A P-256 key from `openssl genpkey`, mode 0600, in the scratch folder. */
void fuzz_make_key(const char *name);
/* city.mmdb from tests/fixtures/make_mmdb.pl in the scratch folder. */
void fuzz_make_mmdb(void);
struct generation;
/*
 * A generation built from config_path after removing the ACME database
 * `db` (and its -wal, -shm, -journal) from the scratch folder, so its zone
 * file seeds it again: every input then starts from the same zone.  Aborts
 * when it does not build; *serial is the SOA serial of the zone at apex.
 */
struct generation *fuzz_fresh_generation(const char *config_path, const char *db,
                                         const uint8_t *apex, uint32_t *serial);

/* Logs errors only: the fuzzer prints its own progress. */
void fuzz_quiet(void);

/* Prints what is wrong with a response, with both messages in hex, and aborts. */
void fuzz_fail(const char *why, const uint8_t *q, size_t qlen, const uint8_t *r, size_t rlen)
    __attribute__((noreturn));

/*
 * Checks a response: header present, same ID and opcode as the query, QR
 * set, every section walks (names with in-bounds backward pointers, labels
 * up to 63 bytes, names up to 255, records within the message) and ends
 * exactly at rlen, at most one OPT and only in the additional section, a
 * TSIG only as the last record, and rlen <= limit.  Aborts (a finding) on
 * any violation.
 */
void fuzz_check_response(const uint8_t *q, size_t qlen, const uint8_t *r, size_t rlen,
                         size_t limit);

/*
 * Walks a possibly compressed name at *pos of message m: pointers strictly
 * backwards and not into the header, labels up to 63 bytes, 255 in all.
 * On success moves *pos past the name as it sits in the message and, when
 * out is given, writes the name uncompressed (and its length to out_len).
 */
bool fuzz_walk_name(const uint8_t *m, size_t len, size_t *pos, uint8_t out[256], size_t *out_len);

/*
 * The UDP size a well-formed query offers: 512 without EDNS, else the OPT
 * class (at least 512).  Returns 0 when the query does not parse (then the
 * caller does not know what the server would use).
 */
size_t fuzz_offered_udp_size(const uint8_t *q, size_t qlen);

/*
 * Checks what a handler wrote for query q (tx_len bytes in a buffer of
 * tx_cap; nothing written is fine): nothing past the buffer, and
 * fuzz_check_response with a UDP answer's limit (the size the query
 * offers, at most udp_max) or, over TCP, a whole message's.
 */
void fuzz_check_answer(const uint8_t *q, size_t qlen, const uint8_t *tx, size_t tx_len,
                       size_t tx_cap, bool udp, size_t udp_max);
