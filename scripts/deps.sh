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
prometheus chromium systemd man-db
zonemaster-cli knot-resolver bind9 iproute2 util-linux
knot nsd"
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
	# unbound, kresd (knot-resolver) and named (bind9) are run by the tests
	# themselves, each on its own port with its own config; their packages
	# would also start system services on install.  A policy-rc.d that
	# denies every start (Debian's mechanism, honoured by invoke-rc.d and
	# deb-systemd-invoke) keeps them stopped, unless the machine already
	# has a policy of its own, which is left alone.
	policy=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\n# scripts/deps.sh: no service starts while it installs\nexit 101\n' |
			$SUDO tee "$policy" >/dev/null
		$SUDO chmod 755 "$policy"
	fi
	rc=0
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $missing || rc=$?
	[ -z "$policy" ] || $SUDO rm -f "$policy"
	[ "$rc" -eq 0 ] || exit "$rc"
fi
