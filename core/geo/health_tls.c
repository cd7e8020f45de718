/* SPDX-License-Identifier: MIT */
/*
 * OpenSSL behind the small interface of health_tls.h.  SSL_connect,
 * SSL_write and SSL_read are called on a non-blocking socket; their
 * SSL_ERROR_WANT_READ / SSL_ERROR_WANT_WRITE become the readiness the
 * caller waits for (a TLS read may need to write and the other way round,
 * so the caller always re-arms for what was asked, not what it is doing).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/geo/health_tls.h"

struct health_tls_ctx {
	SSL_CTX *ctx;
	bool verify;
};

struct health_tls {
	SSL *ssl;
	bool verify;
};

static void openssl_reason(const char *what, char *reason, size_t cap)
{
	unsigned long e = ERR_get_error();
	char buf[200];

	if (e) {
		ERR_error_string_n(e, buf, sizeof(buf));
		/* "what: OpenSSL's text", cut short at cap: the start says enough. */
		size_t n = (size_t)snprintf(reason, cap, "%s: ", what);
		if (n < cap)
			snprintf(reason + n, cap - n, "%.*s", (int)(cap - n - 1), buf);
	} else {
		snprintf(reason, cap, "%s failed", what);
	}
	ERR_clear_error();
}

struct health_tls_ctx *health_tls_ctx_new(bool verify, const char *ca_file, char err[256])
{
	struct health_tls_ctx *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, 256, "out of memory");
		return NULL;
	}
	c->verify = verify;
	c->ctx = SSL_CTX_new(TLS_client_method());
	if (!c->ctx) {
		openssl_reason("TLS context", err, 256);
		goto fail;
	}
	SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
	if (verify) {
		int ok = ca_file ? SSL_CTX_load_verify_locations(c->ctx, ca_file, NULL)
		                 : SSL_CTX_set_default_verify_paths(c->ctx);
		if (ok != 1) {
			char what[200];
			snprintf(what, sizeof(what), "cannot load CA certificates from %.150s",
			         ca_file ? ca_file : "the system store");
			openssl_reason(what, err, 256);
			goto fail;
		}
		SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
	} else {
		SSL_CTX_set_verify(c->ctx, SSL_VERIFY_NONE, NULL);
	}
	return c;
fail:
	health_tls_ctx_free(c);
	return NULL;
}

void health_tls_ctx_free(struct health_tls_ctx *c)
{
	if (!c)
		return;
	SSL_CTX_free(c->ctx);
	free(c);
}

static bool is_ip_literal(const char *host)
{
	unsigned char buf[16];
	return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

struct health_tls *health_tls_new(struct health_tls_ctx *c, int fd, const char *host,
                                  char err[256])
{
	struct health_tls *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, 256, "out of memory");
		return NULL;
	}
	t->verify = c->verify;
	t->ssl = SSL_new(c->ctx);
	if (!t->ssl || SSL_set_fd(t->ssl, fd) != 1) {
		openssl_reason("TLS session", err, 256);
		goto fail;
	}
	bool literal = is_ip_literal(host);
	if (!literal && SSL_set_tlsext_host_name(t->ssl, host) != 1) {
		openssl_reason("TLS server name", err, 256);
		goto fail;
	}
	if (c->verify) {
		X509_VERIFY_PARAM *p = SSL_get0_param(t->ssl);
		int ok = literal ? X509_VERIFY_PARAM_set1_ip_asc(p, host)
		                 : X509_VERIFY_PARAM_set1_host(p, host, 0);
		if (ok != 1) {
			openssl_reason("TLS host name check", err, 256);
			goto fail;
		}
		X509_VERIFY_PARAM_set_hostflags(p, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	}
	SSL_set_connect_state(t->ssl);
	return t;
fail:
	health_tls_free(t);
	return NULL;
}

void health_tls_free(struct health_tls *t)
{
	if (!t)
		return;
	SSL_free(t->ssl);
	free(t);
}

/* Maps an SSL_* result to the interface's return values. */
static int outcome(struct health_tls *t, int r, const char *what, char *reason, size_t cap)
{
	int e = SSL_get_error(t->ssl, r);
	switch (e) {
	case SSL_ERROR_WANT_READ:
		return HEALTH_TLS_WANT_READ;
	case SSL_ERROR_WANT_WRITE:
		return HEALTH_TLS_WANT_WRITE;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	default:
		break;
	}
	long v = SSL_get_verify_result(t->ssl);
	if (t->verify && v != X509_V_OK) {
		snprintf(reason, cap, "TLS certificate: %s", X509_verify_cert_error_string(v));
		ERR_clear_error();
		return -EPROTO;
	}
	if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
		int en = errno;
		snprintf(reason, cap, "%s: %s", what,
		         r == 0 || en == 0 ? "connection closed" : strerror(en));
		return -EPROTO;
	}
	openssl_reason(what, reason, cap);
	return -EPROTO;
}

int health_tls_handshake(struct health_tls *t, char *reason, size_t cap)
{
	ERR_clear_error();
	int r = SSL_connect(t->ssl);
	if (r == 1)
		return 0;
	int o = outcome(t, r, "TLS handshake", reason, cap);
	return o == 0 ? -EPROTO : o;
}

ssize_t health_tls_write(struct health_tls *t, const void *buf, size_t len, char *reason,
                         size_t cap)
{
	size_t n = 0;
	ERR_clear_error();
	int r = SSL_write_ex(t->ssl, buf, len, &n);
	if (r == 1)
		return (ssize_t)n;
	int o = outcome(t, r, "TLS write", reason, cap);
	if (o == 0) {
		snprintf(reason, cap, "TLS write: connection closed");
		return -EPIPE;
	}
	return o;
}

ssize_t health_tls_read(struct health_tls *t, void *buf, size_t len, char *reason, size_t cap)
{
	size_t n = 0;
	ERR_clear_error();
	int r = SSL_read_ex(t->ssl, buf, len, &n);
	if (r == 1)
		return (ssize_t)n;
	return outcome(t, r, "TLS read", reason, cap);
}
