# SPDX-License-Identifier: MIT
"""Layout 3 of doc/operations.md, end to end (issue #21.6): three geoacme
instances, configured as the operator is told to (doc/config.md, "One
shared file for several instances"): one common.toml with everything they
share (the port, the sites, the geo zone and its key), included by three
small per-host files that say what differs (the listen address, nsid,
http_listen, control_socket, and the ACME zone's role: the primary on ns1,
a secondary on ns2 and ns3).  Both zones are signed, each with one key
(ns1's ACME zone entry is layout 2's).

  ns1  127.0.53.1:53  ACME zone primary: axfr_from and notify = ns2, ns3
  ns2  127.0.53.2:53  ACME zone secondary: primaries = ns1
  ns3  127.0.53.3:53  ACME zone secondary: primaries = ns1

Every ACL names exact addresses; no source_ipv4 anywhere (the first listen
address is where outgoing DNS leaves from, issue #21.1).  Like
test_acme_lego_secondary.py, the file runs in a network and mount namespace
of its own (port 53 on private loopback addresses, an /etc/hosts naming
ns1..ns3.acme.example), so Lego's propagation check, left on, asks every
NS by name on port 53.  The walkthrough, in order:

1. Lego (Pebble validating through unbound) gets a certificate; each
   instance's query counter for the ACME zone's TXT went up: Lego asked
   all three.
2. ns3 is killed (kill -9).  Lego's next order fails on ns3 (the negative
   case), ns1 warns once that ns3 leaves its NOTIFYs unanswered and shows
   it in /metrics and zone-status; ns3 restarted catches up (same serial,
   the challenge gone as on ns1), answers the next NOTIFY, and Lego's
   third order passes again.
3. The NS set grows from three to four names by an edit of ns1's zone
   file, then shrinks back; each edit reaches ns2 and ns3 by IXFR, and
   the record made by UPDATE stays.
4. `geoacme ctl site-drain` on each instance takes a site out of every
   instance's geo answer; `site-auto` gives it back.

Wall time: about 40 s (the warning comes 15 s into ns3's silence); the
file is labelled slow."""
import base64
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import dns.edns
import dns.exception
import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.tsig
import dns.update

from acme_helpers import Pebble, run_in_own_namespaces
from harness import BIN, Server, free_port, main, make_key, make_mmdb, rrs
from resolvers import Unbound
from test_geo import decide, parse_sites

NS = {1: "127.0.53.1", 2: "127.0.53.2", 3: "127.0.53.3"}
HOSTS = ("127.0.0.1 localhost\n" + "".join("%s ns%d.acme.example\n" % (a, i)
                                           for i, a in NS.items()))

LEGO_KEY = "lego.acme.example."
LEGO_SECRET = b"layout-three-lego-secret-bytes!!"
XFR_KEY = "xfr.acme.example."
XFR_SECRET = b"layout-three-transfer-secret-32b"

ACME_HEAD = """$ORIGIN acme.example.
$TTL 60
@    IN SOA ns1.acme.example. hostmaster.acme.example. 1 3600 600 86400 10
@    IN NS  ns1.acme.example.
@    IN NS  ns2.acme.example.
@    IN NS  ns3.acme.example.
"""
ACME_ZONE = ACME_HEAD + "ns1  IN A   127.0.53.1\nns2  IN A   127.0.53.2\nns3  IN A   127.0.53.3\n"
# The NS set grown by one name (its address in the zone too).
ACME_ZONE_FOUR = (ACME_HEAD + "@    IN NS  ns4.acme.example.\n"
                  "ns1  IN A   127.0.53.1\nns2  IN A   127.0.53.2\nns3  IN A   127.0.53.3\n"
                  "ns4  IN A   127.0.53.4\n")

GEO_ZONE = """$ORIGIN geo.example.
$TTL 3600
@    IN SOA ns1.acme.example. hostmaster.acme.example. 7 7200 3600 1209600 300
@    IN NS  ns1.acme.example.
@    IN NS  ns2.acme.example.
@    IN NS  ns3.acme.example.
"""

SITES = """
[[sites]]
name = "paris"
ipv4 = "45.90.160.60"
latitude = 48.88
longitude = 2.22
[[sites]]
name = "nuremberg"
ipv4 = "116.203.18.48"
latitude = 49.45
longitude = 11.08
[[sites]]
name = "ashburn"
ipv4 = "5.161.44.145"
latitude = 39.04
longitude = -77.49
"""

# What every instance shares.
COMMON = """# common.toml: the same on every nameserver
listen_port = 53
log_level = "debug"

[geo]
databases = ["city.mmdb"]
default_location = [48.86, 2.35]
""" + SITES + """
[[zones]]
zone = "geo.example"
file = "geo.example.zone"
[[zones.geo]]
name = "www"
[[zones.keys]]
key_path = "geo.example.pem"
"""

NS1 = """# ns1.toml
include = "common.toml"
listen_addrs_ipv4 = ["127.0.53.1"]

[server]
nsid = "ns1.acme.example"
http_listen = ["127.0.53.1:9153"]
control_socket = "ns1.sock"

[[zones]]
zone = "acme.example"
axfr_policy = "AllowSigned"
axfr_from = ["127.0.53.2", "127.0.53.3"]
notify = ["127.0.53.2:53", "127.0.53.3:53"]
[[zones.keys]]
key_path = "acme.example.pem"
[zones.stores]
type = "sqlite"
allow_update = true
journal_path = "acme.example.sqlite"
zone_path = "acme.example.zone"
[[zones.stores.tsig_keys]]
name = "lego.acme.example."
algorithm = "hmac-sha256"
key_file = "lego.acme.example.tsig"
allow_axfr = false
[[zones.stores.tsig_keys]]
name = "xfr.acme.example."
algorithm = "hmac-sha256"
key_file = "xfr.acme.example.tsig"
allow_names = ["no-such-name"]
"""

SECONDARY = """# ns{n}.toml
include = "common.toml"
listen_addrs_ipv4 = ["127.0.53.{n}"]

[server]
nsid = "ns{n}.acme.example"
http_listen = ["127.0.53.{n}:9153"]
control_socket = "ns{n}.sock"

[[zones]]
zone = "acme.example"
zone_type = "Secondary"
primaries = ["127.0.53.1:53"]
[zones.stores]
type = "sqlite"
journal_path = "acme.example.ns{n}.sqlite"
[[zones.stores.tsig_keys]]
name = "xfr.acme.example."
algorithm = "hmac-sha256"
key_file = "xfr.acme.example.tsig"
"""

AMSTERDAM = ("192.0.2.0", 26)      # ECS of a reader in Amsterdam (tests/fixtures/make_mmdb.pl)
AMSTERDAM_AT = (52.37, 4.90)
CHALLENGE = "_acme-challenge.%s.acme.example."


def soa(serial):
    return "acme.example. 10 IN SOA ns1.acme.example. hostmaster.acme.example. %d 3600 600 " \
           "86400 10" % serial


class LayoutThree(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        for tool in ("lego", "pebble", "unbound", "openssl"):
            if not shutil.which(tool):
                raise AssertionError("needs %s on PATH (scripts/deps.sh)" % tool)
        if os.environ.get("GEOACME_TEST_NETNS") != "1":
            raise AssertionError("run this file directly: it sets up its own namespaces")
        cls.t0 = int(time.time())
        cls.dir = tempfile.mkdtemp(prefix="geoacme-layout3-")
        cls.etc = os.path.join(cls.dir, "etc")      # /etc/geoacme of every host, one folder here
        os.makedirs(cls.etc)
        files = {"common.toml": COMMON, "geo.example.zone": GEO_ZONE,
                 "acme.example.zone": ACME_ZONE, "lego.acme.example.tsig": LEGO_SECRET,
                 "xfr.acme.example.tsig": XFR_SECRET}
        cls.ns = {}
        for n in (1, 2, 3):
            config = NS1 if n == 1 else SECONDARY.format(n=n)
            s = Server(config, files if n == 1 else {}, keep_dir=cls.etc,
                       config_name="ns%d.toml" % n)
            s.log_path = s.path("ns%d.log" % n)
            cls.ns[n] = s
        make_mmdb(cls.etc)
        make_key(os.path.join(cls.etc, "geo.example.pem"))
        make_key(os.path.join(cls.etc, "acme.example.pem"))
        for n in (1, 2, 3):
            cls.ns[n].start()
        cls.sites = parse_sites(SITES)
        cls.unbound = Unbound([], [], extra='\nstub-zone:\n  name: "acme.example"\n'
                              '  stub-addr: %s@53\n' % NS[1])
        cls.unbound.start()
        cls.pebble = Pebble(cls.dir, cls.unbound.port).start(free_port)

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "pebble", None):
            cls.pebble.stop()
        if getattr(cls, "unbound", None):
            cls.unbound.stop()
        bad = []
        for n, s in sorted(getattr(cls, "ns", {}).items()):
            rc = s.stop()
            if rc not in (None, 0):
                bad.append("ns%d exited with %s on SIGTERM:\n%s" % (n, rc, s.log()[-3000:]))
        shutil.rmtree(cls.dir, ignore_errors=True)
        if bad:
            raise AssertionError("\n".join(bad))

    # --- helpers ---

    def query(self, n, name, rdtype, ecs=None, nsid=False):
        q = dns.message.make_query(name, rdtype, use_edns=0, payload=1232)
        q.flags &= ~dns.flags.RD
        options = []
        if ecs:
            options.append(dns.edns.ECSOption(ecs[0], ecs[1], 0))
        if nsid:
            options.append(dns.edns.GenericOption(dns.edns.NSID, b""))
        if options:
            q.use_edns(0, 0, 1232, options=options)
        return dns.query.udp(q, NS[n], port=53, timeout=3)

    def answer(self, n, name, rdtype, **kw):
        """(rcode, flags, answer, authority, additional) as exact text."""
        r = self.query(n, name, rdtype, **kw)
        return (dns.rcode.to_text(r.rcode()), dns.flags.to_text(r.flags),
                rrs(r, "answer"), rrs(r, "authority"), rrs(r, "additional"))

    def serial(self, n):
        """The served SOA serial; None while the zone is not served (a restarted
        secondary answers REFUSED until its stored copy is loaded beside the loop)."""
        r = self.query(n, "acme.example.", "SOA")
        return r.answer[0][0].serial if r.answer else None

    def wait_serial(self, n, serial, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if self.serial(n) == serial:
                    return
            except dns.exception.Timeout:
                pass
            time.sleep(0.05)
        self.fail("ns%d never served serial %d:\n%s" % (n, serial, self.ns[n].log()[-3000:]))

    def metrics(self, n):
        with urllib.request.urlopen("http://%s:9153/metrics" % NS[n], timeout=10) as r:
            return r.read().decode()

    def metric(self, n, line_start):
        """The value of the one sample whose line starts with line_start (0 when absent)."""
        for line in self.metrics(n).splitlines():
            if line.startswith(line_start + " "):
                return int(float(line.rsplit(" ", 1)[1]))
        return 0

    def txt_queries(self, n):
        return self.metric(n, 'geoacme_queries_total{zone="acme.example.",qtype="TXT",'
                              'transport="udp",family="ipv4"}')

    def ctl(self, n, *args):
        return subprocess.run([BIN, "ctl", "-c", self.ns[n].config_path] + list(args),
                              capture_output=True, text=True, timeout=60)

    def ok(self, out):
        self.assertEqual((out.returncode, out.stderr), (0, ""), out.stdout)
        return out.stdout

    def update(self, add=(), delete=()):
        u = dns.update.UpdateMessage("acme.example.", keyring=dns.tsig.Key(
            LEGO_KEY, LEGO_SECRET, "hmac-sha256"))
        for name, ttl, rdtype, data in add:
            u.add(name, ttl, rdtype, data)
        for d in delete:
            u.delete(*d)
        r = dns.query.tcp(u, NS[1], port=53, timeout=5)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR")

    def lego(self, domain, timeout=30):
        env = dict(os.environ,
                   LEGO_CA_CERTIFICATES=self.pebble.ca_path,
                   RFC2136_NAMESERVER="%s:53" % NS[1],
                   RFC2136_TSIG_KEY=LEGO_KEY,
                   RFC2136_TSIG_ALGORITHM="hmac-sha256.",
                   RFC2136_TSIG_SECRET=base64.b64encode(LEGO_SECRET).decode(),
                   RFC2136_PROPAGATION_TIMEOUT=str(timeout),
                   RFC2136_POLLING_INTERVAL="1")
        path = os.path.join(self.dir, "lego-" + domain)
        # No --dns.disable-cp: the check asks ns1, ns2 and ns3, by name, on port 53.
        lego = ["lego", "--server", "https://127.0.0.1:%d/dir" % self.pebble.port, "--path",
                path, "--email", "acme@acme.example", "--accept-tos", "--key-type", "ec256",
                "--domains", domain, "--dns", "rfc2136", "--dns.resolvers", "%s:53" % NS[1],
                "run"]
        r = subprocess.run(lego, capture_output=True, text=True, env=env, timeout=180,
                           cwd=self.dir)
        return r, os.path.join(path, "certificates", domain + ".crt")

    def assert_certificate(self, r, cert, domain):
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        san = subprocess.run(["openssl", "x509", "-in", cert, "-noout", "-ext", "subjectAltName"],
                             capture_output=True, text=True, check=True).stdout
        self.assertIn("DNS:" + domain, san)

    def assert_same_everywhere(self, name, rdtype, want, **kw):
        for n in (1, 2, 3):
            self.assertEqual(self.answer(n, name, rdtype, **kw), want, "ns%d" % n)

    def assert_challenge_gone(self, label):
        """Lego cleaned its TXT up: NXDOMAIN from each instance, the same SOA."""
        serial = self.serial(1)
        for n in (2, 3):
            self.wait_serial(n, serial)
        self.assert_same_everywhere(CHALLENGE % label, "TXT",
                                    ("NXDOMAIN", "QR AA", [], [soa(serial)], []))

    # --- the walkthrough ---

    def test_0_three_instances_from_one_shared_file(self):
        # Each instance names itself with its per-host nsid ...
        for n in (1, 2, 3):
            r = self.query(n, "acme.example.", "SOA", nsid=True)
            self.assertEqual([o.data for o in r.options if o.otype == dns.edns.NSID],
                             [b"ns%d.acme.example" % n])
        # ... leaves from its own listen address with no setting for it ...
        for n in (1, 2, 3):
            self.assertIn("outgoing DNS (NOTIFY, SOA checks, transfers): from %s (IPv4, first "
                          "listen address)" % NS[n], self.ns[n].log())
        # ... and the copies came by AXFR from ns1, asked from ns2's and ns3's own addresses.
        for n in (2, 3):
            self.wait_serial(n, self.serial(1))
            self.assertRegex(self.ns[1].log(), r"AXFR of acme\.example\. \(serial \d+\) to %s "
                             r"\(key xfr\.acme\.example\.\)" % re.escape(NS[n]))
        self.assertNotIn("refused", self.ns[1].log())
        # The shared geo zone is signed by every instance with the one key.
        dnskey = self.answer(1, "geo.example.", "DNSKEY")
        self.assertEqual(dnskey[0], "NOERROR")
        self.assertEqual(len(dnskey[2]), 1)
        self.assert_same_everywhere("geo.example.", "DNSKEY", dnskey)
        self.assert_same_everywhere("acme.example.", "NS", (
            "NOERROR", "QR AA",
            ["acme.example. 60 IN NS ns1.acme.example.", "acme.example. 60 IN NS ns2.acme.example.",
             "acme.example. 60 IN NS ns3.acme.example."], [],
            ["ns1.acme.example. 60 IN A 127.0.53.1", "ns2.acme.example. 60 IN A 127.0.53.2",
             "ns3.acme.example. 60 IN A 127.0.53.3"]))

    def test_1_lego_asks_all_three(self):
        before = {n: self.txt_queries(n) for n in (1, 2, 3)}
        r, cert = self.lego("one.acme.example")
        self.assert_certificate(r, cert, "one.acme.example")
        # Pebble's resolver asks ns1 only (unbound's stub): the TXT queries
        # ns2 and ns3 answered were Lego's propagation check.
        for n in (1, 2, 3):
            self.assertGreater(self.txt_queries(n), before[n], "Lego never asked ns%d" % n)
        self.assert_challenge_gone("one")

    def test_2_ns3_killed_and_restarted(self):
        ns1, ns3 = self.ns[1], self.ns[3]
        self.ns[3].kill9()
        mark = len(ns1.log())
        # Lego's check fails on ns3 (and only there): it asks each NS.
        r, cert = self.lego("two.acme.example", timeout=4)
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout + r.stderr, r"->127\.0\.53\.3:53: read: connection refused")
        self.assertNotRegex(r.stdout + r.stderr, r"->127\.0\.53\.[12]:53")
        self.assertFalse(os.path.exists(cert))
        serial = self.serial(1)          # after Lego's cleanup
        self.wait_serial(2, serial)
        # ns1 warns once, naming ns3, within 15 s of the first unanswered NOTIFY.
        warning = (r"warn: acme\.example\.: secondary 127\.0\.53\.3:53 has not answered NOTIFY "
                   r"for 1[5-9] s \(serial \d+, \d+ tries\); still trying, not logged again until "
                   r"it answers")
        ns1.wait_log(warning, timeout=30)
        status = self.ok(self.ctl(1, "zone-status", "acme.example")).splitlines()
        self.assertEqual(status[:3], ["zone acme.example.", "role primary", "serial %d" % serial])
        self.assertEqual(status[4], "notify_targets 2")
        self.assertEqual(status[5], "notify_target 127.0.53.2:53 acknowledged_serial %d "
                         "unanswered_since 0" % serial)
        m = re.match(r"notify_target 127\.0\.53\.3:53 acknowledged_serial (\d+) "
                     r"unanswered_since (\d+)$", status[6])
        self.assertIsNotNone(m, status[6])
        acked, since = int(m.group(1)), int(m.group(2))
        self.assertLess(acked, serial)
        self.assertTrue(self.t0 <= since <= int(time.time()), (self.t0, since))
        text = self.metrics(1)
        self.assertIn('geoacme_notify_target_unanswered_since_timestamp_seconds{zone='
                      '"acme.example.",target="127.0.53.3:53"} %d\n' % since, text)
        self.assertIn('geoacme_notify_target_acknowledged_serial{zone="acme.example.",'
                      'target="127.0.53.3:53"} %d\n' % acked, text)
        self.assertIn('geoacme_notify_target_unanswered_since_timestamp_seconds{zone='
                      '"acme.example.",target="127.0.53.2:53"} 0\n', text)

        # Restarted, ns3 catches up on its own: the serial and the data of ns1.
        ns3.start()
        self.wait_serial(3, serial)
        self.assert_challenge_gone("two")
        # The NOTIFY it missed was re-sent (`ctl zone-notify`, else the next retry):
        # it answers, and the episode ends.
        self.assertEqual(self.ok(self.ctl(1, "zone-notify", "acme.example")),
                         "NOTIFY of acme.example sent to 2 targets (answers: zone-status)\n")
        ns1.wait_log(r"NOTIFY serial %d answered by 127\.0\.53\.3:53" % serial)
        self.assertIn("notify_target 127.0.53.3:53 acknowledged_serial %d unanswered_since 0"
                      % serial, self.ok(self.ctl(1, "zone-status", "acme.example")))
        self.assertEqual(len(re.findall(warning, ns1.log()[mark:])), 1)

        # With ns3 back, Lego passes again.
        before = self.txt_queries(3)
        r, cert = self.lego("three.acme.example")
        self.assert_certificate(r, cert, "three.acme.example")
        self.assertGreater(self.txt_queries(3), before)
        self.assert_challenge_gone("three")

    def ixfr_counts(self):
        return {n: self.metric(n, 'geoacme_transfers_in_total{result="ixfr"}') for n in (2, 3)}

    def edit(self, text, removed, added):
        """Writes ns1's zone file, checks it, reloads ns1 by SIGHUP; each
        secondary takes the difference by IXFR.  Returns the new serial."""
        ns1 = self.ns[1]
        old = self.serial(1)
        ns1.write("acme.example.zone", text)
        out = subprocess.run([BIN, "check", "-c", ns1.config_path], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("zone acme.example: %s changed since it was applied; serve applies this "
                      "difference (%d removed, %d added, serial %d -> %d):"
                      % (ns1.path("acme.example.zone"), removed, added, old, old + 1),
                      out.stdout)
        # The secondaries first take what came before (test_3's UPDATE): on
        # a loaded machine that IXFR could still be on its way, and counted
        # with the edit's.
        for n in (2, 3):
            self.wait_serial(n, old)
        ixfrs = self.ixfr_counts()
        mark = len(ns1.log())
        ns1.send_signal(signal.SIGHUP)
        ns1.wait_log(r"acme\.example\.: zone file \S+ applied as a difference: %d records "
                     r"removed, %d added, serial %d -> %d" % (removed, added, old, old + 1))
        for n in (2, 3):
            self.wait_serial(n, old + 1)
        log = ns1.log()[mark:]
        for n in (2, 3):
            # A difference (RFC 1995 4), not "IXFR (whole zone, AXFR form)": the
            # reload took every signature from the cache, so no serial bump
            # started the IXFR history over.
            self.assertRegex(log, r"IXFR of acme\.example\. \(serial %d\) to %s: \d+ records"
                             % (old + 1, re.escape(NS[n])))
        self.assertEqual(self.ixfr_counts(), {n: c + 1 for n, c in ixfrs.items()})
        for n in (2, 3):   # each applied it as it came: no divergence, no AXFR after it
            self.assertNotIn("diverges from our copy", self.ns[n].log())
        return old + 1

    def test_3_ns_set_edit_reaches_the_secondaries_by_ixfr(self):
        self.update(add=[("keep.acme.example.", 300, "TXT", '"made by UPDATE"')])
        self.edit(ACME_ZONE_FOUR, 0, 2)
        four = ["acme.example. 60 IN NS ns%d.acme.example." % i for i in (1, 2, 3, 4)]
        glue = ["ns%d.acme.example. 60 IN A 127.0.53.%d" % (i, i) for i in (1, 2, 3, 4)]
        self.assert_same_everywhere("acme.example.", "NS", ("NOERROR", "QR AA", four, [], glue))
        keep = ("NOERROR", "QR AA", ['keep.acme.example. 300 IN TXT "made by UPDATE"'], [], [])
        self.assert_same_everywhere("keep.acme.example.", "TXT", keep)
        # and back to three: ns4 leaves the set
        serial = self.edit(ACME_ZONE, 2, 0)
        self.assert_same_everywhere("acme.example.", "NS", ("NOERROR", "QR AA", four[:3], [],
                                                            glue[:3]))
        self.assert_same_everywhere("ns4.acme.example.", "A",
                                    ("NXDOMAIN", "QR AA", [], [soa(serial)], []))
        self.assert_same_everywhere("keep.acme.example.", "TXT", keep)

    def test_4_drain_a_site_on_every_instance(self):
        def www():
            return ("NOERROR", "QR AA", ["www.geo.example. %d IN A %s" % (ttl, a) for a in addrs],
                    [], [])

        both = decide(*AMSTERDAM_AT, "A", sites=self.sites, alive=None)
        self.assertEqual(both, (3600, ["45.90.160.60", "116.203.18.48"]))   # paris, nuremberg
        ttl, addrs = both
        self.assert_same_everywhere("www.geo.example.", "A", www(), ecs=AMSTERDAM)
        for n in (1, 2, 3):
            self.assertEqual(self.ok(self.ctl(n, "site-drain", "paris")),
                             "site paris: drained (was auto): out of every geo answer\n")
        drained = decide(*AMSTERDAM_AT, "A", sites=self.sites, alive=["nuremberg", "ashburn"])
        self.assertEqual(drained, (120, ["116.203.18.48"]))
        ttl, addrs = drained
        self.assert_same_everywhere("www.geo.example.", "A", www(), ecs=AMSTERDAM)
        for n in (1, 2, 3):
            self.assertIn("site paris health unchecked admin drained",
                          self.ok(self.ctl(n, "status")))
            self.assertIn('geoacme_site_admin_state{site="paris",state="drained"} 1\n',
                          self.metrics(n))
        for n in (1, 2, 3):
            self.ok(self.ctl(n, "site-auto", "paris"))
        ttl, addrs = both
        self.assert_same_everywhere("www.geo.example.", "A", www(), ecs=AMSTERDAM)
        for n in (1, 2, 3):
            self.assertIn('geoacme_site_admin_state{site="paris",state="auto"} 1\n',
                          self.metrics(n))


if __name__ == "__main__":
    rc = run_in_own_namespaces(os.path.abspath(__file__), HOSTS)
    if rc is not None:
        sys.exit(rc)
    main()
