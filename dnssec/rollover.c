/* SPDX-License-Identifier: MIT */
/*
 * The rollover state machine and its talk with the parent (rollover.h).
 */
#include "dnssec/rollover.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/conf/config.h"
#include "core/conf/log.h"
#include "core/conf/metrics.h"
#include "core/net/loop.h"
#include "core/net/source.h"
#include "core/test_hooks.h"
#include "core/tsig/tsig.h"
#include "core/wire/dname.h"
#include "core/wire/msg.h"
#include "core/wire/query.h"
#include "core/wire/rrset.h"
#include "core/wire/wire.h"
#include "dnssec/ds.h"
#include "dnssec/key.h"
#include "dnssec/keystore.h"
#include "dnssec/keystore_job.h"
#include "dnssec/signer.h"

#define MSG_MAX 1232
#define PARENT_MAX 16
#define ANCESTOR_MAX 8          /* SOA queries for the parent zone: up to 8 labels up */
#define WARN_EVERY_S 3600
/* Why a NOERROR to the push did not count (beside rcodes 1..15 in push_rcode). */
enum { PUSH_UNSIGNED = 100, PUSH_BAD_TSIG, PUSH_BAD_FORMAT };

struct probe {
	struct sockaddr_storage sa;
	socklen_t sa_len;
	char str[INET6_ADDRSTRLEN + 8];
	uint16_t id;
	bool answered, has_ds;
	uint16_t ds_tag;            /* has_ds: the key whose DS it served */
	uint32_t ds_ttl;
	char why[160];              /* why it does not serve the new DS yet */
};

struct rollover {
	struct loop *loop;
	struct signer *signer;
	rollover_rebuild_fn rebuild;
	void *arg;
	uint8_t apex[DNAME_MAX];
	/* The policy (copied: the config goes with its generation, and so do we). */
	uint32_t lifetime, dnskey_ttl, delay;
	char key_dir[KEYSTORE_PATH_MAX];
	struct probe probes[PARENT_MAX];
	size_t n_probes;
	bool has_push;
	struct probe push;
	bool has_push_key;
	struct tsig_key push_key;
	uint8_t push_mac[TSIG_MAC_MAX];   /* the signed push's MAC: its response's MAC covers it */
	size_t push_mac_len;
	struct net_source src;      /* where the push and the polls leave from (core/net/source.h) */
	struct keystore ks;
	int64_t timer;
	int fd4, fd6;
	/* Step 3: the parent zone (from SOA queries), and whether it took our UPDATE. */
	uint8_t parent[DNAME_MAX];
	bool parent_known, pushed;
	int push_rcode;             /* the parent's last refusal or PUSH_*, logged once (-1: none) */
	uint16_t push_tsig_error;   /* with PUSH_BAD_TSIG: which */
	bool push_logged;
	uint16_t soa_ids[ANCESTOR_MAX];
	uint64_t next_at;           /* the next transition (0: none planned) */
	const char *next_what;
	/*
	 * A key change is being re-signed (rebuild called, rollover_resigned
	 * not yet): nothing moves on until the new signatures are served, and
	 * then the time of the step just taken (stamp_t of key stamp_tag) is
	 * moved to that moment, so every wait counts from what resolvers
	 * could actually see.
	 */
	bool awaiting, in_effect;
	uint16_t stamp_tag;
	/*
	 * The store's disk work under way beside the loop (keystore_job.h):
	 * nothing moves on until it is done; then `then` (for key then_tag,
	 * step then_t), and the next step.
	 */
	struct keystore_job *job;
	enum { THEN_STEP, THEN_EFFECT, THEN_START } then;
	uint16_t then_tag;
	enum keystore_time then_t;
	/* A rollover started (rollover_start): answered once its first step is on disk. */
	bool starting;
	rollover_started_fn started_fn;
	void *started_arg;
	uint64_t started_token;
	char started_text[320];     /* fn's text on success */
	enum keystore_time stamp_t;
	char last_warn[256];
	int64_t last_warn_at;
};

static int64_t now_s(const struct rollover *r) { return loop_wall_s(r->loop); }

/* --- keys and roles --- */

static unsigned roles_of(enum keystore_state s)
{
	switch (s) {
	case KS_STANDBY: return SIGNER_PUBLISH;
	case KS_INCOMING: return SIGNER_PUBLISH | SIGNER_SIGN;
	case KS_ACTIVE: return SIGNER_PUBLISH | SIGNER_SIGN | SIGNER_CDS;
	case KS_OUTGOING: return SIGNER_PUBLISH | SIGNER_SIGN;
	default: return 0;
	}
}

static int apply_keys(struct rollover *r, char err[256])
{
	struct signer_key_spec v[KEYSTORE_MAX];
	size_t n = 0;
	/* The active key first: its RRSIG comes first in every answer. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < r->ks.n; i++) {
			const struct keystore_key *k = &r->ks.keys[i];
			if (!roles_of(k->state) || (pass == 0) != (k->state == KS_ACTIVE))
				continue;
			v[n].path = k->file;
			v[n].roles = roles_of(k->state);
			n++;
		}
	return signer_set_keys(r->signer, v, n, err);
}

static void written(void *ctx, const struct keystore_job_out *out);

/* key-status's next transition while a job runs. */
static const char WRITING[] = "writing the key state (the key change takes effect once it is "
                              "on disk)";

/* The job beside the loop; without a thread, done here (and its callback). */
static void submit(struct rollover *r, const struct keystore_job_in *in)
{
	char err[256] = "";
	if (r->loop && (r->job = keystore_job_start(r->loop, in, written, r, err)) != NULL) {
		r->next_at = (uint64_t)now_s(r);
		r->next_what = WRITING;
		return;
	}
	if (r->loop)
		log_warn("%s: keys: the key store's disk work on the loop (%s)", r->ks.zone, err);
	struct keystore_job_out out;
	memset(&out, 0, sizeof(out));
	keystore_job_run(in, &out);
	written(r, &out);
}

/*
 * The store as it is now written beside the loop, then `what` (for key
 * tag, step t), then the next step: a key change takes effect once it is
 * on disk.  unlink_keys (NULL: none): the keys whose files go once it is.
 */
static void persist(struct rollover *r, int what, uint16_t tag, enum keystore_time t,
                    const bool *unlink_keys)
{
	struct keystore_job_in *in = calloc(1, sizeof(*in));
	if (!in) {
		log_error("%s: keys: cannot write the key state, not going on: out of memory",
		          r->ks.zone);
		return;
	}
	r->then = what;
	r->then_tag = tag;
	r->then_t = t;
	in->ks = r->ks;
	for (size_t i = 0; unlink_keys && i < r->ks.n; i++)
		in->unlink[i] = unlink_keys[i];
	submit(r, in);
	free(in);
}

/*
 * After the key set changed in the store (already saved): sign with it.
 * k's time t is the step's; it moves to when the new signatures are
 * served (rollover_resigned), which may be after this returns: the
 * re-signing runs beside the loop.
 */
static void take_effect(struct rollover *r, const struct keystore_key *k, enum keystore_time t)
{
	char err[256];
	if (!r->signer)
		return;
	if (apply_keys(r, err) < 0) {
		log_error("%s: keys: %s", r->ks.zone, err);
		return;
	}
	if (!r->rebuild)
		return;
	r->awaiting = true;
	r->stamp_tag = k->tag;
	r->stamp_t = t;
	r->in_effect = true;
	r->rebuild(r->arg, r->ks.zone);
	r->in_effect = false;
}

static const char *origin(const struct keystore_key *k)
{
	return k->generated ? "generated" : "config";
}

static void set_state(struct rollover *r, struct keystore_key *k, enum keystore_state s,
                      enum keystore_time t)
{
	log_info("%s: keys: key %u (%s) %s -> %s", r->ks.zone, k->tag, origin(k),
	         keystore_state_name(k->state), keystore_state_name(s));
	k->state = s;
	k->t[t] = now_s(r);
}

/* Drops retired generated keys (their files are gone) when the store is full. */
static void make_room(struct rollover *r)
{
	for (size_t i = 0; r->ks.n == KEYSTORE_MAX && i < r->ks.n; i++) {
		if (r->ks.keys[i].state != KS_RETIRED)
			continue;
		memmove(&r->ks.keys[i], &r->ks.keys[i + 1], (r->ks.n - i - 1) * sizeof(r->ks.keys[0]));
		r->ks.n--;
	}
}

/* A new key file in key_dir (keystore_job.h), in the store as standby.  Here: at start. */
static struct keystore_key *generate(struct rollover *r, char err[256])
{
	make_room(r);
	if (r->ks.n == KEYSTORE_MAX) {
		snprintf(err, 256, "%d keys in the store: retire some first", KEYSTORE_MAX);
		return NULL;
	}
	struct keystore_key nk;
	if (keystore_generate(&r->ks, r->key_dir, now_s(r), &nk, err) < 0)
		return NULL;
	r->ks.keys[r->ks.n] = nk;
	log_info("%s: keys: key %u generated: %s", r->ks.zone, nk.tag, nk.file);
	return &r->ks.keys[r->ks.n++];
}

/* A key named in the config, not in the store yet. */
static struct keystore_key *adopt(struct rollover *r, const char *file, enum keystore_state s,
                                  char err[256])
{
	make_room(r);
	if (r->ks.n == KEYSTORE_MAX) {
		snprintf(err, 256, "%d keys in the store", KEYSTORE_MAX);
		return NULL;
	}
	struct key *k = key_load(file, err);
	if (!k)
		return NULL;
	struct keystore_key *nk = &r->ks.keys[r->ks.n++];
	memset(nk, 0, sizeof(*nk));
	nk->tag = key_tag(k);
	key_free(k);
	nk->state = s;
	int64_t now = now_s(r);
	nk->t[KT_CREATED] = nk->t[KT_PUBLISHED] = now;
	if (s == KS_ACTIVE)
		nk->t[KT_SIGNING] = nk->t[KT_PARENT] = now;
	snprintf(nk->file, sizeof(nk->file), "%s", file);
	return nk;
}

/* --- talking to the parent --- */

static int open_socket(struct rollover *r, int family);

static bool to_sockaddr(const struct config_addr *a, struct probe *p)
{
	memset(&p->sa, 0, sizeof(p->sa));
	if (a->family == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)&p->sa;
		s->sin_family = AF_INET;
		s->sin_port = htons(a->port);
		memcpy(&s->sin_addr, a->addr, 4);
		p->sa_len = sizeof(*s);
		char ip[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, a->addr, ip, sizeof(ip));
		snprintf(p->str, sizeof(p->str), "%s:%u", ip, a->port);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&p->sa;
		s->sin6_family = AF_INET6;
		s->sin6_port = htons(a->port);
		memcpy(&s->sin6_addr, a->addr, 16);
		p->sa_len = sizeof(*s);
		char ip[INET6_ADDRSTRLEN];
		inet_ntop(AF_INET6, a->addr, ip, sizeof(ip));
		snprintf(p->str, sizeof(p->str), "[%s]:%u", ip, a->port);
	}
	return true;
}

static uint16_t new_id(void)
{
	uint16_t id;
	if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
		id = (uint16_t)rand();
	return id;
}

static void send_to(struct rollover *r, const struct probe *p, const uint8_t *msg, size_t len)
{
	int fd = p->sa.ss_family == AF_INET ? r->fd4 : r->fd6;
	if (fd < 0)
		fd = open_socket(r, p->sa.ss_family);
	if (fd < 0 || sendto(fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL,
	                     (const struct sockaddr *)&p->sa, p->sa_len) < 0)
		log_warn("%s: keys: cannot send to %s: %s", r->ks.zone, p->str,
		         fd < 0 ? "no socket" : strerror(errno));
}

/* A query (RD clear: the parent's servers are authoritative), with EDNS. */
static size_t build_query(uint8_t *buf, uint16_t id, const uint8_t *name, uint16_t type)
{
	struct wire w;
	wire_init(&w, buf, MSG_MAX);
	wire_write_u16(&w, id);
	wire_write_u16(&w, 0);
	wire_write_u16(&w, 1);
	wire_write_u16(&w, 0);
	wire_write_u16(&w, 0);
	wire_write_u16(&w, 1);
	wire_write_bytes(&w, name, dname_len(name));
	wire_write_u16(&w, type);
	wire_write_u16(&w, CLASS_IN);
	static const uint8_t opt[11] = { 0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0 };   /* 1232 */
	wire_write_bytes(&w, opt, sizeof(opt));
	return w.err ? 0 : wire_pos(&w);
}

/* The SHA-256 DS of the active key: what the parent should serve. */
static int active_ds(struct rollover *r, uint8_t *ds, size_t cap, uint16_t *tag)
{
	struct keystore_key *k = keystore_first(&r->ks, KS_ACTIVE);
	char err[256];
	struct key *key = k ? key_load(k->file, err) : NULL;
	if (!key)
		return -ENOENT;
	*tag = k->tag;
	int len = ds_rdata(r->apex, key_dnskey(key), KEY_DNSKEY_LEN, DS_DIGEST_SHA256, ds, cap);
	key_free(key);
	return len;
}

/* RFC 2136: in the parent zone, the DS RRset of our name replaced by the new DS. */
static void send_push(struct rollover *r)
{
	uint8_t ds[DS_RDATA_MAX], buf[MSG_MAX];
	uint16_t tag;
	int dlen = active_ds(r, ds, sizeof(ds), &tag);
	if (dlen < 0)
		return;
	struct wire w;
	wire_init(&w, buf, sizeof(buf));
	r->push.id = new_id();
	wire_write_u16(&w, r->push.id);
	wire_write_u16(&w, (uint16_t)(OPCODE_UPDATE << 11));
	wire_write_u16(&w, 1);    /* zone */
	wire_write_u16(&w, 0);    /* prerequisites */
	wire_write_u16(&w, 2);    /* updates */
	wire_write_u16(&w, 0);
	wire_write_bytes(&w, r->parent, dname_len(r->parent));
	wire_write_u16(&w, RR_SOA);
	wire_write_u16(&w, CLASS_IN);
	/* Delete the RRset (class ANY, RFC 2136 2.5.2), then add the new DS. */
	wire_write_bytes(&w, r->apex, dname_len(r->apex));
	wire_write_u16(&w, RR_DS);
	wire_write_u16(&w, CLASS_ANY);
	wire_write_u32(&w, 0);
	wire_write_u16(&w, 0);
	wire_write_bytes(&w, r->apex, dname_len(r->apex));
	wire_write_u16(&w, RR_DS);
	wire_write_u16(&w, CLASS_IN);
	wire_write_u32(&w, r->dnskey_ttl);
	wire_write_u16(&w, (uint16_t)dlen);
	wire_write_bytes(&w, ds, (size_t)dlen);
	if (w.err)
		return;
	size_t len = wire_pos(&w);
	if (r->has_push_key) {
		struct tsig_rr f;
		tsig_rr_init(&f, &r->push_key, (uint64_t)now_s(r), r->push.id);
		int mac = tsig_append(buf, &len, sizeof(buf), &f, &r->push_key, NULL, 0, r->push_mac);
		if (mac < 0)
			return;
		r->push_mac_len = (size_t)mac;
	}
	char pz[DNAME_MAX * 4 + 2];
	dname_to_str(r->parent, pz, sizeof(pz));
	/* Said once; the rounds that send it again (until the parent answers NOERROR) at debug. */
	log_msg(r->push_rcode < 0 && !r->push_logged ? LOG_INFO : LOG_DEBUG,
	        "%s: keys: pushing DS %u to %s (UPDATE of zone %s)", r->ks.zone, tag, r->push.str, pz);
	r->push_logged = true;
	send_to(r, &r->push, buf, len);
}

/*
 * What the parent's servers said is about one key's DS: a new key that
 * becomes the parent's starts with none of them having answered for it.
 * (Kept, the last round of the previous rollover, in which every server
 * served that key's DS, passed for "every server serves the new DS" the
 * moment the next rollover reached step 2: the old key was withdrawn
 * while the parent still served only its DS, and validators failed.)
 */
static void probes_forget(struct rollover *r)
{
	for (size_t i = 0; i < r->n_probes; i++) {
		struct probe *p = &r->probes[i];
		p->id = 0;
		p->answered = p->has_ds = false;
		p->ds_tag = 0;
		snprintf(p->why, sizeof(p->why), "not asked yet");
	}
}

/* One round: the DS asked of every parent server; the parent zone found first
 * when a push is due; the push (again) until the parent took it. */
static void poll_parents(struct rollover *r)
{
	uint8_t buf[MSG_MAX];
	for (size_t i = 0; i < r->n_probes; i++) {
		struct probe *p = &r->probes[i];
		p->id = new_id();
		p->answered = p->has_ds = false;
		snprintf(p->why, sizeof(p->why), "no answer");
		size_t len = build_query(buf, p->id, r->apex, RR_DS);
		if (len)
			send_to(r, p, buf, len);
	}
	if (!r->has_push || r->pushed)
		return;
	if (r->parent_known) {
		send_push(r);
		return;
	}
	/* The parent zone: the closest ancestor whose SOA the push target serves. */
	const uint8_t *name = r->apex;
	for (int d = 0; d < ANCESTOR_MAX; d++) {
		if (name[0] == 0)
			break;
		name += name[0] + 1;
		r->soa_ids[d] = new_id();
		size_t len = build_query(buf, r->soa_ids[d], name, RR_SOA);
		if (len)
			send_to(r, &r->push, buf, len);
		if (name[0] == 0)
			break;
	}
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
	return x->sin6_port == y->sin6_port &&
	       memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
}

static void tick(struct loop *l, void *arg);
static void schedule(struct rollover *r, uint64_t delay_ms);

/* A DS answer from parent server p: does it hold the active key's DS? */
static void on_ds_answer(struct rollover *r, struct probe *p, const uint8_t *msg, size_t len)
{
	uint8_t want[DS_RDATA_MAX];
	uint16_t tag = 0;   /* set when wlen > 0, the only case that reads it */
	int wlen = active_ds(r, want, sizeof(want), &tag);
	struct wire w;
	wire_init_read(&w, msg, len);
	wire_skip(&w, 2);
	uint16_t flags = wire_read_u16(&w), qd = wire_read_u16(&w), an = wire_read_u16(&w);
	wire_skip(&w, 4);
	p->answered = true;
	if ((flags & 0xf) != 0) {
		snprintf(p->why, sizeof(p->why), "answered rcode %u", flags & 0xf);
		return;
	}
	if (!(flags & 0x0400)) {
		snprintf(p->why, sizeof(p->why), "not authoritative for the DS (no AA)");
		return;
	}
	uint8_t qn[DNAME_MAX];
	uint16_t qt, qc;
	for (uint16_t i = 0; i < qd; i++)
		msg_read_question(&w, qn, &qt, &qc);
	char others[96] = "";
	size_t olen = 0;
	for (uint16_t i = 0; i < an && !w.err; i++) {
		struct msg_rr rr;
		if (msg_read_rr(&w, &rr) < 0)
			break;
		if (rr.type != RR_DS || !dname_equal(rr.name, r->apex) || rr.rdlen < 4)
			continue;
		const uint8_t *rd = msg + rr.rdata_off;
		if (wlen > 0 && rr.rdlen == (uint16_t)wlen && memcmp(rd, want, (size_t)wlen) == 0) {
			p->has_ds = true;
			p->ds_tag = tag;
			p->ds_ttl = rr.ttl;
			return;
		}
		if (olen < sizeof(others) - 8)
			olen += (size_t)snprintf(others + olen, sizeof(others) - olen, "%s%u",
			                         olen ? " " : "", wire_get_u16(rd));
	}
	snprintf(p->why, sizeof(p->why), "serves %s%s, not DS %u", olen ? "DS " : "no DS",
	         others, tag);
}

static void on_soa_answer(struct rollover *r, const uint8_t *msg, size_t len)
{
	struct wire w;
	wire_init_read(&w, msg, len);
	wire_skip(&w, 2);
	uint16_t flags = wire_read_u16(&w), qd = wire_read_u16(&w), an = wire_read_u16(&w);
	wire_skip(&w, 4);
	if ((flags & 0xf) != 0 || !(flags & 0x0400) || qd != 1)
		return;
	uint8_t qn[DNAME_MAX];
	uint16_t qt, qc;
	msg_read_question(&w, qn, &qt, &qc);
	for (uint16_t i = 0; i < an && !w.err; i++) {
		struct msg_rr rr;
		if (msg_read_rr(&w, &rr) < 0)
			return;
		/* The closest ancestor wins: answers come in any order. */
		if (rr.type == RR_SOA && dname_equal(rr.name, qn) &&
		    (!r->parent_known || dname_label_count(qn) > dname_label_count(r->parent))) {
			memcpy(r->parent, qn, dname_len(qn));
			if (!r->parent_known) {
				char s[DNAME_MAX * 4 + 2];
				dname_to_str(qn, s, sizeof(s));
				log_info("%s: keys: the parent zone is %s (SOA at %s)", r->ks.zone, s,
				         r->push.str);
			}
			r->parent_known = true;
			send_push(r);
			return;
		}
	}
}

/*
 * A NOERROR answer to our signed push counts only when its TSIG verifies
 * against the push key, its MAC chained to the request's (RFC 8945 section
 * 5.3, and 5.4 for the client: a response without TSIG or whose MAC fails
 * is discarded).  Anyone on the path could forge an unsigned NOERROR and
 * stop the pushes while the parent never took the DS.  A discarded answer
 * is logged (once per reason, like a refusal) and the push goes again next
 * round.  A refusal needs no proof: it changes nothing here.
 */
static bool push_reply_verifies(struct rollover *r, const uint8_t *msg, size_t len)
{
	struct tsig_rr t;
	int found = tsig_find(msg, len, &t);
	int why = found < 0 ? PUSH_BAD_FORMAT : found == 0 ? PUSH_UNSIGNED : 0;
	uint16_t error = TSIG_NOERROR;
	if (!why && tsig_verify_response(msg, &t, &r->push_key, r->push_mac, r->push_mac_len, false,
	                                 (uint64_t)now_s(r), &error) < 0)
		why = PUSH_BAD_TSIG;
	if (!why)
		return true;
	if (why != r->push_rcode || (why == PUSH_BAD_TSIG && error != r->push_tsig_error))
		log_warn("%s: keys: the parent's (%s) NOERROR to the DS UPDATE is discarded: %s%s "
		         "(the push goes again each round)", r->ks.zone, r->push.str,
		         why == PUSH_BAD_FORMAT ? "malformed TSIG"
		         : why == PUSH_UNSIGNED ? "no TSIG, and the UPDATE was signed"
		         : "its TSIG does not verify: ",
		         why != PUSH_BAD_TSIG ? "" : error == TSIG_BADKEY ? "BADKEY (another key)"
		         : error == TSIG_BADTIME ? "BADTIME" : error == TSIG_BADTRUNC ? "BADTRUNC"
		         : "BADSIG (wrong MAC)");
	r->push_rcode = why;
	r->push_tsig_error = error;
	return false;
}

static void on_answer(struct rollover *r, const uint8_t *msg, size_t len,
                      const struct sockaddr_storage *from)
{
	if (len < MSG_HEADER_LEN || !(wire_get_u16(msg + 2) & 0x8000))
		return;
	uint16_t id = wire_get_u16(msg), flags = wire_get_u16(msg + 2);
	unsigned opcode = (flags >> 11) & 0xf;
	if (r->has_push && same_addr(&r->push.sa, from)) {
		if (opcode == OPCODE_UPDATE && id == r->push.id && !r->pushed) {
			unsigned rcode = flags & 0xf;
			if (rcode == 0 && r->has_push_key && !push_reply_verifies(r, msg, len))
				return;
			if (rcode == 0)
				log_info("%s: keys: the parent (%s) took the DS", r->ks.zone, r->push.str);
			else if ((int)rcode != r->push_rcode)
				log_warn("%s: keys: the parent (%s) refused the DS UPDATE: rcode %u "
				         "(sent again each round)", r->ks.zone, r->push.str, rcode);
			r->push_rcode = (int)rcode;
			r->pushed = rcode == 0;
			return;
		}
		for (int d = 0; opcode == OPCODE_QUERY && d < ANCESTOR_MAX; d++)
			if (r->soa_ids[d] == id) {
				on_soa_answer(r, msg, len);
				break;
			}
	}
	for (size_t i = 0; opcode == OPCODE_QUERY && i < r->n_probes; i++) {
		struct probe *p = &r->probes[i];
		if (p->id != id || p->answered || !same_addr(&p->sa, from))
			continue;
		on_ds_answer(r, p, msg, len);
		bool all = true;
		for (size_t k = 0; k < r->n_probes; k++)
			all = all && r->probes[k].has_ds;
		if (all)
			schedule(r, 0);   /* every server has it: on at once */
		return;
	}
}

static void on_read(struct loop *l, int fd, int events, void *arg)
{
	(void)l;
	(void)events;
	for (int i = 0; i < 64; i++) {
		uint8_t buf[4096];
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
		if (n < 0)
			return;
		on_answer(arg, buf, (size_t)n, &from);
	}
}

static int open_socket(struct rollover *r, int family)
{
	/* The parent's ACL names our address, as a secondary's names the NOTIFY's. */
	int fd = net_source_socket(&r->src, family, false);
	if (fd < 0) {
		log_warn("%s: keys: no socket from the source address: %s", r->ks.zone,
		         strerror(-fd));
		return -1;
	}
	if (loop_add_fd(r->loop, fd, LOOP_READ, on_read, r) < 0) {
		close(fd);
		return -1;
	}
	if (family == AF_INET)
		r->fd4 = fd;
	else
		r->fd6 = fd;
	return fd;
}

/* --- the state machine --- */

static uint32_t poll_interval_s(const struct rollover *r)
{
	uint32_t v = r->dnskey_ttl / 2;
	return v < 1 ? 1 : v > 60 ? 60 : v;
}

static void schedule(struct rollover *r, uint64_t delay_ms)
{
	if (!r->loop)
		return;
	if (r->timer > 0)
		loop_timer_cancel(r->loop, r->timer);
	r->timer = loop_timer_add(r->loop, delay_ms, tick, r);
}

static void plan(struct rollover *r, uint64_t at, const char *what)
{
	r->next_at = at;
	r->next_what = what;
}

/* Warns when the reason changes, and again every hour while it lasts. */
static void warn_parent(struct rollover *r, const char *why)
{
	int64_t now = now_s(r);
	if (strcmp(why, r->last_warn) == 0 && now - r->last_warn_at < WARN_EVERY_S)
		return;
	snprintf(r->last_warn, sizeof(r->last_warn), "%s", why);
	r->last_warn_at = now;
	log_warn("%s: keys: the parent does not serve the new DS yet, the old key stays: %s",
	         r->ks.zone, why);
}

/* Step 1 for key nk: published (if not yet) and signing; in effect once on disk. */
static void begin_roll(struct rollover *r, struct keystore_key *nk)
{
	if (!nk->t[KT_PUBLISHED])
		nk->t[KT_PUBLISHED] = now_s(r);
	set_state(r, nk, KS_INCOMING, KT_SIGNING);
	persist(r, THEN_EFFECT, nk->tag, KT_SIGNING, NULL);
}

/* A rollover begins: with a standby key, or a key generated beside the loop first. */
static int start_roll(struct rollover *r, char err[256])
{
	struct keystore_key *nk = keystore_first(&r->ks, KS_STANDBY);
	if (nk) {
		begin_roll(r, nk);
		return 0;
	}
	make_room(r);
	if (r->ks.n == KEYSTORE_MAX) {
		snprintf(err, 256, "%d keys in the store: retire some first", KEYSTORE_MAX);
		return -EIO;
	}
	struct keystore_job_in *in = calloc(1, sizeof(*in));
	if (!in) {
		snprintf(err, 256, "out of memory");
		return -ENOMEM;
	}
	in->ks = r->ks;
	in->generate = true;
	snprintf(in->key_dir, sizeof(in->key_dir), "%s", r->key_dir);
	in->now = now_s(r);
	r->then = THEN_START;
	submit(r, in);
	free(in);
	return 0;
}

static void step(struct rollover *r);

/* A rollover_start()'s answer, once. */
static void answer_start(struct rollover *r, bool ok, const char *text)
{
	rollover_started_fn fn = r->started_fn;
	r->starting = false;
	r->started_fn = NULL;
	if (fn)
		fn(r->started_arg, r->started_token, ok, text);
}

/* A job is done (on the loop): what waited for it, then the next step. */
static void written(void *ctx, const struct keystore_job_out *out)
{
	struct rollover *r = ctx;
	r->job = NULL;
	char text[640];
	if (out->rc < 0) {
		bool start = r->then == THEN_START;
		snprintf(text, sizeof(text), "%.200s: keys: %s, not going on: %.200s", r->ks.zone,
		         start ? "cannot generate the new key" : "cannot write the key state",
		         out->err);
		log_error("%s", text);
		if (r->starting)
			answer_start(r, false, text);
		if (start && r->loop) {
			plan(r, (uint64_t)now_s(r) + 60, "retry the rollover");
			schedule(r, 60000);
		}
		return;
	}
	if (r->then == THEN_START) {
		/* Room was made before the job; nothing changed the store since. */
		struct keystore_key *nk = &r->ks.keys[r->ks.n++];
		*nk = out->key;
		log_info("%s: keys: key %u generated: %s", r->ks.zone, nk->tag, nk->file);
		begin_roll(r, nk);
		return;
	}
	for (size_t i = 0; i < r->ks.n; i++)
		if (out->unlinked[i])
			log_info("%s: keys: key %u deleted: %s", r->ks.zone, r->ks.keys[i].tag,
			         r->ks.keys[i].file);
	if (r->then == THEN_EFFECT) {
		struct keystore_key *k = NULL;
		for (size_t i = 0; i < r->ks.n && !k; i++)
			if (r->ks.keys[i].tag == r->then_tag)
				k = &r->ks.keys[i];
		if (r->starting && k) {
			log_info("%s: keys: rollover started: key %u signs beside the old one", r->ks.zone,
			         k->tag);
			answer_start(r, true, r->started_text);
		}
		if (k)
			take_effect(r, k, r->then_t);
	}
	/* Inside take_effect (a re-signing that served at once), its caller steps. */
	if (!r->in_effect)
		step(r);
}

/*
 * A test hook (core/test_hooks.h; always false without the hooks): while
 * the named file exists, a lifetime that is over does not start a rollover.
 * tests/integration/test_rollover.py holds each rollover until every
 * validator has answered with the keys as they are, however slowly a
 * loaded machine started them.
 */
static bool lifetime_held(void)
{
	const char *path = test_hook(TEST_HOOK_ROLLOVER_HOLD);
	struct stat st;
	return path && stat(path, &st) == 0;
}

/* One step when it is due; then the next wake-up. */
static void step(struct rollover *r)
{
	int64_t now = now_s(r);
	struct keystore_key *in = keystore_first(&r->ks, KS_INCOMING);
	struct keystore_key *act = keystore_first(&r->ks, KS_ACTIVE);
	struct keystore_key *out = keystore_first(&r->ks, KS_OUTGOING);
	uint64_t due = 0;
	plan(r, 0, NULL);
	if (r->awaiting) {
		/* rollover_resigned() steps on. */
		plan(r, (uint64_t)now, "re-signing with the new key set (the next step waits until it "
		     "is served)");
		return;
	}
	if (r->job) {
		/* written() steps on. */
		plan(r, (uint64_t)now, WRITING);
		return;
	}

	/* 5. A withdrawn key has left every cache: retired, its file gone if ours. */
	bool retired[KEYSTORE_MAX] = { false }, any_retired = false;
	for (size_t i = 0; i < r->ks.n; i++) {
		struct keystore_key *k = &r->ks.keys[i];
		if (k->state != KS_REMOVED)
			continue;
		uint64_t at = (uint64_t)k->t[KT_WITHDRAWN] + r->dnskey_ttl + r->delay;
		if ((uint64_t)now < at) {
			plan(r, at, "retire the withdrawn key");
			due = at;
			continue;
		}
		set_state(r, k, KS_RETIRED, KT_RETIRED);
		retired[i] = k->generated;
		any_retired = true;
	}
	if (any_retired) {
		persist(r, THEN_STEP, 0, KT_RETIRED, retired);
		return;
	}

	if (in && act) {
		/* 2. Every cache has the new DNSKEY and every RRset signed by it. */
		uint32_t ttl = r->signer ? signer_max_ttl(r->signer) : 0;
		if (ttl < r->dnskey_ttl)
			ttl = r->dnskey_ttl;
		uint64_t at = (uint64_t)in->t[KT_SIGNING] + ttl + r->delay;
		if ((uint64_t)now < at) {
			plan(r, at, "the new key becomes the parent's (CDS, DS push)");
		} else {
			set_state(r, act, KS_OUTGOING, KT_WITHDRAWN);
			act->t[KT_WITHDRAWN] = 0;   /* stamped when it really leaves */
			set_state(r, in, KS_ACTIVE, KT_PARENT);
			r->pushed = false;
			r->push_logged = false;
			r->push_rcode = -1;
			probes_forget(r);
			persist(r, THEN_EFFECT, in->tag, KT_PARENT, NULL);
			return;
		}
	} else if (act && out) {
		if (!act->t[KT_DS_SEEN]) {
			/* 3. Until every parent server serves the new DS. */
			bool all = r->n_probes > 0;
			char why[256] = "";
			size_t wl = 0;
			for (size_t i = 0; i < r->n_probes; i++) {
				bool has = r->probes[i].has_ds && r->probes[i].ds_tag == act->tag;
				all = all && has;
				if (!has && wl < sizeof(why) - 2)
					wl += (size_t)snprintf(why + wl, sizeof(why) - wl, "%s%s: %s",
					                       wl ? "; " : "", r->probes[i].str,
					                       r->probes[i].why);
			}
			if (all) {
				uint32_t ds_ttl = 0;
				for (size_t i = 0; i < r->n_probes; i++)
					if (r->probes[i].ds_ttl > ds_ttl)
						ds_ttl = r->probes[i].ds_ttl;
				r->ks.ds_ttl = ds_ttl;
				act->t[KT_DS_SEEN] = now;
				log_info("%s: keys: every parent server serves DS %u (TTL %u)", r->ks.zone,
				         act->tag, ds_ttl);
				r->last_warn[0] = '\0';
				persist(r, THEN_STEP, 0, KT_DS_SEEN, NULL);
				return;
			} else {
				/* A parent is given propagation_delay and two polls before we warn. */
				if (now - act->t[KT_PARENT] >= (int64_t)(r->delay + 2 * poll_interval_s(r)))
					warn_parent(r, why);
				poll_parents(r);
				plan(r, (uint64_t)now + poll_interval_s(r), "ask the parent for the new DS");
				schedule(r, (uint64_t)poll_interval_s(r) * 1000);
				return;
			}
		}
		/* 4. The old DS has left every cache: the old key goes. */
		uint64_t at = (uint64_t)act->t[KT_DS_SEEN] + r->ks.ds_ttl + r->delay;
		if ((uint64_t)now < at) {
			plan(r, at, "withdraw the old key");
		} else {
			set_state(r, out, KS_REMOVED, KT_WITHDRAWN);
			log_info("%s: keys: rollover done: key %u alone signs", r->ks.zone, act->tag);
			persist(r, THEN_EFFECT, out->tag, KT_WITHDRAWN, NULL);
			return;
		}
	} else if (act && !in && !out && r->lifetime) {
		/* 1. The active key's lifetime is over. */
		uint64_t at = (uint64_t)act->t[KT_SIGNING] + r->lifetime;
		if ((uint64_t)now >= at && lifetime_held()) {
			plan(r, (uint64_t)now + 1, "start a rollover (lifetime; held by a test)");
			schedule(r, 1000);
			return;
		}
		if ((uint64_t)now >= at) {
			char err[256];
			if (start_roll(r, err) < 0) {
				log_error("%s: keys: cannot start the rollover: %s", r->ks.zone, err);
				plan(r, (uint64_t)now + 60, "retry the rollover");
				schedule(r, 60000);
				return;
			}
			/* The job's end (written) steps on. */
			return;
		}
		if (!r->next_at || at < r->next_at)
			plan(r, at, "start a rollover (lifetime)");
	}
	if (due && (!r->next_at || due < r->next_at))
		plan(r, due, "retire the withdrawn key");
	if (r->next_at)
		schedule(r, ((uint64_t)(r->next_at > (uint64_t)now ? r->next_at - (uint64_t)now : 0)) * 1000);
}

void rollover_resigned(struct rollover *r)
{
	if (!r->awaiting)
		return;
	r->awaiting = false;
	struct keystore_key *k = NULL;
	for (size_t i = 0; i < r->ks.n && !k; i++)
		if (r->ks.keys[i].tag == r->stamp_tag)
			k = &r->ks.keys[i];
	int64_t now = now_s(r);
	if (k && k->t[r->stamp_t] && k->t[r->stamp_t] < now) {
		/* A key that starts to sign was published with it (not a standby
		 * key, published long before). */
		if (r->stamp_t == KT_SIGNING && k->t[KT_PUBLISHED] == k->t[KT_SIGNING])
			k->t[KT_PUBLISHED] = now;
		k->t[r->stamp_t] = now;
		log_info("%s: keys: the new key set is served", r->ks.zone);
		/* Written beside the loop; written() steps on (unless in_effect:
		 * then take_effect's caller does). */
		persist(r, THEN_STEP, k->tag, r->stamp_t, NULL);
		return;
	}
	log_info("%s: keys: the new key set is served", r->ks.zone);
	if (!r->in_effect)
		step(r);
}

bool rollover_awaits_resign(const struct rollover *r)
{
	return r && r->awaiting;
}

static void tick(struct loop *l, void *arg)
{
	struct rollover *r = arg;
	(void)l;
	r->timer = 0;
	step(r);
}

int rollover_start(struct rollover *r, rollover_started_fn fn, void *arg, uint64_t token,
                   const char *ok_text, char err[256])
{
	if (keystore_first(&r->ks, KS_INCOMING) || keystore_first(&r->ks, KS_OUTGOING) ||
	    r->starting) {
		snprintf(err, 256, "%.200s: a rollover is already running (see key-status)", r->ks.zone);
		return -EBUSY;
	}
	if (r->job || r->awaiting) {
		snprintf(err, 256, "%.100s: a key change is being written or signed; try again when "
		         "key-status no longer says so", r->ks.zone);
		return -EBUSY;
	}
	r->starting = true;
	r->started_fn = fn;
	r->started_arg = arg;
	r->started_token = token;
	snprintf(r->started_text, sizeof(r->started_text), "%s", ok_text ? ok_text : "");
	int rc = start_roll(r, err);
	if (rc < 0) {
		r->starting = false;
		r->started_fn = NULL;
		return rc;
	}
	if (!r->starting)
		return 0;   /* answered already: done here, for want of a thread */
	return 1;
}

/* --- setup --- */

static void copy_policy(struct rollover *r, const struct config_key_policy *kp)
{
	r->lifetime = kp->lifetime_s;
	r->dnskey_ttl = kp->dnskey_ttl_s;
	r->delay = kp->propagation_delay_s;
	snprintf(r->key_dir, sizeof(r->key_dir), "%s", kp->key_dir ? kp->key_dir : ".");
	for (size_t i = 0; i < kp->n_parent && r->n_probes < PARENT_MAX; i++)
		to_sockaddr(&kp->parent[i], &r->probes[r->n_probes++]);
	if (kp->has_ds_push) {
		r->has_push = true;
		to_sockaddr(&kp->ds_push, &r->push);
	}
}

struct rollover *rollover_new(const struct config_zone *zc, struct loop *loop,
                              const struct net_source *src, char err[256])
{
	const struct config_key_policy *kp = &zc->key_policy;
	struct rollover *r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, 256, "out of memory");
		return NULL;
	}
	r->loop = loop;
	if (src)
		r->src = *src;
	r->fd4 = r->fd6 = -1;
	r->push_rcode = -1;
	if (dname_from_str(zc->zone, r->apex) < 0) {
		snprintf(err, 256, "%.200s: not a valid zone name", zc->zone);
		goto fail;
	}
	dname_lower(r->apex);
	copy_policy(r, kp);
	if (kp->has_ds_push_key) {
		const struct config_tsig_key *k = &kp->ds_push_key;
		if (tsig_key_init(&r->push_key, k->name, k->algorithm, k->secret, k->secret_len,
		                  k->fudge, err) < 0)
			goto fail;
		r->has_push_key = true;
	}
	if (keystore_load(&r->ks, r->key_dir, zc->zone, err) < 0)
		goto fail;
	bool changed = false;
	for (size_t i = 0; i < zc->n_keys; i++) {
		const char *file = zc->keys[i].key_path;
		struct keystore_key *k = keystore_find_file(&r->ks, file);
		if (k) {
			if (k->state == KS_RETIRED || k->state == KS_REMOVED)
				log_warn("%s: keys: the config names key %u (%s), which is %s: it no longer "
				         "signs; remove it from [[zones.keys]]", r->ks.zone, k->tag, file,
				         keystore_state_name(k->state));
			continue;
		}
		bool has_signer = keystore_first(&r->ks, KS_ACTIVE) != NULL;
		k = adopt(r, file, has_signer ? KS_STANDBY : KS_ACTIVE, err);
		if (!k)
			goto fail;
		log_info("%s: keys: key %u (%s) joins as %s", r->ks.zone, k->tag, file,
		         keystore_state_name(k->state));
		changed = true;
	}
	if (!keystore_first(&r->ks, KS_ACTIVE)) {
		if (!loop) {
			snprintf(err, 256, "%.100s: no key yet: serve generates the first one in %.100s",
			         r->ks.zone, r->key_dir);
			return r;   /* check mode: nothing more to read */
		}
		struct keystore_key *k = generate(r, err);
		if (!k)
			goto fail;
		k->state = KS_ACTIVE;
		k->t[KT_PUBLISHED] = k->t[KT_SIGNING] = k->t[KT_PARENT] = now_s(r);
		log_warn("%s: keys: first key %u generated; give its DS to the parent "
		         "(geoacme ds)", r->ks.zone, k->tag);
		changed = true;
	}
	/* A retired generated key whose deletion a crash cut short. */
	for (size_t i = 0; loop && i < r->ks.n; i++)
		if (r->ks.keys[i].state == KS_RETIRED && r->ks.keys[i].generated)
			unlink(r->ks.keys[i].file);
	if (changed && loop && keystore_save(&r->ks, err) < 0)
		goto fail;
	return r;
fail:
	rollover_free(r);
	return NULL;
}

void rollover_free(struct rollover *r)
{
	if (!r)
		return;
	if (r->timer > 0)
		loop_timer_cancel(r->loop, r->timer);
	/* A write under way completes first (a short wait, at a reload or the
	 * end); a rollover_start() waiting for it is not answered: its client
	 * sees the connection close. */
	keystore_job_free(r->job);
	r->job = NULL;
	for (int i = 0; i < 2; i++) {
		int fd = i ? r->fd6 : r->fd4;
		if (fd >= 0) {
			loop_del_fd(r->loop, fd);
			close(fd);
		}
	}
	explicit_bzero(&r->push_key, sizeof(r->push_key));
	free(r);
}

const char *rollover_first_key(const struct rollover *r)
{
	for (size_t i = 0; i < r->ks.n; i++)
		if (r->ks.keys[i].state == KS_ACTIVE)
			return r->ks.keys[i].file;
	return NULL;
}

int rollover_attach(struct rollover *r, struct signer *s, rollover_rebuild_fn rebuild, void *arg,
                    char err[256])
{
	r->signer = s;
	r->rebuild = rebuild;
	r->arg = arg;
	signer_set_dnskey_ttl(s, r->dnskey_ttl);
	return apply_keys(r, err);
}

void rollover_schedule_first(struct rollover *r)
{
	schedule(r, 0);
}

/* --- status --- */

static size_t put_time(char *out, size_t cap, int64_t t)
{
	if (!t)
		return (size_t)snprintf(out, cap, "-");
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	return strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

size_t rollover_status(const struct rollover *r, char *out, size_t cap)
{
	size_t n = 0;
#define PUT(...) do { if (n < cap) n += (size_t)snprintf(out + n, cap - n, __VA_ARGS__); } while (0)
	PUT("zone %s\n", r->ks.zone);
	for (size_t i = 0; i < r->ks.n; i++) {
		const struct keystore_key *k = &r->ks.keys[i];
		PUT("key %u %s %s %s\n", k->tag, keystore_state_name(k->state), origin(k), k->file);
		for (int t = 0; t < KT_COUNT; t++) {
			if (!k->t[t])
				continue;
			char when[32];
			put_time(when, sizeof(when), k->t[t]);
			PUT("  %-9s %s\n", keystore_time_name((enum keystore_time)t), when);
		}
	}
	if (r->next_at) {
		char when[32];
		put_time(when, sizeof(when), (int64_t)r->next_at);
		PUT("next %s: %s\n", when, r->next_what ? r->next_what : "");
	} else {
		PUT("next -: %s\n", r->lifetime ? "none planned" : "lifetime 0: never rolls");
	}
#undef PUT
	return n < cap ? n : cap;
}

size_t rollover_metrics(const struct rollover *r, enum rollover_metric which, char *out,
                        size_t cap)
{
	char zone[600];
	metrics_label_escape(r->ks.zone, zone, sizeof(zone));
	size_t n = 0;
	if (cap)
		out[0] = '\0';
	if (which == ROLLOVER_METRIC_NEXT_TRANSITION) {
		int w = snprintf(out, cap, "geoacme_dnssec_key_next_transition_seconds{zone=\"%s\"} %llu\n",
		                 zone, (unsigned long long)r->next_at);
		return w < 0 ? 0 : (size_t)w < cap ? (size_t)w : cap;
	}
	for (size_t i = 0; i < r->ks.n && n < cap; i++) {
		const struct keystore_key *k = &r->ks.keys[i];
		for (int s = KS_STANDBY; s <= KS_RETIRED && n < cap; s++) {
			int w = snprintf(out + n, cap - n,
			                 "geoacme_dnssec_key_state{zone=\"%s\",tag=\"%u\",state=\"%s\"} %d\n",
			                 zone, k->tag, keystore_state_name((enum keystore_state)s),
			                 k->state == (enum keystore_state)s);
			if (w < 0)
				break;
			n += (size_t)w;
		}
	}
	return n < cap ? n : cap;
}

int rollover_check_notes(const struct config_zone *zc, char *out, size_t cap)
{
	struct keystore ks;
	char err[256];
	int notes = 0;
	size_t n = 0;
	out[0] = '\0';
	if (!zc->key_policy.present || keystore_load(&ks, zc->key_policy.key_dir, zc->zone, err) < 0)
		return 0;
	for (size_t i = 0; i < zc->n_keys; i++) {
		struct keystore_key *k = keystore_find_file(&ks, zc->keys[i].key_path);
		if (!k || (k->state != KS_RETIRED && k->state != KS_REMOVED))
			continue;
		if (n < cap)
			n += (size_t)snprintf(out + n, cap - n, "%s[[zones.keys]] names key %u (%s), "
			                      "which the key state says is %s: it no longer signs the zone",
			                      notes ? "\n" : "", k->tag, zc->keys[i].key_path,
			                      keystore_state_name(k->state));
		notes++;
	}
	return notes;
}
