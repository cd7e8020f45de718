#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every Python test file of tests/integration and tests/conformance runs
its cases through harness.main(), never unittest.main() directly.

harness.main() exits 77 when a case was skipped, which ctest reports as
skipped (SKIP_RETURN_CODE); unittest.main() exits 0, so a file whose
root-only case was skipped would be counted as passed.  Fails listing the
files that call unittest.main( or never call main()."""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
bad = []
for folder in ("integration", "conformance"):
    for name in sorted(os.listdir(os.path.join(ROOT, folder))):
        if not (name.startswith("test_") and name.endswith(".py")):
            continue
        path = os.path.join(folder, name)
        with open(os.path.join(ROOT, path)) as f:
            text = f.read()
        if "unittest.main(" in text:
            bad.append("%s: calls unittest.main(); use harness.main()" % path)
        elif not re.search(r"(?m)^\s+(harness\.)?main\(\)\s*$", text):
            bad.append("%s: never calls harness.main()" % path)
for line in bad:
    print(line)
sys.exit(1 if bad else 0)
