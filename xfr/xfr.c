/* SPDX-License-Identifier: MIT */
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

#include "core/conf/config.h"
#include "core/conf/log.h"
#include "core/conf/metrics.h"
#include "core/net/loop.h"
#include "core/test_hooks.h"
#include "core/tsig/replay.h"
#include "core/tsig/tsig.h"
#include "core/wire/dname.h"
#include "core/wire/msg.h"
#include "core/wire/packet.h"
#include "core/wire/query.h"
#include "core/wire/rrset.h"
#include "core/wire/serial.h"
#include "core/wire/wire.h"
#include "core/zone/geo_sets.h"
#include "core/zone/zone.h"
#include "core/zone/zone_diff.h"
#include "core/zone/zone_table.h"
#include "core/zone/zone_walk.h"
#include "xfr/xfr.h"
#include "xfr/xfr_internal.h"

/*
 * Records go out in messages of about this size: big enough that TSIG and
 * framing cost little, small enough that a transfer interleaves with other
 * work and a slow reader holds little of our memory.
 */
#define XFR_MSG_SOFT 16384
#define OPT_LEN 11                /* an OPT record without options */

/* One difference of the IXFR history (a zone_diff blob). */
struct xfr_hist {
	uint32_t from, to;
	uint8_t *blob;
	size_t len;
};

struct xfr_zone {
	uint8_t apex[DNAME_MAX];
	char name[DNAME_MAX * 4 + 2];
	enum config_axfr policy;
	struct config_prefix *from;
	size_t n_from;
	struct tsig_key *keys;       /* those with allow_axfr */
	struct replay **replay;      /* each key's accepted request MACs (replay.h) */
	size_t n_keys;
	/* The IXFR history, oldest first, contiguous in serials. */
	struct xfr_hist *hist;
	size_t n_hist, cap_hist, hist_bytes;
	uint32_t max_changes, max_bytes;
};

struct xfr {
	const struct zone_table *t;
	const struct loop *l;        /* the clock (loop_wall_s); outlives every xfr */
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
	/*
	 * Held, and patched meanwhile if an UPDATE or an IXFR comes: the items
	 * are made at the start and point only at names, RRset arrays and
	 * rdata, which a patch never rewrites (zone_patch.h), so the transfer
	 * sends the zone as it was then, at `serial`.
	 */
	struct zone *z;
	uint32_t serial;
	/* The list of an AXFR (or a whole-zone IXFR) is made in slices (list_step). */
	bool whole;                  /* the whole zone is to be listed */
	bool listed;                 /* the list is complete */
	struct zone_walk *walk;      /* the walk under way, or NULL */
	size_t list_slice;           /* names per loop round: XFR_LIST_SLICE */
	const struct rrset *soa;     /* the SOA the list starts and ends with */
	unsigned list_rounds;
	size_t listed_records;
	uint8_t *data;               /* an IXFR's records (the items point here) */
	struct rdata *rdata;
	struct xfr_item *items;      /* an IXFR's runs, in one array */
	struct xfr_item **blocks;    /* or an AXFR's, in blocks (push) */
	size_t n_blocks, cap_blocks;
	size_t n_items, item, rec;
	uint16_t id, flags;
	uint8_t qname[DNAME_MAX];    /* as the client wrote it */
	uint16_t qtype, qclass;
	bool signed_req;
	struct tsig_key key;         /* a copy: a reload may free the xfr first */
	const struct loop *l;        /* the clock, for each message's time signed */
	struct tsig_rr tsig;         /* key and algorithm names, fudge */
	uint8_t mac[TSIG_MAC_MAX];   /* the request's, then each message's */
	size_t mac_len;
	bool first;
	char who[INET6_ADDRSTRLEN + 8];
	size_t messages, records, bytes;
	bool incremental;            /* an IXFR from the history */
	const char *kind;            /* for the log */
	/* The request had an OPT: every message carries ours (RFC 6891 7, as
	 * Knot does), the DO bit echoed. */
	bool edns, do_bit;
	uint16_t udp_advertise;
};

static struct log_limit lim_refuse, lim_tsig;


/* --- setup --- */

struct xfr *xfr_new(const struct zone_table *t, const struct loop *l, char err[256])
{
	struct xfr *x = calloc(1, sizeof(*x));
	if (!x) {
		xfr_errf(err, "out of memory");
		return NULL;
	}
	x->t = t;
	x->l = l;
	return x;
}

void xfr_free(struct xfr *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->n; i++) {
		for (size_t k = 0; k < x->zones[i].n_hist; k++)
			free(x->zones[i].hist[k].blob);
		free(x->zones[i].hist);
		free(x->zones[i].from);
		explicit_bzero(x->zones[i].keys, x->zones[i].n_keys * sizeof(*x->zones[i].keys));
		free(x->zones[i].keys);
		for (size_t k = 0; k < x->zones[i].n_keys; k++)
			replay_free(x->zones[i].replay[k]);
		free(x->zones[i].replay);
	}
	free(x->zones);
	free(x);
}

int xfr_add_zone(struct xfr *x, const struct config_zone *zc, char err[256])
{
	struct xfr_zone *v = realloc(x->zones, (x->n + 1) * sizeof(*v));
	if (!v) {
		xfr_errf(err, "out of memory");
		return -ENOMEM;
	}
	x->zones = v;
	struct xfr_zone *xz = &v[x->n];
	memset(xz, 0, sizeof(*xz));
	if (dname_from_str(zc->zone, xz->apex) < 0) {
		xfr_errf(err, "'%s' is not a valid zone name", zc->zone);
		return -EINVAL;
	}
	dname_lower(xz->apex);
	dname_to_str(xz->apex, xz->name, sizeof(xz->name));
	xz->policy = zc->axfr_policy;
	xz->max_changes = zc->ixfr_max_changes;
	xz->max_bytes = zc->ixfr_max_bytes;
	if (zc->n_axfr_from) {
		xz->from = malloc(zc->n_axfr_from * sizeof(*xz->from));
		if (!xz->from) {
			xfr_errf(err, "out of memory");
			return -ENOMEM;
		}
		memcpy(xz->from, zc->axfr_from, zc->n_axfr_from * sizeof(*xz->from));
		xz->n_from = zc->n_axfr_from;
	}
	int rc = -ENOMEM;
	size_t n_alloc = zc->n_tsig_keys ? zc->n_tsig_keys : 1;
	xz->keys = calloc(n_alloc, sizeof(*xz->keys));
	xz->replay = calloc(n_alloc, sizeof(*xz->replay));
	if (!xz->keys || !xz->replay)
		goto oom;
	for (size_t i = 0; i < zc->n_tsig_keys; i++) {
		const struct config_tsig_key *k = &zc->tsig_keys[i];
		if (!k->allow_axfr)
			continue;
		if (tsig_key_init(&xz->keys[xz->n_keys], k->name, k->algorithm, k->secret,
		                  k->secret_len, k->fudge, err) < 0) {
			rc = -EINVAL;
			goto fail;
		}
		/* The floor is now: a request signed before may have been answered
		 * by the process before a restart (replay.h); a reload copies the
		 * memory over (xfr_keep_replay). */
		if (!(xz->replay[xz->n_keys] = replay_new((uint64_t)loop_wall_s(x->l))))
			goto oom;
		xz->n_keys++;
	}
	x->n++;
	return 0;
oom:
	xfr_errf(err, "out of memory");
fail:
	for (size_t k = 0; k < xz->n_keys; k++)
		replay_free(xz->replay[k]);
	free(xz->replay);
	free(xz->from);
	free(xz->keys);
	return rc;
}

static const struct xfr_zone *find_zone(const struct xfr *x, const uint8_t *apex);

void xfr_keep_replay(struct xfr *x, const struct xfr *prev)
{
	for (size_t i = 0; x && prev && i < x->n; i++) {
		struct xfr_zone *xz = &x->zones[i];
		const struct xfr_zone *old = find_zone(prev, xz->apex);
		for (size_t k = 0; old && k < xz->n_keys; k++) {
			const struct tsig_key *nk = &xz->keys[k];
			for (size_t j = 0; j < old->n_keys; j++) {
				const struct tsig_key *o = &old->keys[j];
				if (o->alg == nk->alg && dname_len(o->name) == dname_len(nk->name) &&
				    memcmp(o->name, nk->name, dname_len(o->name)) == 0)
					replay_copy(xz->replay[k], old->replay[j]);
			}
		}
	}
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

/* The replay memory of a key find_key() returned. */
static struct replay *key_replay(const struct xfr *x, const struct tsig_key *key)
{
	for (size_t i = 0; i < x->n; i++)
		if (key >= x->zones[i].keys && key < x->zones[i].keys + x->zones[i].n_keys)
			return x->zones[i].replay[key - x->zones[i].keys];
	return NULL;
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
	size_t limit = q->max_size < q->tx_cap ? q->max_size : q->tx_cap;
	if (tsig_sign_reply(q->tx, &q->tx_len, limit, req, key, error, now) < 0)
		q->tx_len = 0;
}

static int refuse(struct query *q, uint8_t rcode, const struct tsig_rr *req,
                  const struct tsig_key *key, uint16_t error, uint64_t now)
{
	METRICS_INC(metrics.xfr_out[METRICS_XFR_REFUSED]);
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
	METRICS_INC(metrics.xfr_out[METRICS_XFR_SOA]);
	memset(&plan, 0, sizeof(plan));
	plan.aa = true;
	plan.an.n = 1;
	plan.an.rr[0] = (struct plan_rrset){ .owner = zone_apex(z), .rrset = zone_soa(z), .ttl = zone_soa(z)->ttl };
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
	struct wire w;
	struct msg_rr rr;
	wire_init_read(&w, q->rx, q->rx_len);
	wire_seek(&w, q->question_end);
	for (unsigned i = 0; i < q->ancount; i++)
		msg_read_rr(&w, &rr);
	if (msg_read_rr(&w, &rr) < 0 || rr.type != RR_SOA || rr.rdlen < 22)
		return -EBADMSG;
	/* The serial is the first of the five numbers that end the rdata. */
	return wire_get_u32(q->rx + rr.rdata_off + rr.rdlen - 20);
}

/* --- the stream --- */

/*
 * An AXFR's list grows in blocks of XFR_ITEM_BLOCK runs, never by realloc:
 * a realloc of a list of a million runs copies tens of megabytes in one
 * loop round, and the new memory's page faults come all at once.
 */
#define XFR_ITEM_BLOCK 4096

static int push(struct xfr_stream *s, const uint8_t *owner, uint16_t type, uint32_t ttl,
                const struct rdata *rr, uint16_t count)
{
	if (!count)
		return 0;
	size_t b = s->n_items / XFR_ITEM_BLOCK;
	if (s->n_items % XFR_ITEM_BLOCK == 0) {
		if (b == s->cap_blocks) {
			size_t nc = s->cap_blocks ? s->cap_blocks * 2 : 16;
			struct xfr_item **nv = realloc(s->blocks, nc * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			s->blocks = nv;
			s->cap_blocks = nc;
		}
		if (!(s->blocks[b] = malloc(XFR_ITEM_BLOCK * sizeof(**s->blocks))))
			return -ENOMEM;
		s->n_blocks = b + 1;
	}
	s->blocks[b][s->n_items++ % XFR_ITEM_BLOCK] = (struct xfr_item){ owner, type, count, ttl, rr };
	s->listed_records += count;
	return 0;
}

static int push_rrset(struct xfr_stream *s, const uint8_t *owner, const struct rrset *rs,
                      bool with_sig)
{
	int rc = push(s, owner, rs->type, rs->ttl, rs->rr, rs->count);
	if (rc == 0 && with_sig)
		rc = push(s, owner, RR_RRSIG, rs->ttl, rs->sig, (uint16_t)rrset_sig_count(rs));
	return rc;
}

/* The i-th run: in an IXFR's array, or in an AXFR's blocks. */
static const struct xfr_item *item_at(const struct xfr_stream *s, size_t i)
{
	return s->items ? &s->items[i] : &s->blocks[i / XFR_ITEM_BLOCK][i % XFR_ITEM_BLOCK];
}

static void items_free(struct xfr_stream *s)
{
	for (size_t b = 0; b < s->n_blocks; b++)
		free(s->blocks[b]);
	free(s->blocks);
	s->blocks = NULL;
	s->n_blocks = s->cap_blocks = 0;
	free(s->items);
	s->items = NULL;
	s->n_items = 0;
}

/*
 * The zone as a list of runs: SOA first, every other RRset with its RRSIG
 * (a geo name's fallback A/AAAA included), and the SOA again to close (RFC
 * 5936 2.2).  Pointers into the held snapshot: nothing is copied.
 *
 * Made in slices of about XFR_LIST_SLICE names, one per loop round (the
 * TCP layer calls the stream again in the next round: QUERY_STREAM_LATER),
 * so a transfer of a big zone does not hold the loop while it lists it
 * (0.6 µs a name on this project's test machine: 60 ms at 100 000 names).
 * Nothing is sent before the list is complete.  The list is of one
 * version, the one held at the start: an UPDATE or a purge that patches
 * the snapshot meanwhile hands the walk the names it changes as they were
 * (zone_walk.h), so the transfer neither starts over nor waits.  1024
 * names take about half a millisecond; a round costs the loop a few
 * microseconds more, so the transfer is not made slower than that.
 */
#define XFR_LIST_SLICE 1024

/* One node's runs, as the node is now (zone_walk_fn). */
static int list_node(void *arg, const struct zone_node *node)
{
	struct xfr_stream *s = arg;
	int rc = 0;
	for (uint16_t i = 0; i < node->rrset_count && rc == 0; i++) {
		const struct rrset *rs = &node->rrsets[i];
		if (rs == s->soa)
			continue;   /* first and last, from the start's apex */
		rc = push_rrset(s, node->name, rs, true);
	}
	if (node->geo) {
		const uint16_t types[3] = { RR_A, RR_AAAA, RR_HTTPS };
		for (int t = 0; t < 3 && rc == 0; t++) {
			const struct rrset *fb = geo_sets_fallback(node->geo, types[t]);
			if (fb)
				rc = push_rrset(s, node->name, fb, true);
		}
	}
	return rc;
}

/* Returns 1 when more remains, 0 when the list is complete, or -ENOMEM. */
static int list_step(struct xfr_stream *s)
{
	const struct zone *z = s->z;
	s->list_rounds++;
	if (!s->walk) {
		/* The snapshot as held now: its SOA (a patch later makes a new
		 * SOA RRset and leaves this one as it is) and every node. */
		s->serial = zone_serial(z);
		s->soa = zone_soa(z);
		if (push_rrset(s, zone_apex(z), s->soa, true) < 0)
			return -ENOMEM;
		s->walk = zone_walk_new(s->z, list_node, s);
		if (!s->walk)
			return -ENOMEM;
	}
	int rc = zone_walk_step(s->walk, s->list_slice);
	if (rc != 0)
		return rc > 0 ? 1 : -ENOMEM;
	unsigned patches = zone_walk_patches(s->walk);
	zone_walk_free(s->walk);
	s->walk = NULL;
	if (push_rrset(s, zone_apex(z), s->soa, false) < 0)
		return -ENOMEM;
	s->listed = true;
	log_debug("transfer of %s (serial %u) to %s: %zu records listed in %u loop round%s (%u "
	          "patch%s applied meanwhile)", zone_name(z), s->serial, s->who,
	          s->listed_records, s->list_rounds,
	          s->list_rounds == 1 ? "" : "s", patches, patches == 1 ? "" : "es");
	return 0;
}

static void stream_release_quiet(struct xfr_stream *s)
{
	zone_walk_free(s->walk);
	zone_free(s->z);
	items_free(s);
	free(s->rdata);
	free(s->data);
	explicit_bzero(&s->key, sizeof(s->key));
	free(s);
}

static void stream_release(void *ctx)
{
	struct xfr_stream *s = ctx;
	if (s->item < s->n_items || (s->whole && !s->listed))
		log_warn("transfer of %s (serial %u) to %s cut short after %zu records",
		         zone_name(s->z), s->serial, s->who, s->records);
	stream_release_quiet(s);
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
	if (s->whole && !s->listed) {
		q->tx_len = 0;
		int lr = list_step(s);
		if (lr < 0) {
			log_error("transfer of %s: out of memory listing the zone", zone_name(s->z));
			return lr;
		}
		if (lr > 0)
			return QUERY_STREAM_LATER;
	}
	size_t cap = q->tx_cap < QUERY_MSG_MAX ? q->tx_cap : QUERY_MSG_MAX;
	size_t reserve = (s->signed_req ? tsig_space(&s->key) : 0) + (s->edns ? OPT_LEN : 0);
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
		const struct xfr_item *it = item_at(s, s->item);
		/* The soft limit, except that a message always carries a record. */
		if (!write_rr(&w, an ? soft : hard, it, &it->rr[s->rec]))
			break;
		an++;
		if (++s->rec == it->count) {
			s->rec = 0;
			s->item++;
			if (s->blocks && s->item % XFR_ITEM_BLOCK == 0) {
				/* A block sent: freed now, a little at a time. */
				free(s->blocks[s->item / XFR_ITEM_BLOCK - 1]);
				s->blocks[s->item / XFR_ITEM_BLOCK - 1] = NULL;
			}
		}
	}
	if (an == 0) {
		log_error("transfer of %s: a record does not fit in a message", zone_name(s->z));
		return -ENOSPC;
	}
	wire_put_u16_at(&w, 6, an);
	if (s->edns) {
		/* Root owner, type OPT, our UDP size, version 0, no options. */
		uint8_t opt[OPT_LEN] = { 0, 0, 41 };
		wire_set_u16(opt + 3, s->udp_advertise);
		wire_set_u16(opt + 7, s->do_bit ? 0x8000 : 0);
		wire_write_bytes(&w, opt, sizeof(opt));
		wire_put_u16_at(&w, 10, 1);
	}
	q->tx_len = wire_pos(&w);
	if (s->signed_req) {
		s->tsig.time_signed = (uint64_t)loop_wall_s(s->l);
		s->tsig.orig_id = s->id;
		uint8_t mac[TSIG_MAC_MAX];
		int n = s->first ? tsig_append(q->tx, &q->tx_len, cap, &s->tsig, &s->key, s->mac,
		                                s->mac_len, mac)
		                 : tsig_append_next(q->tx, &q->tx_len, cap, &s->tsig, &s->key, s->mac,
		                                    s->mac_len, mac);
		if (n < 0) {
			log_error("transfer of %s: cannot sign a message (%s)", zone_name(s->z), strerror(-n));
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
	log_info("%s of %s (serial %u) to %s: %zu records in %zu messages, %zu bytes", s->kind,
	         zone_name(s->z), s->serial, s->who, s->records, s->messages, s->bytes);
	return 0;
}

static int ixfr_items(struct xfr_stream *s, const struct xfr_zone *xz, uint32_t serial);

/*
 * The stream of an AXFR, or of an IXFR from `serial` (ixfr true): the
 * condensed history when it reaches back that far, else the whole zone.
 */
static int start_stream(struct query *q, const struct xfr *x, const struct zone *z,
                        const struct xfr_zone *xz, bool ixfr, uint32_t serial,
                        const struct tsig_rr *req, const struct tsig_key *key)
{
	struct xfr_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->l = x->l;
	s->z = zone_hold(z);
	s->serial = zone_serial(z);
	client_str(q, s->who, sizeof(s->who));
	int rc = ixfr ? ixfr_items(s, xz, serial) : 0;
	if (rc == 0) {
		items_free(s);
		free(s->rdata);
		free(s->data);
		s->rdata = NULL;
		s->data = NULL;
		/* The first slice now: a small zone is listed at once. */
		s->whole = true;
		s->list_slice = XFR_LIST_SLICE;
		const char *slice = test_hook(TEST_HOOK_XFR_LIST_SLICE);
		if (slice && strtoul(slice, NULL, 10) > 0)
			s->list_slice = strtoul(slice, NULL, 10);
		rc = list_step(s);
		rc = rc < 0 ? rc : 0;
	}
	if (rc < 0) {
		stream_release_quiet(s);
		return -ENOMEM;
	}
	s->kind = !ixfr ? "AXFR" : s->incremental ? "IXFR" : "IXFR (whole zone, AXFR form)";
	METRICS_INC(metrics.xfr_out[!ixfr ? METRICS_XFR_AXFR
	                            : s->incremental ? METRICS_XFR_IXFR : METRICS_XFR_IXFR_FULL]);
	s->id = q->id;
	s->flags = q->flags;
	memcpy(s->qname, q->qname_orig, dname_len(q->qname_orig));
	s->qtype = q->qtype;
	s->qclass = q->qclass;
	s->first = true;
	s->edns = q->edns_ok;
	s->do_bit = q->edns.do_bit;
	s->udp_advertise = q->udp_advertise;
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

/* --- the IXFR history --- */

static struct xfr_zone *zone_mut(struct xfr *x, const uint8_t *apex)
{
	return (struct xfr_zone *)find_zone(x, apex);
}

static void hist_clear(struct xfr_zone *xz)
{
	for (size_t k = 0; k < xz->n_hist; k++)
		free(xz->hist[k].blob);
	xz->n_hist = 0;
	xz->hist_bytes = 0;
}

/* Takes the blob.  A difference that does not continue the history
 * (a gap, a serial that went back) starts it anew. */
static void hist_append(struct xfr_zone *xz, uint8_t *blob, size_t len)
{
	uint32_t from, to, nd, na;
	if (zone_diff_header(blob, len, &from, &to, &nd, &na) < 0 || len > xz->max_bytes ||
	    !xz->max_changes) {
		hist_clear(xz);
		free(blob);
		return;
	}
	if (xz->n_hist && xz->hist[xz->n_hist - 1].to != from)
		hist_clear(xz);
	if (xz->n_hist == xz->cap_hist) {
		size_t nc = xz->cap_hist ? xz->cap_hist * 2 : 16;
		struct xfr_hist *nv = realloc(xz->hist, nc * sizeof(*nv));
		if (!nv) {
			hist_clear(xz);
			free(blob);
			return;
		}
		xz->hist = nv;
		xz->cap_hist = nc;
	}
	xz->hist[xz->n_hist++] = (struct xfr_hist){ from, to, blob, len };
	xz->hist_bytes += len;
	/* Capped by count and bytes; the oldest go first. */
	size_t drop = 0;
	while (drop < xz->n_hist &&
	       (xz->n_hist - drop > xz->max_changes || xz->hist_bytes > xz->max_bytes)) {
		xz->hist_bytes -= xz->hist[drop].len;
		free(xz->hist[drop].blob);
		drop++;
	}
	if (drop) {
		memmove(xz->hist, xz->hist + drop, (xz->n_hist - drop) * sizeof(*xz->hist));
		xz->n_hist -= drop;
	}
}

void xfr_history_clear(struct xfr *x, const uint8_t *apex)
{
	struct xfr_zone *xz = zone_mut(x, apex);
	if (xz)
		hist_clear(xz);
}

int xfr_history_add(struct xfr *x, const uint8_t *apex, const uint8_t *blob, size_t len)
{
	struct xfr_zone *xz = zone_mut(x, apex);
	if (!xz)
		return -ENOENT;
	uint8_t *copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, blob, len);
	hist_append(xz, copy, len);
	return 0;
}

void xfr_zone_changed(struct xfr *x, const struct zone *old, const struct zone *z)
{
	struct xfr_zone *xz = zone_mut(x, zone_apex(z));
	if (!xz || !old || zone_serial(old) == zone_serial(z))
		return;
	/* A serial that did not move forward (RFC 1982: older, or 2^31 away)
	 * cannot extend the history: it starts over, and IXFRs get the zone. */
	if (!serial_newer(zone_serial(z), zone_serial(old)) || !xz->max_changes) {
		hist_clear(xz);
		return;
	}
	uint8_t *blob;
	size_t len;
	int rc = zone_diff(old, z, &blob, &len);
	if (rc < 0) {
		log_error("%s: cannot record the change for IXFR (%s); secondaries will use AXFR",
		          xz->name, strerror(-rc));
		hist_clear(xz);
		return;
	}
	uint32_t from, to, nd, na;
	if (zone_diff_header(blob, len, &from, &to, &nd, &na) < 0) {
		/* Not a difference zone_diff made: nothing to serve IXFR from. */
		log_error("%s: the IXFR history entry is malformed; secondaries will use AXFR",
		          xz->name);
		free(blob);
		hist_clear(xz);
		return;
	}
	log_debug("%s: IXFR history %u -> %u: %u records deleted, %u added (%zu bytes)", xz->name,
	          from, to, nd, na, len);
	hist_append(xz, blob, len);
}

/* --- IXFR: the condensed difference from the client's serial --- */

struct cond_rr {
	struct zone_diff_rr rr;
	size_t seq;
};

struct cond_ctx {
	struct cond_rr *v;
	size_t n, cap;
	size_t seq;
	uint32_t dels, adds;      /* seen in the current blob */
	struct zone_diff_rr soa_from;
	bool have_soa_from;
	int err;
};

static int cond_collect(void *arg, const struct zone_diff_rr *rr)
{
	struct cond_ctx *c = arg;
	/* The leading SOA of each section is the difference's frame. */
	uint32_t *k = rr->add ? &c->adds : &c->dels;
	if ((*k)++ == 0) {
		if (!rr->add && !c->have_soa_from) {
			c->soa_from = *rr;
			c->have_soa_from = true;
		}
		return 0;
	}
	if (c->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 64;
		struct cond_rr *nv = realloc(c->v, nc * sizeof(*nv));
		if (!nv)
			return c->err = -ENOMEM;
		c->v = nv;
		c->cap = nc;
	}
	c->v[c->n++] = (struct cond_rr){ *rr, c->seq++ };
	return 0;
}

static int cond_key_cmp(const struct zone_diff_rr *x, const struct zone_diff_rr *y)
{
	size_t lx = dname_len(x->owner), ly = dname_len(y->owner);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	int c = memcmp(x->owner, y->owner, lx);
	if (c)
		return c;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	if (x->ttl != y->ttl)
		return x->ttl < y->ttl ? -1 : 1;
	if (x->rdlen != y->rdlen)
		return x->rdlen < y->rdlen ? -1 : 1;
	return memcmp(x->rdata, y->rdata, x->rdlen);
}

static int cond_cmp(const void *a, const void *b)
{
	const struct cond_rr *x = a, *y = b;
	int c = cond_key_cmp(&x->rr, &y->rr);
	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * The history from `serial` to the served snapshot, condensed into one
 * difference: a record deleted and added back within the range cancels
 * out.  Returns 1 and fills the stream's items, 0 when the history does not
 * reach back to `serial` (the caller sends the whole zone), or -ENOMEM.
 */
static int ixfr_items(struct xfr_stream *s, const struct xfr_zone *xz, uint32_t serial)
{
	size_t first = 0;
	while (first < xz->n_hist && xz->hist[first].from != serial)
		first++;
	if (first == xz->n_hist || xz->hist[xz->n_hist - 1].to != zone_serial(s->z))
		return 0;
	/* A copy of the blobs: the history may move on while we send. */
	size_t total = 0;
	for (size_t i = first; i < xz->n_hist; i++)
		total += xz->hist[i].len;
	s->data = malloc(total);
	if (!s->data)
		return -ENOMEM;
	struct cond_ctx c = { 0 };
	size_t off = 0;
	for (size_t i = first; i < xz->n_hist && !c.err; i++) {
		memcpy(s->data + off, xz->hist[i].blob, xz->hist[i].len);
		c.dels = c.adds = 0;
		int rc = zone_diff_walk(s->data + off, xz->hist[i].len, cond_collect, &c);
		if (rc < 0 && !c.err)
			c.err = rc;
		off += xz->hist[i].len;
	}
	if (c.err || !c.have_soa_from) {
		free(c.v);
		return c.err == -ENOMEM ? -ENOMEM : 0;
	}
	if (c.n > 1)
		qsort(c.v, c.n, sizeof(*c.v), cond_cmp);
	/* Net effect per record: present before iff its first operation is a
	 * deletion, present after iff its last one is an addition. */
	size_t n_out = 0;
	for (size_t i = 0; i < c.n;) {
		size_t j = i;
		while (j + 1 < c.n && cond_key_cmp(&c.v[j + 1].rr, &c.v[i].rr) == 0)
			j++;
		bool before = !c.v[i].rr.add, after = c.v[j].rr.add;
		if (before != after) {
			c.v[n_out] = c.v[i];
			c.v[n_out].rr.add = after;
			n_out++;
		}
		i = j + 1;
	}
	s->rdata = calloc(n_out + 1, sizeof(*s->rdata));
	s->items = calloc(n_out + 5, sizeof(*s->items));
	if (!s->rdata || !s->items) {
		free(c.v);
		return -ENOMEM;
	}
	const struct zone *z = s->z;
	size_t k = 0;
	s->rdata[n_out] = (struct rdata){ c.soa_from.rdlen, c.soa_from.rdata };
	/* RFC 1995 4: current SOA, old SOA, deletions, new SOA, additions, current SOA. */
	s->items[k++] = (struct xfr_item){ zone_apex(z), RR_SOA, 1, zone_soa(z)->ttl, &zone_soa(z)->rr[0] };
	s->items[k++] = (struct xfr_item){ c.soa_from.owner, RR_SOA, 1, c.soa_from.ttl,
	                                   &s->rdata[n_out] };
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			s->items[k++] = (struct xfr_item){ zone_apex(z), RR_SOA, 1, zone_soa(z)->ttl,
			                                   &zone_soa(z)->rr[0] };
		for (size_t i = 0; i < n_out; i++) {
			if (c.v[i].rr.add != (pass == 1))
				continue;
			s->rdata[i] = (struct rdata){ c.v[i].rr.rdlen, c.v[i].rr.rdata };
			s->items[k++] = (struct xfr_item){ c.v[i].rr.owner, c.v[i].rr.type, 1,
			                                   c.v[i].rr.ttl, &s->rdata[i] };
		}
	}
	s->items[k++] = (struct xfr_item){ zone_apex(z), RR_SOA, 1, zone_soa(z)->ttl, &zone_soa(z)->rr[0] };
	s->n_items = k;
	s->incremental = true;
	free(c.v);
	return 1;
}

/* --- the handler --- */

static int handle(void *ctx, struct query *q)
{
	struct xfr *x = ctx;
	uint64_t now = (uint64_t)loop_wall_s(x->l);
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
			uint16_t error;
			if (tsig_verify(q->rx, &t, key, now, &error) == -EBADMSG)
				return refuse(q, RCODE_FORMERR, NULL, NULL, 0, now);
			int v = error;   /* the TSIG error, TSIG_NOERROR when it verified */
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
			/*
			 * A captured signed request verifies again for the whole
			 * fudge window.  Refused as a replayed UPDATE is
			 * (tsig_handler.c, replay.h): NOTAUTH, BADTIME, signed,
			 * our clock in Other Data (RFC 8945 5.2.3).
			 */
			uint64_t window = t.fudge < key->fudge ? t.fudge : key->fudge;
			struct replay *mem = key_replay(x, key);
			int seen = mem ? replay_check(mem, t.time_signed, window, t.mac, t.mac_len, now)
			               : 0;
			if (seen < 0) {
				log_limited(&lim_tsig, LOG_WARN, "%s of %s from %s refused: TSIG key %s: %s "
				            "(BADTIME)", kind, zname, who, kname,
				            seen == -EALREADY ? "a replayed request: its MAC was accepted "
				                                "before"
				                              : "signed before this server could remember it, "
				                                "refused as a possible replay");
				return refuse(q, RCODE_NOTAUTH, req, key, TSIG_BADTIME, now);
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
	int64_t serial = 0;
	if (q->qtype == RR_IXFR) {
		serial = ixfr_serial(q);
		if (serial < 0)
			return refuse(q, RCODE_FORMERR, req, key, 0, now);
		/* RFC 1995 2: a client at our serial or beyond gets our SOA alone;
		 * so does one 2^31 away (RFC 1982 3.2: no order), which then keeps
		 * its copy; only an older one (RFC 1982) gets the changes. */
		if (q->transport == QUERY_UDP ||
		    serial_compare((uint32_t)serial, zone_serial(z)) != SERIAL_LESS)
			return soa_only(q, z, req, key, now);
	} else if (q->transport == QUERY_UDP) {
		/* RFC 5936 4.2: AXFR is not defined over UDP. */
		log_limited(&lim_refuse, LOG_INFO, "AXFR of %s from %s over UDP refused", zname, who);
		return refuse(q, RCODE_REFUSED, req, key, 0, now);
	}
	if (q->qtype == RR_IXFR)
		log_info("IXFR of %s from serial %u to %u for %s (key %s)", zname, (uint32_t)serial,
		         zone_serial(z), who, kname);
	else
		log_info("AXFR of %s (serial %u) to %s (key %s)", zname, zone_serial(z), who, kname);
	return start_stream(q, x, z, xz, q->qtype == RR_IXFR, (uint32_t)serial, req, key);
}

struct xfr_handler xfr_handler(struct xfr *x)
{
	return (struct xfr_handler){ .ctx = x, .handle = handle };
}
