#!/bin/bash
# SPDX-License-Identifier: MIT
# The AF_XDP benchmark (issue #24, point 4): geoacme and Knot DNS, each in
# XDP mode and on sockets, in one run, over a veth pair, with the UDP
# reflector as the sender's limit (Debian 12, root).  doc/performance.md,
# "AF_XDP", has the latest table and how to read it.
#
#   bench/xdp.sh                       3 rounds of 4 s runs (~5 min)
#   BENCH_XDP_SECONDS=1 bench/xdp.sh   smoke: 1 s runs, one round (~1 min)
#
# The network, made here and deleted by name on exit (trap): two network
# namespaces, xbS<PID> (the servers) and xbC<PID> (dnsperf and kdig),
# joined by one veth pair, xbs<PID> in xbS and xbc<PID> in xbC, addressed
# 127.77.0.1/30 and 127.77.0.2/30 (loopback addresses on a veth need
# net.ipv4.conf.*.route_localnet=1, set in both namespaces).  Neither
# namespace has any other interface than its own lo, nor a route beyond
# that /30: no packet of the run can leave the two namespaces.  IPv4 only
# (::1 cannot be given to a veth; the IPv6 answers are engineer xdp's
# byte-for-byte tests).  Deleting a namespace deletes its veth end, and
# with it any XDP program still attached.
#
# The servers, each alone in the server namespace, pinned to core
# $BENCH_SERVER_CPU with one worker, on a port of their own:
#   reflector    bench/reflector.c on the veth address: what dnsperf can send
#                and receive at all (the sender's limit), and the kernel's UDP
#                path alone
#   knot_xdp     knotd with `xdp: listen: IFACE@PORT`: one more XDP worker
#                thread per queue of the interface (a veth has one) answers
#                UDP; Debian's knot 3.2 attaches natively to a veth; the same
#                zone and mod-geoip views as bench/run.sh, signed
#   knot         the same configuration without the xdp section
#   geoacme      sockets, bench/run.sh's configuration
#   geoacme_xdp  the same plus [server] xdp_listen = ["IFACE"], when the build
#                has it; otherwise its rows say "not available" and why
# Knot's "Mode XDP" documentation: it needs CAP_NET_RAW, CAP_NET_ADMIN,
# CAP_SYS_ADMIN, CAP_IPC_LOCK (and CAP_SYS_RESOURCE before Linux 5.11), has
# them here as root and drops them once started; and it does not unload
# its XDP program when it stops: the script detaches whatever a server left
# (ip link set dev IFACE xdp off) before the next one starts.
#
# Query classes: static A (www.example.com A), and geo A +ECS +DO
# (geo.example.com A from ECS 192.0.2.0/24 with DO: the Paris/Nuremberg
# pair and its RRSIG; Knot answers it from its mod-geoip views, signed
# ahead, in XDP mode too).  Every answer is checked with kdig first.
#
# Per server and class, per round: a full-speed run (dnsperf -c 1 -T 1, 100
# queries in flight) gives the QPS at saturation and the CPU per answered
# query at full speed; a fixed-load run ($BENCH_XDP_LOAD qps) the CPU per
# query at that load.  CPU: utime+stime of the server's process tree from
# /proc/PID/stat.  The path actually used: the server namespace's kernel
# UDP counter (Udp InDatagrams in /proc/net/snmp) over the full-speed run,
# per answered query: 1.00 on sockets, about 0 when AF_XDP answered; and
# the XDP mode `ip -d link` shows while the server runs (xdp = native,
# xdpgeneric = generic).  Figures are medians over the rounds; the order
# of the servers rotates per round.
#
# Caveat: on a veth, the receive side (the XDP program, or the UDP stack up
# to the socket) runs in the sender's softirq, on dnsperf's core, and is not
# in the server's CPU time; the send side (and the peer's receive of the
# answer) runs in the server's system call.  That holds for every server
# here alike, so the comparison is fair, but the absolute figures are not
# those of a NIC, where the receive softirq runs on the server's core.
#
# Settings (environment):
#   BENCH_XDP_SECONDS=4   seconds of each run (1 = smoke mode: one round)
#   BENCH_XDP_RUNS=3      rounds (1 when BENCH_XDP_SECONDS=1)
#   BENCH_XDP_LOAD=20000  fixed offered load, queries/s
#   BENCH_XDP_SERVERS="reflector knot_xdp knot geoacme geoacme_xdp"
#   BENCH_SERVER_CPU=0 BENCH_CLIENT_CPU=1
#   BENCH_XDP_OUT=build-bench/xdp-results.md   BENCH_KEEP=0 (1 keeps the temp dir)
#   BENCH_NO_INSTALL=0    1 skips scripts/deps.sh and apt-get
#   BENCH_NO_BUILD=0      1 uses build-bench/cmd/geoacme as it is
#   BENCH_XDP_SYSCALLS=0  1: perf stat counts each server's system calls and CPU
#                         (task-clock) over the fixed-load runs, printed per
#                         answered query (perf must be installed)
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
. "$BENCH_DIR/lib.sh"
ADDR=127.77.0.1
CLIENT_ADDR=127.77.0.2
. "$BENCH_DIR/servers.sh"

SECS=${BENCH_XDP_SECONDS:-4}
if [ "$SECS" -le 1 ]; then RUNS=${BENCH_XDP_RUNS:-1}; else RUNS=${BENCH_XDP_RUNS:-3}; fi
LOAD=${BENCH_XDP_LOAD:-20000}
SERVERS=${BENCH_XDP_SERVERS:-"reflector knot_xdp knot geoacme geoacme_xdp"}
SERVER_CPU=${BENCH_SERVER_CPU:-0}
CLIENT_CPU=${BENCH_CLIENT_CPU:-1}
OUT=${BENCH_XDP_OUT:-$ROOT/build-bench/xdp-results.md}
BUILD=$ROOT/build-bench
GEOACME=$BUILD/cmd/geoacme
CLASSES="static geo_ecs_do"
declare -A CLASS_LABEL=([static]="static A" [geo_ecs_do]="geo A +ECS +DO")
declare -A PATH_LABEL=([reflector]=sockets [knot_xdp]=XDP [knot]=sockets [geoacme]=sockets [geoacme_xdp]=XDP)
declare -A PORT_OF=([reflector]=5301 [knot_xdp]=5302 [knot]=5303 [geoacme]=5304 [geoacme_xdp]=5305)
PEER_PACKAGES="dnsperf knot knot-module-geoip knot-dnsutils iproute2 ldnsutils"

NS_S=xbS$$
NS_C=xbC$$
IF_S=xbs$$
IF_C=xbc$$

# ---- the network -----------------------------------------------------------

in_s() { ip netns exec "$NS_S" "$@"; }
in_c() { ip netns exec "$NS_C" "$@"; }

net_up() {
	ip netns add "$NS_S" || die "ip netns add failed (root? a kernel with network namespaces?)"
	ip netns add "$NS_C" || die "ip netns add failed"
	ip link add "$IF_S" netns "$NS_S" type veth peer name "$IF_C" netns "$NS_C" ||
		die "ip link add type veth failed"
	local ns if a
	for ns in "$NS_S:$IF_S:$ADDR" "$NS_C:$IF_C:$CLIENT_ADDR"; do
		IFS=: read -r ns if a <<<"$ns"
		ip -n "$ns" link set lo up
		ip netns exec "$ns" sysctl -q -w net.ipv4.conf.all.route_localnet=1 \
			"net.ipv4.conf.$if.route_localnet=1" || die "sysctl route_localnet failed"
		ip -n "$ns" addr add "$a/30" dev "$if" || die "ip addr add failed"
		ip -n "$ns" link set "$if" up || die "ip link set up failed"
	done
}

net_down() {
	ip netns del "$NS_S" 2>/dev/null
	ip netns del "$NS_C" 2>/dev/null
	return 0
}

# The XDP mode attached to the server's veth: native, generic, or nothing.
xdp_mode() {
	ip -n "$NS_S" -d link show dev "$IF_S" 2>/dev/null | awk '
		!m { for (i = 1; i <= NF; i++) {
			if ($i == "xdp") m = "native"; else if ($i == "xdpgeneric") m = "generic"
			else if ($i == "xdpoffload") m = "offload"; else if ($i == "xdpmulti") m = "multi"
		} }
		END { print (m == "" ? "none" : m) }'
}

xdp_detach() {
	local m
	m=$(xdp_mode)
	[ "$m" = none ] && return 0
	ip -n "$NS_S" link set dev "$IF_S" xdpgeneric off 2>/dev/null
	ip -n "$NS_S" link set dev "$IF_S" xdp off 2>/dev/null
	say "  detached the XDP program ($m) the server left on $IF_S"
}

udp_in() {   # the server namespace's kernel UDP datagrams received so far
	in_s awk '/^Udp:/ && ++n == 2 { print $2 }' /proc/net/snmp
}

# ---- setup -----------------------------------------------------------------

install_packages() {
	[ "${BENCH_NO_INSTALL:-0}" = 1 ] && return 0
	[ "$(id -u)" -eq 0 ] || die "run as root (namespaces, veth, XDP)"
	"$ROOT/scripts/deps.sh" || die "scripts/deps.sh failed"
	local p missing=""
	for p in $PEER_PACKAGES; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	say "installing:$missing (a knotd the package starts listens in the root namespace, not here)"
	apt-get update -q >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >/dev/null || die "apt-get install failed"
}

build() {
	gcc -O2 -o "$W/reflector" "$BENCH_DIR/reflector.c" || die "reflector build failed"
	if [ "${BENCH_NO_BUILD:-0}" = 1 ]; then
		[[ $SERVERS != *geoacme* ]] || [ -x "$GEOACME" ] || die "BENCH_NO_BUILD=1 but no $GEOACME"
		return 0
	fi
	say "building geoacme (Release) in $BUILD"
	cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null || die "cmake configure failed"
	nice cmake --build "$BUILD" -j2 --target geoacme >"$W/build.log" 2>&1 ||
		{ tail -30 "$W/build.log" >&2; die "build failed"; }
}

make_inputs() {
	perl "$ROOT/tests/fixtures/make_mmdb.pl" --layout city --out "$W" >/dev/null || die "make_mmdb.pl failed"
	(umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/zsk.pem" 2>/dev/null) ||
		die "openssl genpkey failed"
	mkdir -p "$W/q" "$W/raw"
	echo "www.example.com A" >"$W/q/static"
	echo "geo.example.com A" >"$W/q/geo"
}

knot_xdp_setup() {
	knot_setup "$1" "$W/knot_xdp"
	printf 'xdp:\n  listen: %s@%s\n  udp: on\n  tcp: off\n' "$IF_S" "$1" >>"$W/knot_xdp/knot.conf"
	in_s knotc -c "$W/knot_xdp/knot.conf" conf-check >/dev/null || die "knot conf-check (xdp) failed"
}
knot_xdp_start() { knot_start "$1" "$W/knot_xdp"; }

# geoacme in XDP mode, when this build knows xdp_listen: `geoacme check`
# in the server namespace decides; its first complaint is the reason.
NOTE_XDP=""
geoacme_xdp_setup() {
	local d=$W/geoacme_xdp out
	geoacme_config "$d" "$1" 7 10
	printf '\n[server]\nxdp_listen = ["%s"]\n' "$IF_S" >>"$d/geoacme.toml"
	local rc=0
	out=$(in_s "$GEOACME" check -c "$d/geoacme.toml" 2>&1) || rc=1
	out=$(strip_paths <<<"$out")
	if [ $rc != 0 ]; then
		NOT_AVAILABLE[geoacme_xdp]="this geoacme has no AF_XDP path (\`geoacme check\`: $(grep -m1 -i 'xdp' <<<"$out" || head -1 <<<"$out"))"
	elif grep -qi 'xdp' <<<"$out"; then
		# A warning (no capability, built without libxdp, ...): it runs
		# anyway, and its kernel UDP column shows which path answered.
		NOTE_XDP="\`geoacme check\` said: $(grep -m1 -i 'xdp' <<<"$out")"
	fi
	return 0
}
geoacme_xdp_start() {
	bench_spawn "$W/geoacme_xdp/geoacme.log" taskset -c "$SERVER_CPU" ${WRAP[@]+"${WRAP[@]}"} \
		"$GEOACME" serve -c "$W/geoacme_xdp/geoacme.toml"
	SERVER_PID=$SPAWNED_PID
}

# Paths under $W (which name geoacme_xdp) out of a message: FILE instead.
strip_paths() { sed -E "s#$W/[^ :\"]*#FILE#g"; }

# ---- measuring ---------------------------------------------------------------

wait_ready_ns() {   # wait_ready_ns PORT PID TIMEOUT_S: SOA through the veth
	local t0
	t0=$(date +%s)
	while :; do
		kill -0 "$2" 2>/dev/null || return 1
		in_c kdig @"$ADDR" -p "$1" +norec +time=1 +retry=0 example.com SOA 2>/dev/null |
			grep -q 'status: NOERROR' && return 0
		[ $(($(date +%s) - t0)) -ge "$3" ] && return 1
		sleep 0.2
	done
}

dnsperf_ns() {   # dnsperf_ns PORT SECONDS QPS_LIMIT(0 = none) ARGS...
	local port=$1 secs=$2 limit=$3 qopt=()
	shift 3
	[ "$limit" -gt 0 ] && qopt=(-Q "$limit")
	timeout $((secs + 15)) ip netns exec "$NS_C" taskset -c "$CLIENT_CPU" \
		dnsperf -s "$ADDR" -p "$port" -l "$secs" -c 1 -T 1 -t 2 "${qopt[@]}" "$@" 2>&1
}

class_args() {
	case $1 in
	static) echo "-d $W/q/static" ;;
	geo_ecs_do) echo "-d $W/q/geo -E 8:$ECS_HEX -D" ;;
	esac
}

# check_class SERVER PORT CLASS: ✓, ✗ (why) or – (the reflector).
check_class() {
	local server=$1 port=$2 class=$3 out status ans want got why=""
	[ "$server" = reflector ] && { echo "–"; return; }
	case $class in
	static) out=$(in_c kdig @"$ADDR" -p "$port" +norec +time=2 +retry=1 www.example.com A 2>&1) ;;
	geo_ecs_do) out=$(in_c kdig @"$ADDR" -p "$port" +norec +time=2 +retry=1 +dnssec "+subnet=$ECS_SUBNET" geo.example.com A 2>&1) ;;
	esac
	status=$(sed -n 's/.*status: \([A-Z]*\).*/\1/p' <<<"$out" | head -1)
	ans=$(awk '/^;; ANSWER SECTION:/ { s = 1; next } /^;; / { s = 0 } s && NF >= 5 { print $4, $5 }' <<<"$out")
	[ "$status" = NOERROR ] || why="status ${status:-none}"
	case $class in
	static) grep -qx "A 192.0.2.80" <<<"$ans" || why="${why:-no A 192.0.2.80}" ;;
	geo_ecs_do)
		want=$(geo_expected "${server%_xdp}" | tr ' ' '\n' | sort | tr '\n' ' ')
		got=$(awk '$1 == "A" { print $2 }' <<<"$ans" | sort | tr '\n' ' ')
		[ "$got" = "$want" ] || why="${why:-answer ${got:-empty}, want $want}"
		grep -q "^RRSIG A" <<<"$ans" || why="${why:-no RRSIG}"
		;;
	esac
	[ -n "$why" ] && echo "✗ ($why)" || echo "✓"
}

# BENCH_XDP_SYSCALLS=1: the server's system calls over each fixed-load run
# (perf stat on its tracepoints, every thread), per answered query.
SYSCALL_EVENTS=task-clock,raw_syscalls:sys_enter,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom
SYSCALL_EVENTS+=,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_poll
SYSCALL_EVENTS+=,syscalls:sys_enter_ppoll,syscalls:sys_enter_recvmmsg,syscalls:sys_enter_sendmmsg
[ "${BENCH_XDP_SYSCALLS:-0}" != 1 ] || command -v perf >/dev/null || die "BENCH_XDP_SYSCALLS=1 needs perf (linux-perf)"
syscalls_per_query() {   # syscalls_per_query PERF_CSV ANSWERED
	awk -F, -v n="$2" '
		n > 0 && $3 == "task-clock" { cpu = sprintf("task-clock %.2f µs", $1 * 1000 / n) }
		n > 0 && $3 == "raw_syscalls:sys_enter" { all = sprintf("syscalls %.2f", $1 / n) }
		n > 0 && $3 ~ /^syscalls:sys_enter_/ && $1 > 0 {
			name = $3; sub(/^syscalls:sys_enter_/, "", name)
			each = each sprintf("%s%s %.2f", each == "" ? "" : ", ", name, $1 / n)
		}
		END { if (n > 0) printf "%s, %s (%s)", cpu, all, each; else print "-" }' "$1"
}

# measure_once SERVER PID PORT CLASS ROUND -> a line of $W/rounds.tsv:
# server class round qps us_at_max us_at_load answered_at_load udp_in_per_query rcodes_at_max
measure_once() {
	local server=$1 pid=$2 port=$3 class=$4 r=$5 out t0 t1 u0 u1 n qps usmax usload nl udpq rc
	u0=$(udp_in)
	t0=$(tree_ticks "$pid")
	out=$(dnsperf_ns "$port" "$SECS" 0 $(class_args "$class"))
	t1=$(tree_ticks "$pid")
	u1=$(udp_in)
	echo "$out" >"$W/raw/$server.$class.max.$r"
	n=$(perf_field "$out" completed)
	qps=$(perf_field "$out" qps)
	rc=$(perf_field "$out" rcodes)
	usmax=$(us_per_query $((t1 - t0)) "${n:-0}")
	udpq=$(awk -v u=$((u1 - u0)) -v n="${n:-0}" 'BEGIN { if (n > 0) printf "%.2f", u / n; else print "-" }')
	local sc= sys=
	if [ "${BENCH_XDP_SYSCALLS:-0}" = 1 ] && [ "$server" != reflector ]; then
		perf stat -x, -o "$W/raw/$server.$class.sys.$r" -e "$SYSCALL_EVENTS" -p "$pid" &
		sc=$!
		sleep 0.3   # perf attached to every thread
	fi
	t0=$(tree_ticks "$pid")
	out=$(dnsperf_ns "$port" "$SECS" "$LOAD" $(class_args "$class"))
	t1=$(tree_ticks "$pid")
	echo "$out" >"$W/raw/$server.$class.load.$r"
	nl=$(perf_field "$out" completed)
	usload=$(us_per_query $((t1 - t0)) "${nl:-0}")
	if [ -n "$sc" ]; then
		kill -INT "$sc"
		wait "$sc"
		sys=$(syscalls_per_query "$W/raw/$server.$class.sys.$r" "${nl:-0}")
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$server" "$class" "$r" "${qps:-0}" "$usmax" "$usload" \
		"${nl:-0}" "$udpq" "$rc" >>"$W/rounds.tsv"
	say "  $(printf '%-16s' "${CLASS_LABEL[$class]}") qps ${qps:-0}  us/q@max $usmax  us/q@$LOAD $usload  kernel UDP in/q $udpq${sys:+
    @$LOAD qps, per answered query: $sys}"
}

bench_round() {   # bench_round SERVER ROUND
	local server=$1 r=$2 class pid port=${PORT_OF[$1]} mode
	say "== $server, round $r of $RUNS (port $port)"
	xdp_detach
	"${server}_start" "$port"
	pid=$SERVER_PID
	if [ "$server" = reflector ]; then
		sleep 0.3
		kill -0 "$pid" 2>/dev/null || die "reflector did not start"
	elif ! wait_ready_ns "$port" "$pid" 60; then
		say "$server did not become ready; its log:"
		tail -20 "$W/$server"/*.log >&2 2>/dev/null
		bench_stop "$pid"
		FAILED[$server]=1
		return
	fi
	mode=$(xdp_mode)
	printf '%s\t%s\n' "$server" "$mode" >>"$W/modes.tsv"
	if [ "$r" = 1 ]; then
		for class in $CLASSES; do
			printf '%s\t%s\t%s\n' "$server" "$class" "$(check_class "$server" "$port" "$class")" >>"$W/checks.tsv"
		done
	fi
	dnsperf_ns "$port" 1 0 $(class_args static) >/dev/null   # warm up (and ARP)
	for class in $CLASSES; do
		measure_once "$server" "$pid" "$port" "$class" "$r"
	done
	bench_stop "$pid"
	xdp_detach
}

# Medians over the rounds -> $W/results.tsv:
# server class check qps us_at_max us_at_load flag udp_in_per_query rcodes
aggregate() {
	local server class check qps usmax usload n udpq flag rc
	for server in $SERVERS; do
		for class in $CLASSES; do
			if [ -n "${NOT_AVAILABLE[$server]:-}" ]; then
				printf '%s\t%s\tnot available\t-\t-\t-\t0\t-\t-\n' "$server" "$class" >>"$W/results.tsv"
				continue
			fi
			if [ -n "${FAILED[$server]:-}" ]; then
				printf '%s\t%s\t✗ (did not start)\t-\t-\t-\t0\t-\t-\n' "$server" "$class" >>"$W/results.tsv"
				continue
			fi
			check=$(awk -F'\t' -v s="$server" -v c="$class" '$1 == s && $2 == c { print $3 }' "$W/checks.tsv")
			read -r qps usmax usload n udpq < <(awk -F'\t' -v s="$server" -v c="$class" '
				function med(a, k,   i, j, t) {
					for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
					return a[int((k + 1) / 2)]
				}
				$1 == s && $2 == c { k++; q[k] = $4 + 0; m[k] = $5 + 0; f[k] = $6 + 0; n[k] = $7 + 0; u[k] = $8 + 0 }
				END { if (k) printf "%d %.2f %.2f %d %.2f\n", med(q, k), med(m, k), med(f, k), med(n, k), med(u, k); else print "0 - - 0 -" }' "$W/rounds.tsv")
			flag=0
			if [ "$qps" -lt "$LOAD" ]; then
				flag=1
			elif [ "$n" -lt $((LOAD * SECS * 95 / 100)) ]; then
				flag="short: $((n / SECS)) qps"
			fi
			# Every answer at full speed must be NOERROR (the reflector
			# echoes the query: NOERROR too).
			rc=$(awk -F'\t' -v s="$server" -v c="$class" '$1 == s && $2 == c && $9 !~ /^NOERROR [0-9]+ \(100\.00%\)$/ { print $9; exit }' "$W/rounds.tsv")
			[ -n "$rc" ] && check="$check; at full speed: $rc"
			# An XDP row whose queries reached the kernel's UDP stack was
			# answered on sockets (the server fell back).
			[[ $server == *_xdp ]] && awk -v u="$udpq" 'BEGIN { exit !(u + 0 > 0.5) }' &&
				check="$check; answered on sockets, not XDP"
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$server" "$class" "$check" "$qps" "$usmax" "$usload" "$flag" "$udpq" "$rc" \
				>>"$W/results.tsv"
		done
	done
}

# ---- report ----------------------------------------------------------------

report() {
	local cpu modes
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
	modes=$(awk -F'\t' '{ m[$1] = m[$1] (index(m[$1], $2) ? "" : (m[$1] == "" ? "" : "/") $2) } END { for (s in m) printf "%s %s; ", s, m[s] }' "$W/modes.tsv" | sed 's/; $//')
	echo "# geoacme AF_XDP benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "$(nproc) cores ($cpu), kernel $(uname -r); load average at the start $LOAD_START, at the end $(cut -d' ' -f1-3 /proc/loadavg)."
	echo "A veth pair between two network namespaces made for the run ($ADDR ↔ $CLIENT_ADDR); servers on core $SERVER_CPU,"
	echo "dnsperf $(dpkg-query -W -f='${Version}' dnsperf 2>/dev/null) on core $CLIENT_CPU (-c 1 -T 1, 100 in flight)."
	echo "Versions: geoacme $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo '+dirty'), knot $(dpkg-query -W -f='${Version}' knot 2>/dev/null)."
	echo "XDP attached while each server ran: ${modes:-?}."
	echo "$RUNS round(s) of ${SECS} s runs, medians. QPS: full speed. CPU µs/query: the server's utime+stime /"
	echo "answered queries, at a fixed $LOAD qps (\"sat.\": its full-speed QPS is below that; \"short\": dnsperf"
	echo "did not offer it) and at full speed. Kernel UDP in/query: the server namespace's Udp InDatagrams"
	echo "over the full-speed run / answered queries (1.00 = sockets; about 0 = AF_XDP answered)."
	echo
	echo "| server | path | class | answers | QPS | CPU µs/query @ $LOAD qps | CPU µs/query @ max | vs Knot XDP @ max | kernel UDP in/query |"
	echo "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"
	awk -F'\t' -v lbl="static=static A;geo_ecs_do=geo A +ECS +DO" \
		-v paths="reflector=sockets;knot_xdp=XDP;knot=sockets;geoacme=sockets;geoacme_xdp=XDP" '
		BEGIN {
			n = split(lbl, a, ";"); for (i = 1; i <= n; i++) { split(a[i], kv, "="); L[kv[1]] = kv[2] }
			n = split(paths, a, ";"); for (i = 1; i <= n; i++) { split(a[i], kv, "="); P[kv[1]] = kv[2] }
		}
		NR == FNR { if ($1 == "knot_xdp") kx[$2] = $5 + 0; next }
		{
			load = $6; if ($7 == 1) load = load " (sat.)"; else if ($7 != 0) load = load " (" $7 ")"
			ratio = (kx[$2] > 0 && $5 + 0 > 0) ? sprintf("%.2f×", $5 / kx[$2]) : "-"
			first = !seen[$1]++
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", (first ? $1 : ""), (first ? P[$1] : ""), L[$2], $3, $4, load, $5, ratio, $8
		}' "$W/results.tsv" "$W/results.tsv"
	echo
	for s in "${!NOT_AVAILABLE[@]}"; do
		[ -n "${NOT_AVAILABLE[$s]}" ] && echo "$s: not available: ${NOT_AVAILABLE[$s]}."
	done
	[ -n "$NOTE_XDP" ] && echo "geoacme_xdp: $NOTE_XDP"
	[ -f "$W/geoacme_xdp/geoacme.log" ] &&
		strip_paths <"$W/geoacme_xdp/geoacme.log" | grep -i -m2 'xdp' | sed 's/^/geoacme_xdp log: /'
	targets
}

targets() {
	awk -F'\t' '
		{ mx[$1, $2] = $5; ld[$1, $2] = $6; q[$1, $2] = $4 }
		END {
			lim = q["reflector", "static"] + 0
			if (lim > 0) printf "Sender'"'"'s limit: dnsperf against the reflector answered %d qps (static A); a QPS near it is dnsperf'"'"'s limit, not the server'"'"'s.\n", lim
			ok = 1; have = 1; detail = ""
			split("static geo_ecs_do", cl, " ")
			for (i = 1; i <= 2; i++) {
				c = cl[i]; g = mx["geoacme_xdp", c] + 0; k = mx["knot_xdp", c] + 0
				gl = ld["geoacme_xdp", c] + 0; kl = ld["knot_xdp", c] + 0
				if (g <= 0 || k <= 0 || gl <= 0 || kl <= 0) { have = 0; continue }
				if (g > k || gl > kl) ok = 0
				detail = detail sprintf("%s%s: %.2f vs %.2f µs at full speed, %.2f vs %.2f at the fixed load", (detail == "" ? "" : "; "),
					(c == "static" ? "static A" : "geo A +ECS +DO"), g, k, gl, kl)
			}
			if (!have) print "geoacme XDP ≤ Knot XDP for both classes: NOT met (not measured: geoacme XDP or Knot XDP has no figures in this run)"
			else printf "geoacme XDP ≤ Knot XDP for both classes: %s (%s).\n", (ok ? "met" : "NOT met"), detail
		}' "$W/results.tsv"
}

# ---- main ------------------------------------------------------------------

main() {
	[ "$(id -u)" -eq 0 ] || die "run as root (namespaces, veth, XDP)"
	install_packages
	W=$(mktemp -d /tmp/geoacme-veth.XXXXXX) || die "mktemp failed"
	trap 'bench_cleanup; net_down; [ "${BENCH_KEEP:-0}" = 1 ] && say "kept $W" || rm -rf "$W"' EXIT
	trap 'exit 130' INT TERM
	: >"$W/results.tsv"
	: >"$W/rounds.tsv"
	: >"$W/checks.tsv"
	: >"$W/modes.tsv"
	LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
	build
	make_inputs
	net_up
	WRAP=(ip netns exec "$NS_S")
	declare -gA NOT_AVAILABLE=() FAILED=()
	local s r i list n_servers started
	started=$(date +%s)
	for s in $SERVERS; do
		"${s}_setup" "${PORT_OF[$s]}"
	done
	read -r -a list <<<"$SERVERS"
	n_servers=${#list[@]}
	for r in $(seq "$RUNS"); do
		for i in $(seq 0 $((n_servers - 1))); do
			s=${list[$(((i + r - 1) % n_servers))]}
			[ -n "${FAILED[$s]:-}${NOT_AVAILABLE[$s]:-}" ] || bench_round "$s" "$r"
		done
	done
	aggregate
	mkdir -p "$(dirname "$OUT")"
	report | tee "$OUT"
	say ""
	say "measured in $(($(date +%s) - started)) s; report saved to $OUT"
}

main "$@"
