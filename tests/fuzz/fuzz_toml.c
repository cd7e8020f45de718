/* SPDX-License-Identifier: MIT */
/*
 * The configuration readers: toml_parse() on the bytes, then config_load()
 * on the same bytes written to a file in a scratch folder (so relative
 * paths, `directory` and TSIG key files resolve there; a few files exist
 * for the fuzzer to find: zone, key, secret).
 *
 * Properties checked besides the sanitizers: a failed parse or load
 * reports at least one problem, and every problem names the file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/conf/config.h"
#include "core/conf/diag.h"
#include "core/conf/toml.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char config_path[512];

static void setup(void)
{
	fuzz_quiet();
	static const char zone[] = "$ORIGIN example.com.\n@ 3600 IN SOA ns hm 1 2 3 4 5\n";
	fuzz_write("example.com.zone", zone, strlen(zone), 0644);
	fuzz_write("tsig.key", "0123456789abcdef", 16, 0600);
	fuzz_write("world.key", "0123456789abcdef", 16, 0644);
	fuzz_write("empty.key", "", 0, 0600);
	fuzz_sh("mkdir -p sub && cp example.com.zone sub/");
	fuzz_path("config.toml", config_path, sizeof(config_path));
}

static void check_diag(const struct diag *d, const char *file, const uint8_t *data, size_t size)
{
	if (d->n == 0)
		fuzz_fail("failed without saying why", data, size, NULL, 0);
	size_t flen = strlen(file);
	for (size_t i = 0; i < d->n; i++) {
		if (strncmp(d->msgs[i], file, flen) != 0 || d->msgs[i][flen] != ':') {
			fprintf(stderr, "fuzz: message without the file name: %s\n", d->msgs[i]);
			fuzz_fail("a problem that does not name the file", data, size, NULL, 0);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!config_path[0])
		setup();
	if (size > 1 << 16)
		return 0;
	struct diag d;
	diag_init(&d);
	struct toml_node *root = toml_parse((const char *)data, size, "fuzz.toml", &d);
	if (!root)
		check_diag(&d, "fuzz.toml", data, size);
	toml_free(root);
	diag_clear(&d);

	fuzz_write("config.toml", data, size, 0644);
	diag_init(&d);
	struct config *c = config_load(config_path, &d);
	if (!c)
		check_diag(&d, config_path, data, size);
	config_free(c);
	diag_clear(&d);
	return 0;
}
