# SPDX-License-Identifier: MIT
"""Compaction built beside the loop, and a large UPDATE (issue #26.1).

Patches grow a served snapshot; once they have grown it enough it is built
whole again (compaction), which took 2.9 s on the loop at 100 000 signed
names.  Now a thread builds it while the loop answers from the current
snapshot and keeps patching it; at the swap, the changes committed during
the build are patched onto the new snapshot.  The test hooks force a
compaction at once (GEOACME_TEST_COMPACT_BYTES=1) and hold the built
snapshot on its thread for a while (GEOACME_TEST_COMPACT_DELAY_MS), so
UPDATEs arrive during the build:

- each is answered NOERROR and served at once, from the old snapshot (the
  log has not said the swap yet when they are queried), exactly;
- after the swap every acknowledged change is served, exactly, the serial
  is the one each UPDATE's bump gives (the compaction adds none: every
  signature came from the signer's cache, the log says), and an IXFR from
  before the compaction, applied to the AXFR taken then, gives exactly the
  zone an AXFR gives now.

A 2 000-record UPDATE patched the served snapshot in one loop round of
508 ms, mostly signing.  Now it is held while its signatures are made
ahead in slices (the same delay hook holds it once they are): meanwhile the
zone is served as it was (none of its names yet: RFC 2136 atomicity) and a
small UPDATE sent after it waits its turn; then it is committed and patched
whole, answered NOERROR, every record served, the small UPDATE after it
(serials in order), and the IXFR from before gives exactly the new zone."""
import base64
import re
import threading
import unittest

import dns.query
import dns.rcode
import dns.rdatatype

from harness import main, needs_test_hooks
from acme_helpers import TransferChecks, TsigKey, signed_acme_server, signed_update

SECRET = "Y29tcGFjdGlvbi1zZWNyZXQtY29tcGFjdGlvbi1zZWNyZXQtMTI="
APEX = "compact.example.net"
NAMES = 40

ZONE = """$ORIGIN compact.example.net.
$TTL 3600
@ IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 60
@ IN NS ns1.example.com.
""" + "".join('n%03d IN TXT "seed %03d"\n' % (i, i) for i in range(NAMES))

KEY = TsigKey(APEX + ".", "hmac-sha256", base64.b64decode(SECRET))
ZONE_LINES = 'axfr_policy = "AllowAll"\n'
STORE = "max_records = 100000\n"

SWAPPED = r"compact\.example\.net\.: compacted beside the loop"


def name(label):
    return "%s.%s." % (label, APEX)


@needs_test_hooks
class Compaction(TransferChecks, unittest.TestCase):
    APEX = APEX

    def update(self, srv, add=(), delete=()):
        r = signed_update(srv, APEX, KEY, add=[(n, 120, "TXT", d) for n, d in add],
                          delete=[(n, "TXT", d) for n, d in delete], tcp=True, timeout=60)
        self.assertEqual(dns.rcode.to_text(r.rcode()), "NOERROR", srv.log_since_start()[-3000:])

    def txt(self, srv, owner):
        r = srv.query(owner, "TXT", dnssec=True, tcp=True)
        return (dns.rcode.to_text(r.rcode()),
                sorted(rd.to_text() for rrset in r.answer for rd in rrset
                       if rrset.rdtype == dns.rdatatype.TXT),
                sorted(dns.rdatatype.to_text(rrset.rdtype) for rrset in r.answer))

    def serial(self, srv):
        return srv.query(APEX + ".", "SOA").answer[0][0].serial

    def start(self, env):
        srv = signed_acme_server(APEX, KEY, ZONE, ZONE_LINES, STORE, env=env)
        srv.start()
        return srv

    def test_updates_during_a_compaction(self):
        srv = self.start({"GEOACME_TEST_COMPACT_BYTES": "1",
                          "GEOACME_TEST_COMPACT_DELAY_MS": "6000"})
        try:
            s0 = self.serial(srv)
            before = self.axfr(srv)
            # The first UPDATE finds the snapshot grown (the start's serial
            # bump patched it): the compaction starts, the UPDATE is patched.
            self.update(srv, add=[(name("x1"), '"one"')])
            srv.wait_log(r"compact\.example\.net\.: compacting the snapshot beside the loop")
            self.update(srv, add=[(name("x2"), '"two"'), (name("n005"), '"five bis"')])
            self.update(srv, delete=[(name("n007"), '"seed 007"')])
            answers = [self.txt(srv, name("x1")), self.txt(srv, name("x2")),
                       self.txt(srv, name("n005")), self.txt(srv, name("n007"))]
            # Answered from the old snapshot, patched: the swap comes later.
            self.assertNotRegex(srv.log_since_start(), SWAPPED,
                                "the compaction swapped in before the UPDATEs were queried")
            expect = [("NOERROR", ['"one"'], ["RRSIG", "TXT"]),
                      ("NOERROR", ['"two"'], ["RRSIG", "TXT"]),
                      ("NOERROR", ['"five bis"', '"seed 005"'], ["RRSIG", "TXT"]),
                      ("NXDOMAIN", [], [])]
            self.assertEqual(answers, expect)
            self.assertEqual(self.serial(srv), s0 + 3)

            srv.wait_log(SWAPPED + r": \d+ records built and signed in \d+ ms, 3 commits made "
                         r"meanwhile patched in, swapped in on the loop in [0-9.]+ ms \(the same "
                         r"signatures, the same serial\)", timeout=60)
            after = [self.txt(srv, name("x1")), self.txt(srv, name("x2")),
                     self.txt(srv, name("n005")), self.txt(srv, name("n007"))]
            self.assertEqual(after, expect)
            self.assertEqual(self.serial(srv), s0 + 3)
            now = self.axfr(srv)
            self.assertEqual(len([r for r in now if r[1] == dns.rdatatype.NSEC]), NAMES + 2)
            self.assert_ixfr_gives(srv, before, s0, now)
            self.assertNotRegex(srv.log_since_start(), r"rebuilt|compaction failed|dropped")
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()

    def test_a_large_update(self):
        big = 2000
        srv = self.start({"GEOACME_TEST_COMPACT_DELAY_MS": "3000"})
        try:
            s0 = self.serial(srv)
            before = self.axfr(srv)
            results = {}

            def send(key, **kw):
                try:
                    self.update(srv, **kw)
                    results[key] = "NOERROR"
                except AssertionError as e:
                    results[key] = str(e)

            adds = [(name("b%04d" % i), '"v%d"' % i) for i in range(big)]
            first = threading.Thread(target=send, args=("big",), kwargs={"add": adds})
            first.start()
            srv.wait_log(r"compact\.example\.net\.: %d names of a large UPDATE signed ahead in "
                         r"%d slices" % (big, (big + 23) // 24), timeout=60)
            second = threading.Thread(target=send, args=("small",),
                                      kwargs={"add": [(name("after"), '"after"')]})
            second.start()
            srv.wait_log(r"update for compact\.example\.net\. waits while a large UPDATE's "
                         r"signatures are made ahead")
            meanwhile = [self.txt(srv, name("b0000")), self.txt(srv, name("b1999")),
                         self.txt(srv, name("n001"))]
            self.assertNotRegex(srv.log_since_start(), r"update for compact\.example\.net\. from key",
                                "the large UPDATE was committed before the zone was queried")
            self.assertEqual(meanwhile, [("NXDOMAIN", [], []), ("NXDOMAIN", [], []),
                                         ("NOERROR", ['"seed 001"'], ["RRSIG", "TXT"])])
            self.assertEqual(self.serial(srv), s0)
            first.join(60)
            second.join(60)
            self.assertEqual(results, {"big": "NOERROR", "small": "NOERROR"})
            log = srv.log_since_start()
            done = re.findall(r"update for compact\.example\.net\. from key \S+: (\S+).*; serial "
                              r"(\d+), snapshot (\w+)", log)
            self.assertEqual(done, [("+b0000.compact.example.net.", str(s0 + 1), "patched"),
                                    ("+after.compact.example.net.", str(s0 + 2), "patched")])
            for i in (0, 1, 999, 1999):
                self.assertEqual(self.txt(srv, name("b%04d" % i)),
                                 ("NOERROR", ['"v%d"' % i], ["RRSIG", "TXT"]))
            self.assertEqual(self.serial(srv), s0 + 2)
            now = self.axfr(srv)
            self.assertEqual(len([r for r in now if r[1] == dns.rdatatype.TXT]), NAMES + big + 1)
            self.assertEqual(len([r for r in now if r[1] == dns.rdatatype.NSEC]), NAMES + big + 2)
            self.assert_ixfr_gives(srv, before, s0, now)
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
