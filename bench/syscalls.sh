#!/bin/bash
# SPDX-License-Identifier: MIT
# System calls per answered query at the fixed load of bench/run.sh, per
# server: a count, not a time, so it is the same on a busy machine.
#
#   bench/syscalls.sh       geo A + ECS + DO at 40 000 qps, 3 s per server
#
# Each server runs alone, pinned like in run.sh; dnsperf (one thread, on
# the other core) offers the load while `perf stat` counts the server's
# system calls on the syscall tracepoints (cheap, unlike strace, so the
# load is what it would be without counting); the table divides them by
# the queries dnsperf saw answered (doc/performance.md, "The kernel's side").
#
# Settings (environment):
#   BENCH_SERVERS="reflector geoacme gdnsd"
#   BENCH_LOAD=40000   SYSCALLS_S=3 (seconds per server)   SYSCALLS_CLASS=geo_ecs_do|static
#   BENCH_PORT=15300   BENCH_SERVER_CPU=0 BENCH_CLIENT_CPU=1   BENCH_KEEP=0
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
. "$BENCH_DIR/lib.sh"
. "$BENCH_DIR/servers.sh"

SERVERS=${BENCH_SERVERS:-"reflector geoacme gdnsd"}
LOAD=${BENCH_LOAD:-40000}
SECS=${SYSCALLS_S:-3}
CLASS=${SYSCALLS_CLASS:-geo_ecs_do}
PORT=${BENCH_PORT:-15300}
SERVER_CPU=${BENCH_SERVER_CPU:-0}
CLIENT_CPU=${BENCH_CLIENT_CPU:-1}
BUILD=$ROOT/build-bench
GEOACME=$BUILD/cmd/geoacme
# The calls a UDP server makes per wake-up, counted one by one.
CALLS="epoll_wait epoll_pwait recvmmsg sendmmsg recvmsg sendmsg recvfrom sendto io_uring_enter"

[ "$(id -u)" -eq 0 ] || die "run as root (perf on another process's tracepoints)"
perf stat -e raw_syscalls:sys_enter true >/dev/null 2>&1 || die "perf cannot count syscall tracepoints"

W=$(mktemp -d /tmp/geoacme-syscalls.XXXXXX) || die "mktemp failed"
trap 'bench_cleanup; [ "${BENCH_KEEP:-0}" = 1 ] && say "kept $W" || rm -rf "$W"' EXIT
trap 'exit 130' INT TERM

say "building geoacme (Release) in $BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null || die "cmake failed"
cmake --build "$BUILD" -j2 --target geoacme >"$W/build.log" 2>&1 || { tail -20 "$W/build.log"; die "build failed"; }
gcc -O2 -o "$W/reflector" "$BENCH_DIR/reflector.c" || die "reflector build failed"
perl "$ROOT/tests/fixtures/make_mmdb.pl" --layout city --out "$W" >/dev/null || die "make_mmdb.pl failed"
(umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/zsk.pem" 2>/dev/null) ||
	die "openssl genpkey failed"
mkdir -p "$W/q"
echo "www.example.com A" >"$W/q/static"
echo "geo.example.com A" >"$W/q/geo"
case $CLASS in
static) ARGS=(-d "$W/q/static") ;;
geo_ecs_do) ARGS=(-d "$W/q/geo" -E "8:$ECS_HEX" -D) ;;
*) die "SYSCALLS_CLASS: static or geo_ecs_do" ;;
esac

events=(-e raw_syscalls:sys_enter)
for c in $CALLS; do
	[ -d "/sys/kernel/tracing/events/syscalls/sys_enter_$c" ] && events+=(-e "syscalls:sys_enter_$c")
done

echo "| server | answered | system calls / query | of which |"
echo "| --- | ---: | ---: | --- |"
for s in $SERVERS; do
	while ! port_free "$PORT"; do PORT=$((PORT + 1)); done
	"${s}_setup" "$PORT" >/dev/null
	"${s}_start" "$PORT"
	pid=$SERVER_PID
	if [ "$s" = reflector ]; then
		sleep 0.3
	elif ! wait_ready "$PORT" "$pid" 60; then
		say "$s did not start"
		bench_stop "$pid" || true
		continue
	fi
	run_dnsperf "$PORT" 1 "$LOAD" "${ARGS[@]}" >/dev/null   # warm up
	perf stat -x, "${events[@]}" -p "$pid" -o "$W/perf.$s" &
	counter=$!
	sleep 0.2
	out=$(run_dnsperf "$PORT" "$SECS" "$LOAD" "${ARGS[@]}")
	kill -INT "$counter"
	wait "$counter" 2>/dev/null || true
	bench_stop "$pid" || true   # (its exit status is the server's)
	n=$(perf_field "$out" completed)
	awk -F, -v s="$s" -v n="${n:-0}" '
		# One line per event, or per thread and event: add them up.
		$3 ~ /^raw_syscalls:sys_enter/ { total += $1 }
		$3 ~ /^syscalls:sys_enter_/ {
			c = $3; sub(/^syscalls:sys_enter_/, "", c)
			if (!(c in count)) order[++k] = c
			count[c] += $1
		}
		END {
			for (i = 1; i <= k; i++)
				if (count[order[i]] > 0)
					parts = parts sprintf("%s%s %.2f", (parts == "" ? "" : ", "), order[i], count[order[i]] / n)
			printf "| %s | %d | %.2f | %s |\n", s, n, (n > 0 ? total / n : 0), parts
		}' "$W/perf.$s"
	PORT=$((PORT + 1))
done
