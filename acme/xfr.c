/*
 * Zone transfers out (see xfr.h): access checks, TSIG, and the message
 * stream that walks a held snapshot.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "acme/msg.h"
#include "acme/tsig.h"
#include "acme/xfr.h"
#include "core/conf/config.h"
#include "core/conf/log.h"
#include "core/wire/dname.h"
#include "core/wire/packet.h"
#include "core/wire/query.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "core/zone/geo_sets.h"
#include "core/zone/zone.h"
#include "core/zone/zone_table.h"

/*
 * Records go out in messages of about this size: big enough that TSIG and
 * framing cost little, small enough that a transfer interleaves with other
 * work and a slow reader holds little of our memory.
 */
#define XFR_MSG_SOFT 16384

struct xfr_zone {
	uint8_t apex[DNAME_MAX];
	char name[DNAME_MAX * 4 + 2];
	enum config_axfr policy;
	struct config_prefix *from;
	size_t n_from;
	struct tsig_key *keys;       /* those with allow_axfr */
	size_t n_keys;
};

struct xfr {
	const struct zone_table *t;
	struct xfr_zone *zones;
	size_t n;
};

/* One RRset-like run of records to send (an RRSIG is a run of one). */
struct xfr_item {
	const uint8_t *owner;
	uint16_t type;
	uint16_t count;
	uint32_t ttl;
	const struct rdata *rr;
};

struct xfr_stream {
	struct zone *z;              /* held */
	struct xfr_item *items;
	size_t n_items, item, rec;
	uint16_t id, flags;
	uint8_t qname[DNAME_MAX];    /* as the client wrote it */
	uint16_t qtype, qclass;
	bool signed_req;
	struct tsig_key key;         /* a copy: a reload may free the xfr first */
	struct tsig_rr tsig;         /* key and algorithm names, fudge */
	uint8_t mac[TSIG_MAC_MAX];   /* the request's, then each message's */
	size_t mac_len;
	bool first;
	char who[INET6_ADDRSTRLEN + 8];
	size_t messages, records, bytes;
};

static struct log_limit lim_refuse, lim_tsig;

__attribute__((format(printf, 2, 3)))
static void errf(char err[256], const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, 256, fmt, ap);
	va_end(ap);
}

/* --- setup --- */

struct xfr *xfr_new(const struct zone_table *t, char err[256])
{
	struct xfr *x = calloc(1, sizeof(*x));
	if (!x)
		errf(err, "out of memory");
	else
		x->t = t;
	return x;
}

void xfr_free(struct xfr *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->n; i++) {
		free(x->zones[i].from);
		explicit_bzero(x->zones[i].keys, x->zones[i].n_keys * sizeof(*x->zones[i].keys));
		free(x->zones[i].keys);
	}
	free(x->zones);
	free(x);
}

int xfr_add_zone(struct xfr *x, const struct config_zone *zc, char err[256])
{
	struct xfr_zone *v = realloc(x->zones, (x->n + 1) * sizeof(*v));
	if (!v) {
		errf(err, "out of memory");
		return -ENOMEM;
	}
	x->zones = v;
	struct xfr_zone *xz = &v[x->n];
	memset(xz, 0, sizeof(*xz));
	if (dname_from_str(zc->zone, xz->apex) < 0) {
		errf(err, "'%s' is not a valid zone name", zc->zone);
		return -EINVAL;
	}
	dname_lower(xz->apex);
	dname_to_str(xz->apex, xz->name, sizeof(xz->name));
	xz->policy = zc->axfr_policy;
	if (zc->n_axfr_from) {
		xz->from = malloc(zc->n_axfr_from * sizeof(*xz->from));
		if (!xz->from) {
			errf(err, "out of memory");
			return -ENOMEM;
		}
		memcpy(xz->from, zc->axfr_from, zc->n_axfr_from * sizeof(*xz->from));
		xz->n_from = zc->n_axfr_from;
	}
	xz->keys = calloc(zc->n_tsig_keys ? zc->n_tsig_keys : 1, sizeof(*xz->keys));
	if (!xz->keys) {
		free(xz->from);
		errf(err, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < zc->n_tsig_keys; i++) {
		const struct config_tsig_key *k = &zc->tsig_keys[i];
		if (!k->allow_axfr)
			continue;
		if (tsig_key_init(&xz->keys[xz->n_keys], k->name, k->algorithm, k->secret,
		                  k->secret_len, k->fudge, err) < 0) {
			free(xz->from);
			free(xz->keys);
			return -EINVAL;
		}
		xz->n_keys++;
	}
	x->n++;
	return 0;
}

static const struct xfr_zone *find_zone(const struct xfr *x, const uint8_t *apex)
{
	size_t len = dname_len(apex);
	for (size_t i = 0; i < x->n; i++)
		if (dname_len(x->zones[i].apex) == len && memcmp(x->zones[i].apex, apex, len) == 0)
			return &x->zones[i];
	return NULL;
}

/* --- access --- */

static bool prefix_match(const struct config_prefix *p, int family, const uint8_t *addr)
{
	if (p->family != family)
		return false;
	size_t full = p->len / 8, bits = p->len % 8;
	if (memcmp(p->addr, addr, full) != 0)
		return false;
	if (!bits)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - bits));
	return (p->addr[full] & mask) == (addr[full] & mask);
}

static bool from_allowed(const struct xfr_zone *xz, const struct query *q)
{
	if (!xz->n_from)
		return true;
	uint8_t addr[16];
	int family = query_client_addr(q, addr);
	for (size_t i = 0; i < xz->n_from; i++)
		if (prefix_match(&xz->from[i], family, addr))
			return true;
	return false;
}

static void client_str(const struct query *q, char *out, size_t cap)
{
	uint8_t addr[16];
	int family = query_client_addr(q, addr);
	if (!inet_ntop(family == 4 ? AF_INET : AF_INET6, addr, out, (socklen_t)cap))
		snprintf(out, cap, "?");
}

static const struct tsig_key *zone_key(const struct xfr_zone *xz, const struct tsig_rr *t)
{
	enum tsig_alg alg = tsig_alg_from_name(t->alg_name);
	size_t len = dname_len(t->key_name);
	for (size_t i = 0; xz && i < xz->n_keys; i++)
		if (xz->keys[i].alg == alg && dname_len(xz->keys[i].name) == len &&
		    memcmp(xz->keys[i].name, t->key_name, len) == 0)
			return &xz->keys[i];
	return NULL;
}

/*
 * The key that verifies a request: the zone's own first, else a transfer
 * key of another zone (a secondary often signs everything with one key;
 * such a request is answered and signed, but only AllowAll lets it
 * transfer this zone).  *own tells which.
 */
static const struct tsig_key *find_key(const struct xfr *x, const struct xfr_zone *xz,
                                       const struct tsig_rr *t, bool *own)
{
	const struct tsig_key *k = zone_key(xz, t);
	*own = k != NULL;
	for (size_t i = 0; !k && i < x->n; i++)
		k = zone_key(&x->zones[i], t);
	return k;
}

/* --- single-message answers (errors, the SOA alone) --- */

/*
 * Signs a single-message answer in q->tx when the request was signed.
 * BADKEY and BADSIG answers carry an unsigned TSIG (RFC 8945 5.3.2).
 */
static void sign_reply(struct query *q, const struct tsig_rr *req, const struct tsig_key *key,
                       uint16_t error, uint64_t now)
{
	if (!q->tx_len || !req)
		return;
	struct tsig_rr f;
	uint8_t other[6];
	memset(&f, 0, sizeof(f));
	memcpy(f.key_name, req->key_name, dname_len(req->key_name));
	memcpy(f.alg_name, req->alg_name, dname_len(req->alg_name));
	f.fudge = req->fudge;
	f.orig_id = wire_get_u16(q->tx);
	f.error = error;
	f.time_signed = key ? now : req->time_signed;
	if (error == TSIG_BADTIME) {
		f.time_signed = req->time_signed;
		wire_set_u16(other, (uint16_t)(now >> 32));
		wire_set_u32(other + 2, (uint32_t)now);
		f.other = other;
		f.other_len = 6;
	}
	size_t limit = q->max_size < q->tx_cap ? q->max_size : q->tx_cap;
	if (tsig_append(q->tx, &q->tx_len, limit, &f, key, req->mac, req->mac_len, NULL) < 0)
		q->tx_len = 0;
}

static int refuse(struct query *q, uint8_t rcode, const struct tsig_rr *req,
                  const struct tsig_key *key, uint16_t error, uint64_t now)
{
	q->rcode = rcode;
	packet_write_error(q);
	sign_reply(q, req, key, error, now);
	return 0;
}

/* The SOA alone: an IXFR from a client that is current, or over UDP (RFC 1995 4). */
static int soa_only(struct query *q, const struct zone *z, const struct tsig_rr *req,
                    const struct tsig_key *key, uint64_t now)
{
	struct answer_plan plan;
	memset(&plan, 0, sizeof(plan));
	plan.aa = true;
	plan.an.n = 1;
	plan.an.rr[0] = (struct plan_rrset){ .owner = z->apex, .rrset = z->soa, .ttl = z->soa->ttl };
	size_t saved = q->max_size;
	if (req && key && q->max_size > tsig_space(key) + MSG_HEADER_LEN)
		q->max_size -= tsig_space(key);
	packet_write(q, &plan);
	q->max_size = saved;
	sign_reply(q, req, key, TSIG_NOERROR, now);
	return 0;
}

/* The serial in an IXFR request's authority SOA (RFC 1995 3), or -EBADMSG. */
static int64_t ixfr_serial(const struct query *q)
{
	if (q->nscount != 1)
		return -EBADMSG;
	size_t pos = q->question_end;
	for (unsigned i = 0; i < q->ancount; i++) {
		struct msg_rr rr;
		if (msg_read_rr(q->rx, q->rx_len, &pos, &rr) < 0)
			return -EBADMSG;
	}
	struct msg_rr rr;
	if (msg_read_rr(q->rx, q->rx_len, &pos, &rr) < 0 || rr.type != RR_SOA || rr.rdlen < 22)
		return -EBADMSG;
	/* The serial is the first of the five numbers that end the rdata. */
	return wire_get_u32(q->rx + rr.rdata_off + rr.rdlen - 20);
}

/* RFC 1982: a is not older than b. */
static bool serial_ge(uint32_t a, uint32_t b)
{
	return a == b || (int32_t)(a - b) > 0;
}

/* --- the stream --- */

static int push(struct xfr_item **v, size_t *n, size_t *cap, const uint8_t *owner,
                uint16_t type, uint32_t ttl, const struct rdata *rr, uint16_t count)
{
	if (!count)
		return 0;
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct xfr_item *nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = (struct xfr_item){ owner, type, count, ttl, rr };
	return 0;
}

static int push_rrset(struct xfr_item **v, size_t *n, size_t *cap, const uint8_t *owner,
                      const struct rrset *s, bool with_sig)
{
	int rc = push(v, n, cap, owner, s->type, s->ttl, s->rr, s->count);
	if (rc == 0 && with_sig && s->sig.len)
		rc = push(v, n, cap, owner, RR_RRSIG, s->ttl, &s->sig, 1);
	return rc;
}

/*
 * The zone as a list of runs: SOA first, every other RRset with its RRSIG
 * (a geo name's fallback A/AAAA included), and the SOA again to close (RFC
 * 5936 2.2).  Pointers into the held snapshot: nothing is copied.
 */
static int build_items(struct xfr_stream *s)
{
	const struct zone *z = s->z;
	struct xfr_item *v = NULL;
	size_t n = 0, cap = 0;
	int rc = push_rrset(&v, &n, &cap, z->apex, z->soa, true);
	for (const struct zone_node *node = zone_node_next(z, NULL); node && rc == 0;
	     node = zone_node_next(z, node)) {
		for (uint16_t i = 0; i < node->rrset_count && rc == 0; i++) {
			const struct rrset *rs = &node->rrsets[i];
			if (rs == z->soa)
				continue;
			rc = push_rrset(&v, &n, &cap, node->name, rs, true);
		}
		if (node->geo) {
			const uint16_t types[2] = { RR_A, RR_AAAA };
			for (int t = 0; t < 2 && rc == 0; t++) {
				const struct rrset *fb = geo_sets_fallback(node->geo, types[t]);
				if (fb)
					rc = push_rrset(&v, &n, &cap, node->name, fb, true);
			}
		}
	}
	if (rc == 0)
		rc = push_rrset(&v, &n, &cap, z->apex, z->soa, false);
	if (rc < 0) {
		free(v);
		return rc;
	}
	s->items = v;
	s->n_items = n;
	return 0;
}

static void stream_release(void *ctx)
{
	struct xfr_stream *s = ctx;
	if (s->item < s->n_items)
		log_warn("transfer of %s (serial %u) to %s cut short after %zu records",
		         s->z->name, s->z->serial, s->who, s->records);
	zone_free(s->z);
	free(s->items);
	explicit_bzero(&s->key, sizeof(s->key));
	free(s);
}

/* One record, whole or not at all. */
static bool write_rr(struct wire *w, size_t limit, const struct xfr_item *it, const struct rdata *rd)
{
	size_t mark = wire_pos(w);
	size_t need = dname_len(it->owner) + 10 + rd->len;
	if (mark + need > limit)
		return false;
	wire_write_bytes(w, it->owner, dname_len(it->owner));
	wire_write_u16(w, it->type);
	wire_write_u16(w, CLASS_IN);
	wire_write_u32(w, it->ttl);
	wire_write_u16(w, rd->len);
	wire_write_bytes(w, rd->data, rd->len);
	if (w->err) {
		wire_seek(w, mark);
		return false;
	}
	return true;
}

static int stream_next(void *ctx, struct query *q)
{
	struct xfr_stream *s = ctx;
	size_t cap = q->tx_cap < QUERY_MSG_MAX ? q->tx_cap : QUERY_MSG_MAX;
	size_t reserve = s->signed_req ? tsig_space(&s->key) : 0;
	if (cap < reserve + 512)
		return -ENOSPC;
	size_t hard = cap - reserve;
	size_t soft = XFR_MSG_SOFT < hard ? XFR_MSG_SOFT : hard;

	struct wire w;
	wire_init(&w, q->tx, cap);
	wire_write_u16(&w, s->id);
	/* QR, AA, the client's RD; opcode QUERY, NOERROR. */
	wire_write_u16(&w, (uint16_t)(0x8000 | 0x0400 | (s->flags & 0x0100)));
	wire_write_u16(&w, 1);
	wire_write_u16(&w, 0);
	wire_write_u16(&w, 0);
	wire_write_u16(&w, 0);
	/* The question in every message: RFC 5936 2.2.1 allows it, and every
	 * client we know accepts it. */
	wire_write_bytes(&w, s->qname, dname_len(s->qname));
	wire_write_u16(&w, s->qtype);
	wire_write_u16(&w, s->qclass);
	if (w.err)
		return -ENOSPC;
	uint16_t an = 0;
	while (s->item < s->n_items && an < UINT16_MAX) {
		const struct xfr_item *it = &s->items[s->item];
		/* The soft limit, except that a message always carries a record. */
		if (!write_rr(&w, an ? soft : hard, it, &it->rr[s->rec]))
			break;
		an++;
		if (++s->rec == it->count) {
			s->rec = 0;
			s->item++;
		}
	}
	if (an == 0) {
		log_error("transfer of %s: a record does not fit in a message", s->z->name);
		return -ENOSPC;
	}
	wire_put_u16_at(&w, 6, an);
	q->tx_len = wire_pos(&w);
	if (s->signed_req) {
		s->tsig.time_signed = (uint64_t)time(NULL);
		s->tsig.orig_id = s->id;
		uint8_t mac[TSIG_MAC_MAX];
		int n = s->first ? tsig_append(q->tx, &q->tx_len, cap, &s->tsig, &s->key, s->mac,
		                                s->mac_len, mac)
		                 : tsig_append_next(q->tx, &q->tx_len, cap, &s->tsig, &s->key, s->mac,
		                                    s->mac_len, mac);
		if (n < 0) {
			log_error("transfer of %s: cannot sign a message (%s)", s->z->name, strerror(-n));
			q->tx_len = 0;
			return n;
		}
		memcpy(s->mac, mac, (size_t)n);
		s->mac_len = (size_t)n;
	}
	s->first = false;
	s->messages++;
	s->records += an;
	s->bytes += q->tx_len;
	if (s->item < s->n_items)
		return 1;
	log_info("transfer of %s (serial %u) to %s: %zu records in %zu messages, %zu bytes",
	         s->z->name, s->z->serial, s->who, s->records, s->messages, s->bytes);
	return 0;
}

static int start_stream(struct query *q, const struct zone *z, const struct tsig_rr *req,
                        const struct tsig_key *key)
{
	struct xfr_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->z = zone_hold(z);
	if (build_items(s) < 0) {
		zone_free(s->z);
		free(s);
		return -ENOMEM;
	}
	s->id = q->id;
	s->flags = q->flags;
	memcpy(s->qname, q->qname_orig, dname_len(q->qname_orig));
	s->qtype = q->qtype;
	s->qclass = q->qclass;
	s->first = true;
	client_str(q, s->who, sizeof(s->who));
	if (req) {
		s->signed_req = true;
		s->key = *key;
		memcpy(s->tsig.key_name, req->key_name, dname_len(req->key_name));
		memcpy(s->tsig.alg_name, req->alg_name, dname_len(req->alg_name));
		s->tsig.fudge = req->fudge;
		memcpy(s->mac, req->mac, req->mac_len);
		s->mac_len = req->mac_len;
	}
	q->tx_len = 0;
	q->stream = (struct query_stream){ s, stream_next, stream_release };
	return 0;
}

/* --- the handler --- */

static int handle(void *ctx, struct query *q)
{
	struct xfr *x = ctx;
	uint64_t now = (uint64_t)time(NULL);
	const char *kind = q->qtype == RR_AXFR ? "AXFR" : "IXFR";
	char who[INET6_ADDRSTRLEN], zname[DNAME_MAX * 4 + 2], kname[DNAME_MAX * 4 + 2] = "none";
	client_str(q, who, sizeof(who));
	if (dname_to_str(q->qname, zname, sizeof(zname)) < 0)
		snprintf(zname, sizeof(zname), "?");
	q->tx_len = 0;

	const struct xfr_zone *xz = find_zone(x, q->qname);
	struct tsig_rr t;
	const struct tsig_rr *req = NULL;
	const struct tsig_key *key = NULL;
	bool own_key = false;
	if (q->tsig_offset) {
		int found = tsig_find(q->rx, q->rx_len, &t);
		if (found < 0)
			return refuse(q, RCODE_FORMERR, NULL, NULL, 0, now);
		if (found) {
			if (dname_to_str(t.key_name, kname, sizeof(kname)) < 0)
				snprintf(kname, sizeof(kname), "?");
			key = find_key(x, xz, &t, &own_key);
			int v = tsig_verify(q->rx, &t, key, now);
			if (v < 0)
				return refuse(q, RCODE_FORMERR, NULL, NULL, 0, now);
			req = &t;
			if (v != TSIG_NOERROR) {
				log_limited(&lim_tsig, LOG_WARN, "%s of %s from %s refused: TSIG key %s: %s",
				            kind, zname, who, kname,
				            v == TSIG_BADKEY ? "unknown key, or not allowed to transfer "
				                               "this zone (BADKEY)"
				            : v == TSIG_BADSIG ? "wrong MAC (BADSIG)"
				            : v == TSIG_BADTIME ? "clock skew (BADTIME)" : "BADTRUNC");
				bool signed_err = v == TSIG_BADTIME || v == TSIG_BADTRUNC;
				return refuse(q, RCODE_NOTAUTH, req, signed_err ? key : NULL, (uint16_t)v, now);
			}
		}
	}
	const struct zone *z = zone_table_get(x->t, q->qname);
	if (!z || !xz || q->qclass != CLASS_IN) {
		log_limited(&lim_refuse, LOG_INFO, "%s of %s from %s (key %s): not a zone we serve",
		            kind, zname, who, kname);
		return refuse(q, RCODE_NOTAUTH, req, key, 0, now);
	}
	const char *why = NULL;
	if (xz->policy == AXFR_DENY)
		why = "axfr_policy is Deny";
	else if (xz->policy == AXFR_ALLOW_SIGNED && !own_key)
		why = "not signed with a TSIG key of the zone (axfr_policy is AllowSigned)";
	else if (!from_allowed(xz, q))
		why = "address not in axfr_from";
	if (why) {
		log_limited(&lim_refuse, LOG_WARN, "%s of %s from %s (key %s) refused: %s", kind,
		            zname, who, kname, why);
		return refuse(q, RCODE_REFUSED, req, key, 0, now);
	}
	if (q->qtype == RR_IXFR) {
		int64_t serial = ixfr_serial(q);
		if (serial < 0)
			return refuse(q, RCODE_FORMERR, req, key, 0, now);
		if (q->transport == QUERY_UDP || serial_ge((uint32_t)serial, z->serial))
			return soa_only(q, z, req, key, now);
	} else if (q->transport == QUERY_UDP) {
		/* RFC 5936 4.2: AXFR is not defined over UDP. */
		log_limited(&lim_refuse, LOG_INFO, "AXFR of %s from %s over UDP refused", zname, who);
		return refuse(q, RCODE_REFUSED, req, key, 0, now);
	}
	log_info("%s of %s (serial %u) to %s (key %s)", kind, zname, z->serial, who, kname);
	return start_stream(q, z, req, key);
}

struct xfr_handler xfr_handler(struct xfr *x)
{
	return (struct xfr_handler){ .ctx = x, .handle = handle };
}
