#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds geoacme with warnings as errors and the test hooks
# (core/test_hooks.h) and runs the whole test suite (ctest labels unit,
# integration and conformance; see HACKING.md, Testing).
# Arguments go to ctest, e.g. `scripts/test.sh -L conformance`.
#
# It reuses what scripts/demo.sh built: the same folder (build/) and the
# same flags but GEOACME_TEST_HOOKS, which reaches the code through one
# generated header, so turning it on recompiles only the files that use a
# hook (five) and builds what the demo left out (the test programs).
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh          # the test toolchain: installs what is missing (nothing, usually)
cmake -S . -B build -DGEOACME_WERROR=ON -DGEOACME_TEST_HOOKS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2 "$@"
