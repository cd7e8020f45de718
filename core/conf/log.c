/* SPDX-License-Identifier: MIT */
/* Logging to stderr, one line per event. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/conf/log.h"
#include "core/conf/sysclock.h"

/* Read by the reload builder thread too (cmd/builder.h): atomic. */
static enum log_level current_level = LOG_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void log_set_level(enum log_level level)
{
	__atomic_store_n(&current_level, level, __ATOMIC_RELAXED);
}

bool log_level_parse(const char *s, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcasecmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return true;
		}
	}
	if (strcasecmp(s, "trace") == 0) {
		*out = LOG_DEBUG;
		return true;
	}
	return false;
}

enum log_level log_get_level(void)
{
	return __atomic_load_n(&current_level, __ATOMIC_RELAXED);
}

static void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	/* One fprintf per line keeps lines whole even if stderr is shared. */
	char line[1024];
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n < 0)
		return;
	fprintf(stderr, "%s: %s\n", level_names[level], line);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	if (level > log_get_level())
		return;
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

void log_limited(struct log_limit *lim, enum log_level level, const char *fmt, ...)
{
	if (level > log_get_level())
		return;
	int64_t sec = sysclock_coarse_s();
	if (sec != lim->second) {
		if (lim->suppressed)
			log_msg(level, "(%u similar messages suppressed)", lim->suppressed);
		lim->second = sec;
		lim->count = 0;
		lim->suppressed = 0;
	}
	if (++lim->count > 5) {
		lim->suppressed++;
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}
