/* SPDX-License-Identifier: MIT */
/*
 * RFC 1035 master files, parsed by ldns one record at a time so that every
 * bad line is reported, not just the first.  Records come out in canonical
 * wire form (RFC 4034 6.2: lowercase names in owner and rdata).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <ldns/ldns.h>

#include "core/conf/diag.h"
#include "core/wire/dname.h"
#include "core/wire/rdata_check.h"
#include "core/wire/rrset.h"
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

static int emit(const char *path, int line, ldns_rr *rr, const uint8_t *apex, zone_file_rr_fn fn,
                void *arg, struct diag *d)
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
	/* Said here with the line; the snapshot build would refuse it without one. */
	for (const uint8_t *p = owner_wire; *p; p += *p + 1) {
		if (p[0] == 1 && p[1] == '*') {
			owner_text(owner_wire, owner_str, sizeof(owner_str));
			diag_add(d, path, line, 0, "%s: a '*' label makes a wildcard, and wildcards are "
			         "not supported (list the names explicitly)", owner_str);
			return -EINVAL;
		}
	}
	uint16_t type = (uint16_t)ldns_rr_get_type(rr);
	if (type == RR_DNAME) {
		owner_text(owner_wire, owner_str, sizeof(owner_str));
		diag_add(d, path, line, 0, "%s: DNAME is not supported (answers would not follow it)",
		         owner_str);
		return -EINVAL;
	}
	if (rrset_type_is_meta(type) || type == RR_RRSIG || type == RR_NSEC || type == RR_NSEC3 ||
	    type == RR_NSEC3PARAM || type == RR_DNSKEY || type == RR_CDS || type == RR_CDNSKEY) {
		owner_text(owner_wire, owner_str, sizeof(owner_str));
		diag_add(d, path, line, 0,
		         "%s: type %u cannot be loaded (DNSSEC records are made by the server)",
		         owner_str, type);
		return -EINVAL;
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

int zone_file_read(const char *path, const uint8_t *apex, zone_file_rr_fn fn, void *arg,
                   struct diag *d)
{
	FILE *fp = fopen(path, "r");
	if (!fp) {
		diag_add(d, path, 0, 0, "cannot open zone file: %s", strerror(errno));
		return -EINVAL;
	}
	char apex_str[DNAME_MAX * 4 + 1];
	dname_to_str(apex, apex_str, sizeof(apex_str));
	ldns_rdf *origin = ldns_dname_new_frm_str(apex_str);
	ldns_rdf *prev = NULL;
	uint32_t default_ttl = 3600;
	int line = 1;
	size_t before = d->n;
	while (!feof(fp)) {
		ldns_rr *rr = NULL;
		int start_line = line;
		ldns_status s = ldns_rr_new_frm_fp_l(&rr, fp, &default_ttl, &origin, &prev, &line);
		switch (s) {
		case LDNS_STATUS_OK:
			emit(path, start_line, rr, apex, fn, arg, d);
			ldns_rr_free(rr);
			break;
		case LDNS_STATUS_SYNTAX_EMPTY:
		case LDNS_STATUS_SYNTAX_TTL:
		case LDNS_STATUS_SYNTAX_ORIGIN:
			break;
		case LDNS_STATUS_SYNTAX_INCLUDE:
			diag_add(d, path, start_line, 0, "$INCLUDE is not supported");
			break;
		default:
			if (feof(fp) && s == LDNS_STATUS_SYNTAX_ERR)
				break;
			diag_add(d, path, start_line, 0, "%s", ldns_get_errorstr_by_id(s));
			break;
		}
	}
	if (origin)
		ldns_rdf_deep_free(origin);
	if (prev)
		ldns_rdf_deep_free(prev);
	fclose(fp);
	return d->n > before ? -EINVAL : 0;
}
