#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Test-only hooks stay out of builds without GEOACME_TEST_HOOKS (issue #23).

1. In the sources (cmd, acme, xfr, dnssec, storage, core): the hook names
   ("GEOACME_TEST_...") are written only in core/test_hooks.h, and getenv()
   is called only there and for the few real variables listed below; a
   file that tests GEOACME_TEST_HOOKS or calls test_hook() includes
   core/test_hooks.h (the option reaches the code only through it).
2. Every object file given on the command line (tests/CMakeLists.txt builds
   the files that include core/test_hooks.h a second time without
   GEOACME_TEST_HOOKS) holds no hook name.
Exits 1 and names every offence; prints "N passed, 0 failed" when clean.
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FOLDERS = ("cmd", "acme", "xfr", "dnssec", "storage", "core")
HOOKS_HEADER = "core/test_hooks.h"
# getenv() outside the hooks: variables that are part of the product.
REAL_ENV = {"cmd/notify.c": "NOTIFY_SOCKET"}
NAME = re.compile(r'"GEOACME_TEST_')
GETENV = re.compile(r"\bgetenv\s*\(")
USES_HOOKS = re.compile(r"\bGEOACME_TEST_HOOKS\b|\btest_hook(_name)?\s*\(|\bTEST_HOOKS_ON\b")


def strip_comments(text):
    return re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text,
                  flags=re.S)


def check_sources():
    bad, files = [], 0
    for top in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for n in sorted(names):
                if not n.endswith((".c", ".h")):
                    continue
                files += 1
                full = os.path.join(dirpath, n)
                src = os.path.relpath(full, ROOT)
                with open(full, encoding="utf-8") as f:
                    code = strip_comments(f.read())
                if src == HOOKS_HEADER:
                    continue
                if USES_HOOKS.search(code) and '#include "core/test_hooks.h"' not in code:
                    bad.append(f"{src}: uses the test hooks without including {HOOKS_HEADER}")
                for no, line in enumerate(code.split("\n"), 1):
                    if NAME.search(line):
                        bad.append(f"{src}:{no}: a test hook name outside {HOOKS_HEADER}")
                    if GETENV.search(line) and REAL_ENV.get(src, "\0") not in line:
                        bad.append(f"{src}:{no}: getenv() outside {HOOKS_HEADER} "
                                   "(a test hook goes through test_hook())")
    return bad, files


def check_objects(paths):
    bad = []
    for p in paths:
        with open(p, "rb") as f:
            data = f.read()
        for m in re.finditer(rb"GEOACME_TEST_[A-Z_]*", data):
            bad.append(f"{p}: holds {m.group(0).decode()} though built without the test hooks")
    return bad


def self_test():
    """The checks can fail: a stray name and a stray getenv are caught."""
    fake = strip_comments('/* "GEOACME_TEST_X" */ x = getenv("GEOACME_TEST_Y");')
    errors = []
    if not NAME.search(fake) or not GETENV.search(fake):
        errors.append("self-test: a getenv of a hook name was not caught")
    if NAME.search(strip_comments('/* "GEOACME_TEST_X" in a comment */')):
        errors.append("self-test: a name in a comment was taken for code")
    return errors


def main():
    objects = sys.argv[1:]
    bad = self_test()
    src_bad, files = check_sources()
    bad += src_bad + check_objects(objects)
    for b in bad:
        print(b)
    total = files + len(objects)
    failed = len({b.split(":")[0] for b in bad})
    print(f"{total - failed} passed, {failed} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
