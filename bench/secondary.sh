#!/bin/bash
# SPDX-License-Identifier: MIT
# A geoacme secondary receiving one-record IXFRs into a copy of N records
# (issue #15: an IXFR in costs the difference, not the zone).
#
# A geoacme primary serves a signed ACME zone of N TXT records (seeded into
# SQLite on first start) and NOTIFYs a geoacme secondary; once the secondary
# holds the copy, $BENCH_SECONDARY_COUNT UPDATEs on the primary (one TXT
# added, then removed, in turn) each reach it by NOTIFY + IXFR.  Printed per
# IXFR, from the secondary: its own time to apply the difference and serve
# it (its log: "copy patched/built whole in X ms", which includes storing
# the difference in SQLite) and the longest event-loop round while it did
# (/metrics geoacme_loop_busy_recent_max_seconds, scraped before and after:
# no query waits longer than that).  An older binary (without the log's
# "in X ms") still gives the loop round: GEOACME=/path/to/geoacme.
#
# Settings: BENCH_SECONDARY_SIZE=100000  BENCH_SECONDARY_COUNT=6  BENCH_PORT=24000
#   GEOACME (default: builds ./build-bench/cmd/geoacme, Release)  BENCH_KEEP=0
set -u
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
. "$BENCH_DIR/lib.sh"

N=${BENCH_SECONDARY_SIZE:-100000}
COUNT=${BENCH_SECONDARY_COUNT:-6}
PORT=${BENCH_PORT:-24000}
BUILD=$ROOT/build-bench
for _ in $(seq 200); do
	port_free "$PORT" && port_free $((PORT + 1)) && port_free $((PORT + 2)) &&
		port_free $((PORT + 3)) && break
	PORT=$((PORT + 4))
done
PP=$PORT SP=$((PORT + 2))

W=$(mktemp -d /tmp/geoacme-secondary-bench.XXXXXX)
cleanup() {
	bench_cleanup
	if [ "${BENCH_KEEP:-0}" = 1 ]; then say "kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "${GEOACME:-}" ]; then
	say "building geoacme (Release) in $BUILD"
	cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$W/cmake.log" 2>&1 &&
		cmake --build "$BUILD" -j2 --target geoacme >"$W/build.log" 2>&1 ||
		die "build failed (see $W/build.log)"
	GEOACME=$BUILD/cmd/geoacme
fi
SECRET=$(openssl rand -base64 32)
mkdir -p "$W/p" "$W/s"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/p/zsk.pem" 2>/dev/null &&
	chmod 600 "$W/p/zsk.pem" || die "openssl genpkey failed"
acme_zone "$N" >"$W/p/acme.zone"
cat >"$W/p/geoacme.toml" <<EOF
listen_addrs_ipv4 = ["127.0.0.1"]
listen_port = $PP
log_level = "info"

EOF
acme_zone_toml "$W/p/zsk.pem" $((N + 1000)) "$SECRET" 'axfr_policy = "AllowAll"
axfr_from = ["127.0.0.1"]
notify = ["127.0.0.1:'"$SP"'"]' 'allow_axfr = false' >>"$W/p/geoacme.toml"
cat >"$W/s/geoacme.toml" <<EOF
listen_addrs_ipv4 = ["127.0.0.1"]
listen_port = $SP
log_level = "info"

[server]
http_listen = ["127.0.0.1:$((SP + 1))"]

[[zones]]
zone = "acme.example.net"
zone_type = "Secondary"
primaries = ["127.0.0.1:$PP"]

[zones.stores]
type = "sqlite"
journal_path = "copy.sqlite"
EOF

stall_ms() { geoacme_stall_ms $((SP + 1)); }
serial() {   # serial PORT
	/usr/bin/python3 -c 'import sys, dns.message, dns.query
r = dns.query.udp(dns.message.make_query("acme.example.net", "SOA"), "127.0.0.1", port=int(sys.argv[1]), timeout=2)
print(r.answer[0][0].serial if r.answer else 0)' "$1" 2>/dev/null || echo 0
}
wait_log_ready() {   # wait_log_ready LOG PID
	for _ in $(seq 1 3000); do
		grep -q 'ready:' "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || break
		sleep 0.1
	done
	tail -3 "$1" >&2
	return 1
}
wait_serial() {   # wait_serial SERIAL
	for _ in $(seq 1 3000); do
		[ "$(serial "$SP")" = "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

say "== primary with $N records (port $PP), secondary (port $SP): $GEOACME"
bench_spawn "$W/p.log" sh -c "cd '$W/p' && exec '$GEOACME' serve -c '$W/p/geoacme.toml'"
PPID_=$SPAWNED_PID
wait_log_ready "$W/p.log" "$PPID_" || die "the primary did not start"
bench_spawn "$W/s.log" sh -c "cd '$W/s' && exec '$GEOACME' serve -c '$W/s/geoacme.toml'"
SPID=$SPAWNED_PID
wait_log_ready "$W/s.log" "$SPID" || die "the secondary did not start"
wait_serial "$(serial "$PP")" || die "the secondary never got the copy"
grep -o 'AXFR from .*' "$W/s.log" | head -1 >&2

cat >"$W/update.py" <<'EOF'
import sys
import dns.query, dns.rcode, dns.tsigkeyring, dns.update
port, secret, i = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
keyring = dns.tsigkeyring.from_text({"bench-key.": secret})
up = dns.update.UpdateMessage("acme.example.net", keyring=keyring, keyalgorithm="hmac-sha256")
owner = "_acme-challenge.lego%d.acme.example.net." % (i // 2)
if i % 2 == 0:
    up.add(owner, 60, "TXT", '"token-%d"' % i)
else:
    up.delete(owner, "TXT")
r = dns.query.tcp(up, "127.0.0.1", port=port, timeout=120)
sys.exit(0 if r.rcode() == dns.rcode.NOERROR else 1)
EOF
printf '| IXFR | serial | secondary: applied and served in | longest loop round |\n|---|---|---|---|\n'
for i in $(seq 0 $((COUNT - 1))); do
	stall_ms >/dev/null
	/usr/bin/python3 "$W/update.py" "$PP" "$SECRET" "$i" || die "UPDATE $i failed"
	s=$(serial "$PP")
	wait_serial "$s" || die "the secondary never served serial $s"
	sleep 0.2
	ms=$(grep -o "serial [0-9]* -> $s: .*" "$W/s.log" | sed -n 's/.*copy \(.*\) in \([0-9.]*\) ms/\2 ms (\1)/p' | tail -1)
	printf '| %d | %s | %s | %s ms |\n' "$((i + 1))" "$s" "${ms:--}" "$(stall_ms)"
done
bench_stop "$SPID"
bench_stop "$PPID_"
