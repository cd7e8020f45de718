#!/bin/sh
# SPDX-License-Identifier: MIT
# Quick start: installs what is missing to build and run (not the test
# toolchain: scripts/deps.sh --demo), builds the server, makes the demo keys
# and fetches the demo geo database, then serves config.toml.example in the
# foreground on 127.0.0.1 and ::1, port 5353.  Ctrl-C stops it.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh --demo
# The same build folder and flags as scripts/test.sh but the test hooks
# (which it turns on: that recompiles the few files that use them), so the
# test command reuses this build instead of starting over.  Only the server
# is built here; the test programs are left to scripts/test.sh.
cmake -S . -B build -DGEOACME_WERROR=ON -DGEOACME_TEST_HOOKS=OFF \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2 --target geoacme
mkdir -p demo/run
chmod 700 demo/run
for zone in example.com acme.example.net; do
	[ -f "demo/run/$zone.pem" ] || build/cmd/geoacme keygen --key "demo/run/$zone.pem"
done
[ -f demo/run/update.acme.example.net.tsig ] ||
	build/cmd/geoacme keygen --tsig demo/run/update.acme.example.net.tsig
scripts/fetch-geo-data.sh --if-missing
build/cmd/geoacme check -c config.toml.example
echo
echo "DS records to publish in the parent zones:"
build/cmd/geoacme ds -c config.toml.example
echo
exec build/cmd/geoacme serve -c config.toml.example
