#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the Debian packages geoacme needs to build, test and benchmark.
# Used by the quick start and by CI; safe to run again.
# --list prints the package names and installs nothing.
set -eu
PACKAGES="build-essential cmake pkg-config clang
libldns-dev libssl-dev libsqlite3-dev libmaxminddb-dev
python3 python3-dnspython python3-cryptography sqlite3 mmdb-bin libmaxmind-db-writer-perl
knot-dnsutils ldnsutils bind9-dnsutils bind9-utils unbound lego pebble openssl dnsperf
prometheus chromium systemd man-db"
if [ "${1:-}" = "--list" ]; then
	echo $PACKAGES
	exit 0
fi
missing=""
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo"
	echo "installing:$missing"
	$SUDO apt-get update -q
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $missing
fi
