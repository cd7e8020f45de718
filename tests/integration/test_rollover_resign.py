# SPDX-License-Identifier: MIT
"""A key change re-signs the zone without holding the loop, and the rollover
waits for it (issue #26, doc/dnssec.md "Automatic key rollover").

One server, two zones with a key policy (lifetime 0, hour-long waits: only
the first step runs here), both copied by a stock Knot secondary:

  example.com    from a file, 400 names: `ctl key-roll` re-signs it on a
                 thread beside the loop (cmd/resign_job.h), held back there
                 by GEOACME_TEST_RESIGN_DELAY_MS so the test sees the window.
                 While it runs, queries flowing all the time get the old,
                 valid answers (one key, one RRSIG, validated with
                 dns.dnssec against the DS of the first key), key-status says
                 the next step waits for the re-signing, and the incoming
                 key's signing time is moved to when the new set is served;
                 after it, both keys sign.  Knot follows by IXFR.
  acme.example   an ACME zone: its key change is built and signed beside
                 the loop too, as its compaction is (acme/compact.h), held
                 back there by GEOACME_TEST_COMPACT_DELAY_MS.  Meanwhile the
                 old snapshot answers (one key, one RRSIG, valid), the
                 rollover waits, and an UPDATE sent then is acknowledged and
                 served at once (patched, signed by both keys: valid with
                 the DNSKEY set served then).  After the swap both keys sign
                 everything, the UPDATE's record is still served, the serial
                 is one more for the UPDATE and one for the new signatures,
                 which start the journal over (as a re-signing pass does):
                 Knot takes the zone whole once.
"""
import os
import re
import subprocess
import sys
import threading
import time
import unittest

import dns.dnssec
import dns.message
import dns.name
import dns.query
import dns.rdatatype

sys.path.insert(0, os.path.dirname(__file__))
from harness import BASE_CONFIG, BIN, Server, example_zone, free_port, main, make_key, \
    needs_test_hooks   # noqa: E402
from acme_helpers import TsigKey, acme_zone_toml, seed_zone, signed_update   # noqa: E402
import secondaries   # noqa: E402

DELAY_MS = 3000
XFR_KEY = "xfr.example."
NAMES = 400

POLICY = """[zones.key_policy]
lifetime = "0"
dnskey_ttl = "1h"
propagation_delay = "1h"
key_dir = "keys"
parent = ["127.0.0.1:1"]
"""

XFR = TsigKey(XFR_KEY, "hmac-sha256", b"geoacme-resign-test-secret-32by")
# Both zones signed, copied by the Knot secondary (TSIG) and with POLICY.
ZONE_LINES = 'axfr_policy = "AllowSigned"\naxfr_from = ["127.0.0.0/8"]\nnotify = ["127.0.0.1:{sec}"]\n'
CONFIG = """
[[zones]]
zone = "example.com"
zone_type = "Primary"
""" + ZONE_LINES + """[[zones.keys]]
algorithm = "ECDSAP256SHA256"
key_path = "example.com.pem"
{policy}
[zones.stores]
type = "file"
zone_path = "example.com.zone"
""" + XFR.toml() + acme_zone_toml("acme.example", [XFR], signing_key="acme.pem",
                                  zone_lines=ZONE_LINES + "{policy}")

ZONES = ["example.com", "acme.example"]


def ctl(server, *args):
    r = subprocess.run([BIN, "ctl", "-c", server.config_path] + list(args), capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def ds_of(server, zone):
    out = subprocess.run([BIN, "ds", "-c", server.config_path, zone], capture_output=True,
                         text=True, check=True).stdout.split()
    return dns.rdata.from_text("IN", "DS", " ".join(out[3:]))


class Resign(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sec_port = free_port()
        cfg = BASE_CONFIG + CONFIG.format(sec=cls.sec_port, policy=POLICY)
        records = "".join("n%04d IN A 192.0.2.%d\n" % (i, i % 250 + 1) for i in range(NAMES))
        cls.server = Server(cfg, {"example.com.zone": example_zone("www IN A 192.0.2.80\n" +
                                                                   records),
                                  "acme.zone": seed_zone("acme.example.",
                                                         extra="www IN A 192.0.2.81\n")},
                            env=dict(os.environ, GEOACME_TEST_RESIGN_DELAY_MS=str(DELAY_MS),
                                     GEOACME_TEST_COMPACT_DELAY_MS=str(DELAY_MS)))
        make_key(cls.server.path("example.com.pem"))
        make_key(cls.server.path("acme.pem"))
        os.makedirs(cls.server.path("keys"), mode=0o700)
        cls.server.start()
        cls.knot = secondaries.Knot(ZONES, cls.server.port, key=(XFR_KEY, "hmac-sha256",
                                                                 XFR.b64), port=cls.sec_port)
        try:
            cls.knot.start()
            for z in ZONES:
                cls.knot.wait_serial(z, cls.serial(z))
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.knot.cleanup()
        # A clean shutdown exits 0; under ASan a leak (a re-signing job's
        # snapshot, say) makes it non-zero.
        rc = cls.server.stop()
        log = cls.server.log()
        cls.server.cleanup()
        if rc != 0:
            raise AssertionError("geoacme exited with %s on SIGTERM:\n%s" % (rc, log[-4000:]))

    @classmethod
    def serial(cls, zone):
        r = cls.server.query(zone, "SOA")
        return r.answer[0][0].serial

    def ask(self, name, rdtype):
        q = dns.message.make_query(name, rdtype, want_dnssec=True)
        return dns.query.udp(q, "127.0.0.1", port=self.server.port, timeout=3)

    def state(self, zone, ds):
        """(keys in DNSKEY, RRSIGs on www A), after checking both validate
        from the DS: the DNSKEY set signed by the key the DS names, www's A
        by a key of that set."""
        origin = dns.name.from_text(zone)
        r = self.ask(zone, "DNSKEY")
        keys = r.find_rrset(r.answer, origin, dns.rdataclass.IN, dns.rdatatype.DNSKEY)
        ksigs = r.find_rrset(r.answer, origin, dns.rdataclass.IN, dns.rdatatype.RRSIG,
                             dns.rdatatype.DNSKEY)
        anchor = [k for k in keys if dns.dnssec.make_ds(origin, k, "SHA256") == ds]
        self.assertEqual(len(anchor), 1, "the DS's key is not in the DNSKEY set")
        dns.dnssec.validate(keys, ksigs, {origin: keys})
        www = dns.name.from_text("www." + zone)
        r = self.ask(www, "A")
        a = r.find_rrset(r.answer, www, dns.rdataclass.IN, dns.rdatatype.A)
        sigs = r.find_rrset(r.answer, www, dns.rdataclass.IN, dns.rdatatype.RRSIG,
                            dns.rdatatype.A)
        dns.dnssec.validate(a, sigs, {origin: keys})
        return len(keys), len(sigs)

    def signing_time(self, status, tag):
        m = re.search(r"key %d incoming .*\n(?:  .*\n)*?  signing\s+(\S+)" % tag, status)
        self.assertIsNotNone(m, status)
        return m.group(1)

    def ixfr_to_knot(self, zone, serial, mark):
        pattern = r"(AXFR|IXFR(?: \(whole zone, AXFR form\))?) of %s\. \(serial %d\) to " % (
            re.escape(zone), serial)
        deadline = time.time() + 20
        while time.time() < deadline:
            m = re.search(pattern, self.server.log()[mark:])
            if m:
                return m.group(1)
            time.sleep(0.05)
        self.fail("no transfer of %s serial %d:\n%s" % (zone, serial, self.server.log()[mark:]))

    @needs_test_hooks
    def test_1_static_zone_resigned_beside_the_loop(self):
        zone = "example.com"
        ds = ds_of(self.server, zone)
        self.assertEqual(self.state(zone, ds), (1, 1))
        s0 = self.serial(zone)
        mark = len(self.server.log())
        # Queries flow all through, from another thread: each answer is one
        # of the two valid states, and once the new one is served, never the
        # old one again.
        seen, errors, stop = [], [], threading.Event()

        def flow():
            while not stop.is_set():
                try:
                    seen.append(self.state(zone, ds))
                except Exception as e:   # noqa: BLE001 - reported below
                    errors.append(repr(e))
        t = threading.Thread(target=flow)
        t.start()
        try:
            time.sleep(0.3)
            out = ctl(self.server, "key-roll", zone)
            self.assertIn("started: a rollover of example.com ", out)
            # The re-signing waits on its thread: the old set still answers,
            # and the rollover waits for the new one.
            self.assertEqual(self.state(zone, ds), (1, 1))
            self.assertEqual(self.serial(zone), s0)
            during = ctl(self.server, "key-status", zone)
            self.assertRegex(during, r"next \S+: re-signing with the new key set")
            tag = int(re.search(r"key (\d+) incoming", during).group(1))
            self.server.wait_log(r"example\.com\.: keys: the new key set is served", timeout=60)
            after = ctl(self.server, "key-status", zone)
            time.sleep(0.3)
        finally:
            stop.set()
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(self.state(zone, ds), (2, 2))
        # The DNSKEY set and www's RRSIGs each went from old to new once (the
        # swap may fall between the two queries of one state(): both are
        # valid then too, as checked).
        for k in (0, 1):
            counts = [st[k] for st in seen]
            self.assertEqual(set(counts), {1, 2})
            self.assertNotIn(1, counts[counts.index(2):])
        # The step's time is when the new signatures were served, not when
        # key-roll was asked (the re-signing was held DELAY_MS on its thread).
        self.assertGreater(self.signing_time(after, tag), self.signing_time(during, tag))
        self.assertRegex(after, r"next \S+: the new key becomes the parent's")
        log = self.server.log()[mark:]
        self.assertRegex(log, r"example\.com: re-signed beside the loop in \d+ ms \(\d+ new "
                              r"signatures\), serial \d+")
        # One new serial; Knot takes the difference, not the zone.
        s1 = self.serial(zone)
        self.assertGreater(s1, s0)
        self.knot.wait_serial(zone, s1)
        self.assertEqual(self.ixfr_to_knot(zone, s1, mark), "IXFR")
        r = self.knot.query("www." + zone, "A")
        self.assertEqual(len([s for s in r.answer if s.rdtype == dns.rdatatype.RRSIG][0]), 2)

    def txt_sigs(self, name, keys_of):
        """(the TXT strings at name, how many RRSIGs cover them), after
        checking they validate with the DNSKEY set served at keys_of."""
        origin = dns.name.from_text(keys_of)
        r = self.ask(keys_of, "DNSKEY")
        keys = r.find_rrset(r.answer, origin, dns.rdataclass.IN, dns.rdatatype.DNSKEY)
        owner = dns.name.from_text(name)
        r = self.ask(owner, "TXT")
        txt = r.find_rrset(r.answer, owner, dns.rdataclass.IN, dns.rdatatype.TXT)
        sigs = r.find_rrset(r.answer, owner, dns.rdataclass.IN, dns.rdatatype.RRSIG,
                            dns.rdatatype.TXT)
        dns.dnssec.validate(txt, sigs, {origin: keys})
        return sorted(rd.to_text() for rd in txt), len(sigs)

    @needs_test_hooks
    def test_2_acme_zone_signed_with_the_new_key(self):
        zone = "acme.example"
        ds = ds_of(self.server, zone)
        self.assertEqual(self.state(zone, ds), (1, 1))
        s0 = self.serial(zone)
        mark = len(self.server.log())
        out = ctl(self.server, "key-roll", zone)
        self.assertIn("started: a rollover of acme.example ", out)
        self.server.wait_log(r"acme\.example\.: re-signing with the new keys beside the loop")
        # Built beside the loop, held there: the old snapshot answers, the
        # rollover waits for the new one.
        self.assertEqual(self.state(zone, ds), (1, 1))
        self.assertEqual(self.serial(zone), s0)
        self.assertRegex(ctl(self.server, "key-status", zone),
                         r"next \S+: re-signing with the new key set")
        r = signed_update(self.server, zone, XFR, tcp=True,
                          add=[("_acme-challenge.www." + zone + ".", 60, "TXT", "token")])
        self.assertEqual(r.rcode(), 0)
        self.assertEqual(self.serial(zone), s0 + 1)
        self.assertEqual(self.txt_sigs("_acme-challenge.www." + zone + ".", zone),
                         (['"token"'], 2))
        self.assertNotIn("keys: the new key set is served", self.server.log()[mark:])
        self.server.wait_log(r"acme\.example\.: re-signed with the new keys beside the loop: "
                             r"\d+ records built and signed in \d+ ms, 1 commit made meanwhile "
                             r"patched in, swapped in on the loop in [0-9.]+ ms \(new signatures: "
                             r"the serial follows\)", timeout=60)
        self.server.wait_log(r"acme\.example\.: keys: the new key set is served")
        self.assertEqual(self.state(zone, ds), (2, 2))
        self.assertEqual(self.txt_sigs("_acme-challenge.www." + zone + ".", zone),
                         (['"token"'], 2))
        self.assertRegex(ctl(self.server, "key-status", zone),
                         r"next \S+: the new key becomes the parent's")
        s1 = self.serial(zone)
        self.assertEqual(s1, s0 + 2)
        self.knot.wait_serial(zone, s1)
        self.assertEqual(self.ixfr_to_knot(zone, s1, mark), "IXFR (whole zone, AXFR form)")
        r = self.knot.query("www." + zone, "A")
        self.assertEqual(len([s for s in r.answer if s.rdtype == dns.rdatatype.RRSIG][0]), 2)
        r = self.knot.query("_acme-challenge.www." + zone, "TXT")
        self.assertEqual([rd.to_text() for s in r.answer if s.rdtype == dns.rdatatype.TXT
                          for rd in s], ['"token"'])


if __name__ == "__main__":
    main()
