/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Reads an RFC 1035 master file with ldns and hands each record, in wire
 * form with names lowercased, to a callback.  Used to build static zones
 * and to seed the ACME database.  $ORIGIN defaults to `apex`.
 */
#include <stddef.h>
#include <stdint.h>

struct diag;

/*
 * Returns 0 for a record taken, a negative errno for one refused (said as
 * "record rejected (...)" at its line), or 1 for one refused that the
 * callback has already said why at its line.
 */
typedef int (*zone_file_rr_fn)(void *arg, const uint8_t *owner, uint16_t type, uint32_t ttl,
                               const uint8_t *rdata, uint16_t rdlen, int line);

/*
 * Returns 0, or -EINVAL after adding "file:line:col: ..." problems to d.
 * Records outside the apex are reported as errors.
 */
int zone_file_read(const char *path, const uint8_t *apex, zone_file_rr_fn fn, void *arg,
                   struct diag *d);

/*
 * One record in presentation format, "owner ttl IN TYPE rdata" on one line
 * (ldns's text, blanks single spaces), into out[cap]: its length, or
 * -EINVAL when ldns cannot read the record, -ENOSPC when it does not fit.
 */
int zone_file_rr_text(const uint8_t *owner, uint16_t type, uint32_t ttl, const uint8_t *rdata,
                      uint16_t rdlen, char *out, size_t cap);
