# SPDX-License-Identifier: MIT
"""Automatic key rollover ([zones.key_policy], doc/dnssec.md), in real time.

One setup for every case (a module fixture, to keep the file short): a Knot
parent on loopback serving and signing example.com (which takes our DS by
TSIG-signed UPDATE) and example.net (which takes nothing); geoacme serving
child.example.com and child.example.net, each with a key policy of seconds
(dnskey_ttl 2 s, propagation_delay 1 s, lifetime 10 s); child.example.com
copied by a geoacme secondary and a Knot secondary (NOTIFY, AXFR/IXFR).

Validators ask all through child.example.com's rollovers: for each of the
three servers (the primary and the two secondaries), an unbound whose cache
is capped at 0 s (it fetches and validates DS and DNSKEY again for every
answer) and a kresd with its ordinary cache (TTLs as given: its 5 s minimum
TTL set to 0, since the test's TTLs are 2 s), both trusting only the Knot
parent's key.  kresd validates only what it forwards, and forwards every
query of one client question to one place, so it forwards to an unbound
that only iterates (no validation, no cache) and fetches the DS from the
parent and the rest from the child's server.  Every answer must be
NOERROR with AD and the exact address (www), or NXDOMAIN with AD (nope),
with TTLs no higher than the zone's 2 s; each resolver must have answered
in each phase (one key, the first rollover, between the rollovers, the
second rollover).  While the primary is killed (kill -9) and
restarted, the resolvers that ask it wait: a dead server is not a rollover.
Each rollover that a lifetime starts is held (test hook
GEOACME_TEST_ROLLOVER_HOLD, a file) until every resolver has answered with
the keys as they were: on a loaded machine the nine resolvers could take
longer to start than the 10 s lifetime, and the "one key" phase was gone
before kresd had answered once.

The cases run in order (unittest sorts them by name):
  test_1_rollovers   two rollovers in a row in child.example.com, with a
                     kill -9 in the middle of the first: every RRset doubly
                     signed during the roll, at the primary and at both
                     secondaries; the old key withdrawn only after the
                     parent served the new DS; the old keys' files deleted;
                     not one validation failure.
  test_2_stuck       child.example.net: the parent refuses the push and never
                     shows the DS: the old key stays and signs, a warning says
                     why, through a kill -9; the DS set by hand at the parent
                     lets the rollover finish; the configured key file is kept
                     and `check` notes the config names a retired key.
"""
import os
import re
import subprocess
import sys
import threading
import time
import unittest
import base64

import dns.exception
import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype

sys.path.insert(0, os.path.dirname(__file__))
from harness import BASE_CONFIG, Server, free_port, main, needs_test_hooks   # noqa: E402
from resolvers import Kresd, Unbound   # noqa: E402
import secondaries   # noqa: E402

SECRET = base64.b64encode(b"geoacme-rollover-test-secret-32b").decode()


class KnotParent:
    """knotd serving and signing the parent zones."""

    def __init__(self, d):
        self.dir = d
        self.port = free_port()
        zones = ""
        for z, acl in (("example.com", "    acl: ds_update\n"), ("example.net", "")):
            with open(os.path.join(d, z + ".zone"), "w") as f:
                f.write("$ORIGIN %s.\n$TTL 2\n@ IN SOA ns1 hostmaster 1 7200 3600 1209600 2\n"
                        "@ IN NS ns1\nns1 IN A 127.0.0.1\nchild IN NS ns1.child\n"
                        "ns1.child IN A 127.0.0.1\n" % z)
            zones += ('  - domain: %s\n    file: "%s/%s.zone"\n    dnssec-signing: on\n'
                      '    dnssec-policy: fast\n%s' % (z, d, z, acl))
        with open(os.path.join(d, "knot.conf"), "w") as f:
            f.write("""server:
  rundir: "{d}"
  listen: 127.0.0.1@{port}
  pidfile: "{d}/knot.pid"
log:
  - target: "{d}/knot.log"
    any: info
database:
  storage: "{d}"
key:
  - id: ds.example.com.
    algorithm: hmac-sha256
    secret: {secret}
acl:
  - id: ds_update
    key: ds.example.com.
    action: update
policy:
  - id: fast
    algorithm: ecdsap256sha256
    single-type-signing: on
    dnskey-ttl: 2
    zone-max-ttl: 2
template:
  - id: default
    storage: "{d}"
    zonefile-sync: -1
    journal-content: all
zone:
{zones}""".format(d=d, port=self.port, secret=SECRET, zones=zones))
        self.proc = subprocess.Popen(["knotd", "-c", os.path.join(d, "knot.conf")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 15
        while time.time() < deadline:
            if all(self.query(z + ".", "DNSKEY", patience=0).answer
                   for z in ("example.com", "example.net")):
                return
            time.sleep(0.2)
        raise AssertionError("knotd did not sign its zones in time")

    def query(self, name, rdtype, patience=10):
        """knotd's answer; asked again for patience seconds while none comes
        (a loaded machine loses or delays a datagram: not an empty DS set)."""
        deadline = time.time() + patience
        while True:
            try:
                return dns.query.udp(dns.message.make_query(name, rdtype), "127.0.0.1",
                                     port=self.port, timeout=1)
            except Exception:
                if time.time() >= deadline:
                    return dns.message.make_query(name, rdtype)   # no answer: empty sections

    def ds_tags(self, zone):
        r = self.query(zone, "DS")
        return sorted(rd.key_tag for rrset in r.answer if rrset.rdtype == dns.rdatatype.DS
                      for rd in rrset)

    def anchor(self, zone):
        """The DS of the parent zone's key, as a trust anchor."""
        out = subprocess.run(["keymgr", "-c", os.path.join(self.dir, "knot.conf"), zone, "ds"],
                             capture_output=True, text=True, check=True).stdout
        return [l for l in out.splitlines() if " DS " in l and " 13 2 " in l][0]

    def knotc(self, *args):
        return subprocess.run(["knotc", "-c", os.path.join(self.dir, "knot.conf")] + list(args),
                              capture_output=True, text=True, timeout=20)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


# A fixed port: the resolver's stub must still reach the server after kill -9.
CONFIG = BASE_CONFIG.replace("listen_port = 0", "listen_port = {gport}") + """
[server]
http_listen = ["127.0.0.1:0"]
[[zones]]
zone = "child.example.com"
zone_type = "Primary"
file = "child.example.com.zone"
axfr_policy = "AllowAll"
notify = ["127.0.0.1:{sport}", "127.0.0.1:{knport}"]
[zones.key_policy]
lifetime = "10s"
dnskey_ttl = "2s"
propagation_delay = "1s"
key_dir = "keys"
parent = ["127.0.0.1:{kport}"]
ds_push = "127.0.0.1:{kport}"
ds_push_key = {{ name = "ds.example.com.", algorithm = "hmac-sha256", secret = "{secret}" }}

[[zones]]
zone = "child.example.net"
zone_type = "Primary"
file = "child.example.net.zone"
[[zones.keys]]
key_path = "first.pem"
[zones.key_policy]
lifetime = "10s"
dnskey_ttl = "2s"
propagation_delay = "1s"
key_dir = "keys"
parent = ["127.0.0.1:{kport}"]
ds_push = "127.0.0.1:{kport}"
"""


def child_zone(z):
    return ("$ORIGIN %s.\n$TTL 2\n@ IN SOA ns1 hostmaster 1 7200 3600 1209600 2\n@ IN NS ns1\n"
            "ns1 IN A 127.0.0.1\nwww IN A 192.0.2.1\n" % z)


# The geoacme secondary of child.example.com.
SECONDARY = BASE_CONFIG.replace("listen_port = 0", "listen_port = {sport}") + """
[[zones]]
zone = "child.example.com"
zone_type = "Secondary"
primaries = ["127.0.0.1:{gport}"]
[zones.stores]
type = "sqlite"
journal_path = "copy.sqlite"
"""

# What the validators ask, and the one right answer: (rcode, answer records).
QUESTIONS = (("www.child.example.com.", "A", dns.rcode.NOERROR,
              ["www.child.example.com. A 192.0.2.1"]),
             ("nope.child.example.com.", "A", dns.rcode.NXDOMAIN, []))


class Asker(threading.Thread):
    """Asks one validating resolver QUESTIONS in turn until stopped, and
    tallies the answers by phase; anything but the right answer with AD is
    a failure, kept with the time and the response.  `gate` (a lock) is
    held around each question: the test takes it to stop the asking."""

    def __init__(self, name, resolver, phase, gate=None):
        super().__init__(daemon=True)
        self.label, self.resolver, self.phase, self.gate = name, resolver, phase, gate
        self.stopping = threading.Event()
        self.answers = {}
        self.failures = []

    def ask(self, name, rdtype, rcode, want):
        try:
            r = self.resolver.query(name, rdtype, timeout=3)
        except Exception as e:   # no answer at all is a failure too
            return "%s %s: %r" % (name, rdtype, e)
        got = sorted("%s %s %s" % (rrset.name, dns.rdatatype.to_text(rrset.rdtype), rd.to_text())
                     for rrset in r.answer if rrset.rdtype != dns.rdatatype.RRSIG for rd in rrset)
        ttls = [rrset.ttl for rrset in r.answer]
        if (r.rcode() != rcode or not r.flags & dns.flags.AD or got != want or
                any(t > 2 for t in ttls)):   # never above the zone's TTL
            return "%s %s: %s AD=%s %s TTLs %s" % (name, rdtype, dns.rcode.to_text(r.rcode()),
                                                  bool(r.flags & dns.flags.AD), got, ttls)
        return None

    def run(self):
        while not self.stopping.is_set():
            for question in QUESTIONS:
                if self.gate:
                    self.gate.acquire()
                try:
                    phase = self.phase[0]
                    bad = self.ask(*question)
                finally:
                    if self.gate:
                        self.gate.release()
                if bad:
                    self.failures.append("%.2f %s [%s]: %s" % (time.time(), self.label, phase, bad))
                else:
                    self.answers[phase] = self.answers.get(phase, 0) + 1
            time.sleep(0.05)


def key_states(server, zone):
    """{tag: state} from the key state file."""
    try:
        with open(server.path("keys/%s.keys" % zone)) as f:
            return {int(m.group(1)): m.group(2) for m in re.finditer(r"^key (\d+) \S+ (\S+)", f.read(), re.M)}
    except OSError:
        return {}


def wait_for(what, pred, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


class Rollover(unittest.TestCase):
    maxDiff = None
    @classmethod
    def setUpClass(cls):
        try:
            cls.set_up()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def set_up(cls):
        cls.geo = Server("", files={"child.example.com.zone": child_zone("child.example.com"),
                                    "child.example.net.zone": child_zone("child.example.net")})
        # No rollover starts by itself before the validators have answered.
        cls.hold = cls.geo.write("hold", "")
        cls.geo.env = dict(os.environ, GEOACME_TEST_ROLLOVER_HOLD=cls.hold)
        os.makedirs(cls.geo.path("keys"))
        os.makedirs(cls.geo.path("knot"))
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-out", cls.geo.path("first.pem")], check=True,
                       stderr=subprocess.DEVNULL)
        os.chmod(cls.geo.path("first.pem"), 0o600)
        cls.knot = KnotParent(cls.geo.path("knot"))
        gport, sport, knport = free_port(), free_port(), free_port()
        with open(cls.geo.config_path, "w") as f:
            f.write(CONFIG.format(kport=cls.knot.port, secret=SECRET, gport=gport, sport=sport,
                                  knport=knport))
        cls.geo.start()
        # The first DS of each child at its parent, by hand (knotc), as an operator does once.
        for child, parent in (("child.example.com", "example.com"),
                              ("child.example.net", "example.net")):
            ds = subprocess.run([cls.geo_bin(), "ds", "-c",
                                 cls.geo.config_path, child], capture_output=True, text=True,
                                check=True).stdout.split()
            cls.set_parent_ds(parent, child, " ".join(ds[3:]))
        cls.start_validators(sport, knport)

    @classmethod
    def start_validators(cls, sport, knport):
        """The two secondaries of child.example.com, and the validating
        resolvers that ask the primary and each secondary (see above)."""
        zone = "child.example.com."
        cls.sec = Server(SECONDARY.format(sport=sport, gport=cls.geo.port))
        cls.sec.start()
        cls.knotsec = secondaries.Knot([zone], cls.geo.port, port=knport)
        cls.knotsec.start()
        serial = cls.geo.query(zone, "SOA").answer[0][0].serial
        for sec in (cls.sec, cls.knotsec):
            wait_for("%s serial %d at a secondary" % (zone, serial), lambda: cls.sec_serial(
                sec.port) == serial, 20)
        anchor = cls.knot.anchor("example.com")
        cls.phase = ["one key"]
        cls.primary_gate = threading.Lock()
        cls.daemons, cls.askers = [], []
        for label, port in (("primary", cls.geo.port), ("geoacme secondary", sport),
                            ("knot secondary", knport)):
            stubs = [("example.com", cls.knot.port), ("child.example.com", port)]
            unbound = Unbound(stubs, [anchor])          # cache-max-ttl: 0
            relay = Unbound(stubs, [], validate=False)
            cls.daemons += [unbound, relay]
            unbound.start()
            relay.start()
            kresd = Kresd([("example.com", relay.port)], [anchor], extra=["cache.min_ttl(0)"])
            cls.daemons.append(kresd)
            kresd.start()
            gate = cls.primary_gate if label == "primary" else None
            cls.askers += [Asker("unbound/" + label, unbound, cls.phase, gate),
                           Asker("kresd/" + label, kresd, cls.phase, gate)]
        for a in cls.askers:
            a.start()

    @classmethod
    def sec_serial(cls, port):
        try:
            r = dns.query.udp(dns.message.make_query("child.example.com.", "SOA"), "127.0.0.1",
                              port=port, timeout=1)
            return r.answer[0][0].serial if r.answer else None
        except Exception:
            return None

    @staticmethod
    def geo_bin():
        from harness import BIN
        return BIN

    @classmethod
    def set_parent_ds(cls, parent, child, rdata):
        k = cls.knot
        owner = child + "."
        for args in (("zone-begin", parent), ("zone-unset", parent, owner, "DS"),
                     ("zone-set", parent, owner, "2", "DS", rdata), ("zone-commit", parent)):
            r = k.knotc(*args)
            if r.returncode != 0 and args[0] != "zone-unset":
                raise AssertionError("knotc %s: %s %s" % (args, r.stdout, r.stderr))
        tag = int(rdata.split()[0])
        wait_for("DS %u at %s" % (tag, parent), lambda: tag in k.ds_tags(child + "."), 15)

    @classmethod
    def stop_askers(cls):
        for a in getattr(cls, "askers", []):
            a.stopping.set()
        for a in getattr(cls, "askers", []):
            a.join(10)

    @classmethod
    def tearDownClass(cls):
        cls.stop_askers()
        for d in getattr(cls, "daemons", []):
            d.stop()
        cls.daemons = []
        if getattr(cls, "knotsec", None):
            cls.knotsec.cleanup()
            cls.knotsec = None
        if getattr(cls, "sec", None):
            cls.sec.cleanup()
            cls.sec = None
        if getattr(cls, "geo", None):
            cls.geo.stop()
            cls.geo.cleanup()
        if getattr(cls, "knot", None):
            cls.knot.stop()
            cls.knot = None

    def sig_tags(self, name, rdtype, port=None):
        q = dns.message.make_query(name, rdtype, want_dnssec=True)
        for tries in range(5, 0, -1):   # a loaded machine may lose or delay a datagram
            try:
                r = dns.query.udp(q, "127.0.0.1", port=port or self.geo.port, timeout=2)
                break
            except dns.exception.Timeout:
                if tries == 1:
                    raise
        return sorted(rd.key_tag for rrset in r.answer if rrset.rdtype == dns.rdatatype.RRSIG
                      for rd in rrset)

    def release_rollover(self):
        """Lets the held rollover start once every validator has answered
        in the phase now running (however long a loaded machine takes)."""
        phase = self.phase[0]
        wait_for("every validator's answer with %s" % phase,
                 lambda: all(a.answers.get(phase) for a in self.askers), 120)
        os.unlink(self.hold)

    @needs_test_hooks
    def test_1_rollovers(self):
        geo, knot, zone = self.geo, self.knot, "child.example.com"
        if True:
            first = wait_for("a first active key", lambda: [t for t, s in key_states(geo, zone).items()
                                                            if s == "active"], 10)[0]
            self.release_rollover()
            # Step 1 of the first rollover: two keys sign every RRset.
            new = wait_for("an incoming key", lambda: [t for t, s in key_states(geo, zone).items()
                                                      if s == "incoming"], 20)[0]
            geo.write("hold", "")   # the second rollover waits for the validators too
            both = sorted([first, new])
            self.phase[0] = "first rollover"
            wait_for("double signatures", lambda: self.sig_tags("www.child.example.com.", "A") == both, 15)
            # The secondaries have them too (NOTIFY, then a transfer).
            for port in (self.sec.port, self.knotsec.port):
                wait_for("double signatures at the secondary on port %d" % port,
                         lambda: self.sig_tags("www.child.example.com.", "A", port) == both, 15)
            for name, rdtype in (("child.example.com.", "SOA"), ("child.example.com.", "DNSKEY"),
                                 ("child.example.com.", "NSEC"), ("child.example.com.", "CDS")):
                self.assertEqual(self.sig_tags(name, rdtype), both, "%s %s" % (name, rdtype))
            # kill -9 in the middle of it, and start again: it resumes.
            # The resolvers that ask the primary wait meanwhile.
            with self.primary_gate:
                geo.kill9()
                geo.start()
            self.assertIn(new, key_states(geo, zone))
            wait_for("the first key withdrawn", lambda: key_states(geo, zone).get(first) in
                     ("removed", "retired"), 20)
            self.phase[0] = "between rollovers"
            # The parent holds exactly the new DS (the push replaced the RRset).
            self.assertEqual(knot.ds_tags(zone + "."), [new])
            wait_for("the first key retired", lambda: key_states(geo, zone).get(first) == "retired", 20)
            tags = self.sig_tags("www.child.example.com.", "A")
            self.assertIn(new, tags)
            self.assertNotIn(first, tags)
            self.assertFalse(os.path.exists(geo.path("keys/%s.%u.pem" % (zone, first))),
                             "the first (generated) key's file is deleted")
            self.release_rollover()
            # The second rollover starts by itself, lifetime after the key started signing.
            third = wait_for("a second rollover", lambda: [t for t, s in key_states(geo, zone).items()
                                                          if s == "incoming"], 20)[0]
            self.phase[0] = "second rollover"
            wait_for("key %u withdrawn" % new, lambda: key_states(geo, zone).get(new) in
                     ("removed", "retired"), 20)
            self.assertEqual(knot.ds_tags(zone + "."), [third])
            wait_for("key %u retired" % new, lambda: key_states(geo, zone).get(new) == "retired", 20)
            self.assert_validated_all_through()
        # The old key went only after the parent served the new DS (the log says when).
        log = geo.log()
        self.assertIn("keys: the parent (127.0.0.1:%d) took the DS" % knot.port, log)
        for old, nk in ((first, new), (new, third)):
            seen = log.index("keys: every parent server serves DS %u (TTL 2)" % nk)
            # ... which it learnt by asking, after the push (not from the
            # answers about the previous key: see doc/dnssec.md).
            self.assertLess(log.index("keys: pushing DS %u to " % nk), seen)
            self.assertLess(seen, log.index("keys: key %u (generated) outgoing -> removed" % old))

        m = self.metrics()
        self.assertIn('geoacme_dnssec_key_state{zone="child.example.com.",tag="%u",state="active"} 1' % third, m)
        # Two zones with a key policy: each family's lines are one group,
        # HELP, TYPE, then its samples (the text format's rule, which
        # promtool does not check; they were interleaved zone by zone).
        r = subprocess.run(["promtool", "check", "metrics"], input=m, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        groups = []
        for line in m.splitlines():
            name = line.split()[2] if line.startswith("# ") else re.split(r"[{ ]", line)[0]
            name = re.sub(r"_(bucket|sum|count)$", "", name) if not line.startswith("# ") else name
            if not groups or groups[-1] != name:
                groups.append(name)
        self.assertEqual([g for g in set(groups) if groups.count(g) > 1], [])
        self.assertRegex(m, r'geoacme_dnssec_key_next_transition_seconds\{zone="child.example.net."\} \d+\n')

    def assert_validated_all_through(self):
        """No validator ever failed, and each answered in every phase."""
        self.stop_askers()
        failed = {a.label: len(a.failures) for a in self.askers if a.failures}
        self.assertEqual(failed, {}, "failed answers, the first of each:\n" + "\n".join(
            a.failures[0] for a in self.askers if a.failures))
        for a in self.askers:
            for phase in ("one key", "first rollover", "between rollovers", "second rollover"):
                self.assertGreater(a.answers.get(phase, 0), 0, "%s answered nothing with %s: %s"
                                   % (a.label, phase, a.answers))
        print("validated answers: " + ", ".join("%s %d" % (a.label, sum(a.answers.values()))
                                                for a in self.askers), file=sys.stderr)

    def run(self, result=None):
        # On a failure, the servers' logs say why.
        n = len(result.failures) + len(result.errors) if result else 0
        out = super().run(result)
        if result and len(result.failures) + len(result.errors) > n:
            print("--- geoacme log (end) ---\n" + self.geo.log()[-6000:])
        return out

    def metrics(self):
        import urllib.request
        port = self.geo.http_port()
        return urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=3).read().decode()

    def test_2_stuck(self):
        geo, knot, zone = self.geo, self.knot, "child.example.net"
        if os.path.exists(self.hold):   # test_1 failed or was skipped: nothing is held now
            os.unlink(self.hold)
        first = wait_for("the configured key", lambda: [t for t, s in key_states(geo, zone).items()
                                                        if s in ("active", "outgoing")], 5)[0]
        # Its rollover started by itself; the parent refuses the push (no ACL)
        # and never shows the new DS: the old key stays, signing, with a warning.
        new = wait_for("the new key waiting for the parent",
                       lambda: [t for t, s in key_states(geo, zone).items() if s == "active"
                                and t != first], 40)[0]
        geo.wait_log(r"keys: the parent does not serve the new DS yet, the old key stays: "
                     r"127\.0\.0\.1:%d: serves DS %u, not DS %u" % (knot.port, first, new), 20)
        self.assertRegex(geo.log(), r"keys: the parent \(127\.0\.0\.1:%d\) refused the DS "
                         r"UPDATE: rcode \d+" % knot.port)
        geo.kill9()
        geo.start()
        time.sleep(3)
        self.assertEqual(key_states(geo, zone), {first: "outgoing", new: "active"})
        self.assertEqual(self.sig_tags("www.child.example.net.", "A"), sorted([first, new]))
        # The control channel and the status page show the same states.
        def ctl(*args):
            return subprocess.run([self.geo_bin(), "ctl", "-c", geo.config_path] + list(args),
                                  capture_output=True, text=True, timeout=30)
        r = ctl("key-status", zone)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"(?m)^zone child\.example\.net\.$")
        self.assertRegex(r.stdout, r"(?m)^key %u outgoing " % first)
        self.assertRegex(r.stdout, r"(?m)^key %u active " % new)
        self.assertRegex(r.stdout, r"(?m)^next ")
        r = ctl("key-roll", zone)   # one is under way: refused, nothing changes
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(key_states(geo, zone), {first: "outgoing", new: "active"})
        r = ctl("key-status", "nope.example")
        self.assertEqual(r.returncode, 1)
        self.assertIn("unknown zone", r.stderr)
        import urllib.request
        page = urllib.request.urlopen("http://127.0.0.1:%d/" % geo.http_port(), timeout=3).read().decode()
        self.assertIn("<h2>DNSSEC keys</h2>", page)
        self.assertRegex(page, r"key %u outgoing " % first)
        # The DS changed by hand at the parent (a registrar): the rollover ends.
        ds = subprocess.run([self.geo_bin(), "ds", "-c", geo.config_path, zone],
                            capture_output=True, text=True, check=True).stdout.split()
        self.assertEqual(int(ds[3]), new, "geoacme ds prints the key the parent should have")
        self.set_parent_ds("example.net", zone, " ".join(ds[3:]))
        wait_for("the configured key retired", lambda: key_states(geo, zone).get(first) == "retired", 20)
        tags = self.sig_tags("www.child.example.net.", "A")
        self.assertIn(new, tags)
        self.assertNotIn(first, tags)
        self.assertTrue(os.path.exists(geo.path("first.pem")), "a configured key file is kept")
        chk = subprocess.run([self.geo_bin(), "check", "-c", geo.config_path],
                             capture_output=True, text=True)
        self.assertEqual(chk.returncode, 0, chk.stderr)
        self.assertRegex(chk.stderr, r"note: \[\[zones.keys\]\] names key %u \(.*first.pem\), "
                         r"which the key state says is retired" % first)


if __name__ == "__main__":
    main()
