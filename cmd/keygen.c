/* SPDX-License-Identifier: MIT */
/*
 * geoacme keygen: writes a DNSSEC signing key (P-256, PKCS#8 PEM) and/or a
 * TSIG secret (32 random bytes, raw, as Hickory's key_file expects), both
 * mode 0600, never over an existing file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "cmd/cmd.h"
#include "core/conf/tsig_alg.h"
#include "dnssec/key.h"

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: geoacme keygen --key FILE [--tsig FILE]\n"
	        "       geoacme keygen --tsig FILE\n"
	        "\n"
	        "  --key FILE    write a new ECDSA P-256 DNSSEC signing key (PKCS#8 PEM);\n"
	        "                use it as key_path in the zone's [[zones.keys]]\n"
	        "  --tsig FILE   write a new 32-byte TSIG secret (raw bytes, for key_file)\n"
	        "                and print it in base64 for Lego (RFC2136_TSIG_SECRET)\n"
	        "  -h, --help    this help\n"
	        "\n"
	        "Files are created with mode 0600; an existing file is never overwritten.\n");
}

static int write_tsig(const char *path, char *b64, size_t b64_cap)
{
	uint8_t secret[TSIG_SECRET_MAX];
	size_t len = tsig_alg_mac_size(TSIG_ALG_DEFAULT);
	if (RAND_bytes(secret, (int)len) != 1) {
		fprintf(stderr, "geoacme keygen: no randomness available\n");
		return EXIT_RUNTIME;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		if (errno == EEXIST)
			fprintf(stderr, "geoacme keygen: %s: already exists; refusing to overwrite a "
			        "secret (remove it first if you really mean to replace it)\n", path);
		else
			fprintf(stderr, "geoacme keygen: %s: %s\n", path, strerror(errno));
		return EXIT_RUNTIME;
	}
	bool good = fchmod(fd, 0600) == 0 &&
	            write(fd, secret, len) == (ssize_t)len &&
	            fsync(fd) == 0;
	int saved = errno;
	if (close(fd) != 0 && good) {
		good = false;
		saved = errno;
	}
	if (!good) {
		fprintf(stderr, "geoacme keygen: %s: %s\n", path, strerror(saved));
		unlink(path);
		return EXIT_RUNTIME;
	}
	if (b64_cap < 4 * ((len + 2) / 3) + 1)
		return EXIT_RUNTIME;
	EVP_EncodeBlock((unsigned char *)b64, secret, (int)len);
	OPENSSL_cleanse(secret, len);
	return EXIT_OK;
}

int cmd_keygen(int argc, char **argv)
{
	const char *key_path = NULL, *tsig_path = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **dst = NULL;
		const char *value = NULL;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return EXIT_OK;
		}
		if (strncmp(a, "--key=", 6) == 0) {
			dst = &key_path;
			value = a + 6;
		} else if (strncmp(a, "--tsig=", 7) == 0) {
			dst = &tsig_path;
			value = a + 7;
		} else if (strcmp(a, "--key") == 0 || strcmp(a, "--tsig") == 0) {
			dst = a[2] == 'k' ? &key_path : &tsig_path;
			if (i + 1 >= argc) {
				fprintf(stderr, "geoacme keygen: %s needs a FILE\n", a);
				return EXIT_USAGE;
			}
			value = argv[++i];
		} else {
			fprintf(stderr, "geoacme keygen: unexpected argument %s\n", a);
			usage(stderr);
			return EXIT_USAGE;
		}
		if (*dst || !value[0]) {
			fprintf(stderr, "geoacme keygen: %s given twice or empty\n", a);
			return EXIT_USAGE;
		}
		*dst = value;
	}
	if (!key_path && !tsig_path) {
		fprintf(stderr, "geoacme keygen: nothing to do: give --key FILE and/or --tsig FILE\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	if (key_path && tsig_path && strcmp(key_path, tsig_path) == 0) {
		fprintf(stderr, "geoacme keygen: --key and --tsig name the same file\n");
		return EXIT_USAGE;
	}
	/* Fail before writing anything when either file exists (O_EXCL below
	 * still guards against a race). */
	const char *paths[2] = { key_path, tsig_path };
	for (int i = 0; i < 2; i++) {
		if (paths[i] && access(paths[i], F_OK) == 0) {
			fprintf(stderr, "geoacme keygen: %s: already exists; refusing to overwrite it\n",
			        paths[i]);
			return EXIT_RUNTIME;
		}
	}

	if (key_path) {
		char err[256];
		if (key_generate(key_path, err) < 0) {
			fprintf(stderr, "geoacme keygen: %s\n", err);
			return EXIT_RUNTIME;
		}
		struct key *k = key_load(key_path, err);
		if (!k) {
			fprintf(stderr, "geoacme keygen: %s\n", err);
			return EXIT_RUNTIME;
		}
		printf("wrote %s: ECDSA P-256 signing key (DNSSEC algorithm 13, key tag %u), mode 0600\n"
		       "  zone config:  [[zones.keys]] algorithm = \"ECDSAP256SHA256\", key_path = \"%s\"\n"
		       "  then publish: geoacme ds -c CONFIG ZONE\n",
		       key_path, (unsigned)key_tag(k), key_path);
		key_free(k);
	}
	if (tsig_path) {
		char b64[4 * (TSIG_SECRET_MAX / 3 + 1) + 1];
		int rc = write_tsig(tsig_path, b64, sizeof(b64));
		if (rc != EXIT_OK)
			return rc;
		const char *alg = tsig_alg_str(TSIG_ALG_DEFAULT);
		printf("wrote %s: %zu-byte TSIG secret, mode 0600\n"
		       "  zone config:  [[zones.stores.tsig_keys]] name = \"NAME.\", algorithm = \"%s\", "
		       "key_file = \"%s\"\n"
		       "  lego:         RFC2136_TSIG_KEY=NAME. RFC2136_TSIG_ALGORITHM=%s. "
		       "RFC2136_TSIG_SECRET=%s\n",
		       tsig_path, tsig_alg_mac_size(TSIG_ALG_DEFAULT), alg, tsig_path, alg, b64);
	}
	return EXIT_OK;
}
