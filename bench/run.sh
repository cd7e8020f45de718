#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmarks geoacme's hot path against NSD, Knot DNS, PowerDNS and gdnsd,
# and a UDP reflector as the limit of one core, in one run (Debian 12,
# root).  See doc/performance.md for what is measured and why.
#
#   bench/run.sh            installs what is missing, builds, runs (~12 min)
#
# Every server runs alone, on 127.0.0.1 and a high port, pinned to core
# $BENCH_SERVER_CPU with one worker; dnsperf runs on core $BENCH_CLIENT_CPU
# with one thread.  Per server and query class it measures the answered
# queries per second (median of 3 runs at full speed), the server's CPU time
# per answered query (utime+stime from /proc/PID/stat) at a fixed offered
# load and at full speed, and the peak RSS (VmHWM).  Then a scaling run for
# geoacme alone: sites 7 -> 500, ACME records 10 -> 100 000 (geo A and
# geo HTTPS answers side by side, ACME TXT, one UPDATE); then the user-space
# instructions per query of geoacme and gdnsd (bench/profile.sh under
# callgrind: deterministic, unlike CPU time on a shared machine); then
# bench/update.sh (UPDATE latency, query latency and the longest loop round
# while UPDATEs arrive, ACME records 10 -> 100 000).  The report ends with
# every target of doc/performance.md judged from this run's numbers.
#
# Settings (environment):
#   BENCH_LOAD=40000        fixed offered load, queries/s, for the CPU/query column
#   BENCH_RUNS=3            rounds (each server once per round; medians shown)
#   BENCH_RUN_S=2           seconds of a full-speed run, per round and class
#   BENCH_FIX_S=3           seconds of a fixed-load run, per round and class
#   BENCH_SERVERS="reflector geoacme nsd knot pdns gdnsd"
#   BENCH_CLASSES="static static_do geo_ecs geo_ecs_do nx_do wild_do"  (a subset for a short run)
#   BENCH_SCALING=1         0 skips the scaling run
#   BENCH_INSTRUCTIONS=1    0 skips the callgrind count (bench/profile.sh, PROFILE_CLASSES=1);
#                           BENCH_INSTR_QUERIES=5000 queries per class,
#                           BENCH_INSTR_PEERS="gdnsd"
#   BENCH_UPDATES=1         0 skips bench/update.sh (UPDATE latency and loop stalls per
#                           zone size; its own settings BENCH_UPDATE_* pass through)
#   BENCH_SCALE_SITES="50 500"  BENCH_SCALE_ACME="1000 100000"  (plus the base 7 / 10)
#   BENCH_SCALE_TIMEOUT=300 seconds geoacme may take to start at one size
#   BENCH_UPDATE_TIMEOUT=60  seconds one UPDATE may take (then the server is stopped)
#   BENCH_PORT=15300        first port tried; BENCH_SERVER_CPU=0 BENCH_CLIENT_CPU=1
#   BENCH_OUT=build-bench/bench-results.md   BENCH_KEEP=0 (1 keeps the temp dir)
#   BENCH_NO_INSTALL=0      1 skips apt-get (fails if something is missing)
#   BENCH_REPORT_FROM=DIR   prints the report of a kept run again, measures nothing
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
. "$BENCH_DIR/lib.sh"
. "$BENCH_DIR/servers.sh"

LOAD=${BENCH_LOAD:-40000}
RUN_S=${BENCH_RUN_S:-2}
RUNS=${BENCH_RUNS:-3}
FIX_S=${BENCH_FIX_S:-3}
SERVERS=${BENCH_SERVERS:-"reflector geoacme nsd knot pdns gdnsd"}
SCALING=${BENCH_SCALING:-1}
UPDATES=${BENCH_UPDATES:-1}
INSTRUCTIONS=${BENCH_INSTRUCTIONS:-1}
SCALE_SITES=${BENCH_SCALE_SITES:-"50 500"}
SCALE_ACME=${BENCH_SCALE_ACME:-"1000 100000"}
SCALE_TIMEOUT=${BENCH_SCALE_TIMEOUT:-300}
UPDATE_TIMEOUT=${BENCH_UPDATE_TIMEOUT:-60}
SERVER_CPU=${BENCH_SERVER_CPU:-0}
CLIENT_CPU=${BENCH_CLIENT_CPU:-1}
PORT=${BENCH_PORT:-15300}
OUT=${BENCH_OUT:-$ROOT/build-bench/bench-results.md}
BUILD=$ROOT/build-bench
GEOACME=$BUILD/cmd/geoacme

# Debian 12 names.  LUA records are part of pdns-server itself
# (pdns-backend-lua2 is a different thing, a backend written in Lua, and
# is not needed); live-signing needs a backend that stores keys, hence
# gsqlite3; pickclosest() needs the geoip backend's MMDB reader.
PEER_PACKAGES="dnsperf nsd knot knot-module-geoip knot-dnsutils pdns-server
pdns-backend-geoip pdns-backend-sqlite3 gdnsd ldnsutils sqlite3 iproute2
libmaxmind-db-writer-perl bc"

CLASSES=${BENCH_CLASSES:-"static static_do geo_ecs geo_ecs_do nx_do wild_do"}
declare -A CLASS_LABEL=(
	[static]="static A" [static_do]="static A +DO" [geo_ecs]="geo A +ECS"
	[geo_ecs_do]="geo A +ECS +DO" [nx_do]="random NXDOMAIN +DO" [acme_do]="ACME TXT +DO"
	[wild_do]="random name under *.w, TXT +DO"
)

# ---- setup ---------------------------------------------------------------

install_packages() {
	[ "${BENCH_NO_INSTALL:-0}" = 1 ] && return 0
	[ "$(id -u)" -eq 0 ] || die "run as root (installs packages, pins CPUs)"
	"$ROOT/scripts/deps.sh" || die "scripts/deps.sh failed"
	local p missing="" before after
	for p in $PEER_PACKAGES; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	say "installing:$missing"
	before=$(daemon_pids)
	apt-get update -q >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >/dev/null || die "apt-get install failed"
	# Packages may start their daemons on install (on :53).  Stop exactly
	# the ones that appeared during the install, by PID.
	after=$(daemon_pids)
	for p in $(comm -13 <(echo "$before" | sort) <(echo "$after" | sort)); do
		say "stopping $(cat /proc/$p/comm 2>/dev/null) (PID $p), started by its package"
		kill -TERM "$p" 2>/dev/null
	done
}

daemon_pids() {   # PIDs of packaged DNS daemons, to tell new ones apart
	ps -e -o pid=,comm= | awk '$2 == "nsd" || $2 == "knotd" || $2 == "pdns_server" || $2 == "gdnsd" { print $1 }'
}

build() {
	say "building geoacme (Release) in $BUILD"
	cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null || die "cmake configure failed"
	cmake --build "$BUILD" -j2 --target geoacme >"$W/build.log" 2>&1 ||
		{ tail -30 "$W/build.log" >&2; die "build failed"; }
	gcc -O2 -o "$W/reflector" "$BENCH_DIR/reflector.c" || die "reflector build failed"
}

make_inputs() {
	perl "$ROOT/tests/fixtures/make_mmdb.pl" --layout city --out "$W" >/dev/null || die "make_mmdb.pl failed"
	(umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/zsk.pem" 2>/dev/null) ||
		die "openssl genpkey failed"
	chmod 600 "$W/zsk.pem"
	mkdir -p "$W/q" "$W/raw"
	echo "www.example.com A" >"$W/q/static"
	echo "geo.example.com A" >"$W/q/geo"
	echo "_acme-challenge.h7.acme.example.net TXT" >"$W/q/acme"
	echo "geo.example.com HTTPS" >"$W/q/https"
	# Random names that do not exist, and random names under the wildcard
	# *.w (issue #28), a fresh file per run slot so that no server sees a
	# name twice (a packet cache would hide the signing).
	local slot
	for slot in $(seq 0 $((2 * RUNS))); do
		random_names "$slot" ".example.com A" >"$W/q/nx.$slot"
		random_names "$((slot + 1000))" ".w.example.com TXT" >"$W/q/wild.$slot"
	done
}

random_names() {   # random_names SEED SUFFIX: 300 000 random 12-character labels + SUFFIX
	awk -v seed="$1" -v suffix="$2" -v n=300000 'BEGIN {
		srand(seed + 1); c = "abcdefghijklmnopqrstuvwxyz0123456789"
		for (i = 0; i < n; i++) {
			s = ""
			for (j = 0; j < 12; j++) s = s substr(c, int(rand() * 36) + 1, 1)
			print s suffix
		}
	}'
}

next_port() {   # sets PORT to a free port at or after PORT
	local i
	for i in $(seq 200); do
		port_free "$PORT" && return 0
		PORT=$((PORT + 1))
	done
	die "no free port from ${BENCH_PORT:-15300}"
}

# ---- classes -------------------------------------------------------------

supports() {   # supports SERVER CLASS
	case "$1:$2" in
	nsd:geo_*) return 1 ;;
	esac
	return 0
}

unsigned_server() { [ "$1" = gdnsd ]; }   # gdnsd has no DNSSEC

class_args() {   # class_args CLASS SLOT: dnsperf arguments
	case $1 in
	static) echo "-d $W/q/static" ;;
	static_do) echo "-d $W/q/static -D" ;;
	geo_ecs) echo "-d $W/q/geo -E 8:$ECS_HEX" ;;
	geo_ecs_do) echo "-d $W/q/geo -E 8:$ECS_HEX -D" ;;
	nx_do) echo "-d $W/q/nx.$2 -D" ;;
	wild_do) echo "-d $W/q/wild.$2 -D" ;;
	acme_do) echo "-d $W/q/acme -D" ;;
	https_ecs_do) echo "-d $W/q/https -E 8:$ECS_HEX -D" ;;   # the scaling run only
	esac
}

# check_class SERVER PORT CLASS: prints ✓, ✗ (why) or – .
check_class() {
	local server=$1 port=$2 class=$3 q=() out status ans auth want got
	[[ $server == reflector* ]] && { echo "–"; return; }
	case $class in
	static) q=(www.example.com A) ;;
	static_do) q=(+dnssec www.example.com A) ;;
	geo_ecs) q=("+subnet=$ECS_SUBNET" geo.example.com A) ;;
	geo_ecs_do) q=(+dnssec "+subnet=$ECS_SUBNET" geo.example.com A) ;;
	nx_do) q=(+dnssec "bench-$RANDOM-check.example.com" A) ;;
	wild_do) q=(+dnssec "bench-$RANDOM-check.w.example.com" TXT) ;;
	acme_do) q=(+dnssec _acme-challenge.h7.acme.example.net TXT) ;;
	esac
	out=$(kdig @127.0.0.1 -p "$port" +norec +time=2 +retry=1 "${q[@]}" 2>&1)
	status=$(sed -n 's/.*status: \([A-Z]*\).*/\1/p' <<<"$out" | head -1)
	ans=$(awk '/^;; ANSWER SECTION:/ { s = 1; next } /^;; / { s = 0 } s && NF >= 5 { print $4, $5 }' <<<"$out")
	auth=$(awk '/^;; AUTHORITY SECTION:/ { s = 1; next } /^;; / { s = 0 } s && NF >= 5 { print $4, $5 }' <<<"$out")
	local signed=1 why=""
	unsigned_server "$server" && signed=0
	case $class in
	static | static_do)
		[ "$status" = NOERROR ] || why="status $status"
		grep -qx "A 192.0.2.80" <<<"$ans" || why="${why:-no A 192.0.2.80}"
		;;
	geo_ecs | geo_ecs_do)
		[ "$status" = NOERROR ] || why="status $status"
		want=$(geo_expected "$server" | tr ' ' '\n' | sort | tr '\n' ' ')
		got=$(awk '$1 == "A" { print $2 }' <<<"$ans" | sort | tr '\n' ' ')
		[ "$got" = "$want" ] || why="${why:-answer ${got:-empty}, want $want}"
		;;
	nx_do)
		[ "$status" = NXDOMAIN ] || why="status $status"
		if [ $signed = 1 ]; then
			grep -q "^NSEC " <<<"$auth" || why="${why:-no NSEC}"
			grep -q "^RRSIG NSEC" <<<"$auth" || why="${why:-no RRSIG NSEC}"
		fi
		;;
	acme_do)
		[ "$status" = NOERROR ] || why="status $status"
		grep -q "^TXT " <<<"$ans" || why="${why:-no TXT}"
		;;
	wild_do)
		[ "$status" = NOERROR ] || why="status $status"
		grep -qx 'TXT "wildcard"' <<<"$ans" || why="${why:-no TXT \"wildcard\"}"
		# the wildcard's proof: the NSEC that shows the name itself absent
		[ $signed = 1 ] && { grep -q "^NSEC " <<<"$auth" || why="${why:-no NSEC (wildcard proof)}"; }
		;;
	esac
	case $class in
	*_do)
		if [ $signed = 1 ] && [ "$class" != nx_do ]; then
			grep -q "^RRSIG " <<<"$ans" || why="${why:-no RRSIG}"
		fi
		;;
	esac
	if [ -n "$why" ]; then
		echo "✗ ($why)"
	elif [ $signed = 0 ] && [[ $class == *_do ]]; then
		echo "✓ unsigned"
	else
		echo "✓"
	fi
}

# measure_once SERVER PID PORT CLASS ROUND: one full-speed run and one
# fixed-load run; appends to $W/rounds.tsv:
# server class round qps us_at_max us_at_load answered_at_load rcodes_at_load
measure_once() {
	local server=$1 pid=$2 port=$3 class=$4 r=$5 out t0 t1 n qps usmax
	t0=$(tree_ticks "$pid")
	out=$(run_dnsperf "$port" "$RUN_S" 0 $(class_args "$class" "$r"))
	t1=$(tree_ticks "$pid")
	echo "$out" >"$W/raw/$server.$class.max.$r"
	n=$(perf_field "$out" completed)
	qps=$(perf_field "$out" qps)
	usmax=$(us_per_query $((t1 - t0)) "${n:-0}")
	t0=$(tree_ticks "$pid")
	out=$(run_dnsperf "$port" "$FIX_S" "$LOAD" $(class_args "$class" $((r + RUNS))))
	t1=$(tree_ticks "$pid")
	echo "$out" >"$W/raw/$server.$class.load.$r"
	n=$(perf_field "$out" completed)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$server" "$class" "$r" "${qps:-0}" "$usmax" \
		"$(us_per_query $((t1 - t0)) "${n:-0}")" "${n:-0}" "$(perf_field "$out" rcodes)" >>"$W/rounds.tsv"
	say "  $(printf '%-20s' "${CLASS_LABEL[$class]}") qps ${qps:-0}  us/q@max $usmax  us/q@$LOAD $(us_per_query $((t1 - t0)) "${n:-0}")"
}

# bench_round SERVER ROUND: starts the server, checks its answers (first
# round), measures every class it supports once, records its peak RSS,
# stops it.
bench_round() {
	local server=$1 r=$2 class pid port=${SERVER_PORT[$1]}
	say "== $server, round $r of $RUNS (port $port)"
	"${server}_start" "$port"
	pid=$SERVER_PID
	if [[ $server == reflector* ]]; then
		sleep 0.3
		kill -0 "$pid" 2>/dev/null || die "reflector did not start"
	elif ! wait_ready "$port" "$pid" 60; then
		say "$server did not become ready; its log:"
		tail -20 "$W/$server"/*.log >&2 2>/dev/null
		bench_stop "$pid"
		FAILED[$server]=1
		return
	fi
	if [ "$r" = 1 ]; then
		for class in $CLASSES; do
			supports "$server" "$class" &&
				printf '%s\t%s\t%s\n' "$server" "$class" "$(check_class "$server" "$port" "$class")" >>"$W/checks.tsv"
		done
	fi
	run_dnsperf "$port" 1 0 $(class_args static 0) >/dev/null   # warm up
	for class in $CLASSES; do
		supports "$server" "$class" && measure_once "$server" "$pid" "$port" "$class" "$r"
	done
	printf '%s\t%s\t%s\n' "$server" "$(tree_hwm_kb "$pid")" "$(tree_mapped_kb '\\.mmdb$' "$pid")" >>"$W/rss.tsv"
	bench_stop "$pid"
}

# Medians over the rounds -> $W/results.tsv:
# server class check qps us_at_max us_at_load flag rcodes
# flag: 1 = saturated (its full-speed QPS is below the fixed load, so at
# that load it was busy all the time); "short: N qps" = dnsperf did not
# offer the load (the client core was busy), the figure is at a lower rate.
aggregate() {
	local server class check qps usmax usfix n flag rc want
	for server in $SERVERS; do
		for class in $CLASSES; do
			if ! supports "$server" "$class"; then
				printf '%s\t%s\tn/a\tn/a\tn/a\tn/a\t0\t-\n' "$server" "$class" >>"$W/results.tsv"
				continue
			fi
			if [ -n "${FAILED[$server]:-}" ]; then
				printf '%s\t%s\t✗ (did not start)\t-\t-\t-\t0\t-\n' "$server" "$class" >>"$W/results.tsv"
				continue
			fi
			check=$(awk -F'\t' -v s="$server" -v c="$class" '$1 == s && $2 == c { print $3 }' "$W/checks.tsv")
			read -r qps usmax usfix n < <(awk -F'\t' -v s="$server" -v c="$class" '
				function med(a, k,   i, j, t) {
					for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
					return a[int((k + 1) / 2)]
				}
				$1 == s && $2 == c { k++; q[k] = $4 + 0; m[k] = $5 + 0; f[k] = $6 + 0; n[k] = $7 + 0 }
				END { if (k) printf "%d %.2f %.2f %d\n", med(q, k), med(m, k), med(f, k), med(n, k); else print "0 - - 0" }' "$W/rounds.tsv")
			flag=0
			if [ "$qps" -lt "$LOAD" ]; then
				flag=1
			elif [ "$n" -lt $((LOAD * FIX_S * 95 / 100)) ]; then
				flag="short: $((n / FIX_S)) qps"
			fi
			# Every answer under load must carry the rcode the check saw.
			want=NOERROR
			[ "$class" = nx_do ] && [[ $server != reflector* ]] && want=NXDOMAIN
			rc=$(awk -F'\t' -v s="$server" -v c="$class" -v w="$want" '
				$1 == s && $2 == c && $8 !~ ("^" w " [0-9]+ \\(100\\.00%\\)$") { print $8; exit }' "$W/rounds.tsv")
			[ -n "$rc" ] && check="$check; under load: $rc"
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$server" "$class" "$check" "$qps" "$usmax" "$usfix" "$flag" "$rc" \
				>>"$W/results.tsv"
		done
	done
	# Peak RSS: the largest of the rounds.
	sort -t"$(printf '\t')" -k1,1 -k2,2nr "$W/rss.tsv" | awk -F'\t' '!seen[$1]++' >"$W/rss.max"
	mv "$W/rss.max" "$W/rss.tsv"
}

# ---- scaling (geoacme alone) ---------------------------------------------

scale_one() {   # scale_one N_SITES N_ACME
	local ns=$1 na=$2 d=$W/scale/s$1-a$2 pid t0 t1 up geo ticks out n
	next_port
	say "== geoacme scaling: $ns sites, $na ACME records (port $PORT)"
	geoacme_config "$d" "$PORT" "$ns" "$na"
	t0=$(date +%s.%N)
	bench_spawn "$d/geoacme.log" taskset -c "$SERVER_CPU" "$GEOACME" serve -c "$d/geoacme.toml"
	pid=$SPAWNED_PID
	# The log line first (polled finely, for the start-up time), then an answer.
	local i
	for i in $(seq $((SCALE_TIMEOUT * 20))); do
		grep -q 'ready:' "$d/geoacme.log" 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if ! wait_ready "$PORT" "$pid" "$SCALE_TIMEOUT"; then
		say "  not ready within ${SCALE_TIMEOUT}s; log tail:"
		tail -3 "$d/geoacme.log" >&2
		printf '%s\t%s\t>%s\t-\t-\t-\t-\t-\t-\t-\t-\n' "$ns" "$na" "$SCALE_TIMEOUT" >>"$W/scale.tsv"
		bench_stop "$pid"
		return
	fi
	t1=$(date +%s.%N)
	up=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	geo=$(kdig @127.0.0.1 -p "$PORT" +norec +dnssec +subnet=$ECS_SUBNET geo.example.com A 2>&1 |
		awk '/^;; ANSWER SECTION:/ { s = 1; next } /^;; / { s = 0 } s && $4 == "A" { printf "%s ", $5 } s && $4 == "RRSIG" { r = 1 } END { if (!r) printf "(no RRSIG)" }')
	run_dnsperf "$PORT" 1 0 $(class_args geo_ecs_do 0) >/dev/null
	# geo A + ECS + DO: fixed load, then one full-speed run.
	ticks=$(tree_ticks "$pid")
	out=$(run_dnsperf "$PORT" "$FIX_S" "$LOAD" $(class_args geo_ecs_do 0))
	n=$(perf_field "$out" completed)
	local us_geo us_geo_max qps_geo us_acme
	us_geo=$(us_per_query $(($(tree_ticks "$pid") - ticks)) "${n:-0}")
	ticks=$(tree_ticks "$pid")
	out=$(run_dnsperf "$PORT" "$RUN_S" 0 $(class_args geo_ecs_do 0))
	n=$(perf_field "$out" completed)
	us_geo_max=$(us_per_query $(($(tree_ticks "$pid") - ticks)) "${n:-0}")
	qps_geo=$(perf_field "$out" qps)
	# ACME TXT + DO at the same fixed load.
	ticks=$(tree_ticks "$pid")
	out=$(run_dnsperf "$PORT" "$FIX_S" "$LOAD" $(class_args acme_do 0))
	n=$(perf_field "$out" completed)
	us_acme=$(us_per_query $(($(tree_ticks "$pid") - ticks)) "${n:-0}")
	[ "$(perf_field "$out" rcodes)" = "NOERROR ${n} (100.00%)" ] || us_acme="$us_acme ($(perf_field "$out" rcodes))"
	# geo HTTPS + ECS + DO (the sets per pair of sites, signed ahead, and
	# each site's addresses in Additional) at the same fixed load, next to
	# the A answer; checked first: HTTPS records and their RRSIG.
	local us_https https_ok
	https_ok=$(kdig @127.0.0.1 -p "$PORT" +norec +dnssec +subnet=$ECS_SUBNET geo.example.com HTTPS 2>&1 |
		awk '/^;; ANSWER SECTION:/ { s = 1; next } /^;; / { s = 0 } s && $4 == "HTTPS" { h++ } s && $4 == "RRSIG" && $5 == "HTTPS" { r = 1 } END { print (h > 0 && r) ? "ok" : "no signed HTTPS answer" }')
	ticks=$(tree_ticks "$pid")
	out=$(run_dnsperf "$PORT" "$FIX_S" "$LOAD" $(class_args https_ecs_do 0))
	n=$(perf_field "$out" completed)
	us_https=$(us_per_query $(($(tree_ticks "$pid") - ticks)) "${n:-0}")
	[ "$(perf_field "$out" rcodes)" = "NOERROR ${n} (100.00%)" ] || us_https="$us_https ($(perf_field "$out" rcodes))"
	[ "$https_ok" = ok ] || us_https="$us_https ($https_ok)"
	# One TSIG-signed UPDATE (what Lego sends), over TCP so that a slow
	# answer is not retried, timed until its NOERROR:
	# the server is single-threaded, so this is also how long it does not
	# answer queries.  Last, since it changes the zone.
	local upd t2 t3
	t2=$(date +%s%N)
	if printf 'server 127.0.0.1 %s\nzone acme.example.net\nupdate add _acme-challenge.bench.acme.example.net. 60 TXT "bench"\nsend\n' "$PORT" |
		timeout $((UPDATE_TIMEOUT + 5)) nsupdate -v -t "$UPDATE_TIMEOUT" -y "hmac-sha256:bench-key.:$TSIG_SECRET" >"$d/nsupdate.log" 2>&1; then
		t3=$(date +%s%N)
		upd="$(((t3 - t2) / 1000000)) ms"
		kdig @127.0.0.1 -p "$PORT" +norec +short _acme-challenge.bench.acme.example.net TXT 2>/dev/null |
			grep -q bench || upd="$upd (not visible after)"
	else
		upd="failed or >${UPDATE_TIMEOUT} s"
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$ns" "$na" "$up" "$(tree_hwm_kb "$pid")" \
		"$us_geo" "$us_geo_max" "$qps_geo" "$us_acme" "$geo" "$upd" "$us_https" >>"$W/scale.tsv"
	say "  ready in ${up}s, geo ${geo}, us/q@$LOAD geo $us_geo https $us_https acme $us_acme, us/q@max $us_geo_max ($qps_geo qps), UPDATE $upd"
	bench_stop "$pid"
	PORT=$((PORT + 1))
}

# ---- report ----------------------------------------------------------------

report() {
	local cpu
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
	echo "# geoacme benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "$(nproc) cores ($cpu), kernel $(uname -r); load average at start: $LOADAVG."
	echo "Server on core $SERVER_CPU, dnsperf $(dpkg-query -W -f='${Version}' dnsperf 2>/dev/null) on core $CLIENT_CPU, one thread, 127.0.0.1."
	echo "Versions: geoacme $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo '+dirty'), $(peer_versions)."
	echo
	echo "$RUNS rounds; in each, every server is started, measured on every class and stopped, in"
	echo "an order rotated per round; figures are medians over the rounds."
	echo "QPS: a ${RUN_S}s run at full speed (dnsperf -c 1 -T 1, 100 queries in flight)."
	echo "CPU/query: server utime+stime (whole process tree) / answered queries, at a fixed"
	echo "offered load of $LOAD qps for ${FIX_S}s (\"sat.\": the server's full-speed QPS is below that"
	echo "load, so it was busy all the time; \"short\": dnsperf did not manage to offer the load),"
	echo "and during the full-speed run. Peak RSS: VmHWM (largest of the rounds); for geoacme also"
	echo "without the mapped .mmdb pages."
	echo
	echo "| server | class | answers | QPS | CPU µs/query @ $LOAD qps | CPU µs/query @ max | peak RSS |"
	echo "| --- | --- | --- | ---: | ---: | ---: | ---: |"
	awk -F'\t' -v lbl="$(for c in $CLASSES; do printf '%s=%s;' "$c" "${CLASS_LABEL[$c]}"; done)" '
		FILENAME ~ /rss.tsv$/ { rss[$1] = sprintf("%.1f MB", $2 / 1024); if ($1 == "geoacme" && $3 > 0) rss[$1] = rss[$1] sprintf(" (%.1f MB w/o mmdb)", ($2 - $3) / 1024); next }
		BEGIN { n = split(lbl, a, ";"); for (i = 1; i <= n; i++) { split(a[i], kv, "="); L[kv[1]] = kv[2] } }
		{
			r = (seen[$1]++ ? "" : rss[$1])
			load = $6; if ($7 == 1) load = load " (sat.)"; else if ($7 != 0) load = load " (" $7 ")"
			printf "| %s | %s | %s | %s | %s | %s | %s |\n", (seen[$1] == 1 ? $1 : ""), ($2 in L ? L[$2] : $2), $3, $4, load, $5, r
		}' "$W/rss.tsv" "$W/results.tsv"
	echo
	echo "Notes: gdnsd has no DNSSEC (its +DO answers are unsigned, marked \"✓ unsigned\")."
	echo "gdnsd and PowerDNS answer the single nearest site; geoacme and Knot (views) answer the"
	echo "pair. NSD has no geo (n/a). The reflector answers nothing: it flips QR and sends the"
	echo "query back, so it is the cost of the kernel's UDP path alone on this core."
	if [ -s "$W/scale.tsv" ]; then
		echo
		echo "## geoacme scaling"
		echo
		echo "| sites | ACME records | ready after | peak RSS | geo A +ECS +DO µs/q @ $LOAD qps | geo HTTPS +ECS +DO µs/q @ $LOAD qps | geo µs/q @ max (QPS) | ACME TXT +DO µs/q @ $LOAD qps | one UPDATE | geo answer |"
		echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
		awk -F'\t' '{ printf "| %s | %s | %s s | %s | %s | %s | %s (%s) | %s | %s | %s |\n", $1, $2, $3, ($4 ~ /^[0-9]+$/ ? sprintf("%.1f MB", $4 / 1024) : $4), $5, ($11 == "" ? "-" : $11), $6, $7, $8, $10, $9 }' "$W/scale.tsv"
		echo
		echo "Sites on a latitude/longitude grid beyond 7; ACME records are TXT records, one per name,"
		echo "seeded into SQLite on first start. \"ready after\": from exec to the first SOA answer"
		echo "(seeding, loading and signing). \"one UPDATE\": a TSIG-signed RFC 2136 add, from nsupdate's"
		echo "start to its NOERROR (about 60-80 ms of that is nsupdate itself)."
	fi
	if [ -s "$W/instructions.md" ]; then
		echo
		echo "## User-space instructions per query"
		echo
		echo "bench/profile.sh with PROFILE_CLASSES=1 (callgrind, ${BENCH_INSTR_QUERIES:-5000} queries per class, 20 in"
		echo "flight, the same fixture configuration; the server's own code and libraries, no kernel):"
		echo
		grep '^|' "$W/instructions.md"
	fi
	echo
	echo "## Targets"
	echo
	targets
}

peer_versions() {
	local v=""
	for p in nsd knot pdns-server gdnsd; do
		v="$v${v:+, }$p $(dpkg-query -W -f='${Version}' "$p" 2>/dev/null)"
	done
	echo "$v"
}

# Reads the TSVs and says, per target, what the numbers show.
targets() {
	awk -F'\t' -v load="$LOAD" '
		function pct(a, b) { return b > 0 ? sprintf("%+.0f%%", (a - b) * 100 / b) : "?" }
		function mark(ok) { return ok ? "met" : "NOT met" }
		FILENAME ~ /results.tsv$/ { fix[$1, $2] = $6; mx[$1, $2] = $5; if ($1 != "geoacme" && $1 !~ /^reflector/) peers[$1] = 1; next }
		FILENAME ~ /rss.tsv$/ { hwm[$1] = $2; mm[$1] = $3; next }
		FILENAME ~ /instructions.md$/ {
			# | server | static A | static A +DO | geo A +ECS | geo A +ECS +DO | ...
			if ($0 ~ /^\| (geoacme|gdnsd) \|/) {
				split($0, c, "|"); sv = c[2]; gsub(/ /, "", sv)
				ins[sv, "static"] = c[3] + 0; ins[sv, "geo_ecs_do"] = c[6] + 0; ins[sv, "https"] = c[7] + 0
			}
			next
		}
		FILENAME ~ /scale.tsv$/ {
			v = $5 + 0
			if ($1 == 7 && $2 == 10) base = v
			else if (v > 0) {
				d = base > 0 ? (v - base) / base : 0
				if (d > worst) worst = d
				if ($1 != 7) { nsite++; sitel = sitel sprintf(" %s: %.2f (%s)", $1, v, pct(v, base)) }
				else { nacme++; acmel = acmel sprintf(" %s: %.2f (%s)", $2, v, pct(v, base)) }
			}
			if (($1 != 7 || $2 != 10) && $4 ~ /^[0-9]+$/) srss = srss sprintf("; %s sites, %s ACME records: %.1f MB", $1, $2, $4 / 1024)
			if ($3 + 0 > upmax) upmax = $3 + 0
			u = $10; sub(/ ms.*/, "", u)
			if ($10 ~ /^[0-9]+ ms/ && u + 0 > updmaxv) { updmaxv = u + 0; updmax = $10 " (" $2 " records)" }
			else if ($10 !~ /^[0-9]+ ms/ && $10 != "-") updmax = $10
			next
		}
		END {
			g = fix["geoacme", "geo_ecs_do"] + 0; gd = fix["gdnsd", "geo_ecs_do"] + 0; rf = fix["reflector", "geo_ecs_do"] + 0
			gm = mx["geoacme", "geo_ecs_do"] + 0; gdm = mx["gdnsd", "geo_ecs_do"] + 0; rfm = mx["reflector", "geo_ecs_do"] + 0
			if (g > 0) {
				printf "1. geo A +ECS +DO, CPU/query at %d qps: geoacme %.2f µs", load, g
				if (gd > 0) printf "; gdnsd %.2f µs (unsigned): ≤ gdnsd %s", gd, mark(g <= gd)
				else printf "; gdnsd not measured"
				if (rf > 0) printf "; reflector %.2f µs: ≤ 1.5× reflector (%.2f) %s", rf, 1.5 * rf, mark(g <= 1.5 * rf)
				else printf "; reflector not measured"
				printf ". At full speed: geoacme %.2f µs", gm
				if (gdm > 0) printf ", gdnsd %.2f (≤ gdnsd %s)", gdm, mark(gm <= gdm)
				if (rfm > 0) printf ", reflector %.2f (geoacme/reflector %.2f×)", rfm, gm / rfm
				printf ".\n"
			}
			s = fix["geoacme", "static"] + 0; nx = fix["geoacme", "nx_do"] + 0
			if (s > 0 && nx > 0)
				printf "2. random NXDOMAIN +DO vs static A: %.2f vs %.2f µs/query (%s): within 10%% %s. At full speed: %.2f vs %.2f (%s).\n", nx, s, pct(nx, s), mark(nx <= 1.10 * s), mx["geoacme", "nx_do"], mx["geoacme", "static"], pct(mx["geoacme", "nx_do"], mx["geoacme", "static"])
			sd = fix["geoacme", "static_do"] + 0; ge = fix["geoacme", "geo_ecs"] + 0
			if (s > 0 && sd > 0)
				printf "3. warm DO=1 vs DO=0: static %.2f vs %.2f µs (%s), geo+ECS %.2f vs %.2f µs (%s): within 10%% %s.\n", sd, s, pct(sd, s), g, ge, pct(g, ge), mark(sd <= 1.10 * s && g <= 1.10 * ge)
			if (hwm["geoacme"] > 0)
				printf "4. peak RSS: %.1f MB, %.1f MB without the mapped .mmdb: < 20 MB %s (7 sites, 10 ACME records). In the scaling run%s.\n", hwm["geoacme"] / 1024, (hwm["geoacme"] - mm["geoacme"]) / 1024, mark(hwm["geoacme"] - mm["geoacme"] < 20480), (srss == "" ? ": not run" : ": " substr(srss, 3))
			if (base > 0 && (nsite || nacme)) {
				printf "5. scaling, geo A +ECS +DO CPU µs/query at %d qps, base (7 sites, 10 ACME records) %.2f:", load, base
				if (nsite) printf " sites%s;", sitel
				if (nacme) printf " ACME records%s;", acmel
				printf " all within 10%% of the base: %s (CPU time, mostly the kernel'"'"'s; see doc/performance.md for the user-space instruction counts). Slowest start: %.1f s; slowest UPDATE: %s.\n", mark(worst <= 0.10), upmax, updmax
			}
			ig = ins["geoacme", "geo_ecs_do"]; is = ins["geoacme", "static"]
			if (ig > 0 && is > 0) {
				printf "6. user-space instructions per query (callgrind): geo A +ECS +DO %d ≤ 2500 %s; static A %d ≤ 1200 %s", ig, mark(ig <= 2500), is, mark(is <= 1200)
				if (ins["gdnsd", "geo_ecs_do"] > 0)
					printf "; gdnsd (unsigned, one site) %d and %d", ins["gdnsd", "geo_ecs_do"], ins["gdnsd", "static"]
				if (ins["geoacme", "https"] > 0)
					printf "; geo HTTPS +ECS +DO %d (%s of geo A)", ins["geoacme", "https"], pct(ins["geoacme", "https"], ig)
				printf ".\n"
			}
			wd = fix["geoacme", "wild_do"] + 0
			if (sd > 0 && wd > 0) {
				printf "7. random name under a wildcard, TXT +DO vs static A +DO (issue #28): %.2f vs %.2f µs/query (%s): within 10%% %s", wd, sd, pct(wd, sd), mark(wd <= 1.10 * sd)
				for (p in peers) if (fix[p, "wild_do"] > 0) printf "; %s %.2f", p, fix[p, "wild_do"]
				printf ".\n"
			}
		}' "$W/results.tsv" "$W/rss.tsv" "$W/scale.tsv" $([ -f "$W/instructions.md" ] && echo "$W/instructions.md")
}

# User-space instructions per query by class, geoacme and gdnsd, under
# callgrind: bench/profile.sh's own count, on the next free port.
measure_instructions() {
	next_port
	say "== callgrind: user-space instructions per query (bench/profile.sh)"
	BENCH_PORT=$PORT BENCH_SERVER_CPU=$SERVER_CPU BENCH_CLIENT_CPU=$CLIENT_CPU PROFILE_TOOL=none \
		PROFILE_CLASSES=1 PROFILE_PEERS="${BENCH_INSTR_PEERS:-gdnsd}" \
		PROFILE_QUERIES="${BENCH_INSTR_QUERIES:-5000}" "$BENCH_DIR/profile.sh" >"$W/instructions.md" ||
		say "bench/profile.sh failed"
}

# ---- main ------------------------------------------------------------------

main() {
	if [ -n "${BENCH_REPORT_FROM:-}" ]; then
		# Re-render the report of a kept run (BENCH_KEEP=1) without measuring.
		W=$BENCH_REPORT_FROM
		LOADAVG=$(cat "$W/loadavg" 2>/dev/null || echo "?")
		report
		return
	fi
	install_packages
	W=$(mktemp -d /tmp/geoacme-bench.XXXXXX) || die "mktemp failed"
	trap 'bench_cleanup; [ "${BENCH_KEEP:-0}" = 1 ] && say "kept $W" || rm -rf "$W"' EXIT
	trap 'exit 130' INT TERM
	: >"$W/results.tsv"
	: >"$W/rounds.tsv"
	: >"$W/checks.tsv"
	: >"$W/rss.tsv"
	: >"$W/scale.tsv"
	: >"$W/instructions.md"
	LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg)
	echo "$LOADAVG" >"$W/loadavg"
	build
	make_inputs
	local s r started i n_servers list
	started=$(date +%s)
	declare -gA SERVER_PORT=() FAILED=()
	for s in $SERVERS; do
		next_port
		SERVER_PORT[$s]=$PORT
		"${s}_setup" "$PORT"
		PORT=$((PORT + 1))
	done
	# Rounds: every server once per round, the order rotated each round,
	# so that a change in the machine's other load over the run falls on
	# every server alike; the table shows medians over the rounds.
	read -r -a list <<<"$SERVERS"
	n_servers=${#list[@]}
	for r in $(seq "$RUNS"); do
		for i in $(seq 0 $((n_servers - 1))); do
			s=${list[$(((i + r - 1) % n_servers))]}
			[ -n "${FAILED[$s]:-}" ] || bench_round "$s" "$r"
		done
	done
	aggregate
	if [ "$SCALING" = 1 ]; then
		mkdir -p "$W/scale"
		scale_one 7 10
		for s in $SCALE_SITES; do scale_one "$s" 10; done
		for s in $SCALE_ACME; do scale_one 7 "$s"; done
	fi
	[ "$INSTRUCTIONS" = 1 ] && measure_instructions
	mkdir -p "$(dirname "$OUT")"
	report | tee "$OUT"
	if [ "$UPDATES" = 1 ]; then
		# UPDATE latency and the loop's longest round per zone size: its
		# own script (it can run alone), on the next free port.
		next_port
		echo | tee -a "$OUT"
		BENCH_PORT=$PORT BENCH_SERVER_CPU=$SERVER_CPU BENCH_CLIENT_CPU=$CLIENT_CPU \
			BENCH_UPDATE_OUT="$BUILD/update-results.md" "$BENCH_DIR/update.sh" | tee -a "$OUT" ||
			say "bench/update.sh failed"
	fi
	say ""
	say "measured in $(($(date +%s) - started)) s; report saved to $OUT"
}

main "$@"
