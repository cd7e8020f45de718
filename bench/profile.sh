#!/bin/bash
# SPDX-License-Identifier: MIT
# Profiles geoacme answering geo A + ECS + DO (the hot path; PROFILE_CLASS
# picks another query class) and prints the top functions.
#
#   bench/profile.sh          (root, Debian 12; run bench/run.sh once first
#                              or let this install dnsperf/perf/valgrind)
#
# Tool: perf when the CPU exposes hardware counters (checked with
# `perf stat -e instructions true`); otherwise callgrind, which counts
# instructions exactly and is not disturbed by other load on the machine,
# plus a perf profile on the cpu-clock timer when perf works at all (it
# shows the kernel's share, which callgrind cannot see).
#   PROFILE_TOOL=auto|perf|callgrind|both|none   PROFILE_S=8 (perf seconds)
#   PROFILE_QUERIES=20000 (callgrind: queries measured)   BENCH_KEEP=1 keeps the temp dir
#   PROFILE_OUTSTANDING=20 (callgrind: queries dnsperf keeps in flight; 1 gives
#                     one datagram per wake-up, as at the bench's fixed load)
#   PROFILE_CLASSES=1 also counts user-space instructions per query for every
#                     query class, for geoacme and PROFILE_PEERS="gdnsd knot"
#   PROFILE_CLASS=geo_ecs_do|static|static_do|geo_ecs|nx_do|acme_do|https_ecs_do   PROFILE_SITES=7 (grid beyond 7)
#     https_ecs_do: geo HTTPS + ECS + DO (3 records + RRSIG, and 4 signed
#     per-site address sets in Additional); compare with geo_ecs_do
#   PROFILE_BUILD=dir PROFILE_CMAKE_ARGS="-D..." build elsewhere, with other options
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
. "$BENCH_DIR/lib.sh"
. "$BENCH_DIR/servers.sh"

TOOL=${PROFILE_TOOL:-auto}
SECS=${PROFILE_S:-8}
NQ=${PROFILE_QUERIES:-20000}
SERVER_CPU=${BENCH_SERVER_CPU:-0}
CLIENT_CPU=${BENCH_CLIENT_CPU:-1}
PORT=${BENCH_PORT:-15390}
BUILD=${PROFILE_BUILD:-$ROOT/build-profile}
GEOACME=$BUILD/cmd/geoacme

[ "$(id -u)" -eq 0 ] || die "run as root"
for p in dnsperf linux-perf valgrind knot-dnsutils libmaxmind-db-writer-perl; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$p" >/dev/null || die "cannot install $p"
done

if [ "$TOOL" = auto ]; then
	if perf stat -e instructions -x, true 2>&1 | grep -q '^[0-9]'; then
		TOOL=perf
	else
		TOOL=both
		say "no hardware counters (perf stat -e instructions: not supported): callgrind + perf on cpu-clock"
	fi
fi

W=$(mktemp -d /tmp/geoacme-profile.XXXXXX) || die "mktemp failed"
trap 'bench_cleanup; [ "${BENCH_KEEP:-0}" = 1 ] && say "kept $W" || rm -rf "$W"' EXIT
trap 'exit 130' INT TERM

# Release flags, plus symbols and frame pointers for the call graphs.
say "building geoacme (Release, -g -fno-omit-frame-pointer) in $BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
	-DCMAKE_C_FLAGS="-g -fno-omit-frame-pointer" ${PROFILE_CMAKE_ARGS:-} >/dev/null ||
	die "cmake failed"
cmake --build "$BUILD" -j2 --target geoacme >"$W/build.log" 2>&1 || { tail -20 "$W/build.log"; die "build failed"; }

perl "$ROOT/tests/fixtures/make_mmdb.pl" --layout city --out "$W" >/dev/null || die "make_mmdb.pl failed"
(umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/zsk.pem" 2>/dev/null) ||
	die "openssl genpkey failed"
mkdir -p "$W/q"
while ! port_free "$PORT"; do PORT=$((PORT + 1)); done
geoacme_config "$W/geoacme" "$PORT" "${PROFILE_SITES:-7}" 10 "${PROFILE_UDP_IO:-epoll}"
# The class profiled (PROFILE_CLASS): geo_ecs_do, the hot path, by default.
CLASS=${PROFILE_CLASS:-geo_ecs_do}
# The per-class files hold NQ lines each (dnsperf -n 1 reads a file once).
awk -v n="$NQ" 'BEGIN { for (i = 0; i < n; i++) print "www.example.com A" }' >"$W/q/static"
awk -v n="$NQ" 'BEGIN { for (i = 0; i < n; i++) print "geo.example.com A" }' >"$W/q/geo.n"
awk -v n="$NQ" 'BEGIN { for (i = 0; i < n; i++) print "geo.example.com HTTPS" }' >"$W/q/https.n"
awk -v n="$NQ" 'BEGIN { for (i = 0; i < n; i++) print "_acme-challenge.h7.acme.example.net TXT" }' >"$W/q/acme"
awk -v n="$NQ" 'BEGIN { srand(7); c = "abcdefghijklmnopqrstuvwxyz0123456789"
	for (i = 0; i < n; i++) { s = ""; for (j = 0; j < 12; j++) s = s substr(c, int(rand() * 36) + 1, 1); print s ".example.com A" } }' >"$W/q/nx"

profile_perf() {
	local event=$1 pid
	say "== perf ($event), $CLASS at full speed for ${SECS}s"
	bench_spawn "$W/geoacme.log" taskset -c "$SERVER_CPU" "$GEOACME" serve -c "$W/geoacme/geoacme.toml"
	pid=$SPAWNED_PID
	wait_ready "$PORT" "$pid" 60 || die "geoacme did not start: $(tail -3 "$W/geoacme.log")"
	run_dnsperf "$PORT" 1 0 "${ARGS[@]}" >/dev/null
	bench_spawn "$W/dnsperf.perf.log" timeout $((SECS + 15)) taskset -c "$CLIENT_CPU" \
		dnsperf -s 127.0.0.1 -p "$PORT" -l $((SECS + 1)) -c 1 -T 1 "${ARGS[@]}"
	local client=$SPAWNED_PID
	perf record -e "$event" -F 4999 -g -p "$pid" -o "$W/perf.data" -- sleep "$SECS" 2>"$W/perf-record.log" >/dev/null
	wait "$client" 2>/dev/null
	bench_stop "$client"
	bench_stop "$pid"
	echo
	echo "### perf, $event, $CLASS: $(perf_field "$(cat "$W/dnsperf.perf.log")" qps) queries/s; where the server's time goes"
	echo
	echo '```'
	echo "share by object:"
	perf report -i "$W/perf.data" --no-children --sort dso --stdio -g none 2>/dev/null |
		grep -E '^ +[0-9]' | head -8
	echo
	echo "top functions (self time):"
	perf report -i "$W/perf.data" --no-children --sort dso,sym --stdio -g none 2>/dev/null |
		grep -E '^ +[0-9]' | head -30
	echo
	echo "geoacme functions, inclusive (children):"
	perf report -i "$W/perf.data" --children --dsos geoacme --sort sym --stdio -g none 2>/dev/null |
		grep -E '^ +[0-9]' | head -20
	echo '```'
}

profile_callgrind() {
	local pid out n total
	say "== callgrind, $NQ $CLASS queries"
	bench_spawn "$W/geoacme.cg.log" valgrind --tool=callgrind --instr-atstart=no \
		--callgrind-out-file="$W/callgrind.out" "$GEOACME" serve -c "$W/geoacme/geoacme.toml"
	pid=$SPAWNED_PID
	wait_ready "$PORT" "$pid" 180 || die "geoacme under valgrind did not start: $(tail -3 "$W/geoacme.cg.log")"
	# A few warm queries, then count only the measured ones.
	run_dnsperf "$PORT" 2 500 "${ARGS[@]}" >/dev/null
	callgrind_control -i on "$pid" >/dev/null 2>&1 || die "callgrind_control failed"
	out=$(timeout 300 taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$PORT" -c 1 -T 1 -t 5 \
		-q ${PROFILE_OUTSTANDING:-20} -n 1 "${ARGS[@]}" 2>&1)
	callgrind_control -i off "$pid" >/dev/null 2>&1
	n=$(perf_field "$out" completed)
	bench_stop "$pid"
	total=$(callgrind_annotate "$W/callgrind.out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }')
	echo
	echo "### callgrind, $CLASS: $n answered queries, $total instructions in user space: $(awk -v t="$total" -v n="$n" 'BEGIN { if (n > 0) printf "%.0f", t / n; else print "?" }') per query"
	echo
	echo '```'
	echo "top functions (self, instructions):"
	callgrind_annotate --inclusive=no "$W/callgrind.out" 2>/dev/null |
		awk '/^-+$/ { d++; next } d >= 3 && NF' | head -30
	echo
	echo "inclusive:"
	callgrind_annotate --inclusive=yes "$W/callgrind.out" 2>/dev/null |
		awk '/^-+$/ { d++; next } d >= 3 && NF' | head -25
	echo '```'
}

# PROFILE_CLASSES=1: user-space instructions per query for every query
# class, for geoacme and the servers in PROFILE_PEERS (default "gdnsd
# knot"), each under callgrind (deterministic, unlike CPU time on a shared
# machine).  The kernel's share, about 80% of a query's CPU time here and
# the same work for every server, is not counted: this is each server's
# own work.  NSD (forks per worker) and PowerDNS (slower by far in
# run.sh) are left out.
count_instructions() {   # count_instructions SERVER: one line of the table
	local server=$1 port pid class n total dump row=""
	port=$PORT
	while ! port_free "$port"; do port=$((port + 1)); done
	[ "$server" = geoacme ] || "${server}_setup" "$port" >/dev/null
	mkdir -p "$W/cg-$server"
	WRAP=(valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$W/cg-$server/out")
	if [ "$server" = geoacme ]; then
		bench_spawn "$W/geoacme.cgc.log" taskset -c "$SERVER_CPU" "${WRAP[@]}" "$GEOACME" serve -c "$W/geoacme/geoacme.toml"
		SERVER_PID=$SPAWNED_PID
		port=$PORT
	else
		"${server}_start" "$port"
	fi
	WRAP=()
	pid=$SERVER_PID
	wait_ready "$port" "$pid" 180 || { say "$server under valgrind did not start"; bench_stop "$pid"; return; }
	for class in static static_do geo_ecs geo_ecs_do https_ecs_do nx_do acme_do; do
		if [ "$server" = nsd ] && [[ $class == geo* ]]; then row="$row | n/a"; continue; fi
		if [[ $server != geoacme* ]] && [[ $class == acme_do || $class == https_ecs_do ]]; then
			row="$row | n/a"
			continue
		fi
		local args=()
		read -r -a args <<<"$(class_args "$class")"
		run_dnsperf "$port" 1 300 "${args[@]}" >/dev/null   # warm
		callgrind_control -z "$pid" >/dev/null 2>&1
		callgrind_control -i on "$pid" >/dev/null 2>&1
		n=$(perf_field "$(timeout 300 taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$port" \
			-c 1 -T 1 -t 5 -q ${PROFILE_OUTSTANDING:-20} -n 1 "${args[@]}" 2>&1)" completed)
		callgrind_control -i off "$pid" >/dev/null 2>&1
		callgrind_control -d "$class" "$pid" >/dev/null 2>&1
		# Each dump writes a new numbered file (one per thread if threads
		# are separated); sum the files this dump wrote.
		total=0
		for dump in "$W/cg-$server"/out.*; do
			if [ ! -f "$dump" ] || [[ $dump == *.done ]]; then continue; fi
			total=$((total + $(callgrind_annotate "$dump" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 + 0; exit }')))
			mv "$dump" "$dump.done"
		done
		row="$row | $(awk -v t="$total" -v n="$n" 'BEGIN { if (n > 0 && t > 0) printf "%.0f", t / n; else print "?" }')"
	done
	bench_stop "$pid"
	echo "| $server$row |"
}

profile_classes() {
	local s
	say "== callgrind, user-space instructions per query by class ($NQ queries each)"
	echo
	echo "### user-space instructions per query (callgrind, $NQ queries per class)"
	echo
	echo "| server | static A | static A +DO | geo A +ECS | geo A +ECS +DO | geo HTTPS +ECS +DO | random NXDOMAIN +DO | ACME TXT +DO |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	for s in geoacme ${PROFILE_PEERS-gdnsd knot}; do
		count_instructions "$s"
	done
}

class_args() {   # dnsperf arguments for a class; the files hold NQ queries
	case $1 in
	static) echo "-d $W/q/static" ;;
	static_do) echo "-d $W/q/static -D" ;;
	geo_ecs) echo "-d $W/q/geo.n -E 8:$ECS_HEX" ;;
	geo_ecs_do) echo "-d $W/q/geo.n -E 8:$ECS_HEX -D" ;;
	https_ecs_do) echo "-d $W/q/https.n -E 8:$ECS_HEX -D" ;;
	nx_do) echo "-d $W/q/nx -D" ;;
	acme_do) echo "-d $W/q/acme -D" ;;
	*) die "unknown class $1 (static static_do geo_ecs geo_ecs_do https_ecs_do nx_do acme_do)" ;;
	esac
}
read -r -a ARGS <<<"$(class_args "$CLASS")"

[ "${PROFILE_CLASSES:-0}" = 1 ] && profile_classes
case $TOOL in
perf) profile_perf cycles ;;
callgrind) profile_callgrind ;;
both)
	profile_callgrind
	if perf record -e cpu-clock -o "$W/probe.data" -- true >/dev/null 2>&1; then
		profile_perf cpu-clock
	fi
	;;
none) ;;
*) die "PROFILE_TOOL must be auto, perf, callgrind, both or none" ;;
esac
