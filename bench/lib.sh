# SPDX-License-Identifier: MIT
# Shared helpers for bench/run.sh and bench/profile.sh (sourced, not run).
#
# Process handling: every process the benchmark starts goes through
# bench_spawn, which remembers its PID; bench_stop sends SIGTERM to that PID,
# waits, and then SIGKILLs the exact PIDs of its process tree that are still
# there.  Nothing is ever killed by name.
#
# CPU accounting: utime+stime from /proc/PID/stat, summed over the server's
# process tree (NSD forks a main and a server process under the one we
# start), in clock ticks; the per-query cost is ticks / CLK_TCK / answered.

BENCH_SPAWNED=""
CLK_TCK=$(getconf CLK_TCK)

say() { printf '%s\n' "$*" >&2; }
die() { say "bench: $*"; exit 1; }

# The PID given and all its descendants, one per line.
tree_pids() {
	ps -e -o pid=,ppid= | awk -v root="$1" '
		{ parent[$1] = $2 }
		END {
			if (!(root in parent)) exit
			inset[root] = 1; grew = 1
			while (grew) {
				grew = 0
				for (p in parent)
					if (!(p in inset) && (parent[p] in inset)) { inset[p] = 1; grew = 1 }
			}
			for (p in inset) print p
		}'
}

# utime+stime in ticks over a process tree.  The comm field may contain
# spaces ("nsd: main"), so fields are counted after the closing paren.
tree_ticks() {
	local total=0 p stat rest
	local -a f
	for p in $(tree_pids "$1"); do
		stat=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		rest=${stat##*) }
		read -r -a f <<<"$rest"
		total=$((total + f[11] + f[12]))
	done
	echo "$total"
}

# Largest VmHWM (peak RSS, kB) in a process tree.
tree_hwm_kb() {
	local best=0 p v
	for p in $(tree_pids "$1"); do
		v=$(awk '/^VmHWM:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
		[ -n "$v" ] && [ "$v" -gt "$best" ] && best=$v
	done
	echo "$best"
}

# Resident kB of the mappings of files matching a pattern (the .mmdb) in
# the tree's processes: the part of the RSS that is the mapped database.
tree_mapped_kb() {
	local pat=$1 p best=0 v
	for p in $(tree_pids "$2"); do
		v=$(awk -v pat="$pat" '
			/^[0-9a-f]+-[0-9a-f]+ / { inmap = ($NF ~ pat) }
			inmap && /^Rss:/ { sum += $2 }
			END { print sum + 0 }' "/proc/$p/smaps" 2>/dev/null)
		[ -n "$v" ] && [ "$v" -gt "$best" ] && best=$v
	done
	echo "$best"
}

# bench_spawn LOG CMD...: starts CMD in the background, output to LOG; sets
# SPAWNED_PID.  CMD is usually "taskset -c N prog ...", which execs prog
# under the same PID.
bench_spawn() {
	local log=$1
	shift
	"$@" >"$log" 2>&1 </dev/null &
	SPAWNED_PID=$!
	BENCH_SPAWNED="$SPAWNED_PID $BENCH_SPAWNED"
}

# bench_stop PID: SIGTERM, up to 8 s for the tree to go, then SIGKILL the
# PIDs of the tree that remain (collected before the first signal).
bench_stop() {
	local pid=$1 tree p i alive
	[ -n "$pid" ] || return 0
	tree=$(tree_pids "$pid")
	[ -n "$tree" ] || { wait "$pid" 2>/dev/null; return 0; }
	kill -TERM "$pid" 2>/dev/null
	for i in $(seq 80); do
		alive=""
		for p in $tree; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
		[ -z "$alive" ] && break
		sleep 0.1
	done
	for p in $alive; do kill -KILL "$p" 2>/dev/null; done
	wait "$pid" 2>/dev/null
	BENCH_SPAWNED=$(echo " $BENCH_SPAWNED " | sed "s/ $pid / /")
	return 0
}

bench_cleanup() {
	local p
	for p in $BENCH_SPAWNED; do bench_stop "$p"; done
}

# port_free PORT: nothing listens on it (UDP or TCP).
port_free() {
	! ss -Hlnu "sport = :$1" 2>/dev/null | grep -q . &&
		! ss -Hlnt "sport = :$1" 2>/dev/null | grep -q .
}

# wait_ready PORT PID TIMEOUT_S [NAME]: until NAME/SOA answers NOERROR,
# the process dies, or the time is up.  Returns 0 when ready.
wait_ready() {
	local port=$1 pid=$2 limit=$3 name=${4:-example.com} t0
	t0=$(date +%s)
	while :; do
		kill -0 "$pid" 2>/dev/null || return 1
		if kdig @127.0.0.1 -p "$port" +norec +time=1 +retry=0 "$name" SOA 2>/dev/null |
			grep -q 'status: NOERROR'; then
			return 0
		fi
		[ $(($(date +%s) - t0)) -ge "$limit" ] && return 1
		sleep 0.2
	done
}

# dnsperf on the client core.  run_dnsperf PORT SECONDS QPS_LIMIT(0=none) ARGS...
# Prints dnsperf's output.  Bounded by -l and, in case it hangs, timeout(1).
run_dnsperf() {
	local port=$1 secs=$2 limit=$3
	shift 3
	local qopt=()
	[ "$limit" -gt 0 ] && qopt=(-Q "$limit")
	timeout $((secs + 15)) taskset -c "$CLIENT_CPU" \
		dnsperf -s 127.0.0.1 -p "$port" -l "$secs" -c 1 -T 1 -t 2 "${qopt[@]}" "$@" 2>&1
}

perf_field() {   # perf_field OUTPUT completed|qps|sent
	case $2 in
	completed) awk '/Queries completed:/ { print $3; exit }' <<<"$1" ;;
	sent) awk '/Queries sent:/ { print $3; exit }' <<<"$1" ;;
	qps) awk '/Queries per second:/ { printf "%d\n", $4; exit }' <<<"$1" ;;
	rcodes) sed -n 's/^ *Response codes: *//p' <<<"$1" | head -1 ;;
	esac
}

median3() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# us_per_query TICKS ANSWERED
us_per_query() {
	awk -v t="$1" -v n="$2" -v hz="$CLK_TCK" 'BEGIN { if (n > 0) printf "%.2f\n", t * 1e6 / hz / n; else print "-" }'
}

# The value of sample NAME (one without labels) on geoacme's /metrics at
# 127.0.0.1:HTTP_PORT; nothing when it is not there.  The timeout is long
# because a loop round (a whole build) can hold the answer.
geoacme_metric() {   # geoacme_metric HTTP_PORT NAME
	/usr/bin/python3 -c 'import sys, urllib.request
sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=30).read().decode())' \
		"http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'
}

# The longest round of geoacme's event loop since the previous scrape of
# its /metrics (each scrape starts a new period), in ms.
geoacme_stall_ms() {   # geoacme_stall_ms HTTP_PORT
	geoacme_metric "$1" geoacme_loop_busy_recent_max_seconds | awk '{ printf "%.1f", $1 * 1000 }'
}

# acme_zone N: the ACME zone's seed with N TXT records (one name each).
acme_zone() {
	awk -v n="$1" 'BEGIN {
		print "$ORIGIN acme.example.net."
		print "$TTL 60"
		print "@ IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 60"
		print "@ IN NS ns1.example.com."
		for (i = 0; i < n; i++)
			printf "_acme-challenge.h%d IN TXT \"%043d\"\n", i, i
	}'
}

# acme_zone_toml KEY_PATH MAX_RECORDS SECRET [ZONE_KEYS] [TSIG_KEY_KEYS]: the
# signed ACME zone's [[zones]] table (acme.example.net, SQLite seeded from
# acme.zone, TSIG key "bench-key."); ZONE_KEYS and TSIG_KEY_KEYS are more
# lines for the zone's table and for its key's.
acme_zone_toml() {
	cat <<EOF
[[zones]]
zone = "acme.example.net"
zone_type = "Primary"
allow_update = true
${4:-}
[[zones.keys]]
algorithm = "ECDSAP256SHA256"
key_path = "$1"

[zones.stores]
type = "sqlite"
journal_path = "acme.sqlite"
zone_path = "acme.zone"
max_records = $2

[[zones.stores.tsig_keys]]
name = "bench-key."
algorithm = "hmac-sha256"
secret = "$3"
${5:-}
EOF
}
