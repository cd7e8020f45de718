# SPDX-License-Identifier: MIT
# Inputs and per-server setup for bench/run.sh (sourced, not run).
#
# Every server gets its own folder under $W, a config written here, and
# listens on 127.0.0.1 only, on its own high port, pinned to $SERVER_CPU
# with one worker.  ADDR (the reflector, geoacme and Knot only) changes
# that address: bench/xdp.sh serves on a veth in a network namespace, and
# sets ADDR6 for geoacme and Knot to listen on that IPv6 address too.
# <server>_setup writes files; <server>_start spawns and sets SERVER_PID;
# the caller waits for readiness and stops it by PID.
: "${ADDR:=127.0.0.1}"
: "${ADDR6:=}"
# WRAP, when set, is a command put in front of the server (profile.sh uses
# it to run servers under callgrind).

# The seven sites: name lat lon ipv4 ipv6.
SITES=(
	"paris      48.88    2.22   192.0.2.1 2001:db8::1"
	"nuremberg  49.45   11.08   192.0.2.2 2001:db8::2"
	"ashburn    39.04  -77.49   192.0.2.3 2001:db8::3"
	"singapore   1.35  103.82   192.0.2.4 2001:db8::4"
	"sanjose    37.34 -121.89   192.0.2.5 2001:db8::5"
	"saopaulo  -23.55  -46.63   192.0.2.6 2001:db8::6"
	"sydney    -33.87  151.21   192.0.2.7 2001:db8::7"
)

# The client every geo query claims to be (ECS 192.0.2.0/24): Amsterdam in
# the fixture (192.0.2.0/26, 52.37/4.90), whose two nearest sites are Paris
# (268 mi) and Nuremberg (336 mi): a pair under ratio 2 / margin 1000 mi.
ECS_SUBNET=192.0.2.0/24
# EDNS option 8: family 1, source prefix 24, scope 0, address 192.0.2.
ECS_HEX=00011800c00002

# What each server should answer for geo.example.com A from that client.
geo_expected() {
	case $1 in
	geoacme | knot) echo "192.0.2.1 192.0.2.2" ;;   # the pair
	pdns | gdnsd) echo "192.0.2.1" ;;               # nearest only
	*) echo "" ;;
	esac
}
geo_expected6() {   # the same for geo.example.com AAAA
	case $1 in
	geoacme | knot) echo "2001:db8::1 2001:db8::2" ;;
	*) echo "" ;;
	esac
}

WWW6=2001:db8::80   # www.example.com AAAA

write_zone() {   # the static part of example.com, shared by every server
	cat <<'EOF'
$ORIGIN example.com.
$TTL 3600
@       IN SOA  ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 300
@       IN NS   ns1.example.com.
@       IN NS   ns2.example.com.
ns1     IN A    192.0.2.53
ns1     IN AAAA 2001:db8::53
ns2     IN A    198.51.100.53
www     IN A    192.0.2.80
www     IN AAAA 2001:db8::80
mail    IN A    192.0.2.25
@       IN MX   10 mail.example.com.
@       IN TXT  "v=spf1 mx -all"
*.w     IN TXT  "wildcard"
EOF
}

# sites_toml N: N sites as [[sites]] tables.  N = 7 gives the seven above;
# larger N puts sites on a latitude/longitude grid with addresses from the
# three documentation /24s and 2001:db8::/32.
sites_toml() {
	local n=$1 s
	if [ "$n" -eq 7 ]; then
		for s in "${SITES[@]}"; do
			set -- $s
			printf '[[sites]]\nname = "%s"\nipv4 = "%s"\nipv6 = "%s"\nlatitude = %s\nlongitude = %s\n\n' \
				"$1" "$4" "$5" "$2" "$3"
		done
		return
	fi
	awk -v n="$n" 'BEGIN {
		rows = int(sqrt(n / 2)); if (rows < 1) rows = 1
		cols = int((n + rows - 1) / rows)
		split("192.0.2 198.51.100 203.0.113", nets, " ")
		k = 0
		for (r = 0; r < rows && k < n; r++)
			for (c = 0; c < cols && k < n; c++) {
				lat = -50 + (rows > 1 ? 115 * r / (rows - 1) : 0)
				lon = -179 + 358 * (c + 0.5) / cols
				printf "[[sites]]\nname = \"grid%d\"\nipv4 = \"%s.%d\"\nipv6 = \"2001:db8::%x\"\n", \
					k, nets[int(k / 250) + 1], k % 250 + 1, k + 1
				printf "latitude = %.4f\nlongitude = %.4f\n\n", lat, lon
				k++
			}
	}'
}

# ---- reflector ---------------------------------------------------------

reflector_setup() { :; }
reflector_start() {
	bench_spawn "$W/reflector.log" taskset -c "$SERVER_CPU" ${WRAP[@]+"${WRAP[@]}"} "$W/reflector" "$ADDR" "$1" 32
	SERVER_PID=$SPAWNED_PID
}
# The reflector with its socket also in an epoll set it never waits on:
# what that registration costs (BENCH_SERVERS="reflector reflector_epoll ...").
reflector_epoll_setup() { :; }
reflector_epoll_start() {
	bench_spawn "$W/reflector_epoll.log" taskset -c "$SERVER_CPU" ${WRAP[@]+"${WRAP[@]}"} \
		env REFLECTOR_EPOLL=1 "$W/reflector" "$ADDR" "$1" 32
	SERVER_PID=$SPAWNED_PID
}

# ---- geoacme -----------------------------------------------------------

# geoacme_config DIR PORT N_SITES N_ACME: writes DIR/geoacme.toml
# and its inputs (example.com zone, ACME seed); the key and mmdb are
# shared.  The ACME zone takes UPDATEs signed with TSIG key "bench-key."
# ($TSIG_SECRET).
: "${TSIG_SECRET:=$(openssl rand -base64 32)}"
geoacme_config() {
	local d=$1 port=$2 nsites=$3 nacme=$4
	mkdir -p "$d"
	write_zone >"$d/example.com.zone"
	acme_zone "$nacme" >"$d/acme.zone"
	{
		cat <<EOF
listen_addrs_ipv4 = ["$ADDR"]
${ADDR6:+listen_addrs_ipv6 = [\"$ADDR6\"]}
listen_port = $port
log_level = "info"

[geo]
databases = ["$W/city.mmdb"]

EOF
		sites_toml "$nsites"
		cat <<EOF
[[zones]]
zone = "example.com"
zone_type = "Primary"
file = "example.com.zone"

[[zones.geo]]
name = "geo"
https = { alpn = ["h3", "h2"], site_names = "sites" }

[[zones.keys]]
algorithm = "ECDSAP256SHA256"
key_path = "$W/zsk.pem"

EOF
		acme_zone_toml "$W/zsk.pem" $((nacme + 100)) "$TSIG_SECRET"
	} >"$d/geoacme.toml"
}

geoacme_setup() { geoacme_config "$W/geoacme" "$1" 7 10; }
geoacme_start() {
	bench_spawn "$W/geoacme/geoacme.log" taskset -c "$SERVER_CPU" ${WRAP[@]+"${WRAP[@]}"} \
		"$GEOACME" serve -c "$W/geoacme/geoacme.toml"
	SERVER_PID=$SPAWNED_PID
}

# ---- NSD: static zone, pre-signed with ldns-signzone (NSEC) ------------

nsd_setup() {
	local d=$W/nsd port=$1 key
	mkdir -p "$d"
	write_zone >"$d/example.com.zone"
	key=$(cd "$d" && ldns-keygen -a ECDSAP256SHA256 -k example.com) || die "ldns-keygen failed"
	(cd "$d" && ldns-signzone -o example.com example.com.zone "$key") || die "ldns-signzone failed"
	cat >"$d/nsd.conf" <<EOF
server:
	ip-address: 127.0.0.1@$port
	do-ip6: no
	server-count: 1
	username: ""
	chroot: ""
	zonesdir: "$d"
	database: ""
	pidfile: "$d/nsd.pid"
	xfrdfile: "$d/xfrd.state"
	zonelistfile: "$d/zone.list"
	logfile: "$d/nsd.log"
	verbosity: 1
	hide-version: yes
	minimal-responses: yes
	# Debian builds NSD with response rate limiting on; it would drop
	# most of a benchmark's queries from one address.
	rrl-ratelimit: 0
	rrl-whitelist-ratelimit: 0
remote-control:
	control-enable: no
zone:
	name: example.com
	zonefile: "$d/example.com.zone.signed"
EOF
	nsd-checkconf "$d/nsd.conf" || die "nsd-checkconf failed"
}
nsd_start() {
	bench_spawn "$W/nsd/out.log" taskset -c "$SERVER_CPU" ${WRAP[@]+"${WRAP[@]}"} nsd -d -c "$W/nsd/nsd.conf"
	SERVER_PID=$SPAWNED_PID
}

# ---- Knot DNS: mod-geoip views, signed ahead (dnssec-signing: on) ------

# knot_setup PORT [DIR]; knot_start PORT [DIR]: DIR is $W/knot unless given.
knot_setup() {
	local d=${2:-$W/knot} port=$1
	mkdir -p "$d"
	write_zone >"$d/example.com.zone"
	# Views keyed on country;city, giving the answers geoacme's rule gives
	# for the fixture's places (make_mmdb.pl's table).  Knot signs each view
	# when the module loads.
	cat >"$d/geo.conf" <<'EOF'
geo.example.com:
  - geo: "NL;Amsterdam"
    A: 192.0.2.1
    A: 192.0.2.2
    AAAA: 2001:db8::1
    AAAA: 2001:db8::2
  - geo: "US;Houston"
    A: 192.0.2.3
    A: 192.0.2.5
    AAAA: 2001:db8::3
    AAAA: 2001:db8::5
  - geo: "US;Chicago"
    A: 192.0.2.3
    AAAA: 2001:db8::3
  - geo: "MX;Queretaro"
    A: 192.0.2.5
    A: 192.0.2.3
    AAAA: 2001:db8::5
    AAAA: 2001:db8::3
  - geo: "AR;Buenos Aires"
    A: 192.0.2.6
    AAAA: 2001:db8::6
  - geo: "AU;Sydney"
    A: 192.0.2.7
    AAAA: 2001:db8::7
EOF
	cat >"$d/knot.conf" <<EOF
server:
  rundir: $d
  listen: [ $ADDR@$port${ADDR6:+, $ADDR6@$port} ]
  udp-workers: 1
  tcp-workers: 1
  background-workers: 1
  edns-client-subnet: on
log:
  - target: stderr
    any: notice
database:
  storage: $d
policy:
  - id: p256
    algorithm: ecdsap256sha256
    single-type-signing: on
    nsec3: off
    manual: on
mod-geoip:
  - id: geo
    config-file: $d/geo.conf
    ttl: 3600
    mode: geodb
    geodb-file: $W/city.mmdb
    geodb-key: [ country/iso_code, city/names/en ]
template:
  - id: default
    storage: $d
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
zone:
  - domain: example.com
    file: example.com.zone
    dnssec-signing: on
    dnssec-policy: p256
    module: mod-geoip/geo
EOF
	knotc -c "$d/knot.conf" conf-check >/dev/null || die "knot conf-check failed"
	# The module signs its views when it loads, before the zone's first
	# signing would make a key: the key must exist first.
	keymgr -c "$d/knot.conf" example.com generate algorithm=ecdsap256sha256 ksk=yes zsk=yes \
		>/dev/null || die "keymgr failed"
}
knot_start() {
	local d=${2:-$W/knot}
	bench_spawn "$d/out.log" taskset -c "$SERVER_CPU" ${WRAP[@]+"${WRAP[@]}"} knotd -c "$d/knot.conf"
	SERVER_PID=$SPAWNED_PID
}

# ---- PowerDNS: LUA pickclosest(), live-signing (gsqlite3 + secure-zone) -
# enable-lua-records=shared keeps one Lua state for all queries; the
# default (=yes) makes a fresh state per query and answers ~30x fewer.

pdns_setup() {
	local d=$W/pdns port=$1 s v4="" v6="" sites=()
	mkdir -p "$d"
	for s in "${SITES[@]}"; do
		set -- $s
		v4="$v4${v4:+,}'$4'"
		v6="$v6${v6:+,}'$5'"
		sites+=("$4,$2,$3" "$5,$2,$3")
	done
	perl "$BENCH_DIR/make_sites_mmdb.pl" "$d/sites.mmdb" "${sites[@]}" || die "sites.mmdb failed"
	{
		write_zone
		echo "geo 3600 IN LUA A \"pickclosest({$v4})\""
		echo "geo 3600 IN LUA AAAA \"pickclosest({$v6})\""
	} >"$d/example.com.zone"
	printf 'domains: []\n' >"$d/geo.yaml"
	cat >"$d/pdns.conf" <<EOF
launch=gsqlite3,geoip
gsqlite3-database=$d/pdns.sqlite3
gsqlite3-dnssec=yes
geoip-database-files=mmdb:$d/sites.mmdb mmdb:$W/city.mmdb
geoip-zones-file=$d/geo.yaml
local-address=127.0.0.1
local-port=$port
receiver-threads=1
distributor-threads=1
enable-lua-records=shared
edns-subnet-processing=yes
guardian=no
daemon=no
socket-dir=$d
disable-syslog=yes
loglevel=4
webserver=no
api=no
security-poll-suffix=
EOF
	sqlite3 "$d/pdns.sqlite3" </usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql ||
		die "pdns schema failed"
	pdnsutil --config-dir="$d" load-zone example.com "$d/example.com.zone" >/dev/null 2>&1 ||
		die "pdnsutil load-zone failed"
	pdnsutil --config-dir="$d" secure-zone example.com >/dev/null 2>&1 ||
		die "pdnsutil secure-zone failed"
}
pdns_start() {
	bench_spawn "$W/pdns/out.log" taskset -c "$SERVER_CPU" ${WRAP[@]+"${WRAP[@]}"} pdns_server --config-dir="$W/pdns"
	SERVER_PID=$SPAWNED_PID
}

# ---- gdnsd: plugin_geoip, city auto mode (nearest site only), no DNSSEC -
# IPv4 addresses only in the dcmap: a direct (multifo) entry takes one
# family; the benchmark asks for A.

gdnsd_setup() {
	local d=$W/gdnsd port=$1 s coords="" dcmap="" names=""
	mkdir -p "$d/zones"
	{
		write_zone
		echo 'geo 3600 DYNA geoip!geo'
	} >"$d/zones/example.com"
	for s in "${SITES[@]}"; do
		set -- $s
		names="$names $1"
		coords="$coords          $1 => [ $2, $3 ]
"
		dcmap="$dcmap          $1 => $4
"
	done
	cat >"$d/config" <<EOF
options => {
  listen => [ 127.0.0.1:$port ]
  udp_threads => 1
  tcp_threads => 1
  run_dir => $d/run
  state_dir => $d/state
}
plugins => {
  geoip => {
    maps => {
      sites => {
        geoip2_db => $W/city.mmdb
        datacenters => [$names ]
        auto_dc_coords => {
$coords        }
      }
    }
    resources => {
      geo => {
        map => sites
        dcmap => {
$dcmap        }
      }
    }
  }
}
EOF
	gdnsd -c "$d" checkconf >"$d/checkconf.log" 2>&1 || { cat "$d/checkconf.log" >&2; die "gdnsd checkconf failed"; }
}
gdnsd_start() {
	bench_spawn "$W/gdnsd/out.log" taskset -c "$SERVER_CPU" ${WRAP[@]+"${WRAP[@]}"} gdnsd -c "$W/gdnsd" start
	SERVER_PID=$SPAWNED_PID
}
