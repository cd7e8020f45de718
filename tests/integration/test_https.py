# SPDX-License-Identifier: MIT
"""Geo-synthesized HTTPS records (RFC 9460) against the real binary.

For every fixture place (every continent, IPv4 and IPv6 client subnets) the
HTTPS answer of www must be exactly
    1 <nearest>.sites.example.com. alpn="h3,h2"
    2 <second nearest>.sites.example.com. alpn="h3,h2"
    3 . alpn="h3,h2"
in that order, with the TTL and ECS scope of the A answer for the same
client, and the per-site A/AAAA of the two targets (never anything tailored)
in Additional.  Expectations come from an independent computation of the
rule in Python (test_geo.py's haversine over SITES_TOML).  Signatures are
checked by unbound (with ECS through subnetcache), delv and ldns.
"""
import ipaddress
import os
import subprocess
import unittest

import dns.flags
import dns.rcode
import dns.rdatatype

from harness import BASE_CONFIG, SITES_TOML, Server, ecs_option, main, make_key, make_mmdb
from resolvers import Unbound
from test_geo import PLACES, SITES, decide, haversine

ZONE = """$ORIGIN example.com.
$TTL 3600
@       IN SOA  ns1.example.com. hostmaster.example.com. 2026113001 7200 3600 1209600 300
@       IN NS   ns1.example.com.
ns1     IN A    192.0.2.53
static  IN HTTPS 1 web.example.com. alpn=h2
web     IN A    192.0.2.80
web     IN AAAA 2001:db8::80
alias   IN HTTPS 0 static.example.com.
blog    IN CNAME www.example.com.
"""

GEO = """
[geo]
databases = ["city.mmdb"]
default_location = [48.86, 2.35]

[[zones]]
zone = "example.com"
file = "example.com.zone"
[[zones.geo]]
name = "www"
https = { alpn = ["h3", "h2"], site_names = "sites" }
[[zones.geo]]
name = "solo"
sites = ["paris"]
ttl_single = 90
https = { alpn = ["h2"], site_names = "sites", port = 8443, ech = "AEX+DQ==" }
[[zones.geo]]
name = "plain"
[[zones.keys]]
algorithm = "ECDSAP256SHA256"
key_path = "example.com.pem"
"""

ALPN = [b"h3", b"h2"]


def expect_https(lat, lon, names=None, ratio=2.0, margin=1000.0, ttl_single=120, ttl_pair=3600):
    """The HTTPS rule written again: (ttl, [nearest site, second site or None])."""
    cands = [s for s in SITES if (names is None or s["name"] in names)
             and s.get("enabled", True) and ("ipv4" in s or "ipv6" in s)]
    ranked = sorted(((haversine(lat, lon, s["latitude"], s["longitude"]), i, s)
                     for i, s in enumerate(cands)), key=lambda t: (t[0], t[1]))
    if len(ranked) == 1:
        return ttl_single, [ranked[0][2]["name"], None]
    (d1, _, s1), (d2, _, s2) = ranked[:2]
    single = d2 > ratio * d1 and d2 - d1 > margin
    return (ttl_single if single else ttl_pair), [s1["name"], s2["name"]]


def site(name):
    return next(s for s in SITES if s["name"] == name)


def first_host(net):
    n = ipaddress.ip_network(net)
    return str(n.network_address), n.prefixlen


CLIENTS = [(label, fam, net) for label, (v4, v6, lat, lon) in sorted(PLACES.items())
           if lat is not None for fam, net in (("v4", v4), ("v6", v6))]


class GeoHttps(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(BASE_CONFIG + SITES_TOML + GEO, {"example.com.zone": ZONE})
        make_key(cls.server.path("example.com.pem"))
        make_mmdb(cls.server.dir, "city")
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        log = cls.server.log()
        cls.server.cleanup()
        if rc != 0:
            raise AssertionError("geoacme exited with %s on SIGTERM:\n%s" % (rc, log[-4000:]))

    def https(self, name, ecs=None, dnssec=False, **kw):
        r = self.server.query(name, "HTTPS", ecs=ecs, dnssec=dnssec, **kw)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        self.assertEqual(set(dns.flags.to_text(r.flags).split()), {"QR", "AA"})
        return r

    def check_records(self, r, owner, ttl, nearest, second, alpn=ALPN, port=None, ech=None):
        https = [s for s in r.answer if s.rdtype == dns.rdatatype.HTTPS]
        self.assertEqual(len(https), 1, r.to_text())
        rrset = https[0]
        self.assertEqual(rrset.name.to_text(), owner)
        self.assertEqual(rrset.ttl, ttl)
        want = [(1, "%s.sites.example.com." % nearest)]
        if second:
            want.append((2, "%s.sites.example.com." % second))
        want.append((3, "."))
        # Wire order, as the client sees it: priority 1, 2, 3.
        self.assertEqual([(rd.priority, rd.target.to_text()) for rd in rrset], want)
        for rd in rrset:
            keys = sorted(int(k) for k in rd.params)
            self.assertEqual(keys, [1] + ([3] if port else []) + ([5] if ech else []),
                             "alpn (port, ech) only, no hints")
            self.assertEqual(list(rd.params[1].ids), alpn)
            if port:
                self.assertEqual(rd.params[3].port, port)
            if ech:
                self.assertEqual(rd.params[5].ech, ech)

    def check_additional(self, r, nearest, second, dnssec):
        """Additional = the per-site A/AAAA of both targets (+ RRSIGs with DO=1), nothing else."""
        want = set()
        for name in (nearest, second):
            if not name:
                continue
            s = site(name)
            for fam, t in (("ipv4", "A"), ("ipv6", "AAAA")):
                if fam in s:
                    want.add(("%s.sites.example.com." % name, t, s[fam]))
        got = set()
        sigs = set()
        for rrset in r.additional:
            if rrset.rdtype == dns.rdatatype.RRSIG:
                sigs.update((rrset.name.to_text(), dns.rdatatype.to_text(rd.type_covered))
                            for rd in rrset)
                continue
            if rrset.rdtype == dns.rdatatype.OPT:
                continue
            self.assertEqual(rrset.ttl, 3600)
            for rd in rrset:
                got.add((rrset.name.to_text(), dns.rdatatype.to_text(rrset.rdtype), rd.to_text()))
        self.assertEqual(got, want)
        self.assertFalse(any(n == "www.example.com." for n, _, _ in got), "tailored data")
        if dnssec:
            self.assertEqual(sigs, {(n, t) for n, t, _ in want})
        else:
            self.assertEqual(sigs, set())

    def test_every_continent_both_families(self):
        for label, fam, net in CLIENTS:
            with self.subTest(place=label, family=fam):
                _, _, lat, lon = PLACES[label]
                ttl, (nearest, second) = expect_https(lat, lon)
                addr, plen = first_host(net)
                r = self.https("www.example.com", ecs=(addr, plen), dnssec=True)
                self.check_records(r, "www.example.com.", ttl, nearest, second)
                self.check_additional(r, nearest, second, dnssec=True)
                self.assertEqual(len([s for s in r.answer if s.rdtype == dns.rdatatype.RRSIG]), 1)
                # Same TTL and ECS scope as the A answer for the same client.
                a = self.server.query("www.example.com", "A", ecs=(addr, plen), dnssec=True)
                a_ttl = next(s.ttl for s in a.answer if s.rdtype == dns.rdatatype.A)
                self.assertEqual(ttl, a_ttl)
                self.assertEqual(ecs_option(r).scopelen, ecs_option(a).scopelen)
                self.assertEqual(ecs_option(r).scopelen, plen)
                # And the A answer's nearest is the HTTPS nearest (all sites have IPv4).
                a_ttl2, a_addrs = decide(lat, lon, "A")
                self.assertEqual(a_addrs[0], site(nearest)["ipv4"])

    def test_through_a_cname(self):
        # The HTTPS set's owner is then not the question: the writer points
        # its owners at the CNAME's target name.
        _, _, lat, lon = PLACES["tokyo"]
        ttl, (nearest, second) = expect_https(lat, lon)
        for dnssec in (False, True):
            r = self.https("blog.example.com", ecs=("203.0.113.80", 28), dnssec=dnssec)
            self.assertEqual(r.answer[0].rdtype, dns.rdatatype.CNAME)
            self.check_records(r, "www.example.com.", ttl, nearest, second)
            self.check_additional(r, nearest, second, dnssec=dnssec)
            self.assertEqual(len(r.answer), 4 if dnssec else 2)

    def test_tcp_same_answer(self):
        udp = self.https("www.example.com", ecs=("203.0.113.96", 28), dnssec=True)
        tcp = self.https("www.example.com", ecs=("203.0.113.96", 28), dnssec=True, tcp=True)
        self.assertEqual(udp.answer, tcp.answer)
        self.assertEqual(udp.additional, tcp.additional)

    def test_second_is_listed_when_a_answers_the_nearest_alone(self):
        # Chicago: A is Ashburn alone (TTL 120); HTTPS still lists San Jose second.
        _, _, lat, lon = PLACES["chicago"]
        self.assertEqual(decide(lat, lon, "A"), (120, [site("ashburn")["ipv4"]]))
        r = self.https("www.example.com", ecs=("192.0.2.128", 26))
        self.check_records(r, "www.example.com.", 120, "ashburn", "sanjose")
        self.check_additional(r, "ashburn", "sanjose", dnssec=False)

    def test_one_site_gives_records_1_and_3(self):
        r = self.https("solo.example.com", ecs=("192.0.2.128", 26), dnssec=True)
        self.check_records(r, "solo.example.com.", 90, "paris", None, alpn=[b"h2"], port=8443,
                           ech=bytes.fromhex("0045fe0d"))
        self.check_additional(r, "paris", None, dnssec=True)

    def test_without_ecs_the_resolver_location_scope_zero(self):
        # Loopback sources are placed nowhere: default_location (Paris).
        ttl, (nearest, second) = expect_https(48.86, 2.35)
        r = self.https("www.example.com")
        self.check_records(r, "www.example.com.", ttl, nearest, second)
        self.assertIsNone(ecs_option(r))

    def test_per_site_names_are_static_signed_scope_zero(self):
        for s in SITES:
            for fam, t in (("ipv4", "A"), ("ipv6", "AAAA")):
                with self.subTest(site=s["name"], type=t):
                    r = self.server.query("%s.sites.example.com" % s["name"], t,
                                          ecs=("192.0.2.0", 26), dnssec=True)
                    self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
                    self.assertEqual(ecs_option(r).scopelen, 0)
                    data = [rd.to_text() for x in r.answer if x.rdtype != dns.rdatatype.RRSIG
                            for rd in x]
                    self.assertEqual(data, [s[fam]] if fam in s else [])
                    if fam in s:
                        self.assertIn("RRSIG", [dns.rdatatype.to_text(x.rdtype) for x in r.answer])
                    else:   # NODATA, proved by the name's NSEC
                        self.assertEqual([dns.rdatatype.to_text(x.rdtype) for x in r.authority],
                                         ["SOA", "RRSIG", "NSEC", "RRSIG"])

    def test_nsec_bitmap_lists_https(self):
        r = self.server.query("www.example.com", "NSEC", dnssec=True)
        nsec = [rd for x in r.answer if x.rdtype == dns.rdatatype.NSEC for rd in x]
        self.assertEqual(len(nsec), 1)
        self.assertIn("HTTPS", nsec[0].to_text().split())
        r = self.server.query("plain.example.com", "NSEC", dnssec=True)
        self.assertNotIn("HTTPS", r.answer[0][0].to_text().split())
        # plain has no https: NODATA, as for any type it does not hold.
        r = self.server.query("plain.example.com", "HTTPS", dnssec=True)
        self.assertEqual(r.answer, [])
        self.assertEqual([dns.rdatatype.to_text(x.rdtype) for x in r.authority],
                         ["SOA", "RRSIG", "NSEC", "RRSIG"])
        # The per-site names are in the chain: sites.example.com is an empty non-terminal.
        r = self.server.query("paris.sites.example.com", "NSEC", dnssec=True)
        self.assertEqual(r.answer[0][0].to_text().split()[1:], ["A", "AAAA", "RRSIG", "NSEC"])

    def test_additional_that_does_not_fit_is_left_out_without_tc(self):
        full = self.https("www.example.com", ecs=("192.0.2.0", 26), dnssec=True, payload=4096)
        small = self.https("www.example.com", ecs=("192.0.2.0", 26), dnssec=True, payload=512)
        self.assertFalse(small.flags & dns.flags.TC)
        self.assertEqual(small.answer, full.answer)
        self.assertLess(len(small.to_wire()), 513)
        self.assertLess(len(small.additional), len(full.additional))
        for rrset in small.additional:
            if rrset.rdtype != dns.rdatatype.OPT:
                self.assertIn(rrset, full.additional)

    def test_static_https_gets_additional_for_in_zone_targets(self):
        r = self.https("static.example.com", dnssec=True)
        got = sorted((x.name.to_text(), dns.rdatatype.to_text(x.rdtype)) for x in r.additional
                     if x.rdtype != dns.rdatatype.OPT)
        self.assertEqual(got, [("web.example.com.", t) for t in ("A", "AAAA", "RRSIG", "RRSIG")])
        # AliasMode: the target's HTTPS RRset as well as its addresses (none here).
        r = self.https("alias.example.com")
        got = [(x.name.to_text(), dns.rdatatype.to_text(x.rdtype)) for x in r.additional]
        self.assertEqual(got, [("static.example.com.", "HTTPS")])

    def test_explain_prints_what_the_server_sends(self):
        label = "houston"
        v4, _, lat, lon = PLACES[label]
        addr, plen = first_host(v4)
        out = subprocess.run([os.environ.get("GEOACME_BIN"), "explain", "-c",
                              self.server.config_path, "www", "HTTPS", "--client", addr],
                             capture_output=True, text=True, timeout=20)
        self.assertEqual(out.returncode, 0, out.stderr)
        ttl, (nearest, second) = expect_https(lat, lon)
        answer = out.stdout.split("\nanswer:\n")[1].split("\n\nadditional:\n")
        self.assertEqual(answer[0].splitlines(), [
            'www.example.com. %d IN HTTPS 1 %s.sites.example.com. alpn="h3,h2"' % (ttl, nearest),
            'www.example.com. %d IN HTTPS 2 %s.sites.example.com. alpn="h3,h2"' % (ttl, second),
            'www.example.com. %d IN HTTPS 3 . alpn="h3,h2"' % ttl])
        r = self.https("www.example.com", ecs=(addr, 32))
        served = sorted("%s %d IN %s %s" % (x.name.to_text(), x.ttl,
                                            dns.rdatatype.to_text(x.rdtype), rd.to_text())
                        for x in r.additional for rd in x if x.rdtype != dns.rdatatype.OPT)
        self.assertEqual(sorted(answer[1].splitlines()), served)


class Validated(unittest.TestCase):
    """Signatures on every set in Answer and Additional, by unbound, delv and ldns."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(BASE_CONFIG + SITES_TOML + GEO, {"example.com.zone": ZONE})
        make_key(cls.server.path("example.com.pem"))
        make_mmdb(cls.server.dir, "city")
        cls.server.start()
        out = subprocess.run([os.environ["GEOACME_BIN"], "ds", "-c", cls.server.config_path,
                              "example.com"], capture_output=True, text=True, check=True)
        cls.ds = out.stdout.strip()
        cls.unbound = Unbound([("example.com", cls.server.port)], [cls.ds], subnet=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.unbound.stop()
        rc = cls.server.stop()
        cls.server.cleanup()
        assert rc == 0, "geoacme exited with %s on SIGTERM" % rc

    def test_unbound_validates_https_for_subnets_on_every_continent(self):
        for label in ("amsterdam", "chicago", "buenos_aires", "tokyo", "nairobi", "at_sydney"):
            v4, v6, lat, lon = PLACES[label]
            ttl, (nearest, second) = expect_https(lat, lon)
            for net in (v4, v6):
                with self.subTest(place=label, net=net):
                    r = self.unbound.query("www.example.com", "HTTPS", ecs=first_host(net))
                    self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR", self.unbound.log())
                    self.assertTrue(r.flags & dns.flags.AD, "no AD\n" + self.unbound.log()[-2000:])
                    https = next(x for x in r.answer if x.rdtype == dns.rdatatype.HTTPS)
                    # A resolver may rotate the records; the priorities carry the order.
                    self.assertEqual([rd.target.to_text()
                                      for rd in sorted(https, key=lambda rd: rd.priority)],
                                     ["%s.sites.example.com." % nearest,
                                      "%s.sites.example.com." % second, "."])

    def test_unbound_validates_the_additional_rrsets(self):
        # A resolver answers Additional data only after validating it on its own query.
        for s in SITES:
            for fam, t in (("ipv4", "A"), ("ipv6", "AAAA")):
                with self.subTest(site=s["name"], type=t):
                    r = self.unbound.query("%s.sites.example.com" % s["name"], t)
                    self.assertTrue(r.flags & dns.flags.AD)
                    self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")

    def test_delv_fully_validated(self):
        ds = self.ds.split()
        anchors = os.path.join(self.server.dir, "anchors.conf")
        with open(anchors, "w") as f:
            f.write('trust-anchors { example.com. static-ds %s %s %s "%s"; };\n' % tuple(ds[3:7]))
        for name, t in (("www.example.com", "HTTPS"), ("solo.example.com", "HTTPS"),
                        ("nuremberg.sites.example.com", "AAAA"), ("plain.example.com", "HTTPS")):
            with self.subTest(name=name, type=t):
                out = subprocess.run(["delv", "@127.0.0.1", "-p", str(self.unbound.port), "-a",
                                      anchors, "+root=example.com", name, t], capture_output=True,
                                     text=True, timeout=30)
                self.assertIn("fully validated", out.stdout + out.stderr, out.stdout + out.stderr)

    def test_ldns_verifies_answer_and_additional(self):
        r = self.server.query("example.com", "DNSKEY", dnssec=True)
        keyfile = os.path.join(self.server.dir, "dnskey.txt")
        with open(keyfile, "w") as f:
            f.write("".join("%s %d IN DNSKEY %s\n" % (x.name, x.ttl, rd.to_text())
                            for x in r.answer if x.rdtype == dns.rdatatype.DNSKEY for rd in x))
        for label, fam, net, name in [c + ("www",) for c in CLIENTS] + [("tokyo", "v4",
                                                                           PLACES["tokyo"][0],
                                                                           "blog")]:
            with self.subTest(place=label, family=fam, name=name):
                resp = self.server.query(name + ".example.com", "HTTPS", dnssec=True,
                                         ecs=first_host(net))
                self.assertGreaterEqual(len(resp.additional), 2)
                path = os.path.join(self.server.dir, "resp.bin")
                with open(path, "wb") as f:
                    f.write(resp.to_wire())
                out = subprocess.run([os.environ["LDNS_VERIFY"], keyfile, path],
                                     capture_output=True, text=True)
                self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
                lines = out.stdout.splitlines()
                self.assertIn("ok www.example.com. HTTPS: All OK", lines)
                # one line per RRSIG: the HTTPS set (and CNAME), each Additional RRset
                self.assertEqual(len(lines), sum(len(x) for x in resp.answer + resp.additional
                                                 if x.rdtype == dns.rdatatype.RRSIG))
                sigs = [x for x in resp.additional if x.rdtype == dns.rdatatype.RRSIG]
                data = [x for x in resp.additional
                        if x.rdtype not in (dns.rdatatype.RRSIG, dns.rdatatype.OPT)]
                self.assertEqual(len(sigs), len(data))
                self.assertGreaterEqual(len(data), 2)


class ManySites(unittest.TestCase):
    """Beyond GEO_PRESIGN_MAX sites, HTTPS pairs are built and signed on first use."""

    def test_https_signed_on_first_use_validates(self):
        from test_dnssec import grid_sites, miles
        import re
        toml, sites = grid_sites(80)
        config = toml + GEO[:GEO.index("[[zones.geo]]\nname = \"solo\"")] + GEO[GEO.index("[[zones.keys]]"):]
        srv = Server(BASE_CONFIG + config, {"example.com.zone": ZONE})
        make_key(srv.path("example.com.pem"))
        make_mmdb(srv.dir, "city")
        try:
            srv.start()
            # Ahead: A singles (80), HTTPS singles (80), 80 per-site names, their
            # NSEC records and the static records (334); not 2 x 6320 ordered pairs.
            built = re.findall(r"example\.com: (\d+) RRsets signed", srv.log())
            self.assertEqual(len(built), 1)
            self.assertLess(int(built[0]), 400, srv.log())
            ds = subprocess.run([os.environ["GEOACME_BIN"], "ds", "-c", srv.config_path,
                                 "example.com"], capture_output=True, text=True,
                                check=True).stdout.strip()
            ub = Unbound([("example.com", srv.port)], [ds], subnet=True).start()
            try:
                for addr, prefix, where in (("192.0.2.0", 26, (52.37, 4.90)),
                                            ("198.51.100.0", 25, (-34.60, -58.38))):
                    with self.subTest(client=addr):
                        order = sorted(range(len(sites)), key=lambda k: miles(where, sites[k]))
                        want = ["s%d.sites.example.com." % order[0],
                                "s%d.sites.example.com." % order[1], "."]
                        for _ in range(2):   # first use signs, the second reuses
                            r = ub.query("www.example.com", "HTTPS", ecs=(addr, prefix))
                            self.assertTrue(r.flags & dns.flags.AD, ub.log()[-2000:])
                            https = next(x for x in r.answer if x.rdtype == dns.rdatatype.HTTPS)
                            self.assertEqual([rd.target.to_text() for rd in
                                              sorted(https, key=lambda rd: rd.priority)], want)
            finally:
                ub.stop()
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()


class Misconfigured(unittest.TestCase):
    """check: the mistakes a zone or config can make around HTTPS."""

    def check(self, config, zone):
        srv = Server(BASE_CONFIG + SITES_TOML + config, {"example.com.zone": zone})
        make_key(srv.path("example.com.pem"))
        make_mmdb(srv.dir, "city")
        try:
            out = srv.tool(os.environ["GEOACME_BIN"], "check", "-c", srv.config_path)
            return out.returncode, out.stdout + out.stderr, srv.config_path, srv.path("example.com.zone")
        finally:
            srv.cleanup()

    def test_hints_on_a_dot_target_warn(self):
        zone = ZONE + 'api IN HTTPS 1 . alpn=h2 ipv4hint=192.0.2.7\napi IN A 192.0.2.7\n' \
                      'api2 IN SVCB 0 api.example.com. port=443\n'
        rc, out, _, zpath = self.check(GEO, zone)
        self.assertEqual(rc, 0, out)
        lines = ZONE.count("\n")
        self.assertIn("%s:%d: warning: api.example.com. HTTPS with target \".\" carries ipv4hint"
                      % (zpath, lines + 1), out)
        self.assertIn("%s:%d: warning: api2.example.com. SVCB: AliasMode (priority 0) with SvcParams"
                      % (zpath, lines + 3), out)
        self.assertIn("ok (1 zone, 2 warnings)", out)
        rc, out, _, _ = self.check(GEO, ZONE)
        self.assertIn("ok (1 zone)", out)
        self.assertNotIn("warning", out)

    def test_static_https_beside_geo_https_is_refused(self):
        rc, out, _, _ = self.check(GEO, ZONE + "www IN HTTPS 1 . alpn=h2\n")
        self.assertEqual(rc, 3, out)
        self.assertIn("www.example.com.: HTTPS records in the zone file conflict with the geo "
                      "name's `https`", out)

    def test_records_at_a_per_site_name_are_refused(self):
        rc, out, cpath, _ = self.check(GEO, ZONE + "paris.sites IN TXT \"mine\"\n")
        self.assertEqual(rc, 3, out)
        line = (BASE_CONFIG + SITES_TOML + GEO).splitlines().index(
            'https = { alpn = ["h3", "h2"], site_names = "sites" }') + 1
        self.assertRegex(out, r"%s:%d:\d+: paris\.sites\.example\.com\. is the per-site name of "
                         r"site \"paris\"" % (cpath, line))

    def test_bad_https_tables(self):
        bad = GEO.replace('https = { alpn = ["h3", "h2"], site_names = "sites" }',
                          'https = { alpn = ["h3", ""], port = 0, ech = "!!", colour = 1 }')
        rc, out, cpath, _ = self.check(bad, ZONE)
        self.assertEqual(rc, 3, out)
        for want in ("expected a non-empty string in 'alpn'", "expected 'site_names' in https",
                     "expected 'port' between 1 and 65535, found 0",
                     "expected a non-empty base64 ECHConfigList for 'ech'", "colour"):
            self.assertRegex(out, r"%s:\d+:\d+: .*%s" % (cpath, __import__("re").escape(want)))
        bad = GEO.replace('site_names = "sites" }', 'site_names = "sites.example.com." }')
        rc, out, _, _ = self.check(bad, ZONE)
        self.assertEqual(rc, 3, out)
        self.assertIn("expected a name relative to the zone for 'site_names'", out)


if __name__ == "__main__":
    main()
