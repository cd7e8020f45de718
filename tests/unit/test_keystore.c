/* SPDX-License-Identifier: MIT */
/*
 * dnssec/keystore: the key state file read back as written, for a zone
 * name of any length (its "zone" line was read into a 32-byte buffer with
 * "%255s": a stack overflow for a name over 31 characters, which the
 * sanitizer build caught in test_rollover's `geoacme ds`).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dnssec/keystore.h"
#include "tests/unit/check.h"

int main(void)
{
	char dir[] = "/tmp/geoacme-keystore-XXXXXX";
	if (!mkdtemp(dir))
		return 2;
	/* 3 labels of 60: a 191-character name, far past 31 (and its file name
	 * "<zone>.keys.tmp" still within NAME_MAX). */
	char zone[300];
	memset(zone, 0, sizeof(zone));
	for (int i = 0; i < 3; i++) {
		memset(zone + strlen(zone), 'l', 60);
		strcat(zone, ".");
	}
	strcat(zone, "example.");
	struct keystore ks;
	char err[256] = "";
	is_int(keystore_load(&ks, dir, zone, err), 0, "no file yet: an empty store (%s)", err);
	is_int((int)ks.n, 0, "no keys");
	ks.ds_ttl = 3600;
	ks.n = 1;
	memset(&ks.keys[0], 0, sizeof(ks.keys[0]));
	ks.keys[0].tag = 4242;
	ks.keys[0].generated = true;
	ks.keys[0].state = KS_ACTIVE;
	ks.keys[0].t[0] = 1796186809;
	snprintf(ks.keys[0].file, sizeof(ks.keys[0].file), "%s/%s.4242.pem", dir, zone);
	is_int(keystore_save(&ks, err), 0, "saved (%s)", err);
	struct keystore back;
	is_int(keystore_load(&back, dir, zone, err), 0, "read back (%s)", err);
	is_int((int)back.n, 1, "one key");
	is_int(back.keys[0].tag, 4242, "its tag");
	is_int(back.keys[0].state, KS_ACTIVE, "its state");
	ok(back.keys[0].t[0] == 1796186809, "its first time");
	is_str(back.keys[0].file, ks.keys[0].file, "its file");
	is_int((int)back.ds_ttl, 3600, "the DS TTL");
	char path[600];
	snprintf(path, sizeof(path), "%s/%s.keys", dir, zone);
	unlink(path);
	rmdir(dir);
	return done_testing();
}
