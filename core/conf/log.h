/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * One line per event on stderr: "level: message".  No timestamps: journald
 * and the test harnesses add their own.
 * log_ratelimited() is for the query path: at most `burst` lines per second
 * per call site, then one summary of how many were suppressed.
 */
#include <stdarg.h>
#include <stdbool.h>

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

void log_set_level(enum log_level level);
/*
 * The one parser of a level's name: "error", "warn", "info" or "debug",
 * any case; Hickory's most verbose "trace" means debug.  False, *out
 * untouched, for anything else.
 */
bool log_level_parse(const char *s, enum log_level *out);
enum log_level log_get_level(void);

void log_msg(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) \
	do { if (log_get_level() >= LOG_DEBUG) log_msg(LOG_DEBUG, __VA_ARGS__); } while (0)

/* Per-call-site rate limit state; declare `static struct log_limit l;`. */
struct log_limit { long second; unsigned count; unsigned suppressed; };
void log_limited(struct log_limit *lim, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
