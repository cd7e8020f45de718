#!/usr/bin/perl
# SPDX-License-Identifier: MIT
# Writes a tiny City-layout .mmdb that places each site's own address at the
# site's coordinates, for PowerDNS's pickclosest(): it ranks the candidate
# addresses by looking *them* up in the GeoIP database, so the sites must be
# in it.  Listed before the client fixture in geoip-database-files; client
# addresses miss here and fall through to the fixture.
#
# Usage: make_sites_mmdb.pl OUT.mmdb ADDRESS,LAT,LON ...
#
# PowerDNS's MMDB reader (4.7) also wants location.accuracy_radius, or the
# lookup counts as a miss and pickclosest() picks at random.
use strict;
use warnings;
use MaxMind::DB::Writer::Tree;

my ($out, @sites) = @ARGV;
die "usage: $0 OUT.mmdb ADDRESS,LAT,LON ...\n" unless defined $out && @sites;

my %types = (
	location => 'map', latitude => 'double', longitude => 'double',
	accuracy_radius => 'uint16', country => 'map', iso_code => 'utf8_string',
);
my $tree = MaxMind::DB::Writer::Tree->new(
	ip_version               => 6,
	record_size              => 24,
	database_type            => 'GeoAcme-Bench-Sites',
	languages                => ['en'],
	description              => { en => 'geoacme benchmark: site addresses' },
	map_key_type_callback    => sub { $types{ $_[0] } },
	remove_reserved_networks => 0,
	alias_ipv6_to_ipv4       => 1,
);
for my $s (@sites) {
	my ($addr, $lat, $lon) = split /,/, $s;
	die "$0: bad site '$s'\n" unless defined $lon;
	my $len = $addr =~ /:/ ? 128 : 32;
	$tree->insert_network("$addr/$len", {
		location => { latitude => $lat + 0, longitude => $lon + 0, accuracy_radius => 1 },
		country  => { iso_code => 'ZZ' },
	});
}
open my $fh, '>:raw', $out or die "$0: $out: $!\n";
$tree->write_tree($fh);
close $fh or die "$0: $out: $!\n";
