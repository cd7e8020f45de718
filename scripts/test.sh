#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds geoacme with warnings as errors and runs the whole test suite
# (ctest labels unit, integration and conformance; see README.md, Tests).
# Arguments go to ctest, e.g. `scripts/test.sh -L conformance`.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh          # installs what is missing (nothing, usually)
cmake -S . -B build -DGEOACME_WERROR=ON -DGEOACME_TEST_HOOKS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2 "$@"
