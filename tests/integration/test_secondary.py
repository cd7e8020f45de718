# SPDX-License-Identifier: MIT
"""geoacme as a secondary (zone_type = "Secondary"): of a geoacme primary
(a signed ACME zone, TSIG on the transfer, NOTIFY + IXFR after each UPDATE,
served as received with the primary's signatures) and of Knot (a zone file
reloaded on Knot reaches geoacme by NOTIFY).  Also: UPDATEs and NOTIFYs
from elsewhere are refused, the copy survives kill -9 and is served from
SQLite while the primary is down, and stops being served once the SOA
expire has run out."""
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request

import dns.flags
import dns.message
import dns.opcode
import dns.query
import dns.rcode
import dns.rdatatype
import dns.tsig
import dns.update

from acme_helpers import TsigKey, signed_update
from harness import BASE_CONFIG, BIN, Server, free_port, main, make_key
from secondaries import sorted_records
from test_ctl import ctl

XFR_KEY = "xfr.example."
XFR_SECRET = base64.b64encode(b"transfer-secret-for-the-secondaries").decode()
UPDATE_KEY = "update.acme.example."
UPDATE_SECRET = base64.b64encode(b"update-secret-for-lego-only").decode()
LEGO = TsigKey(UPDATE_KEY, "hmac-sha256", b"update-secret-for-lego-only")

ACME = """$ORIGIN acme.example.
$TTL 300
@       IN SOA ns1.example.com. hostmaster.example.com. 100 3600 600 86400 60
@       IN NS  ns1.example.com.
@       IN NS  ns2.example.com.
"""

SHORT = """$ORIGIN short.example.
$TTL 300
@ IN SOA ns1.example.com. hostmaster.example.com. 1 1 1 8 60
@ IN NS ns1.example.com.
www IN A 192.0.2.7
"""


def listen(port):
    return BASE_CONFIG.replace("listen_port = 0", "listen_port = %d" % port)


ACME_PRIMARY = """
[[zones]]
zone = "acme.example"
axfr_policy = "AllowSigned"
notify = ["127.0.0.1:{sp}"]
[[zones.keys]]
key_path = "acme.pem"
[zones.stores]
type = "sqlite"
allow_update = true
journal_path = "acme.sqlite"
zone_path = "acme.zone"
[[zones.stores.tsig_keys]]
name = "{uk}"
algorithm = "hmac-sha256"
secret = "{us}"
allow_axfr = false
[[zones.stores.tsig_keys]]
name = "{xk}"
algorithm = "hmac-sha256"
secret = "{xs}"
allow_names = ["no-such-name"]
"""
PRIMARY = ACME_PRIMARY + """
[[zones]]
zone = "short.example"
file = "short.zone"
allow_axfr = true
"""

ACME_SECONDARY = """
[server]
http_listen = ["127.0.0.1:0"]

[[zones]]
zone = "acme.example"
zone_type = "Secondary"
primaries = ["127.0.0.1:{pp}"]
allow_axfr = true
[zones.stores]
type = "sqlite"
journal_path = "acme-copy.sqlite"
[[zones.stores.tsig_keys]]
name = "{xk}"
algorithm = "hmac-sha256"
secret = "{xs}"
"""
SECONDARY = ACME_SECONDARY + """
[[zones]]
zone = "short.example"
zone_type = "Secondary"
primaries = ["127.0.0.1:{pp}"]
[zones.stores]
type = "sqlite"
journal_path = "short-copy.sqlite"
"""


def axfr_text(port, zone, key=True):
    args = ["kdig", "@127.0.0.1", "-p", str(port), "+nocomments", "+nostats", "+noheader",
            "+noquestion"]
    if key:
        args += ["-y", "hmac-sha256:%s:%s" % (XFR_KEY, XFR_SECRET)]
    return subprocess.run(args + [zone, "AXFR"], capture_output=True, text=True,
                          timeout=20).stdout


class OfGeoacme(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pp, cls.sp = free_port(), free_port()
        fmt = dict(pp=cls.pp, sp=cls.sp, uk=UPDATE_KEY, us=UPDATE_SECRET, xk=XFR_KEY,
                   xs=XFR_SECRET)
        cls.primary = Server(listen(cls.pp) + PRIMARY.format(**fmt),
                             {"acme.zone": ACME, "short.zone": SHORT})
        make_key(cls.primary.path("acme.pem"))
        cls.primary.start()
        cls.secondary = Server(listen(cls.sp) + SECONDARY.format(**fmt), {})
        cls.secondary.start()
        cls.wait_serial("acme.example", cls.serial(cls.primary, "acme.example"))
        cls.wait_serial("short.example", 1)

    @classmethod
    def tearDownClass(cls):
        cls.secondary.cleanup()
        cls.primary.cleanup()

    @staticmethod
    def serial(server, zone):
        try:
            r = server.query(zone, "SOA", timeout=1)
        except Exception:
            return None
        return r.answer[0][0].serial if r.rcode() == 0 and r.answer else None

    @classmethod
    def wait_serial(cls, zone, serial, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if cls.serial(cls.secondary, zone) == serial:
                return
            time.sleep(0.02)
        raise AssertionError("the secondary never served %s serial %s:\n%s"
                             % (zone, serial, cls.secondary.log_since_start()[-3000:]))

    def update(self, name, text, server=None):
        return signed_update(server or self.primary, "acme.example.", LEGO,
                             add=[(name, 300, "TXT", text)], tcp=True)

    def test_copy_is_identical_and_verifies(self):
        want = sorted_records(axfr_text(self.pp, "acme.example"))
        got = sorted_records(axfr_text(self.sp, "acme.example", key=False))
        self.assertGreater(len(want), 5)
        self.assertEqual(got, want)
        path = os.path.join(self.secondary.dir, "copy.zone")
        lines = [l for l in axfr_text(self.sp, "acme.example", key=False).splitlines()
                 if len(l.split()) > 3]
        soa = [l for l in lines if l.split()[3] == "SOA"][:1]
        with open(path, "w") as f:
            f.write("\n".join(soa + [l for l in lines if l.split()[3] != "SOA"]) + "\n")
        out = subprocess.run(["ldns-verify-zone", path], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_served_as_received_with_signatures(self):
        r = self.secondary.query("acme.example", "DNSKEY", dnssec=True)
        self.assertEqual(sorted(dns.rdatatype.to_text(rr.rdtype) for rr in r.answer),
                         ["DNSKEY", "RRSIG"])
        self.assertTrue(r.flags & dns.flags.AA)
        want = self.primary.query("acme.example", "DNSKEY", dnssec=True)
        self.assertEqual(sorted(rr.to_text() for rr in r.answer),
                         sorted(rr.to_text() for rr in want.answer))
        # Denial comes from the received NSEC chain, signed by the primary.
        r = self.secondary.query("nope.acme.example", "A", dnssec=True)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NXDOMAIN")
        self.assertIn("NSEC", [dns.rdatatype.to_text(rr.rdtype) for rr in r.authority])

    def test_update_reaches_the_secondary_by_notify_and_ixfr(self):
        before = self.serial(self.primary, "acme.example")
        r = self.update("_acme-challenge.n%d.acme.example." % before, '"via-ixfr"')
        self.assertEqual(r.rcode(), 0)
        serial = self.serial(self.primary, "acme.example")
        self.wait_serial("acme.example", serial)
        self.secondary.wait_log(r"acme\.example\.: NOTIFY from 127\.0\.0\.1")
        self.secondary.wait_log(r"acme\.example\.: IXFR from 127\.0\.0\.1:%d, serial %d -> %d"
                                % (self.pp, before, serial))
        r = self.secondary.query("_acme-challenge.n%d.acme.example." % before, "TXT")
        self.assertEqual(r.answer[0][0].to_text(), '"via-ixfr"')

    def copy_signature_expiry(self):
        """The copy's earliest RRSIG expiration, computed here from an AXFR of what the
        secondary serves, with the serial it was read at."""
        rrsets = [rrset for m in dns.query.xfr("127.0.0.1", "acme.example.", port=self.sp,
                                               timeout=20, relativize=False)
                  for rrset in m.answer]
        sigs = [rd for rrset in rrsets if rrset.rdtype == dns.rdatatype.RRSIG for rd in rrset]
        self.assertGreaterEqual(len(sigs), 4)   # SOA, NS, DNSKEY, NSEC at least
        self.assertEqual(rrsets[0].rdtype, dns.rdatatype.SOA)
        self.expirations = set(rd.expiration for rd in sigs)
        return min(self.expirations), rrsets[0][0].serial

    def observed_signature_expiry(self):
        """signature_expiry of acme.example. as ctl, /metrics and /status.json say it."""
        out = ctl(self.secondary, "zone-status", "acme.example")
        self.assertEqual(out.returncode, 0, out.stderr)
        f = dict(l.split(" ", 1) for l in out.stdout.splitlines())
        base = "http://127.0.0.1:%d" % self.secondary.http_port()
        with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
            m = re.search(r'(?m)^geoacme_zone_signature_expiry_timestamp_seconds\{zone='
                          r'"acme\.example\."\} (\d+)$', r.read().decode())
        with urllib.request.urlopen(base + "/status.json", timeout=10) as r:
            doc = json.loads(r.read().decode())
        copy = [c for c in doc["copies"] if c["zone"] == "acme.example."]
        zone = [z for z in doc["zones"] if z["zone"] == "acme.example."]
        self.assertEqual(len(copy), 1, doc)
        self.assertEqual(zone[0]["role"], "secondary")
        self.assertEqual(copy[0]["serial"], int(f["serial"]))
        return (int(f["serial"]), int(f["signature_expiry"]), int(m.group(1)) if m else None,
                copy[0]["signature_expiry"], zone[0]["signature_expiry"])

    def test_copy_signature_expiry_is_its_earliest_rrsig(self):
        # Built whole by AXFR at start, then patched by IXFR: the earliest
        # RRSIG expiration of the copy, the same in ctl, /metrics and /status.json.
        for step in range(2):
            if step:
                time.sleep(1.1)   # the re-signed RRsets' expirations come later
                before = self.serial(self.primary, "acme.example")
                r = self.update("_acme-challenge.sig%d.acme.example." % before, '"expiry"')
                self.assertEqual(r.rcode(), 0)
                serial = self.serial(self.primary, "acme.example")
                self.wait_serial("acme.example", serial)
                self.secondary.wait_log(r"acme\.example\.: IXFR from 127\.0\.0\.1:%d, serial "
                                        r"%d -> %d: .* copy patched" % (self.pp, before, serial))
            want, serial = self.copy_signature_expiry()
            self.assertGreater(want, time.time())
            if step:   # the earliest, not the SOA's (re-signed): they differ now
                self.assertGreater(len(self.expirations), 1)
            self.assertEqual(self.observed_signature_expiry(), (serial, want, want, want, want))

    def test_check_reads_the_copy_and_writes_nothing(self):
        path = os.path.join(self.secondary.dir, "acme-copy.sqlite")
        with open(path, "rb") as f:
            before = hashlib.sha256(f.read()).hexdigest()
        out = subprocess.run([BIN, "check", "-c",
                              self.secondary.config_path], capture_output=True, text=True,
                             timeout=30)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        with open(path, "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(), before)

    def test_metrics_count_transfers(self):
        m = re.search(r"http: listening on \S+ \(port (\d+)\)", self.secondary.log())
        self.assertIsNotNone(m)
        with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % m.group(1), timeout=5) as r:
            text = r.read().decode()
        got = dict(re.findall(r'^geoacme_transfers_in_total\{result="(\w+)"\} (\d+)$', text,
                              re.M))
        self.assertGreaterEqual(int(got["axfr"]), 2, text)   # both zones, once each at least
        self.assertIn("failed", got)
        self.assertRegex(text, r'(?m)^geoacme_transfers_out_total\{result="refused"\} \d+$')

    def test_update_to_the_secondary_is_refused(self):
        # Not forwarded to the primary (RFC 2136 6 allows either): refused.
        u = dns.update.UpdateMessage("acme.example")
        u.add("_acme-challenge.x.acme.example.", 300, "TXT", '"nope"')
        r = dns.query.tcp(u, "127.0.0.1", port=self.sp, timeout=5)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "REFUSED")
        self.secondary.wait_log(r"update for acme\.example\. .*refused: the zone does not allow "
                                r"updates")
        # Lego's key is the primary's business: the secondary does not know it.
        with self.assertRaises(dns.tsig.PeerBadKey):
            self.update("_acme-challenge.x.acme.example.", '"nope"', server=self.secondary)
        self.assertIsNone(self.secondary.query("_acme-challenge.x.acme.example.", "TXT").answer
                          or None)

    def test_notify_from_elsewhere_is_refused(self):
        q = dns.message.make_query("acme.example", "SOA")
        q.set_opcode(dns.opcode.NOTIFY)
        r = dns.query.udp(q, "127.0.0.1", port=self.sp, timeout=3, source="127.0.0.9")
        self.assertEqual(dns.rcode.to_text(r.rcode()), "REFUSED")
        self.secondary.wait_log(r"NOTIFY for acme\.example\. from 127\.0\.0\.9 refused: not one "
                                r"of its primaries")
        q = dns.message.make_query("other.example", "SOA")
        q.set_opcode(dns.opcode.NOTIFY)
        r = dns.query.udp(q, "127.0.0.1", port=self.sp, timeout=3)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOTAUTH")

    def test_zz_kill9_restart_serves_copy_then_expires(self):
        serial = self.serial(self.primary, "acme.example")
        expiry = self.copy_signature_expiry()
        self.secondary.kill9()
        self.primary.stop()
        self.secondary.start()
        # The primary is down: the last copy is served from SQLite, once
        # read beside the loop (REFUSED until then, as before any copy).
        self.secondary.wait_log(r"acme\.example\.: serving the copy from .*, serial %d" % serial)
        self.secondary.wait_log(r"short\.example\.: serving the copy from .*, serial 1")
        self.assertEqual(self.serial(self.secondary, "acme.example"), serial)
        self.assertEqual(self.serial(self.secondary, "short.example"), 1)
        # ... and its signature expiry read again from the copy in SQLite
        self.assertEqual(self.copy_signature_expiry(), expiry)
        self.assertEqual(self.observed_signature_expiry(), (serial,) + (expiry[0],) * 4)
        # short.example's SOA expire is 8 s (time for the restart on a busy machine):
        # once past it, no longer served.
        self.secondary.wait_log(r"short\.example\.: the copy expired", timeout=15)
        r = self.secondary.query("short.example", "SOA")
        self.assertEqual(dns.rcode.to_text(r.rcode()), "REFUSED")
        self.assertEqual(self.serial(self.secondary, "acme.example"), serial)
        # The primary comes back on its port: everything converges again.
        self.primary.start()
        self.wait_serial("short.example", 1)
        r = self.update("_acme-challenge.back.acme.example.", '"back"')
        self.assertEqual(r.rcode(), 0)
        self.wait_serial("acme.example", self.serial(self.primary, "acme.example"))


KNOT_ZONE = """$ORIGIN knot.example.
$TTL 300
@ IN SOA ns1.knot.example. hostmaster.knot.example. {serial} 3600 600 86400 60
@ IN NS ns1.knot.example.
ns1 IN A 192.0.2.1
www IN A 192.0.2.{last}
"""


# A Knot primary's configuration up to its zones: listens on {kp}, sends
# NOTIFY to geoacme on {sp}, transfers to it with TSIG key {xk}/{xs}.
KNOT_PRIMARY = """server:
  rundir: "{d}"
  listen: 127.0.0.1@{kp}
log:
  - target: "{d}/knot.log"
    any: info
database:
  storage: "{d}"
key:
  - id: {xk}
    algorithm: hmac-sha256
    secret: {xs}
remote:
  - id: geoacme
    address: 127.0.0.1@{sp}
    key: {xk}
acl:
  - id: xfr
    address: 127.0.0.0/8
    key: {xk}
    action: transfer
"""


class KnotPrimaryCase(unittest.TestCase):
    """Knot as the primary of knot.example and geoacme its secondary: the
    class methods a test class's setUpClass calls in turn (no tests here)."""

    @classmethod
    def make_dir(cls, prefix):
        if not shutil.which("knotd") or not shutil.which("knotc"):
            raise AssertionError("needs knotd and knotc (scripts/deps.sh: knot)")
        cls.kp, cls.sp = free_port(), free_port()
        cls.dir = tempfile.mkdtemp(prefix=prefix)

    @classmethod
    def start_knot(cls, zones):
        """Starts knotd with KNOT_PRIMARY and `zones` (templates, policies,
        the zone), formatted like it."""
        conf = (KNOT_PRIMARY + zones).format(d=cls.dir, kp=cls.kp, sp=cls.sp, xk=XFR_KEY,
                                             xs=XFR_SECRET)
        cls.conf = os.path.join(cls.dir, "knot.conf")
        with open(cls.conf, "w") as f:
            f.write(conf)
        cls.knot = subprocess.Popen(["knotd", "-c", cls.conf], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    @classmethod
    def start_secondary(cls, zone_keys=""):
        """geoacme as the secondary of knot.example (`zone_keys`: more keys
        of its [[zones]] table)."""
        sec = """
[[zones]]
zone = "knot.example"
zone_type = "Secondary"
primaries = ["127.0.0.1:{kp}"]
{more}[zones.stores]
type = "sqlite"
journal_path = "knot-copy.sqlite"
[[zones.stores.tsig_keys]]
name = "{xk}"
algorithm = "hmac-sha256"
secret = "{xs}"
""".format(kp=cls.kp, xk=XFR_KEY, xs=XFR_SECRET, more=zone_keys)
        cls.secondary = Server(listen(cls.sp) + sec, {})
        cls.secondary.start()

    @classmethod
    def tearDownClass(cls):
        cls.secondary.cleanup()
        if cls.knot.poll() is None:
            cls.knot.terminate()
            cls.knot.wait(10)
        shutil.rmtree(cls.dir, ignore_errors=True)


class OfKnot(KnotPrimaryCase):
    """Knot as the primary: the zone file changes, knotc reloads it, Knot
    sends NOTIFY, geoacme transfers with TSIG and serves the change."""

    @classmethod
    def setUpClass(cls):
        cls.make_dir("geoacme-knotprimary-")
        with open(os.path.join(cls.dir, "knot.example.zone"), "w") as f:
            f.write(KNOT_ZONE.format(serial=1, last=10))
        cls.start_knot("""template:
  - id: default
    storage: "{d}"
    zonefile-load: difference
    journal-content: changes
zone:
  - domain: knot.example
    notify: geoacme
    acl: xfr
""")
        cls.start_secondary()

    def knot_log(self):
        with open(os.path.join(self.dir, "knot.log"), errors="replace") as f:
            return f.read()

    def www(self):
        try:
            r = self.secondary.query("www.knot.example", "A", timeout=1)
            return r.answer[0][0].to_text() if r.answer else None
        except Exception:
            return None

    def wait_www(self, want, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.www() == want:
                return
            time.sleep(0.05)
        raise AssertionError("geoacme never served %s:\n%s\n%s" %
                             (want, self.secondary.log_since_start()[-2000:],
                              self.knot_log()[-2000:]))

    def test_copy_follows_knot(self):
        self.wait_www("192.0.2.10")
        self.secondary.wait_log(r"knot\.example\.: AXFR from 127\.0\.0\.1:%d, serial 0 -> 1"
                                % self.kp)
        with open(os.path.join(self.dir, "knot.example.zone"), "w") as f:
            f.write(KNOT_ZONE.format(serial=2, last=20))
        subprocess.run(["knotc", "-c", self.conf, "zone-reload", "knot.example"],
                       capture_output=True, check=True, timeout=20)
        self.wait_www("192.0.2.20")
        self.secondary.wait_log(r"knot\.example\.: NOTIFY from 127\.0\.0\.1 \(TSIG\)")
        self.secondary.wait_log(r"knot\.example\.: IXFR from 127\.0\.0\.1:%d, serial 1 -> 2"
                                % self.kp)
        self.assertRegex(self.knot_log(), r"\[knot\.example\.\] IXFR, outgoing")


if __name__ == "__main__":
    main()
