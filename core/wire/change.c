/* SPDX-License-Identifier: MIT */
/*
 * Change lists (see change.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire/change.h"
#include "core/wire/dname.h"

void change_list_init(struct change_list *cl)
{
	cl->v = NULL;
	cl->n = cl->cap = 0;
}

void change_list_clear(struct change_list *cl)
{
	for (size_t i = 0; i < cl->n; i++)
		free(cl->v[i].name);
	free(cl->v);
	change_list_init(cl);
}

int change_list_add(struct change_list *cl, enum change_op op, const uint8_t *name,
                    uint16_t type, uint32_t ttl, const uint8_t *rdata, uint16_t rdlen,
                    int64_t created_at)
{
	size_t name_len = dname_len(name);
	if (name_len == 0 || name_len > DNAME_MAX)
		return -EINVAL;
	if (cl->n == cl->cap) {
		size_t cap = cl->cap ? cl->cap * 2 : 16;
		struct change *v = realloc(cl->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		cl->v = v;
		cl->cap = cap;
	}
	/* One allocation for name and rdata: a purge of many records stays cheap. */
	uint8_t *mem = malloc(name_len + rdlen + 1);
	if (!mem)
		return -ENOMEM;
	memcpy(mem, name, name_len);
	if (rdlen)
		memcpy(mem + name_len, rdata, rdlen);
	struct change *c = &cl->v[cl->n++];
	c->op = (uint8_t)op;
	c->name_len = (uint8_t)name_len;
	c->type = type;
	c->rdlen = rdlen;
	c->ttl = ttl;
	c->created_at = created_at;
	c->name = mem;
	c->rdata = mem + name_len;
	return 0;
}
