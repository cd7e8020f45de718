/* SPDX-License-Identifier: MIT */
/*
 * User-facing problem lists.  Messages are formatted once, when added, so
 * the caller can print, count or compare them without knowing where they
 * came from.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* vasprintf */
#endif
#include "core/conf/diag.h"
#include "core/wire/array.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void diag_init(struct diag *d)
{
	d->msgs = NULL;
	d->n = 0;
	d->cap = 0;
}

void diag_clear(struct diag *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->msgs[i]);
	free(d->msgs);
	diag_init(d);
}

/*
 * When memory runs out the message is replaced by a fixed one rather than
 * dropped, so a caller that counts messages still sees that something went
 * wrong.  If even the list cannot grow, the message is lost; the loaders
 * keep their own error counts and do not rely on d->n alone.
 */
static void push(struct diag *d, char *msg)
{
	char **m = array_room(d->msgs, d->n, &d->cap, sizeof(*m), 8);
	if (!m) {
		free(msg);
		return;
	}
	d->msgs = m;
	d->msgs[d->n++] = msg;
}

void diag_vadd(struct diag *d, const char *file, int line, int col, const char *fmt, va_list ap)
{
	char pos[48];
	char *body = NULL;
	char *msg = NULL;

	if (!d)
		return;
	/* "file:line:col: ", dropping the parts we do not know. */
	if (line > 0 && col > 0)
		snprintf(pos, sizeof(pos), "%d:%d:", line, col);
	else if (line > 0)
		snprintf(pos, sizeof(pos), "%d:", line);
	else
		pos[0] = '\0';

	if (vasprintf(&body, fmt, ap) < 0)
		body = NULL;
	if (body && asprintf(&msg, "%s%s%s%s%s", file ? file : "", file ? ":" : "", pos,
	                     file || pos[0] ? " " : "", body) < 0)
		msg = NULL;
	free(body);
	if (!msg)
		msg = strdup("out of memory while reporting a problem");
	if (msg)
		push(d, msg);
}

void diag_add(struct diag *d, const char *file, int line, int col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vadd(d, file, line, col, fmt, ap);
	va_end(ap);
}

void diag_print(const struct diag *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		fprintf(stderr, "%s\n", d->msgs[i]);
}
