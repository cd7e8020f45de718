#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One clock (issue #23.5): the system clocks are read only in
core/conf/sysclock.c, and the wall clock without the test offset only where
there is no loop clock to read (core/conf/sysclock.h says why each is there).

Everything that decides by time reads the loop's clock (core/net/loop.h), so
the test clock (GEOACME_TEST_CLOCK_FILE) drives every timer.  A new
time(), clock_gettime() or gettimeofday() anywhere else fails this check,
naming the line; so does a new sysclock_wall_*() outside ALLOWED_WALL.
Comments are not read.  Prints "N passed, 0 failed" when clean.
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FOLDERS = ("cmd", "acme", "xfr", "dnssec", "storage", "core")
CLOCK_FILE = "core/conf/sysclock.c"
# The system's wall clock, without the test clock's offset: the loop's wall
# clock is built on it, and a signer made without a loop defaults to it.
ALLOWED_WALL = {CLOCK_FILE, "core/conf/sysclock.h", "core/net/loop.c", "dnssec/signer.c"}
RAW = re.compile(r"\b(time|clock_gettime|gettimeofday|clock_settime|timespec_get|ftime)\s*\(")
WALL = re.compile(r"\bsysclock_wall_\w*\s*\(")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')


def strip(text):
    """Comments and string literals blanked, newlines kept (for line numbers)."""
    text = STRING.sub('""', text)
    return COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def check(src, text):
    """The offending lines of one file, as 'src:line: why'."""
    bad = []
    for no, line in enumerate(strip(text).split("\n"), 1):
        m = RAW.search(line)
        if m and src != CLOCK_FILE:
            bad.append(f"{src}:{no}: {m.group(1)}() reads the system clock: read the loop's "
                       f"(core/net/loop.h) or, for a duration, sysclock_mono_ts()")
        m = WALL.search(line)
        if m and src not in ALLOWED_WALL:
            bad.append(f"{src}:{no}: the wall clock without the test offset: use loop_wall_s()")
    return bad


def self_test():
    must_fail = [
        ("xfr/xfr.c", "uint64_t now = (uint64_t)time(NULL);"),
        ("core/zone/process.c", "return (uint32_t)time (NULL);"),
        ("acme/commit.c", "clock_gettime(CLOCK_MONOTONIC, &t0);"),
        ("cmd/serve.c", "gettimeofday(&tv, NULL);"),
        ("xfr/notify.c", "f.time_signed = (uint64_t)sysclock_wall_s();"),
        ("core/conf/log.c", "time_t t; time(&t);"),
    ]
    must_pass = [
        ("core/conf/sysclock.c", "return (int64_t)time(NULL);"),
        ("core/net/loop.c", "return sysclock_wall_s() + off / 1000;"),
        ("xfr/xfr.c", "/* time(NULL) was read here */ uint64_t now = loop_wall_s(x->l);"),
        ("xfr/xfr.c", 'log_info("time(NULL) in a string");'),
        ("core/zone/zone.c", "sysclock_mono_ts(&done); strftime(buf, 32, fmt, tm);"),
        ("cmd/status.c", "x = st->uptime(now);"),
    ]
    errors = [f"self-test: {s}: `{t}` was allowed" for s, t in must_fail if not check(s, t)]
    errors += [f"self-test: {s}: `{t}` was refused" for s, t in must_pass if check(s, t)]
    return errors


def main():
    bad = self_test()
    files = 0
    for top in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for n in sorted(names):
                if not n.endswith((".c", ".h")):
                    continue
                files += 1
                full = os.path.join(dirpath, n)
                with open(full, encoding="utf-8") as f:
                    bad += check(os.path.relpath(full, ROOT), f.read())
    for b in bad:
        print(b)
    failed = len({b.split(":")[0] for b in bad})
    print(f"{files - failed} passed, {failed} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
