#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue #28: the CPU per query of answers synthesized from a wildcard and a
# DNAME, for a flood of random names (+DO, no name asked twice), against
# a static signed A answer; geoacme alone, on a signed zone.  Every RRSIG
# and NSEC in those answers was made with the snapshot, so the costs should
# be alike (doc/performance.md, "Wildcards and DNAME").
#
#   bench/wildcard.sh       builds (Release) and runs (~1 min at the defaults)
#
# Settings (environment):
#   BENCH_LOAD=20000        offered load, queries/s (fixed, so CPU/query compares)
#   BENCH_RUNS=3            rounds (medians shown)   BENCH_FIX_S=3 seconds a run
#   BENCH_PORT=15400        BENCH_SERVER_CPU=0 BENCH_CLIENT_CPU=1
#   BENCH_GEOACME=PATH      a geoacme binary to run instead of building one
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
. "$BENCH_DIR/lib.sh"

LOAD=${BENCH_LOAD:-20000}
RUNS=${BENCH_RUNS:-3}
FIX_S=${BENCH_FIX_S:-3}
PORT=${BENCH_PORT:-15400}
SERVER_CPU=${BENCH_SERVER_CPU:-0}
CLIENT_CPU=${BENCH_CLIENT_CPU:-1}
BUILD=$ROOT/build-bench
GEOACME=${BENCH_GEOACME:-$BUILD/cmd/geoacme}
CLASSES="static_do wild_do wild_nodata_do dname_do"
declare -A LABEL=([static_do]="static A +DO" [wild_do]="random name under *.w, TXT +DO"
	[wild_nodata_do]="random name under *.w, A (NODATA) +DO"
	[dname_do]="random name under a DNAME, TXT +DO")

W=$(mktemp -d /tmp/geoacme-bench-wild.XXXXXX)
trap 'bench_cleanup; rm -rf "$W"' EXIT

if [ -z "${BENCH_GEOACME:-}" ]; then
	cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null || die "cmake configure failed"
	nice cmake --build "$BUILD" -j2 --target geoacme >"$W/build.log" 2>&1 ||
		{ tail -30 "$W/build.log" >&2; die "build failed"; }
fi
for i in $(seq 200); do port_free "$PORT" && break; PORT=$((PORT + 1)); done

(umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/zsk.pem" 2>/dev/null) ||
	die "openssl genpkey failed"
cat >"$W/example.com.zone" <<'ZONE'
$ORIGIN example.com.
$TTL 3600
@    IN SOA ns1 hostmaster 1 7200 3600 1209600 300
@    IN NS  ns1
ns1  IN A   192.0.2.53
www  IN A   192.0.2.80
*.w  IN TXT "wildcard"
dn   IN DNAME w.example.com.
ZONE
cat >"$W/geoacme.toml" <<EOF
listen_addrs_ipv4 = ["127.0.0.1"]
listen_addrs_ipv6 = []
listen_port = $PORT
log_level = "warn"
[[zones]]
zone = "example.com"
zone_type = "Primary"
file = "$W/example.com.zone"
[[zones.keys]]
algorithm = "ECDSAP256SHA256"
key_path = "$W/zsk.pem"
EOF
mkdir -p "$W/q"
echo "www.example.com A" >"$W/q/static_do"
for r in $(seq "$RUNS"); do   # fresh random names per run: none asked twice
	for class in wild_do wild_nodata_do dname_do; do
		case $class in
		wild_do) suffix="w.example.com TXT" ;;
		wild_nodata_do) suffix="w.example.com A" ;;
		dname_do) suffix="dn.example.com TXT" ;;
		esac
		awk -v seed="$r$(printf '%s' "$class" | cksum | cut -d' ' -f1)" -v n=$((LOAD * FIX_S + 1000)) \
			-v s="$suffix" 'BEGIN {
			srand(seed % 1000000007); c = "abcdefghijklmnopqrstuvwxyz0123456789"
			for (i = 0; i < n; i++) {
				x = ""
				for (j = 0; j < 12; j++) x = x substr(c, int(rand() * 36) + 1, 1)
				print x "." s
			}
		}' >"$W/q/$class.$r"
	done
done

bench_spawn "$W/geoacme.log" taskset -c "$SERVER_CPU" "$GEOACME" serve -c "$W/geoacme.toml"
PID=$SPAWNED_PID
wait_ready "$PORT" "$PID" 60 || { tail -20 "$W/geoacme.log" >&2; die "geoacme did not start"; }
check() {   # check ARGS...: the status and the answer's types, said once before measuring
	kdig @127.0.0.1 -p "$PORT" +norec +dnssec "$@" | awk '/status:/ { gsub(/[,;]/, "", $6); printf "%s", $6 }
		/^;; ANSWER SECTION:/ { a = 1; next } /^;; / { a = 0 } a && NF >= 5 { printf " %s", $4 }'
}
say "static A:       $(check www.example.com A)"
say "wildcard TXT:   $(check x1.w.example.com TXT)"
say "wildcard A:     $(check x1.w.example.com A)"
say "DNAME then TXT: $(check x1.dn.example.com TXT)"
run_dnsperf "$PORT" 1 0 -d "$W/q/static_do" -D >/dev/null   # warm up

for r in $(seq "$RUNS"); do
	for class in $CLASSES; do
		file=$W/q/$class.$r
		[ "$class" = static_do ] && file=$W/q/static_do
		t0=$(tree_ticks "$PID")
		out=$(run_dnsperf "$PORT" "$FIX_S" "$LOAD" -d "$file" -D)
		t1=$(tree_ticks "$PID")
		n=$(perf_field "$out" completed)
		printf '%s\t%s\t%s\t%s\n' "$class" "$r" "$(us_per_query $((t1 - t0)) "${n:-0}")" \
			"$(perf_field "$out" rcodes)" >>"$W/rounds.tsv"
	done
done
bench_stop "$PID"

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
static=$(awk -F'\t' '$1 == "static_do" { print $3 }' "$W/rounds.tsv" | median)
printf '\n| query class (geoacme, signed zone, %s q/s offered, %s runs of %s s) | CPU µs/query (median) | vs static A +DO | rcodes (last run) |\n|---|---|---|---|\n' \
	"$LOAD" "$RUNS" "$FIX_S"
for class in $CLASSES; do
	us=$(awk -F'\t' -v c="$class" '$1 == c { print $3 }' "$W/rounds.tsv" | median)
	rc=$(awk -F'\t' -v c="$class" '$1 == c { print $4 }' "$W/rounds.tsv" | tail -1)
	printf '| %s | %s | %s | %s |\n' "${LABEL[$class]}" "$us" \
		"$(awk -v a="$us" -v b="$static" 'BEGIN { if (b > 0) printf "%.2f×", a / b; else print "-" }')" "$rc"
done
