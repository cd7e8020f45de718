/* SPDX-License-Identifier: MIT */
/*
 * RFC 1035 master files, parsed by ldns one record at a time so that every
 * bad line is reported, not just the first.  Records come out in canonical
 * wire form (RFC 4034 6.2: lowercase names in owner and rdata).
 */
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ldns/ldns.h>

#include "core/conf/diag.h"
#include "core/wire/dname.h"
#include "core/wire/rdata_check.h"
#include "core/wire/rrset.h"
#include "core/zone/rdata_text.h"
#include "core/zone/svcb.h"
#include "core/zone/zone_file.h"

/* The owner in presentation form, for error messages only. */
static void owner_text(const uint8_t *owner, char *out, size_t cap)
{
	if (dname_to_str(owner, out, cap) < 0)
		snprintf(out, cap, "(name)");
}

/* "CAA", or "TYPE65280" for a type ldns does not name. */
static const char *type_text(uint16_t type)
{
	static char buf[16];
	const ldns_rr_descriptor *desc = ldns_rr_descript(type);
	if (desc && desc->_name && ldns_rr_descriptor_field_type(desc, 0) != LDNS_RDF_TYPE_NONE)
		return desc->_name;
	snprintf(buf, sizeof(buf), "TYPE%u", (unsigned)type);
	return buf;
}

/*
 * `rdata` (NULL: ldns's own) replaces the record data of rr: SVCB and HTTPS
 * rdata comes from core/zone/svcb.c.
 */
static int emit(const char *path, int line, ldns_rr *rr, const uint8_t *rdata, uint16_t rdlen,
                const uint8_t *apex, zone_file_rr_fn fn, void *arg, struct diag *d)
{
	char owner_str[DNAME_MAX * 4 + 1];
	ldns_rr2canonical(rr);
	ldns_rdf *owner = ldns_rr_owner(rr);
	const uint8_t *owner_wire = ldns_rdf_data(owner);
	/* ldns builds names from $ORIGIN without checking the total length. */
	if (ldns_rdf_size(owner) > DNAME_MAX) {
		diag_add(d, path, line, 0, "owner name longer than 255 bytes");
		return -EINVAL;
	}
	for (size_t i = 0; i < ldns_rr_rd_count(rr); i++) {
		ldns_rdf *f = ldns_rr_rdf(rr, i);
		if (f && ldns_rdf_get_type(f) == LDNS_RDF_TYPE_DNAME && ldns_rdf_size(f) > DNAME_MAX) {
			diag_add(d, path, line, 0, "a name in the record data is longer than 255 bytes");
			return -EINVAL;
		}
	}
	if (ldns_rr_get_class(rr) != LDNS_RR_CLASS_IN) {
		owner_text(owner_wire, owner_str, sizeof(owner_str));
		diag_add(d, path, line, 0, "%s: only class IN is served", owner_str);
		return -EINVAL;
	}
	if (!dname_is_subdomain(owner_wire, apex)) {
		char apex_str[DNAME_MAX * 4 + 1];
		owner_text(owner_wire, owner_str, sizeof(owner_str));
		dname_to_str(apex, apex_str, sizeof(apex_str));
		diag_add(d, path, line, 0, "%s: outside the zone %s", owner_str, apex_str);
		return -EINVAL;
	}
	uint16_t type = (uint16_t)ldns_rr_get_type(rr);
	if (rrset_type_is_meta(type) || type == RR_RRSIG || type == RR_NSEC || type == RR_NSEC3 ||
	    type == RR_NSEC3PARAM || type == RR_DNSKEY || type == RR_CDS || type == RR_CDNSKEY) {
		owner_text(owner_wire, owner_str, sizeof(owner_str));
		diag_add(d, path, line, 0,
		         "%s: type %u cannot be loaded (DNSSEC records are made by the server)",
		         owner_str, type);
		return -EINVAL;
	}
	if (rdata) {
		const char *bad = NULL;
		if (rdata_check(type, rdata, rdlen, &bad) < 0) {
			/* svcb.c's rules are stricter; this is the table every path shares. */
			owner_text(owner_wire, owner_str, sizeof(owner_str));
			diag_add(d, path, line, 0, "%s: the %s record data does not match its format: %s",
			         owner_str, type_text(type), bad);
			return -EINVAL;
		}
		int err = fn(arg, owner_wire, type, ldns_rr_ttl(rr), rdata, rdlen, line);
		if (err < 0) {
			owner_text(owner_wire, owner_str, sizeof(owner_str));
			diag_add(d, path, line, 0, "%s: record rejected (%s)", owner_str, strerror(-err));
		}
		return err;
	}
	ldns_buffer *buf = ldns_buffer_new(512);
	if (!buf)
		return -ENOMEM;
	int err = 0;
	const char *why = NULL;
	if (ldns_rr_rdata2buffer_wire(buf, rr) != LDNS_STATUS_OK || ldns_buffer_position(buf) > 65535) {
		owner_text(owner_wire, owner_str, sizeof(owner_str));
		diag_add(d, path, line, 0, "%s: cannot encode the record data", owner_str);
		err = -EINVAL;
	} else if (rdata_check(type, ldns_buffer_begin(buf), ldns_buffer_position(buf), &why) < 0) {
		/* ldns takes some rdata no client would (an empty DS as "\# 0", a 1-byte CAA). */
		owner_text(owner_wire, owner_str, sizeof(owner_str));
		diag_add(d, path, line, 0, "%s: the %s record data does not match its format: %s",
		         owner_str, type_text(type), why);
		err = -EINVAL;
	} else {
		err = fn(arg, owner_wire, type, ldns_rr_ttl(rr), ldns_buffer_begin(buf),
		         (uint16_t)ldns_buffer_position(buf), line);
		if (err < 0) {
			owner_text(owner_wire, owner_str, sizeof(owner_str));
			diag_add(d, path, line, 0, "%s: record rejected (%s)", owner_str, strerror(-err));
		}
	}
	ldns_buffer_free(buf);
	return err;
}

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Skips one blank-separated token (with \X escapes) and the blanks after it. */
static const char *skip_token(const char *p)
{
	while (*p && !blank(*p))
		p += (*p == '\\' && p[1]) ? 2 : 1;
	while (blank(*p))
		p++;
	return p;
}

static bool is_ttl(const char *p, size_t n)
{
	return n > 0 && isdigit((unsigned char)p[0]);
}

static bool is_class(const char *p, size_t n)
{
	return (n == 2 && (strncasecmp(p, "IN", 2) == 0 || strncasecmp(p, "CH", 2) == 0 ||
	                   strncasecmp(p, "HS", 2) == 0 || strncasecmp(p, "CS", 2) == 0)) ||
	       (n > 5 && strncasecmp(p, "CLASS", 5) == 0 && isdigit((unsigned char)p[5]));
}

/* The types whose rdata is not read by ldns, and what ldns is given instead. */
static const struct {
	const char *name, *number;
	uint16_t type;
	const char *stand_in;
} own_types[] = {
	{ "SVCB", "TYPE64", RR_SVCB, " 1 ." },
	{ "HTTPS", "TYPE65", RR_HTTPS, " 1 ." },
	{ "IPSECKEY", "TYPE45", RDATA_TEXT_IPSECKEY, " 0 0 0 . AA==" },   /* rdata_text.h */
	{ "CERT", "TYPE37", RDATA_TEXT_CERT, " 1 0 1 AA==" },
};

/*
 * When the record on this line is of a type we parse ourselves (own_types),
 * returns where its rdata starts, sets *type_end to the end of the type
 * mnemonic and *which to its own_types index; else NULL.  The line is
 * [owner] [ttl] [class] type rdata, ttl and class in either order (RFC 1035
 * 5.1); a line starting with a blank has no owner.  IPSECKEY and CERT in
 * the generic form (\# LEN HEX) go to ldns, which reads that form
 * generically, and rdata_check() then checks the bytes.
 */
static const char *own_rdata(const char *line, const char **type_end, size_t *which)
{
	const char *p = line;
	if (!blank(*p))
		p = skip_token(p);
	while (blank(*p))
		p++;
	for (int k = 0; k < 2; k++) {
		size_t n = 0;
		while (p[n] && !blank(p[n]))
			n++;
		if (!is_ttl(p, n) && !is_class(p, n))
			break;
		p = skip_token(p);
	}
	size_t n = 0;
	while (p[n] && !blank(p[n]))
		n++;
	for (size_t i = 0; i < sizeof(own_types) / sizeof(own_types[0]); i++) {
		if ((n != strlen(own_types[i].name) || strncasecmp(p, own_types[i].name, n) != 0) &&
		    (n != strlen(own_types[i].number) || strncasecmp(p, own_types[i].number, n) != 0))
			continue;
		const char *rd = p + n;
		while (blank(*rd))
			rd++;
		if (rdata_text_handles(own_types[i].type) && rd[0] == '\\' && rd[1] == '#')
			return NULL;
		*type_end = p + n;
		*which = i;
		return p + n;
	}
	return NULL;
}

/*
 * One record line.  SVCB/HTTPS, IPSECKEY and CERT: ldns reads the owner,
 * TTL and class from the line with a stand-in rdata, and core/zone/svcb.c
 * or core/zone/rdata_text.c the real rdata.
 */
static void read_record(const char *path, int line_nr, char *line, uint32_t default_ttl,
                        ldns_rdf *origin, ldns_rdf **prev, const uint8_t *apex,
                        zone_file_rr_fn fn, void *arg, struct diag *d)
{
	ldns_rr *rr = NULL;
	const char *type_end = NULL;
	size_t which = 0;
	const char *rd_text = own_rdata(line, &type_end, &which);
	if (!rd_text) {
		ldns_status s = ldns_rr_new_frm_str(&rr, line, default_ttl, origin, prev);
		if (s != LDNS_STATUS_OK) {
			diag_add(d, path, line_nr, 0, "%s", ldns_get_errorstr_by_id(s));
			return;
		}
		emit(path, line_nr, rr, NULL, 0, apex, fn, arg, d);
		ldns_rr_free(rr);
		return;
	}
	size_t head = (size_t)(type_end - line);
	const char *stand_in = own_types[which].stand_in;
	char *sub = malloc(head + strlen(stand_in) + 1);
	static uint8_t rdata[65535];   /* one load at a time: at start, or on the reload builder */
	if (!sub) {
		diag_add(d, path, line_nr, 0, "out of memory");
		return;
	}
	memcpy(sub, line, head);
	memcpy(sub + head, stand_in, strlen(stand_in) + 1);
	ldns_status s = ldns_rr_new_frm_str(&rr, sub, default_ttl, origin, prev);
	free(sub);
	if (s != LDNS_STATUS_OK) {
		diag_add(d, path, line_nr, 0, "%s", ldns_get_errorstr_by_id(s));
		return;
	}
	char err[256];
	const uint8_t *o = origin ? ldns_rdf_data(origin) : apex;
	uint16_t type = own_types[which].type;
	int len = rdata_text_handles(type) ? rdata_text_parse(type, rd_text, o, rdata, sizeof(rdata), err)
	                                   : svcb_from_text(rd_text, o, rdata, sizeof(rdata), err);
	if (len < 0) {
		diag_add(d, path, line_nr, 0, "%s: %s", own_types[which].name, err);
	} else {
		emit(path, line_nr, rr, rdata, (uint16_t)len, apex, fn, arg, d);
	}
	ldns_rr_free(rr);
}

static char *strip(char *s)
{
	while (blank(*s))
		s++;
	size_t n = strlen(s);
	while (n && (blank(s[n - 1]) || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = 0;
	return s;
}

static int zone_file_read_all(const char *path, const uint8_t *apex, zone_file_rr_fn fn,
                              void *arg, struct diag *d);

/*
 * Where DS records may be (RFC 4035 2.4: "A DS RRset MUST NOT appear at a
 * non-delegation point or at a zone's apex"): the owners of the file's DS
 * and NS records are noted as they go to the caller, and each DS whose
 * owner is the apex or holds no NS is reported with its line once the
 * whole file is read (the NS may come later in it).
 */
struct owners {
	uint8_t **names;
	int *lines;
	size_t n, cap;
};

struct cut_check {
	zone_file_rr_fn fn;
	void *arg;
	struct owners ds, ns;
	bool nomem;
};

static void owners_push(struct cut_check *c, struct owners *o, const uint8_t *name, int line)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		uint8_t **names = realloc(o->names, cap * sizeof(*names));
		if (names)
			o->names = names;
		int *lines = names ? realloc(o->lines, cap * sizeof(*lines)) : NULL;
		if (lines)
			o->lines = lines;
		if (!names || !lines) {
			c->nomem = true;
			return;
		}
		o->cap = cap;
	}
	size_t len = dname_len(name);
	uint8_t *copy = malloc(len);
	if (!copy) {
		c->nomem = true;
		return;
	}
	memcpy(copy, name, len);
	o->names[o->n] = copy;
	o->lines[o->n++] = line;
}

static void owners_free(struct owners *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->names[i]);
	free(o->names);
	free(o->lines);
}

static int name_ptr_cmp(const void *a, const void *b)
{
	return dname_canonical_cmp(*(uint8_t *const *)a, *(uint8_t *const *)b);
}

static int cut_check_rr(void *arg, const uint8_t *owner, uint16_t type, uint32_t ttl,
                        const uint8_t *rdata, uint16_t rdlen, int line)
{
	struct cut_check *c = arg;
	int err = c->fn(c->arg, owner, type, ttl, rdata, rdlen, line);
	if (err == 0 && type == RR_DS)
		owners_push(c, &c->ds, owner, line);
	else if (err == 0 && type == RR_NS)
		owners_push(c, &c->ns, owner, line);
	return err;
}

static void cut_check_report(struct cut_check *c, const char *path, const uint8_t *apex,
                             struct diag *d)
{
	if (c->nomem) {
		diag_add(d, path, 0, 0, "out of memory");
		return;
	}
	if (c->ns.n)
		qsort(c->ns.names, c->ns.n, sizeof(*c->ns.names), name_ptr_cmp);
	for (size_t i = 0; i < c->ds.n; i++) {
		const uint8_t *owner = c->ds.names[i];
		bool at_apex = dname_equal(owner, apex);
		if (!at_apex && c->ns.n &&
		    bsearch(&owner, c->ns.names, c->ns.n, sizeof(*c->ns.names), name_ptr_cmp))
			continue;
		char owner_str[DNAME_MAX * 4 + 1];
		owner_text(owner, owner_str, sizeof(owner_str));
		diag_add(d, path, c->ds.lines[i], 0,
		         "%s: a DS record belongs at a delegation, a name below the apex with NS "
		         "records (RFC 4035 2.4)%s", owner_str, at_apex ? "; this is the apex" : "");
	}
}

int zone_file_read(const char *path, const uint8_t *apex, zone_file_rr_fn fn, void *arg,
                   struct diag *d)
{
	struct cut_check cc = { .fn = fn, .arg = arg };
	int rc = zone_file_read_all(path, apex, cut_check_rr, &cc, d);
	size_t before = d->n;
	if (rc == 0)
		cut_check_report(&cc, path, apex, d);
	owners_free(&cc.ds);
	owners_free(&cc.ns);
	return rc < 0 ? rc : d->n > before ? -EINVAL : 0;
}

static int zone_file_read_all(const char *path, const uint8_t *apex, zone_file_rr_fn fn,
                              void *arg, struct diag *d)
{
	FILE *fp = fopen(path, "r");
	if (!fp) {
		diag_add(d, path, 0, 0, "cannot open zone file: %s", strerror(errno));
		return -EINVAL;
	}
	char *buf = malloc(LDNS_MAX_LINELEN + 1);
	if (!buf) {
		fclose(fp);
		diag_add(d, path, 0, 0, "out of memory");
		return -EINVAL;
	}
	char apex_str[DNAME_MAX * 4 + 1];
	dname_to_str(apex, apex_str, sizeof(apex_str));
	ldns_rdf *origin = ldns_dname_new_frm_str(apex_str);
	ldns_rdf *prev = NULL;
	uint32_t default_ttl = 3600;
	int line = 1;
	size_t before = d->n;
	/*
	 * One logical line at a time (ldns joins parentheses and drops
	 * comments), with the directives handled here as ldns would, so that
	 * SVCB/HTTPS lines can take another parser.
	 */
	while (!feof(fp)) {
		int start_line = line;
		ssize_t size = ldns_fget_token_l(fp, buf, LDNS_PARSE_SKIP_SPACE, LDNS_MAX_LINELEN, &line);
		if (size < 0) {
			if (!feof(fp))
				diag_add(d, path, start_line, 0, "%s",
				         ldns_get_errorstr_by_id(LDNS_STATUS_SYNTAX_ERR));
			break;
		}
		if (size == 0)
			continue;
		if (strncmp(buf, "$ORIGIN", 7) == 0 && isspace((unsigned char)buf[7])) {
			ldns_rdf *o = ldns_dname_new_frm_str(strip(buf + 8));
			if (!o || ldns_rdf_size(o) > DNAME_MAX) {
				diag_add(d, path, start_line, 0, "$ORIGIN needs a domain name");
				if (o)
					ldns_rdf_deep_free(o);
				continue;
			}
			if (origin)
				ldns_rdf_deep_free(origin);
			origin = o;
		} else if (strncmp(buf, "$TTL", 4) == 0 && isspace((unsigned char)buf[4])) {
			const char *end = NULL;
			default_ttl = ldns_str2period(strip(buf + 5), &end);
		} else if (strncmp(buf, "$INCLUDE", 8) == 0) {
			diag_add(d, path, start_line, 0, "$INCLUDE is not supported");
		} else if (*strip(buf)) {
			read_record(path, start_line, buf, default_ttl, origin, &prev, apex, fn, arg, d);
		}
	}
	if (origin)
		ldns_rdf_deep_free(origin);
	if (prev)
		ldns_rdf_deep_free(prev);
	free(buf);
	fclose(fp);
	return d->n > before ? -EINVAL : 0;
}

int zone_file_rr_text(const uint8_t *owner, uint16_t type, uint32_t ttl, const uint8_t *rdata,
                      uint16_t rdlen, char *out, size_t cap)
{
	size_t olen = dname_len(owner);
	size_t len = olen + 10 + rdlen;
	uint8_t *wire = malloc(len);
	if (!wire || !olen)
		return free(wire), -EINVAL;
	memcpy(wire, owner, olen);
	uint8_t *p = wire + olen;
	p[0] = (uint8_t)(type >> 8), p[1] = (uint8_t)type;
	p[2] = 0, p[3] = 1;   /* IN */
	p[4] = (uint8_t)(ttl >> 24), p[5] = (uint8_t)(ttl >> 16);
	p[6] = (uint8_t)(ttl >> 8), p[7] = (uint8_t)ttl;
	p[8] = (uint8_t)(rdlen >> 8), p[9] = (uint8_t)rdlen;
	memcpy(p + 10, rdata, rdlen);
	ldns_rr *rr = NULL;
	size_t pos = 0;
	ldns_status s = ldns_wire2rr(&rr, wire, len, &pos, LDNS_SECTION_ANSWER);
	free(wire);
	char *text = s == LDNS_STATUS_OK ? ldns_rr2str(rr) : NULL;
	ldns_rr_free(rr);
	if (!text)
		return -EINVAL;
	/* ldns separates the fields with a tab and ends with a newline. */
	size_t n = 0;
	for (const char *c = text; *c && *c != '\n'; c++) {
		if (n + 1 >= cap) {
			free(text);
			return -ENOSPC;
		}
		out[n++] = *c == '\t' ? ' ' : *c;
	}
	while (n && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
	free(text);
	return (int)n;
}
