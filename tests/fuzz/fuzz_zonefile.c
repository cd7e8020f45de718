/* SPDX-License-Identifier: MIT */
/*
 * Zone files: zone_file_read() (ldns underneath, our checks on top) into a
 * zone_builder, then zone_builder_finish(), half the time through the
 * signer (DNSKEY, NSEC chain, RRSIGs), the other half unsigned.  The apex
 * is example.com; the input is the file's text.
 *
 * Properties checked besides the sanitizers: a failed read or build
 * reports at least one problem; a built zone has its SOA.
 *
 * CERT and IPSECKEY, whose ldns 1.8.3 parsers leak on bad input (the CERT
 * type and algorithm rdf; the IPSECKEY gateway and key copies, 19 bytes),
 * are no longer skipped here: the loader reads them with
 * core/zone/rdata_text.c and never hands their rdata to ldns (issue #27.5).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/conf/diag.h"
#include "core/wire/dname.h"
#include "core/zone/zone.h"
#include "core/zone/zone_file.h"
#include "dnssec/signer.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char zone_path[512];
static uint8_t apex[DNAME_MAX];
static struct signer *signer;

static void teardown(void)
{
	signer_free(signer);
}

static void setup(void)
{
	fuzz_quiet();
	fuzz_make_key("example.com.pem");
	char key[512], err[256];
	signer = signer_new("example.com", fuzz_path("example.com.pem", key, sizeof(key)), NULL,
	                    true, err);
	if (!signer || dname_from_str("example.com", apex) < 0) {
		fprintf(stderr, "fuzz: %s\n", err);
		abort();
	}
	fuzz_path("fuzz.zone", zone_path, sizeof(zone_path));
	atexit(teardown);
}

static int add(void *arg, const uint8_t *owner, uint16_t type, uint32_t ttl,
               const uint8_t *rdata, uint16_t rdlen, int line)
{
	(void)line;
	return zone_builder_add(arg, owner, type, ttl, rdata, rdlen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!signer)
		setup();
	if (size > 1 << 16)
		return 0;
	fuzz_write("fuzz.zone", data, size, 0644);
	struct diag d;
	diag_init(&d);
	struct zone_builder *b = zone_builder_new(apex);
	if (!b)
		abort();
	if (zone_file_read(zone_path, apex, add, b, &d) < 0) {
		if (d.n == 0)
			fuzz_fail("zone_file_read failed without saying why", data, size, NULL, 0);
		zone_builder_free(b);
	} else {
		/* Sign when the input's length is even: deterministic, half and half. */
		const struct zone_signer *hook = size % 2 == 0 ? signer_hook(signer) : NULL;
		struct zone *z = zone_builder_finish(b, hook, zone_path, &d);
		if (!z && d.n == 0)
			fuzz_fail("zone_builder_finish failed without saying why", data, size, NULL, 0);
		if (z && !zone_soa(z))
			fuzz_fail("a zone without its SOA was built", data, size, NULL, 0);
		zone_free(z);
	}
	diag_clear(&d);
	return 0;
}
