# SPDX-License-Identifier: MIT
"""The timer paths driven by the test clock, not by waiting: re-signing (from
the snapshot in memory, never from the zone file on disk), the ACME zone's
stale-TXT purge, and health-check rise/fall.

The server runs with GEOACME_TEST_CLOCK_FILE (cmd/serve.c): the file holds
how many seconds the server's clock runs ahead, re-read on SIGUSR2.  A test
steps days forward in one loop iteration and then asserts the answers; no
assertion depends on how long anything took.
"""
import os
import re
import signal
import subprocess
import time
import unittest
import unittest.mock
import urllib.request

import json

import dns.dnssec
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype
import dns.rrset
import dns.tsig
import dns.update

from acme_helpers import tsig_of
from harness import (BASE_CONFIG, BIN, Listener, Server, checked_site, free_port, geo_toml, make_key,
                     make_mmdb, main, rrs,
                     needs_test_hooks, zone_toml)
from test_abuse_tsig import STATIC, XFR_CONFIG, XFR_KEY, _answer_types, tcp_messages


class Clock:
    """The server's test clock: advance() steps it and waits until applied."""

    def __init__(self, server):
        self.server = server
        self.offset = 0
        self.path = server.path("clock")
        self._write()

    def _write(self):
        with open(self.path, "w") as f:
            f.write("%d\n" % self.offset)

    def advance(self, seconds):
        self.offset += seconds
        self._write()
        self.server.send_signal(signal.SIGUSR2)
        self.server.wait_log(r"test clock: %d s ahead of the system clock" % self.offset)

    def now(self):
        return int(time.time()) + self.offset


def start_with_clock(server):
    clock = Clock(server)
    os.environ["GEOACME_TEST_CLOCK_FILE"] = clock.path
    try:
        server.start()
    finally:
        del os.environ["GEOACME_TEST_CLOCK_FILE"]
    return clock


def count(pattern, text):
    return len(re.findall(pattern, text))


ZONE = """$ORIGIN example.com.
$TTL 3600
@       IN SOA  ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 300
@       IN NS   ns1.example.com.
ns1     IN A    192.0.2.53
"""

EDITED = ZONE.replace(" 1 7200 ", " 2 7200 ") + "new     IN A    192.0.2.77\n"

SIGNED = """
[dnssec]
signature_validity = "2d"
signature_inception = "1h"
signature_refresh = "1d"

[[zones]]
zone = "example.com"
zone_type = "Primary"
file = "example.com.zone"
[[zones.keys]]
algorithm = "ECDSAP256SHA256"
key_path = "example.com.pem"
"""

DAY = 86400


@needs_test_hooks
class Resign(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(BASE_CONFIG + SIGNED, {"example.com.zone": ZONE})
        make_key(cls.server.path("example.com.pem"))
        cls.clock = start_with_clock(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def signed(self, name, rdtype):
        r = self.server.query(name, rdtype, dnssec=True)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        data = r.find_rrset(r.answer, dns.name.from_text(name), dns.rdataclass.IN,
                            dns.rdatatype.from_text(rdtype))
        sig = r.find_rrset(r.answer, dns.name.from_text(name), dns.rdataclass.IN,
                           dns.rdatatype.RRSIG, dns.rdatatype.from_text(rdtype))
        return data, sig

    def validate(self, name, rdtype):
        """The RRset validates against the DNSKEY at the server's (stepped) time."""
        keys, _ = self.signed("example.com.", "DNSKEY")
        data, sig = self.signed(name, rdtype)
        dns.dnssec.validate(data, sig, {dns.name.from_text("example.com."): keys},
                            now=self.clock.now())
        return sig[0]

    def test_resign_from_memory_not_disk(self):
        log = self.server.log_since_start
        soa0 = self.validate("example.com.", "SOA")
        dnskey0 = self.validate("example.com.", "DNSKEY")
        self.assertEqual(soa0.expiration - soa0.inception, 2 * DAY + 3600)

        # The zone file changes on disk; nothing reloads it.
        self.server.write("example.com.zone", EDITED)

        # Half a day on: nothing is due yet, the same signatures stay.
        self.clock.advance(DAY // 2)
        self.assertEqual(self.signed("example.com.", "SOA")[1][0], soa0)
        self.assertEqual(count(r"re-signing", log()), 0)

        # Past the refresh point (validity 2d - refresh 1d): re-signed.
        self.clock.advance(DAY // 2 + 3600)
        self.server.wait_log(r"example.com: signatures reach their refresh point; re-signing")
        # Signed on a thread beside the loop, then swapped in (cmd/resign_job.h).
        self.server.wait_log(r"example.com: re-signed beside the loop in \d+ ms")
        soa1 = self.validate("example.com.", "SOA")
        dnskey1 = self.validate("example.com.", "DNSKEY")
        ns1 = self.validate("ns1.example.com.", "A")
        for old, new in ((soa0, soa1), (dnskey0, dnskey1)):
            # Inception and expiration moved with the clock (a day and an hour).
            self.assertAlmostEqual(new.inception - old.inception, DAY + 3600, delta=5)
            self.assertAlmostEqual(new.expiration - old.expiration, DAY + 3600, delta=5)
        self.assertAlmostEqual(ns1.expiration, self.clock.now() + 2 * DAY, delta=5)
        # ... from the snapshot: the edited file on disk is not served.
        r = self.server.query("example.com.", "SOA", dnssec=True)
        self.assertEqual(r.answer[0][0].serial, 1)
        self.assertEqual(dns.rcode.to_text(self.server.query("new.example.com.", "A").rcode()),
                         "NXDOMAIN")
        self.assertNotIn("re-signing failed", log())

        # A half-written zone file does not stop re-signing either.
        self.server.write("example.com.zone", EDITED[:len(EDITED) // 2])
        self.clock.advance(DAY + 60)
        self.server.wait_log(r"(?s)(refresh point; re-signing.*){2}", timeout=10)
        self.server.wait_log(r"(?s)(re-signed beside the loop in.*){2}", timeout=10)
        soa2 = self.validate("example.com.", "SOA")
        self.assertAlmostEqual(soa2.expiration - soa1.expiration, DAY + 60, delta=5)
        self.assertEqual(self.server.query("example.com.", "SOA").answer[0][0].serial, 1)
        self.assertNotIn("re-signing failed", log())

        # Only SIGHUP reads the disk: the broken file is refused, the whole
        # edited one is served.
        self.server.send_signal(signal.SIGHUP)
        self.server.wait_log(r"reload failed; still serving the previous configuration")
        self.assertEqual(self.server.query("example.com.", "SOA").answer[0][0].serial, 1)
        self.server.write("example.com.zone", EDITED)
        self.server.send_signal(signal.SIGHUP)
        self.server.wait_log(r"reloaded: 1 zone\b")
        self.assertEqual(self.server.query("example.com.", "SOA").answer[0][0].serial, 2)
        r = self.server.query("new.example.com.", "A")
        self.assertEqual(rrs(r, "answer"), ["new.example.com. 3600 IN A 192.0.2.77"])
        self.validate("new.example.com.", "A")


ACME_ZONE = """$ORIGIN acme.example.
$TTL 300
@       IN SOA ns1.example. hostmaster.example. 100 3600 600 86400 60
@       IN NS  ns1.example.
static  IN TXT "from the zone file"
"""

SECRET = b"raw-secret-bytes-as-hickory-has"

ACME = """
[[zones]]
zone = "acme.example"
zone_type = "Primary"

[zones.stores]
type = "sqlite"
allow_update = true
journal_path = "acme.sqlite"
zone_path = "acme.zone"
stale_txt_age = "24h"

[[zones.stores.tsig_keys]]
name = "update.acme.example."
algorithm = "hmac-sha256"
key_file = "update.tsig"
"""


@needs_test_hooks
class StalePurge(unittest.TestCase):
    def setUp(self):
        self.server = Server(BASE_CONFIG + '[server]\nhttp_listen = ["127.0.0.1:0"]\n' + ACME,
                             {"acme.zone": ACME_ZONE, "update.tsig": SECRET})
        self.clock = start_with_clock(self.server)

    def tearDown(self):
        self.server.cleanup()

    def serial(self):
        return self.server.query("acme.example.", "SOA").answer[0][0].serial

    def txt(self, name):
        r = self.server.query(name, "TXT")
        return dns.rcode.to_text(r.rcode()), rrs(r, "answer")

    def test_old_challenge_removed_and_stays_removed(self):
        key = dns.tsig.Key("update.acme.example.", SECRET, "hmac-sha256")
        u = dns.update.UpdateMessage("acme.example.", keyring=key)
        u.add("_acme-challenge.acme.example.", 60, "TXT", "token")
        r = dns.query.udp(u, "127.0.0.1", port=self.server.port, timeout=5)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        serial = self.serial()
        self.assertEqual(serial, 101)
        want = ["_acme-challenge.acme.example. 60 IN TXT \"token\""]
        self.assertEqual(self.txt("_acme-challenge.acme.example."), ("NOERROR", want))

        # Twelve hours on: the purge runs (every minute) but nothing is 24 h old.
        self.clock.advance(12 * 3600)
        self.assertEqual(self.txt("_acme-challenge.acme.example."), ("NOERROR", want))
        self.assertEqual(self.serial(), serial)
        self.assertNotIn("stale TXT", self.server.log_since_start())

        # A day and a bit: removed, with a serial bump; the zone file's TXT stays.
        self.clock.advance(12 * 3600 + 120)
        self.server.wait_log(r"acme.example.: removed 1 stale TXT records \(older than 86400 s\), "
                             r"serial 102")
        self.assertEqual(self.txt("_acme-challenge.acme.example."), ("NXDOMAIN", []))
        self.assertEqual(self.serial(), serial + 1)
        self.assertEqual(self.txt("static.acme.example."),
                         ("NOERROR", ['static.acme.example. 300 IN TXT "from the zone file"']))
        # /metrics counts the UPDATE and the purge.
        port = re.search(r"http: listening on \S+ \(port (\d+)\)", self.server.log()).group(1)
        with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=5) as m:
            metrics = m.read().decode()
        self.assertIn('\ngeoacme_updates_total{result="accepted"} 1\n', metrics)
        self.assertIn("\ngeoacme_stale_txt_purged_total 1\n", metrics)

        # It was committed: a restart (clock back to the system's) keeps it gone.
        self.assertEqual(self.server.stop(), 0)
        self.server.start()
        self.assertEqual(self.txt("_acme-challenge.acme.example."), ("NXDOMAIN", []))
        self.assertEqual(self.serial(), serial + 1)


@needs_test_hooks
class AcmeResignBase(unittest.TestCase):
    """A signed ACME zone, its clock, and its signatures checked; ZONE_KEYS
    goes into its [[zones]] table, SERVER at the end of the configuration."""
    ZONE_KEYS = ""
    SERVER = ""

    def setUp(self):
        acme = ACME.replace('stale_txt_age = "24h"', 'stale_txt_age = "0"').replace(
            'zone_type = "Primary"\n', 'zone_type = "Primary"\n' + self.ZONE_KEYS)
        config = BASE_CONFIG + acme + """
[[zones.keys]]
algorithm = "ECDSAP256SHA256"
key_path = "acme.pem"

[dnssec]
signature_validity = "2d"
signature_inception = "1h"
signature_refresh = "1d"
""" + self.SERVER
        self.server = Server(config, {"acme.zone": ACME_ZONE, "update.tsig": SECRET})
        make_key(self.server.path("acme.pem"))
        self.clock = start_with_clock(self.server)

    def tearDown(self):
        self.server.cleanup()

    def sig(self, name, rdtype):
        r = self.server.query(name, rdtype, dnssec=True)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        keys = self.server.query("acme.example.", "DNSKEY", dnssec=True)
        dnskey = keys.find_rrset(keys.answer, dns.name.from_text("acme.example."),
                                 dns.rdataclass.IN, dns.rdatatype.DNSKEY)
        data = r.find_rrset(r.answer, dns.name.from_text(name), dns.rdataclass.IN,
                            dns.rdatatype.from_text(rdtype))
        sig = r.find_rrset(r.answer, dns.name.from_text(name), dns.rdataclass.IN,
                           dns.rdatatype.RRSIG, dns.rdatatype.from_text(rdtype))
        dns.dnssec.validate(data, sig, {dns.name.from_text("acme.example."): dnskey},
                            now=self.clock.now())
        return sig[0]

    def add_token(self):
        key = dns.tsig.Key("update.acme.example.", SECRET, "hmac-sha256")
        u = dns.update.UpdateMessage("acme.example.", keyring=key)
        u.add("_acme-challenge.acme.example.", 60, "TXT", "token")
        r = dns.query.udp(u, "127.0.0.1", port=self.server.port, timeout=5)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")

    def serial(self):
        return self.server.query("acme.example.", "SOA").answer[0][0].serial


class AcmeResign(AcmeResignBase):
    """A signed ACME zone is re-signed from its in-memory records too."""

    def test_resigned_past_the_refresh_point(self):
        self.add_token()
        txt0 = self.sig("_acme-challenge.acme.example.", "TXT")
        soa0 = self.sig("acme.example.", "SOA")
        self.clock.advance(DAY + 3600)
        self.server.wait_log(r"acme.example: signatures reach their refresh point; re-signing")
        # Renewed in place in slices between queries, not built whole.
        self.server.wait_log(r"acme\.example\.: re-signed in slices: [1-9][0-9]* signatures "
                             r"renewed, 0 still good")
        txt1 = self.sig("_acme-challenge.acme.example.", "TXT")
        soa1 = self.sig("acme.example.", "SOA")
        for old, new in ((txt0, txt1), (soa0, soa1)):
            self.assertAlmostEqual(new.inception - old.inception, DAY + 3600, delta=5)
            self.assertAlmostEqual(new.expiration - old.expiration, DAY + 3600, delta=5)
        # Re-signing is not a change: the serial stays.
        self.assertEqual(self.serial(), 101)
        self.assertNotIn("re-signing failed", self.server.log_since_start())


class AcmeResignForSecondaries(AcmeResignBase):
    """When secondaries may copy the zone, new signatures need a new serial:
    the zone is still re-signed in slices (never built whole on the loop),
    and the pass ends with one serial bump whose SOA alone is patched; the
    journal starts over, so an IXFR from the old serial gets the whole zone
    (RFC 1995 4) with the new signatures."""
    ZONE_KEYS = 'axfr_policy = "AllowAll"\n'
    SERVER = '\n[server]\nhttp_listen = ["127.0.0.1:0"]\n'

    def served_expiry(self):
        """The earliest Signature Expiration among the RRSIGs an AXFR of the
        zone holds, as a unix time (RFC 1982: the one near the clock)."""
        now = self.clock.now()
        exps = [now + ((rd.expiration - now + 2**31) % 2**32 - 2**31)
                for msg in dns.query.xfr("127.0.0.1", "acme.example.", port=self.server.port,
                                         timeout=10)
                for rrset in msg.answer if rrset.rdtype == dns.rdatatype.RRSIG
                for rd in rrset]
        self.assertTrue(exps, "no RRSIG in the AXFR")
        return min(exps)

    def assert_expiry_is_served(self, what):
        """ctl zone-status, /metrics and /status.json say the earliest RRSIG
        expiration the zone serves, exactly."""
        want = self.served_expiry()
        out = subprocess.run([BIN, "ctl", "-c", self.server.config_path, "zone-status",
                              "acme.example"], capture_output=True, text=True, timeout=30)
        self.assertIn("\nsignature_expiry %d\n" % want, out.stdout, what)
        base = "http://127.0.0.1:%d/" % self.server.http_port()
        with urllib.request.urlopen(base + "metrics", timeout=10) as r:
            self.assertIn('geoacme_zone_signature_expiry_timestamp_seconds{zone="acme.example."} '
                          '%d\n' % want, r.read().decode(), what)
        with urllib.request.urlopen(base + "status.json", timeout=10) as r:
            zones = json.loads(r.read().decode())["zones"]
        self.assertEqual([z["signature_expiry"] for z in zones], [want], what)
        return want

    def test_resigned_in_slices_then_one_serial_bump(self):
        # At start: signed anew, one bump (100 -> 101); the UPDATE: 102.
        self.assertEqual(self.serial(), 101)
        first = self.assert_expiry_is_served("built at start")
        self.add_token()
        self.assertEqual(self.serial(), 102)
        self.assertEqual(self.assert_expiry_is_served("patched by an UPDATE"), first)
        txt0 = self.sig("_acme-challenge.acme.example.", "TXT")
        self.clock.advance(DAY + 3600)
        self.server.wait_log(r"acme\.example\.: re-signed in slices: [1-9][0-9]* signatures "
                             r"renewed, 0 still good")
        deadline = time.time() + 10
        while self.serial() != 103 and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.serial(), 103)
        # Every signature renewed: the earliest moved a day and an hour on.
        self.assertAlmostEqual(self.assert_expiry_is_served("renewed in slices") - first,
                               DAY + 3600, delta=5)
        txt1 = self.sig("_acme-challenge.acme.example.", "TXT")
        self.sig("acme.example.", "SOA")
        self.assertAlmostEqual(txt1.inception - txt0.inception, DAY + 3600, delta=5)
        log = self.server.log_since_start()
        self.assertNotIn("re-signing failed", log)
        self.assertNotIn("secondaries get the new signatures with the next change", log)
        # IXFR from the serial before the pass: the journal started over, so
        # the answer is the zone (SOA 103, then its records, SOA 103 last).
        q = dns.message.make_query("acme.example.", "IXFR")
        q.authority.append(dns.rrset.from_text("acme.example.", 0, "IN", "SOA",
                                               "ns1.example. hostmaster.example. 102 3600 600 86400 60"))
        r = dns.query.tcp(q, "127.0.0.1", port=self.server.port, timeout=10,
                          one_rr_per_rrset=True)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        soas = [rrset for rrset in r.answer if rrset.rdtype == dns.rdatatype.SOA]
        self.assertEqual([s[0].serial for s in soas], [103, 103])
        self.assertEqual(r.answer[0].rdtype, dns.rdatatype.SOA)
        self.assertEqual(r.answer[-1].rdtype, dns.rdatatype.SOA)
        self.assertIn("_acme-challenge.acme.example. 60 IN TXT \"token\"",
                      [t for rrset in r.answer for t in rrset.to_text().splitlines()])


HEALTH = "\n" + checked_site("hp", "127.0.0.10", 48.88, 2.22, "{p1}", "1h", "1m", 2, 2) \
    + checked_site("hn", "127.0.0.11", 49.45, 11.08, "{p2}", "1h", "1m", 2, 2) + geo_toml((1.29, 103.85)) + zone_toml(body='[[zones.geo]]\nname = "www"\n')

GEO_ZONE = """$ORIGIN example.com.
$TTL 3600
@       IN SOA  ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 300
@       IN NS   ns1.example.com.
ns1     IN A    192.0.2.53
"""

AMSTERDAM = ("192.0.2.0", 26)
BOTH = (3600, ["127.0.0.10", "127.0.0.11"])   # Paris, then Nuremberg (test_geo's rule)
HN_ONLY = (120, ["127.0.0.11"])


@needs_test_hooks
class HealthRiseFall(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hp = Listener("127.0.0.10").open()
        cls.hn = Listener("127.0.0.11").open()
        cls.server = Server(BASE_CONFIG + HEALTH.format(p1=cls.hp.port, p2=cls.hn.port),
                            {"example.com.zone": GEO_ZONE})
        make_mmdb(cls.server.dir, "city")
        cls.clock = start_with_clock(cls.server)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.server.cleanup()
        finally:
            cls.hp.close()
            cls.hn.close()

    def answer(self):
        r = self.server.query("www.example.com", "A", ecs=AMSTERDAM)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")
        lines = rrs(r, "answer")
        return int(lines[0].split()[1]), [l.split()[-1] for l in lines]

    def checks(self, site, what):
        return count(r"health: site %s: check %s" % (site, what), self.server.log_since_start())

    def step(self, want_passed, want_failed):
        """One interval on; waits until that round of checks has finished."""
        self.clock.advance(3600)
        deadline = time.time() + 10
        while time.time() < deadline:
            got = (self.checks("hp", "passed"), self.checks("hp", "failed"),
                   self.checks("hn", "passed"))
            if got == (want_passed, want_failed, want_passed + want_failed):
                return
            time.sleep(0.02)
        self.fail("checks never reached %s/%s:\n%s" % (want_passed, want_failed,
                                                        self.server.log_since_start()))

    def test_fall_then_rise(self):
        # The first round runs at start.
        self.server.wait_log(r"health: site hp: check passed")
        self.server.wait_log(r"health: site hn: check passed")
        self.assertEqual(self.answer(), BOTH)

        self.hp.close()
        self.step(1, 1)            # one failure: fall = 2, still alive
        self.assertEqual(self.answer(), BOTH)
        self.assertNotIn("site hp is down", self.server.log_since_start())
        self.step(1, 2)            # the second: down, out of the answer
        self.server.wait_log(r"warn: health: site hp is down: .*\(2 consecutive checks failed\)")
        self.assertEqual(self.answer(), HN_ONLY)

        self.hp.open()
        self.step(2, 2)            # one success: rise = 2, still down
        self.assertEqual(self.answer(), HN_ONLY)
        self.assertNotIn("site hp is up", self.server.log_since_start())
        self.step(3, 2)            # the second: back
        self.server.wait_log(r"info: health: site hp is up: 2 consecutive checks passed")
        self.assertEqual(self.answer(), BOTH)


LONG = """$ORIGIN long.example.
$TTL 300
@ IN SOA ns1.example.com. hostmaster.example.com. 1 3600 600 7200 60
@ IN NS ns1.example.com.
www IN A 192.0.2.7
"""


@needs_test_hooks
class SecondaryExpiry(unittest.TestCase):
    """A secondary's copy expires by the loop's clock (STYLE: one clock), so
    the test clock drives it: two hours past its last refresh, with the
    primary gone, it is no longer served (RFC 1035 3.3.13, SOA EXPIRE)."""

    def setUp(self):
        pp = free_port()
        self.primary = Server(BASE_CONFIG.replace("listen_port = 0", "listen_port = %d" % pp) +
                              '\n[[zones]]\nzone = "long.example"\nfile = "long.zone"\n'
                              'allow_axfr = true\n', {"long.zone": LONG})
        self.primary.start()
        self.secondary = Server(BASE_CONFIG + '\n[[zones]]\nzone = "long.example"\n'
                                'zone_type = "Secondary"\nprimaries = ["127.0.0.1:%d"]\n'
                                '[zones.stores]\ntype = "sqlite"\n'
                                'journal_path = "long-copy.sqlite"\n' % pp, {})
        self.clock = start_with_clock(self.secondary)

    def tearDown(self):
        self.secondary.cleanup()
        self.primary.cleanup()

    def soa(self):
        return self.secondary.query("long.example", "SOA")

    def test_copy_expires_by_the_loop_clock(self):
        deadline = time.time() + 10
        while time.time() < deadline and not self.soa().answer:
            time.sleep(0.05)
        r = self.soa()
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        self.assertEqual(r.answer[0][0].serial, 1)
        self.primary.stop()
        # Within expire: the refresh fails, the copy is still served.
        self.clock.advance(3600 + 60)
        self.secondary.wait_log(r"long\.example\.: .*127\.0\.0\.1")
        r = self.soa()
        self.assertEqual(r.rcode(), dns.rcode.NOERROR)
        self.assertEqual(r.answer[0][0].serial, 1)
        # Past expire (7200 s): the next check drops it.
        self.clock.advance(3600 + 60)
        self.secondary.wait_log(r"long\.example\.: the copy expired \(not confirmed for \d+ s, "
                                r"SOA expire 7200 s\)")
        self.assertEqual(dns.rcode.to_text(self.soa().rcode()), "REFUSED")


@needs_test_hooks
class TransferTsigTime(unittest.TestCase):
    """TSIG time is the loop's clock (STYLE: one clock; RFC 8945 5.2.3): with
    the server's clock an hour ahead, a signed AXFR request is judged, and
    the answer signed, by that clock.  Before, xfr/xfr.c read time() and the
    test clock did not move it."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(BASE_CONFIG + XFR_CONFIG, {"static.zone": STATIC})
        cls.clock = start_with_clock(cls.server)
        cls.clock.advance(3600)

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def axfr(self, signed_at):
        q = dns.message.make_query("static.example.", "AXFR")
        q.use_tsig(XFR_KEY)
        # dnspython signs at int(time.time()) when it renders the message.
        with unittest.mock.patch("dns.renderer.time.time", return_value=float(signed_at)):
            wire = q.to_wire()
        return tcp_messages(self.server.port, wire)

    def test_request_signed_at_the_system_time_is_badtime(self):
        msgs = self.axfr(int(time.time()))
        self.assertEqual(len(msgs), 1)
        self.assertEqual(dns.rcode.to_text(msgs[0][3] & 0xF), "NOTAUTH")
        self.assertEqual(_answer_types(msgs[0]), [])
        t = tsig_of(msgs[0])
        self.assertEqual(t.error, dns.rcode.BADTIME)
        # Other Data: the server's time, 48 bits (RFC 8945 5.2.3): its clock.
        theirs = int.from_bytes(t.other, "big")
        self.assertLessEqual(abs(theirs - self.clock.now()), 5)

    def test_request_signed_at_the_server_time_is_served(self):
        msgs = self.axfr(self.clock.now())
        self.assertEqual(msgs[0][3] & 0xF, 0)
        types = [t for m in msgs for t in _answer_types(m)]
        self.assertEqual(types.count(dns.rdatatype.SOA), 2)
        self.assertIn(dns.rdatatype.A, types)
        t = tsig_of(msgs[-1])
        self.assertEqual(t.error, 0)
        self.assertLessEqual(abs(t.time_signed - self.clock.now()), 5)


if __name__ == "__main__":
    main()
