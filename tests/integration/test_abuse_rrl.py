"""Issue #16, response rate limiting: prefixes that collide in the table
(item 2) and error responses (item 5).  Spoofed sources are loopback
addresses in other /24s of 127/8 (all of it is local on Linux)."""
import socket
import time

import dns.flags
import dns.message
import dns.rcode

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


if __name__ == "__main__":
    main()
