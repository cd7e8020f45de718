/* SPDX-License-Identifier: MIT */
/*
 * Golden tests: query packets fed in-process to the dispatch entry point
 * (process_handle, the network layer's handler) with no sockets, and each
 * response compared, as text, with the expected text in its case file.
 *
 * The generation is built from tests/golden/config.toml the way `geoacme
 * check` builds one: the fixture zones beside this file (example.com signed
 * with the fixed key example.com.pem, example.net unsigned with transfers
 * allowed), five sites and the fixture .mmdb the build made with
 * tests/fixtures/make_mmdb.pl ($GOLDEN_MMDB).  The cookie secret is fixed.
 *
 * A case file (cases/NAME.case) holds comment lines (#), one query spec
 * (see tests/golden/README.md), a line "== expected", and the response as
 * text.  The text is dig-like and stable from run to run: an RRSIG is
 * printed with its validity times and signature left out and replaced by
 * the outcome of verifying it (ldns) against the zone's DNSKEY, a server
 * cookie by its length and whether it checks out.
 *
 * The test only compares.  GOLDEN_UPDATE=1 rewrites the expected text of
 * every case instead (review the diff before committing it).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <ldns/ldns.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/runtime.h"
#include "core/conf/diag.h"
#include "core/conf/log.h"
#include "core/net/cookie.h"
#include "core/wire/arena.h"
#include "core/wire/query.h"
#include "core/zone/process.h"

#define TX_CAP (QUERY_MSG_MAX + 4096)   /* what net.c gives a query */
#define EXPECTED "== expected\n"

static struct generation *gen;
static ldns_rr_list *keys;     /* example.com's DNSKEY RRset, as served */
static struct query q;
static uint8_t *tx;
static char scratch[64];
static void remove_scratch(void);

/* --- a growing text buffer --- */

struct text {
	char *s;
	size_t len, cap;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (t->len + (size_t)n + 1 > t->cap) {
		t->cap = (t->len + (size_t)n + 1) * 2;
		t->s = realloc(t->s, t->cap);
		if (!t->s)
			abort();
	}
	va_start(ap, fmt);
	vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct text t = { 0 };
	char buf[4096];
	size_t n;
	put(&t, "%s", "");
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		put(&t, "%.*s", (int)n, buf);
	fclose(f);
	return t.s;
}

static void write_file(const char *path, const char *data, unsigned mode)
{
	FILE *f = fopen(path, "wb");
	if (!f || fputs(data, f) < 0 || fclose(f) != 0 || chmod(path, mode) != 0) {
		fprintf(stderr, "golden: cannot write %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

/* --- the query --- */

struct spec {
	bool tcp;
	char source[64];
	uint8_t msg[4096];
	size_t len;
};

static void set_source(struct query *qq, const char *addr)
{
	memset(&qq->client, 0, sizeof(qq->client));
	if (strchr(addr, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&qq->client;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(40000);
		if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
			exit((fprintf(stderr, "golden: bad source %s\n", addr), 1));
		qq->client_len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&qq->client;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(40000);
		if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1)
			exit((fprintf(stderr, "golden: bad source %s\n", addr), 1));
		qq->client_len = sizeof(*s4);
	}
}

static void u16(uint8_t *p, size_t *n, unsigned v)
{
	p[(*n)++] = (uint8_t)(v >> 8);
	p[(*n)++] = (uint8_t)v;
}

static int hex_bytes(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	for (; *s; s++) {
		if (*s == ' ' || *s == '\t' || *s == '\n' || *s == ':')
			continue;
		unsigned v;
		if (n == cap || sscanf(s, "%2x", &v) != 1 || !s[1])
			return -1;
		out[n++] = (uint8_t)v;
		s++;
	}
	return (int)n;
}

/*
 * "udp|tcp SOURCE hex BYTES..." or
 * "udp|tcp SOURCE NAME TYPE [+flag ...]" (flags: README.md).
 */
static int parse_spec(char *line, struct spec *sp, char *why, size_t why_cap)
{
	char *save = NULL;
	char *tok = strtok_r(line, " \t", &save);
	if (!tok || (strcmp(tok, "udp") && strcmp(tok, "tcp")))
		return snprintf(why, why_cap, "expected udp or tcp"), -1;
	sp->tcp = strcmp(tok, "tcp") == 0;
	tok = strtok_r(NULL, " \t", &save);
	if (!tok || strlen(tok) >= sizeof(sp->source))
		return snprintf(why, why_cap, "expected a source address"), -1;
	strcpy(sp->source, tok);
	tok = strtok_r(NULL, " \t", &save);
	if (!tok)
		return snprintf(why, why_cap, "expected hex or a name"), -1;
	if (strcmp(tok, "hex") == 0) {
		int n = hex_bytes(save ? save : "", sp->msg, sizeof(sp->msg));
		if (n < 0)
			return snprintf(why, why_cap, "bad hex"), -1;
		sp->len = (size_t)n;
		return 0;
	}
	ldns_rdf *name = ldns_dname_new_frm_str(tok);
	char *type_s = strtok_r(NULL, " \t", &save);
	ldns_rr_type type = type_s ? ldns_get_rr_type_by_name(type_s) : 0;
	if (!name || !type)
		return ldns_rdf_deep_free(name), snprintf(why, why_cap, "expected NAME TYPE"), -1;
	unsigned id = 0x1234, opcode = 0, qclass = LDNS_RR_CLASS_IN, bufsize = 1232, version = 0;
	int qdcount = -1;
	bool rd = false, edns = false, do_bit = false, opt2 = false;
	uint8_t opts[512];
	size_t olen = 0;
	while ((tok = strtok_r(NULL, " \t", &save))) {
		char *v = strchr(tok, '=');
		if (v)
			*v++ = '\0';
		if (!strcmp(tok, "+rd")) {
			rd = true;
		} else if (!strcmp(tok, "+edns")) {
			edns = true;
		} else if (!strcmp(tok, "+do")) {
			edns = do_bit = true;
		} else if (!strcmp(tok, "+bufsize") && v) {
			edns = true;
			bufsize = (unsigned)strtoul(v, NULL, 0);
		} else if (!strcmp(tok, "+version") && v) {
			edns = true;
			version = (unsigned)strtoul(v, NULL, 0);
		} else if (!strcmp(tok, "+id") && v) {
			id = (unsigned)strtoul(v, NULL, 0);
		} else if (!strcmp(tok, "+opcode") && v) {
			opcode = (unsigned)strtoul(v, NULL, 0);
		} else if (!strcmp(tok, "+class") && v) {
			qclass = ldns_get_rr_class_by_name(v);
			if (!qclass)
				qclass = (unsigned)strtoul(v, NULL, 0);
		} else if (!strcmp(tok, "+qdcount") && v) {
			qdcount = (int)strtol(v, NULL, 0);
		} else if (!strcmp(tok, "+opt2")) {
			edns = opt2 = true;
		} else if (!strcmp(tok, "+nsid")) {
			edns = true;
			u16(opts, &olen, 3);
			u16(opts, &olen, 0);
		} else if (!strcmp(tok, "+ecs") && v) {
			/* ADDR/SOURCE[/SCOPE], written as asked: malformed ones too. */
			char addr[64];
			unsigned src = 0, scope = 0;
			if (sscanf(v, "%63[^/]/%u/%u", addr, &src, &scope) < 2)
				return ldns_rdf_deep_free(name), snprintf(why, why_cap, "bad +ecs"), -1;
			uint8_t a[16] = { 0 };
			bool v6 = strchr(addr, ':') != NULL;
			inet_pton(v6 ? AF_INET6 : AF_INET, addr, a);
			size_t alen = (src + 7) / 8;
			edns = true;
			u16(opts, &olen, 8);
			u16(opts, &olen, (unsigned)(4 + alen));
			u16(opts, &olen, v6 ? 2 : 1);
			opts[olen++] = (uint8_t)src;
			opts[olen++] = (uint8_t)scope;
			memcpy(opts + olen, a, alen);
			olen += alen;
		} else if (!strcmp(tok, "+cookie") && v) {
			/* CLIENT-HEX[:valid|:HEX]: a server cookie made for this client now,
			 * or given bytes. */
			char *server = strchr(v, ':');
			if (server)
				*server++ = '\0';
			uint8_t c[40];
			int n = hex_bytes(v, c, 8);
			if (n < 0)
				return ldns_rdf_deep_free(name), snprintf(why, why_cap, "bad +cookie"), -1;
			if (server && !strcmp(server, "valid") && n == 8) {
				struct query fake;
				memset(&fake, 0, sizeof(fake));
				set_source(&fake, sp->source);
				fake.edns.cookie_present = true;
				fake.edns.cookie_len = 8;
				memcpy(fake.edns.cookie, c, 8);
				cookie_process(&gen->cookie, &fake, (uint32_t)time(NULL), c + 8);
				n += COOKIE_SERVER_LEN;
			} else if (server) {
				int m = hex_bytes(server, c + n, sizeof(c) - (size_t)n);
				if (m < 0)
					return ldns_rdf_deep_free(name), snprintf(why, why_cap, "bad +cookie"), -1;
				n += m;
			}
			edns = true;
			u16(opts, &olen, 10);
			u16(opts, &olen, (unsigned)n);
			memcpy(opts + olen, c, (size_t)n);
			olen += (size_t)n;
		} else if (!strcmp(tok, "+option") && v) {
			/* Raw option bytes (code, length, data) as given. */
			int n = hex_bytes(v, opts + olen, sizeof(opts) - olen);
			if (n < 0)
				return ldns_rdf_deep_free(name), snprintf(why, why_cap, "bad +option"), -1;
			edns = true;
			olen += (size_t)n;
		} else {
			ldns_rdf_deep_free(name);
			return snprintf(why, why_cap, "unknown flag %s", tok), -1;
		}
	}
	size_t n = 0;
	uint8_t *m = sp->msg;
	u16(m, &n, id);
	u16(m, &n, (opcode << 11) | (rd ? 0x0100 : 0));
	u16(m, &n, qdcount >= 0 ? (unsigned)qdcount : 1);
	u16(m, &n, 0);
	u16(m, &n, 0);
	u16(m, &n, edns ? (opt2 ? 2 : 1) : 0);
	/* +qdcount=N writes the question N times (0: none). */
	for (int i = 0; i < (qdcount >= 0 ? qdcount : 1) && n + 300 < sizeof(sp->msg) / 2; i++) {
		memcpy(m + n, ldns_rdf_data(name), ldns_rdf_size(name));
		n += ldns_rdf_size(name);
		u16(m, &n, type);
		u16(m, &n, qclass);
	}
	ldns_rdf_deep_free(name);
	for (int i = 0; edns && i < (opt2 ? 2 : 1); i++) {
		m[n++] = 0;
		u16(m, &n, LDNS_RR_TYPE_OPT);
		u16(m, &n, bufsize);
		u16(m, &n, version);   /* extended RCODE 0, then VERSION */
		u16(m, &n, do_bit ? 0x8000 : 0);
		u16(m, &n, (unsigned)olen);
		memcpy(m + n, opts, olen);
		n += olen;
	}
	sp->len = n;
	return 0;
}

/* --- the response as text --- */

static const char *rcode_name(unsigned rc)
{
	static const char *const names[] = {
		"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN",
		"YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE",
	};
	static char other[16];
	if (rc < sizeof(names) / sizeof(names[0]))
		return names[rc];
	if (rc == 16)
		return "BADVERS";
	if (rc == 23)
		return "BADCOOKIE";
	snprintf(other, sizeof(other), "RCODE%u", rc);
	return other;
}

static unsigned get16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

/* The OPT record at m+pos (owner root already checked); moves pos past it. */
static int render_opt(struct text *t, const uint8_t *m, size_t len, size_t *pos, unsigned *ext,
                      const char *source)
{
	size_t p = *pos + 1;
	if (p + 10 > len)
		return -1;
	unsigned udp = get16(m + p + 2);
	unsigned ttl_hi = get16(m + p + 4), ttl_lo = get16(m + p + 6);
	size_t rdlen = get16(m + p + 8);
	p += 10;
	if (p + rdlen > len)
		return -1;
	*ext = ttl_hi >> 8;
	put(t, ";; OPT: version %u, udp %u, flags%s, ext-rcode %u\n", ttl_hi & 0xFF, udp,
	    (ttl_lo & 0x8000) ? " do" : "", ttl_hi >> 8);
	size_t end = p + rdlen;
	while (p + 4 <= end) {
		unsigned code = get16(m + p), olen = get16(m + p + 2);
		const uint8_t *d = m + p + 4;
		if (p + 4 + olen > end)
			return -1;
		if (code == 3) {
			put(t, ";;   NSID \"%.*s\"\n", (int)olen, (const char *)d);
		} else if (code == 8 && olen >= 4) {
			char a[INET6_ADDRSTRLEN] = "?";
			uint8_t full[16] = { 0 };
			memcpy(full, d + 4, olen - 4 > 16 ? 16 : olen - 4);
			inet_ntop(get16(d) == 2 ? AF_INET6 : AF_INET, full, a, sizeof(a));
			put(t, ";;   ECS family %u, source /%u, scope /%u, %s\n", get16(d), d[2], d[3], a);
		} else if (code == 10 && olen >= 8) {
			put(t, ";;   COOKIE client %02x%02x%02x%02x%02x%02x%02x%02x", d[0], d[1], d[2],
			    d[3], d[4], d[5], d[6], d[7]);
			if (olen > 8) {
				/* Its bytes hold a time: say whether it checks out instead. */
				struct query fake;
				memset(&fake, 0, sizeof(fake));
				set_source(&fake, source);
				fake.edns.cookie_present = true;
				fake.edns.cookie_len = (uint8_t)(olen > 40 ? 40 : olen);
				memcpy(fake.edns.cookie, d, fake.edns.cookie_len);
				uint8_t out[COOKIE_SERVER_LEN];
				bool valid = cookie_process(&gen->cookie, &fake, (uint32_t)time(NULL), out);
				put(t, ", server %u bytes (%s)", olen - 8, valid ? "valid" : "NOT VALID");
			}
			put(t, "\n");
		} else {
			put(t, ";;   option %u, %u bytes\n", code, olen);
		}
		p += 4 + olen;
	}
	if (p != end)
		return -1;
	*pos = end;
	return 0;
}

static void render_rr(struct text *t, ldns_rr *rr, ldns_rr_list *section)
{
	if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_RRSIG || ldns_rr_rd_count(rr) < 9) {
		char *s = ldns_rr2str(rr);
		size_t n = strlen(s);
		put(t, "%.*s\n", (int)(n && s[n - 1] == '\n' ? n - 1 : n), s);
		free(s);
		return;
	}
	/* The covered RRset: same owner and type in the same section. */
	ldns_rr_type covered = ldns_rdf2rr_type(ldns_rr_rrsig_typecovered(rr));
	ldns_rr_list *set = ldns_rr_list_new();
	for (size_t i = 0; i < ldns_rr_list_rr_count(section); i++) {
		ldns_rr *o = ldns_rr_list_rr(section, i);
		if (ldns_rr_get_type(o) == covered &&
		    ldns_dname_compare(ldns_rr_owner(o), ldns_rr_owner(rr)) == 0)
			ldns_rr_list_push_rr(set, ldns_rr_clone(o));
	}
	ldns_rr_list *good = ldns_rr_list_new();
	ldns_status st = ldns_rr_list_rr_count(set)
	        ? ldns_verify_rrsig_keylist(set, rr, keys, good) : LDNS_STATUS_ERR;
	char *owner = ldns_rdf2str(ldns_rr_owner(rr));
	char *type = ldns_rr_type2str(covered);
	char *signer = ldns_rdf2str(ldns_rr_rrsig_signame(rr));
	put(t, "%s\t%u\tIN\tRRSIG\t%s %u %u %u (times) %u %s (signature %s)\n", owner,
	    ldns_rr_ttl(rr), type, ldns_rdf2native_int8(ldns_rr_rrsig_algorithm(rr)),
	    ldns_rdf2native_int8(ldns_rr_rrsig_labels(rr)),
	    ldns_rdf2native_int32(ldns_rr_rrsig_origttl(rr)),
	    ldns_rdf2native_int16(ldns_rr_rrsig_keytag(rr)), signer,
	    !ldns_rr_list_rr_count(set) ? "covers nothing here"
	    : st == LDNS_STATUS_OK ? "verified" : ldns_get_errorstr_by_id(st));
	free(owner);
	free(type);
	free(signer);
	ldns_rr_list_deep_free(set);
	ldns_rr_list_free(good);
}

/* One message.  summary: a transfer's, with only its first and last answer. */
static void render(struct text *t, const uint8_t *m, size_t len, const char *source, bool summary)
{
	if (len < 12) {
		put(t, ";; %zu bytes: shorter than a header\n", len);
		return;
	}
	unsigned flags = get16(m + 2), counts[4];
	for (int i = 0; i < 4; i++)
		counts[i] = get16(m + 4 + 2 * i);
	static const char *const names[] = { "QUESTION", "ANSWER", "AUTHORITY", "ADDITIONAL" };
	struct text body = { 0 }, opt = { 0 };
	put(&body, "%s", "");
	put(&opt, "%s", "");
	size_t pos = 12;
	unsigned ext = 0;
	bool broken = false;
	for (int s = 0; s < 4 && !broken; s++) {
		if (!counts[s])
			continue;
		ldns_rr_list *list = ldns_rr_list_new();
		bool header = false;
		for (unsigned i = 0; i < counts[s]; i++) {
			if (s == 3 && pos + 3 <= len && m[pos] == 0 && get16(m + pos + 1) == LDNS_RR_TYPE_OPT) {
				if (render_opt(&opt, m, len, &pos, &ext, source) < 0) {
					broken = true;
					break;
				}
				continue;
			}
			ldns_rr *rr = NULL;
			if (ldns_wire2rr(&rr, m, len, &pos, s == 0 ? LDNS_SECTION_QUESTION
			                                     : LDNS_SECTION_ANSWER) != LDNS_STATUS_OK) {
				broken = true;
				break;
			}
			ldns_rr_list_push_rr(list, rr);
		}
		size_t n = ldns_rr_list_rr_count(list);
		for (size_t i = 0; i < n; i++) {
			if (!header) {
				put(&body, ";; %s\n", names[s]);
				header = true;
			}
			if (summary && s == 1 && n > 2 && i == 1)
				put(&body, ";; (%zu records)\n", n - 2);
			if (summary && s == 1 && n > 2 && i > 0 && i < n - 1)
				continue;
			render_rr(&body, ldns_rr_list_rr(list, i), list);
		}
		ldns_rr_list_deep_free(list);
	}
	if (!broken && pos != len)
		broken = true;
	put(t, ";; opcode %u, rcode %s, id %u\n", (flags >> 11) & 0xF,
	    rcode_name(ext << 4 | (flags & 0xF)), get16(m));
	put(t, ";; flags:%s%s%s%s%s%s; QUERY %u, ANSWER %u, AUTHORITY %u, ADDITIONAL %u\n",
	    (flags & 0x8000) ? " qr" : "", (flags & 0x0400) ? " aa" : "",
	    (flags & 0x0200) ? " tc" : "", (flags & 0x0100) ? " rd" : "",
	    (flags & 0x0080) ? " ra" : "", (flags & 0x0010) ? " cd" : "", counts[0], counts[1],
	    counts[2], counts[3]);
	/* The OPT last, as dig puts its pseudo-section apart. */
	put(t, "%s%s", body.s, opt.s);
	free(opt.s);
	if (broken)
		put(t, ";; MALFORMED at byte %zu of %zu\n", pos, len);
	free(body.s);
}

/* Feeds one message to process_handle and renders whatever comes out. */
static void run(const struct spec *sp, struct text *out)
{
	query_reset(&q);
	q.rx = sp->msg;
	q.rx_len = sp->len;
	set_source(&q, sp->source);
	q.transport = sp->tcp ? QUERY_TCP : QUERY_UDP;
	q.tx = tx;
	q.tx_cap = TX_CAP;
	q.max_size = sp->tcp ? QUERY_MSG_MAX : 512;
	process_handle(&gen->env, &q);
	if (q.stream.next) {
		struct query_stream st = q.stream;
		q.stream.next = NULL;
		int rc, i = 0;
		do {
			q.tx_len = 0;
			rc = st.next(st.ctx, &q);
			put(out, ";; message %d\n", ++i);
			if (q.tx_len)
				render(out, q.tx, q.tx_len, sp->source, true);
		} while (rc > 0);
		if (rc < 0)
			put(out, ";; stream failed: %s\n", strerror(-rc));
		st.release(st.ctx);
		return;
	}
	if (q.later.take) {
		put(out, ";; reply later (not rendered)\n");
		q.later.take(q.later.ctx, NULL);
		return;
	}
	if (!q.tx_len) {
		put(out, ";; no response (dropped)\n");
		return;
	}
	render(out, q.tx, q.tx_len, sp->source, false);
}

/* --- set-up --- */

static void setup(const char *dir)
{
	const char *mmdb = getenv("GOLDEN_MMDB");
	if (!mmdb) {
		fprintf(stderr, "golden: GOLDEN_MMDB (the fixture .mmdb) is not set\n");
		exit(1);
	}
	if (access(mmdb, R_OK) != 0) {
		/* The build makes it only where the MaxMind writer is installed. */
		fprintf(stderr, "golden: skipped: no %s (install libmaxmind-db-writer-perl)\n", mmdb);
		exit(77);
	}
	strcpy(scratch, "/tmp/golden.XXXXXX");
	if (!mkdtemp(scratch))
		exit((perror("mkdtemp"), 1));
	atexit(remove_scratch);
	char path[PATH_MAX + 64], *text = NULL;
	snprintf(path, sizeof(path), "%s/example.com.pem", dir);
	if (!(text = read_file(path)))
		exit((fprintf(stderr, "golden: cannot read %s\n", path), 1));
	snprintf(path, sizeof(path), "%s/key.pem", scratch);
	write_file(path, text, 0600);
	free(text);
	snprintf(path, sizeof(path), "%s/config.toml", dir);
	if (!(text = read_file(path)))
		exit((fprintf(stderr, "golden: cannot read %s\n", path), 1));
	struct text cfg = { 0 };
	put(&cfg, "%s", "");
	for (const char *p = text; *p;) {
		if (!strncmp(p, "@GOLDEN@", 8)) {
			put(&cfg, "%s", dir);
			p += 8;
		} else if (!strncmp(p, "@MMDB@", 6)) {
			put(&cfg, "%s", mmdb);
			p += 6;
		} else {
			put(&cfg, "%c", *p++);
		}
	}
	free(text);
	snprintf(path, sizeof(path), "%s/config.toml", scratch);
	write_file(path, cfg.s, 0644);
	free(cfg.s);

	log_set_level(LOG_ERROR);
	struct diag d;
	diag_init(&d);
	/* Not check mode: that leaves out the transfer handler.  No loop: no
	 * timers, no health checks, no NOTIFY. */
	gen = generation_new(path, NULL, NULL, false, &d);
	if (!gen) {
		diag_print(&d);
		exit(1);
	}
	diag_clear(&d);
	/* A fixed secret: the same server cookie for the same client and second. */
	memset(gen->cookie.key, 0x5a, sizeof(gen->cookie.key));
	q.arena = arena_new(0);
	tx = malloc(TX_CAP);
	if (!q.arena || !tx)
		abort();

	/* The key RRSIGs are verified with: the DNSKEY RRset as served. */
	char line[] = "tcp 127.0.0.1 example.com DNSKEY";
	struct spec sp;
	char why[128];
	if (parse_spec(line, &sp, why, sizeof(why)) < 0)
		abort();
	struct text ignored = { 0 };
	run(&sp, &ignored);
	free(ignored.s);
	ldns_pkt *pkt = NULL;
	if (!q.tx_len || ldns_wire2pkt(&pkt, q.tx, q.tx_len) != LDNS_STATUS_OK)
		exit((fprintf(stderr, "golden: no DNSKEY answer\n"), 1));
	keys = ldns_pkt_rr_list_by_type(pkt, LDNS_RR_TYPE_DNSKEY, LDNS_SECTION_ANSWER);
	ldns_pkt_free(pkt);
	if (!keys)
		exit((fprintf(stderr, "golden: no DNSKEY in the answer\n"), 1));
}

static void remove_scratch(void)
{
	char path[1024];
	const char *files[] = { "key.pem", "config.toml" };
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", scratch, files[i]);
		unlink(path);
	}
	rmdir(scratch);
}

static void teardown(void)
{
	generation_free(gen);
	ldns_rr_list_deep_free(keys);
	arena_free(q.arena);
	free(tx);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int only_cases(const struct dirent *e)
{
	size_t n = strlen(e->d_name);
	return n > 5 && strcmp(e->d_name + n - 5, ".case") == 0;
}

/* Runs one case; returns 0 when it matched (or was rewritten).  With
 * `queries` it runs nothing and prints a UDP case's query instead, as
 * "NAME SOURCE HEX" (tests/integration/test_xdp.py sends them to the real
 * server over AF_XDP and over sockets). */
static int one_case(const char *path, const char *name, bool update, bool queries)
{
	char *text = read_file(path);
	if (!text)
		return fprintf(stderr, "%s: cannot read\n", name), 1;
	char *exp = strstr(text, EXPECTED);
	size_t head_len = exp ? (size_t)(exp - text) : strlen(text);
	/* The spec: every line before "== expected" that is not a comment. */
	char spec_line[8192] = "";
	size_t sl = 0;
	for (char *p = text; p < text + head_len;) {
		char *nl = memchr(p, '\n', (size_t)(text + head_len - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(text + head_len - p);
		if (n && p[0] != '#' && sl + n + 2 < sizeof(spec_line)) {
			memcpy(spec_line + sl, p, n);
			sl += n;
			spec_line[sl++] = ' ';
			spec_line[sl] = '\0';
		}
		p += n + 1;
	}
	struct spec sp;
	char why[128];
	if (parse_spec(spec_line, &sp, why, sizeof(why)) < 0) {
		fprintf(stderr, "%s: %s\n", name, why);
		free(text);
		return 1;
	}
	if (queries) {
		if (!sp.tcp) {
			printf("%s %s ", name, sp.source);
			for (size_t i = 0; i < sp.len; i++)
				printf("%02x", sp.msg[i]);
			printf("\n");
		}
		free(text);
		return 0;
	}
	struct text got = { 0 };
	put(&got, "%s", "");
	run(&sp, &got);
	int rc = 0;
	if (update) {
		struct text w = { 0 };
		put(&w, "%.*s%s%s", (int)head_len, text, EXPECTED, got.s);
		if (!exp || strcmp(exp + strlen(EXPECTED), got.s) != 0) {
			write_file(path, w.s, 0644);
			printf("rewrote %s\n", name);
		}
		free(w.s);
	} else if (!exp) {
		fprintf(stderr, "not ok - %s: no \"== expected\" line (GOLDEN_UPDATE=1 writes it)\n",
		        name);
		rc = 1;
	} else if (strcmp(exp + strlen(EXPECTED), got.s) != 0) {
		fprintf(stderr, "not ok - %s\n--- expected\n%s--- got\n%s", name,
		        exp + strlen(EXPECTED), got.s);
		rc = 1;
	} else {
		printf("ok - %s\n", name);
	}
	free(got.s);
	free(text);
	return rc;
}

int main(int argc, char **argv)
{
	bool queries = argc == 3 && strcmp(argv[2], "--queries") == 0;
	if (argc != 2 && !queries) {
		fprintf(stderr, "usage: %s tests/golden [--queries]\n", argv[0]);
		return 2;
	}
	char dir[PATH_MAX];
	if (!realpath(argv[1], dir)) {
		fprintf(stderr, "golden: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	bool update = getenv("GOLDEN_UPDATE") && strcmp(getenv("GOLDEN_UPDATE"), "0") != 0;
	setup(dir);
	char cases[PATH_MAX + 16];
	snprintf(cases, sizeof(cases), "%s/cases", dir);
	struct dirent **list;
	int n = scandir(cases, &list, only_cases, by_name);
	if (n <= 0) {
		fprintf(stderr, "golden: no cases in %s\n", cases);
		return 1;
	}
	int failed = 0;
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX + 300];
		snprintf(path, sizeof(path), "%s/%s", cases, list[i]->d_name);
		failed += one_case(path, list[i]->d_name, update, queries);
		free(list[i]);
	}
	free(list);
	teardown();
	if (queries)
		return failed ? 1 : 0;
	printf("%d of %d cases %s\n", failed ? failed : n, n, failed ? "FAILED" : "passed");
	return failed ? 1 : 0;
}
