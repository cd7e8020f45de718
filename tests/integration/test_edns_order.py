# SPDX-License-Identifier: MIT
"""Issue #27 point 2, RFC 6891 order and OPT echo, on the real binary:

- every response to a query with a parseable OPT carries an OPT, FORMERR for
  QDCOUNT 0 or 2 included (RFC 6891 7);
- BADVERS is decided before the question and the options are judged
  (6.1.3): version 1 with a malformed ECS or COOKIE, or with QDCOUNT 0, is
  BADVERS, not FORMERR;
- every message of a transfer answer (AXFR, and IXFR over TCP) carries an
  OPT when the request did, the DO bit echoed, before the TSIG of a signed
  transfer (whose every message dnspython verifies); none when it did not.

The same cases run in-process in tests/golden (edns_*.case, xfr_*.case).
"""
import base64
import socket
import struct
import unittest

import dns.edns
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import dns.rrset
import dns.tsigkeyring

from harness import BASE_CONFIG, Server, header, main, qname

KEY = "xfr.example."
SECRET = b"transfer-secret-for-the-edns-test"

# Big enough for several messages of about 16 KB each.
BIG = "$ORIGIN big.example.\n$TTL 300\n" \
      "@ IN SOA ns1.big.example. hostmaster.big.example. 7 3600 600 86400 60\n" \
      "@ IN NS ns1.big.example.\nns1 IN A 192.0.2.53\n" + \
      "".join('n%04d IN TXT "%s"\n' % (i, "x" * 100) for i in range(600))

CONFIG = BASE_CONFIG + """
[[zones]]
zone = "big.example"
zone_type = "Primary"
axfr_policy = "AllowAll"
axfr_from = ["127.0.0.0/8", "::1"]
[zones.stores]
type = "file"
zone_path = "big.zone"
[[zones.stores.tsig_keys]]
name = "%s"
algorithm = "hmac-sha256"
secret = "%s"
""" % (KEY, base64.b64encode(SECRET).decode())

RING = dns.tsigkeyring.from_text({KEY: ("hmac-sha256", base64.b64encode(SECRET).decode())})


def opt(version=0, options=b"", udp=1232, do=False):
    return b"\0" + struct.pack("!HHBBHH", 41, udp, 0, version, 0x8000 if do else 0,
                               len(options)) + options


QUESTION = qname("ns1.big.example") + struct.pack("!HH", 1, 1)
BAD_ECS = struct.pack("!HHHBB", 8, 7, 1, 24, 8) + b"\xc0\x00\x02"   # scope 8 in a query
BAD_COOKIE = struct.pack("!HH", 10, 5) + b"abcde"                    # 5 bytes


class Order(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(CONFIG, {"big.zone": BIG}).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def udp(self, data):
        raw = self.server.raw_udp(data)
        self.assertIsNotNone(raw, "no reply")
        return dns.message.from_wire(raw)

    def assertAnswer(self, r, rcode, questions):
        self.assertEqual(dns.rcode.to_text(r.rcode()), rcode)
        self.assertEqual(r.edns, 0, "the answer carries an OPT, version 0")
        self.assertEqual(r.payload, 1232)
        self.assertEqual(r.options, ())
        self.assertEqual(len(r.question), questions)
        self.assertEqual((r.answer, r.authority, r.additional), ([], [], []))

    # --- an OPT in every answer to a query that had one ---

    def test_qdcount_0_formerr_carries_the_opt(self):
        self.assertAnswer(self.udp(header(qd=0, ar=1) + opt()), "FORMERR", 0)

    def test_qdcount_2_formerr_carries_the_opt(self):
        self.assertAnswer(self.udp(header(qd=2, ar=1) + QUESTION * 2 + opt()), "FORMERR", 0)

    def test_qdcount_0_without_opt_has_none(self):
        r = self.udp(header(qd=0))
        self.assertEqual(dns.rcode.to_text(r.rcode()), "FORMERR")
        self.assertEqual(r.edns, -1)

    def test_two_opts_formerr_without_opt(self):
        # RFC 6891 6.1.1; which OPT to echo is unknowable: none (as Knot).
        r = self.udp(header(ar=2) + QUESTION + opt() + opt())
        self.assertEqual(dns.rcode.to_text(r.rcode()), "FORMERR")
        self.assertEqual(r.edns, -1)

    # --- the version first ---

    def test_version_1_with_malformed_ecs_is_badvers(self):
        self.assertAnswer(self.udp(header(ar=1) + QUESTION + opt(1, BAD_ECS)), "BADVERS", 1)

    def test_version_1_with_malformed_cookie_is_badvers(self):
        self.assertAnswer(self.udp(header(ar=1) + QUESTION + opt(1, BAD_COOKIE)), "BADVERS", 1)

    def test_version_1_with_qdcount_0_is_badvers(self):
        self.assertAnswer(self.udp(header(qd=0, ar=1) + opt(1)), "BADVERS", 0)

    def test_version_0_with_malformed_ecs_is_still_formerr(self):
        self.assertAnswer(self.udp(header(ar=1) + QUESTION + opt(0, BAD_ECS)), "FORMERR", 1)

    # --- transfers ---

    def transfer(self, q):
        """Sends q over TCP; returns the raw messages of the answer (all
        that came until the server had nothing more for half a second)."""
        wire = q.to_wire()
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        out, buf = [], b""
        try:
            s.sendall(struct.pack("!H", len(wire)) + wire)
            while True:
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    break
                if not chunk:
                    break
                buf += chunk
                while len(buf) >= 2 and len(buf) >= 2 + struct.unpack("!H", buf[:2])[0]:
                    n = struct.unpack("!H", buf[:2])[0]
                    out.append(buf[2:2 + n])
                    buf = buf[2 + n:]
                s.settimeout(0.5)
        finally:
            s.close()
        self.assertEqual(buf, b"", "no partial message left")
        return out

    def check_messages(self, messages, edns, do=False):
        self.assertGreaterEqual(len(messages), 2, "a transfer of several messages")
        soas = 0
        for i, w in enumerate(messages):
            m = dns.message.from_wire(w, one_rr_per_rrset=True)
            self.assertEqual(m.rcode(), dns.rcode.NOERROR)
            if edns:
                self.assertEqual(m.edns, 0, "message %d has an OPT" % i)
                self.assertEqual(m.payload, 1232)
                self.assertEqual(bool(m.ednsflags & dns.flags.DO), do)
            else:
                self.assertEqual(m.edns, -1, "message %d has no OPT" % i)
            soas += sum(1 for rr in m.answer if rr.rdtype == dns.rdatatype.SOA)
        self.assertEqual(soas, 2, "the whole transfer, opened and closed by the SOA")

    def test_axfr_every_message_has_an_opt(self):
        q = dns.message.make_query("big.example", "AXFR", use_edns=0, payload=4096)
        self.check_messages(self.transfer(q), True)

    def test_axfr_do_is_echoed(self):
        q = dns.message.make_query("big.example", "AXFR", use_edns=0, want_dnssec=True)
        self.check_messages(self.transfer(q), True, do=True)

    def test_axfr_without_edns_has_no_opt(self):
        q = dns.message.make_query("big.example", "AXFR", use_edns=False)
        self.check_messages(self.transfer(q), False)

    def test_ixfr_over_tcp_every_message_has_an_opt(self):
        # Serial 1 is older than any history: the whole zone, in AXFR form.
        q = dns.message.make_query("big.example", "IXFR", use_edns=0)
        q.authority.append(dns.rrset.from_text(
            "big.example.", 0, "IN", "SOA",
            "ns1.big.example. hostmaster.big.example. 1 3600 600 86400 60"))
        self.check_messages(self.transfer(q), True)

    def test_signed_axfr_opt_before_tsig_verified(self):
        q = dns.message.make_query("big.example", "AXFR", use_edns=0)
        q.use_tsig(RING, KEY)
        q.to_wire()   # sets q.mac
        messages = self.transfer(q)
        self.assertGreaterEqual(len(messages), 2)
        ctx = None
        for i, w in enumerate(messages):
            # dnspython verifies each message's TSIG against the chain
            # (RFC 8945 5.3.1) and raises if one does not verify.
            m = dns.message.from_wire(w, keyring=RING, request_mac=q.mac, xfr=True,
                                      origin=dns.name.from_text("big.example."),
                                      tsig_ctx=ctx, multi=True, one_rr_per_rrset=True)
            ctx = m.tsig_ctx
            self.assertTrue(m.had_tsig, "message %d is signed" % i)
            self.assertEqual(m.edns, 0, "message %d has an OPT" % i)


if __name__ == "__main__":
    main()
