/* SPDX-License-Identifier: MIT */
/*
 * A zone-file edit as a difference (see file_diff.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acme/file_diff.h"
#include "core/conf/diag.h"
#include "core/wire/dname.h"
#include "core/wire/rrset.h"
#include "core/wire/serial.h"
#include "core/wire/wire.h"
#include "core/zone/zone.h"
#include "core/zone/zone_file.h"
#include "storage/records.h"
#include "storage/seed.h"

void file_diff_init(struct file_diff *fd)
{
	memset(fd, 0, sizeof(*fd));
	change_list_init(&fd->records);
	change_list_init(&fd->file);
}

void file_diff_clear(struct file_diff *fd)
{
	change_list_clear(&fd->records);
	change_list_clear(&fd->file);
	file_diff_init(fd);
}

int file_diff_collect(void *arg, const struct records_row *row)
{
	return change_list_add(arg, CHANGE_ADD, row->name, row->type, row->ttl, row->rdata,
	                       row->rdlen, 0);
}

/* The identity of a record: owner, type, rdata (the TTL is compared apart). */
static int rr_cmp(const struct change *a, const struct change *b)
{
	if (a->name_len != b->name_len)
		return a->name_len < b->name_len ? -1 : 1;
	int c = memcmp(a->name, b->name, a->name_len);
	if (c)
		return c;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->rdlen != b->rdlen)
		return a->rdlen < b->rdlen ? -1 : 1;
	return memcmp(a->rdata, b->rdata, a->rdlen);
}

static int rr_cmp_ptr(const void *a, const void *b)
{
	return rr_cmp(*(const struct change *const *)a, *(const struct change *const *)b);
}

static bool is_apex_soa(const struct change *c, const uint8_t *apex)
{
	return c->type == RR_SOA && dname_equal(c->name, apex);
}

/*
 * The records of a list but the apex SOA, sorted, each once (a file may
 * say a record twice; the database keeps one), in a malloc'd array; the
 * apex SOA in *soa.
 */
static const struct change **sorted(const struct change_list *cl, const uint8_t *apex,
                                    size_t *n, const struct change **soa)
{
	const struct change **v = malloc((cl->n ? cl->n : 1) * sizeof(*v));
	*n = 0;
	*soa = NULL;
	if (!v)
		return NULL;
	for (size_t i = 0; i < cl->n; i++) {
		if (is_apex_soa(&cl->v[i], apex))
			*soa = &cl->v[i];
		else
			v[(*n)++] = &cl->v[i];
	}
	qsort(v, *n, sizeof(*v), rr_cmp_ptr);
	size_t k = 0;
	for (size_t i = 0; i < *n; i++)
		if (k == 0 || rr_cmp(v[k - 1], v[i]) != 0)
			v[k++] = v[i];
		else
			v[k - 1] = v[i];   /* the later line wins, as in the database */
	*n = k;
	return v;
}

static int add(struct change_list *cl, enum change_op op, const struct change *c)
{
	return change_list_add(cl, op, c->name, c->type, c->ttl, c->rdata, c->rdlen, 0);
}

/* The serial of canonical SOA rdata: the first of the five counters at its end. */
static uint32_t soa_serial(const uint8_t *rdata, uint16_t len)
{
	return len >= 22 ? wire_get_u32(rdata + len - 20) : 0;
}

/*
 * The file on its own must make a servable zone: what the builder refuses
 * (CNAME beside other data, a name below a DNAME, ...) is said against the
 * file, not the database.
 */
static int check_servable(const char *path, const uint8_t *apex, const struct change_list *f,
                          struct diag *d)
{
	struct zone_builder *b = zone_builder_new(apex);
	if (!b) {
		diag_add(d, path, 0, 0, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < f->n; i++) {
		const struct change *c = &f->v[i];
		if (zone_builder_add(b, c->name, c->type, c->ttl, c->rdata, c->rdlen) < 0) {
			zone_builder_free(b);
			diag_add(d, path, 0, 0, "a record cannot be served");
			return -EINVAL;
		}
	}
	struct zone *z = zone_builder_finish(b, NULL, path, d);
	if (!z)
		return -EINVAL;
	zone_free(z);
	return 0;
}

static int compare(const uint8_t *apex, const struct change_list *stored,
                   const struct change_list *f, const uint8_t *soa_now, uint16_t soa_now_len,
                   uint32_t soa_now_ttl, struct file_diff *fd)
{
	size_t nb, nf;
	const struct change *bsoa, *fsoa;
	const struct change **b = sorted(stored, apex, &nb, &bsoa);
	const struct change **v = sorted(f, apex, &nf, &fsoa);
	int ret = -ENOMEM;
	if (!b || !v)
		goto out;
	size_t i = 0, j = 0;
	while (i < nb || j < nf) {
		int c = i == nb ? 1 : j == nf ? -1 : rr_cmp(b[i], v[j]);
		if (c < 0) {              /* removed from the file */
			if (add(&fd->records, CHANGE_DEL, b[i]) < 0 || add(&fd->file, CHANGE_DEL, b[i]) < 0)
				goto out;
			fd->n_del++;
			i++;
		} else if (c > 0) {       /* added to the file */
			if (add(&fd->records, CHANGE_ADD, v[j]) < 0 || add(&fd->file, CHANGE_ADD, v[j]) < 0)
				goto out;
			fd->n_add++;
			j++;
		} else {
			if (b[i]->ttl != v[j]->ttl) {   /* a new TTL: a delete, then an add (change.h) */
				if (add(&fd->records, CHANGE_DEL, b[i]) < 0 ||
				    add(&fd->records, CHANGE_ADD, v[j]) < 0 ||
				    add(&fd->file, CHANGE_ADD, v[j]) < 0)
					goto out;
				fd->n_del++;
				fd->n_add++;
			}
			i++;
			j++;
		}
	}
	/* The SOA apart from its serial: the fields before it and the four after. */
	uint32_t file_serial = soa_serial(fsoa->rdata, fsoa->rdlen);
	if (bsoa && bsoa->rdlen < 22)
		bsoa = NULL;   /* not an SOA we can read: replaced */
	fd->soa = !bsoa || bsoa->ttl != fsoa->ttl || bsoa->rdlen != fsoa->rdlen ||
	          memcmp(bsoa->rdata, fsoa->rdata, fsoa->rdlen - 20u) != 0 ||
	          memcmp(bsoa->rdata + fsoa->rdlen - 16, fsoa->rdata + fsoa->rdlen - 16, 16) != 0;
	/* Raised, not merely different: a database migrated to schema 5 stores
	 * its served SOA (db.c), whose serial is ahead of the file's. */
	bool serial_edited = bsoa && serial_newer(file_serial, soa_serial(bsoa->rdata, bsoa->rdlen));
	ret = 0;
	if (!fd->n_del && !fd->n_add && !fd->soa && !serial_edited)
		goto out;   /* the same records, laid out anew: nothing to apply */
	/*
	 * The serial (file_diff.h): the file's when it is newer than the served
	 * one (RFC 1982 3.2), else the served one + 1 (RFC 1982 3.1).  A file
	 * whose serial is exactly 2^31 away is not newer (serial.h).
	 */
	fd->file_serial = file_serial;
	fd->serial_from = soa_serial(soa_now, soa_now_len);
	fd->serial_to = serial_newer(file_serial, fd->serial_from) ? file_serial
	                                                            : fd->serial_from + 1u;
	uint8_t rdata[2 * DNAME_MAX + 20];
	memcpy(rdata, fsoa->rdata, fsoa->rdlen);
	wire_set_u32(rdata + fsoa->rdlen - 20, fd->serial_to);
	ret = -ENOMEM;
	if (change_list_add(&fd->records, CHANGE_DEL, apex, RR_SOA, soa_now_ttl, soa_now,
	                    soa_now_len, 0) < 0 ||
	    change_list_add(&fd->records, CHANGE_ADD, apex, RR_SOA, fsoa->ttl, rdata, fsoa->rdlen,
	                    0) < 0 ||
	    (bsoa && add(&fd->file, CHANGE_DEL, bsoa) < 0) || add(&fd->file, CHANGE_ADD, fsoa) < 0)
		goto out;
	ret = 1;
out:
	free(b);
	free(v);
	return ret;
}

int file_diff_rebase(struct file_diff *fd, const uint8_t *soa, uint16_t soa_len,
                     uint32_t soa_ttl)
{
	struct change_list *cl = &fd->records;
	if (cl->n < 2 || soa_len < 22)
		return 0;
	/* compare() put the served SOA's deletion and the new SOA last. */
	struct change *del = &cl->v[cl->n - 2], *add = &cl->v[cl->n - 1];
	if (del->op != CHANGE_DEL || del->type != RR_SOA || add->op != CHANGE_ADD ||
	    add->type != RR_SOA || add->rdlen < 22)
		return 0;
	if (del->ttl == soa_ttl && del->rdlen == soa_len && memcmp(del->rdata, soa, soa_len) == 0)
		return 0;   /* nothing came between */
	if (change_list_set_rdata(cl, cl->n - 2, soa, soa_len) < 0)
		return -ENOMEM;
	del->ttl = soa_ttl;
	fd->serial_from = soa_serial(soa, soa_len);
	fd->serial_to = serial_newer(fd->file_serial, fd->serial_from) ? fd->file_serial
	                                                                : fd->serial_from + 1u;
	wire_set_u32(add->rdata + add->rdlen - 20, fd->serial_to);
	return 0;
}

int file_diff_compute(const char *path, const uint8_t *apex, const struct change_list *stored,
                      const uint8_t *soa, uint16_t soa_len, uint32_t soa_ttl,
                      struct file_diff *fd, struct diag *d)
{
	struct change_list f;
	change_list_init(&f);
	size_t before = d->n;
	int soa_line = 0;
	int ret = seed_read(path, apex, &f, d, &soa_line);
	if (ret < 0)
		goto out;
	char zone[DNAME_MAX * 4 + 2];
	dname_to_str(apex, zone, sizeof(zone));
	bool has_ns = false;
	for (size_t i = 0; i < f.n; i++)
		has_ns |= f.v[i].type == RR_NS && dname_equal(f.v[i].name, apex);
	if (!soa_line)
		diag_add(d, path, 1, 0, "expected an SOA record at the apex %s: an edit cannot remove "
		         "it (the zone would have none)", zone);
	else if (!has_ns)
		diag_add(d, path, soa_line, 0, "expected NS records at the apex %s: an edit cannot "
		         "remove them all (the zone would have no nameservers)", zone);
	else
		check_servable(path, apex, &f, d);
	ret = -EINVAL;
	if (d->n > before || soa_len < 22)
		goto out;
	ret = compare(apex, stored, &f, soa, soa_len, soa_ttl, fd);
	if (ret < 0) {
		diag_add(d, path, 0, 0, "out of memory comparing the zone file");
		file_diff_clear(fd);
		ret = -EINVAL;
	}
out:
	change_list_clear(&f);
	return ret;
}

static void print_rr(FILE *out, char sign, const struct change *c)
{
	char text[8192];
	if (zone_file_rr_text(c->name, c->type, c->ttl, c->rdata, c->rdlen, text, sizeof(text)) < 0) {
		char name[DNAME_MAX * 4 + 2], type[16];
		dname_to_str(c->name, name, sizeof(name));
		snprintf(text, sizeof(text), "%s %u IN %s (%u bytes)", name, (unsigned)c->ttl,
		         rrset_type_to_str(c->type, type), (unsigned)c->rdlen);
	}
	fprintf(out, "%c %s\n", sign, text);
}

void file_diff_print(const struct file_diff *fd, FILE *out)
{
	for (size_t i = 0; i < fd->records.n; i++) {
		const struct change *c = &fd->records.v[i];
		print_rr(out, c->op == CHANGE_ADD ? '+' : '-', c);
	}
}
