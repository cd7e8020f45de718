#!/bin/bash
# SPDX-License-Identifier: MIT
# What an ACME UPDATE costs as the zone grows, and what it costs the queries
# answered meanwhile (doc/performance.md, "UPDATEs").  geoacme alone, one
# signed ACME zone of N TXT records (seeded into SQLite on first start), for
# each N in $BENCH_UPDATE_SIZES:
#
#   ready after      exec to the "ready:" log line (seeding, loading, signing)
#   UPDATE ms        round trip of one TSIG-signed UPDATE over UDP (dnspython),
#                    median and max of $BENCH_UPDATE_COUNT, one a second, adding
#                    and removing TXT records as Lego does; and the server's own
#                    time from the change list to the committed, served change
#                    (its log line: "snapshot patched in X ms")
#   query p99.9      dnsperf at $BENCH_UPDATE_QPS queries/s for
#                    $BENCH_UPDATE_LOAD_S s (TXT +DO of the zone's names, 1 in 10
#                    an NXDOMAIN), from its per-query latencies (-v): first with
#                    no UPDATE, then with one UPDATE a second
#   longest stall    the server's geoacme_loop_busy_recent_max_seconds
#                    (/metrics): the longest single round of its event loop in
#                    each phase (UPDATEs alone, queries alone, both)
#
#   bench/update.sh          builds build-bench/ (Release) if needed; ~2 min per size
#
# Settings: BENCH_UPDATE_SIZES="10 1000 10000 100000"  BENCH_UPDATE_COUNT=20
#   BENCH_UPDATE_QPS=10000  BENCH_UPDATE_LOAD_S=60  BENCH_PORT=15300
#   BENCH_SERVER_CPU=0 BENCH_CLIENT_CPU=1  BENCH_KEEP=0  BENCH_UPDATE_OUT=build-bench/update-results.md
# Needs dnsperf, python3-dnspython and openssl (scripts/deps.sh installs them).
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
. "$BENCH_DIR/lib.sh"

SIZES=${BENCH_UPDATE_SIZES:-"10 1000 10000 100000"}
COUNT=${BENCH_UPDATE_COUNT:-20}
QPS=${BENCH_UPDATE_QPS:-10000}
LOAD_S=${BENCH_UPDATE_LOAD_S:-60}
PORT=${BENCH_PORT:-15300}
SERVER_CPU=${BENCH_SERVER_CPU:-0}
CLIENT_CPU=${BENCH_CLIENT_CPU:-1}
BUILD=$ROOT/build-bench
GEOACME=$BUILD/cmd/geoacme
OUT=${BENCH_UPDATE_OUT:-$BUILD/update-results.md}
SECRET=$(openssl rand -base64 32)

for tool in dnsperf openssl taskset; do
	command -v "$tool" >/dev/null || die "$tool is missing (see scripts/deps.sh, bench/run.sh)"
done
/usr/bin/python3 -c "import dns.update" 2>/dev/null || die "python3-dnspython is missing"

for _ in $(seq 200); do
	port_free "$PORT" && port_free $((PORT + 1)) && break
	PORT=$((PORT + 1))
done
LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg)

W=$(mktemp -d /tmp/geoacme-update-bench.XXXXXX)
UPDATER_PID=""
cleanup() {
	[ -n "$UPDATER_PID" ] && kill "$UPDATER_PID" 2>/dev/null
	bench_cleanup
	if [ "${BENCH_KEEP:-0}" = 1 ]; then say "kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "building geoacme (Release) in $BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$W/cmake.log" 2>&1 &&
	cmake --build "$BUILD" -j2 --target geoacme >"$W/build.log" 2>&1 ||
	die "build failed (see $W/build.log)"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/zsk.pem" 2>/dev/null &&
	chmod 600 "$W/zsk.pem" || die "openssl genpkey failed"

# The Lego-like client: one UPDATE every $interval s, alternately adding a
# token and removing it again; prints each round trip in ms.
cat >"$W/updater.py" <<'EOF'
import sys, time
import dns.query, dns.rcode, dns.tsigkeyring, dns.update
port, secret, count, interval = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
keyring = dns.tsigkeyring.from_text({"bench-key.": secret})
start = time.monotonic()
for i in range(count):
    delay = start + i * interval - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    up = dns.update.UpdateMessage("acme.example.net", keyring=keyring, keyalgorithm="hmac-sha256")
    owner = "_acme-challenge.lego%d.acme.example.net." % (i // 2)
    if i % 2 == 0:
        up.add(owner, 60, "TXT", '"token-%d"' % i)
    else:
        up.delete(owner, "TXT")
    t0 = time.perf_counter()
    r = dns.query.udp(up, "127.0.0.1", port=port, timeout=120)
    ms = (time.perf_counter() - t0) * 1000
    if r.rcode() != dns.rcode.NOERROR:
        sys.exit("UPDATE %d: %s" % (i, dns.rcode.to_text(r.rcode())))
    print("%.3f" % ms, flush=True)
EOF

write_config() {   # write_config DIR N
	local d=$1 n=$2
	mkdir -p "$d"
	acme_zone "$n" >"$d/acme.zone"
	awk -v n="$n" 'BEGIN {
		srand(7)
		for (i = 0; i < 20000; i++) {
			if (i % 10 == 9) printf "nx%d.acme.example.net TXT\n", i
			else printf "_acme-challenge.h%d.acme.example.net TXT\n", int(rand() * n)
		}
	}' >"$d/queries"
	cat >"$d/geoacme.toml" <<EOF
listen_addrs_ipv4 = ["127.0.0.1"]
listen_port = $PORT
log_level = "info"

[server]
http_listen = ["127.0.0.1:$((PORT + 1))"]

EOF
	acme_zone_toml "$W/zsk.pem" $((n + 1000)) "$SECRET" >>"$d/geoacme.toml"
}

# The longest loop round since the previous call, in ms.
stall_ms() { geoacme_stall_ms $((PORT + 1)); }

# dnsperf's per-query latencies (s) -> "p50 p99 p99.9 max" in ms, and the
# share answered.
run_load() {   # run_load DIR LABEL
	local d=$1 label=$2
	timeout $((LOAD_S + 30)) taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$PORT" \
		-d "$d/queries" -D -l "$LOAD_S" -Q "$QPS" -c 1 -T 1 -t 2 -v >"$d/dnsperf-$label.out" 2>&1
	awk '$1 == ">" { print $NF * 1000 }' "$d/dnsperf-$label.out" | sort -n >"$d/lat-$label"
	awk -v f="$d/dnsperf-$label.out" '
		{ v[NR] = $1 }
		END {
			if (NR == 0) { print "- - - - -"; exit }
			i50 = int(NR * 0.50); i99 = int(NR * 0.99); i999 = int(NR * 0.999)
			if (i50 < 1) i50 = 1; if (i99 < 1) i99 = 1; if (i999 < 1) i999 = 1
			while ((getline line < f) > 0)
				if (line ~ /Queries lost:/) { split(line, a, " "); lost = a[3] }
			printf "%.2f %.2f %.2f %.2f %s\n", v[i50], v[i99], v[i999], v[NR], lost
		}' "$d/lat-$label"
}

one_size() {   # one_size N
	local n=$1 d=$W/n$1 t0 up pid stall0 stall1 quiet busy lat srv
	write_config "$d" "$n"
	say "== $n ACME records (port $PORT)"
	t0=$(date +%s.%N)
	bench_spawn "$d/geoacme.log" taskset -c "$SERVER_CPU" "$GEOACME" serve -c "$d/geoacme.toml"
	pid=$SPAWNED_PID
	for _ in $(seq 1 3000); do
		grep -q 'ready:' "$d/geoacme.log" 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	grep -q 'ready:' "$d/geoacme.log" || { tail -3 "$d/geoacme.log" >&2; bench_stop "$pid"; return 1; }
	up=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')

	# UPDATEs alone (no query load), then queries alone, then both; the
	# longest loop round of each phase.
	stall_ms >/dev/null
	/usr/bin/python3 "$W/updater.py" "$PORT" "$SECRET" "$COUNT" 1 >"$d/update-rtt" || say "UPDATE failed"
	stallu=$(stall_ms)
	quiet=$(run_load "$d" quiet)
	stall0=$(stall_ms)
	/usr/bin/python3 "$W/updater.py" "$PORT" "$SECRET" "$LOAD_S" 1 >"$d/update-rtt-load" &
	UPDATER_PID=$!
	busy=$(run_load "$d" updates)
	wait "$UPDATER_PID" || say "UPDATE under load failed"
	UPDATER_PID=""
	stall1=$(stall_ms)
	episodes=$(geoacme_metric $((PORT + 1)) geoacme_udp_busy_total)   # UDP sockets gone busy
	lat=$(sort -n "$d/update-rtt" | awk '{ v[NR] = $1 } END { if (NR) printf "%.1f %.1f", v[int((NR + 1) / 2)], v[NR]; else print "- -" }')
	# The server's own time per change (its log): total, the SQLite commit
	# in it, and the rest (patching or building, signing): medians and
	# maxima; and how many changes were built whole instead of patched.
	grep -o 'snapshot [a-z]* in [0-9.]* ms (SQLite commit [0-9.]* ms' "$d/geoacme.log" |
		tr -d '(' | awk '{ print $4, $8, $4 - $8, ($2 == "patched") ? 0 : 1 }' >"$d/server-ms"
	srv=$(for col in 1 2 3; do
		sort -k${col},${col}n "$d/server-ms" | awk -v c=$col '{ n++; v[n] = $c }
			END { if (n) printf "%.2f %.2f ", v[int((n + 1) / 2)], v[n]; else printf "- - " }'
	done
	awk '{ r += $4 } END { print r + 0 }' "$d/server-ms")
	bench_stop "$pid"
	printf '%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$up" "$lat" "$srv" "$quiet" "$busy" \
		"$stall0" "$stall1" "$stallu" >>"$W/update.tsv"
	say "  ready ${up}s; UPDATE rtt median/max $lat ms; server total, commit, rest (median max) and built whole: $srv; quiet p50/p99/p99.9/max/lost $quiet; with updates $busy; longest loop round: UPDATEs alone $stallu, queries alone $stall0, both $stall1 ms; UDP busy episodes $episodes"
}

for n in $SIZES; do
	one_size "$n" || say "size $n failed"
done

{
	echo "## UPDATEs (bench/update.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), geoacme $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null))"
	echo
	echo "| ACME records | ready after | UPDATE round trip median / max | server: change served median / max | of which SQLite commit median / max | the rest (patch, signing) median / max | query p99.9, no UPDATEs / 1 UPDATE/s | query max, no UPDATEs / with | longest loop round: UPDATEs alone / queries alone / both |"
	echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	awk -F'\t' '{
		split($3, l, " "); split($4, s, " "); split($5, q, " "); split($6, b, " ")
		rb = (s[7] > 0) ? sprintf(" (%d built whole)", s[7]) : ""
		printf "| %s | %s s | %s / %s ms | %s / %s ms%s | %s / %s ms | %s / %s ms | %s / %s ms | %s / %s ms | %s / %s / %s ms |\n",
			$1, $2, l[1], l[2], s[1], s[2], rb, s[3], s[4], s[5], s[6], q[3], b[3], q[4], b[4], $9, $7, $8
	}' "$W/update.tsv"
	echo
	echo "$COUNT UPDATEs one a second without query load for the round trip; dnsperf at $QPS queries/s for $LOAD_S s,"
	echo "one client, TXT +DO, then again while one UPDATE a second arrives. Server on core $SERVER_CPU, clients on core $CLIENT_CPU;"
	echo "load average at the start $LOADAVG (wall-clock figures include any time the server was not running)."
	echo
	echo "Targets (issue #15), at the largest size measured:"
	echo
	awk -F'\t' '
		function mark(ok) { return ok ? "met" : "NOT met" }
		{ n = $1; row = $0 }
		END {
			if (!n) { print "- no size was measured"; exit }
			split(row, f, "\t"); split(f[3], l, " "); split(f[5], q, " "); split(f[6], b, " ")
			printf "- UPDATE answered within 20 ms on a signed %s-record zone: round trip median %s ms, max %s ms: %s.\n", n, l[1], l[2], mark(l[2] != "-" && l[2] + 0 <= 20)
			printf "- query p99.9 under one UPDATE a second at most 5 ms: %s ms (%s ms with no UPDATEs): %s.\n", b[3], q[3], mark(b[3] != "-" && b[3] + 0 <= 5)
			printf "- longest loop round while UPDATEs and queries arrive: %s ms (queries alone %s ms, UPDATEs alone %s ms).\n", f[8], f[7], f[9]
			printf "- start-up with %s records under 7.2 s: %s s: %s.\n", n, f[2], mark(f[2] + 0 < 7.2)
		}' "$W/update.tsv"
} | tee "$OUT"
say "saved to $OUT"
