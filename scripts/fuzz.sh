#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and fuzzes
# each for SECONDS (default 60), one target at a time, one process each.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      e.g. scripts/fuzz.sh 300 fuzz_update
#
# FUZZ_FLAGS adds libFuzzer flags, e.g. FUZZ_FLAGS="-fork=1 -ignore_crashes=1"
# to keep fuzzing past a known crash that is not fixed yet (one child at a time).
#
# The seed corpus (tests/fuzz/corpus/<target>/) and the regression inputs
# (tests/fuzz/regressions/<target>/) are read, never written; what the
# fuzzer finds interesting grows build-fuzz/corpus/<target>/, kept between
# runs.  A finding is written to build-fuzz/artifacts/<target>/ (crash-*,
# leak-*, timeout-*, oom-*): copy it to tests/fuzz/regressions/<target>/
# once understood, and the replay tests run it on every CI build.
# Exits 1 when a run found anything.
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-fuzz_query fuzz_update fuzz_toml fuzz_zonefile fuzz_update_answer}

CC=clang cmake -S . -B build-fuzz -DGEOACME_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# shellcheck disable=SC2086
cmake --build build-fuzz -j2 --target $targets >build-fuzz/build.log 2>&1 || {
	tail -40 build-fuzz/build.log
	exit 2
}

found=0
export FIXTURES="$PWD/tests/fixtures"
for t in $targets; do
	work=build-fuzz/corpus/$t
	art=build-fuzz/artifacts/$t
	log=build-fuzz/logs/$t.log
	mkdir -p "$work" "$art" build-fuzz/logs tests/fuzz/regressions/"$t"
	before=$(ls "$art" | wc -l)
	dict=""
	[ -f tests/fuzz/"$t".dict ] && dict="-dict=tests/fuzz/$t.dict"
	echo "== $t: ${secs}s"
	# -timeout: one input taking 10 s is a hang worth a report.
	# shellcheck disable=SC2086
	build-fuzz/tests/fuzz/"$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-max_len=8192 -print_final_stats=1 -artifact_prefix="$art/" $dict ${FUZZ_FLAGS:-} \
		"$work" tests/fuzz/corpus/"$t" tests/fuzz/regressions/"$t" >"$log" 2>&1 || true
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	last=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+(/[0-9a-zA-Z]+)?' || true)
	if [ -z "$runs" ]; then   # fork mode: the last status line has the totals
		runs=$(grep -E '^#[0-9]+' "$log" | tail -1 | sed 's/^#\([0-9]*\).*/\1/')
		rate=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'exec/s: [0-9]+' | cut -d' ' -f2)
	fi
	new=$(($(ls "$art" | wc -l) - before))
	echo "   runs ${runs:-?}, ${rate:-?} exec/s, ${last:-no coverage line}, findings $new (log: $log)"
	if [ "$new" -gt 0 ]; then
		found=1
		ls -t "$art" | head -n "$new" | sed "s|^|   $art/|"
		grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|fuzz: bad' "$log" | sed 's/^/   /' || true
	fi
done
exit $found
