/* SPDX-License-Identifier: MIT */
/*
 * TSIG (RFC 8945) with OpenSSL's EVP_MAC HMAC; see tsig.h for what is
 * signed and in which order things are checked.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "core/tsig/tsig.h"
#include "core/wire/msg.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"

void tsig_rr_init(struct tsig_rr *f, const struct tsig_key *k, uint64_t now, uint16_t id)
{
	memset(f, 0, sizeof(*f));
	memcpy(f->key_name, k->name, dname_len(k->name));
	const uint8_t *alg = tsig_alg_name(k->alg);
	memcpy(f->alg_name, alg, dname_len(alg));
	f->time_signed = now;
	f->fudge = TSIG_FUDGE_DEFAULT;
	f->orig_id = id;
}

int tsig_key_init(struct tsig_key *k, const char *name, enum tsig_alg alg,
                  const uint8_t *secret, size_t secret_len, uint16_t fudge, char err[256])
{
	memset(k, 0, sizeof(*k));
	if (dname_from_str(name, k->name) < 0) {
		snprintf(err, 256, "TSIG key '%s': not a valid key name", name);
		return -EINVAL;
	}
	dname_lower(k->name);
	if (!tsig_alg_digest(alg)) {
		snprintf(err, 256, "TSIG key '%s': unsupported algorithm", name);
		return -EINVAL;
	}
	if (secret_len == 0 || secret_len > sizeof(k->secret)) {
		if (secret_len)
			snprintf(err, 256, "TSIG key '%s': the secret is longer than %d bytes", name,
			         TSIG_SECRET_MAX);
		else
			snprintf(err, 256, "TSIG key '%s': the secret is empty", name);
		return -EINVAL;
	}
	k->alg = alg;
	memcpy(k->secret, secret, secret_len);
	k->secret_len = secret_len;
	k->fudge = fudge ? fudge : TSIG_FUDGE_DEFAULT;
	return 0;
}

/* --- HMAC --- */

struct hmac {
	EVP_MAC_CTX *ctx;
};

static EVP_MAC *hmac_impl(void)
{
	/* Fetched once for the process: the lookup is not free. */
	static EVP_MAC *mac;
	if (!mac)
		mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	return mac;
}

static int hmac_begin(struct hmac *h, const struct tsig_key *k)
{
	const char *digest = tsig_alg_digest(k->alg);
	EVP_MAC *mac = hmac_impl();
	h->ctx = NULL;
	if (!digest || !mac)
		return -EIO;
	h->ctx = EVP_MAC_CTX_new(mac);
	if (!h->ctx)
		return -EIO;
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0),
		OSSL_PARAM_construct_end(),
	};
	if (!EVP_MAC_init(h->ctx, k->secret, k->secret_len, params)) {
		EVP_MAC_CTX_free(h->ctx);
		h->ctx = NULL;
		return -EIO;
	}
	return 0;
}

static void hmac_update(struct hmac *h, const void *p, size_t n)
{
	if (h->ctx && n && !EVP_MAC_update(h->ctx, p, n)) {
		EVP_MAC_CTX_free(h->ctx);
		h->ctx = NULL;
	}
}

/* Returns the MAC length, or -EIO if any step failed. */
static int hmac_end(struct hmac *h, uint8_t out[TSIG_MAC_MAX])
{
	size_t n = 0;
	int ok = h->ctx && EVP_MAC_final(h->ctx, out, &n, TSIG_MAC_MAX);
	EVP_MAC_CTX_free(h->ctx);
	h->ctx = NULL;
	return ok ? (int)n : -EIO;
}

/* The TSIG variables of section 4.3.3, in canonical form. */
static void hmac_variables(struct hmac *h, const struct tsig_rr *f)
{
	uint8_t v[2 * DNAME_MAX + 18];
	size_t n = 0, l;
	l = dname_len(f->key_name);
	memcpy(v + n, f->key_name, l);
	n += l;
	wire_set_u16(v + n, CLASS_ANY);
	wire_set_u32(v + n + 2, 0);
	n += 6;
	l = dname_len(f->alg_name);
	memcpy(v + n, f->alg_name, l);
	n += l;
	wire_set_u16(v + n, (uint16_t)(f->time_signed >> 32));
	wire_set_u32(v + n + 2, (uint32_t)f->time_signed);
	wire_set_u16(v + n + 6, f->fudge);
	wire_set_u16(v + n + 8, f->error);
	wire_set_u16(v + n + 10, f->other_len);
	n += 12;
	hmac_update(h, v, n);
	if (f->other_len)
		hmac_update(h, f->other, f->other_len);
}

/* --- reading --- */

/* The TSIG rdata (RFC 8945 4.2), read up to the rdata's end and no further. */
static int parse_tsig(const uint8_t *msg, const struct msg_rr *rr, struct tsig_rr *t)
{
	if (rr->rclass != CLASS_ANY)
		return -EBADMSG;
	struct wire w;
	wire_init_read(&w, msg, rr->rdata_off + rr->rdlen);
	wire_seek(&w, rr->rdata_off);
	t->offset = rr->offset;
	memcpy(t->key_name, rr->name, rr->name_len);
	dname_read(&w, t->alg_name);
	uint64_t hi = wire_read_u16(&w);
	t->time_signed = hi << 32 | wire_read_u32(&w);
	t->fudge = wire_read_u16(&w);
	t->mac_len = wire_read_u16(&w);
	t->mac = wire_here(&w);
	wire_skip(&w, t->mac_len);
	t->orig_id = wire_read_u16(&w);
	t->error = wire_read_u16(&w);
	t->other_len = wire_read_u16(&w);
	t->other = wire_here(&w);
	wire_skip(&w, t->other_len);
	if (w.err || wire_left(&w) != 0)
		return -EBADMSG;
	dname_lower(t->alg_name);
	return 0;
}

int tsig_find(const uint8_t *msg, size_t len, struct tsig_rr *t)
{
	struct wire w;
	wire_init_read(&w, msg, len);
	wire_skip(&w, 4);                           /* ID, flags */
	unsigned qd = wire_read_u16(&w);
	unsigned an = wire_read_u16(&w);
	unsigned ns = wire_read_u16(&w);
	unsigned ar = wire_read_u16(&w);
	unsigned total = an + ns + ar;
	for (unsigned i = 0; i < qd && !w.err; i++) {
		uint8_t name[DNAME_MAX];
		uint16_t type, rclass;
		msg_read_question(&w, name, &type, &rclass);
	}
	if (w.err)
		return -EBADMSG;
	int found = 0;
	for (unsigned i = 0; i < total; i++) {
		struct msg_rr rr;
		if (msg_read_rr(&w, &rr) < 0)
			return -EBADMSG;
		if (rr.type != RR_TSIG)
			continue;
		/* Only the last record, and only in the additional section. */
		if (i + 1 != total || ar == 0)
			return -EBADMSG;
		if (parse_tsig(msg, &rr, t) < 0)
			return -EBADMSG;
		found = 1;
	}
	if (wire_left(&w) != 0)
		return -EBADMSG;   /* trailing bytes nobody signed */
	return found;
}

/* --- verifying and signing --- */

static size_t mac_floor(enum tsig_alg alg)
{
	size_t half = tsig_alg_mac_size(alg) / 2;
	return half > 10 ? half : 10;
}

/* Refuses with a TSIG error for the response. */
/* The record names this key, with its algorithm. */
static bool key_matches(const struct tsig_rr *t, const struct tsig_key *key)
{
	return key && tsig_alg_from_name(t->alg_name) == key->alg &&
	       dname_len(t->key_name) == dname_len(key->name) &&
	       memcmp(t->key_name, key->name, dname_len(key->name)) == 0;
}

/* The header as it was signed: the original ID, ARCOUNT without the TSIG. */
static void signed_header(const uint8_t *msg, const struct tsig_rr *t, uint8_t hdr[MSG_HEADER_LEN])
{
	memcpy(hdr, msg, MSG_HEADER_LEN);
	wire_set_u16(hdr, t->orig_id);
	wire_set_u16(hdr + 10, (uint16_t)(wire_get_u16(hdr + 10) - 1));
}

/* Time signed within the smaller of the two fudges of our clock (RFC 8945 5.2.3). */
static bool time_ok(const struct tsig_rr *t, const struct tsig_key *key, uint64_t now)
{
	uint64_t window = t->fudge < key->fudge ? t->fudge : key->fudge;
	return now <= t->time_signed + window && t->time_signed <= now + window;
}

static int refuse(uint16_t *tsig_error, uint16_t error)
{
	*tsig_error = error;
	return -EACCES;
}

/*
 * The rest of a check once whatever precedes the message is in h: the
 * header as signed, the message up to the TSIG, the TSIG variables (or
 * only its timers, for the later messages of a transfer, RFC 8945 5.3.1),
 * then the MAC compared in constant time (a timing difference must not
 * reveal a MAC prefix) and the time checked.
 */
static void hmac_timers(struct hmac *h, const struct tsig_rr *f);

static int finish_check(struct hmac *h, const uint8_t *msg, const uint8_t hdr[MSG_HEADER_LEN],
                        const struct tsig_rr *t, const struct tsig_key *key, bool timers_only,
                        size_t full, uint64_t now, uint16_t *tsig_error)
{
	uint8_t mac[TSIG_MAC_MAX];
	hmac_update(h, hdr, MSG_HEADER_LEN);
	hmac_update(h, msg + MSG_HEADER_LEN, t->offset - MSG_HEADER_LEN);
	if (timers_only)
		hmac_timers(h, t);
	else
		hmac_variables(h, t);
	int n = hmac_end(h, mac);
	if (n != (int)full || CRYPTO_memcmp(mac, t->mac, t->mac_len) != 0)
		return refuse(tsig_error, TSIG_BADSIG);
	if (!time_ok(t, key, now))
		return refuse(tsig_error, TSIG_BADTIME);
	return 0;
}

int tsig_verify(const uint8_t *msg, const struct tsig_rr *t, const struct tsig_key *key,
                uint64_t now, uint16_t *tsig_error)
{
	*tsig_error = TSIG_NOERROR;
	if (!key_matches(t, key))
		return refuse(tsig_error, TSIG_BADKEY);
	size_t full = tsig_alg_mac_size(key->alg);
	size_t floor = mac_floor(key->alg);
	if (t->mac_len > full || t->mac_len < floor)
		return -EBADMSG;

	/* The request as signed: no TSIG, ARCOUNT one lower, the original ID. */
	uint8_t hdr[MSG_HEADER_LEN];
	signed_header(msg, t, hdr);
	struct hmac h;
	if (hmac_begin(&h, key) < 0)
		return refuse(tsig_error, TSIG_BADSIG);
	int rc = finish_check(&h, msg, hdr, t, key, false, full, now, tsig_error);
	if (rc < 0)
		return rc;
	size_t policy = key->min_mac_len > floor ? key->min_mac_len : floor;
	if (t->mac_len < policy)
		return refuse(tsig_error, TSIG_BADTRUNC);
	return 0;
}

size_t tsig_space(const struct tsig_key *key)
{
	/* owner + type/class/ttl/rdlen + algorithm + time/fudge/size + MAC +
	 * orig id/error/other len + 6 bytes of other data (BADTIME). */
	return dname_len(key->name) + 10 + dname_len(tsig_alg_name(key->alg)) + 10 +
	       tsig_alg_mac_size(key->alg) + 6 + 6;
}

/* RFC 8945 5.3.1: later messages of a stream cover only the timers. */
static void hmac_timers(struct hmac *h, const struct tsig_rr *f)
{
	uint8_t v[8];
	wire_set_u16(v, (uint16_t)(f->time_signed >> 32));
	wire_set_u32(v + 2, (uint32_t)f->time_signed);
	wire_set_u16(v + 6, f->fudge);
	hmac_update(h, v, sizeof(v));
}

static int append(uint8_t *buf, size_t *len, size_t cap, const struct tsig_rr *f,
                  const struct tsig_key *key, const uint8_t *req_mac, size_t req_mac_len,
                  uint8_t *mac_out, bool timers_only);

int tsig_append(uint8_t *buf, size_t *len, size_t cap, const struct tsig_rr *f,
                const struct tsig_key *key, const uint8_t *req_mac, size_t req_mac_len,
                uint8_t *mac_out)
{
	return append(buf, len, cap, f, key, req_mac, req_mac_len, mac_out, false);
}

int tsig_append_next(uint8_t *buf, size_t *len, size_t cap, const struct tsig_rr *f,
                     const struct tsig_key *key, const uint8_t *prev_mac, size_t prev_mac_len,
                     uint8_t *mac_out)
{
	if (!key)
		return -EINVAL;
	return append(buf, len, cap, f, key, prev_mac, prev_mac_len, mac_out, true);
}

static int append(uint8_t *buf, size_t *len, size_t cap, const struct tsig_rr *f,
                  const struct tsig_key *key, const uint8_t *req_mac, size_t req_mac_len,
                  uint8_t *mac_out, bool timers_only)
{
	if (*len < MSG_HEADER_LEN)
		return -EINVAL;
	uint8_t mac[TSIG_MAC_MAX];
	int mac_len = 0;
	if (key) {
		struct hmac h;
		if (hmac_begin(&h, key) < 0)
			return -EIO;
		if (req_mac_len) {
			uint8_t l[2];
			wire_set_u16(l, (uint16_t)req_mac_len);
			hmac_update(&h, l, 2);
			hmac_update(&h, req_mac, req_mac_len);
		}
		hmac_update(&h, buf, *len);
		if (timers_only)
			hmac_timers(&h, f);
		else
			hmac_variables(&h, f);
		mac_len = hmac_end(&h, mac);
		if (mac_len < 0)
			return -EIO;
		if (mac_out)
			memcpy(mac_out, mac, (size_t)mac_len);
	}
	size_t key_len = dname_len(f->key_name), alg_len = dname_len(f->alg_name);
	size_t rdlen = alg_len + 16 + (size_t)mac_len + f->other_len;
	if (*len + key_len + 10 + rdlen > cap || rdlen > UINT16_MAX)
		return -ENOSPC;

	struct wire w;
	wire_init(&w, buf, cap);
	wire_seek(&w, *len);
	wire_write_bytes(&w, f->key_name, key_len);
	wire_write_u16(&w, RR_TSIG);
	wire_write_u16(&w, CLASS_ANY);
	wire_write_u32(&w, 0);
	wire_write_u16(&w, (uint16_t)rdlen);
	wire_write_bytes(&w, f->alg_name, alg_len);
	wire_write_u16(&w, (uint16_t)(f->time_signed >> 32));
	wire_write_u32(&w, (uint32_t)f->time_signed);
	wire_write_u16(&w, f->fudge);
	wire_write_u16(&w, (uint16_t)mac_len);
	wire_write_bytes(&w, mac, (size_t)mac_len);
	wire_write_u16(&w, f->orig_id);
	wire_write_u16(&w, f->error);
	wire_write_u16(&w, f->other_len);
	if (f->other_len)
		wire_write_bytes(&w, f->other, f->other_len);
	if (w.err)
		return w.err;
	*len = wire_pos(&w);
	wire_set_u16(buf + 10, (uint16_t)(wire_get_u16(buf + 10) + 1));
	return mac_len;
}

int tsig_verify_response(const uint8_t *msg, const struct tsig_rr *t, const struct tsig_key *key,
                         const uint8_t *prev_mac, size_t prev_len, bool timers_only,
                         uint64_t now, uint16_t *tsig_error)
{
	*tsig_error = TSIG_NOERROR;
	if (!key_matches(t, key))
		return refuse(tsig_error, TSIG_BADKEY);
	if (t->error)
		return refuse(tsig_error, t->error);   /* the server refused our signature */
	size_t full = tsig_alg_mac_size(key->alg);
	if (t->mac_len > full || t->mac_len < mac_floor(key->alg))
		return -EBADMSG;
	uint8_t hdr[MSG_HEADER_LEN];
	signed_header(msg, t, hdr);
	struct hmac h;
	uint8_t l[2];
	if (hmac_begin(&h, key) < 0)
		return refuse(tsig_error, TSIG_BADSIG);
	wire_set_u16(l, (uint16_t)prev_len);
	hmac_update(&h, l, 2);
	hmac_update(&h, prev_mac, prev_len);
	return finish_check(&h, msg, hdr, t, key, timers_only, full, now, tsig_error);
}

int tsig_sign_reply(uint8_t *buf, size_t *len, size_t cap, const struct tsig_rr *req,
                    const struct tsig_key *key, uint16_t error, uint64_t now)
{
	struct tsig_rr f;
	uint8_t other[6];
	if (*len < MSG_HEADER_LEN)
		return -EINVAL;
	memset(&f, 0, sizeof(f));
	memcpy(f.key_name, req->key_name, dname_len(req->key_name));
	memcpy(f.alg_name, req->alg_name, dname_len(req->alg_name));
	f.fudge = req->fudge;
	f.orig_id = wire_get_u16(buf);
	f.error = error;
	/* Unsigned (BADKEY, BADSIG): the client's time back, nothing we vouch for. */
	f.time_signed = key ? now : req->time_signed;
	if (error == TSIG_BADTIME) {
		/* Section 5.2.3: the client's time signed back, ours in Other Data. */
		f.time_signed = req->time_signed;
		wire_set_u16(other, (uint16_t)(now >> 32));
		wire_set_u32(other + 2, (uint32_t)now);
		f.other = other;
		f.other_len = 6;
	}
	return tsig_append(buf, len, cap, &f, key, req->mac, req->mac_len, NULL);
}
