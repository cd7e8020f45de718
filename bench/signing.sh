#!/bin/bash
# SPDX-License-Identifier: MIT
# Cold signing throughput: geoacme signing a whole zone from scratch (no
# cached signatures) next to what `openssl speed` reports for one core.
#
#   bench/signing.sh [NAMES]      (default 20000 names: 40000 RRsets with NSEC)
#
# geoacme's number comes from `geoacme check`, which loads and signs every
# zone of a config exactly as `serve` does at start; the zone has 2 NAMES + 6
# RRsets to sign (a TXT and an NSEC per name; apex SOA, NS, DNSKEY, NSEC;
# ns1's A and NSEC); the time is the whole command's.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NAMES=${1:-20000}
BIN=${GEOACME_BIN:-$ROOT/build/cmd/geoacme}
[ -x "$BIN" ] || { cmake -S "$ROOT" -B "$ROOT/build" >/dev/null && cmake --build "$ROOT/build" -j2 --target geoacme >/dev/null; }
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
{
	printf '$ORIGIN sign.example.\n$TTL 300\n@ IN SOA ns1 h 1 7200 3600 1209600 60\n@ IN NS ns1\nns1 IN A 192.0.2.1\n'
	for ((i = 0; i < NAMES; i++)); do printf 'n%d IN TXT "t%d"\n' "$i" "$i"; done
} > "$DIR/zone"
(umask 077; openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$DIR/key.pem" 2>/dev/null)
cat > "$DIR/config.toml" <<CONF
listen_addrs_ipv4 = ["127.0.0.1"]
listen_port = 0
[[zones]]
zone = "sign.example"
zone_type = "Primary"
file = "zone"
[[zones.keys]]
algorithm = "ECDSAP256SHA256"
key_path = "key.pem"
CONF
# The same zone unsigned: what parsing and building cost without signing.
grep -v -e '^\[\[zones.keys\]\]' -e '^algorithm' -e '^key_path' "$DIR/config.toml" > "$DIR/unsigned.toml"
start=$(date +%s.%N)
taskset -c 0 "$BIN" check -c "$DIR/unsigned.toml" >/dev/null
base=$(echo "$(date +%s.%N) - $start" | bc -l)
start=$(date +%s.%N)
taskset -c 0 "$BIN" check -c "$DIR/config.toml" >/dev/null
end=$(date +%s.%N)
made=$((2 * NAMES + 6))
secs=$(echo "$end - $start" | bc -l)
ours=$(echo "$made / $secs" | bc -l)
ossl=$(taskset -c 0 openssl speed -elapsed -seconds 5 ecdsap256 2>/dev/null | awk '/256 bits ecdsa/ {print $(NF-1)}')
printf '| measure | signatures/s |\n| --- | ---: |\n'
printf '| openssl speed -elapsed ecdsap256, one core (sign) | %.0f |\n' "$ossl"
printf '| geoacme, whole zone from scratch (%d signatures in %.2f s, parsing and building included) | %.0f |\n' "$made" "$secs" "$ours"
signing=$(echo "$made / ($secs - $base)" | bc -l)
printf '| geoacme, signing alone (the same minus the unsigned load, %.2f s) | %.0f |\n' "$base" "$signing"
printf '| ratio, signing alone / openssl | %.2f |\n' "$(echo "$signing / $ossl" | bc -l)"
