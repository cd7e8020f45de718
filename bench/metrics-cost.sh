#!/bin/bash
# SPDX-License-Identifier: MIT
# What counting queries for /metrics costs on the query path: the same
# profile (bench/profile.sh, callgrind: user-space instructions per query,
# exact and unaffected by other load) with counters compiled in
# (GEOACME_METRICS=ON, the default) and compiled out, in one run.
#
#   bench/metrics-cost.sh        (root; PROFILE_QUERIES=20000 by default)
#   METRICS_CLASSES="geo_ecs_do static"   the query classes compared
set -uo pipefail
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
CLASSES=${METRICS_CLASSES:-"geo_ecs_do static"}

per_query() {   # per_query ON|OFF CLASS -> instructions per query
	PROFILE_TOOL=callgrind PROFILE_CLASS=$2 PROFILE_BUILD="$ROOT/build-metrics-$1" \
		PROFILE_CMAKE_ARGS="-DGEOACME_METRICS=$1" "$BENCH_DIR/profile.sh" 2>/dev/null |
		awk '/^### callgrind/ { for (i = 1; i <= NF; i++) if ($i == "per") print $(i - 1) }'
}

echo "### user-space instructions per query, counters on vs off (callgrind)"
echo "| class | counters on | counters off | cost of counting |"
echo "|---|---|---|---|"
for class in $CLASSES; do
	on=$(per_query ON "$class")
	off=$(per_query OFF "$class")
	awk -v c="$class" -v on="$on" -v off="$off" 'BEGIN {
		if (on == "" || off == "") { printf "| %s | %s | %s | ? |\n", c, on, off; exit 1 }
		printf "| %s | %d | %d | %+d (%+.1f%%) |\n", c, on, off, on - off, 100 * (on - off) / off }'
done
