/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Base64 text in a file we read (RFC 4648 section 4): TSIG secrets in the
 * config, ech= in an HTTPS record's parameters.  Decoded by ldns, which
 * core uses for the text it reads; this is the one place that calls it
 * for base64.  Padding may be left out (it often is in copied secrets)
 * but when written it must be right; whitespace is not accepted.
 */
#include <stddef.h>
#include <stdint.h>

/*
 * Decodes the `len` characters at s (no NUL needed) into out.  Returns the
 * length (at least 1), -1 when malformed or empty, -2 when longer than cap.
 */
int base64_decode(const char *s, size_t len, uint8_t *out, size_t cap);
