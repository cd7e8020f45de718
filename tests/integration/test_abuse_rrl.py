# SPDX-License-Identifier: MIT
"""Issue #16, response rate limiting: prefixes that collide in the table
(item 2) and error responses (item 5).  Spoofed sources are loopback
addresses in other /24s of 127/8 (all of it is local on Linux)."""
import base64
import socket
import time

import dns.edns
import dns.flags
import dns.message
import dns.opcode
import dns.rcode
import dns.tsig
import dns.update

from harness import ServerTestCase, main, rrs

ZONE = """$ORIGIN example.com.
$TTL 3600
@       IN SOA  ns1.example.com. hostmaster.example.com. 2026113001 7200 3600 1209600 300
@       IN NS   ns1.example.com.
ns1     IN A    192.0.2.53
www     600 IN A 192.0.2.80
"""

CONFIG = """
[server]
rrl_rate = 5
rrl_slip = 2
[[zones]]
zone = "example.com"
file = "example.com.zone"
"""

WWW = ["www.example.com. 600 IN A 192.0.2.80"]
RATE = 5


def old_fnv_bucket(a, b):
    """The bucket the old table gave 127.a.b.0/24: FNV-1a, unkeyed, low 16 bits."""
    h = 1469598103934665603 ^ 4
    for x in (127, a, b, 0):
        h ^= x
        h = (h * 1099511628211) & (2 ** 64 - 1)
    return h & 0xFFFF


def colliding_pair():
    """Two /24s of 127/8 that shared a bucket in the old table."""
    seen = {}
    for a in range(256):
        for b in range(256):
            k = old_fnv_bucket(a, b)
            if k in seen:
                return seen[k], (a, b)
            seen[k] = (a, b)
    raise AssertionError("no collision")


class Collisions(ServerTestCase):
    """Item 2: alternating spoofed queries between a victim's /24 and a colliding
    /24 reset each other's count in the old table: 1000 of 1000 answers went out
    at rrl_rate = 5.  Each prefix keeps its own count now."""
    CONFIG = CONFIG
    FILES = {"example.com.zone": ZONE}

    def socket_from(self, a, b):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        s.bind(("127.%d.%d.1" % (a, b), 0))
        return s

    def test_colliding_prefixes_each_limited(self):
        (a1, b1), (a2, b2) = colliding_pair()
        self.assertEqual(old_fnv_bucket(a1, b1), old_fnv_bucket(a2, b2))
        victim, other = self.socket_from(a1, b1), self.socket_from(a2, b2)
        wire = self.server.make_query("www.example.com").to_wire()
        start = time.time()
        try:
            for _ in range(500):
                victim.sendto(wire, ("127.0.0.1", self.server.port))
                other.sendto(wire, ("127.0.0.1", self.server.port))
            seconds = int(time.time() - start) + 2
            counts = []
            for s in (victim, other):
                answered = slipped = 0
                s.settimeout(1.0)
                while True:
                    try:
                        m = dns.message.from_wire(s.recv(65535))
                    except socket.timeout:
                        break
                    if m.flags & dns.flags.TC:
                        slipped += 1
                        self.assertEqual(m.answer, [])
                    else:
                        answered += 1
                        self.assertEqual(rrs(m, "answer"), WWW)
                counts.append((answered, slipped))
        finally:
            victim.close()
            other.close()
        for answered, slipped in counts:
            self.assertGreaterEqual(answered, RATE)
            self.assertLessEqual(answered, RATE * seconds,
                                 "%d of 500 answered at rrl_rate %d" % (answered, RATE))
            self.assertLessEqual(abs(slipped - (500 - answered) / 2), 2)


ACME_ZONE = """$ORIGIN acme.example.
$TTL 300
@ IN SOA ns1.example. hostmaster.example. 1 3600 600 86400 60
@ IN NS ns1.example.
"""
SECRET = b"a-secret-for-the-rate-limit-test"

ERRORS_CONFIG = CONFIG + """
[[zones]]
zone = "acme.example"
[zones.stores]
type = "sqlite"
allow_update = true
journal_path = "acme.sqlite"
zone_path = "acme.zone"
[[zones.stores.tsig_keys]]
name = "key.acme.example."
algorithm = "hmac-sha256"
secret = "%s"
""" % base64.b64encode(SECRET).decode()


class Errors(ServerTestCase):
    """Item 5: error responses were never limited.  Each kind is sent 100 times
    at once from its own /24 (so budgets do not mix); at rrl_rate = 5 at most
    5 a second go out whole, about half of the rest truncated, the rest dropped."""
    CONFIG = ERRORS_CONFIG
    FILES = {"example.com.zone": ZONE, "acme.zone": ACME_ZONE}

    def burst(self, source, wire, n=100):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        s.bind((source, 0))
        replies = []
        start = time.time()
        try:
            for _ in range(n):
                s.sendto(wire, ("127.0.0.1", self.server.port))
            s.settimeout(1.0)
            while True:
                try:
                    replies.append(s.recv(65535))
                except socket.timeout:
                    break
        finally:
            s.close()
        return replies, int(time.time() - start) + 2

    def assert_limited(self, source, wire, rcode):
        replies, seconds = self.burst(source, wire)
        whole = [r for r in replies if not r[2] & 0x02]
        slipped = [r for r in replies if r[2] & 0x02]
        for r in replies:
            self.assertEqual(r[:2], wire[:2])
        for r in whole:
            # The extended rcode of BADVERS sits in the OPT record; the header has its low bits.
            self.assertEqual(r[3] & 0xF, rcode & 0xF, "%s: rcode" % source)
        self.assertGreaterEqual(len(whole), RATE, source)
        self.assertLessEqual(len(whole), RATE * seconds, "%s: %d of 100 sent whole" %
                             (source, len(whole)))
        self.assertLessEqual(abs(len(slipped) - (100 - len(whole)) / 2), 2, source)
        return whole

    def test_formerr(self):
        q = self.server.make_query("www.example.com").to_wire()
        bad = q[:4] + b"\x00\x02" + q[6:]       # QDCOUNT 2, one question
        self.assert_limited("127.20.1.1", bad, dns.rcode.FORMERR)

    def test_badvers_with_a_server_cookie(self):
        q = self.server.make_query("www.example.com")
        q.use_edns(1, 0, 1232, options=[dns.edns.GenericOption(10, b"\x01" * 8)])
        whole = self.assert_limited("127.20.2.1", q.to_wire(), dns.rcode.BADVERS)
        m = dns.message.from_wire(whole[0])
        self.assertEqual(m.rcode(), dns.rcode.BADVERS)
        self.assertTrue(any(o.otype == 10 and len(o.to_wire()) == 24 for o in m.options),
                        "the answer carries a server cookie")

    def test_notimp(self):
        q = self.server.make_query("www.example.com")
        q.set_opcode(dns.opcode.NOTIFY)
        self.assert_limited("127.20.3.1", q.to_wire(), dns.rcode.NOTIMP)

    def test_refused(self):
        self.assert_limited("127.20.4.1", self.server.make_query("example.org").to_wire(),
                            dns.rcode.REFUSED)
        u = dns.update.UpdateMessage("acme.example.")   # unsigned: REFUSED by the update handler
        u.add("x.acme.example.", 60, "TXT", "x")
        self.assert_limited("127.20.8.1", u.to_wire(), dns.rcode.REFUSED)

    def test_badkey_and_badsig(self):
        for i, key in enumerate((dns.tsig.Key("nobody.example.", SECRET, "hmac-sha256"),
                                 dns.tsig.Key("key.acme.example.", b"wrong", "hmac-sha256"))):
            u = dns.update.UpdateMessage("acme.example.", keyring=key)
            u.add("x.acme.example.", 60, "TXT", "x")
            self.assert_limited("127.20.%d.1" % (5 + i), u.to_wire(), dns.rcode.NOTAUTH)

    def test_answers_still_limited_and_tcp_never(self):
        self.assert_limited("127.20.9.1", self.server.make_query("www.example.com").to_wire(),
                            dns.rcode.NOERROR)
        self.assert_limited("127.20.10.1", self.server.make_query("nx.example.com").to_wire(),
                            dns.rcode.NXDOMAIN)
        r = self.server.query("example.org", tcp=True, source="127.20.4.1")
        self.assertEqual(r.rcode(), dns.rcode.REFUSED)


if __name__ == "__main__":
    main()
