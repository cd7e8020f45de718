# SPDX-License-Identifier: MIT
"""The rollover's talk with the parent, and the rollover an operator starts
(doc/dnssec.md, issue #22.3, #21.1), each with its own light set-up: a
policy that never rolls by itself (lifetime 0), TTLs of 1 s and a
propagation_delay of 2 s, so the only
rollover is the one `geoacme ctl key-roll` starts; about ten seconds each.

  KnotParentSource   a Knot parent whose update ACL names exactly the
                     address in [server] source_ipv4 (and the TSIG key):
                     the push and the DS polls leave from it, the parent
                     takes the DS, the roll completes (key-roll when none
                     runs; refused while one runs).
  FakeParent         a parent in Python (dnspython) that answers the signed
                     push NOERROR without TSIG, then NOERROR with a wrong
                     MAC: neither counts (RFC 8945 section 5.4), the push goes
                     again each round; then a correctly signed NOERROR does.
                     Mid-rollover, `geoacme ds` (text and --format desec)
                     prints exactly the new key's DS.
"""
import base64
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest

import dns.dnssec
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.query
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import dns.tsig
import dns.tsigkeyring

sys.path.insert(0, os.path.dirname(__file__))
from harness import BASE_CONFIG, BIN, Server, free_port, main   # noqa: E402

SECRET = base64.b64encode(b"geoacme-ds-push-test-secret-32by").decode()
WRONG = base64.b64encode(b"not-the-secret-the-child-signs-w").decode()
SOURCE = "127.0.0.23"   # the child's outgoing address, the one the parent's ACL names


def child_zone(z):
    return ("$ORIGIN %s.\n$TTL 1\n@ IN SOA ns1 hostmaster 1 7200 3600 1209600 1\n@ IN NS ns1\n"
            "ns1 IN A 127.0.0.1\nwww IN A 192.0.2.1\n" % z)


def config(zone, pport, key_name, server_table=""):
    return BASE_CONFIG + """
[server]
{server}
[[zones]]
zone = "{zone}"
zone_type = "Primary"
file = "{zone}.zone"
[[zones.keys]]
key_path = "first.pem"
[zones.key_policy]
lifetime = "0"
dnskey_ttl = "1s"
propagation_delay = "2s"
key_dir = "keys"
parent = ["127.0.0.1:{pport}"]
ds_push = "127.0.0.1:{pport}"
ds_push_key = {{ name = "{key}", algorithm = "hmac-sha256", secret = "{secret}" }}
""".format(server=server_table, zone=zone, pport=pport, key=key_name, secret=SECRET)


def make_child(zone, pport, key_name, server_table=""):
    """A geoacme server (not started) with first.pem as its first key."""
    geo = Server(config(zone, pport, key_name, server_table),
                 files={zone + ".zone": child_zone(zone)})
    os.makedirs(geo.path("keys"))
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-out", geo.path("first.pem")], check=True,
                   stderr=subprocess.DEVNULL)
    os.chmod(geo.path("first.pem"), 0o600)
    return geo


def run_bin(*args):
    return subprocess.run([BIN] + list(args), capture_output=True, text=True, timeout=30)


def key_states(server, zone):
    """{tag: state} from the key state file."""
    try:
        with open(server.path("keys/%s.keys" % zone.rstrip("."))) as f:
            return {int(m.group(1)): m.group(2)
                    for m in re.finditer(r"^key (\d+) \S+ (\S+)", f.read(), re.M)}
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


def tagged(states, state):
    return [t for t, s in states.items() if s == state]


class ChildCase(unittest.TestCase):
    """What both cases do with the child: ctl, its signatures, its log on failure."""

    def ctl(self, *args):
        return run_bin("ctl", "-c", self.geo.config_path, *args)

    def sig_tags(self, name, rdtype):
        q = dns.message.make_query(name, rdtype, want_dnssec=True)
        r = dns.query.udp(q, "127.0.0.1", port=self.geo.port, timeout=2)
        return sorted(rd.key_tag for rrset in r.answer if rrset.rdtype == dns.rdatatype.RRSIG
                      for rd in rrset)

    def start_roll(self, zone):
        """key-roll when no rollover runs: a new key published and signing beside
        the first; key-status shows it; a second key-roll is refused."""
        geo = self.geo
        first = wait_for("the first key active", lambda: tagged(key_states(geo, zone), "active"),
                         5)[0]
        r = self.ctl("key-status", zone)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"(?m)^next -: lifetime 0: never rolls$")
        r = self.ctl("key-roll", zone)
        self.assertEqual((r.returncode, r.stdout),
                         (0, "started: a rollover of %s (see key-status and the log)\n" % zone),
                         r.stderr)
        states = key_states(geo, zone)
        new = tagged(states, "incoming")
        self.assertEqual(len(new), 1, states)
        new = new[0]
        self.assertEqual(states, {first: "active", new: "incoming"})
        r = self.ctl("key-status", zone)
        self.assertRegex(r.stdout, r"(?m)^key %u incoming generated %s$"
                         % (new, re.escape(geo.path("keys/%s%u.pem" % (zone, new)))))
        # The re-sign with both keys runs beside the loop; until it is served,
        # key-status says it waits for it (test_rollover_resign covers that step).
        wait_for("the next step after the re-sign",
                 lambda: re.search(r"(?m)^next \S+: the new key becomes the parent's",
                                   self.ctl("key-status", zone).stdout), 5)
        both = sorted([first, new])
        wait_for("double signatures", lambda: self.sig_tags("www." + zone, "A") == both, 5)
        for name, rdtype in (("www." + zone, "A"), (zone, "DNSKEY"), (zone, "SOA")):
            self.assertEqual(self.sig_tags(name, rdtype), both, "%s %s" % (name, rdtype))
        r = self.ctl("key-roll", zone)   # one runs: refused, no third key
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("a rollover is already running", r.stdout + r.stderr)
        self.assertEqual(set(key_states(geo, zone)), {first, new})
        return first, new

    def finish_roll(self, zone, first, new):
        geo = self.geo
        wait_for("key %u retired" % first, lambda: key_states(geo, zone).get(first) == "retired",
                 20)
        self.assertEqual(key_states(geo, zone), {first: "retired", new: "active"})
        self.assertEqual(self.sig_tags("www." + zone, "A"), [new])
        self.assertTrue(os.path.exists(geo.path("first.pem")), "a configured key file is kept")

    def run(self, result=None):
        n = len(result.failures) + len(result.errors) if result else 0
        out = super().run(result)
        if result and len(result.failures) + len(result.errors) > n:
            print("--- geoacme log (end) ---\n" + getattr(self, "geo_log", "")[-6000:])
        return out


class KnotParentSource(ChildCase):
    """The push leaves from [server] source_ipv4, which the parent's ACL names."""

    ZONE = "child.example.com."

    def setUp(self):
        self.knot = None
        self.geo = None
        kport = free_port()
        self.geo = make_child(self.ZONE[:-1], kport, "ds.example.com.",
                              'source_ipv4 = "%s"\n' % SOURCE)
        d = self.geo.path("knot")
        os.makedirs(d)
        first_ds = run_bin("ds", "-c", self.geo.config_path, self.ZONE).stdout.split()
        with open(os.path.join(d, "example.com.zone"), "w") as f:
            f.write("$ORIGIN example.com.\n$TTL 1\n@ IN SOA ns1 hostmaster 1 7200 3600 1209600 1\n"
                    "@ IN NS ns1\nns1 IN A 127.0.0.1\nchild IN NS ns1.child\n"
                    "ns1.child IN A 127.0.0.1\nchild 1 IN DS %s\n" % " ".join(first_ds[3:]))
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
    address: {source}
    key: ds.example.com.
    action: update
template:
  - id: default
    storage: "{d}"
    zonefile-sync: -1
    journal-content: all
zone:
  - domain: example.com
    file: "{d}/example.com.zone"
    acl: ds_update
""".format(d=d, port=kport, secret=SECRET, source=SOURCE))
        self.kport = kport
        self.knot = subprocess.Popen(["knotd", "-c", os.path.join(d, "knot.conf")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for("knotd serving example.com", lambda: self.knot_ds() is not None, 15)
        self.geo.start()

    def tearDown(self):
        if self.geo:
            self.geo.stop()
            self.geo_log = self.geo.log()
            self.geo.cleanup()
        if self.knot:
            self.knot.terminate()
            self.knot.wait(10)

    def knot_ds(self):
        """The DS tags Knot serves for the child, or None when it does not answer."""
        try:
            r = dns.query.udp(dns.message.make_query(self.ZONE, "DS"), "127.0.0.1",
                              port=self.kport, timeout=1)
        except Exception:
            return None
        return sorted(rd.key_tag for rrset in r.answer if rrset.rdtype == dns.rdatatype.DS
                      for rd in rrset)

    def test_push_from_the_source_address(self):
        zone = self.ZONE
        # The first key's DS, set by hand at the parent (its zone file).
        self.assertEqual(self.knot_ds(), tagged(key_states(self.geo, zone), "active"))
        first, new = self.start_roll(zone)
        self.geo.wait_log(r"keys: the parent \(127\.0\.0\.1:%d\) took the DS" % self.kport, 20)
        self.assertEqual(self.knot_ds(), [new])
        self.assertIn("keys: the parent zone is example.com. (SOA at 127.0.0.1:%d)" % self.kport,
                      self.geo.log())
        self.finish_roll(zone, first, new)
        self.assertNotIn("refused the DS UPDATE", self.geo.log())
        self.assertNotIn("is discarded", self.geo.log())


class FakeParent:
    """A parent zone's only server, in a thread: answers SOA for its zone, the
    child's DS (what the last accepted push set, TTL 1, AA), and the push as
    `mode` says: "unsigned" (NOERROR without TSIG), "badmac" (NOERROR signed
    with another secret under the right key name) or "ok" (verified, applied,
    NOERROR signed as RFC 8945 says)."""

    def __init__(self, zone, child, key_name):
        self.zone = dns.name.from_text(zone)
        self.child = dns.name.from_text(child)
        self.key_name = dns.name.from_text(key_name)
        self.keyring = {self.key_name: dns.tsig.Key(self.key_name, SECRET, "hmac-sha256")}
        self.wrong = dns.tsig.Key(self.key_name, WRONG, "hmac-sha256")
        self.ds = []             # rdata text of the child's DS set
        self.mode = "unsigned"
        self.answered = []       # the mode each push was answered in
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def count(self, mode):
        with self.lock:
            return self.answered.count(mode)

    def stop(self):
        self.stopping = True
        self.thread.join(5)
        self.sock.close()

    def serve(self):
        while not self.stopping:
            try:
                data, peer = self.sock.recvfrom(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                out = self.answer(data)
            except Exception as e:   # a message we cannot read: no answer, as a server drops it
                print("fake parent: %r" % e)
                continue
            if out:
                self.sock.sendto(out, peer)

    def answer(self, data):
        if (data[2] >> 3) & 0xf == dns.opcode.UPDATE:
            return self.update(data)
        q = dns.message.from_wire(data)
        r = dns.message.make_response(q)
        name, rdtype = q.question[0].name, q.question[0].rdtype
        if not name.is_subdomain(self.zone):
            r.set_rcode(dns.rcode.REFUSED)
            return r.to_wire()
        r.flags |= dns.flags.AA
        if name == self.zone and rdtype == dns.rdatatype.SOA:
            r.answer.append(dns.rrset.from_text(self.zone, 1, "IN", "SOA",
                                                "ns1.%s hostmaster.%s 1 7200 3600 1209600 1"
                                                % (self.zone, self.zone)))
        elif name == self.child and rdtype == dns.rdatatype.DS:
            with self.lock:
                if self.ds:
                    r.answer.append(dns.rrset.from_text_list(self.child, 1, "IN", "DS", self.ds))
        return r.to_wire()

    def update(self, data):
        with self.lock:
            mode = self.mode
            self.answered.append(mode)
        if mode == "unsigned":
            # The request's header and zone section back, QR set, no TSIG at all.
            _, used = dns.name.from_wire(data, 12)
            return data[:2] + struct.pack("!HHHHH", 0xA800, 1, 0, 0, 0) + data[12:12 + used + 4]
        m = dns.message.from_wire(data, keyring=self.keyring)   # raises unless it verifies
        r = dns.message.make_response(m)
        if mode == "badmac":
            r.use_tsig(self.wrong)
            r.request_mac = m.mac
            return r.to_wire()
        new = []
        for rrset in m.update:
            if rrset.name != self.child or rrset.rdtype != dns.rdatatype.DS:
                continue
            if rrset.rdclass == dns.rdataclass.ANY:
                new = []
            else:
                new += [rd.to_text() for rd in rrset]
        with self.lock:
            self.ds = new
        return r.to_wire()


class FakeParentCase(ChildCase):
    """A NOERROR to the signed push counts only when its TSIG verifies."""

    ZONE = "child.example.org."

    def setUp(self):
        self.geo = None
        self.parent = FakeParent("example.org.", self.ZONE, "ds.example.org.")
        self.geo = make_child(self.ZONE[:-1], self.parent.port, "ds.example.org.")
        ds = run_bin("ds", "-c", self.geo.config_path, self.ZONE).stdout.split()
        self.parent.ds = [" ".join(ds[3:])]
        self.geo.start()

    def tearDown(self):
        if self.geo:
            self.geo.stop()
            self.geo_log = self.geo.log()
            self.geo.cleanup()
        self.parent.stop()

    def expected_ds(self, tag):
        """The DS of the key with `tag`, from the DNSKEY set geoacme serves (dnspython)."""
        r = dns.query.udp(dns.message.make_query(self.ZONE, "DNSKEY"), "127.0.0.1",
                          port=self.geo.port, timeout=2)
        keys = [rd for rrset in r.answer if rrset.rdtype == dns.rdatatype.DNSKEY for rd in rrset
                if dns.dnssec.key_id(rd) == tag]
        self.assertEqual(len(keys), 1, r.to_text())
        ds = dns.dnssec.make_ds(self.ZONE, keys[0], "SHA256")
        return ds.digest.hex()

    def test_unverified_noerror_is_not_taken(self):
        geo, parent, zone = self.geo, self.parent, self.ZONE
        first, new = self.start_roll(zone)
        # Step 2: the new key is the one the parent should have; the first
        # still signs.  The parent's unsigned NOERROR is discarded: logged,
        # and the push goes again the next round.
        wait_for("a push answered without TSIG", lambda: parent.count("unsigned") >= 1, 10)
        geo.wait_log(r"keys: the parent's \(127\.0\.0\.1:%d\) NOERROR to the DS UPDATE is "
                     r"discarded: no TSIG, and the UPDATE was signed \(the push goes again each "
                     r"round\)" % parent.port, 5)
        wait_for("the push sent again", lambda: parent.count("unsigned") >= 2, 5)
        self.assertEqual(key_states(geo, zone), {first: "outgoing", new: "active"})
        self.assertNotIn("took the DS", geo.log())

        # Mid-rollover (two keys in the state file), `geoacme ds` prints the
        # new key's DS alone: the one that should be at the parent.
        digest = self.expected_ds(new)
        r = run_bin("ds", "-c", geo.config_path, zone)
        self.assertEqual((r.returncode, r.stdout),
                         (0, "%s IN DS %u 13 2 %s\n" % (zone, new, digest.upper())), r.stderr)
        r = run_bin("ds", "-c", geo.config_path, zone, "--format", "desec")
        self.assertEqual((r.returncode, r.stdout),
                         (0, '[{"subname": "child", "type": "DS", "ttl": 3600, "records": '
                          '["%u 13 2 %s"]}]\n' % (new, digest)), r.stderr)

        # A NOERROR signed with the wrong secret: discarded too.
        with parent.lock:
            parent.mode = "badmac"
        wait_for("a push answered with a wrong MAC", lambda: parent.count("badmac") >= 1, 5)
        geo.wait_log(r"NOERROR to the DS UPDATE is discarded: its TSIG does not verify: "
                     r"BADSIG \(wrong MAC\)", 5)
        wait_for("the push sent again", lambda: parent.count("badmac") >= 2, 5)
        self.assertNotIn("took the DS", geo.log())
        self.assertEqual(key_states(geo, zone), {first: "outgoing", new: "active"})
        self.assertEqual(self.sig_tags("www." + zone, "A"), sorted([first, new]))

        # The parent takes it and says so, signed: the rollover goes on and ends.
        with parent.lock:
            parent.mode = "ok"
        geo.wait_log(r"keys: the parent \(127\.0\.0\.1:%d\) took the DS" % parent.port, 5)
        self.assertEqual(parent.ds, ["%u 13 2 %s" % (new, digest)])
        self.finish_roll(zone, first, new)


if __name__ == "__main__":
    main()
