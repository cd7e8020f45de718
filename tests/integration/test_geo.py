# SPDX-License-Identifier: MIT
"""The geo zone against the real binary: the rule, ECS, the fallbacks, health checks, explain.

Expectations come from an independent calculation in this file (haversine,
R = 3958.8 mi, over the sites of SITES_TOML) and from the literal table in
tests/fixtures/make_mmdb.pl; a test checks that the two agree before any
answer is compared with them.

Clients are located through EDNS Client Subnet: every query is sent from a
loopback address, which no database places, so without ECS the server uses
the configured default_location (see test_loopback_sources_have_no_location).
"""
import ipaddress
import json
import math
import os
import re
import signal
import struct
import subprocess
import time
import unittest

import dns.edns
import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype

from harness import (BASE_CONFIG, BIN, FIXTURES, SITES_TOML, Listener, Server, checked_site, ecs_option,
                     example_zone, geo_toml, main, make_key, make_mmdb, rr_types, rrs, zone_toml)

R_MILES = 3958.8


def haversine(lat1, lon1, lat2, lon2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * R_MILES * math.asin(math.sqrt(h))


def parse_sites(toml):
    """The [[sites]] entries of a TOML snippet, as dicts in config order."""
    sites = []
    for block in toml.split("[[sites]]")[1:]:
        site = {}
        for line in block.split("[sites.health]")[0].splitlines():
            m = re.match(r"\s*(\w+)\s*=\s*(\S+)", line)
            if not m:
                continue
            key, value = m.groups()
            if value.startswith('"'):
                site[key] = json.loads(value)
            elif value in ("true", "false"):
                site[key] = value == "true"
            else:
                site[key] = float(value)
        for fam in ("ipv4", "ipv6"):
            if fam in site:
                site[fam] = str(ipaddress.ip_address(site[fam]))
        sites.append(site)
    return sites


SITES = parse_sites(SITES_TOML)


def decide(lat, lon, rdtype, sites=SITES, names=None, ratio=2.0, margin=1000.0, ttl_single=120,
           ttl_pair=3600, alive=None):
    """The rule of core/geo/geo_rule.h, written again: (ttl, [addresses nearest first]) or None."""
    fam = "ipv4" if rdtype == "A" else "ipv6"
    cands = [s for s in sites if (names is None or s["name"] in names)
             and s.get("enabled", True) and fam in s]
    if not cands:
        return None
    live = [s for s in cands if alive is None or s["name"] in alive] or cands
    ranked = sorted(((haversine(lat, lon, s["latitude"], s["longitude"]), i, s)
                     for i, s in enumerate(live)), key=lambda t: (t[0], t[1]))
    if len(ranked) == 1:
        return ttl_single, [ranked[0][2][fam]]
    (d1, _, s1), (d2, _, s2) = ranked[:2]
    if d2 > ratio * d1 and d2 - d1 > margin:
        return ttl_single, [s1[fam]]
    return ttl_pair, [s1[fam], s2[fam]]


# The fixture networks (tests/fixtures/make_mmdb.pl): label -> IPv4 network,
# IPv6 network, latitude, longitude.
PLACES = {
    "amsterdam": ("192.0.2.0/26", "2001:db8:1::/48", 52.37, 4.90),
    "houston": ("192.0.2.64/26", "2001:db8:2::/48", 29.76, -95.37),
    "chicago": ("192.0.2.128/26", "2001:db8:3::/48", 41.88, -87.63),
    "queretaro": ("192.0.2.192/26", "2001:db8:4::/48", 20.59, -100.39),
    "buenos_aires": ("198.51.100.0/25", "2001:db8:5::/48", -34.60, -58.38),
    "nocoords": ("198.51.100.128/25", "2001:db8:ff::/48", None, None),
    "margin_single": ("203.0.113.0/28", "2001:db8:10::/56", 43.4092, -90.0),
    "margin_pair": ("203.0.113.16/28", "2001:db8:10:100::/56", 43.6945, -90.0),
    "ratio_single": ("203.0.113.32/28", "2001:db8:10:200::/56", 22.4035, -158.0),
    "ratio_pair": ("203.0.113.48/28", "2001:db8:10:300::/56", 21.7816, -158.0),
    "at_sydney": ("203.0.113.64/28", "2001:db8:10:400::/56", -33.87, 151.21),
    "tokyo": ("203.0.113.80/28", "2001:db8:20::/48", 35.68, 139.69),
    "nairobi": ("203.0.113.96/28", "2001:db8:21::/48", -1.29, 36.82),
    "mcmurdo": ("203.0.113.112/28", "2001:db8:22::/48", -77.85, 166.67),
}

# Distances (nearest, runner-up among IPv4 sites) as the fixture header states them.
HEADER_MILES = {
    "amsterdam": (268, 336), "houston": (1201, 1608), "chicago": (568, 1838),
    "queretaro": (1732, 1863), "buenos_aires": (1041, 5233),
    "margin_single": (715.81, 1718.81), "margin_pair": (723.00, 1720.00),
    "ratio_single": (2377.63, 4767.14), "ratio_pair": (2401.88, 4791.75),
}

PARIS4, NUREMBERG4, ASHBURN4 = "45.90.160.60", "116.203.18.48", "5.161.44.145"
SINGAPORE4, SANJOSE4, SAOPAULO4, SYDNEY4 = ("192.0.2.65", "149.28.219.155", "192.0.2.66",
                                            "139.180.162.114")
PARIS6, NUREMBERG6, SINGAPORE6 = "2a0c:8881:5:100::1", "2a01:4f8:1c0c:5eb5::1", "2001:db8:65::1"
SAOPAULO6, SYDNEY6 = "2001:db8:66::1", "2001:19f0:5800:1855:5400:6ff:fef0:4c0a"

# The operator's published observations and the threshold cases, as literals.
# AAAA: Ashburn and San Jose have no IPv6, so they are not candidates there.
EXPECTED = {
    "A": {
        "amsterdam": (3600, [PARIS4, NUREMBERG4]),
        "houston": (3600, [ASHBURN4, SANJOSE4]),
        "chicago": (120, [ASHBURN4]),
        "queretaro": (3600, [SANJOSE4, ASHBURN4]),
        "buenos_aires": (120, [SAOPAULO4]),
        "margin_single": (120, [ASHBURN4]),
        "margin_pair": (3600, [ASHBURN4, SANJOSE4]),
        "ratio_single": (120, [SANJOSE4]),
        "ratio_pair": (3600, [SANJOSE4, ASHBURN4]),
        "at_sydney": (120, [SYDNEY4]),
    },
    "AAAA": {
        "amsterdam": (3600, [PARIS6, NUREMBERG6]),
        "houston": (3600, [SAOPAULO6, PARIS6]),
        "chicago": (3600, [PARIS6, NUREMBERG6]),
        "queretaro": (3600, [SAOPAULO6, PARIS6]),
        "buenos_aires": (120, [SAOPAULO6]),
        "margin_single": (3600, [PARIS6, NUREMBERG6]),
        "margin_pair": (3600, [PARIS6, NUREMBERG6]),
        "ratio_single": (3600, [SYDNEY6, SINGAPORE6]),
        "ratio_pair": (3600, [SYDNEY6, SINGAPORE6]),
        "at_sydney": (120, [SYDNEY6]),
    },
}

# Near Singapore: an answer no fixture network gets, so a fallback is visible.
DEFAULT_LOCATION = (1.29, 103.85)
DEFAULT_ANSWER = {"A": (120, [SINGAPORE4]), "AAAA": (120, [SINGAPORE6])}

ZONE = example_zone("""static  600 IN A 198.51.100.80
www     IN TXT  "static data beside a geo name"
blog    IN CNAME www.example.com.
""")

GEO_NAMES = """
[[zones]]
zone = "example.com"
zone_type = "Primary"
file = "example.com.zone"
[[zones.geo]]
name = "www"
[[zones.geo]]
name = "api"
sites = ["paris", "ashburn", "sanjose"]
ratio = 1.2
margin_miles = 100
ttl_single = 60
ttl_pair = 300
[[zones.geo]]
name = "us.example.com."
sites = ["ashburn", "sanjose"]
"""

API_RULE = dict(names=["paris", "ashburn", "sanjose"], ratio=1.2, margin=100.0, ttl_single=60,
                ttl_pair=300)


def geo_config(databases, default=DEFAULT_LOCATION, signed=False, lookup_path=None):
    out = SITES_TOML + "\n[geo]\ndatabases = %s\n" % json.dumps(databases)
    if default is not None:
        out += "default_location = [%s, %s]\n" % default
    if lookup_path is not None:
        out += "lookup_path = %s\n" % json.dumps(lookup_path)
    out += GEO_NAMES
    if signed:
        out += '[[zones.keys]]\nalgorithm = "ECDSAP256SHA256"\nkey_path = "example.com.pem"\n'
    return out


def health_listeners():
    """Listeners for hp (127.0.0.10) and hn (127.0.0.11), and HEALTH_SITES
    with their ports."""
    hp = Listener("127.0.0.10").open()
    hn = Listener("127.0.0.11").open()
    return hp, hn, HEALTH_SITES.format(p1=hp.port, p2=hn.port)


def start_geo_server():
    """A started server with geo_config's zone and the city fixture database."""
    server = Server(BASE_CONFIG + geo_config(["city.mmdb"]), {"example.com.zone": ZONE})
    make_mmdb(server.dir, "city")
    return server.start()


def stop_and_cleanup(server):
    """Stops by PID; a clean shutdown exits 0 (under ASan a leak makes it non-zero)."""
    rc = server.stop()
    log = server.log()
    server.cleanup()
    if rc != 0:
        raise AssertionError("geoacme exited with %s on SIGTERM:\n%s" % (rc, log[-4000:]))


def host(net):
    """The first address of a network, as text."""
    return str(ipaddress.ip_network(net).network_address)


def prefix(net):
    return ipaddress.ip_network(net).prefixlen


class GeoTestCase(unittest.TestCase):
    """Helpers shared by the classes below (each sets cls.server)."""

    def geo(self, name, rdtype, ecs=None, **kw):
        """Queries and checks the envelope; returns (ttl, [addresses in order]), ECS option."""
        r = self.server.query(name, rdtype, ecs=ecs, **kw)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        self.assertEqual(set(dns.flags.to_text(r.flags).split()), {"QR", "AA"})
        lines = rrs(r, "answer")
        self.assertTrue(lines, "empty answer for %s %s ecs=%s" % (name, rdtype, ecs))
        ttls = {int(l.split()[1]) for l in lines}
        self.assertEqual(len(ttls), 1, lines)
        owner = name.lower().rstrip(".") + "."
        for l in lines:
            self.assertEqual(l.split()[0], owner)
            self.assertEqual(l.split()[3], rdtype)
        return (ttls.pop(), [l.split()[4] for l in lines]), ecs_option(r)

    def assertEcs(self, opt, family, address, srclen, scopelen):
        self.assertIsNotNone(opt, "no ECS option in the reply")
        self.assertEqual((opt.family, opt.address, opt.srclen, opt.scopelen),
                         (family, address, srclen, scopelen))


class Rule(GeoTestCase):
    """City layout (MaxMind GeoIP2 shape), signed zone, three geo names."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(BASE_CONFIG + geo_config(["city.mmdb"], signed=True),
                            {"example.com.zone": ZONE})
        make_key(cls.server.path("example.com.pem"))
        make_mmdb(cls.server.dir, "city")
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        stop_and_cleanup(cls.server)

    # --- the expectations themselves ---

    def test_independent_calculation_agrees_with_fixture_header(self):
        for label, (near, second) in HEADER_MILES.items():
            _, _, lat, lon = PLACES[label]
            miles = sorted(haversine(lat, lon, s["latitude"], s["longitude"]) for s in SITES)
            places = 0 if isinstance(near, int) else 2
            with self.subTest(place=label):
                self.assertEqual((round(miles[0], places), round(miles[1], places)), (near, second))
        for rdtype, table in EXPECTED.items():
            for label, want in table.items():
                _, _, lat, lon = PLACES[label]
                with self.subTest(place=label, type=rdtype):
                    self.assertEqual(decide(lat, lon, rdtype), want)
        self.assertEqual(decide(*DEFAULT_LOCATION, "A"), DEFAULT_ANSWER["A"])
        self.assertEqual(decide(*DEFAULT_LOCATION, "AAAA"), DEFAULT_ANSWER["AAAA"])

    def test_places_match_the_fixture_generator(self):
        out = subprocess.run(["perl", os.path.join(FIXTURES, "make_mmdb.pl"), "--list"],
                             capture_output=True, text=True, check=True).stdout
        listed = {}
        for line in out.splitlines():
            net, label, lat, lon = line.split("\t")
            listed.setdefault(label, []).append((net, lat, lon))
        self.assertEqual(set(listed), set(PLACES))
        for label, (v4, v6, lat, lon) in PLACES.items():
            fmt = "-" if lat is None else None
            self.assertEqual([n for n, _, _ in listed[label]], [v4, v6])
            for _, la, lo in listed[label]:
                if fmt:
                    self.assertEqual((la, lo), ("-", "-"))
                else:
                    self.assertEqual((float(la), float(lo)), (lat, lon))

    # --- 1. the published observations, 2. thresholds ---

    def test_a_with_ipv4_ecs_and_aaaa_with_ipv6_ecs(self):
        for rdtype, family in (("A", 1), ("AAAA", 2)):
            for label, want in EXPECTED[rdtype].items():
                net = PLACES[label][family - 1]
                with self.subTest(place=label, type=rdtype):
                    got, opt = self.geo("www.example.com", rdtype, ecs=(host(net), prefix(net)))
                    self.assertEqual(got, want)
                    self.assertEcs(opt, family, host(net), prefix(net), prefix(net))

    def test_ecs_family_is_independent_of_qtype(self):
        for label in ("amsterdam", "houston", "buenos_aires"):
            v4, v6 = PLACES[label][:2]
            with self.subTest(place=label):
                got, _ = self.geo("www.example.com", "AAAA", ecs=(host(v4), prefix(v4)))
                self.assertEqual(got, EXPECTED["AAAA"][label])
                got, _ = self.geo("www.example.com", "A", ecs=(host(v6), prefix(v6)))
                self.assertEqual(got, EXPECTED["A"][label])

    def test_over_tcp_same_answer(self):
        got, opt = self.geo("www.example.com", "A", ecs=("192.0.2.64", 26), tcp=True)
        self.assertEqual(got, EXPECTED["A"]["houston"])
        self.assertEcs(opt, 1, "192.0.2.64", 26, 26)

    def test_per_name_rule_parameters(self):
        # api: ratio 1.2, margin 100 mi, TTL 60/300, sites paris/ashburn/sanjose.
        literal = {"amsterdam": (60, [PARIS4]), "houston": (60, [ASHBURN4]),
                   "chicago": (60, [ASHBURN4]), "queretaro": (300, [SANJOSE4, ASHBURN4]),
                   "buenos_aires": (60, [ASHBURN4])}
        for label, want in literal.items():
            _, _, lat, lon = PLACES[label]
            v4 = PLACES[label][0]
            with self.subTest(place=label):
                self.assertEqual(decide(lat, lon, "A", **API_RULE), want)
                got, _ = self.geo("api.example.com", "A", ecs=(host(v4), prefix(v4)))
                self.assertEqual(got, want)
                # www, on the same client, keeps the default rule
                got, _ = self.geo("www.example.com", "A", ecs=(host(v4), prefix(v4)))
                self.assertEqual(got, EXPECTED["A"][label])

    def test_one_candidate_for_the_family_is_single(self):
        # Of api's sites only Paris has IPv6: it alone, TTL 60, for everyone.
        for label in ("amsterdam", "houston", "at_sydney"):
            v6 = PLACES[label][1]
            with self.subTest(place=label):
                got, _ = self.geo("api.example.com", "AAAA", ecs=(host(v6), prefix(v6)))
                self.assertEqual(got, (60, [PARIS6]))

    def test_no_candidate_for_the_family_is_nodata(self):
        got, _ = self.geo("us.example.com", "A", ecs=("192.0.2.0", 26))
        self.assertEqual(got, decide(52.37, 4.90, "A", names=["ashburn", "sanjose"]))
        self.assertEqual(got, (3600, [ASHBURN4, SANJOSE4]))
        r = self.server.query("us.example.com", "AAAA", ecs=("192.0.2.0", 26))
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        self.assertEqual(rrs(r, "answer"), [])
        self.assertEqual(rr_types(r, "authority"), ["SOA"])

    # --- 3. ECS edge cases ---

    def test_scope_is_the_matched_network_for_host_prefixes(self):
        for rdtype, family, addr, source, place, scope in (
                ("A", 1, "192.0.2.130", 32, "chicago", 26),
                ("A", 1, "203.0.113.70", 32, "at_sydney", 28),
                ("AAAA", 2, "2001:db8:1:2:3:4:5:6", 128, "amsterdam", 48),
                ("AAAA", 2, "2001:db8:10:455::1", 128, "at_sydney", 56)):
            with self.subTest(client=addr):
                got, opt = self.geo("www.example.com", rdtype, ecs=(addr, source))
                self.assertEqual(got, EXPECTED[rdtype][place])
                self.assertEcs(opt, family, addr, source, scope)

    def test_scope_longer_than_a_short_source(self):
        # /24 covers four fixture networks; the answer is for the first, and
        # the scope (26) tells the resolver to ask again with more bits.
        got, opt = self.geo("www.example.com", "A", ecs=("192.0.2.0", 24))
        self.assertEqual(got, EXPECTED["A"]["amsterdam"])
        self.assertEcs(opt, 1, "192.0.2.0", 24, 26)

    def test_source_prefix_zero_uses_the_resolver_address(self):
        for family, addr in ((1, "0.0.0.0"), (2, "::")):
            for rdtype in ("A", "AAAA"):
                with self.subTest(family=family, type=rdtype):
                    got, opt = self.geo("www.example.com", rdtype, ecs=(addr, 0))
                    self.assertEqual(got, DEFAULT_ANSWER[rdtype])
                    self.assertEcs(opt, family, addr, 0, 0)

    def test_no_ecs_in_query_means_none_in_reply(self):
        r = self.server.query("www.example.com", "A")
        self.assertIsNotNone(r.opt)
        self.assertIsNone(ecs_option(r))
        r = self.server.query("www.example.com", "A", edns=False)
        self.assertEqual(r.edns, -1)

    def test_static_names_have_scope_zero(self):
        r = self.server.query("static.example.com", "A", ecs=("192.0.2.0", 24))
        self.assertEqual(rrs(r, "answer"), ["static.example.com. 600 IN A 198.51.100.80"])
        self.assertEcs(ecs_option(r), 1, "192.0.2.0", 24, 0)
        r = self.server.query("www.example.com", "TXT", ecs=("2001:db8:1::", 48))
        self.assertEqual(rrs(r, "answer"),
                         ['www.example.com. 3600 IN TXT "static data beside a geo name"'])
        self.assertEcs(ecs_option(r), 2, "2001:db8:1::", 48, 0)
        r = self.server.query("nope.example.com", "A", ecs=("192.0.2.0", 24))
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NXDOMAIN")
        self.assertEcs(ecs_option(r), 1, "192.0.2.0", 24, 0)

    def test_cname_into_a_geo_name(self):
        r = self.server.query("blog.example.com", "A", ecs=("192.0.2.128", 26))
        self.assertEqual(rrs(r, "answer"), ["blog.example.com. 3600 IN CNAME www.example.com.",
                                            "www.example.com. 120 IN A 5.161.44.145"])
        self.assertEcs(ecs_option(r), 1, "192.0.2.128", 26, 26)

    def test_any_at_a_geo_name_gives_the_a_answer(self):
        r = self.server.query("www.example.com", "ANY", ecs=("192.0.2.128", 26))
        self.assertEqual(rrs(r, "answer"), ["www.example.com. 120 IN A 5.161.44.145"])
        self.assertEcs(ecs_option(r), 1, "192.0.2.128", 26, 26)

    def raw_ecs(self, *payloads):
        q = dns.message.make_query("www.example.com", "A", use_edns=0,
                                   options=[dns.edns.GenericOption(8, p) for p in payloads])
        q.flags &= ~dns.flags.RD
        reply = self.server.raw_udp(q.to_wire())
        self.assertIsNotNone(reply, "no reply")
        return reply

    def test_malformed_ecs_is_formerr(self):
        cases = {
            "unknown family 3": struct.pack("!HBB", 3, 24, 0) + bytes([192, 0, 2]),
            "family 0": struct.pack("!HBB", 0, 0, 0),
            "IPv4 source /33": struct.pack("!HBB", 1, 33, 0) + bytes([192, 0, 2, 0, 0]),
            "IPv6 source /129": struct.pack("!HBB", 2, 129, 0) + bytes(17),
            "bits beyond /23": struct.pack("!HBB", 1, 23, 0) + bytes([192, 0, 3]),
            "bits beyond /60": (struct.pack("!HBB", 2, 60, 0)
                                + bytes([0x20, 1, 0xd, 0xb8, 0, 1, 0, 0x1f])),
            "address longer than /24": struct.pack("!HBB", 1, 24, 0) + bytes([192, 0, 2, 0]),
            "address shorter than /24": struct.pack("!HBB", 1, 24, 0) + bytes([192, 0]),
            "option shorter than 4": b"\x00\x01\x18",
        }
        for what, payload in cases.items():
            with self.subTest(case=what):
                reply = self.raw_ecs(payload)
                self.assertTrue(reply[2] & 0x80, "QR not set")
                self.assertEqual(reply[3] & 0x0F, dns.rcode.FORMERR)
                ancount = struct.unpack("!H", reply[6:8])[0]
                self.assertEqual(ancount, 0)
        one = struct.pack("!HBB", 1, 24, 0) + bytes([192, 0, 2])
        reply = self.raw_ecs(one, one)
        self.assertEqual(reply[3] & 0x0F, dns.rcode.FORMERR, "two ECS options")
        # well formed, built by hand the same way: answered
        reply = self.raw_ecs(struct.pack("!HBB", 1, 23, 0) + bytes([192, 0, 2]))
        msg = dns.message.from_wire(reply)
        self.assertEqual(msg.rcode(), dns.rcode.NOERROR)
        self.assertEqual(rrs(msg, "answer"), ["www.example.com. 3600 IN A 45.90.160.60",
                                              "www.example.com. 3600 IN A 116.203.18.48"])
        self.assertEcs(ecs_option(msg), 1, "192.0.2.0", 23, 26)

    # --- 4. no location ---

    def test_no_location_uses_default_location(self):
        cases = [("10.0.0.0", 8, "A", 1, 1), ("10.0.0.1", 32, "AAAA", 1, 1),
                 ("198.51.100.128", 25, "A", 1, 25), ("198.51.100.200", 32, "AAAA", 1, 25),
                 ("2001:db8:ff::", 48, "A", 2, 48), ("2001:db8:ff::1", 128, "AAAA", 2, 48),
                 # diverges from every fixture network at bit 33
                 ("2001:db8:abcd::1", 128, "A", 2, 33)]
        for addr, plen, rdtype, family, scope in cases:
            with self.subTest(client=addr, type=rdtype):
                got, opt = self.geo("www.example.com", rdtype, ecs=(addr, plen))
                self.assertEqual(got, DEFAULT_ANSWER[rdtype])
                # scope = the network the miss covers, never 0 (that would
                # let a resolver give this answer to every client)
                self.assertEcs(opt, family, addr, plen, scope)

    # --- 7. explain ---

    def explain(self, *args):
        out = subprocess.run([BIN, "explain", "-c", self.server.config_path, *args],
                             capture_output=True, text=True, timeout=20)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout

    @staticmethod
    def answer_lines(text):
        return text.split("\nanswer:\n", 1)[1].strip().splitlines()

    def test_explain_client_matches_server(self):
        cases = [("www.example.com", "A", "192.0.2.5", "192.0.2.0/26"),
                 ("www.example.com", "A", "192.0.2.130", "192.0.2.128/26"),
                 ("www.example.com", "A", "203.0.113.40", "203.0.113.32/28"),
                 ("www.example.com", "AAAA", "2001:db8:2::9", "2001:db8:2::/48"),
                 ("api.example.com", "A", "192.0.2.70", "192.0.2.64/26"),
                 ("www.example.com", "A", "10.0.0.1", "0.0.0.0/1")]
        for name, rdtype, client, net in cases:
            with self.subTest(name=name, client=client):
                text = self.explain(name, rdtype, "--client", client)
                full = 32 if ":" not in client else 128
                r = self.server.query(name, rdtype, ecs=(client, full))
                self.assertEqual(self.answer_lines(text), rrs(r, "answer"))
                scope = ecs_option(r).scopelen
                self.assertIn("ECS scope: /%d (the answer holds for %s)" % (scope, net), text)
                ttl = int(rrs(r, "answer")[0].split()[1])
                if len(r.answer[0]) == 2:
                    self.assertRegex(text, r"decision: .* → both, nearest first, TTL %d\n" % ttl)
                else:
                    self.assertRegex(text, r"decision: .* → nearest only, TTL %d\n" % ttl)
        text = self.explain("www.example.com", "A", "--client", "192.0.2.5")
        self.assertIn("(layout location), network 192.0.2.0/26", text)
        text = self.explain("www", "A", "--client", "10.0.0.1")
        self.assertIn("the default location", text)

    def test_explain_at_matches_server(self):
        for label in ("chicago", "queretaro", "buenos_aires"):
            v4, v6, lat, lon = PLACES[label]
            for rdtype in ("A", "AAAA"):
                with self.subTest(place=label, type=rdtype):
                    text = self.explain("www.example.com", rdtype, "--at", "%s,%s" % (lat, lon))
                    r = self.server.query("www.example.com", rdtype, ecs=(host(v4), prefix(v4)))
                    self.assertEqual(self.answer_lines(text), rrs(r, "answer"))
                    self.assertIn("location: %.6f, %.6f (given with --at)" % (lat, lon), text)
        # AAAA of a name whose sites have no IPv6: NODATA, as served
        text = self.explain("us.example.com", "AAAA", "--at", "52.37,4.90")
        self.assertIn("→ NODATA", text)

    # --- 5. source address ---

    def test_loopback_sources_have_no_location(self):
        for source in ("127.0.0.1", "127.0.0.2", "127.9.8.7"):
            for rdtype in ("A", "AAAA"):
                with self.subTest(source=source, type=rdtype):
                    got, opt = self.geo("www.example.com", rdtype, source=source)
                    self.assertEqual(got, DEFAULT_ANSWER[rdtype])
                    self.assertIsNone(opt)

    # --- 8. IPv6 transport ---

    def test_ipv6_transport(self):
        # IPv6 is first-class: the server listens on ::1 in every test.
        got, opt = self.geo("www.example.com", "AAAA", ecs=("2001:db8:1::", 48), addr="::1")
        self.assertEqual(got, EXPECTED["AAAA"]["amsterdam"])
        self.assertEcs(opt, 2, "2001:db8:1::", 48, 48)
        got, opt = self.geo("www.example.com", "A", ecs=("192.0.2.128", 26), addr="::1")
        self.assertEqual(got, EXPECTED["A"]["chicago"])
        # ::1 itself has no location
        got, opt = self.geo("www.example.com", "AAAA", addr="::1")
        self.assertEqual(got, DEFAULT_ANSWER["AAAA"])
        self.assertIsNone(opt)

    # --- 9. signatures ---

    def test_do_bit_brings_an_rrsig(self):
        cases = [("A", ("192.0.2.0", 26), "amsterdam"), ("A", ("192.0.2.128", 26), "chicago"),
                 ("AAAA", ("2001:db8:2::", 48), "houston"),
                 ("AAAA", ("2001:db8:5::", 48), "buenos_aires")]
        for rdtype, ecs, label in cases:
            with self.subTest(place=label, type=rdtype):
                r = self.server.query("www.example.com", rdtype, ecs=ecs, dnssec=True)
                self.assertEqual(rr_types(r, "answer"), [rdtype, "RRSIG"])
                ttl, addrs = EXPECTED[rdtype][label]
                self.assertEqual([rd.to_text() for rd in r.answer[0]], addrs)
                self.assertEqual(r.answer[0].ttl, ttl)
                sig = r.answer[1]
                self.assertEqual(sig.ttl, ttl)
                self.assertEqual(len(sig), 1)
                rd = sig[0]
                self.assertEqual(dns.rdatatype.to_text(rd.type_covered), rdtype)
                self.assertEqual((rd.algorithm, rd.labels, rd.original_ttl), (13, 3, ttl))
                self.assertEqual(rd.signer.to_text(), "example.com.")
                self.assertEqual(len(rd.signature), 64)
                self.assertLess(rd.inception, time.time())
                self.assertGreater(rd.expiration, time.time())
                self.assertTrue(r.flags & dns.flags.AA)
                r0 = self.server.query("www.example.com", rdtype, ecs=ecs)
                self.assertEqual(rr_types(r0, "answer"), [rdtype])


class FlatLayout(GeoTestCase):
    """DB-IP lite shape: separate IPv4 and IPv6 files, top-level latitude/longitude."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(BASE_CONFIG + geo_config(["flat-ipv4.mmdb", "flat-ipv6.mmdb"]),
                            {"example.com.zone": ZONE})
        make_mmdb(cls.server.dir, "flat")
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        stop_and_cleanup(cls.server)

    def test_a_and_aaaa_with_host_prefixes(self):
        for rdtype, table in EXPECTED.items():
            for label, want in table.items():
                v4, v6 = PLACES[label][:2]
                with self.subTest(place=label, type=rdtype):
                    a4 = str(ipaddress.ip_network(v4).network_address + 3)
                    got, opt = self.geo("www.example.com", rdtype, ecs=(a4, 32))
                    self.assertEqual(got, want)
                    self.assertEcs(opt, 1, a4, 32, prefix(v4))
                    a6 = str(ipaddress.ip_network(v6).network_address + 0x1234)
                    got, opt = self.geo("www.example.com", rdtype, ecs=(a6, 128))
                    self.assertEqual(got, want)
                    self.assertEcs(opt, 2, a6, 128, prefix(v6))

    def test_no_location(self):
        cases = [("10.0.0.1", 32, 1, 1), ("198.51.100.130", 32, 1, 25),
                 ("2001:db8:ff::1", 128, 2, 48)]
        for addr, plen, family, scope in cases:
            with self.subTest(client=addr):
                got, opt = self.geo("www.example.com", "A", ecs=(addr, plen))
                self.assertEqual(got, DEFAULT_ANSWER["A"])
                self.assertEcs(opt, family, addr, plen, scope)

    def test_explain_names_the_flat_layout(self):
        out = subprocess.run([BIN, "explain", "-c", self.server.config_path, "www.example.com",
                              "--client", "198.51.100.7"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"flat-ipv4\.mmdb \(layout flat\), network 198\.51\.100\.0/25")
        r = self.server.query("www.example.com", "A", ecs=("198.51.100.7", 32))
        self.assertEqual(out.stdout.split("\nanswer:\n")[1].strip().splitlines(),
                         rrs(r, "answer"))


class NoDefaultLocation(GeoTestCase):
    """Without default_location the first [[sites]] entry (Paris) stands in for the client."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(BASE_CONFIG + geo_config(["city.mmdb"], default=None),
                            {"example.com.zone": ZONE})
        make_mmdb(cls.server.dir, "city")
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        stop_and_cleanup(cls.server)

    def test_answer_for_the_first_site(self):
        first = SITES[0]
        self.assertEqual(first["name"], "paris")
        for rdtype in ("A", "AAAA"):
            want = decide(first["latitude"], first["longitude"], rdtype)
            with self.subTest(type=rdtype):
                got, _ = self.geo("www.example.com", rdtype, ecs=("10.0.0.1", 32))
                self.assertEqual(got, want)
                got, _ = self.geo("www.example.com", rdtype, ecs=("198.51.100.130", 32))
                self.assertEqual(got, want)
                got, _ = self.geo("www.example.com", rdtype)
                self.assertEqual(got, want)
        # located clients are unaffected
        got, _ = self.geo("www.example.com", "A", ecs=("192.0.2.128", 26))
        self.assertEqual(got, EXPECTED["A"]["chicago"])

    def test_scope_is_the_missed_network(self):
        # Every address in the network the databases missed gets the same
        # stand-in answer: 0.0.0.0/1 is empty in the fixture, 198.51.100.128/25
        # has no coordinates, 2001:db8:8000::/33 is empty.
        for addr, plen, scope in (("10.0.0.1", 32, 1), ("10.0.0.0", 8, 1),
                                  ("198.51.100.128", 25, 25), ("2001:db8:abcd::", 48, 33)):
            with self.subTest(client=addr):
                _, opt = self.geo("www.example.com", "A", ecs=(addr, plen))
                self.assertEcs(opt, 2 if ":" in addr else 1, addr, plen, scope)

    def test_explain_agrees(self):
        for client in ("10.0.0.1", "198.51.100.130", "2001:db8:abcd::1"):
            with self.subTest(client=client):
                out = subprocess.run([BIN, "explain", "-c", self.server.config_path,
                                      "www.example.com", "A", "--client", client],
                                     capture_output=True, text=True, timeout=20)
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertIn("answers as if the client were at the first site, paris", out.stdout)
                full = 128 if ":" in client else 32
                r = self.server.query("www.example.com", "A", ecs=(client, full))
                self.assertEqual(out.stdout.split("\nanswer:\n")[1].strip().splitlines(),
                                 rrs(r, "answer"))
                # the scope explain reports is the one the server sends
                m = re.search(r"^ECS scope: /(\d+)", out.stdout, re.M)
                self.assertIsNotNone(m, out.stdout)
                self.assertEqual(int(m.group(1)), ecs_option(r).scopelen, out.stdout)


HEALTH_SITES = "\n" + checked_site("hp", "127.0.0.10", 48.88, 2.22, "{p1}", "200ms", "200ms", 1, 2) \
    + checked_site("hn", "127.0.0.11", 49.45, 11.08, "{p2}", "200ms", "200ms", 1, 2) + """[[sites]]
name = "ha"
ipv4 = "5.161.44.145"
latitude = 39.04
longitude = -77.49
[[sites]]
name = "off"
ipv4 = "192.0.2.99"
latitude = 52.37
longitude = 4.90
enabled = false
"""

HEALTH_ZONES = geo_toml(DEFAULT_LOCATION) + zone_toml(body="""[[zones.geo]]
name = "www"
[[zones.geo]]
name = "eu"
sites = ["hp", "hn"]
""")

AMSTERDAM = ("192.0.2.0", 26)


class Health(GeoTestCase):
    """hp and hn are checked against listeners on 127.0.0.10 and .11; ha is unchecked."""

    @classmethod
    def setUpClass(cls):
        cls.hp, cls.hn, sites_toml = health_listeners()
        cls.sites = parse_sites(sites_toml)
        cls.server = Server(BASE_CONFIG + sites_toml + HEALTH_ZONES, {"example.com.zone": ZONE})
        make_mmdb(cls.server.dir, "city")
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        try:
            stop_and_cleanup(cls.server)
        finally:
            cls.hp.close()
            cls.hn.close()

    def expect(self, name, alive):
        names = ["hp", "hn"] if name == "eu" else None
        return decide(52.37, 4.90, "A", sites=self.sites, names=names, alive=alive)

    def wait_answer(self, name, want, timeout=30):
        """Polls until the Amsterdam answer is `want` (a generous deadline:
        how fast is shown by the check counts in the log, not by a clock)."""
        deadline = time.time() + timeout
        got = None
        while time.time() < deadline:
            got, _ = self.geo(name + ".example.com", "A", ecs=AMSTERDAM)
            if got == want:
                return
            time.sleep(0.05)
        self.fail("%s never answered %s (last %s):\n%s" % (name, want, got,
                                                            self.server.log_since_start()))

    def setUp(self):
        # every test starts with both listeners up and both sites alive
        for listener in (self.hp, self.hn):
            if listener.sock is None:
                listener.open()
        self.wait_answer("www", (3600, ["127.0.0.10", "127.0.0.11"]))
        self.log_mark = len(self.server.log_since_start())

    def wait_log(self, pattern, timeout=30):
        """Waits for pattern in the log written since this test began."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if re.search(pattern, self.server.log_since_start()[self.log_mark:]):
                return
            time.sleep(0.05)
        self.fail("log never matched %r:\n%s" % (pattern,
                                                 self.server.log_since_start()[self.log_mark:]))

    def test_disabled_site_never_chosen(self):
        # "off" sits exactly on the client; it is disabled, so Paris + Nuremberg
        self.assertEqual(self.expect("www", None), (3600, ["127.0.0.10", "127.0.0.11"]))
        got, _ = self.geo("www.example.com", "A", ecs=AMSTERDAM)
        self.assertEqual(got, (3600, ["127.0.0.10", "127.0.0.11"]))
        self.assertNotIn("192.0.2.99", got[1])

    def test_site_goes_down_and_comes_back(self):
        self.hp.close()
        want = self.expect("www", ["hn", "ha"])
        self.assertEqual(want, (120, ["127.0.0.11"]))
        self.wait_answer("www", want)
        # fall = 2: down after exactly two failed checks
        self.wait_log(r"warn: health: site hp is down: .*\(2 consecutive checks failed\)")
        self.hp.open()
        self.wait_answer("www", (3600, ["127.0.0.10", "127.0.0.11"]))
        self.wait_log(r"info: health: site hp is up: 1 consecutive checks passed")

    def test_all_candidates_dead_fails_open(self):
        self.hp.close()
        self.hn.close()
        # www still has ha alive: it alone
        self.wait_answer("www", (120, ["5.161.44.145"]))
        self.wait_log(r"warn: health: site hn is down")
        # eu has no alive site: answer as if both were alive, and say so loudly
        self.assertEqual(self.expect("eu", []), (3600, ["127.0.0.10", "127.0.0.11"]))
        got, _ = self.geo("eu.example.com", "A", ecs=AMSTERDAM)
        self.assertEqual(got, (3600, ["127.0.0.10", "127.0.0.11"]))
        self.wait_log(r"error: geo: eu\.example\.com\.: no site is alive; answering as if all were "
                      r"\(fail open\)")
        self.hp.open()
        self.wait_answer("eu", (120, ["127.0.0.10"]))


class Reload(GeoTestCase):
    """SIGHUP with a changed site list changes answers without a restart."""

    @classmethod
    def setUpClass(cls):
        cls.server = start_geo_server()

    @classmethod
    def tearDownClass(cls):
        stop_and_cleanup(cls.server)

    def test_sighup_changes_sites(self):
        got, _ = self.geo("www.example.com", "A", ecs=AMSTERDAM)
        self.assertEqual(got, EXPECTED["A"]["amsterdam"])
        pid = self.server.proc.pid
        # Paris leaves, a site in Amsterdam itself arrives.
        new_sites = SITES_TOML.replace('name = "paris"', 'name = "paris"\nenabled = false')
        new_sites += ('[[sites]]\nname = "amsterdam"\nipv4 = "192.0.2.200"\n'
                      'latitude = 52.37\nlongitude = 4.90\n')
        want = decide(52.37, 4.90, "A", sites=parse_sites(new_sites))
        self.assertEqual(want, (3600, ["192.0.2.200", NUREMBERG4]))
        config = BASE_CONFIG + geo_config(["city.mmdb"]).replace(SITES_TOML, new_sites)
        self.server.write("config.toml", config)
        self.server.send_signal(signal.SIGHUP)
        self.server.wait_log(r"reloaded: 1 zone\b")
        got, _ = self.geo("www.example.com", "A", ecs=AMSTERDAM)
        self.assertEqual(got, want)
        # Chicago now: Ashburn alone still (Paris is gone from AAAA too)
        got, _ = self.geo("www.example.com", "AAAA", ecs=("2001:db8:3::", 48))
        self.assertEqual(got, decide(41.88, -87.63, "AAAA", sites=parse_sites(new_sites)))
        self.assertEqual(self.server.proc.pid, pid)
        self.assertTrue(self.server.alive())


if __name__ == "__main__":
    main()
