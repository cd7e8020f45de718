/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the fuzz targets; see fuzz_common.h.  The response
 * check is written apart from core/packet.c on purpose: a second reading
 * of RFC 1035 section 4 that does not share the server's bugs.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/runtime.h"
#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/wire/query.h"
#include "core/zone/zone.h"
#include "core/zone/zone_table.h"
#include "tests/fuzz/fuzz_common.h"

#ifndef FUZZ_FIXTURES_DIR
#define FUZZ_FIXTURES_DIR "tests/fixtures"
#endif

static char scratch[256];

static void remove_scratch(void)
{
	char cmd[300];
	if (!scratch[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz: could not remove %s\n", scratch);
}

const char *fuzz_dir(void)
{
	if (scratch[0])
		return scratch;
	/* tmpfs when there is one: the UPDATE target's SQLite syncs on every commit. */
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	if (getenv("FUZZ_TMPDIR"))
		base = getenv("FUZZ_TMPDIR");
	snprintf(scratch, sizeof(scratch), "%s/geoacme-fuzz-XXXXXX", base);
	if (!mkdtemp(scratch)) {
		fprintf(stderr, "fuzz: cannot make a folder in %s: %s\n", base, strerror(errno));
		abort();
	}
	atexit(remove_scratch);
	return scratch;
}

const char *fuzz_path(const char *name, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s", fuzz_dir(), name);
	return buf;
}

void fuzz_write(const char *name, const void *data, size_t len, unsigned mode)
{
	char path[512];
	fuzz_path(name, path, sizeof(path));
	FILE *f = fopen(path, "wb");
	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0 ||
	    chmod(path, (mode_t)mode) != 0) {
		fprintf(stderr, "fuzz: cannot write %s: %s\n", path, strerror(errno));
		abort();
	}
}

void fuzz_sh(const char *fmt, ...)
{
	char cmd[2048];
	int n = snprintf(cmd, sizeof(cmd), "cd '%s' && ", fuzz_dir());
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
	va_end(ap);
	if (system(cmd) != 0) {
		fprintf(stderr, "fuzz: setup command failed: %s\n", cmd);
		abort();
	}
}

const char *fuzz_fixtures(void)
{
	const char *f = getenv("FIXTURES");
	return f && *f ? f : FUZZ_FIXTURES_DIR;
}

void fuzz_make_key(const char *name)
{
	fuzz_sh("umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 "
	        "-out '%s' 2>/dev/null", name);
}

void fuzz_make_mmdb(void)
{
	fuzz_sh("perl '%s/make_mmdb.pl' --layout city --out . >/dev/null", fuzz_fixtures());
}

void fuzz_quiet(void)
{
	if (!getenv("FUZZ_VERBOSE"))
		log_set_level(LOG_ERROR);
}

static void hex(const char *what, const uint8_t *p, size_t n)
{
	fprintf(stderr, "%s (%zu bytes):", what, n);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%s%02x", i % 32 ? " " : "\n  ", p[i]);
	fprintf(stderr, "\n");
}

void fuzz_fail(const char *why, const uint8_t *q, size_t qlen, const uint8_t *r, size_t rlen)
{
	fprintf(stderr, "fuzz: bad response: %s\n", why);
	hex("query", q, qlen);
	if (r)
		hex("response", r, rlen);
	abort();
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/*
 * Walks the name at *pos; on success moves *pos past it and, when out is
 * given, writes the uncompressed name there (as received, case kept).
 * Pointers must go strictly backwards and not into the header, which also
 * bounds the walk.
 */
bool fuzz_walk_name(const uint8_t *m, size_t len, size_t *pos, uint8_t out[256], size_t *out_len)
{
	size_t p = *pos, end = 0, total = 0;
	bool jumped = false;
	for (;;) {
		if (p >= len)
			return false;
		uint8_t c = m[p];
		if ((c & 0xC0) == 0xC0) {
			if (p + 1 >= len)
				return false;
			size_t target = (size_t)(c & 0x3F) << 8 | m[p + 1];
			if (!jumped)
				end = p + 2;
			jumped = true;
			if (target >= p || target < 12)
				return false;
			p = target;
			continue;
		}
		if (c & 0xC0)
			return false;      /* 0x40 and 0x80 label types are not in use */
		if (p + 1 + c > len || total + 1 + c > 255)
			return false;
		if (out)
			memcpy(out + total, m + p, (size_t)c + 1);
		total += (size_t)c + 1;
		if (c == 0)
			break;
		p += (size_t)c + 1;
	}
	*pos = jumped ? end : p + 1;
	if (out_len)
		*out_len = total;
	return true;
}

struct walked {
	bool ok;
	uint16_t qd, an, ns, ar;
	uint8_t qname[256];
	size_t qname_len;
	uint16_t qtype, qclass;
	bool has_opt;
	uint16_t opt_class;
	const char *why;
};

/* Walks a whole message: every section, and the rules for OPT and TSIG. */
static void walk(const uint8_t *m, size_t len, struct walked *w)
{
	memset(w, 0, sizeof(*w));
	if (len < 12) {
		w->why = "shorter than a header";
		return;
	}
	w->qd = get16(m + 4);
	w->an = get16(m + 6);
	w->ns = get16(m + 8);
	w->ar = get16(m + 10);
	size_t pos = 12;
	for (unsigned i = 0; i < w->qd; i++) {
		uint8_t name[256];
		size_t nlen = 0;
		if (!fuzz_walk_name(m, len, &pos, name, &nlen) || len - pos < 4) {
			w->why = "question does not walk";
			return;
		}
		if (i == 0) {
			memcpy(w->qname, name, nlen);
			w->qname_len = nlen;
			w->qtype = get16(m + pos);
			w->qclass = get16(m + pos + 2);
		}
		pos += 4;
	}
	unsigned total = (unsigned)w->an + w->ns + w->ar;
	for (unsigned i = 0; i < total; i++) {
		size_t owner = pos;
		if (!fuzz_walk_name(m, len, &pos, NULL, NULL) || len - pos < 10) {
			w->why = "record header does not walk";
			return;
		}
		uint16_t type = get16(m + pos), rclass = get16(m + pos + 2);
		uint16_t rdlen = get16(m + pos + 8);
		pos += 10;
		if (len - pos < rdlen) {
			w->why = "rdata runs past the end";
			return;
		}
		bool additional = i >= (unsigned)w->an + w->ns;
		if (type == 41) {
			if (!additional || w->has_opt || m[owner] != 0) {
				w->why = "OPT outside the additional section, twice, or not at the root";
				return;
			}
			w->has_opt = true;
			w->opt_class = rclass;
		}
		if (type == 250 && (!additional || i != total - 1)) {
			w->why = "TSIG that is not the last record";
			return;
		}
		pos += rdlen;
	}
	if (pos != len) {
		w->why = "bytes after the last record";
		return;
	}
	w->ok = true;
}

size_t fuzz_offered_udp_size(const uint8_t *q, size_t qlen)
{
	struct walked w;
	walk(q, qlen, &w);
	if (!w.ok || w.qd != 1)
		return 0;
	if (!w.has_opt || w.opt_class < 512)
		return 512;
	return w.opt_class;
}

void fuzz_check_response(const uint8_t *q, size_t qlen, const uint8_t *r, size_t rlen,
                         size_t limit)
{
	if (rlen > limit)
		fuzz_fail("larger than the size allowed", q, qlen, r, rlen);
	struct walked w;
	walk(r, rlen, &w);
	if (!w.ok)
		fuzz_fail(w.why, q, qlen, r, rlen);
	if (qlen < 12)
		fuzz_fail("answered a message shorter than a header", q, qlen, r, rlen);
	if (get16(q) != get16(r))
		fuzz_fail("ID differs from the query's", q, qlen, r, rlen);
	if (!(r[2] & 0x80))
		fuzz_fail("QR not set", q, qlen, r, rlen);
	if (q[2] & 0x80)
		fuzz_fail("answered a response (QR set in the query)", q, qlen, r, rlen);
	if ((r[2] & 0x78) != (q[2] & 0x78))
		fuzz_fail("opcode differs from the query's", q, qlen, r, rlen);
	if (w.qd > 1)
		fuzz_fail("more than one question", q, qlen, r, rlen);
	/* A question echoed back must be the query's, byte for byte (case kept). */
	struct walked qw;
	walk(q, qlen, &qw);
	if (w.qd == 1 && qw.ok && qw.qd == 1 &&
	    (w.qname_len != qw.qname_len || memcmp(w.qname, qw.qname, w.qname_len) != 0 ||
	     w.qtype != qw.qtype || w.qclass != qw.qclass))
		fuzz_fail("question differs from the query's", q, qlen, r, rlen);
}

void fuzz_check_answer(const uint8_t *q, size_t qlen, const uint8_t *tx, size_t tx_len,
                       size_t tx_cap, bool udp, size_t udp_max)
{
	if (!tx_len)
		return;
	if (tx_len > tx_cap)
		fuzz_fail("wrote past the buffer", q, qlen, NULL, 0);
	size_t limit = QUERY_MSG_MAX;
	if (udp) {
		size_t offered = fuzz_offered_udp_size(q, qlen);
		limit = offered && offered < udp_max ? offered : udp_max;
	}
	fuzz_check_response(q, qlen, tx, tx_len, limit);
}

struct generation *fuzz_fresh_generation(const char *config_path, const char *db,
                                         const uint8_t *apex, uint32_t *serial)
{
	char path[512], name[128];
	static const char *const suffix[] = { "", "-wal", "-shm", "-journal" };
	for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		snprintf(name, sizeof(name), "%s%s", db, suffix[i]);
		unlink(fuzz_path(name, path, sizeof(path)));
	}
	struct diag d;
	diag_init(&d);
	struct generation *g = generation_new(config_path, NULL, NULL, false, &d);
	if (!g) {
		diag_print(&d);
		abort();
	}
	diag_clear(&d);
	const struct zone *z = zone_table_get(g->zones, apex);
	if (!z)
		abort();
	*serial = zone_serial(z);
	return g;
}
