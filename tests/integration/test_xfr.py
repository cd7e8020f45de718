# SPDX-License-Identifier: MIT
"""Zone transfers out to real secondaries: Knot (knotd), NSD and BIND
(named) each take a signed static zone with a geo name, a signed ACME zone
and a large zone from geoacme by AXFR with TSIG, are told of each change by
NOTIFY, and serve copies that are byte-identical (sorted) to the primary's
and that ldns-verify-zone accepts.  Also: refusals without the key or with
a key not allowed to transfer, the IXFR answers geoacme gives, multi-message
TSIG checked by dnspython, and kill -9 of a secondary and of the primary."""
import base64
import os
import re
import subprocess
import time
import unittest
import urllib.request

import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype
import dns.rrset
import dns.tsig
import dns.tsigkeyring
import dns.xfr
import dns.zone

from acme_helpers import TsigKey, acme_zone_toml, ixfr_soas, serial, signed_update
from harness import BASE_CONFIG, SITES_TOML, Server, free_port, main, make_key, make_mmdb
from secondaries import ALL, sorted_records

XFR_KEY = "xfr.example."
XFR_SECRET = base64.b64encode(b"transfer-secret-for-the-secondaries").decode()
UPDATE_KEY = "update.acme.example."
UPDATE_SECRET = base64.b64encode(b"update-secret-for-lego-only").decode()
LEGO = TsigKey(UPDATE_KEY, "hmac-sha256", b"update-secret-for-lego-only")
XFR = TsigKey(XFR_KEY, "hmac-sha256", b"transfer-secret-for-the-secondaries")

STATIC = """$ORIGIN example.com.
$TTL 3600
@       IN SOA  ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 300
@       IN NS   ns1.example.com.
@       IN NS   ns2.example.com.
ns1     IN A    192.0.2.53
ns2     IN A    192.0.2.54
mail    IN A    192.0.2.25
@       IN MX   10 mail.example.com.
blog    IN CNAME www.example.com.
insecure IN NS  ns.insecure.example.com.
ns.insecure IN A 192.0.2.99
"""

ACME = """$ORIGIN acme.example.
$TTL 300
@       IN SOA ns1.example.com. hostmaster.example.com. 100 3600 600 86400 60
@       IN NS  ns1.example.com.
@       IN NS  ns2.example.com.
"""

# Big enough for many messages (each about 16 KB): multi-message TSIG.
BIG = "$ORIGIN big.example.\n$TTL 300\n" \
      "@ IN SOA ns1.example.com. hostmaster.example.com. 7 3600 600 86400 60\n" \
      "@ IN NS ns1.example.com.\n" + \
      "".join('n%04d IN TXT "%s"\n' % (i, "x" * 100) for i in range(1500))

CONFIG = SITES_TOML + """
[server]
http_listen = ["127.0.0.1:0"]

[geo]
databases = ["city.mmdb"]
default_location = [48.86, 2.35]

[[zones]]
zone = "example.com"
zone_type = "Primary"
axfr_policy = "AllowSigned"
axfr_from = ["127.0.0.0/8", "::1"]
notify = [{notify}]
[[zones.geo]]
name = "www"
https = {{ alpn = ["h2"], site_names = "sites" }}
[[zones.keys]]
algorithm = "ECDSAP256SHA256"
key_path = "example.com.pem"
[zones.stores]
type = "file"
zone_path = "example.com.zone"
""" + XFR.toml() + """
""" + acme_zone_toml(
    "acme.example",
    [TsigKey(UPDATE_KEY, "hmac-sha256", LEGO.secret, policy="allow_axfr = false\n"),
     TsigKey(XFR_KEY, "hmac-sha256", XFR.secret,
             policy='allow_types = ["A"]\nallow_names = ["nothing-at-all"]\n')],
    signing_key="acme.pem",
    zone_lines='axfr_policy = "AllowSigned"\nixfr_max_changes = 4\nnotify = [{notify}]\n') + """

[[zones]]
zone = "big.example"
zone_type = "Primary"
file = "big.zone"
allow_axfr = true
notify = [{notify}]

[[zones]]
zone = "closed.example"
zone_type = "Primary"
file = "closed.zone"
"""

CLOSED = """$ORIGIN closed.example.
@ 300 IN SOA ns1.example.com. hostmaster.example.com. 1 3600 600 86400 60
@ 300 IN NS ns1.example.com.
"""

ZONES = ["example.com", "acme.example", "big.example"]


def keyring():
    return dns.tsigkeyring.from_text({XFR_KEY: ("hmac-sha256", XFR_SECRET),
                                      UPDATE_KEY: ("hmac-sha256", UPDATE_SECRET)})


class Transfers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        ports = [free_port() for _ in ALL]
        notify = ", ".join('"127.0.0.1:%d"' % p for p in ports)
        cfg = BASE_CONFIG + CONFIG.format(notify=notify)
        cls.server = Server(cfg, {"example.com.zone": STATIC, "acme.zone": ACME, "big.zone": BIG,
                                  "closed.zone": CLOSED})
        make_key(cls.server.path("example.com.pem"))
        make_key(cls.server.path("acme.pem"))
        make_mmdb(cls.server.dir)
        cls.server.start()
        cls.secondaries = []
        try:
            for kind, port in zip(ALL, ports):
                sec = kind(ZONES, cls.server.port, key=(XFR_KEY, "hmac-sha256", XFR_SECRET),
                           port=port)
                cls.secondaries.append(sec)
                sec.start()
            for sec in cls.secondaries:
                for z in ZONES:
                    sec.wait_serial(z, cls.primary_serial(z))
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for sec in getattr(cls, "secondaries", []):
            sec.cleanup()
        rc = cls.server.stop()
        log = cls.server.log()
        cls.server.cleanup()
        if rc != 0:
            raise AssertionError("geoacme exited with %s:\n%s" % (rc, log[-3000:]))

    @classmethod
    def primary_serial(cls, zone):
        r = cls.server.query(zone, "SOA")
        return r.answer[0][0].serial

    def primary_axfr(self, zone):
        out = subprocess.run(["kdig", "@127.0.0.1", "-p", str(self.server.port), "-y",
                              "hmac-sha256:%s:%s" % (XFR_KEY, XFR_SECRET), "+nocomments",
                              "+nostats", "+noheader", "+noquestion", zone, "AXFR"],
                             capture_output=True, text=True, timeout=20)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout

    def update(self, name, rdtype, data=None, delete=False):
        r = signed_update(self.server, "acme.example.", LEGO,
                          delete=[(name, rdtype)] if delete else (),
                          add=() if delete else [(name, 300, rdtype, data)], tcp=True)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")

    def assert_copies_match(self, zone):
        want = sorted_records(self.primary_axfr(zone))
        self.assertGreater(len(want), 3)
        serial = self.primary_serial(zone)
        for sec in self.secondaries:
            with self.subTest(secondary=sec.NAME, zone=zone):
                # Compared at the same serial: an UPDATE of an earlier test
                # may still be on its way (NOTIFY, then the transfer).
                sec.wait_serial(zone, serial)
                got = sorted_records(sec.axfr_text(zone))
                self.assertEqual(got, want, "%s's copy of %s differs" % (sec.NAME, zone))

    def ldns_verify(self, text, zone):
        path = os.path.join(self.server.dir, "verify-%s.zone" % zone)
        # ldns-verify-zone wants the SOA first and once.
        lines = [l for l in text.splitlines() if len(l.split()) > 3 and l.split()[3] != "TSIG"]
        soa = [l for l in lines if l.split()[3] == "SOA"][:1]
        rest = [l for l in lines if l.split()[3] != "SOA"]
        with open(path, "w") as f:
            f.write("\n".join(soa + rest) + "\n")
        return subprocess.run(["ldns-verify-zone", path], capture_output=True, text=True,
                              timeout=30)

    # --- the copies ---

    def test_secondaries_hold_identical_copies(self):
        for zone in ZONES:
            self.assert_copies_match(zone)

    def test_copies_verify_with_ldns(self):
        for zone in ("example.com", "acme.example"):
            for sec in self.secondaries:
                with self.subTest(secondary=sec.NAME, zone=zone):
                    out = self.ldns_verify(sec.axfr_text(zone), zone)
                    self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
                    self.assertIn("Zone is verified and complete", out.stdout + out.stderr)

    def test_secondaries_answer_validated_data_without_the_key(self):
        # The secondaries serve the signed answers they received.
        for sec in self.secondaries:
            with self.subTest(secondary=sec.NAME):
                r = sec.query("mail.example.com", "A")
                types = sorted(dns.rdatatype.to_text(rr.rdtype) for rr in r.answer)
                self.assertEqual(types, ["A", "RRSIG"])

    def test_expire_longer_than_signature_refresh_is_reported(self):
        # example.com: expire 14 days > signature_refresh 7 days; acme.example: 1 day.
        log = self.server.log()
        self.assertRegex(log, r"example\.com: the SOA expire \(1209600 s\) is longer than "
                              r"signature_refresh \(604800 s\)")
        self.assertNotIn("acme.example: the SOA expire", log)

    def test_geo_name_transfers_its_fallback_set(self):
        # default_location is Paris: the rule answers Paris and Nuremberg,
        # whatever the health checks say; a stock secondary serves that set.
        for sec in self.secondaries:
            with self.subTest(secondary=sec.NAME):
                a = sec.query("www.example.com", "A")
                self.assertEqual(sorted(rd.to_text() for rd in a.answer[0]),
                                 ["116.203.18.48", "45.90.160.60"])
                self.assertEqual(a.answer[0].ttl, 3600)
                aaaa = sec.query("www.example.com", "AAAA")
                self.assertEqual(sorted(rd.to_text() for rd in aaaa.answer[0]),
                                 ["2a01:4f8:1c0c:5eb5::1", "2a0c:8881:5:100::1"])
                # HTTPS too (the name's NSEC lists it): the same sites, nearest first.
                h = sec.query("www.example.com", "HTTPS")
                https = [rr for rr in h.answer if rr.rdtype == dns.rdatatype.HTTPS][0]
                self.assertEqual(sorted(rd.to_text() for rd in https),
                                 ['1 paris.sites.example.com. alpn="h2"',
                                  '2 nuremberg.sites.example.com. alpn="h2"', '3 . alpn="h2"'])

    # --- NOTIFY and changes ---

    def test_update_reaches_every_secondary_by_notify(self):
        before = self.primary_serial("acme.example")
        # Each secondary holds `before` first: one still behind would
        # rightly be sent more than the difference.
        for sec in self.secondaries:
            sec.wait_serial("acme.example", before)
        t0 = time.time()
        name = "_acme-challenge.site%d.acme.example." % before
        self.update(name, "TXT", '"token-%d"' % before)
        serial = self.primary_serial("acme.example")
        self.assertGreater(serial, before)
        took = {}
        deadline = time.time() + 30
        while len(took) < len(self.secondaries) and time.time() < deadline:
            for sec in self.secondaries:
                if sec.NAME not in took and sec.serial("acme.example") == serial:
                    took[sec.NAME] = time.time() - t0
            time.sleep(0.005)
        for sec in self.secondaries:
            sec.wait_serial("acme.example", serial)
        print("\nUPDATE -> serving on each secondary (s): %s" %
              ", ".join("%s %.3f" % kv for kv in sorted(took.items())))
        for sec in self.secondaries:
            r = sec.query(name, "TXT")
            self.assertEqual(r.answer[0][0].to_text(), '"token-%d"' % before)
        self.server.wait_log(r"NOTIFY serial %d answered by 127\.0\.0\.1:%d" %
                             (serial, self.secondaries[0].port))
        # Each secondary asked for an IXFR and got the difference alone.
        # NSD alone may ask for the whole zone instead, by its own choice
        # (NSD 4.6's xfrd asks AXFR when it holds no usable SOA of the zone,
        # as after it judges that a reload failed: seen twice in CI under
        # load, its reason in its log, printed below).  It
        # must then have asked AXFR (our log says which it asked), and must
        # have taken IXFRs earlier in this run: one that never does fails.
        sizes = []
        for sec in self.secondaries:
            # Logged once the stream is sent: a secondary may serve the
            # serial a moment before (a loaded machine).
            ixfr = (r"IXFR of acme\.example\. \(serial %d\) to %s: (\d+) records in "
                    r"(\d+) messages, (\d+) bytes" % (serial, re.escape(sec.SOURCE)))
            axfr = (r"AXFR of acme\.example\. \(serial %d\) to %s: (\d+) records in "
                    % (serial, re.escape(sec.SOURCE)))
            try:
                self.server.wait_log(ixfr if sec.NAME != "nsd" else "(?:%s|%s)" % (ixfr, axfr),
                                     timeout=10)
            except AssertionError:
                # The whole log is longer than ctest keeps: what this
                # secondary and this serial got, and the secondary's view.
                lines = [l for l in self.server.log_since_start().splitlines()
                         if sec.SOURCE in l or "serial %d" % serial in l]
                self.fail("no IXFR line for %s (%s):\n%s\n--- %s's log (end) ---\n%s"
                          % (sec.NAME, sec.SOURCE, "\n".join(lines[-40:]), sec.NAME,
                             "\n".join(sec.log().splitlines()[-30:])))
            log = self.server.log_since_start()
            m = re.search(ixfr, log)
            if m is None:
                # NSD's own choice (checked above): it asked AXFR, and
                # IXFRs before; say why it did, from its log.
                self.assertRegex(log, r"AXFR of acme\.example\. \(serial %d\) to %s \(key"
                                 % (serial, re.escape(sec.SOURCE)))
                self.assertRegex(log, r"IXFR of acme\.example\. \(serial \d+\) to %s: \d+ "
                                 r"records" % re.escape(sec.SOURCE))
                print("\n%s asked AXFR for serial %d; its log:\n%s" % (
                    sec.NAME, serial, "\n".join(sec.log().splitlines()[-15:])))
                sizes.append("%s AXFR (its choice)" % sec.NAME)
                continue
            sizes.append("%s %s records %s bytes" % (sec.NAME, m.group(1), m.group(3)))
            self.assertEqual(int(m.group(1)), 14)
        print("IXFR after one UPDATE: " + ", ".join(sizes))
        self.assertRegex(self.secondaries[0].log(), r"\[acme\.example\.\] IXFR, incoming, "
                         r"remote 127\.0\.0\.1@\d+, finished")
        # The last start's port (test_kill9... restarts the primary).
        port = re.findall(r"http: listening on \S+ \(port (\d+)\)", self.server.log())[-1]
        with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=5) as r:
            text = r.read().decode()
        ixfr = re.search(r'(?m)^geoacme_transfers_out_total\{result="ixfr"\} (\d+)$', text)
        self.assertGreaterEqual(int(ixfr.group(1)), 3, text)   # since the last start
        answered = re.search(r"(?m)^geoacme_notify_answered_total (\d+)$", text)
        self.assertGreaterEqual(int(answered.group(1)), 3)
        self.assert_copies_match("acme.example")

    # Named to run last (unittest runs a class's tests in name order): the
    # primary's restart here re-signs the zone, which every secondary then
    # copies whole (doc/operations.md, "IXFR history across restarts"), and
    # NSD 4.6 was seen asking its next transfers by AXFR after that, which
    # test_update_reaches_every_secondary_by_notify is not about.
    def test_zz_kill9_secondary_then_primary_converge(self):
        knot = self.secondaries[0]
        knot.kill9()
        self.update("_acme-challenge.k9.acme.example.", "TXT", '"while-knot-was-down"')
        serial = self.primary_serial("acme.example")
        knot.start()
        knot.wait_serial("acme.example", serial)
        # The primary dies; what it acknowledged survives and still propagates.
        self.update("_acme-challenge.k9b.acme.example.", "TXT", '"before-primary-kill"')
        serial = self.primary_serial("acme.example")
        for sec in self.secondaries:
            sec.wait_serial("acme.example", serial)
        port = self.server.port
        self.server.kill9()
        # The same port: the secondaries know the primary there.
        cfg_path = self.server.config_path
        with open(cfg_path) as f:
            cfg = f.read()
        with open(cfg_path, "w") as f:
            f.write(cfg.replace("listen_port = 0", "listen_port = %d" % port, 1))
        try:
            self.server.start()
        finally:
            with open(cfg_path, "w") as f:
                f.write(cfg)
        # Nothing acknowledged was lost; the restart signed anew, so the
        # serial moved on (RFC 1982 newer) and the secondaries follow.
        r = self.server.query("_acme-challenge.k9b.acme.example.", "TXT")
        self.assertEqual(r.answer[0][0].to_text(), '"before-primary-kill"')
        self.assertEqual(self.primary_serial("acme.example"), serial + 1)
        self.update("_acme-challenge.k9c.acme.example.", "TXT", '"after-primary-restart"')
        for zone in ZONES:
            serial = self.primary_serial(zone)
            for sec in self.secondaries:
                sec.wait_serial(zone, serial)
        for zone in ZONES:
            self.assert_copies_match(zone)

    # --- access ---

    def kdig_axfr(self, zone, *args):
        return subprocess.run(["kdig", "@127.0.0.1", "-p", str(self.server.port), *args, zone,
                               "AXFR"], capture_output=True, text=True, timeout=20)

    def test_refused_without_the_key(self):
        for zone in ("example.com", "acme.example"):
            with self.subTest(zone=zone):
                out = self.kdig_axfr(zone)
                self.assertIn("server replied with error 'REFUSED'", out.stdout + out.stderr)
                self.assertNotIn(" SOA ", out.stdout.replace("\t", " "))
        self.server.wait_log(r"AXFR of acme\.example\. from 127\.0\.0\.1 \(key none\) refused: "
                             r"not signed with a TSIG key of the zone")

    def test_refused_with_a_key_not_allowed_to_transfer(self):
        # The update key has allow_axfr = false: BADKEY (dnspython raises it).
        with self.assertRaises(dns.tsig.PeerBadKey):
            dns.query.tcp(self.axfr_query("acme.example", UPDATE_KEY), "127.0.0.1",
                          port=self.server.port, timeout=5)
        self.server.wait_log(r"AXFR of acme\.example\. from 127\.0\.0\.1 refused: TSIG key "
                             r"update\.acme\.example\.: unknown key, or not allowed")

    def test_refused_with_a_wrong_secret(self):
        out = self.kdig_axfr("example.com", "-y", "hmac-sha256:%s:%s" %
                             (XFR_KEY, base64.b64encode(b"wrong").decode()))
        self.assertNotIn(" SOA ", out.stdout.replace("\t", " "))
        self.assertIn("server replied with error 'BADSIG'", out.stdout + out.stderr)

    def test_deny_is_the_default(self):
        for args in ((), ("-y", "hmac-sha256:%s:%s" % (XFR_KEY, XFR_SECRET))):
            out = self.kdig_axfr("closed.example", *args)
            self.assertIn("server replied with error 'REFUSED'", out.stdout + out.stderr)
        self.server.wait_log(r"AXFR of closed\.example\. from 127\.0\.0\.1 \(key xfr\.example\.\) "
                             r"refused: axfr_policy is Deny")

    def test_axfr_over_udp_refused(self):
        q = dns.message.make_query("big.example", "AXFR")
        r = dns.query.udp(q, "127.0.0.1", port=self.server.port, timeout=3)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "REFUSED")

    def axfr_query(self, zone, key, rdtype="AXFR", serial=None):
        q = dns.message.make_query(zone, rdtype)
        if serial is not None:
            q.authority.append(dns.rrset.from_text(zone + ".", 0, "IN", "SOA",
                                                   ". . %d 0 0 0 0" % serial))
        q.use_tsig(keyring(), keyname=dns.name.from_text(key), algorithm=dns.tsig.HMAC_SHA256)
        return q

    # --- IXFR answers and multi-message TSIG ---

    def test_ixfr_when_current_is_the_soa_alone(self):
        serial = self.primary_serial("example.com")
        for tcp in (False, True):
            with self.subTest(tcp=tcp):
                q = self.axfr_query("example.com", XFR_KEY, "IXFR", serial)
                fn = dns.query.tcp if tcp else dns.query.udp
                r = fn(q, "127.0.0.1", port=self.server.port, timeout=5)
                self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
                self.assertEqual(len(r.answer), 1)
                self.assertEqual(r.answer[0].rdtype, dns.rdatatype.SOA)
                self.assertEqual(r.answer[0][0].serial, serial)
                self.assertTrue(r.had_tsig)

    def test_ixfr_over_udp_is_the_soa_alone(self):
        q = self.axfr_query("example.com", XFR_KEY, "IXFR", 1)
        r = dns.query.udp(q, "127.0.0.1", port=self.server.port, timeout=5)
        self.assertEqual([rr.rdtype for rr in r.answer], [dns.rdatatype.SOA])

    def test_ixfr_from_a_newer_or_unordered_serial_is_the_soa_alone(self):
        # RFC 1995 2 and RFC 1982 3.2: a client ahead of us, or exactly 2^31
        # away (no order), gets our SOA alone; one behind by the wrap gets data.
        serial = self.primary_serial("example.com")
        for client in ((serial + 5) % 2 ** 32, (serial + 2 ** 31) % 2 ** 32):
            with self.subTest(client=client):
                q = self.axfr_query("example.com", XFR_KEY, "IXFR", client)
                r = dns.query.tcp(q, "127.0.0.1", port=self.server.port, timeout=5)
                self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
                self.assertEqual([dns.rdatatype.to_text(rr.rdtype) for rr in r.answer], ["SOA"])
                self.assertEqual(r.answer[0][0].serial, serial)
        behind = (serial + 2 ** 31 + 1) % 2 ** 32   # 2^31 - 1 behind, across the wrap
        q = self.axfr_query("example.com", XFR_KEY, "IXFR", behind)
        r = dns.query.tcp(q, "127.0.0.1", port=self.server.port, timeout=5,
                          one_rr_per_rrset=True)
        soas = [rr[0].serial for rr in r.answer if rr.rdtype == dns.rdatatype.SOA]
        self.assertEqual(soas, [serial, serial])   # not in the history: the whole zone
        self.assertGreater(len(r.answer), 2)

    def ixfr_into(self, z, serial):
        """Applies an IXFR from `serial` to a dnspython zone (dnspython checks
        the IXFR framing and every message's TSIG)."""
        q, _ = dns.xfr.make_query(z, serial=serial, keyring=keyring(),
                                  keyname=dns.name.from_text(XFR_KEY),
                                  keyalgorithm=dns.tsig.HMAC_SHA256)
        dns.query.inbound_xfr("127.0.0.1", z, q, port=self.server.port, timeout=10)

    def axfr_zone(self, zone):
        z = dns.zone.Zone(zone + ".")
        dns.query.inbound_xfr("127.0.0.1", z, port=self.server.port, timeout=10,
                              query=self.axfr_query(zone, XFR_KEY))
        return z

    def test_ixfr_condenses_several_changes(self):
        z = self.axfr_zone("acme.example")
        s0 = z.get_soa().serial
        self.update("_acme-challenge.cond.acme.example.", "TXT", '"first"')
        self.update("_acme-challenge.cond.acme.example.", "TXT", '"second"')
        self.update("_acme-challenge.cond.acme.example.", "TXT", delete=True)
        self.update("_acme-challenge.cond2.acme.example.", "TXT", '"stays"')
        serial = self.primary_serial("acme.example")
        self.ixfr_into(z, s0)
        self.assertEqual(z.get_soa().serial, serial)
        self.assertEqual(sorted(z.to_text().splitlines()),
                         sorted(self.axfr_zone("acme.example").to_text().splitlines()))
        # One condensed difference: what was added and deleted again is not sent.
        m = re.findall(r"IXFR of acme\.example\. \(serial %d\) to 127\.0\.0\.1: (\d+) records"
                       % serial, self.server.log_since_start())
        self.assertTrue(m)
        r = dns.query.tcp(self.axfr_query("acme.example", XFR_KEY, "IXFR", s0), "127.0.0.1",
                          port=self.server.port, timeout=5, one_rr_per_rrset=True)
        soas = [rr[0].serial for rr in r.answer if rr.rdtype == dns.rdatatype.SOA]
        self.assertEqual(soas, [serial, s0, serial, serial])
        text = "\n".join(rr.to_text() for rr in r.answer)
        self.assertNotIn("first", text)
        self.assertNotIn("second", text)
        self.assertIn("stays", text)

    def test_ixfr_beyond_the_history_sends_the_whole_zone(self):
        # ixfr_max_changes = 4: five changes later the old serial is gone.
        s0 = self.primary_serial("acme.example")
        for i in range(5):
            self.update("_acme-challenge.h%d.acme.example." % i, "TXT", '"h%d"' % i)
        serial = self.primary_serial("acme.example")
        r = dns.query.tcp(self.axfr_query("acme.example", XFR_KEY, "IXFR", s0), "127.0.0.1",
                          port=self.server.port, timeout=5, one_rr_per_rrset=True)
        soas = [rr[0].serial for rr in r.answer if rr.rdtype == dns.rdatatype.SOA]
        self.assertEqual(soas, [serial, serial])     # AXFR form: SOA first and last only
        self.server.wait_log(r"IXFR \(whole zone, AXFR form\) of acme\.example\. \(serial %d\)"
                             % serial)
        # Four changes back is still in reach.
        r = dns.query.tcp(self.axfr_query("acme.example", XFR_KEY, "IXFR", serial - 4),
                          "127.0.0.1", port=self.server.port, timeout=5, one_rr_per_rrset=True)
        soas = [rr[0].serial for rr in r.answer if rr.rdtype == dns.rdatatype.SOA]
        self.assertEqual(soas, [serial, serial - 4, serial, serial])

    def test_multi_message_tsig_verified_by_dnspython(self):
        # dnspython checks every message's TSIG (RFC 8945 5.3.1) as it reads.
        z = dns.zone.Zone("big.example.")
        dns.query.inbound_xfr("127.0.0.1", z, port=self.server.port, timeout=10,
                              query=self.axfr_query("big.example", XFR_KEY))
        self.assertEqual(len([n for n in z.nodes if str(n).startswith("n")]), 1500)
        self.server.wait_log(r"AXFR of big\.example\. \(serial 7\) to 127\.0\.0\.1: "
                             r"\d+ records in ([2-9]|\d\d+) messages")


JOURNAL_CONFIG = acme_zone_toml("acme.example", [LEGO],
                                zone_lines="allow_axfr = true\nixfr_max_changes = 3\n")


class Journal(unittest.TestCase):
    """The IXFR journal of an (unsigned) ACME zone lives in its database:
    written with each change, capped, and still answering IXFR after a
    kill -9."""

    def setUp(self):
        self.server = Server(BASE_CONFIG + JOURNAL_CONFIG,
                             {"acme.zone": ACME})
        self.server.start()

    def tearDown(self):
        self.server.cleanup()

    def update(self, name, text):
        r = signed_update(self.server, "acme.example.", LEGO, add=[(name, 300, "TXT", text)],
                          tcp=True)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")

    def serial(self):
        return serial(self.server, "acme.example")

    def ixfr_soas(self, serial):
        return ixfr_soas(self.server, "acme.example", serial)

    def journal_rows(self):
        out = subprocess.run(["sqlite3", self.server.path("acme.sqlite"),
                              "SELECT serial_from || '-' || serial_to FROM journal ORDER BY seq"],
                             capture_output=True, text=True, check=True)
        return out.stdout.split()

    def test_journal_survives_kill9_and_is_capped(self):
        s0 = self.serial()
        for i in range(4):
            self.update("_acme-challenge.j%d.acme.example." % i, '"j%d"' % i)
        s4 = self.serial()
        self.assertEqual(s4, s0 + 4)
        # Capped at three differences, the oldest gone, in the database too.
        self.assertEqual(self.journal_rows(), ["%d-%d" % (s0 + i, s0 + i + 1) for i in (1, 2, 3)])
        port = self.server.port
        self.server.kill9()
        with open(self.server.config_path) as f:
            cfg = f.read()
        with open(self.server.config_path, "w") as f:
            f.write(cfg.replace("listen_port = 0", "listen_port = %d" % port, 1))
        self.server.start()
        self.assertEqual(self.serial(), s4)
        soas, r = self.ixfr_soas(s0 + 2)
        self.assertEqual(soas, [s4, s0 + 2, s4, s4])
        text = "\n".join(rr.to_text() for rr in r.answer)
        self.assertIn('"j2"', text)
        self.assertIn('"j3"', text)
        self.assertNotIn('"j1"', text)
        soas, _ = self.ixfr_soas(s0)        # beyond the cap: the whole zone
        self.assertEqual(soas, [s4, s4])


if __name__ == "__main__":
    main()
