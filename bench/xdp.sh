#!/bin/bash
# SPDX-License-Identifier: MIT
# The AF_XDP benchmark (issue #24, point 4): geoacme and Knot DNS, each in
# XDP mode and on sockets, in one run, over a veth pair, with the UDP
# reflector as the sender's limit (Debian 12, root).  doc/performance.md,
# "AF_XDP", has the latest table and how to read it.
#
#   bench/xdp.sh                       3 rounds of 2 s runs, then 7 pairs (3 s at
#                                      the fixed load, 2 s at full speed; ~9 min
#                                      with the build)
#   BENCH_XDP_SECONDS=1 bench/xdp.sh   smoke: 1 s runs, one round, 2 pairs (~2 min)
#
# The network, made here and deleted by name on exit (trap): two network
# namespaces, xbS<PID> (the servers) and xbC<PID> (dnsperf and kdig),
# joined by one veth pair, xbs<PID> in xbS and xbc<PID> in xbC, addressed
# 127.77.0.1/30 and 127.77.0.2/30 (loopback addresses on a veth need
# net.ipv4.conf.*.route_localnet=1, set in both namespaces), and for IPv6
# 2001:db8::1/64 and 2001:db8::2/64 (documentation addresses, RFC 3849, as
# the tests' tests/integration/xdp_net.py: a veth cannot take ::1).
# Neither namespace has any other interface than its own lo, nor a route
# beyond those two on-link prefixes: no packet of the run can leave the two
# namespaces.  Deleting a namespace deletes its veth end, and with it any
# XDP program still attached.
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
# Query classes, over IPv4: static A (www.example.com A), and geo A +ECS
# +DO (geo.example.com A from ECS 192.0.2.0/24 with DO: the Paris/Nuremberg
# pair and its RRSIG; Knot answers it from its mod-geoip views, signed
# ahead, in XDP mode too).  Over IPv6, for the servers in
# $BENCH_XDP_V6_SERVERS: static AAAA (www.example.com AAAA) and geo AAAA
# +ECS +DO (ECS 2001:db8:1::/48, Amsterdam in the fixture too: the pair's
# AAAA and RRSIG).  Every answer is checked with kdig first.
#
# Per server and class, per round: a full-speed run (dnsperf -c 1 -T 1, 100
# queries in flight) gives the QPS at saturation and the CPU per answered
# query at full speed; a fixed-load run ($BENCH_XDP_LOAD qps) the CPU per
# query at that load.  CPU: the time on a CPU of every thread of the
# server's process tree (Knot's XDP workers included), the first field of
# /proc/PID/task/TID/schedstat (ns, the scheduler's clock), read before and
# after each run.  The path actually used: the server namespace's kernel
# UDP counter (Udp InDatagrams and Udp6 InDatagrams) over the full-speed
# run, per answered query: 1.00 on sockets, about 0 when AF_XDP answered;
# and the XDP mode `ip -d link` shows while the server runs (xdp = native,
# xdpgeneric = generic).  Figures are medians over the rounds, with the
# smallest and largest round beside them; the order of the servers rotates
# per round.
#
# The target (geoacme XDP ≤ Knot XDP) is decided by the paired rounds
# (paired_rounds below): the two XDP servers alone, at the fixed load and
# at full speed, one right after the other, the order swapped every pair,
# the ratio taken pair by pair (its median and range), so the machine's
# drift cancels; met only when the paired median is ≤ 1 for both classes
# at both loads.  From perf's cpu-clock samples, each one's CPU is split
# into user space (its own code) and kernel (mostly the copy-mode path both
# pay).  The rounds of the whole set above are the overview: they spread
# too much to decide (up to 56 % on a quiet VM).
#
# Caveat: on a veth, the receive side (the XDP program, or the UDP stack up
# to the socket) runs in the sender's softirq, on dnsperf's core, and is not
# in the server's CPU time; the send side (and the peer's receive of the
# answer) runs in the server's system call.  That holds for every server
# here alike, so the comparison is fair, but the absolute figures are not
# those of a NIC, where the receive softirq runs on the server's core.
#
# Settings (environment):
#   BENCH_XDP_SECONDS=2   seconds of each run of the whole set (1 = smoke mode:
#                         one round, 2 pairs of 1 s)
#   BENCH_XDP_RUNS=3      rounds of the whole set (1 when BENCH_XDP_SECONDS=1;
#                         0: only the paired rounds)
#   BENCH_XDP_PAIRS=7     pairs of Knot XDP and geoacme XDP runs (0: none)
#   BENCH_XDP_PAIR_SECONDS=3   seconds of each paired run at the fixed load
#   BENCH_XDP_PAIR_MAX_SECONDS=2   seconds of each paired run at full speed
#                         (0: none; the verdict then says it is not decided)
#   BENCH_XDP_SPLIT_NS=100000  perf's cpu-clock sample period in the paired runs
#                         (0: no user / kernel split; also none without perf)
#   BENCH_XDP_LOAD=20000  fixed offered load, queries/s
#   BENCH_XDP_SERVERS="reflector knot_xdp knot geoacme geoacme_xdp"
#   BENCH_XDP_V6_SERVERS="knot_xdp geoacme_xdp"   those also measured over IPv6 ("": none)
#   BENCH_SERVER_CPU=0 BENCH_CLIENT_CPU=1
#   BENCH_XDP_OUT=build-bench/xdp-results.md   BENCH_KEEP=0 (1 keeps the temp dir)
#   BENCH_NO_INSTALL=0    1 skips scripts/deps.sh and apt-get
#   BENCH_NO_BUILD=0      1 uses build-bench/cmd/geoacme as it is
#   BENCH_XDP_SYSCALLS=0  1 (or load; max: the full-speed runs): perf stat counts each server's system calls, context
#                         switches (its sleeps: wake-ups) and CPU (task-clock)
#                         over the fixed-load runs, printed per
#                         answered query (perf must be installed); its
#                         task-clock reads about 0.7x the schedstat figure on
#                         the 2-core VM of doc/performance.md, alike for all
#   BENCH_XDP_PERF=0      load (or max): perf record -g on each XDP server over its
#                         fixed-load (or full-speed) runs, the report's top lines
#                         saved beside the results
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
. "$BENCH_DIR/lib.sh"
ADDR=127.77.0.1
CLIENT_ADDR=127.77.0.2
ADDR6=2001:db8::1           # servers.sh listens on it too when set
CLIENT_ADDR6=2001:db8::2
. "$BENCH_DIR/servers.sh"

SECS=${BENCH_XDP_SECONDS:-2}
if [ "$SECS" -le 1 ]; then RUNS=${BENCH_XDP_RUNS:-1}; else RUNS=${BENCH_XDP_RUNS:-3}; fi
if [ "$SECS" -le 1 ]; then PAIRS=${BENCH_XDP_PAIRS:-2}; else PAIRS=${BENCH_XDP_PAIRS:-7}; fi
if [ "$SECS" -le 1 ]; then PAIR_SECS=${BENCH_XDP_PAIR_SECONDS:-1}; else PAIR_SECS=${BENCH_XDP_PAIR_SECONDS:-3}; fi
if [ "$SECS" -le 1 ]; then PAIR_MAX_SECS=${BENCH_XDP_PAIR_MAX_SECONDS:-1}; else PAIR_MAX_SECS=${BENCH_XDP_PAIR_MAX_SECONDS:-2}; fi
PAIR_CLASSES="static geo_ecs_do"
SPLIT_NS=${BENCH_XDP_SPLIT_NS:-100000}
SPLIT=0
command -v perf >/dev/null && [ "$SPLIT_NS" -gt 0 ] && SPLIT=1
LOAD=${BENCH_XDP_LOAD:-20000}
PAIR_LOADS=$LOAD                        # the loads of each paired turn: qps, or max
[ "$PAIR_MAX_SECS" -gt 0 ] && PAIR_LOADS="$LOAD max"
SERVERS=${BENCH_XDP_SERVERS:-"reflector knot_xdp knot geoacme geoacme_xdp"}
V6_SERVERS=${BENCH_XDP_V6_SERVERS-"knot_xdp geoacme_xdp"}
SERVER_CPU=${BENCH_SERVER_CPU:-0}
CLIENT_CPU=${BENCH_CLIENT_CPU:-1}
OUT=${BENCH_XDP_OUT:-$ROOT/build-bench/xdp-results.md}
BUILD=$ROOT/build-bench
GEOACME=$BUILD/cmd/geoacme
CLASSES4="static geo_ecs_do"
CLASSES6="static6 geo6_ecs_do"
declare -A CLASS_LABEL=([static]="static A" [geo_ecs_do]="geo A +ECS +DO"
	[static6]="IPv6 static AAAA" [geo6_ecs_do]="IPv6 geo AAAA +ECS +DO")
# The geo queries' ECS over IPv6: family 2, source prefix 48, scope 0,
# 2001:db8:1:: (Amsterdam in make_mmdb.pl's city layout, as 192.0.2.0/24).
ECS6_SUBNET=2001:db8:1::/48
ECS6_HEX=0002300020010db80001
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
	local ns if a a6
	for ns in "$NS_S $IF_S $ADDR $ADDR6" "$NS_C $IF_C $CLIENT_ADDR $CLIENT_ADDR6"; do
		read -r ns if a a6 <<<"$ns"
		ip -n "$ns" link set lo up
		ip netns exec "$ns" sysctl -q -w net.ipv4.conf.all.route_localnet=1 \
			"net.ipv4.conf.$if.route_localnet=1" || die "sysctl route_localnet failed"
		ip -n "$ns" addr add "$a/30" dev "$if" || die "ip addr add failed"
		# nodad: usable at once (the pair's two ends are all there is).
		ip -n "$ns" -6 addr add "$a6/64" dev "$if" nodad || die "ip -6 addr add failed"
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

udp_in() {   # the server namespace's kernel UDP datagrams received so far, both families
	in_s awk '/^Udp:/ && ++n == 2 { s += $2 } $1 == "Udp6InDatagrams" { s += $2 } END { print s + 0 }' \
		/proc/net/snmp /proc/net/snmp6
}

# The time on a CPU of a process tree, in ns: the first field of each
# thread's schedstat (the scheduler's own clock, not 10 ms ticks), every
# thread of every process (Knot's XDP and UDP workers, geoacme's helpers).
tree_cpu_ns() {
	local p files=()
	for p in $(tree_pids "$1"); do
		files+=(/proc/"$p"/task/*/schedstat)
	done
	[ ${#files[@]} -gt 0 ] || { echo 0; return; }
	cat "${files[@]}" 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

us_per_query_ns() {   # us_per_query_ns NS ANSWERED
	awk -v t="$1" -v n="$2" 'BEGIN { if (n > 0) printf "%.2f\n", t / 1000 / n; else print "-" }'
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
	echo "www.example.com AAAA" >"$W/q/static6"
	echo "geo.example.com AAAA" >"$W/q/geo6"
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

dnsperf_ns() {   # dnsperf_ns PORT SECONDS QPS_LIMIT(0 = none) ARGS... (-s ADDRESS among them)
	local port=$1 secs=$2 limit=$3 qopt=()
	shift 3
	[ "$limit" -gt 0 ] && qopt=(-Q "$limit")
	timeout $((secs + 15)) ip netns exec "$NS_C" taskset -c "$CLIENT_CPU" \
		dnsperf -p "$port" -l "$secs" -c 1 -T 1 -t 2 "${qopt[@]}" "$@" 2>&1
}

class_args() {
	case $1 in
	static) echo "-s $ADDR -d $W/q/static" ;;
	geo_ecs_do) echo "-s $ADDR -d $W/q/geo -E 8:$ECS_HEX -D" ;;
	static6) echo "-s $ADDR6 -d $W/q/static6" ;;
	geo6_ecs_do) echo "-s $ADDR6 -d $W/q/geo6 -E 8:$ECS6_HEX -D" ;;
	esac
}

classes_of() {   # the classes SERVER is measured on
	if [[ " $V6_SERVERS " == *" $1 "* ]]; then echo "$CLASSES4 $CLASSES6"; else echo "$CLASSES4"; fi
}

# check_class SERVER PORT CLASS: ✓, ✗ (why) or – (the reflector).
check_class() {
	local server=$1 port=$2 class=$3 out status ans want got why=""
	[ "$server" = reflector ] && { echo "–"; return; }
	local k=(+norec +time=2 +retry=1)
	case $class in
	static) out=$(in_c kdig @"$ADDR" -p "$port" "${k[@]}" www.example.com A 2>&1) ;;
	geo_ecs_do) out=$(in_c kdig @"$ADDR" -p "$port" "${k[@]}" +dnssec "+subnet=$ECS_SUBNET" geo.example.com A 2>&1) ;;
	static6) out=$(in_c kdig @"$ADDR6" -p "$port" "${k[@]}" www.example.com AAAA 2>&1) ;;
	geo6_ecs_do) out=$(in_c kdig @"$ADDR6" -p "$port" "${k[@]}" +dnssec "+subnet=$ECS6_SUBNET" geo.example.com AAAA 2>&1) ;;
	esac
	status=$(sed -n 's/.*status: \([A-Z]*\).*/\1/p' <<<"$out" | head -1)
	ans=$(awk '/^;; ANSWER SECTION:/ { s = 1; next } /^;; / { s = 0 } s && NF >= 5 { print $4, $5 }' <<<"$out")
	[ "$status" = NOERROR ] || why="status ${status:-none}"
	case $class in
	static) grep -qx "A 192.0.2.80" <<<"$ans" || why="${why:-no A 192.0.2.80}" ;;
	static6) grep -qx "AAAA $WWW6" <<<"$ans" || why="${why:-no AAAA $WWW6}" ;;
	geo_ecs_do | geo6_ecs_do)
		local t=A
		if [ "$class" = geo6_ecs_do ]; then
			t=AAAA
			want=$(geo_expected6 "${server%_xdp}")
		else
			want=$(geo_expected "${server%_xdp}")
		fi
		want=$(tr ' ' '\n' <<<"$want" | sort | tr '\n' ' ')
		got=$(awk -v t=$t '$1 == t { print $2 }' <<<"$ans" | sort | tr '\n' ' ')
		[ "$got" = "$want" ] || why="${why:-answer ${got:-empty}, want $want}"
		grep -q "^RRSIG $t" <<<"$ans" || why="${why:-no RRSIG}"
		;;
	esac
	[ -n "$why" ] && echo "✗ ($why)" || echo "✓"
}

# BENCH_XDP_SYSCALLS=1: the server's system calls over each fixed-load run
# (perf stat on its tracepoints, every thread), per answered query.
SYSCALL_EVENTS=task-clock,context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom
SYSCALL_EVENTS+=,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_poll
SYSCALL_EVENTS+=,syscalls:sys_enter_ppoll,syscalls:sys_enter_recvmmsg,syscalls:sys_enter_sendmmsg
[ "${BENCH_XDP_SYSCALLS:-0}" = 0 ] || command -v perf >/dev/null || die "BENCH_XDP_SYSCALLS needs perf (linux-perf)"
# sys_start SERVER CLASS ROUND PID AT (load or max): perf stat over that run
# when BENCH_XDP_SYSCALLS asks for it; sys_stop ANSWERED sets sys.
sys_start() {
	sc= sys=
	local want=${BENCH_XDP_SYSCALLS:-0}
	[ "$want" = 1 ] && want=load
	[ "$want" = "$5" ] && [ "$1" != reflector ] || return 0
	SYS_CSV=$W/raw/$1.$2.sys.$5.$3
	perf stat -x, -o "$SYS_CSV" -e "$SYSCALL_EVENTS" -p "$4" &
	sc=$!
	sleep 0.3   # perf attached to every thread
}
sys_stop() {
	[ -n "$sc" ] || return 0
	kill -INT "$sc"
	wait "$sc"
	sys=$(syscalls_per_query "$SYS_CSV" "$1")
}
syscalls_per_query() {   # syscalls_per_query PERF_CSV ANSWERED
	awk -F, -v n="$2" '
		n > 0 && $3 == "task-clock" { cpu = sprintf("task-clock %.2f µs", $1 * 1000 / n) }
		n > 0 && $3 == "raw_syscalls:sys_enter" { all = sprintf("syscalls %.2f", $1 / n) }
		n > 0 && $3 == "context-switches" { cs = sprintf(", sleeps %.3f", $1 / n) }
		n > 0 && $3 ~ /^syscalls:sys_enter_/ && $1 > 0 {
			name = $3; sub(/^syscalls:sys_enter_/, "", name)
			each = each sprintf("%s%s %.2f", each == "" ? "" : ", ", name, $1 / n)
		}
		END { if (n > 0) printf "%s%s, %s (%s)", cpu, cs, all, each; else print "-" }' "$1"
}

# BENCH_XDP_PERF=load or max: where an XDP server's time goes over its
# fixed-load or full-speed runs (perf record -g), the top of the report
# saved beside the results.
PERF_AT=${BENCH_XDP_PERF:-0}
[ "$PERF_AT" = 0 ] || command -v perf >/dev/null || die "BENCH_XDP_PERF needs perf (linux-perf)"
perf_start() {   # perf_start SERVER CLASS ROUND PID AT: sets PERF_PID when it records
	PERF_PID=
	[ "$PERF_AT" = "$5" ] && [[ $1 == *_xdp ]] || return 0
	PERF_DATA=$W/raw/$1.$2.$5.$3.perf
	perf record -q -g -p "$4" -o "$PERF_DATA" >/dev/null 2>&1 &
	PERF_PID=$!
	sleep 0.3
}
perf_stop() {    # perf_stop SERVER CLASS ROUND
	[ -n "$PERF_PID" ] || return 0
	kill -INT "$PERF_PID"
	wait "$PERF_PID"
	mkdir -p "$(dirname "$OUT")"
	perf report -i "$PERF_DATA" --stdio --no-children --percent-limit 0.5 -g none 2>/dev/null |
		grep -v '^$' | head -60 >"${OUT%.md}-perf-$1.$2.$PERF_AT.$3.txt"
}

# measure_once SERVER PID PORT CLASS ROUND -> a line of $W/rounds.tsv:
# server class round qps us_at_max us_at_load answered_at_load udp_in_per_query rcodes_at_max
measure_once() {
	local server=$1 pid=$2 port=$3 class=$4 r=$5 out c0 c1 u0 u1 n qps usmax usload nl udpq rc
	local sc= sys= sysmax=
	sys_start "$server" "$class" "$r" "$pid" max
	perf_start "$server" "$class" "$r" "$pid" max
	u0=$(udp_in)
	c0=$(tree_cpu_ns "$pid")
	out=$(dnsperf_ns "$port" "$SECS" 0 $(class_args "$class"))
	c1=$(tree_cpu_ns "$pid")
	u1=$(udp_in)
	perf_stop "$server" "$class" "$r"
	echo "$out" >"$W/raw/$server.$class.max.$r"
	n=$(perf_field "$out" completed)
	sys_stop "${n:-0}"
	sysmax=$sys
	qps=$(perf_field "$out" qps)
	rc=$(perf_field "$out" rcodes)
	usmax=$(us_per_query_ns $((c1 - c0)) "${n:-0}")
	udpq=$(awk -v u=$((u1 - u0)) -v n="${n:-0}" 'BEGIN { if (n > 0) printf "%.2f", u / n; else print "-" }')
	sys_start "$server" "$class" "$r" "$pid" load
	perf_start "$server" "$class" "$r" "$pid" load
	c0=$(tree_cpu_ns "$pid")
	out=$(dnsperf_ns "$port" "$SECS" "$LOAD" $(class_args "$class"))
	c1=$(tree_cpu_ns "$pid")
	echo "$out" >"$W/raw/$server.$class.load.$r"
	nl=$(perf_field "$out" completed)
	usload=$(us_per_query_ns $((c1 - c0)) "${nl:-0}")
	sys_stop "${nl:-0}"
	perf_stop "$server" "$class" "$r"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$server" "$class" "$r" "${qps:-0}" "$usmax" "$usload" \
		"${nl:-0}" "$udpq" "$rc" >>"$W/rounds.tsv"
	say "  $(printf '%-24s' "${CLASS_LABEL[$class]}") qps ${qps:-0}  us/q@max $usmax  us/q@$LOAD $usload  kernel UDP in/q $udpq${sysmax:+
    @max, per answered query: $sysmax}${sys:+
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
		for class in $(classes_of "$server"); do
			printf '%s\t%s\t%s\n' "$server" "$class" "$(check_class "$server" "$port" "$class")" >>"$W/checks.tsv"
		done
	fi
	dnsperf_ns "$port" 1 0 $(class_args static) >/dev/null   # warm up (and ARP)
	[[ " $(classes_of "$server") " != *" static6 "* ]] ||
		dnsperf_ns "$port" 1 0 $(class_args static6) >/dev/null   # (and neighbour discovery)
	for class in $(classes_of "$server"); do
		measure_once "$server" "$pid" "$port" "$class" "$r"
	done
	bench_stop "$pid"
	xdp_detach
}

# ---- the paired rounds: Knot XDP against geoacme XDP -------------------------
#
# Rounds of the whole set drift with the machine (another job starts, the
# host's other guests): three rounds spread up to 56 % on a quiet VM, more
# than the difference asked about.  So the XDP pair is measured again on
# its own: $PAIRS pairs, each server's turn being, per class, a run of
# $PAIR_SECS s at the fixed load and one of $PAIR_MAX_SECS s at full speed;
# the two servers one right after the other, the order swapped every pair
# (A B, B A, A B, ...: a steady drift cancels within a pair), and the
# ratio taken pair by pair, per class and load.  Its median, with the
# smallest and largest pair, says which server is cheaper with the drift
# taken out.  At full speed both answer what dnsperf sends (the sender's
# limit): the CPU per answered query is still the figure, the QPS is not.
#
# Beside it, where the time goes: perf record samples each server's threads
# every $SPLIT_NS ns of CPU (cpu-clock: this VM has no hardware counters,
# so cycles and instructions cannot be counted) and the share of samples
# in user space splits the schedstat time into user and kernel µs a query.
# User space is what each server's own code costs; the kernel part is
# mostly the copy-mode send both pay alike.  The sampling costs a little
# CPU per sample, the same for both.

# split_start PID: sets SPLIT_PID when perf can sample.
split_start() {
	SPLIT_PID=
	[ "$SPLIT" = 1 ] || return 0
	SPLIT_DATA=$W/raw/split.$1.perf
	perf record -q -e cpu-clock -c "$SPLIT_NS" -p "$1" -o "$SPLIT_DATA" >/dev/null 2>&1 &
	SPLIT_PID=$!
	sleep 0.3   # attached to every thread
}
# split_stop: sets SPLIT_USER, the user-space share of the samples (0..1),
# or "-".  (Not in a $( ): perf must be waited for by its parent.)
split_stop() {
	SPLIT_USER=-
	[ -n "$SPLIT_PID" ] || return 0
	kill -INT "$SPLIT_PID"
	wait "$SPLIT_PID"
	SPLIT_USER=$(split_share "$SPLIT_DATA")
	rm -f "$SPLIT_DATA"
}
# A symbol's line starts with its share and "[k]" (kernel) or "[.]" (user).
# A user sample in a libc system call wrapper is the kernel's time: this
# VM's timer interrupt waits while interrupts are off (most of a context
# switch, the softirq that hands a reply to the peer), so its sample lands
# where they come back on, often the instruction after the syscall.
SYSCALL_STUBS='^(__libc_)?(epoll_wait|epoll_pwait|sendto|recvfrom|sendmsg|recvmsg|sendmmsg|recvmmsg|__poll|poll|ppoll|read|write|syscall)$'
split_share() {
	perf report -i "$1" --stdio --no-children -g none --sort sym 2>/dev/null | awk -v stubs="$SYSCALL_STUBS" '
		$1 ~ /%$/ && ($2 == "[k]" || $2 == "[.]") {
			v = $1; sub(/%/, "", v); t += v
			if ($2 == "[.]" && $3 !~ stubs) u += v
		}
		END { if (t > 0) printf "%.4f\n", u / t; else print "-" }'
}

pair_run() {   # pair_run SERVER PAIR: one server's runs of one pair -> $W/pairs.tsv
	local server=$1 r=$2 port=${PORT_OF[$1]} pid class at secs limit c0 c1 out n us uf
	xdp_detach
	"${server}_start" "$port"
	pid=$SERVER_PID
	if ! wait_ready_ns "$port" "$pid" 60; then
		say "$server did not become ready for pair $r; its log:"
		tail -20 "$W/$server"/*.log >&2 2>/dev/null
		bench_stop "$pid"
		FAILED[$server]=1
		return
	fi
	dnsperf_ns "$port" 1 0 $(class_args static) >/dev/null   # warm up (and ARP)
	for class in $PAIR_CLASSES; do
		for at in $PAIR_LOADS; do
			if [ "$at" = max ]; then secs=$PAIR_MAX_SECS limit=0; else secs=$PAIR_SECS limit=$at; fi
			split_start "$pid"
			c0=$(tree_cpu_ns "$pid")
			out=$(dnsperf_ns "$port" "$secs" "$limit" $(class_args "$class"))
			c1=$(tree_cpu_ns "$pid")
			split_stop
			uf=$SPLIT_USER
			echo "$out" >"$W/raw/$server.$class.$at.pair.$r"
			n=$(perf_field "$out" completed)
			us=$(us_per_query_ns $((c1 - c0)) "${n:-0}")
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$server" "$class" "$r" "$us" "${n:-0}" "$uf" "$at" "$secs" >>"$W/pairs.tsv"
			say "  pair $r $(printf '%-12s %-16s' "$server" "${CLASS_LABEL[$class]}") us/q@$at $us  user share $uf  answered ${n:-0}"
		done
	done
	bench_stop "$pid"
	xdp_detach
}

paired_rounds() {
	local r a=knot_xdp b=geoacme_xdp
	[ "$PAIRS" -gt 0 ] || return 0
	[[ " $SERVERS " == *" $a "* && " $SERVERS " == *" $b "* ]] || return 0
	[ -z "${FAILED[$a]:-}${NOT_AVAILABLE[$a]:-}${FAILED[$b]:-}${NOT_AVAILABLE[$b]:-}" ] || return 0
	say "== paired rounds: $a and $b, $PAIRS pairs ($PAIR_SECS s at $LOAD qps, $PAIR_MAX_SECS s at full speed), the order swapped every pair"
	for r in $(seq "$PAIRS"); do
		if [ $((r % 2)) = 1 ]; then pair_run $a "$r"; pair_run $b "$r"; else pair_run $b "$r"; pair_run $a "$r"; fi
		[ -z "${FAILED[$a]:-}${FAILED[$b]:-}" ] || return 0
	done
}

# Medians over the rounds, with the smallest and largest -> $W/results.tsv:
# server class check qps us_at_max us_at_load flag udp_in_per_query rcodes
#   max_lo max_hi load_lo load_hi
aggregate() {
	local server class check qps usmax usload n udpq flag rc mlo mhi llo lhi
	for server in $SERVERS; do
		for class in $(classes_of "$server"); do
			if [ -n "${NOT_AVAILABLE[$server]:-}" ]; then
				printf '%s\t%s\tnot available\t-\t-\t-\t0\t-\t-\t-\t-\t-\t-\n' "$server" "$class" >>"$W/results.tsv"
				continue
			fi
			if [ -n "${FAILED[$server]:-}" ]; then
				printf '%s\t%s\t✗ (did not start)\t-\t-\t-\t0\t-\t-\t-\t-\t-\t-\n' "$server" "$class" >>"$W/results.tsv"
				continue
			fi
			check=$(awk -F'\t' -v s="$server" -v c="$class" '$1 == s && $2 == c { print $3 }' "$W/checks.tsv")
			read -r qps usmax usload n udpq mlo mhi llo lhi < <(awk -F'\t' -v s="$server" -v c="$class" '
				function med(a, k,   i, j, t) {
					for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
					return a[int((k + 1) / 2)]
				}
				$1 == s && $2 == c { k++; q[k] = $4 + 0; m[k] = $5 + 0; f[k] = $6 + 0; n[k] = $7 + 0; u[k] = $8 + 0 }
				END {
					if (!k) { print "0 - - 0 - - - - -"; exit }
					printf "%d %.2f %.2f %d %.2f", med(q, k), med(m, k), med(f, k), med(n, k), med(u, k)
					# med() sorted them: the first and the last are the extremes.
					printf " %.2f %.2f %.2f %.2f\n", m[1], m[k], f[1], f[k]
				}' "$W/rounds.tsv")
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
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$server" "$class" "$check" "$qps" "$usmax" \
				"$usload" "$flag" "$udpq" "$rc" "$mlo" "$mhi" "$llo" "$lhi" >>"$W/results.tsv"
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
	echo "A veth pair between two network namespaces made for the run ($ADDR ↔ $CLIENT_ADDR, $ADDR6 ↔ $CLIENT_ADDR6); servers on core $SERVER_CPU,"
	echo "dnsperf $(dpkg-query -W -f='${Version}' dnsperf 2>/dev/null) on core $CLIENT_CPU (-c 1 -T 1, 100 in flight)."
	echo "Versions: geoacme $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo '+dirty'), knot $(dpkg-query -W -f='${Version}' knot 2>/dev/null)."
	echo "XDP attached while each server ran: ${modes:-?}."
	echo "$RUNS round(s) of ${SECS} s runs: medians, and (smallest–largest round). QPS: full speed. CPU µs/query: the time"
	echo "on a CPU of every thread of the server (schedstat, ns) / answered queries, at a fixed $LOAD qps (\"sat.\": its"
	echo "full-speed QPS is below that; \"short\": dnsperf did not offer it) and at full speed; \"vs Knot XDP\": the median's"
	echo "ratio to Knot XDP's for the same class. Kernel UDP in/query: the server namespace's Udp and Udp6 InDatagrams"
	echo "over the full-speed run / answered queries (1.00 = sockets; about 0 = AF_XDP answered)."
	echo
	echo "| server | path | class | answers | QPS | CPU µs/query @ $LOAD qps | CPU µs/query @ max | vs Knot XDP @ $LOAD / @ max | kernel UDP in/query |"
	echo "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"
	awk -F'\t' -v lbl="static=static A;geo_ecs_do=geo A +ECS +DO;static6=IPv6 static AAAA;geo6_ecs_do=IPv6 geo AAAA +ECS +DO" \
		-v paths="reflector=sockets;knot_xdp=XDP;knot=sockets;geoacme=sockets;geoacme_xdp=XDP" '
		BEGIN {
			n = split(lbl, a, ";"); for (i = 1; i <= n; i++) { split(a[i], kv, "="); L[kv[1]] = kv[2] }
			n = split(paths, a, ";"); for (i = 1; i <= n; i++) { split(a[i], kv, "="); P[kv[1]] = kv[2] }
		}
		function ratio(v, k) { return (k > 0 && v + 0 > 0) ? sprintf("%.2f×", v / k) : "-" }
		function cell(v, lo, hi) { return (v == "-" || lo == "-" || lo == hi) ? v : sprintf("%s (%s–%s)", v, lo, hi) }
		NR == FNR { if ($1 == "knot_xdp") { kx[$2] = $5 + 0; kl[$2] = $6 + 0 }; next }
		{
			load = cell($6, $12, $13); if ($7 == 1) load = load " (sat.)"; else if ($7 != 0) load = load " (" $7 ")"
			first = !seen[$1]++
			printf "| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s |\n", (first ? $1 : ""), (first ? P[$1] : ""), L[$2], $3, $4,
				load, cell($5, $10, $11), ratio($6, kl[$2]), ratio($5, kx[$2]), $8
		}' "$W/results.tsv" "$W/results.tsv"
	echo
	for s in "${!NOT_AVAILABLE[@]}"; do
		[ -n "${NOT_AVAILABLE[$s]}" ] && echo "$s: not available: ${NOT_AVAILABLE[$s]}."
	done
	[ -n "$NOTE_XDP" ] && echo "geoacme_xdp: $NOTE_XDP"
	[ -f "$W/geoacme_xdp/geoacme.log" ] &&
		strip_paths <"$W/geoacme_xdp/geoacme.log" | grep -i -m2 'xdp' | sed 's/^/geoacme_xdp log: /'
	pairs_report
	echo
	targets
	echo
	cat "$W/verdict"
}

# The paired rounds' table (paired_rounds above), and the verdict on the
# issue's target into $W/verdict: met only when, for both classes at both
# loads, the median of the paired ratios is ≤ 1.
pairs_report() {
	: >"$W/verdict"
	if [ ! -s "$W/pairs.tsv" ]; then
		echo "Target (paired rounds decide): NOT decided: no paired rounds in this run (BENCH_XDP_PAIRS=0, or a server failed)." >"$W/verdict"
		return 0
	fi
	echo
	echo "Paired rounds (these decide): Knot XDP and geoacme XDP alone, $PAIRS pairs, each server's turn a run of $PAIR_SECS s at"
	echo "$LOAD qps and one of $PAIR_MAX_SECS s at full speed per class, one server right after the other, the order swapped every"
	echo "pair. CPU µs/query: medians over the pairs (smallest–largest); the ratio is taken pair by pair, then its median"
	echo "(smallest–largest pair). User / kernel: the schedstat time split by where perf's cpu-clock samples (one per"
	echo "$((SPLIT_NS / 1000)) µs of CPU) fell; \"-\": perf could not sample. QPS: the median answered per second (at full speed the"
	echo "sender's limit for both, not the server's)."
	echo
	echo "| class | load | Knot XDP µs/query | geoacme XDP µs/query | geoacme ÷ Knot, paired | pairs geoacme ≤ Knot | user µs/query Knot / geoacme | kernel µs/query Knot / geoacme | QPS Knot / geoacme |"
	echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	awk -F'\t' -v lbl="static=static A;geo_ecs_do=geo A +ECS +DO" -v classes="$PAIR_CLASSES" -v loads="$LOAD max" \
		-v load="$LOAD" -v verdict="$W/verdict" '
		function sort(a, k,   i, j, t) { for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t } }
		function med(a, k) { sort(a, k); return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
		function cell(a, k,   m) { m = med(a, k); return sprintf("%.2f (%.2f–%.2f)", m, a[1], a[k]) }
		BEGIN { n = split(lbl, x, ";"); for (i = 1; i <= n; i++) { split(x[i], kv, "="); L[kv[1]] = kv[2] } }
		# $7: the load (qps, or max); $8: the run'"'"'s seconds.  A fixed-load
		# run dnsperf could not offer the load to (a busy client core)
		# measured another load: its pair is left out, and counted.
		{ at = $7; ok = ($4 + 0 > 0) && (at == "max" ? $5 + 0 > 0 : $5 >= at * $8 * 0.95) }
		ok { us[$1, $2, at, $3] = $4 + 0; uf[$1, $2, at, $3] = $6; qps[$1, $2, at, $3] = $5 / $8 }
		!ok && $4 + 0 > 0 { short[$2, at, $3] = 1 }
		END {
			nc = split(classes, cl, " "); nl = split(loads, ld, " ")
			met = 1; undecided = ""
			for (c = 1; c <= nc; c++) for (l = 1; l <= nl; l++) {
				a = ld[l]; an = (a == "max" ? "full speed" : a " qps")
				k = 0; ks = 0; delete K; delete G; delete R; delete KU; delete GU; delete KK; delete GK; delete KQ; delete GQ
				le = 0
				for (r = 1; r <= 1000; r++) {
					if ((cl[c], a, r) in short) nshort++
					if (!((("knot_xdp", cl[c], a, r) in us) && (("geoacme_xdp", cl[c], a, r) in us))) continue
					kv_ = us["knot_xdp", cl[c], a, r]; gv = us["geoacme_xdp", cl[c], a, r]
					k++; K[k] = kv_; G[k] = gv; R[k] = gv / kv_; if (gv <= kv_) le++
					KQ[k] = qps["knot_xdp", cl[c], a, r]; GQ[k] = qps["geoacme_xdp", cl[c], a, r]
					if (uf["knot_xdp", cl[c], a, r] != "-" && uf["geoacme_xdp", cl[c], a, r] != "-") {
						ks++; KU[ks] = kv_ * uf["knot_xdp", cl[c], a, r]; GU[ks] = gv * uf["geoacme_xdp", cl[c], a, r]
						KK[ks] = kv_ - KU[ks]; GK[ks] = gv - GU[ks]
					}
				}
				if (!k) {
					met = 0; undecided = undecided sprintf("%s%s at %s", (undecided == "" ? "" : ", "), L[cl[c]], an)
					continue
				}
				u = ks ? sprintf("%.2f / %.2f", med(KU, ks), med(GU, ks)) : "-"
				kn = ks ? sprintf("%.2f / %.2f", med(KK, ks), med(GK, ks)) : "-"
				m = med(R, k)
				printf "| %s | %s | %s | %s | %s | %d of %d | %s | %s | %d / %d |\n", L[cl[c]], an, cell(K, k), cell(G, k),
					sprintf("%.2f× (%.2f–%.2f×)", m, R[1], R[k]), le, k, u, kn, med(KQ, k), med(GQ, k)
				if (m > 1) met = 0
				s = (R[k] <= 1 || R[1] > 1 ? "every pair agrees" : sprintf("%d of %d pairs ≤", le, k))
				detail = detail sprintf("%s%s at %s %.2f× (%s)", (detail == "" ? "" : "; "), L[cl[c]], an, m, s)
			}
			if (nshort) printf "\n%d run(s) left out: dnsperf answered under 95 %% of the load asked.\n", nshort
			if (undecided != "")
				printf "Target (decided by the paired medians, geoacme XDP ≤ Knot XDP for both classes at %s qps and at full speed): NOT met: not measured: %s%s.\n", load, undecided, (detail == "" ? "" : "; measured: " detail) >verdict
			else
				printf "Target (decided by the paired medians, geoacme XDP ≤ Knot XDP for both classes at %s qps and at full speed): %s: %s.\n", load, (met ? "met" : "NOT met"), detail >verdict
		}' "$W/pairs.tsv"
}

# The issue's target (geoacme XDP ≤ Knot XDP, IPv4 static A and geo A +ECS
# +DO, at the fixed load and at full speed), then the same over IPv6, and
# the spread between rounds: above 10 % the run was too noisy to settle a
# difference that small (longer runs, a quieter machine).
targets() {
	awk -F'\t' '
		{ mx[$1, $2] = $5; ld[$1, $2] = $6; q[$1, $2] = $4
		  if ($5 + 0 > 0 && $11 + 0 > 0) { sp = ($11 - $10) / $5; if (sp > worst) { worst = sp; wn = $1 " " $2 " @ max" } }
		  if ($6 + 0 > 0 && $13 + 0 > 0) { sp = ($13 - $12) / $6; if (sp > worst) { worst = sp; wn = $1 " " $2 " @ load" } } }
		function verdict(title, classes,   cl, i, c, g, k, gl, kl, ok, have, detail, n) {
			ok = 1; have = 1; detail = ""
			n = split(classes, cl, " ")
			for (i = 1; i <= n; i++) {
				c = cl[i]; g = mx["geoacme_xdp", c] + 0; k = mx["knot_xdp", c] + 0
				gl = ld["geoacme_xdp", c] + 0; kl = ld["knot_xdp", c] + 0
				if (g <= 0 || k <= 0 || gl <= 0 || kl <= 0) { have = 0; continue }
				if (g > k || gl > kl) ok = 0
				detail = detail sprintf("%s%s: %.2f vs %.2f µs at the fixed load (%.2f×), %.2f vs %.2f at full speed (%.2f×)",
					(detail == "" ? "" : "; "), name[c], gl, kl, gl / kl, g, k, g / k)
			}
			if (!have) printf "%s: not measured (geoacme XDP or Knot XDP has no figures in this run)\n", title
			else printf "%s: %s (%s).\n", title, (ok ? "yes" : "no"), detail
		}
		END {
			name["static"] = "static A"; name["geo_ecs_do"] = "geo A +ECS +DO"
			name["static6"] = "static AAAA"; name["geo6_ecs_do"] = "geo AAAA +ECS +DO"
			lim = q["reflector", "static"] + 0
			if (lim > 0) printf "Sender'"'"'s limit: dnsperf against the reflector answered %d qps (static A); a QPS near it is dnsperf'"'"'s limit, not the server'"'"'s.\n", lim
			verdict("Overview, the whole set'"'"'s medians (not paired; does not decide): geoacme XDP ≤ Knot XDP for both classes", "static geo_ecs_do")
			if (("geoacme_xdp", "static6") in mx) verdict("Overview over IPv6 (not paired; does not decide): geoacme XDP ≤ Knot XDP", "static6 geo6_ecs_do")
			if (worst > 0) printf "Largest spread between rounds: %.0f %% of the median (%s)%s.\n", worst * 100, wn,
				(worst > 0.10 ? ": above 10 %, a difference smaller than that is noise here" : "")
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
	: >"$W/pairs.tsv"
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
	paired_rounds
	aggregate
	mkdir -p "$(dirname "$OUT")"
	report | tee "$OUT"
	say ""
	say "measured in $(($(date +%s) - started)) s; report saved to $OUT"
}

main "$@"
