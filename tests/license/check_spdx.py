#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every source file carries an SPDX licence header (LICENSE: MIT).

Source files: C (.c, .h), Python, shell and Perl scripts, CMake files, the
templates (.in) and CI scripts; an SPDX-License-Identifier line must be in
the first three lines.  Fixtures, corpora and documentation are data, not
source.  Exits 1 and names every file without one; prints "N passed, 0
failed" when clean.
"""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WANT = "SPDX-License-Identifier: MIT"
SKIP_DIRS = {".git", "build", "data", "node_modules"}
SOURCE_EXT = (".c", ".h", ".py", ".sh", ".pl", ".cmake", ".in")


def is_source(rel):
    name = os.path.basename(rel)
    if rel.startswith("tests/fuzz/corpus/") or rel.startswith("tests/fuzz/regressions/"):
        return False
    if rel.startswith(("build", "obj-", "demo/run/")):
        return False
    # debian/: rules is ours; the rest is data or debhelper's output.
    if rel.startswith("debian/"):
        return rel == "debian/rules"
    return name == "CMakeLists.txt" or name.endswith(SOURCE_EXT) or rel == ".ci/run"


def files():
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith("build")
                       and not d.startswith("obj-")]
        for f in filenames:
            rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
            if is_source(rel):
                yield rel


def main():
    bad, n = [], 0
    for rel in sorted(files()):
        n += 1
        with open(os.path.join(ROOT, rel), "r", errors="replace") as f:
            head = [f.readline() for _ in range(3)]
        if not any(WANT in line for line in head):
            bad.append(rel)
    for rel in bad:
        print("%s: no '%s' line in its first three lines" % (rel, WANT))
    print("%d passed, %d failed" % (n - len(bad), len(bad)))
    return 1 if bad or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
