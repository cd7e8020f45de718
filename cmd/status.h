/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * What the HTTP endpoint serves (core/net/http.c calls status_http):
 *   /metrics      Prometheus text format: the counters of core/conf/metrics.h
 *                 and gauges of the current state (sites, zones, databases,
 *                 build, process)
 *   /status.json  the state for scripts
 *   /             one HTML page, no JavaScript, with the world map
 * Everything is read from the running generation; nothing here changes it.
 */
#include <stdio.h>
#include <time.h>

struct generation;

struct status_ctx {
	struct generation *gen;   /* the running one: serve.c updates it on reload */
	time_t started;
};

int status_http(void *ctx, const char *path, const char *query, FILE *body,
                const char **content_type);
/* Writes s with &, <, >, " and ' escaped for HTML text and attributes. */
void status_html_escape(FILE *out, const char *s);
