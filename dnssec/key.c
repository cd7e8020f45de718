/* SPDX-License-Identifier: MIT */
/*
 * P-256 key loading and creation, DNSKEY rdata and key tag.
 */
#include "dnssec/key.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "core/conf/secret_file.h"

struct key {
	EVP_PKEY *pkey;
	uint8_t dnskey[KEY_DNSKEY_LEN];
	uint16_t tag;
};

uint16_t key_tag_of(const uint8_t *dnskey, size_t len)
{
	/* RFC 4034 Appendix B: a ones'-complement-like sum of the rdata read as
	 * 16-bit words, with the carry folded in once at the end. */
	uint32_t ac = 0;
	for (size_t i = 0; i < len; i++)
		ac += (i & 1) ? dnskey[i] : (uint32_t)dnskey[i] << 8;
	ac += (ac >> 16) & 0xffff;
	return (uint16_t)(ac & 0xffff);
}

/* Called by OpenSSL only when the PEM block is encrypted: we never prompt
 * (the server runs unattended), we note it to give a precise error. */
static int no_password(char *buf, int size, int rwflag, void *u)
{
	(void)buf; (void)size; (void)rwflag;
	*(bool *)u = true;
	return -1;
}

static void openssl_reason(char *out, size_t cap)
{
	unsigned long e = ERR_peek_last_error();
	if (e)
		ERR_error_string_n(e, out, cap);
	else
		snprintf(out, cap, "no PEM private key found");
	ERR_clear_error();
}

/* Names the curve (or key type) of a key we cannot use. */
static bool is_p256(EVP_PKEY *pkey, const char *path, char err[256])
{
	const char *hint = "create one with: geoacme keygen --key FILE";
	if (!EVP_PKEY_is_a(pkey, "EC")) {
		const char *type = EVP_PKEY_get0_type_name(pkey);
		snprintf(err, 256,
		         "%s: %s key; geoacme signs with ECDSA P-256 (DNSSEC algorithm 13) only; %s",
		         path, type ? type : "unknown", hint);
		return false;
	}
	char group[64] = "";
	size_t glen = 0;
	if (!EVP_PKEY_get_group_name(pkey, group, sizeof(group), &glen))
		group[0] = '\0';
	if (strcmp(group, "prime256v1") != 0 && strcmp(group, "P-256") != 0 &&
	    strcmp(group, "secp256r1") != 0) {
		snprintf(err, 256,
		         "%s: EC key on curve %s; geoacme signs with ECDSA P-256 (DNSSEC algorithm 13) only; %s",
		         path, group[0] ? group : "(explicit parameters)", hint);
		return false;
	}
	return true;
}

/* X and Y, each left-padded to 32 bytes (they are < p, so never longer). */
static bool public_xy(EVP_PKEY *pkey, uint8_t out[KEY_PUBLIC_LEN])
{
	BIGNUM *x = NULL, *y = NULL;
	bool good = EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_EC_PUB_X, &x) &&
	            EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_EC_PUB_Y, &y) &&
	            BN_bn2binpad(x, out, 32) == 32 && BN_bn2binpad(y, out + 32, 32) == 32;
	BN_free(x);
	BN_free(y);
	return good;
}

struct key *key_load(const char *path, char err[256])
{
	struct key *k = NULL;
	FILE *fp = NULL;
	EVP_PKEY *pkey = NULL;

	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, 256, "%s: %s", path, strerror(errno));
		goto fail;
	}
	/* fstat on the open descriptor: the mode we check is the file we read. */
	struct stat st;
	if (fstat(fd, &st) < 0) {
		snprintf(err, 256, "%s: %s", path, strerror(errno));
		close(fd);
		goto fail;
	}
	/* Readable by others: refused, as TSIG key files are (core/conf/secret_file.h). */
	if (!secret_file_mode_ok(path, &st, err)) {
		close(fd);
		goto fail;
	}
	fp = fdopen(fd, "r");
	if (!fp) {
		snprintf(err, 256, "%s: %s", path, strerror(errno));
		close(fd);
		goto fail;
	}
	bool encrypted = false;
	ERR_clear_error();
	pkey = PEM_read_PrivateKey(fp, NULL, no_password, &encrypted);
	if (!pkey) {
		char why[160];
		openssl_reason(why, sizeof(why));
		if (encrypted)
			snprintf(err, 256, "%s: the key is encrypted; geoacme needs an unencrypted "
			         "key (protect it with file permissions)", path);
		else
			snprintf(err, 256, "%s: not a PEM private key (PKCS#8 \"BEGIN PRIVATE KEY\" "
			         "or SEC1 \"BEGIN EC PRIVATE KEY\"): %s", path, why);
		goto fail;
	}
	if (!is_p256(pkey, path, err))
		goto fail;

	k = calloc(1, sizeof(*k));
	if (!k) {
		snprintf(err, 256, "%s: out of memory", path);
		goto fail;
	}
	k->dnskey[0] = KEY_FLAGS >> 8;
	k->dnskey[1] = KEY_FLAGS & 0xff;
	k->dnskey[2] = KEY_PROTOCOL;
	k->dnskey[3] = KEY_ALGORITHM;
	if (!public_xy(pkey, k->dnskey + 4)) {
		char why[160];
		openssl_reason(why, sizeof(why));
		snprintf(err, 256, "%s: cannot read the public key: %s", path, why);
		goto fail;
	}
	k->tag = key_tag_of(k->dnskey, sizeof(k->dnskey));
	k->pkey = pkey;
	fclose(fp);
	return k;

fail:
	free(k);
	EVP_PKEY_free(pkey);
	if (fp)
		fclose(fp);
	ERR_clear_error();
	return NULL;
}

void key_free(struct key *k)
{
	if (!k)
		return;
	EVP_PKEY_free(k->pkey);
	free(k);
}

int key_generate(const char *path, char err[256])
{
	int rc = -EIO;
	FILE *fp = NULL;
	bool created = false;

	ERR_clear_error();
	EVP_PKEY *pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	if (!pkey) {
		char why[160];
		openssl_reason(why, sizeof(why));
		snprintf(err, 256, "cannot generate a P-256 key: %s", why);
		goto out;
	}
	/* O_EXCL: never replace a key that may already be published as a DS. */
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		if (errno == EEXIST)
			snprintf(err, 256, "%s: already exists; refusing to overwrite a key "
			         "(remove it first if you really mean to replace it)", path);
		else
			snprintf(err, 256, "%s: %s", path, strerror(errno));
		goto out;
	}
	created = true;
	/* The umask can only remove bits, but say 0600 explicitly anyway. */
	if (fchmod(fd, 0600) < 0) {
		rc = -errno;
		snprintf(err, 256, "%s: %s", path, strerror(errno));
		close(fd);
		goto out;
	}
	fp = fdopen(fd, "w");
	if (!fp) {
		rc = -errno;
		snprintf(err, 256, "%s: %s", path, strerror(errno));
		close(fd);
		goto out;
	}
	if (!PEM_write_PKCS8PrivateKey(fp, pkey, NULL, NULL, 0, NULL, NULL)) {
		char why[160];
		openssl_reason(why, sizeof(why));
		snprintf(err, 256, "%s: cannot write the key: %s", path, why);
		goto out;
	}
	/* Durable before we tell the user to publish its DS. */
	if (fflush(fp) != 0 || fsync(fileno(fp)) < 0) {
		rc = -errno;
		snprintf(err, 256, "%s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;

out:
	if (fp && fclose(fp) != 0 && rc == 0) {
		rc = -errno;
		snprintf(err, 256, "%s: %s", path, strerror(errno));
	}
	if (rc != 0 && created)
		unlink(path);
	EVP_PKEY_free(pkey);
	ERR_clear_error();
	return rc;
}

const uint8_t *key_dnskey(const struct key *k) { return k->dnskey; }
uint16_t key_tag(const struct key *k) { return k->tag; }
struct evp_pkey_st *key_pkey(const struct key *k) { return k->pkey; }
