/* SPDX-License-Identifier: MIT */
/*
 * Parsing queries and writing responses.  Everything works in the query's
 * own buffers; compression state lives on the stack.
 */
#include <errno.h>
#include <string.h>

#include "core/wire/dname.h"
#include "core/wire/edns.h"
#include "core/wire/packet.h"
#include "core/wire/query.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"

#define FLAG_QR 0x8000
#define FLAG_AA 0x0400
#define FLAG_TC 0x0200
#define FLAG_RD 0x0100
#define FLAG_CD 0x0010

/* --- parsing --- */

/*
 * The OPT record.  Its fixed part and the framing of its options are RFC
 * 6891's own and are checked whatever the version; what the options say
 * is read only in a message whose question is well formed (`options`).
 * The version is judged by dispatch before anything is made of them
 * (RFC 6891 6.1.3; core/zone/process.c).
 */
static int parse_opt(struct query *q, const uint8_t *owner_wire, uint16_t udp, uint32_t ttl,
                     const uint8_t *rdata, uint16_t rdlen, bool options)
{
	if (q->edns.present)
		return -EBADMSG;          /* RFC 6891 6.1.1: more than one OPT */
	if (owner_wire[0] != 0)
		return -EBADMSG;          /* owner must be the root (6.1.2) */
	q->edns.present = true;
	q->edns.udp_size = udp;
	q->edns.version = (uint8_t)(ttl >> 16);
	q->edns.do_bit = (ttl & 0x8000) != 0;
	return options ? edns_parse_options(&q->edns, rdata, rdlen)
	               : edns_check_options(rdata, rdlen);
}

static int parse_body(struct query *q, struct wire *w);

int packet_parse(struct query *q)
{
	if (q->rx_len < 12)
		return -EINVAL;           /* shorter than a header */
	/* The header as one run: one length check for its six fields. */
	const uint8_t *h = q->rx;
	q->id = wire_get_u16(h);
	q->flags = wire_get_u16(h + 2);
	q->qdcount = wire_get_u16(h + 4);
	q->ancount = wire_get_u16(h + 6);
	q->nscount = wire_get_u16(h + 8);
	q->arcount = wire_get_u16(h + 10);
	struct wire w;
	wire_init_read(&w, q->rx, q->rx_len);
	w.pos = 12;
	if (q->flags & FLAG_QR)
		return -EINVAL;           /* never answer a response: no loops */
	q->opcode = (uint8_t)((q->flags >> 11) & 0xF);
	q->rcode = RCODE_FORMERR;     /* until proven well formed */
	int err = parse_body(q, &w);
	/*
	 * The opcode is judged before the rest: a message with an opcode we do
	 * not implement gets NOTIMP whatever its counts say (a DSO message has
	 * QDCOUNT 0 and TLVs after the header, RFC 8490 5.4; unknown opcodes
	 * likewise), not FORMERR.
	 */
	if (err == -EBADMSG && q->opcode != OPCODE_QUERY && q->opcode != OPCODE_UPDATE) {
		q->rcode = RCODE_NOTIMP;
		return -EOPNOTSUPP;
	}
	return err;
}

/* The question and every record's framing, read with the sticky cursor. */
static int parse_body(struct query *q, struct wire *w)
{
	/*
	 * A message whose QDCOUNT is not 1 is FORMERR, but its questions are
	 * still walked so that the records after them, the OPT among them, can
	 * be found: the FORMERR then carries an OPT (RFC 6891 7), or BADVERS
	 * is answered (6.1.3).  A question that does not parse hides them.
	 */
	bool one = q->qdcount == 1;
	if (one) {
		/* One pass lowercases, notes the label offsets and hashes (dname.h). */
		int len = dname_unpack_question(w->buf, w->cap, &w->pos, q->qname_orig, q->qname,
		                                q->qname_label_off, &q->qname_labels, &q->qname_hash);
		if (len < 0)
			return -EBADMSG;
		uint16_t qtype = wire_read_u16(w);
		uint16_t qclass = wire_read_u16(w);
		if (w->err)
			return -EBADMSG;
		q->qname_len = (uint8_t)len;
		q->qtype = qtype;
		q->qclass = qclass;
		q->question_end = wire_pos(w);
		q->question_ok = true;
	} else {
		for (unsigned i = 0; i < q->qdcount; i++) {
			uint8_t name[DNAME_MAX];
			dname_read(w, name);
			wire_skip(w, 4);      /* type, class */
			if (w->err)
				return -EBADMSG;
		}
	}

	unsigned total = (unsigned)q->ancount + q->nscount + q->arcount;
	for (unsigned i = 0; i < total; i++) {
		uint8_t owner[DNAME_MAX];
		size_t rr_start = wire_pos(w);
		if (wire_left(w) && *wire_here(w) == 0) {
			owner[0] = 0;     /* the root, as an OPT's owner always is: no unpacking */
			wire_skip(w, 1);
		} else {
			dname_read(w, owner);
		}
		uint16_t type = wire_read_u16(w);
		uint16_t rclass = wire_read_u16(w);
		uint32_t ttl = wire_read_u32(w);
		uint16_t rdlen = wire_read_u16(w);
		const uint8_t *rdata = wire_here(w);
		wire_skip(w, rdlen);      /* counts or lengths that lie: -EBADMSG */
		if (w->err)
			return -EBADMSG;
		bool additional = i >= (unsigned)q->ancount + q->nscount;
		if (type == RR_OPT) {
			if (!additional || parse_opt(q, owner, rclass, ttl, rdata, rdlen, one) < 0)
				return -EBADMSG;
			q->opt_offset = rr_start;
		} else if (type == RR_TSIG) {
			if (!additional || i != total - 1)
				return -EBADMSG;  /* TSIG must be the very last record */
			q->tsig_offset = rr_start;
		}
	}
	if (wire_left(w) != 0)
		return -EBADMSG;          /* trailing bytes after the last record */
	q->edns_ok = q->edns.present;
	/* QDCOUNT not 1, or a malformed ECS or COOKIE in a well-formed OPT:
	 * FORMERR, with an OPT in the answer (RFC 6891 7), echoing neither
	 * option. */
	if (!one || q->edns.bad_option)
		return -EBADMSG;
	q->rcode = RCODE_NOERROR;
	return 0;
}

/* --- writing --- */

#define COMP_MAX 48

/*
 * wire_write_bytes, inlined for the writer's many short writes (a record
 * header is one 10-byte copy the compiler turns into two stores).
 */
static inline void put(struct wire *w, const void *p, size_t n)
{
	if (w->err || w->cap - w->pos < n) {
		if (!w->err)
			w->err = -ENOSPC;
		return;
	}
	memcpy(w->buf + w->pos, p, n);
	w->pos += n;
}

static inline void put_u16(struct wire *w, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };
	put(w, b, 2);
}

struct comp {
	uint16_t off[COMP_MAX];
	uint8_t len[COMP_MAX];
	const uint8_t *name[COMP_MAX];   /* lowercase suffix as it sits in memory */
	int n;
	/* The last name written, by address, and where a pointer to it goes:
	 * an RRset's records and its RRSIG share one owner pointer, so most
	 * owners are written without searching. */
	const uint8_t *last;
	uint16_t last_off;
	/* The name plan_blocks point to last, once found in the question. */
	const uint8_t *block_name;
	uint16_t block_off;
	/*
	 * The question's suffixes are pointer targets too, but most answers
	 * only ever need the whole question name (the owner is the qname):
	 * they go into the table on the first search that needs more.
	 */
	const struct query *q;
	bool q_listed;
};

/* Puts the question's suffixes in the table (first, so offsets ascend). */
static void comp_list_question(struct comp *c)
{
	const struct query *q = c->q;
	if (c->q_listed || !q)
		return;
	c->q_listed = true;
	for (unsigned i = 0; i < q->qname_labels && c->n < COMP_MAX; i++) {
		uint8_t at = q->qname_label_off[i];
		c->off[c->n] = (uint16_t)(12 + at);
		c->len[c->n] = (uint8_t)(q->qname_len - at);
		c->name[c->n] = q->qname + at;
		c->n++;
	}
}

/*
 * Writes a lowercase name, compressed against names already in the
 * message.  Suffixes written literally are remembered as pointer targets.
 * The literal labels before the first suffix found go out in one write.
 */
static void write_name_search(struct wire *w, struct comp *c, const uint8_t *name)
{
	size_t total = dname_len(name);
	const struct query *q = c->q;
	if (q && total > 1 && total == q->qname_len && memcmp(name, q->qname, total) == 0) {
		c->last = name;
		c->last_off = 12;
		put_u16(w, 0xC000 | 12);
		return;
	}
	comp_list_question(c);
	size_t start = w->pos;
	const uint8_t *p = name;
	int match = -1;
	while (*p && match < 0) {
		size_t len = total - (size_t)(p - name);
		for (int i = 0; i < c->n; i++) {
			if (c->len[i] == len && memcmp(c->name[i], p, len) == 0) {
				match = i;
				break;
			}
		}
		if (match < 0)
			p += *p + 1;
	}
	size_t literal = (size_t)(p - name);
	for (const uint8_t *s = name; s < p && c->n < COMP_MAX; s += *s + 1) {
		size_t off = start + (size_t)(s - name);
		if (off >= 0x4000)
			break;
		c->off[c->n] = (uint16_t)off;
		c->len[c->n] = (uint8_t)(total - (size_t)(s - name));
		c->name[c->n] = s;
		c->n++;
	}
	put(w, name, literal);
	if (match >= 0)
		put_u16(w, (uint16_t)(0xC000 | c->off[match]));
	else
		put(w, "", 1);
	if (literal && start < 0x4000) {
		c->last = name;
		c->last_off = (uint16_t)start;
	} else if (!literal && match >= 0) {
		c->last = name;
		c->last_off = c->off[match];
	}
}

static inline void write_name(struct wire *w, struct comp *c, const uint8_t *name)
{
	if (name == c->last)
		put_u16(w, (uint16_t)(0xC000 | c->last_off));
	else
		write_name_search(w, c, name);
}

/* Forgets pointer targets at or past a rollback mark. */
static void comp_forget_after(struct comp *c, size_t mark)
{
	while (c->n > 0 && c->off[c->n - 1] >= mark)
		c->n--;
	if (c->last && c->last_off >= mark)
		c->last = NULL;
	if (c->block_name && c->block_off >= mark)
		c->block_name = NULL;
}

static void write_rdata(struct wire *w, struct comp *c, uint16_t type, const struct rdata *rd)
{
	size_t len_at = w->pos;
	wire_write_u16(w, 0);
	size_t start = w->pos;
	const uint8_t *p = rd->data, *end = rd->data + rd->len;
	uint8_t prefix;
	int names = rrset_type_rdata_names(type, &prefix);
	if (names && rd->len >= prefix) {
		wire_write_bytes(w, p, prefix);
		p += prefix;
		for (int i = 0; i < names && p < end; i++) {
			write_name(w, c, p);
			p += dname_len(p);
		}
	}
	if (p > end) {
		/* Names running past the rdata: written as stored, uncompressed. */
		wire_seek(w, start);
		comp_forget_after(c, start);
		p = rd->data;
	}
	wire_write_bytes(w, p, (size_t)(end - p));
	wire_put_u16_at(w, len_at, (uint16_t)(w->pos - start));
}

/*
 * Writes a block encoded ahead; returns its records, or -1 when its name is
 * not in the message yet (the caller writes the RRset instead).
 */
static int write_block(struct wire *w, struct comp *c, const struct plan_block *b)
{
	if (c->block_name != b->name) {
		/* Usually a suffix of the question: found from its label offsets
		 * without listing them in the table (the table would list them
		 * first, so the pointer is the same). */
		int off = -1;
		const struct query *q = c->q;
		for (unsigned i = 0; q && i < q->qname_labels; i++) {
			uint8_t at = q->qname_label_off[i];
			if ((size_t)(q->qname_len - at) == b->name_len &&
			    memcmp(q->qname + at, b->name, b->name_len) == 0) {
				off = 12 + at;
				break;
			}
		}
		if (off < 0) {
			comp_list_question(c);
			for (int i = 0; i < c->n; i++) {
				if (c->len[i] == b->name_len && memcmp(c->name[i], b->name, b->name_len) == 0) {
					off = c->off[i];
					break;
				}
			}
		}
		if (off < 0)
			return -1;
		c->block_name = b->name;   /* forgotten on rollback, like the table */
		c->block_off = (uint16_t)off;
	}
	size_t start = w->pos;
	if (start >= 0x4000)
		return -1;
	put(w, b->data, b->len);
	if (w->err)
		return 0;
	uint16_t self = (uint16_t)(0xC000 | (b->suffix ? start : c->block_off));
	if (b->suffix)
		wire_set_u16(w->buf + start + b->name_at, (uint16_t)(0xC000 | c->block_off));
	for (uint16_t i = 0; i < b->n_self; i++)
		wire_set_u16(w->buf + start + b->self_at[i], self);
	return b->records;
}

/*
 * Room for n bytes written straight into the buffer: a pointer to them
 * with the cursor moved past, or NULL with the cursor's sticky -ENOSPC
 * set.  One bounds check for a fixed-size run instead of one per field.
 */
static inline uint8_t *reserve(struct wire *w, size_t n)
{
	if (w->err)
		return NULL;
	if (w->cap - w->pos < n) {
		w->err = -ENOSPC;
		return NULL;
	}
	uint8_t *p = w->buf + w->pos;
	w->pos += n;
	return p;
}

/*
 * An address record's rdata (4 or 16 bytes) copied with a fixed size,
 * which the compiler makes one or two moves instead of a call to memcpy.
 */
static inline void copy_rdata(uint8_t *to, const uint8_t *from, uint16_t len)
{
	if (len == 4)
		memcpy(to, from, 4);
	else if (len == 16)
		memcpy(to, from, 16);
	else
		memcpy(to, from, len);
}

/* Writes one planned RRset (and its RRSIG); returns records written. */
static int write_rrset(struct wire *w, struct comp *c, const struct plan_rrset *pr)
{
	const struct rrset *s = pr->rrset;
	int written = 0;
	/* Type, class, TTL (and RDLENGTH when the rdata holds no name to
	 * compress) go out in one write. */
	uint8_t h[10];
	wire_set_u16(h, s->type);
	wire_set_u16(h + 2, CLASS_IN);
	wire_set_u32(h + 4, pr->ttl);
	bool names = rrset_type_compressible(s->type);
	if (!pr->sig_only) {
		for (uint16_t i = 0; i < s->count; i++) {
			uint16_t k = pr->reversed ? (uint16_t)(s->count - 1 - i) : i;
			write_name(w, c, pr->owner);
			if (names) {
				put(w, h, 8);
				write_rdata(w, c, s->type, &s->rr[k]);
			} else {
				/* Header and rdata as one run, one bounds check. */
				uint16_t len = s->rr[k].len;
				uint8_t *p = reserve(w, 10 + (size_t)len);
				if (p) {
					wire_set_u16(h + 8, len);
					memcpy(p, h, 10);
					copy_rdata(p + 10, s->rr[k].data, len);
				}
			}
			written++;
		}
	}
	for (unsigned k = 0; (pr->with_sig || pr->sig_only) && k < rrset_sig_count(s); k++) {
		write_name(w, c, pr->owner);
		wire_set_u16(h, RR_RRSIG);
		wire_set_u16(h + 8, s->sig[k].len);
		uint8_t *p = reserve(w, 10 + (size_t)s->sig[k].len);
		if (p) {
			memcpy(p, h, 10);
			memcpy(p + 10, s->sig[k].data, s->sig[k].len);
		}
		written++;
	}
	return written;
}

static size_t opt_size(const struct query *q)
{
	if (!q->edns_ok)
		return 0;
	size_t n = 11;
	if (q->edns.ecs.present)
		n += 4 + 4 + ((size_t)q->edns.ecs.source_prefix + 7) / 8;
	if (q->cookie_out_set)
		n += 4 + 8 + 16;
	if (q->nsid_out_len)
		n += 4 + q->nsid_out_len;
	return n;
}

/* The OPT record, its size known in advance (opt_size), as one run. */
static void write_opt(struct wire *w, const struct query *q, uint8_t ecs_scope)
{
	size_t cookie = q->cookie_out_set ? 4 + 8 + 16 : 0;
	const struct edns_ecs *e = &q->edns.ecs;
	size_t alen = ((size_t)e->source_prefix + 7) / 8;
	size_t ecs = e->present ? 4 + 4 + alen : 0;
	size_t nsid = q->nsid_out_len ? 4 + (size_t)q->nsid_out_len : 0;
	uint8_t *p = reserve(w, 11 + cookie + ecs + nsid);
	if (!p)
		return;
	p[0] = 0;                            /* root owner */
	wire_set_u16(p + 1, RR_OPT);
	wire_set_u16(p + 3, q->udp_advertise ? q->udp_advertise : EDNS_UDP_DEFAULT);
	uint32_t ttl = (uint32_t)(q->rcode >> 4) << 24;   /* extended rcode, version 0 */
	if (q->edns.do_bit)
		ttl |= 0x8000;
	wire_set_u32(p + 5, ttl);
	wire_set_u16(p + 9, (uint16_t)(cookie + ecs + nsid));
	p += 11;
	if (cookie) {
		wire_set_u16(p, EDNS_OPT_COOKIE);
		wire_set_u16(p + 2, 8 + 16);
		memcpy(p + 4, q->edns.cookie, 8);
		memcpy(p + 12, q->cookie_out, 16);
		p += cookie;
	}
	if (ecs) {
		wire_set_u16(p, EDNS_OPT_ECS);
		wire_set_u16(p + 2, (uint16_t)(4 + alen));
		wire_set_u16(p + 4, e->family);
		p[6] = e->source_prefix;
		/* A source prefix of 0 means "no client information": scope 0. */
		p[7] = e->source_prefix ? ecs_scope : 0;
		memcpy(p + 8, e->addr, alen);
		p += ecs;
	}
	if (nsid) {
		wire_set_u16(p, EDNS_OPT_NSID);
		wire_set_u16(p + 2, q->nsid_out_len);
		memcpy(p + 4, q->nsid_out, q->nsid_out_len);
	}
}

static void write_header(struct wire *w, const struct query *q, bool aa, bool tc, uint16_t counts[4])
{
	uint16_t flags = FLAG_QR | (uint16_t)(q->opcode << 11) | (q->flags & (FLAG_RD | FLAG_CD)) |
	                 (q->rcode & 0xF);
	if (aa)
		flags |= FLAG_AA;
	if (tc)
		flags |= FLAG_TC;
	if (w->cap < 12)
		return;
	uint8_t *p = w->buf;
	wire_set_u16(p, q->id);
	wire_set_u16(p + 2, flags);
	for (int i = 0; i < 4; i++)
		wire_set_u16(p + 4 + 2 * i, counts[i]);
}

/* Writes the question as the client sent it (its case preserved). */
static void write_question(struct wire *w, struct comp *c, const struct query *q)
{
	uint8_t *p = reserve(w, (size_t)q->qname_len + 4);
	if (!p)
		return;
	memcpy(p, q->qname_orig, q->qname_len);
	wire_set_u16(p + q->qname_len, q->qtype);
	wire_set_u16(p + q->qname_len + 2, q->qclass);
	/* Pointer targets compare against the lowercase copy, whose labels
	 * were found at parse (see comp_list_question). */
	c->q = q;
	c->q_listed = false;
	/* Owners that are the question (answer.c passes q->qname itself) get a
	 * pointer to it without a search.  Not the root: its one byte is
	 * shorter than a pointer. */
	if (q->qname_len > 1) {
		c->last = q->qname;
		c->last_off = 12;
	}
}

/* An empty compression table: no field is left from the previous message. */
static void comp_init(struct comp *c)
{
	c->n = 0;
	c->last = NULL;
	c->block_name = NULL;
	c->q = NULL;
	c->q_listed = false;
}

void packet_write(struct query *q, const struct answer_plan *plan)
{
	struct wire w;
	size_t limit = q->max_size < q->tx_cap ? q->max_size : q->tx_cap;
	size_t reserve = opt_size(q);
	wire_init(&w, q->tx, limit - reserve);
	struct comp c;
	comp_init(&c);
	uint16_t counts[4] = { 1, 0, 0, 0 };
	bool tc = false;

	q->rcode = plan->rcode;
	w.pos = 12;
	write_question(&w, &c, q);
	size_t after_question = w.pos;

	const struct plan_section *sections[3] = { &plan->an, &plan->ns, &plan->ar };
	for (int s = 0; s < 3 && !tc; s++) {
		for (uint8_t i = 0; i < sections[s]->n; i++) {
			size_t mark = wire_pos(&w);
			const struct plan_rrset *pr = &sections[s]->rr[i];
			int n = pr->block ? write_block(&w, &c, pr->block) : -1;
			if (n < 0)
				n = pr->rrset ? write_rrset(&w, &c, pr) : 0;
			if (w.err == -ENOSPC) {
				wire_seek(&w, mark);
				comp_forget_after(&c, mark);
				/* Missing answers or proofs: truncate.  Missing glue: fine. */
				if (s == 0 || (s == 1 && plan->required_authority) || (s == 1 && !plan->aa))
					tc = true;
				break;
			}
			counts[1 + s] = (uint16_t)(counts[1 + s] + n);
		}
	}
	if (tc) {
		/* A truncated answer carries no records: the client retries over TCP. */
		wire_seek(&w, after_question);
		counts[1] = counts[2] = counts[3] = 0;
	}
	w.cap = limit;
	if (q->edns_ok) {
		write_opt(&w, q, plan->ecs_scope);
		counts[3]++;
	}
	q->tc = tc;
	write_header(&w, q, plan->aa, tc, counts);
	q->tx_len = w.err ? 0 : w.pos;
}

void packet_write_error(struct query *q)
{
	struct wire w;
	size_t limit = q->max_size < q->tx_cap ? q->max_size : q->tx_cap;
	wire_init(&w, q->tx, limit);
	struct comp c;
	comp_init(&c);
	uint16_t counts[4] = { 0, 0, 0, 0 };
	w.pos = 12;
	if (q->question_ok) {
		write_question(&w, &c, q);
		counts[0] = 1;
	}
	if (q->edns_ok) {
		write_opt(&w, q, 0);
		counts[3] = 1;
	}
	write_header(&w, q, false, q->tc, counts);
	q->tx_len = w.err ? 0 : w.pos;
}

void packet_write_truncated(struct query *q)
{
	struct wire w;
	uint16_t counts[4] = { 0, 0, 0, 0 };
	wire_init(&w, q->tx, q->tx_cap);
	w.pos = 12;
	write_header(&w, q, false, true, counts);
	q->tx_len = w.err ? 0 : w.pos;
}
