/* SPDX-License-Identifier: MIT */
/* The TSIG algorithm table (see tsig_alg.h). */
#include <string.h>
#include <strings.h>

#include "core/conf/tsig_alg.h"
#include "core/wire/dname.h"

static const struct {
	enum tsig_alg alg;
	const char *str;
	const uint8_t *wire;
	const char *digest;
	size_t size;
} algs[] = {
	{ TSIG_HMAC_SHA1, "hmac-sha1", (const uint8_t *)"\x09hmac-sha1", "SHA1", 20 },
	{ TSIG_HMAC_SHA224, "hmac-sha224", (const uint8_t *)"\x0bhmac-sha224", "SHA224", 28 },
	{ TSIG_HMAC_SHA256, "hmac-sha256", (const uint8_t *)"\x0bhmac-sha256", "SHA256", 32 },
	{ TSIG_HMAC_SHA384, "hmac-sha384", (const uint8_t *)"\x0bhmac-sha384", "SHA384", 48 },
	{ TSIG_HMAC_SHA512, "hmac-sha512", (const uint8_t *)"\x0bhmac-sha512", "SHA512", 64 },
};
#define N_ALGS (sizeof(algs) / sizeof(algs[0]))

static int alg_index(enum tsig_alg alg)
{
	for (size_t i = 0; i < N_ALGS; i++)
		if (algs[i].alg == alg)
			return (int)i;
	return -1;
}

enum tsig_alg tsig_alg_from_str(const char *s)
{
	size_t len = strlen(s);
	if (len && s[len - 1] == '.')
		len--;
	for (size_t i = 0; i < N_ALGS; i++)
		if (strlen(algs[i].str) == len && strncasecmp(s, algs[i].str, len) == 0)
			return algs[i].alg;
	return 0;
}

enum tsig_alg tsig_alg_from_name(const uint8_t *name)
{
	for (size_t i = 0; i < N_ALGS; i++)
		if (dname_len(name) == dname_len(algs[i].wire) &&
		    memcmp(name, algs[i].wire, dname_len(name)) == 0)
			return algs[i].alg;
	return 0;
}

const uint8_t *tsig_alg_name(enum tsig_alg alg)
{
	int i = alg_index(alg);
	return i < 0 ? (const uint8_t *)"" : algs[i].wire;
}

const char *tsig_alg_str(enum tsig_alg alg)
{
	int i = alg_index(alg);
	return i < 0 ? "unknown" : algs[i].str;
}

const char *tsig_alg_digest(enum tsig_alg alg)
{
	int i = alg_index(alg);
	return i < 0 ? NULL : algs[i].digest;
}

size_t tsig_alg_mac_size(enum tsig_alg alg)
{
	int i = alg_index(alg);
	return i < 0 ? 0 : algs[i].size;
}

const char *tsig_alg_list(void)
{
	static char list[128];
	if (!list[0]) {
		for (size_t i = 0; i < N_ALGS; i++) {
			if (i)
				strcat(list, i + 1 == N_ALGS ? " or " : ", ");
			strcat(list, algs[i].str);
		}
	}
	return list;
}
