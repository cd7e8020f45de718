# SPDX-License-Identifier: MIT
"""DNSSEC proven with real validators: unbound (with ECS through subnetcache), delv, ldns."""
import os
import random
import re
import socket
import subprocess
import threading
import unittest

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype

from acme_helpers import TsigKey, acme_files, acme_zone_toml, signed_update
from harness import (BASE_CONFIG, SITES_TOML, Server, ds_records, example_zone, geo_toml, main,
                     make_key, make_mmdb, rr_types, rrs, zone_toml)
from resolvers import Unbound

ZONE = example_zone("""mail    IN A    192.0.2.25
@       IN MX   10 mail.example.com.
blog    IN CNAME www.example.com.
a.b     IN TXT  "below an empty non-terminal"
insecure IN NS  ns.insecure.example.com.
ns.insecure IN A 192.0.2.99
""")

CONFIG = SITES_TOML + geo_toml() + zone_toml(body='[[zones.geo]]\nname = "www"\n',
                                            signing_key="example.com.pem")

GEO_CLIENTS = [("192.0.2.0", 26), ("192.0.2.128", 26), ("198.51.100.0", 25), ("203.0.113.64", 28)]
GEO_CLIENTS6 = [("2001:db8:1::", 48), ("2001:db8:5::", 48)]


def start_server():
    """The signed geo zone's server, started, and its DS record."""
    server = Server(BASE_CONFIG + CONFIG, {"example.com.zone": ZONE})
    make_key(server.path("example.com.pem"))
    make_mmdb(server.dir)
    server.start()
    return server, ds_records(server, "example.com")[0]


def ad(msg):
    return bool(msg.flags & dns.flags.AD)


class Validation(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, cls.ds = start_server()
        cls.unbound = Unbound([("example.com", cls.server.port)], [cls.ds], subnet=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.unbound.stop()
        rc = cls.server.stop()
        cls.server.cleanup()
        assert rc == 0, "geoacme exited with %s on SIGTERM" % rc

    def test_ds_matches_dnssec_dsfromkey(self):
        r = self.server.query("example.com", "DNSKEY", dnssec=True)
        dnskey = [l for l in rrs(r, "answer") if " IN DNSKEY " in l]
        self.assertEqual(len(dnskey), 1)
        self.assertIn(" DNSKEY 257 3 13 ", dnskey[0])
        out = subprocess.run(["dnssec-dsfromkey", "-2", "-f", "-", "example.com"],
                             input=dnskey[0] + "\n", capture_output=True, text=True, check=True)
        self.assertEqual(out.stdout.split(), self.ds.split())
        self.assertRegex(self.ds, r"^example\.com\. IN DS \d+ 13 2 [0-9A-F]{64}$")

    def test_geo_answers_validate_for_several_subnets(self):
        for addr, prefix in GEO_CLIENTS:
            with self.subTest(client=addr):
                r = self.unbound.query("www.example.com", "A", ecs=(addr, prefix))
                self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR", self.unbound.log())
                self.assertTrue(ad(r), "no AD for %s" % addr)
                self.assertEqual(rr_types(r, "answer"), ["A", "RRSIG"])
        for addr, prefix in GEO_CLIENTS6:
            with self.subTest(client=addr):
                r = self.unbound.query("www.example.com", "AAAA", ecs=(addr, prefix))
                self.assertTrue(ad(r), "no AD for %s" % addr)
                self.assertEqual(rr_types(r, "answer"), ["AAAA", "RRSIG"])

    def test_different_subnets_get_different_validated_answers(self):
        eu = self.unbound.query("www.example.com", "A", ecs=("192.0.2.0", 26))
        us = self.unbound.query("www.example.com", "A", ecs=("192.0.2.128", 26))
        self.assertTrue(ad(eu) and ad(us))
        self.assertEqual(sorted(r.to_text() for r in eu.answer[0]), ["116.203.18.48", "45.90.160.60"])
        self.assertEqual([r.to_text() for r in us.answer[0]], ["5.161.44.145"])

    def test_negative_answers_validate(self):
        cases = [("nope.example.com", "A", "NXDOMAIN"), ("mail.example.com", "AAAA", "NOERROR"),
                 ("b.example.com", "TXT", "NOERROR"), ("www.example.com", "MX", "NOERROR"),
                 ("zzz.nope.example.com", "A", "NXDOMAIN"), ("insecure.example.com", "DS", "NOERROR")]
        for name, t, rcode in cases:
            with self.subTest(name=name, type=t):
                r = self.unbound.query(name, t)
                self.assertEqual(dns.rcode.to_text(r.rcode()), rcode)
                self.assertTrue(ad(r), "no AD for %s %s\n%s" % (name, t, self.unbound.log()[-2000:]))
                self.assertEqual(r.answer, [])

    def test_random_nxdomain_proofs_validate(self):
        # Names sorting everywhere in the chain: before, between and after
        # existing names, below them, with digits and hyphens.
        rnd = random.Random(11)
        alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-"
        for _ in range(25):
            label = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(1, 12))).strip("-") or "x"
            parent = rnd.choice(["", "mail.", "a.b.", "zz.", "www."])
            name = "%s.%sexample.com" % (label, parent)
            with self.subTest(name=name):
                r = self.unbound.query(name, "A")
                if r.answer:
                    continue   # an existing name, by chance
                self.assertTrue(ad(r), "no AD for %s" % name)

    def test_other_positive_answers_validate(self):
        for name, t in (("example.com", "SOA"), ("example.com", "DNSKEY"), ("example.com", "MX"),
                        ("blog.example.com", "A"), ("a.b.example.com", "TXT"), ("example.com", "NS")):
            with self.subTest(name=name, type=t):
                r = self.unbound.query(name, t)
                self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
                self.assertTrue(ad(r), "no AD for %s %s" % (name, t))

    def test_delv_fully_validated(self):
        ds = self.ds.split()
        anchors = os.path.join(self.server.dir, "anchors.conf")
        with open(anchors, "w") as f:
            f.write('trust-anchors { example.com. static-ds %s %s %s "%s"; };\n' % tuple(ds[3:7]))
        for name, t in (("www.example.com", "A"), ("www.example.com", "AAAA"),
                        ("nope.example.com", "A"), ("mail.example.com", "AAAA")):
            with self.subTest(name=name, type=t):
                out = subprocess.run(["delv", "@127.0.0.1", "-p", str(self.unbound.port), "-a", anchors,
                                      "+root=example.com", name, t], capture_output=True, text=True,
                                     timeout=30)
                self.assertIn("fully validated", out.stdout + out.stderr, out.stdout + out.stderr)

    def test_ldns_verifies_captured_answers(self):
        r = self.server.query("example.com", "DNSKEY", dnssec=True)
        keyfile = os.path.join(self.server.dir, "dnskey.txt")
        with open(keyfile, "w") as f:
            f.write("\n".join(l for l in rrs(r, "answer") if " IN DNSKEY " in l) + "\n")
        for name, t, ecs in (("www.example.com", "A", ("192.0.2.64", 26)),
                             ("www.example.com", "AAAA", ("2001:db8:5::", 48)),
                             ("nope.example.com", "A", None), ("blog.example.com", "A", None),
                             ("b.example.com", "A", None), ("example.com", "NS", None)):
            with self.subTest(name=name, type=t):
                resp = self.server.query(name, t, dnssec=True, ecs=ecs)
                path = os.path.join(self.server.dir, "resp.bin")
                with open(path, "wb") as f:
                    f.write(resp.to_wire())
                out = subprocess.run([os.environ["LDNS_VERIFY"], keyfile, path], capture_output=True,
                                     text=True)
                self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
                self.assertNotIn("BAD", out.stdout)

    def test_do0_has_no_dnssec_records(self):
        for name, t in (("www.example.com", "A"), ("nope.example.com", "A"), ("example.com", "SOA")):
            r = self.server.query(name, t, dnssec=False)
            for sec in ("answer", "authority", "additional"):
                self.assertFalse({"RRSIG", "NSEC"} & set(rr_types(r, sec)))

    def test_random_names_do_not_make_the_server_sign(self):
        # ECDSA signatures are randomised: signing per query would give a new
        # signature every time.  Pre-signed NSEC records give the same bytes.
        sigs = set()
        rnd = random.Random(7)
        for _ in range(60):
            label = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(12))
            r = self.server.query(label + ".example.com", "A", dnssec=True)
            self.assertEqual(dns.rcode.to_text(r.rcode()), "NXDOMAIN")
            for rrset in r.authority:
                if rrset.rdtype == dns.rdatatype.RRSIG:
                    for rd in rrset:
                        sigs.add(rd.signature)
        # SOA + at most one NSEC per name in the zone.
        self.assertLessEqual(len(sigs), 12)
        self.assertGreater(len(sigs), 1)


ACME_ZONE = """$ORIGIN acme.example.net.
$TTL 3600
@ IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 60
@ IN NS ns1.example.com.
"""

ACME_KEY = TsigKey("update.acme.example.net.", "hmac-sha256", b"secret-secret-secret-secret-1234")
ACME_CONFIG = acme_zone_toml("acme.example.net", [ACME_KEY], signing_key="acme.pem")


class AcmeUpdates(unittest.TestCase):
    """A TXT record added by a TSIG-signed UPDATE validates, and so does its removal."""

    def test_updated_txt_validates(self):
        srv = Server(BASE_CONFIG + ACME_CONFIG, acme_files(ACME_ZONE, [ACME_KEY]))
        make_key(srv.path("acme.pem"))
        try:
            srv.start()
            ub = Unbound([("acme.example.net", srv.port)], ds_records(srv, "acme.example.net")).start()
            try:
                r = signed_update(srv, "acme.example.net", ACME_KEY,
                                  add=[("example.com", 120, "TXT", '"token-123"')])
                self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
                r = ub.query("example.com.acme.example.net", "TXT")
                self.assertTrue(ad(r), ub.log()[-2000:])
                # (unbound runs with cache-max-ttl 0, so the TTL it relays is 0)
                self.assertEqual(rrs(r, "answer")[0].split(" ", 2)[2], 'IN TXT "token-123"')
                sig = r.answer[1][0]
                self.assertEqual((sig.type_covered, sig.algorithm, sig.labels, sig.original_ttl),
                                 (dns.rdatatype.TXT, 13, 5, 120))
                # The name's NSEC neighbours were re-signed: denial still validates.
                r = ub.query("other.acme.example.net", "TXT")
                self.assertEqual(dns.rcode.to_text(r.rcode()), "NXDOMAIN")
                self.assertTrue(ad(r))
                r = signed_update(srv, "acme.example.net", ACME_KEY,
                                  delete=[("example.com", "TXT", '"token-123"')])
                self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
                r = ub.query("example.com.acme.example.net", "TXT")
                self.assertEqual(dns.rcode.to_text(r.rcode()), "NXDOMAIN")
                self.assertTrue(ad(r))
            finally:
                ub.stop()
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()


def grid_sites(n):
    """n sites spread over the globe, each with an IPv4 address."""
    out, sites = [], []
    for k in range(n):
        lat = -60 + (k * 37) % 121
        lon = -180 + (k * 53) % 360
        addr = "10.%d.%d.1" % (k // 250, k % 250)
        sites.append((lat, lon, addr))
        out.append('[[sites]]\nname = "s%d"\nipv4 = "%s"\nlatitude = %d\nlongitude = %d\n'
                   % (k, addr, lat, lon))
    return "".join(out), sites


def miles(a, b):
    import math
    la1, lo1, la2, lo2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return 2 * 3958.8 * math.asin(math.sqrt(h))


class ManySites(unittest.TestCase):
    """Beyond GEO_PRESIGN_MAX sites, pairs are signed on first use: still validated."""

    def test_pairs_signed_on_first_use_validate(self):
        toml, sites = grid_sites(80)
        config = toml + CONFIG[CONFIG.index("[geo]"):]
        srv = Server(BASE_CONFIG + config, {"example.com.zone": ZONE})
        make_key(srv.path("example.com.pem"))
        make_mmdb(srv.dir)
        try:
            srv.start()
            # Only singles (80) are signed ahead for the geo name, not 3160 pairs.
            built = re.findall(r"example\.com: (\d+) RRsets signed", srv.log())
            self.assertEqual(len(built), 1)
            self.assertLess(int(built[0]), 120, srv.log())
            ds = subprocess.run([os.environ["GEOACME_BIN"], "ds", "-c", srv.config_path, "example.com"],
                                capture_output=True, text=True, check=True).stdout.strip()
            ub = Unbound([("example.com", srv.port)], [ds], subnet=True).start()
            try:
                places = {"192.0.2.0": (52.37, 4.90), "192.0.2.128": (41.88, -87.63),
                          "198.51.100.0": (-34.60, -58.38)}
                for addr, where in places.items():
                    with self.subTest(client=addr):
                        ranked = sorted(sites, key=lambda s: miles(where, s))
                        d1, d2 = miles(where, ranked[0]), miles(where, ranked[1])
                        single = d2 > 2 * d1 and d2 - d1 > 1000
                        want = [ranked[0][2]] if single else [ranked[0][2], ranked[1][2]]
                        prefix = 26 if "192" in addr else 25
                        for _ in range(2):   # first use signs, the second reuses
                            r = ub.query("www.example.com", "A", ecs=(addr, prefix))
                            self.assertTrue(ad(r), ub.log()[-2000:])
                            # (unbound may rotate the records: order is checked below)
                            self.assertEqual(sorted(rd.to_text() for rd in r.answer[0]), sorted(want))
                        r = srv.query("www.example.com", "A", dnssec=True, ecs=(addr, prefix))
                        self.assertEqual([rd.to_text() for rd in r.answer[0]], want)
                        self.assertEqual(rr_types(r, "answer"), ["A", "RRSIG"])
            finally:
                ub.stop()
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()


class PublishCds(unittest.TestCase):
    """publish_cds = true: CDS and CDNSKEY at the apex, signed, matching DS and DNSKEY."""

    def test_cds_and_cdnskey(self):
        config = CONFIG.replace('file = "example.com.zone"\n',
                                'file = "example.com.zone"\npublish_cds = true\n', 1)
        srv = Server(BASE_CONFIG + config, {"example.com.zone": ZONE})
        make_key(srv.path("example.com.pem"))
        make_mmdb(srv.dir)
        try:
            srv.start()
            ds = subprocess.run([os.environ["GEOACME_BIN"], "ds", "-c", srv.config_path, "example.com"],
                                capture_output=True, text=True, check=True).stdout.split()
            cds = srv.query("example.com", "CDS", dnssec=True)
            self.assertEqual(rr_types(cds, "answer"), ["CDS", "RRSIG"])
            self.assertEqual(cds.answer[0][0].to_text().upper().split(), [x.upper() for x in ds[3:7]])
            cdnskey = srv.query("example.com", "CDNSKEY", dnssec=True)
            dnskey = srv.query("example.com", "DNSKEY", dnssec=True)
            self.assertEqual(cdnskey.answer[0][0].to_text(), dnskey.answer[0][0].to_text())
            ub = Unbound([("example.com", srv.port)], [" ".join(ds)]).start()
            try:
                for t in ("CDS", "CDNSKEY"):
                    self.assertTrue(ad(ub.query("example.com", t)), t)
            finally:
                ub.stop()
            # A reload that keeps the key reuses every signature: nothing is signed.
            import signal
            srv.send_signal(signal.SIGHUP)
            srv.wait_log(r"reloaded")
            builds = re.findall(r"example\.com: (\d+) RRsets signed \((\d+) new signatures, (\d+) reused\)",
                                srv.log())
            self.assertEqual(len(builds), 2, srv.log())
            self.assertEqual(builds[1][1], "0")
            self.assertEqual(builds[1][2], builds[1][0])
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()


class Failures(unittest.TestCase):
    """Validation must be able to fail: a wrong anchor, a tampered answer."""

    @classmethod
    def setUpClass(cls):
        cls.server, cls.ds = start_server()

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        cls.server.cleanup()
        assert rc == 0, "geoacme exited with %s on SIGTERM" % rc

    def test_wrong_trust_anchor_fails(self):
        parts = self.ds.split()
        digest = parts[-1]
        parts[-1] = ("0" if digest[0] != "0" else "1") + digest[1:]
        ub = Unbound([("example.com", self.server.port)], [" ".join(parts)]).start()
        try:
            r = ub.query("mail.example.com", "A")
            self.assertEqual(dns.rcode.to_text(r.rcode()), "SERVFAIL")
        finally:
            ub.stop()

    def test_tampered_answer_fails(self):
        # A UDP proxy between unbound and geoacme that changes 192.0.2.25 to
        # 192.0.2.26 in every response (TCP is not proxied: unbound uses UDP).
        proxy = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        proxy.bind(("127.0.0.1", 0))
        proxy.settimeout(0.2)
        stop = threading.Event()

        def run():
            while not stop.is_set():
                try:
                    data, client = proxy.recvfrom(65535)
                except socket.timeout:
                    continue
                up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                up.settimeout(2)
                up.sendto(data, ("127.0.0.1", self.server.port))
                try:
                    reply = up.recv(65535)
                except socket.timeout:
                    continue
                finally:
                    up.close()
                proxy.sendto(reply.replace(bytes([192, 0, 2, 25]), bytes([192, 0, 2, 26])), client)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        ub = Unbound([("example.com", proxy.getsockname()[1])], [self.ds]).start()
        try:
            r = ub.query("mail.example.com", "A")
            self.assertEqual(dns.rcode.to_text(r.rcode()), "SERVFAIL")
            r = ub.query("ns1.example.com", "A")   # untouched data still validates
            self.assertTrue(ad(r))
        finally:
            ub.stop()
            stop.set()
            t.join()
            proxy.close()


if __name__ == "__main__":
    main()
