#!/bin/bash
# SPDX-License-Identifier: MIT
# Does the event loop stop while geoacme does whole-zone or whole-file work?
# (issue #26.5; doc/performance.md, "Stalls").  Under a steady query load,
# each scenario below runs once.
#
# The load and its control: this VM's core stalls by itself (the host takes
# it; 16-29 ms waits with geoacme idle), so a wait alone does not say whose
# it is.  stall_probe.c, on the client's core (at SCHED_FIFO 1 too when the
# bench may: nothing else there delays its reads), sends $BENCH_STALL_QPS
# queries/s to geoacme (TXT with DO of the zone's names, 1 in 10 NXDOMAIN)
# and, interleaved half a spacing later, the same queries at the same rate
# to a control that does no DNS work (reflector.c, pinned to the server's
# core for the whole run, at real-time priority SCHED_FIFO 1 when the bench
# may: it answers at once even while geoacme's loop holds the core, so a
# round of geoacme's own is not shared).  Each query is stamped when sent,
# and its answer
# when the kernel queued it on the probe's socket (SO_TIMESTAMPNS: on
# loopback that is on the server's core, as it sends) and when the probe
# read it.  A stall of the server's core (the host's) holds the control's
# queries in flight as long as geoacme's; a loop round of geoacme's own does
# not; a hiccup of the client in reading moves neither's kernel stamp.
# A pause of the whole machine (the host stopping every core) also stops
# the probe's sending, so the control, answered at once, is seldom in
# flight then; the probe at SCHED_FIFO alone on its core is only late to
# send when its core did not run, so a send more than 1 ms after its slot
# marks [slot, send] as the machine's too.
# Definition: a geoacme query's UNSHARED wait is the part of [its send, its
# answer's kernel stamp] during which no control query was in flight (sent,
# its answer not yet stamped; a control query never answered covers
# nothing) and the probe was not paused (counted only when it runs at
# SCHED_FIFO).  What the control does not share: a wait in the run queue
# behind another process on the server's core: that counts as ours (the
# safe side).
#
# Printed per scenario:
#   longest query wait   the slowest answer to geoacme, send to read (what a
#                        client sees, as dnsperf -v measured it before), ms
#   p99.9                of the same waits
#   lost                 queries to geoacme with no answer in 2 s
#   longest loop round   geoacme_loop_busy_recent_max_seconds from /metrics
#                        (scraped before and after: the longest single round)
#   control's longest wait    the reflector's slowest answer (to its stamp)
#   client's longest pause    how late the probe's latest send was, past its
#                        slot ("not counted" when it could not run at
#                        SCHED_FIFO)
#   longest unshared wait     the longest unshared wait of a geoacme query
#   the same, the control alone excusing   (the probe's pauses not counted:
#                        what they excused; the second primary of
#                        secondary-copy shares the probe's core, and its
#                        kernel work can delay the probe too)
#   target               "met" when no query waited 20 ms or more and none
#                        was lost, else "NOT met" (strict: the machine's
#                        stalls count)
#   ours                 "met" when no query's unshared wait reached 20 ms
#                        and none was lost, else "NOT met".  Every query to
#                        geoacme is judged; a wait is only excused for the
#                        time control queries waited through too.
#
# Scenarios (one geoacme primary with a signed ACME zone of $BENCH_STALL_RECORDS
# TXT records, AXFR allowed, stale_txt_age 5 s, a [geo] database; a second
# primary and a geoacme secondary for the transfer):
#   baseline        nothing at all for 60 s: the floor under every row (the
#                   machine's own hiccups)
#   pinned-update   10 UPDATEs while a slow reader (4 kB window) holds an AXFR
#   purge-transfer  the stale purge (records added by UPDATE, 5 s old) while a
#                   slow reader holds an AXFR
#   sighup-x3       three SIGHUP reloads, 3 s apart (measured for 60 s: until
#                   the last build is swapped in)
#   secondary-copy  a geoacme secondary copies a signed zone whose AXFR has
#                   $BENCH_STALL_SECONDARY_RECORDS records (a quarter as many
#                   TXT names; the copy is built whole), then takes it again
#                   by a forced AXFR while the first copy answers
#   geo-64mb        a 64 MB .mmdb copied over the served one (cp)
#   geo-1gb         the same with 1 GB (past the size cap: refused, kept); the
#                   city database is then copied back, and served, before the
#                   next row (a reload would read the refused file)
#   sqlite-lock     sqlite3 holds BEGIN EXCLUSIVE on the ACME database for 5 s
#                   while 2 UPDATEs arrive
#   big-update      one UPDATE of 2 000 TXT records at new names
#   zonefile-edit   the zone file gains an apex NS (no patch in a signed zone),
#                   then SIGHUP: the reload's build, then the edit's, beside
#                   the loop, until the edit is served (measured for 60 s)
#   compaction      a compaction of the snapshot (forced by the first UPDATE:
#                   a primary of its own, built with the test hooks in
#                   build-bench-hooks/, GEOACME_TEST_COMPACT_BYTES=1) while 10
#                   more UPDATEs arrive, until it is swapped in
#   unsigned-update 10 UPDATEs to an unsigned ACME zone of $BENCH_STALL_RECORDS
#                   names (a primary of its own: no `dnssec` for the zone)
#   key-roll        `ctl key-roll` on the signed zone (a primary of its own with
#                   a key policy), 3 UPDATEs during it, until the new key set
#                   is served (measured for $BENCH_STALL_KEYROLL_S s)
#   selftest-ours, selftest-machine, selftest-pause   (not in the default
#                   set) the attribution's self-check: geoacme alone, geoacme
#                   and the control together, or those two and the probe
#                   (the whole machine paused), SIGSTOPped 3 times for 50 ms:
#                   "ours" must be NOT met in the first, met in the others
#
#   bench/stall.sh                builds build-bench/ (Release) if needed
#
# Settings: BENCH_STALL_RECORDS=100000  BENCH_STALL_SECONDARY_RECORDS=1000000
#   BENCH_STALL_QPS=2000  BENCH_STALL_SECONDARY_S=240 (the load's length while
#   the secondary copies: long enough for the copy)  BENCH_STALL_KEYROLL_S=180  BENCH_STALL_ONLY="pinned-update sighup-x3 ..." (a subset)
#   BENCH_PORT=16300  BENCH_SERVER_CPU=0 BENCH_CLIENT_CPU=1  BENCH_KEEP=0
#   GEOACME (default: builds ./build-bench/cmd/geoacme)
#   BENCH_STALL_OUT=build-bench/stall-results.md
# Needs gcc (the probe and the reflector), sqlite3, python3-dnspython,
# perl MaxMind::DB::Writer (the fixture database) and openssl
# (scripts/deps.sh installs them).
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
. "$BENCH_DIR/lib.sh"

N=${BENCH_STALL_RECORDS:-100000}
N2=${BENCH_STALL_SECONDARY_RECORDS:-1000000}
QPS=${BENCH_STALL_QPS:-2000}
ONLY=${BENCH_STALL_ONLY:-"baseline pinned-update purge-transfer sighup-x3 secondary-copy geo-64mb geo-1gb sqlite-lock big-update zonefile-edit compaction unsigned-update key-roll"}
PORT=${BENCH_PORT:-16300}
SERVER_CPU=${BENCH_SERVER_CPU:-0}
CLIENT_CPU=${BENCH_CLIENT_CPU:-1}
BUILD=$ROOT/build-bench
OUT=${BENCH_STALL_OUT:-$BUILD/stall-results.md}
SECRET=$(openssl rand -base64 32)

for tool in gcc openssl taskset sqlite3 perl; do
	command -v "$tool" >/dev/null || die "$tool is missing (see scripts/deps.sh)"
done
/usr/bin/python3 -c "import dns.update" 2>/dev/null || die "python3-dnspython is missing"
for _ in $(seq 200); do
	port_free "$PORT" && port_free $((PORT + 1)) && port_free $((PORT + 2)) &&
		port_free $((PORT + 3)) && port_free $((PORT + 4)) && port_free $((PORT + 5)) && break
	PORT=$((PORT + 6))
done
PP=$PORT HP=$((PORT + 1)) P2=$((PORT + 2)) SP=$((PORT + 3)) SHP=$((PORT + 4)) RP=$((PORT + 5))

W=$(mktemp -d /tmp/geoacme-stall-bench.XXXXXX)
HELPERS=""
cleanup() {
	local p
	for p in $HELPERS; do kill "$p" 2>/dev/null; done
	# A self-test interrupted between its SIGSTOP and SIGCONT.
	for p in $BENCH_SPAWNED; do kill -CONT "$p" 2>/dev/null; done
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
# The control (stall_probe.c, reflector.c): built and started once, for the
# whole run; the reflector stays on the server's core beside every server.
gcc -O2 -o "$W/reflector" "$BENCH_DIR/reflector.c" &&
	gcc -O2 -o "$W/stall_probe" "$BENCH_DIR/stall_probe.c" || die "cannot build the control (gcc)"
# Real-time priority when the bench may (root): the control then runs as
# soon as its query arrives, even while geoacme's loop holds the core, so a
# round of geoacme's own is not shared with it; only what stops the whole
# core (the host) or runs above both is.
CONTROL_PRIO=()
chrt -f 1 true 2>/dev/null && CONTROL_PRIO=(chrt -f 1)
# From here on this script, and every command it runs without a CPU of its
# own (greps of the logs, the UPDATE clients, cp, sqlite3), stays off the
# server's core: a wait behind them there would count as geoacme's own.
taskset -p -c "$CLIENT_CPU" $$ >/dev/null || die "cannot pin the bench to CPU $CLIENT_CPU"
bench_spawn "$W/reflector.log" taskset -c "$SERVER_CPU" "${CONTROL_PRIO[@]}" "$W/reflector" 127.0.0.1 "$RP" 1
RPID=$SPAWNED_PID
sleep 0.2
kill -0 "$RPID" 2>/dev/null || die "the control did not start: $(cat "$W/reflector.log")"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/zsk.pem" 2>/dev/null &&
	chmod 600 "$W/zsk.pem" || die "openssl genpkey failed"
perl "$ROOT/tests/fixtures/make_mmdb.pl" --layout city --out "$W" >/dev/null ||
	die "make_mmdb.pl failed (perl MaxMind::DB::Writer)"

# A valid .mmdb of SIZE MB: the fixture with zeros between its data section
# and its metadata (readers find the metadata from the end; the data section
# just grows by bytes nothing points at).
/usr/bin/python3 - "$W/city.mmdb" "$W/geo-64.mmdb" 64 "$W/geo-1024.mmdb" 1024 <<'EOF' ||
import sys
src = open(sys.argv[1], "rb").read()
at = src.rfind(b"\xab\xcd\xefMaxMind.com")
for out, mb in zip(sys.argv[2::2], sys.argv[3::2]):
    with open(out, "wb") as f:
        f.write(src[:at])
        pad = int(mb) * 1024 * 1024 - len(src)
        chunk = b"\0" * (1 << 20)
        while pad > 0:
            f.write(chunk[:min(pad, len(chunk))])
            pad -= len(chunk)
        f.write(src[at:])
EOF
	die "cannot make the padded .mmdb files"

mkdir -p "$W/p" "$W/p2" "$W/s"
cp "$W/city.mmdb" "$W/p/geo.mmdb"
acme_zone "$N" >"$W/p/acme.zone"
cat >"$W/p/geoacme.toml" <<EOF
listen_addrs_ipv4 = ["127.0.0.1"]
listen_port = $PP
log_level = "info"

[server]
http_listen = ["127.0.0.1:$HP"]

[geo]
databases = ["$W/p/geo.mmdb"]
default_location = [48.86, 2.35]

EOF
acme_zone_toml "$W/zsk.pem" $((N + 100000)) "$SECRET" 'axfr_policy = "AllowAll"' \
	'allow_axfr = false' | sed 's/^max_records = .*/&\nstale_txt_age = "5s"/' >>"$W/p/geoacme.toml"

# The load's names (each asked TXT with DO): the zone's, 1 in 10 NXDOMAIN.
awk -v n="$N" 'BEGIN { srand(7)
	for (i = 0; i < 20000; i++) {
		if (i % 10 == 9) printf "nx%d.acme.example.net\n", i
		else printf "_acme-challenge.h%d.acme.example.net\n", int(rand() * n)
	} }' >"$W/names"

cat >"$W/update.py" <<'EOF'
import sys
import dns.query, dns.rcode, dns.tsigkeyring, dns.update
port, secret, first, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
keyring = dns.tsigkeyring.from_text({"bench-key.": secret})
for i in range(first, first + count):
    up = dns.update.UpdateMessage("acme.example.net", keyring=keyring, keyalgorithm="hmac-sha256")
    up.add("_acme-challenge.stall%d.acme.example.net." % i, 60, "TXT", '"token-%d"' % i)
    r = dns.query.tcp(up, "127.0.0.1", port=port, timeout=30)
    print("UPDATE %d: %s" % (i, dns.rcode.to_text(r.rcode())), flush=True)
EOF

# A secondary that reads the first message of an AXFR and then nothing, with
# a 4 kB receive window: it holds the snapshot until it is killed.
cat >"$W/slow_axfr.py" <<'EOF'
import socket, struct, sys, time
import dns.message
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(sys.argv[1])))
q = dns.message.make_query("acme.example.net", "AXFR").to_wire()
s.sendall(struct.pack("!H", len(q)) + q)
s.recv(4096)
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
EOF

# One UPDATE of COUNT TXT records at new names (short ones: 2 000 fit in a message).
cat >"$W/big_update.py" <<'EOF'
import sys
import dns.query, dns.rcode, dns.tsigkeyring, dns.update
port, secret, first, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
keyring = dns.tsigkeyring.from_text({"bench-key.": secret})
up = dns.update.UpdateMessage("acme.example.net", keyring=keyring, keyalgorithm="hmac-sha256")
for i in range(first, first + count):
    up.add("u%d.acme.example.net." % i, 60, "TXT", "t")
r = dns.query.tcp(up, "127.0.0.1", port=port, timeout=60)
print("UPDATE of %d records: %s" % (count, dns.rcode.to_text(r.rcode())), flush=True)
EOF

wait_log() {   # wait_log LOG PATTERN PID SECONDS
	local i
	for i in $(seq 1 $(($4 * 10))); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

helper() {   # helper LOG CMD...: a background helper, killed by PID at the end
	local log=$1
	shift
	"$@" >"$log.out" 2>&1 </dev/null &
	HELPER_PID=$!
	HELPERS="$HELPER_PID $HELPERS"
}

# probe_field FILE NAME: NAME's value on the probe's line (nothing if absent).
probe_field() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p" | head -1; }

# measure NAME SECONDS PORT HTTP_PORT ACTION: the load (stall_probe, to
# PORT and to the control) for SECONDS while ACTION runs (it starts a
# second in), then one table row.
measure() {
	local name=$1 secs=$2 port=$3 http=$4 action=$5 pf=$W/probe-$1.out stall raw=()
	[ "${BENCH_KEEP:-0}" = 1 ] && raw=("$W/probe-$name.tsv")
	geoacme_stall_ms "$http" >/dev/null
	# The probe at the control's priority too: the bench's own processes on
	# the client's core (UPDATE clients, kdig, the second primary that
	# serves secondary-copy's transfers) then never delay its reads, which
	# a client elsewhere would not see either.  The host's stalls still count.
	timeout $((secs + 30)) taskset -c "$CLIENT_CPU" "${CONTROL_PRIO[@]}" "$W/stall_probe" "$port" "$RP" "$secs" \
		"$QPS" "$W/names" "${raw[@]}" >"$pf" 2>&1 &
	local probe=$!
	PROBE_PID=$probe   # timeout's: selftest-pause stops its child, the probe
	sleep 1
	"$action" >"$W/action-$name.log" 2>&1
	wait "$probe"
	stall=$(geoacme_stall_ms "$http")
	# What the action wrote (a 1 GiB database) is on disk before the next
	# row: its writeback would stall that row's own writes (the WAL's).
	sync
	# The probe's line (g_sent=... c_max=...); a probe that failed leaves
	# its fields empty, and then nothing is "met".
	local wait p999 lost unshared at c_max c_lost pause uctl
	wait=$(probe_field "$pf" g_max) p999=$(probe_field "$pf" g_p999) lost=$(probe_field "$pf" g_lost)
	unshared=$(probe_field "$pf" g_unshared) at=$(probe_field "$pf" g_unshared_at)
	c_max=$(probe_field "$pf" c_max) c_lost=$(probe_field "$pf" c_lost)
	pause=$(probe_field "$pf" p_pause_max) uctl=$(probe_field "$pf" g_unshared_ctl)
	pause="${pause:--} ms"
	# Not at SCHED_FIFO, the probe's late sends excuse nothing (stall_probe.c).
	[ "$(probe_field "$pf" p_fifo)" = 1 ] || pause="$pause (not counted)"
	local verdict="NOT met" ours="NOT met"
	awk -v w="${wait:-99999}" -v l="${lost:-1}" 'BEGIN { exit !(w < 20 && l == 0) }' && verdict=met
	awk -v u="${unshared:-99999}" -v l="${lost:-1}" 'BEGIN { exit !(u < 20 && l == 0) }' && ours=met
	[ "${c_lost:-1}" = 0 ] || c_max="${c_max:--} (${c_lost:-?} lost)"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "${wait:--}" "${p999:--}" \
		"${lost:--}" "${stall:--}" "${c_max:--}" "${pause:--}" "${unshared:--}" "${uctl:--}" \
		"$verdict" "$ours" \
		"$(tail -1 "$W/action-$name.log" | tr '\t' ' ')" >>"$W/stall.tsv"
	say "  $name: longest query wait ${wait:--} ms (p99.9 ${p999:--}), lost ${lost:--}, longest loop round ${stall:--} ms: $verdict;" \
		"control ${c_max:--} ms, client's longest pause $pause," \
		"longest unshared ${unshared:--} ms (at ${at:--} s; ${uctl:--} ms without the pauses): ours $ours"
}

# --- the scenarios (each prints one line saying what happened) ---

# Nothing happens: the floor under every other row (the machine's own
# hiccups: another process, the hypervisor taking the core).
act_baseline() {
	sleep 58
	echo "nothing done: the load alone, as long as sighup-x3"
}

# The self-tests of the attribution (not in the default set): SIGSTOP for
# 50 ms, three times, 3 s apart, of geoacme alone (a stall only geoacme has:
# the "ours" verdict must fail) or of geoacme and the control together (a
# stall of the core, as the host's: "ours" must hold, the strict one fail).
stop_50ms() {   # stop_50ms PID...
	local k
	for k in 1 2 3; do
		kill -STOP "$@"
		sleep 0.05
		kill -CONT "$@"
		sleep 3
	done
}
act_selftest_ours() {
	stop_50ms "$PPID_"
	echo "self-test: geoacme alone stopped 3 times for 50 ms (SIGSTOP): ours must be NOT met"
}
act_selftest_machine() {
	stop_50ms "$PPID_" "$RPID"
	echo "self-test: geoacme and the control stopped together 3 times for 50 ms: ours must be met, the strict target not"
}
# The whole machine paused (the host stopping the VM) while geoacme has
# queries in hand: geoacme stopped, and a few ms later the control and the
# probe too, for 50 ms, 3 times.  The control, answered at once, is not in
# flight then; the probe's late sends say the machine was paused.  (As
# bench run G's purge-transfer row: geoacme runnable behind the control
# when CPU 0 and the probe's core stopped for 23 ms.)
act_selftest_pause() {
	local p k
	# timeout's one child (procfs lists it; procps need not be installed).
	p=$(cat "/proc/$PROBE_PID/task/$PROBE_PID/children" 2>/dev/null)
	p=${p%% *}
	[ -n "$p" ] || { echo "self-test: the probe's PID not found under $PROBE_PID"; return; }
	for k in 1 2 3; do
		kill -STOP "$PPID_"
		sleep 0.002
		kill -STOP "$RPID" "$p"
		sleep 0.05
		kill -CONT "$p" "$RPID" "$PPID_"
		sleep 3
	done
	echo "self-test: geoacme stopped, then the control and the probe, for 50 ms, 3 times: ours must be met, the strict target not"
}

act_pinned_update() {
	helper "$W/slow1" /usr/bin/python3 "$W/slow_axfr.py" "$PP" 60
	local slow=$HELPER_PID
	sleep 1
	/usr/bin/python3 "$W/update.py" "$PP" "$SECRET" 0 10
	kill "$slow" 2>/dev/null
	echo "$(grep -c 'snapshot patched' "$W/p.log") patched, $(grep -c 'snapshot rebuilt' "$W/p.log") rebuilt so far; reader: $(cat "$W/slow1.out")"
}

act_purge_transfer() {
	/usr/bin/python3 "$W/update.py" "$PP" "$SECRET" 100 20 >/dev/null
	helper "$W/slow2" /usr/bin/python3 "$W/slow_axfr.py" "$PP" 60
	local slow=$HELPER_PID before
	before=$(grep -c 'stale TXT records' "$W/p.log")
	for _ in $(seq 150); do
		[ "$(grep -c 'stale TXT records' "$W/p.log")" -gt "$before" ] && break
		sleep 0.1
	done
	kill "$slow" 2>/dev/null
	grep 'stale TXT records' "$W/p.log" | tail -1 | sed 's/^[a-z]*: //'
}

act_sighup() {
	local k
	for k in 1 2 3; do
		kill -HUP "$PPID_"
		sleep 3
	done
	# Each reload is built beside the loop (cmd/builder.h) and SIGHUPs during
	# a build coalesce into one more: wait until the last build is swapped in.
	for _ in $(seq 1200); do
		[ "$(grep -c '^info: reloading ' "$W/p.log")" -eq \
		  "$(grep -cE '^info: reloaded|^error: reload failed' "$W/p.log")" ] && break
		kill -0 "$PPID_" 2>/dev/null || break
		sleep 0.1
	done
	echo "$(grep -c '^info: reloaded' "$W/p.log") reloads done ($(grep -c 'one more build follows' "$W/p.log") for SIGHUPs during a build), built off the loop in $(grep 'reload: the new configuration was built' "$W/p.log" | sed 's/.*built in \([0-9]*\) ms.*/\1/' | paste -sd/ -) ms, swapped in on the loop in $(grep 'reload: swapped in on the loop in' "$W/p.log" | sed 's/.* in \([0-9.]*\) ms.*/\1/' | paste -sd/ -) ms, the old one freed beside it in $(grep 'previous configuration was freed in' "$W/p.log" | sed 's/.* in \([0-9]*\) ms.*/\1/' | paste -sd/ -) ms"
}

act_geo() {   # act_geo MB
	local before
	before=$(wc -l <"$W/p.log")
	cp "$W/geo-$1.mmdb" "$W/p/geo.mmdb"
	sleep 6
	tail -n +$((before + 1)) "$W/p.log" | grep -i 'geo' | tail -1 | sed 's/^[a-z]*: //'
}
act_geo_64() { act_geo 64; }
act_geo_1gb() { act_geo 1024; }

# After geo-1gb: the refused 1 GiB file replaced by the city database
# again, served before the next row (a reload reads the file: over the cap,
# it would fail).
restore_geo() {
	local before
	before=$(wc -l <"$W/p.log")
	cp "$W/city.mmdb" "$W/p/geo.mmdb" && sync
	for _ in $(seq 100); do
		tail -n +$((before + 1)) "$W/p.log" | grep -q 'geo: reloaded' && return 0
		sleep 0.1
	done
	die "the city database was not served again after geo-1gb"
}

act_sqlite_lock() {
	helper "$W/lock" sh -c "(echo 'BEGIN EXCLUSIVE;'; echo 'SELECT count(*) FROM sqlite_master;'; sleep 5; echo 'COMMIT;') | sqlite3 '$W/p/acme.sqlite'"
	sleep 0.5
	/usr/bin/python3 "$W/update.py" "$PP" "$SECRET" 200 2 | tr '\n' ' '
	wait "$HELPER_PID" 2>/dev/null
	echo
}

act_big_update() {
	local out
	out=$(/usr/bin/python3 "$W/big_update.py" "$PP" "$SECRET" 0 2000)
	echo "$out; $(grep -o 'signed ahead in .*; it' "$W/p.log" | tail -1 | sed 's/; it$//'), then $(grep -o 'snapshot patched in [0-9.]* ms (SQLite commit [0-9.]* ms)' "$W/p.log" | tail -1)"
}

# An apex NS added to the zone file, then SIGHUP: the edit is committed at
# the reload and built beside the loop; wait until it is served.
act_zonefile_edit() {
	echo "@ IN NS ns2.example.com." >>"$W/p/acme.zone"
	kill -HUP "$PPID_"
	for _ in $(seq 1200); do
		grep -q 'built with the committed change beside the loop\|with the committed change on the loop\|reload failed' "$W/p.log" && break
		kill -0 "$PPID_" 2>/dev/null || break
		sleep 0.1
	done
	echo "$(grep -o 'applied as a difference: [^;]*' "$W/p.log" | tail -1); $(grep -o 'built with the committed change beside the loop.*\|committed change on the loop.*\|reload failed.*' "$W/p.log" | tail -1)"
}

# The compaction's own primary ($W/c, the hooks build): its first UPDATE
# finds the snapshot grown, starts the compaction, and 10 more come during it.
act_compaction() {
	local i
	/usr/bin/python3 "$W/update.py" "$CP" "$SECRET" 300 1 >/dev/null
	for i in $(seq 10); do
		/usr/bin/python3 "$W/update.py" "$CP" "$SECRET" $((300 + i)) 1 >/dev/null
		sleep 0.3
	done
	for _ in $(seq 1200); do
		grep -q 'compacted beside the loop\|compaction failed\|compaction is dropped' "$W/c.log" && break
		sleep 0.1
	done
	grep -o 'compacted beside the loop.*\|compaction failed.*\|compaction is dropped.*' "$W/c.log" | head -1
}

act_unsigned_update() {
	/usr/bin/python3 "$W/update.py" "$UP" "$SECRET" 400 10 >/dev/null
	echo "$(grep -c 'snapshot patched' "$W/u.log") patched, $(grep -c 'snapshot rebuilt' "$W/u.log") rebuilt: $(grep -o 'snapshot [a-z]* in [0-9.]* ms' "$W/u.log" | sed 's/snapshot [a-z]* in //; s/ ms//' | sort -n | tail -1) ms the longest"
}

# ctl key-roll, 3 UPDATEs while the zone is signed with the new keys, then
# the wait until they are served.
act_key_roll() {
	"$GEOACME" ctl -c "$W/k/geoacme.toml" key-roll acme.example.net >/dev/null
	sleep 1
	/usr/bin/python3 "$W/update.py" "$KP" "$SECRET" 500 3 >/dev/null
	for _ in $(seq $((${BENCH_STALL_KEYROLL_S:-180} * 10 - 40))); do
		grep -q 'keys: the new key set is served' "$W/k.log" && break
		sleep 0.1
	done
	echo "$(grep -o 're-signed with the new keys beside the loop.*\|re-signing with the new keys on the loop.*' "$W/k.log" | head -1)$(grep -q 'keys: the new key set is served' "$W/k.log" || echo '; NOT served yet')"
}

# A primary of its own in $W/NAME from the first one's files, on free ports
# (sets NEW_PORT, NEW_HTTP); SED edits its configuration.
own_primary() {   # own_primary NAME SED
	mkdir -p "$W/$1"
	cp "$W/p/geoacme.toml" "$W/p/acme.zone" "$W/$1/" && cp "$W/city.mmdb" "$W/$1/geo.mmdb"
	sed -i "s|$W/p/geo.mmdb|$W/$1/geo.mmdb|; $2" "$W/$1/geoacme.toml"
	for _ in $(seq 200); do
		port_free "$PORT" && port_free $((PORT + 1)) && break
		PORT=$((PORT + 5))
	done
	NEW_PORT=$PORT NEW_HTTP=$((PORT + 1))
	PORT=$((PORT + 5))
	sed -i "s/^listen_port = .*/listen_port = $NEW_PORT/; s/127.0.0.1:$HP/127.0.0.1:$NEW_HTTP/" "$W/$1/geoacme.toml"
}

wants() { case " $ONLY " in *" $1 "*) return 0 ;; esac; return 1; }

: >"$W/stall.tsv"
if wants baseline || wants pinned-update || wants purge-transfer || wants sighup-x3 || wants geo-64mb ||
	wants geo-1gb || wants sqlite-lock || wants big-update || wants zonefile-edit || wants selftest-ours ||
	wants selftest-machine || wants selftest-pause; then
	say "== primary: signed ACME zone of $N records (port $PP): $GEOACME"
	bench_spawn "$W/p.log" taskset -c "$SERVER_CPU" sh -c "cd '$W/p' && exec '$GEOACME' serve -c '$W/p/geoacme.toml'"
	PPID_=$SPAWNED_PID
	wait_log "$W/p.log" "ready:" "$PPID_" 900 || { tail -3 "$W/p.log" >&2; die "the primary did not start"; }
	wants baseline && measure baseline 60 "$PP" "$HP" act_baseline
	wants selftest-ours && measure selftest-ours 12 "$PP" "$HP" act_selftest_ours
	wants selftest-machine && measure selftest-machine 12 "$PP" "$HP" act_selftest_machine
	wants selftest-pause && measure selftest-pause 12 "$PP" "$HP" act_selftest_pause
	wants pinned-update && measure pinned-update 14 "$PP" "$HP" act_pinned_update
	wants purge-transfer && measure purge-transfer 20 "$PP" "$HP" act_purge_transfer
	wants sighup-x3 && measure sighup-x3 60 "$PP" "$HP" act_sighup
	wants geo-64mb && measure geo-64mb 9 "$PP" "$HP" act_geo_64
	wants geo-1gb && measure geo-1gb 9 "$PP" "$HP" act_geo_1gb && restore_geo
	wants sqlite-lock && measure sqlite-lock 9 "$PP" "$HP" act_sqlite_lock
	wants big-update && measure big-update 12 "$PP" "$HP" act_big_update
	wants zonefile-edit && measure zonefile-edit 60 "$PP" "$HP" act_zonefile_edit
	bench_stop "$PPID_"
fi
if wants compaction; then
	HOOKED=${GEOACME_HOOKS:-$ROOT/build-bench-hooks/cmd/geoacme}
	if [ -z "${GEOACME_HOOKS:-}" ]; then
		say "building geoacme (Release, test hooks) in $ROOT/build-bench-hooks"
		cmake -S "$ROOT" -B "$ROOT/build-bench-hooks" -DCMAKE_BUILD_TYPE=Release \
			-DGEOACME_TEST_HOOKS=ON >"$W/cmake-hooks.log" 2>&1 &&
			taskset -c "$SERVER_CPU,$CLIENT_CPU" cmake --build "$ROOT/build-bench-hooks" -j2 \
				--target geoacme >"$W/build-hooks.log" 2>&1 ||
			die "build failed (see $W/build-hooks.log)"
	fi
	mkdir -p "$W/c"
	cp "$W/p/geoacme.toml" "$W/p/acme.zone" "$W/c/" && cp "$W/city.mmdb" "$W/c/geo.mmdb"
	sed -i "s|$W/p/geo.mmdb|$W/c/geo.mmdb|" "$W/c/geoacme.toml"
	# Ports of its own: the first primary's may not be free again yet.
	for _ in $(seq 200); do
		port_free "$PORT" && port_free $((PORT + 1)) && break
		PORT=$((PORT + 5))
	done
	CP=$PORT CHP=$((PORT + 1))
	sed -i "s/^listen_port = .*/listen_port = $CP/; s/127.0.0.1:$HP/127.0.0.1:$CHP/" "$W/c/geoacme.toml"
	say "== compaction: a primary with the test hooks, signed ACME zone of $N records (port $CP)"
	bench_spawn "$W/c.log" taskset -c "$SERVER_CPU" env GEOACME_TEST_COMPACT_BYTES=1 \
		sh -c "cd '$W/c' && exec '$HOOKED' serve -c '$W/c/geoacme.toml'"
	CPID=$SPAWNED_PID
	wait_log "$W/c.log" "ready:" "$CPID" 900 || { tail -3 "$W/c.log" >&2; die "the compaction's primary did not start"; }
	measure compaction 20 "$CP" "$CHP" act_compaction
	bench_stop "$CPID"
fi
if wants unsigned-update; then
	own_primary u '/^\[\[zones.keys\]\]/,/^key_path/d'
	UP=$NEW_PORT UHP=$NEW_HTTP
	say "== unsigned-update: a primary with an unsigned ACME zone of $N records (port $UP)"
	bench_spawn "$W/u.log" taskset -c "$SERVER_CPU" sh -c "cd '$W/u' && exec '$GEOACME' serve -c '$W/u/geoacme.toml'"
	UPID=$SPAWNED_PID
	wait_log "$W/u.log" "ready:" "$UPID" 900 || { tail -3 "$W/u.log" >&2; die "the unsigned primary did not start"; }
	measure unsigned-update 20 "$UP" "$UHP" act_unsigned_update
	bench_stop "$UPID"
fi
if wants key-roll; then
	own_primary k "s|^http_listen = .*|&\ncontrol_socket = \"$W/k/control.sock\"|"
	KP=$NEW_PORT KHP=$NEW_HTTP
	mkdir -p "$W/k/keys" && chmod 700 "$W/k/keys"
	printf '\n[zones.key_policy]\nlifetime = "0"\ndnskey_ttl = "1h"\npropagation_delay = "1h"\nkey_dir = "%s"\nparent = ["127.0.0.1:1"]\n' \
		"$W/k/keys" >>"$W/k/geoacme.toml"
	say "== key-roll: a primary with a key policy, signed ACME zone of $N records (port $KP)"
	bench_spawn "$W/k.log" taskset -c "$SERVER_CPU" sh -c "cd '$W/k' && exec '$GEOACME' serve -c '$W/k/geoacme.toml'"
	KPID=$SPAWNED_PID
	wait_log "$W/k.log" "ready:" "$KPID" 900 || { tail -3 "$W/k.log" >&2; die "the key-roll primary did not start"; }
	measure key-roll "${BENCH_STALL_KEYROLL_S:-180}" "$KP" "$KHP" act_key_roll
	bench_stop "$KPID"
fi
if wants secondary-copy; then
	# Each TXT name is 4 records in the transfer (TXT, NSEC and their RRSIGs).
	say "== a primary with a $N2-record zone (port $P2) and a geoacme secondary (port $SP)"
	acme_zone $((N2 / 4)) >"$W/p2/acme.zone"
	cat >"$W/p2/geoacme.toml" <<EOF
listen_addrs_ipv4 = ["127.0.0.1"]
listen_port = $P2
log_level = "info"

EOF
	acme_zone_toml "$W/zsk.pem" $((N2 + 1000)) "$SECRET" 'axfr_policy = "AllowAll"' \
		'allow_axfr = false' >>"$W/p2/geoacme.toml"
	cat >"$W/s/geoacme.toml" <<EOF
listen_addrs_ipv4 = ["127.0.0.1"]
listen_port = $SP
log_level = "info"

[server]
http_listen = ["127.0.0.1:$SHP"]

[[zones]]
zone = "acme.example.net"
zone_type = "Secondary"
primaries = ["127.0.0.1:$P2"]

[zones.stores]
type = "sqlite"
journal_path = "copy.sqlite"
EOF
	bench_spawn "$W/p2.log" taskset -c "$CLIENT_CPU" sh -c "cd '$W/p2' && exec '$GEOACME' serve -c '$W/p2/geoacme.toml'"
	P2ID=$SPAWNED_PID
	wait_log "$W/p2.log" "ready:" "$P2ID" 1800 || { tail -3 "$W/p2.log" >&2; die "the second primary did not start"; }
	# The load goes to the secondary, which answers REFUSED until it has the
	# copy: what is measured is how long each answer waits meanwhile.
	# The load needs the server up: start it first, then measure while it copies.
	bench_spawn "$W/s.log" taskset -c "$SERVER_CPU" sh -c "cd '$W/s' && exec '$GEOACME' serve -c '$W/s/geoacme.toml'"
	SPID=$SPAWNED_PID
	wait_log "$W/s.log" "ready:" "$SPID" 60 || die "the secondary did not start"
	# The first copy (the zone REFUSED until it is served), then the same
	# zone again by a forced AXFR while the first copy answers.
	sec_copy() {
		wait_log "$W/s.log" "AXFR from .*copy built" "$SPID" 900
		"$GEOACME" ctl -c "$W/s/geoacme.toml" zone-retransfer --force acme.example.net >/dev/null
		local i
		for i in $(seq 9000); do
			[ "$(grep -c 'AXFR from .*copy built' "$W/s.log")" -ge 2 ] && break
			kill -0 "$SPID" 2>/dev/null || break
			sleep 0.1
		done
		grep -o 'serial .*copy built.*' "$W/s.log" | sed 's/ in [0-9]* messages, [0-9]* bytes//' |
			tr '\n' ';' | sed 's/;$//'
		echo
	}
	measure secondary-copy "${BENCH_STALL_SECONDARY_S:-240}" "$SP" "$SHP" sec_copy
	bench_stop "$SPID"
	bench_stop "$P2ID"
fi

# The table's folder: build-bench/ is made only by the build above, which a
# run with GEOACME set skips.
mkdir -p "$(dirname "$OUT")" || die "cannot make the folder of $OUT"
{
	echo "## Stalls (bench/stall.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), geoacme $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null), $QPS queries/s, $N records, secondary copy $N2)"
	echo
	echo "| scenario | longest query wait | p99.9 | lost | longest loop round | control's longest wait | client's longest pause | longest unshared wait | the same, the control alone excusing | target: no query waits 20 ms | ours: no unshared wait of 20 ms | what happened |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |"
	awk -F'\t' '{ printf "| %s | %s ms | %s ms | %s | %s ms | %s ms | %s | %s ms | %s ms | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 }' "$W/stall.tsv"
} | tee "$OUT"
say "written to $OUT"
