#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds geoacme with AddressSanitizer + UBSan (GEOACME_SANITIZE=ON) into
# build-asan/ and runs the whole ctest suite there: unit tests, the fuzz
# regression replays, and the integration tests, whose servers then run
# instrumented too.  Any memory error, undefined behaviour or leak aborts
# the process that has it; a server that leaks on its clean SIGTERM
# shutdown exits non-zero, and the harness fails the test on that
# (tests/integration/harness.py, ServerTestCase.tearDownClass).
#
#   scripts/test-sanitize.sh [ctest arguments]     e.g. -L unit
set -eu
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DGEOACME_WERROR=ON -DGEOACME_SANITIZE=ON -DGEOACME_TEST_HOOKS=ON \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-asan -j2
# abort_on_error: a report ends the process with SIGABRT, which no caller
# can mistake for success.  detect_leaks: LeakSanitizer at exit.
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export ASAN_OPTIONS UBSAN_OPTIONS
ctest --test-dir build-asan --output-on-failure -j2 "$@"
