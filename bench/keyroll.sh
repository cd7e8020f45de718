#!/bin/bash
# SPDX-License-Identifier: MIT
# How long does the event loop stop when a key change re-signs a zone from a
# file?  (issue #26; doc/performance.md, "Stalls").  For each size in
# $BENCH_KEYROLL_NAMES: geoacme serves a signed zone of that many names (one
# A record each, NSEC, one key, a [zones.key_policy] with lifetime 0), then
# `geoacme ctl key-roll` starts a rollover, whose first step signs every
# RRset with the new key too.  Printed per size:
#
#   signatures           of the last build (debug log: new + reused; both
#                        keys sign every RRset from step 1)
#   longest loop round   geoacme_loop_busy_recent_max_seconds from /metrics,
#                        scraped before key-roll and once both keys sign
#   re-signed in         from key-roll to the DNSKEY set with both keys
#                        served (kdig, polled every 50 ms)
#   slowest answer       the slowest of the DNSKEY queries kdig sent every
#                        50 ms meanwhile, kdig's own start included (one
#                        client, not a load)
#
#   bench/keyroll.sh        builds build-bench/ (Release) if needed
#
# Settings: BENCH_KEYROLL_NAMES="10000 100000"  BENCH_PORT=16400
#   BENCH_SERVER_CPU=0  GEOACME (default: build-bench/cmd/geoacme)
# Needs kdig, openssl, python3 (scripts/deps.sh installs them).
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
. "$BENCH_DIR/lib.sh"

SIZES=${BENCH_KEYROLL_NAMES:-"10000 100000"}
PORT=${BENCH_PORT:-16400}
HTTP=$((PORT + 1))
SERVER_CPU=${BENCH_SERVER_CPU:-0}
BUILD=$ROOT/build-bench

for tool in kdig openssl taskset; do
	command -v "$tool" >/dev/null || die "$tool is missing (see scripts/deps.sh)"
done
if [ -z "${GEOACME:-}" ]; then
	if [ ! -x "$BUILD/cmd/geoacme" ]; then
		cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null || die "cmake failed"
		cmake --build "$BUILD" -j2 --target geoacme >/dev/null || die "build failed"
	fi
	GEOACME=$BUILD/cmd/geoacme
fi
port_free "$PORT" || die "port $PORT is taken (BENCH_PORT)"

WORK=$(mktemp -d /tmp/geoacme-keyroll.XXXXXX)
trap 'bench_cleanup; rm -rf "$WORK"' EXIT

# The number of DNSKEY records served.
dnskeys() {
	kdig @127.0.0.1 -p "$PORT" +norec +time=60 +retry=0 +short example.com DNSKEY 2>/dev/null | grep -c .
}

printf '| names | signatures (new + reused) | longest loop round | re-signed in | slowest answer |\n'
printf '| ---: | ---: | ---: | ---: | ---: |\n'
for n in $SIZES; do
	d=$WORK/$n
	mkdir -p "$d/keys"
	awk -v n="$n" 'BEGIN {
		print "$ORIGIN example.com."
		print "$TTL 300"
		print "@ IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 60"
		print "@ IN NS ns1.example.com."
		print "ns1 IN A 192.0.2.53"
		for (i = 0; i < n; i++)
			printf "n%d IN A 192.0.2.%d\n", i, i % 250 + 1
	}' >"$d/example.com.zone"
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/example.com.pem" 2>/dev/null
	chmod 600 "$d/example.com.pem"
	cat >"$d/config.toml" <<EOF
listen_addrs_ipv4 = ["127.0.0.1"]
listen_port = $PORT
log_level = "debug"
[server]
control_socket = "$d/control.sock"
http_listen = ["127.0.0.1:$HTTP"]
[[zones]]
zone = "example.com"
zone_type = "Primary"
file = "$d/example.com.zone"
[[zones.keys]]
algorithm = "ECDSAP256SHA256"
key_path = "$d/example.com.pem"
[zones.key_policy]
lifetime = "0"
dnskey_ttl = "1h"
propagation_delay = "1h"
key_dir = "$d/keys"
parent = ["127.0.0.1:1"]
EOF
	bench_spawn "$d/server.log" taskset -c "$SERVER_CPU" "$GEOACME" serve -c "$d/config.toml"
	pid=$SPAWNED_PID
	wait_ready "$PORT" "$pid" 600 || { cat "$d/server.log" >&2; die "geoacme did not start"; }
	geoacme_stall_ms "$HTTP" >/dev/null   # a new period starts now
	t0=$(date +%s%N)
	"$GEOACME" ctl -c "$d/config.toml" key-roll example.com >/dev/null &
	ctl_pid=$!
	slowest=0
	while :; do
		a=$(date +%s%N)
		keys=$(dnskeys)
		b=$(date +%s%N)
		slowest=$(awk -v s="$slowest" -v t=$(((b - a) / 1000)) 'BEGIN { print (t > s ? t : s) }')
		[ "$keys" = 2 ] && break
		[ $(((b - t0) / 1000000000)) -ge 600 ] && die "the new key was never served"
		sleep 0.05
	done
	t1=$(date +%s%N)
	wait "$ctl_pid"
	stall=$(geoacme_stall_ms "$HTTP")
	rrsets=$(grep -o '[0-9]* RRsets signed' "$d/server.log" | tail -1 | awk '{ print $1 }')
	printf '| %s | %s | %s ms | %s ms | %s ms |\n' "$n" "${rrsets:--}" "$stall" \
		$(((t1 - t0) / 1000000)) "$(awk -v u="$slowest" 'BEGIN { printf "%.1f", u / 1000 }')"
	# What the server says of the re-signing (how long it took on its thread,
	# the swap on the loop), for the reader of the table.
	grep -E 're-signed beside the loop|swapped in on the loop|re-signed in slices' \
		"$d/server.log" | sed 's/^/  /' >&2
	bench_stop "$pid"
done
