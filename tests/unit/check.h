/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A tiny TAP-like harness for unit tests: ok(), is_int(), is_str(), is_mem();
 * done_testing() prints "N passed, N failed" and returns the exit code.
 */
#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define ok(cond, ...) check_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...) \
	check_is_int((long long)(got), (long long)(want), __FILE__, __LINE__, __VA_ARGS__)
#define is_str(got, want, ...) check_is_str((got), (want), __FILE__, __LINE__, __VA_ARGS__)
#define is_mem(got, want, n, ...) check_is_mem((got), (want), (n), __FILE__, __LINE__, __VA_ARGS__)

static void check_report(int pass, const char *file, int line, const char *fmt, va_list ap);

#include <stdarg.h>
static inline int check_ok(int pass, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	check_report(pass, file, line, fmt, ap);
	va_end(ap);
	return pass;
}

static inline int check_is_int(long long got, long long want, const char *file, int line,
                               const char *fmt, ...)
{
	va_list ap;
	int pass = got == want;
	va_start(ap, fmt);
	check_report(pass, file, line, fmt, ap);
	va_end(ap);
	if (!pass)
		printf("#   got %lld, want %lld\n", got, want);
	return pass;
}

static inline int check_is_str(const char *got, const char *want, const char *file, int line,
                               const char *fmt, ...)
{
	va_list ap;
	int pass = got && want ? strcmp(got, want) == 0 : got == want;
	va_start(ap, fmt);
	check_report(pass, file, line, fmt, ap);
	va_end(ap);
	if (!pass)
		printf("#   got  \"%s\"\n#   want \"%s\"\n", got ? got : "(null)", want ? want : "(null)");
	return pass;
}

static inline int check_is_mem(const void *got, const void *want, size_t n, const char *file,
                               int line, const char *fmt, ...)
{
	va_list ap;
	int pass = memcmp(got, want, n) == 0;
	va_start(ap, fmt);
	check_report(pass, file, line, fmt, ap);
	va_end(ap);
	if (!pass) {
		printf("#   got ");
		for (size_t i = 0; i < n; i++)
			printf("%02x", ((const unsigned char *)got)[i]);
		printf("\n#   want ");
		for (size_t i = 0; i < n; i++)
			printf("%02x", ((const unsigned char *)want)[i]);
		printf("\n");
	}
	return pass;
}

static void check_report(int pass, const char *file, int line, const char *fmt, va_list ap)
{
	int n = check_passed + check_failed + 1;
	printf("%s %d - ", pass ? "ok" : "not ok", n);
	vprintf(fmt, ap);
	printf("\n");
	if (!pass)
		printf("#   at %s:%d\n", file, line);
	if (pass)
		check_passed++;
	else
		check_failed++;
}

static inline int done_testing(void)
{
	printf("%d passed, %d failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}
